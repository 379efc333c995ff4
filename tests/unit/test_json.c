/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON rules every codec shares (net/json.h): key lookup as Go's
 * encoding/json does it, and floats in Go's text. Expected texts are what
 * encoding/json.Marshal prints for the same float64/float32 values. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/json.h"

static json_t *parse(const char *s, size_t flags)
{
	json_error_t jerr;
	json_t *j = json_loads(s, flags, &jerr);

	if (!j)
		fail_msg("%s: %s", s, jerr.text);
	return j;
}

static void test_key_matches(void **state)
{
	(void)state;
	assert_true(net_json_key_matches("ok", "ok"));
	assert_true(net_json_key_matches("OK", "ok"));
	assert_true(net_json_key_matches("oK", "Ok"));
	assert_true(net_json_key_matches("VCPUS", "vCPUs"));
	assert_true(net_json_key_matches("v1", "V1"));
	/* Unicode simple folding: KELVIN SIGN ~ k, LONG S ~ s. */
	assert_true(net_json_key_matches("o\xe2\x84\xaa", "ok"));
	assert_true(net_json_key_matches("\xe2\x84\xaa", "K"));
	assert_true(net_json_key_matches("\xc5\xbftatus", "status"));
	assert_true(net_json_key_matches("\xc5\xbf", "S"));
	assert_false(net_json_key_matches("\xe2\x84\xaa", "s"));
	assert_false(net_json_key_matches("\xc5\xbf", "k"));
	/* Only letters fold: '@' | 0x20 is '`', '_' | 0x20 is DEL. */
	assert_false(net_json_key_matches("a`", "a@"));
	assert_false(net_json_key_matches("a\x7f", "a_"));
	assert_true(net_json_key_matches("A_", "a_"));
	assert_false(net_json_key_matches("o", "ok"));
	assert_false(net_json_key_matches("okk", "ok"));
	assert_false(net_json_key_matches("ok ", "ok"));
	assert_false(net_json_key_matches("", "ok"));
	assert_true(net_json_key_matches("", ""));
}

static void test_get_last_match_wins(void **state)
{
	json_t *j;

	(void)state;
	/* Every matching key is decoded in turn in Go, the last one stays;
	 * an exact match has no precedence over a later folded one. */
	j = parse("{\"Ok\":1,\"oK\":2}", 0);
	assert_int_equal(json_integer_value(net_json_get(j, "ok")), 2);
	json_decref(j);
	j = parse("{\"ok\":1,\"OK\":2}", 0);
	assert_int_equal(json_integer_value(net_json_get(j, "ok")), 2);
	json_decref(j);
	j = parse("{\"OK\":1,\"ok\":2,\"other\":3}", 0);
	assert_int_equal(json_integer_value(net_json_get(j, "ok")), 2);
	assert_int_equal(json_integer_value(net_json_get(j, "OTHER")), 3);
	assert_null(net_json_get(j, "missing"));
	assert_null(net_json_get(j, "o"));
	json_decref(j);
	j = parse("{\"o\xe2\x84\xaa\":true,\"ok\":false}", 0);
	assert_true(json_is_false(net_json_get(j, "ok")));
	json_decref(j);
	j = parse("{\"ok\":false,\"o\xe2\x84\xaa\":true}", 0);
	assert_true(json_is_true(net_json_get(j, "ok")));
	json_decref(j);
	/* Byte-identical duplicates are where jansson's collapsing loses the
	 * order (json.h); decoders needing exactness refuse them. */
	assert_null(json_loads("{\"ok\":1,\"OK\":2,\"ok\":3}", JSON_REJECT_DUPLICATES, NULL));
	j = parse("[1]", 0);
	assert_null(net_json_get(j, "ok"));
	json_decref(j);
	assert_null(net_json_get(NULL, "ok"));
}

static void test_typed_getters(void **state)
{
	struct vmact_err err = { 0 };
	json_t *j = parse("{\"B\":true,\"s\":\"x\",\"N\":7,\"r\":1.0,\"d\":2.5,\"o\":{},"
			  "\"n\":\"7\",\"big\":300}",
			  0);
	bool b = false;
	const char *s = NULL;
	uint64_t u = 0;
	double d = 0;
	json_t *o = NULL;

	(void)state;
	assert_int_equal(net_json_get_bool(j, "b", &b, &err), 0);
	assert_true(b);
	assert_int_equal(net_json_get_string(j, "S", &s, &err), 0);
	assert_string_equal(s, "x");
	/* "n" and "N" both match the field; the later string wins. */
	assert_int_equal(net_json_get_uint(j, "n", 10, &u, &err), -EINVAL);
	assert_string_equal(err.msg, "n: expected an integer");
	vmact_err_reset(&err);
	assert_int_equal(net_json_get_uint(j, "r", 10, &u, &err), -EINVAL);
	assert_string_equal(err.msg, "r: expected an integer");
	vmact_err_reset(&err);
	assert_int_equal(net_json_get_uint(j, "big", 255, &u, &err), -ERANGE);
	assert_string_equal(err.msg, "big: 300 out of range [0, 255]");
	vmact_err_reset(&err);
	assert_int_equal(net_json_get_double(j, "D", &d, &err), 0);
	assert_true(d == 2.5);
	assert_int_equal(net_json_get_object(j, "O", &o, &err), 0);
	assert_true(json_is_object(o));
	assert_int_equal(net_json_get_object(j, "s", &o, &err), -EINVAL);
	assert_string_equal(err.msg, "s: expected an object");
	vmact_err_reset(&err);
	assert_int_equal(net_json_get_bool(j, "absent", &b, &err), -EINVAL);
	assert_string_equal(err.msg, "absent: missing");
	json_decref(j);
}

static void test_string_copy(void **state)
{
	struct vmact_err err = { 0 };
	json_t *j = json_pack("{s:s,s:s#,s:i}", "name", "abc", "nul", "a\0b", 3, "n", 1);
	char buf[4];

	(void)state;
	assert_int_equal(net_json_string_copy(net_json_get(j, "NAME"), "name", buf, sizeof(buf),
					      &err),
			 0);
	assert_string_equal(buf, "abc");
	assert_int_equal(net_json_string_copy(net_json_get(j, "name"), "name", buf, 3, &err),
			 -EINVAL);
	assert_string_equal(err.msg, "name: longer than 2 bytes");
	vmact_err_reset(&err);
	assert_int_equal(net_json_string_copy(net_json_get(j, "nul"), "nul", buf, sizeof(buf),
					      &err),
			 -EINVAL);
	assert_string_equal(err.msg, "nul: contains a NUL byte");
	vmact_err_reset(&err);
	assert_int_equal(net_json_string_copy(net_json_get(j, "n"), "n", buf, sizeof(buf), &err),
			 -EINVAL);
	assert_string_equal(err.msg, "n: expected a string");
	vmact_err_reset(&err);
	assert_int_equal(net_json_string_copy(NULL, "gone", buf, sizeof(buf), &err), -EINVAL);
	assert_string_equal(err.msg, "gone: missing");
	/* No error sink: still a clean error return. */
	assert_int_equal(net_json_string_copy(NULL, "gone", buf, sizeof(buf), NULL), -EINVAL);
	json_decref(j);
}

static void expect_text(double d, bool f32, const char *want)
{
	char buf[64];

	assert_int_equal(net_json_real_text(d, f32, buf, sizeof(buf)), 0);
	if (strcmp(buf, want) != 0)
		fail_msg("%.17g (%s): got %s, want %s", d, f32 ? "float32" : "float64", buf, want);
}

/* float64 values and the text expected for each (shortest text that reads
 * back as the same value). */
static const struct {
	double d;
	const char *want;
} float64_texts[] = {
	{ 0.1, "0.1" },
	{ 1.0 / 3.0, "0.3333333333333333" },
	{ 0.333, "0.333" },
	{ -2.5, "-2.5" },
	{ 12.5, "12.5" },
	{ 100, "100" },
	{ 123456789, "123456789" },
	{ 0, "0" },
	{ -0.0, "-0" },
	{ 0.000001, "0.000001" },
	{ 0.00001, "0.00001" },
	{ 1e-7, "1e-7" },
	{ 1.5e-7, "1.5e-7" },
	{ 1e-10, "1e-10" },
	{ 5e-324, "5e-324" },
	{ 1e20, "100000000000000000000" },
	{ 1e21, "1e+21" },
	{ 1.7976931348623157e308, "1.7976931348623157e+308" },
	{ 4294967.295, "4294967.295" },
};

static void test_real_text_float64(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(float64_texts) / sizeof(float64_texts[0]); i++)
		expect_text(float64_texts[i].d, false, float64_texts[i].want);
}

/* The same for float32 fields. */
static const struct {
	double d;
	const char *want;
} float32_texts[] = {
	{ 0.1f, "0.1" },
	{ 0.37f, "0.37" },
	{ 1.0f / 3.0f, "0.33333334" },
	{ 123.456f, "123.456" },
	{ 16777216.0f, "16777216" },
	{ 2.5e9f, "2500000000" },
	{ 1e-7f, "1e-7" },
	{ 1e21f, "1e+21" },
	{ 3.4028235e38f, "3.4028235e+38" },
	/* The double is narrowed first, as storing into a float32 field does. */
	{ 0.1, "0.1" },
};

static void test_real_text_float32(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(float32_texts) / sizeof(float32_texts[0]); i++)
		expect_text(float32_texts[i].d, true, float32_texts[i].want);
}

static void test_real_text_errors(void **state)
{
	char buf[8];

	(void)state;
	assert_int_equal(net_json_real_text(NAN, false, buf, sizeof(buf)), -EDOM);
	assert_int_equal(net_json_real_text(INFINITY, true, buf, sizeof(buf)), -EDOM);
	assert_int_equal(net_json_real_text(1e20, false, buf, sizeof(buf)), -ENOSPC);
	assert_int_equal(net_json_real_text(1234567, false, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1234567");
	assert_int_equal(net_json_real_text(12345678, false, buf, sizeof(buf)), -ENOSPC);
}

static void test_shortest_g(void **state)
{
	char buf[40];

	(void)state;
	assert_int_equal(net_json_shortest_g(0.1, false, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "0.1");
	assert_int_equal(net_json_shortest_g(1.0 / 3.0, false, buf, sizeof(buf)), 16);
	assert_true(strtod(buf, NULL) == 1.0 / 3.0);
	assert_int_equal(net_json_shortest_g(1.0f / 3.0f, true, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "0.33333334");
	/* %g text, as quantities read it: exponent form where %g picks it. */
	assert_int_equal(net_json_shortest_g(1e21, false, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "1e+21");
}

static void test_real_builder(void **state)
{
	json_t *j;

	(void)state;
	j = net_json_real(2.0, false);
	assert_true(json_is_integer(j));
	assert_int_equal(json_integer_value(j), 2);
	json_decref(j);
	/* Whole and beyond 2^53 still fits json_int_t: Go prints all digits. */
	j = net_json_real(1e16, false);
	assert_true(json_is_integer(j));
	assert_int_equal(json_integer_value(j), 10000000000000000LL);
	json_decref(j);
	j = net_json_real(1e19, false);
	assert_true(json_is_real(j));
	assert_true(json_real_value(j) == 1e19);
	json_decref(j);
	j = net_json_real(0.5, false);
	assert_true(json_is_real(j));
	assert_true(json_real_value(j) == 0.5);
	json_decref(j);
	/* A float32 goes out as its shortest decimal, not as (double)0.1f. */
	j = net_json_real(0.1f, true);
	assert_true(json_is_real(j));
	assert_true(json_real_value(j) == 0.1);
	json_decref(j);
	assert_null(net_json_real(NAN, false));
	assert_null(net_json_real(INFINITY, true));
}

static void expect_dump(json_t *j, const char *want)
{
	char *s = net_json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);

	assert_non_null(s);
	if (strcmp(s, want) != 0)
		fail_msg("got %s, want %s", s, want);
	free(s);
	json_decref(j);
}

static void test_dumps(void **state)
{
	(void)state;
	/* jansson's own default would write 0.10000000000000001. */
	expect_dump(json_pack("{s:o,s:o,s:[o,{s:o}],s:o}", "a", net_json_real(0.1, false), "b",
			      net_json_real(0.333, false), "c", net_json_real(1.5, false), "d",
			      net_json_real(0.1f, true), "e", net_json_real(1.0f / 3.0f, true)),
		    "{\"a\":0.1,\"b\":0.333,\"c\":[1.5,{\"d\":0.1}],\"e\":0.33333334}");
	expect_dump(json_pack("{s:o,s:o}", "x", net_json_real(1.0 / 3.0, false), "n",
			      net_json_real(3, false)),
		    "{\"x\":0.3333333333333333,\"n\":3}");
	expect_dump(json_pack("{s:o,s:s,s:[]}", "x", net_json_real(4294967.295, false), "s", "t",
			      "a"),
		    "{\"x\":4294967.295,\"s\":\"t\",\"a\":[]}");
	expect_dump(json_pack("{s:i}", "x", 1), "{\"x\":1}");
	expect_dump(json_pack("[o,o]", net_json_real(1.5e-7, false), net_json_real(-12.25, false)),
		    "[1.5e-7,-12.25]");
}

/* Whatever the mix, the dump reads back to the same values. */
static void test_dumps_round_trip(void **state)
{
	static const double v[] = {
		0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 1.7976931348623157e308, 123456.789, 5e-324,
		0.3, 1e19,      1e22,      -7.25
	};
	json_t *a = json_array(), *back;
	char *s;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		json_array_append_new(a, net_json_real(v[i], false));
	s = net_json_dumps(a, JSON_COMPACT);
	assert_non_null(s);
	back = parse(s, 0);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (json_number_value(json_array_get(back, i)) != v[i])
			fail_msg("%zu: %.17g came back as %.17g from %s", i, v[i],
				 json_number_value(json_array_get(back, i)), s);
	free(s);
	json_decref(back);
	json_decref(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_matches),
		cmocka_unit_test(test_get_last_match_wins),
		cmocka_unit_test(test_typed_getters),
		cmocka_unit_test(test_real_text_float64),
		cmocka_unit_test(test_real_text_float32),
		cmocka_unit_test(test_real_text_errors),
		cmocka_unit_test(test_shortest_g),
		cmocka_unit_test(test_real_builder),
		cmocka_unit_test(test_dumps),
		cmocka_unit_test(test_dumps_round_trip),
		cmocka_unit_test(test_string_copy),
	};

	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
