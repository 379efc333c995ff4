/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent-glue/json.h"
#include "agent-glue/quantity.h"

static void parse_milli_ok(const char *s, uint64_t want)
{
	struct vmact_err err = { 0 };
	uint64_t got = 0;

	assert_int_equal(vmact_quantity_parse_milli(s, &got, &err), 0);
	assert_int_equal(got, want);
}

static void parse_value_ok(const char *s, uint64_t want)
{
	struct vmact_err err = { 0 };
	uint64_t got = 0;

	assert_int_equal(vmact_quantity_parse_value(s, &got, &err), 0);
	assert_int_equal(got, want);
}

static void parse_value_err(const char *s, int code)
{
	struct vmact_err err = { 0 };
	uint64_t got = 12345;

	assert_int_equal(vmact_quantity_parse_value(s, &got, &err), -code);
	assert_int_equal(got, 12345);
	assert_int_equal(err.code, code);
	assert_true(strlen(err.msg) > 0);
}

static void test_parse_suffixes(void **state)
{
	(void)state;
	parse_value_ok("0", 0);
	parse_value_ok("1Ki", 1024);
	parse_value_ok("1Ei", 1ULL << 60);
	parse_value_ok("15Ei", 15ULL << 60);
	parse_value_ok("1k", 1000);
	parse_value_ok("1E", 1000000000000000000ULL);
	parse_value_ok("1E3", 1000);
	parse_value_ok("1e+3", 1000);
	parse_value_ok("25e-1", 3);
	parse_value_ok("1n", 1);
	parse_value_ok("+7", 7);
	parse_value_ok(".5", 1);
	parse_value_ok("5.", 5);
	parse_value_ok("0.000", 0);
	parse_value_ok("0Gi", 0);
	parse_value_ok("18446744073709551615", UINT64_MAX);
	parse_milli_ok("0.1", 100);
	parse_milli_ok("0.001", 1);
	parse_milli_ok("0.0011", 2);
	parse_milli_ok("100u", 1);
	parse_milli_ok("1500m", 1500);
	parse_milli_ok("1.5", 1500);
	parse_milli_ok("2k", 2000000);
}

static void test_parse_errors(void **state)
{
	(void)state;
	parse_value_err("", EINVAL);
	parse_value_err("-1", EINVAL);
	parse_value_err("abc", EINVAL);
	parse_value_err("1Qi", EINVAL);
	parse_value_err("1.2.3", EINVAL);
	parse_value_err(".", EINVAL);
	parse_value_err("1 Gi", EINVAL);
	parse_value_err("1e", EINVAL);
	parse_value_err("1e+", EINVAL);
	parse_value_err("16Ei", ERANGE);
	parse_value_err("18446744073709551616", ERANGE);
	parse_value_err("1e30", ERANGE);
	parse_value_err("12345678901234567890123", ERANGE);
}

static void test_format(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(vmact_quantity_format_milli(250, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "250m");
	assert_int_equal(vmact_quantity_format_milli(1000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1");
	assert_int_equal(vmact_quantity_format_milli(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0");
	assert_int_equal(vmact_quantity_format_milli(1000000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1k");
	assert_int_equal(vmact_quantity_format_bytes(1000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1k");
	assert_int_equal(vmact_quantity_format_bytes(2000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2000");
	assert_int_equal(vmact_quantity_format_bytes(3ULL << 30, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "3Gi");
	assert_int_equal(vmact_quantity_format_bytes(1ULL << 62, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "4Ei");
	assert_int_equal(vmact_quantity_format_bytes(1ULL << 30, buf, 3), -ENOSPC);
}

static void test_json_decode(void **state)
{
	struct vmact_err err = { 0 };
	json_t *v;
	uint32_t m;
	uint64_t b;

	(void)state;
	v = json_real(0.1);
	assert_int_equal(ag_milli_cpu_decode(v, &m, &err), 0);
	assert_int_equal(m, 100); /* not 101: the double is read as its text */
	json_decref(v);

	v = json_integer(4294968);
	assert_int_equal(ag_milli_cpu_decode(v, &m, &err), -ERANGE);
	json_decref(v);

	vmact_err_reset(&err);
	v = json_true();
	assert_int_equal(ag_bytes_decode(v, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "quantity"));
	json_decref(v);

	vmact_err_reset(&err);
	v = json_real(-0.5);
	assert_int_equal(ag_bytes_decode(v, &b, &err), -EINVAL);
	json_decref(v);
}

/* Whatever vmact emits, vmact (and therefore Go) reads back unchanged. */
static void test_round_trip(void **state)
{
	struct vmact_err err = { 0 };
	uint64_t x = 88172645463325252ULL;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		uint64_t b, got_b;
		uint32_t m, got_m;
		json_t *v;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b = (i & 1) ? (x >> (x & 63)) : ((x & 0xffff) << (x % 50));
		m = (uint32_t)(x >> 32) >> (x & 31);
		v = ag_bytes_encode(b);
		assert_non_null(v);
		assert_int_equal(ag_bytes_decode(v, &got_b, &err), 0);
		assert_int_equal(got_b, b);
		json_decref(v);
		v = ag_milli_cpu_encode(m);
		assert_non_null(v);
		assert_int_equal(ag_milli_cpu_decode(v, &got_m, &err), 0);
		assert_int_equal(got_m, m);
		json_decref(v);
	}
}

static void test_resources(void **state)
{
	struct vmact_err err = { 0 };
	struct vmact_resources r = { 250, 1ULL << 30 }, back;
	json_t *v = ag_resources_encode(&r), *bad;
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

	(void)state;
	assert_string_equal(s, "{\"mem\":\"1Gi\",\"vCPUs\":\"250m\"}");
	free(s);
	assert_int_equal(ag_resources_decode(v, &back, &err), 0);
	assert_int_equal(back.milli_cpu, 250);
	assert_int_equal(back.mem_bytes, 1ULL << 30);
	json_decref(v);

	/* Keys match case-insensitively, as Go decodes them. */
	v = json_loads("{\"VCPUS\": 2, \"Mem\": 4}", 0, NULL);
	assert_int_equal(ag_resources_decode(v, &back, &err), 0);
	assert_int_equal(back.milli_cpu, 2000);
	assert_int_equal(back.mem_bytes, 4);
	json_decref(v);

	bad = json_loads("{\"vCPUs\": 1}", 0, NULL);
	assert_int_equal(ag_resources_decode(bad, &back, &err), -EINVAL);
	assert_string_equal(err.msg, "mem: missing");
	json_decref(bad);

	vmact_err_reset(&err);
	bad = json_loads("{\"vCPUs\": \"x\", \"mem\": 1}", 0, NULL);
	assert_int_equal(ag_resources_decode(bad, &back, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "vCPUs: "));
	json_decref(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_suffixes), cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_format),	       cmocka_unit_test(test_json_decode),
		cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_resources),
	};

	return cmocka_run_group_tests_name("quantity", tests, NULL, NULL);
}
