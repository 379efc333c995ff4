/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent-glue/codec/quantity.h"
#include "net/json.h"

/* Accepted quantities: as a plain value (bytes) or as milli-units (CPU). */
static const struct {
	const char *text;
	bool milli;
	uint64_t want;
} parse_ok[] = {
	{ "0", false, 0 },
	{ "1Ki", false, 1024 },
	{ "1Ei", false, 1ULL << 60 },
	{ "15Ei", false, 15ULL << 60 },
	{ "1k", false, 1000 },
	{ "1E", false, 1000000000000000000ULL },
	{ "1E3", false, 1000 },
	{ "1e+3", false, 1000 },
	{ "25e-1", false, 3 },
	{ "1n", false, 1 },
	{ "+7", false, 7 },
	{ ".5", false, 1 },
	{ "5.", false, 5 },
	{ "0.000", false, 0 },
	{ "0Gi", false, 0 },
	{ "18446744073709551615", false, UINT64_MAX },
	{ "0.1", true, 100 },
	{ "0.001", true, 1 },
	{ "0.0011", true, 2 },
	{ "100u", true, 1 },
	{ "1500m", true, 1500 },
	{ "1.5", true, 1500 },
	{ "2k", true, 2000000 },
};

static void test_parse_suffixes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_ok) / sizeof(parse_ok[0]); i++) {
		struct vmact_err err = { 0 };
		uint64_t got = 0;
		int r = parse_ok[i].milli
				? vmact_quantity_parse_milli(parse_ok[i].text, &got, &err)
				: vmact_quantity_parse_value(parse_ok[i].text, &got, &err);

		if (r != 0 || got != parse_ok[i].want)
			fail_msg("\"%s\"%s: %d, %llu (want %llu)", parse_ok[i].text,
				 parse_ok[i].milli ? " (milli)" : "", r, (unsigned long long)got,
				 (unsigned long long)parse_ok[i].want);
	}
}

/* Refused values: the error code, a message, and the output untouched. */
static const struct {
	const char *text;
	int code;
} parse_bad[] = {
	{ "", EINVAL },
	{ "-1", EINVAL },
	{ "abc", EINVAL },
	{ "1Qi", EINVAL },
	{ "1.2.3", EINVAL },
	{ ".", EINVAL },
	{ "1 Gi", EINVAL },
	{ "1e", EINVAL },
	{ "1e+", EINVAL },
	{ "16Ei", ERANGE },
	{ "18446744073709551616", ERANGE },
	{ "1e30", ERANGE },
	{ "12345678901234567890123", ERANGE },
};

static void test_parse_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_bad) / sizeof(parse_bad[0]); i++) {
		struct vmact_err err = { 0 };
		uint64_t got = 12345;
		int r = vmact_quantity_parse_value(parse_bad[i].text, &got, &err);

		if (r != -parse_bad[i].code || got != 12345 || err.code != parse_bad[i].code ||
		    !err.msg[0])
			fail_msg("\"%s\": %d, %llu, err %d \"%s\" (want %d)", parse_bad[i].text, r,
				 (unsigned long long)got, err.code, err.msg, -parse_bad[i].code);
	}
}

static const struct {
	bool milli; /* vmact_quantity_format_milli, else _bytes */
	uint64_t value;
	const char *want;
} format_cases[] = {
	{ true, 250, "250m" },        { true, 1000, "1" },          { true, 0, "0" },
	{ true, 1000000, "1k" },      { false, 1000, "1k" },        { false, 2000, "2000" },
	{ false, 3ULL << 30, "3Gi" }, { false, 1ULL << 62, "4Ei" },
};

static void test_format(void **state)
{
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(format_cases) / sizeof(format_cases[0]); i++) {
		int r = format_cases[i].milli ? vmact_quantity_format_milli(format_cases[i].value,
									    buf, sizeof(buf))
					      : vmact_quantity_format_bytes(format_cases[i].value,
									    buf, sizeof(buf));

		if (r != 0 || strcmp(buf, format_cases[i].want) != 0)
			fail_msg("%llu%s: %d \"%s\" (want \"%s\")",
				 (unsigned long long)format_cases[i].value,
				 format_cases[i].milli ? "m" : "", r, buf, format_cases[i].want);
	}
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
		cmocka_unit_test(test_format),         cmocka_unit_test(test_json_decode),
		cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_resources),
	};

	return cmocka_run_group_tests_name("quantity", tests, NULL, NULL);
}
