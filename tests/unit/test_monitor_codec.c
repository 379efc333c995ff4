/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the agent <-> vm-monitor codec beyond the shared vectors:
 * Go decoding quirks, strictness and the exact bytes the agent sends. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent-glue/codec/monitor.h"
#include "base/macro.h"

static int decode_s(const char *s, struct ag_mon_msg *m, struct vmact_err *err)
{
	vmact_err_reset(err);
	return ag_mon_decode_text(s, strlen(s), m, err);
}

static void test_encode_bytes_match_go(void **state)
{
	struct vmact_err err = { 0 };
	struct ag_mon_msg m = { .type = AG_MON_UPSCALE_NOTIFICATION,
				.id = 4,
				.alloc = { .milli_cpu = 500, .mem_bytes = 2147483648ull } };
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;

	a = ag_mon_encode_text(&m, &err);
	assert_string_equal(a, "{\"content\":{\"granted\":{\"cpu\":0.5,\"mem\":2147483648}},"
			       "\"type\":\"UpscaleNotification\",\"id\":4}");
	m.type = AG_MON_DOWNSCALE_REQUEST;
	m.alloc.milli_cpu = 333;
	m.id = 6;
	b = ag_mon_encode_text(&m, &err);
	/* Shortest round trip like Go, not %.17g's 0.33300000000000002. */
	assert_string_equal(b, "{\"content\":{\"target\":{\"cpu\":0.333,\"mem\":2147483648}},"
			       "\"type\":\"DownscaleRequest\",\"id\":6}");
	m.alloc.milli_cpu = 2000;
	c = ag_mon_encode_text(&m, &err);
	assert_non_null(strstr(c, "\"cpu\":2,"));
	m.type = AG_MON_HEALTH_CHECK;
	m.id = 8;
	d = ag_mon_encode_text(&m, &err);
	assert_string_equal(d, "{\"content\":{},\"type\":\"HealthCheck\",\"id\":8}");
	m.type = AG_MON_INVALID_MESSAGE;
	m.error = "bad";
	e = ag_mon_encode_text(&m, &err);
	assert_string_equal(
		e, "{\"content\":{\"error\":\"bad\"},\"type\":\"InvalidMessage\",\"id\":8}");
}

static void test_encode_rejects(void **state)
{
	struct vmact_err err = { 0 };
	struct ag_mon_msg m = { .type = AG_MON_UPSCALE_REQUEST, .id = 2 };

	assert_null(ag_mon_encode(&m, &err));
	assert_int_equal(err.code, EINVAL);
	assert_non_null(strstr(err.msg, "UpscaleRequest"));
	vmact_err_reset(&err);
	m.type = AG_MON_INTERNAL_ERROR;
	assert_null(ag_mon_encode(&m, &err));
	assert_non_null(strstr(err.msg, "error: missing"));
	vmact_err_reset(&err);
	m.type = AG_MON_DOWNSCALE_REQUEST;
	m.alloc.mem_bytes = UINT64_MAX;
	assert_null(ag_mon_encode(&m, &err));
	assert_int_equal(err.code, ERANGE);
}

static void test_decode_case_insensitive(void **state)
{
	struct vmact_err err = { 0 };
	struct ag_mon_msg m;

	assert_int_equal(
		decode_s("{\"type\":\"DownscaleResult\",\"ok\":true,\"STATUS\":\"fine\",\"id\":6}",
			 &m, &err),
		0);
	assert_int_equal(m.type, AG_MON_DOWNSCALE_RESULT);
	assert_true(m.ok);
	assert_string_equal(m.status, "fine");
	ag_mon_msg_clear(&m);
	/* Last matching key wins, as encoding/json overwrites. */
	assert_int_equal(decode_s("{\"type\":\"DownscaleResult\",\"Ok\":true,\"oK\":false,"
				  "\"Status\":\"a\",\"status\":\"b\",\"id\":6}",
				  &m, &err),
			 0);
	assert_false(m.ok);
	assert_string_equal(m.status, "b");
	ag_mon_msg_clear(&m);
	/* Kelvin sign folds to k, long s to s (Go's simple folding). */
	assert_int_equal(decode_s("{\"type\":\"DownscaleResult\",\"o\xe2\x84\xaa\":true,"
				  "\"\xc5\xbftatus\":\"x\",\"id\":6}",
				  &m, &err),
			 0);
	assert_true(m.ok);
	assert_string_equal(m.status, "x");
	ag_mon_msg_clear(&m);
	assert_int_equal(decode_s("{\"type\":\"InternalError\",\"Error\":\"boom\",\"id\":8}", &m,
				  &err),
			 0);
	assert_string_equal(m.error, "boom");
	ag_mon_msg_clear(&m);
}

static void test_decode_envelope_errors(void **state)
{
	static const struct {
		const char *in, *field;
	} cases[] = {
		{ "{\"id\":8}", "type: missing" },
		{ "{\"type\":3,\"id\":8}", "type: expected a string" },
		{ "{\"type\":\"HealthCheck\"}", "id: missing" },
		{ "{\"type\":\"HealthCheck\",\"id\":\"2\"}", "id: expected a number" },
		{ "{\"type\":\"HealthCheck\",\"id\":-2}", "id:" },
		{ "{\"type\":\"HealthCheck\",\"id\":1e300}", "id:" },
		/* type/id come from a generic map in Go: exact key names. */
		{ "{\"Type\":\"HealthCheck\",\"id\":2}", "type: missing" },
		{ "{\"type\":\"HealthCheck\",\"ID\":2}", "id: missing" },
		{ "[1,2]", "expected a JSON object" },
		{ "not json", "not JSON" },
		{ "", "not JSON" },
	};
	struct vmact_err err = { 0 };
	struct ag_mon_msg m;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(decode_s(cases[i].in, &m, &err), -EBADMSG);
		if (!strstr(err.msg, cases[i].field))
			fail_msg("%s: message \"%s\" does not name %s", cases[i].in, err.msg,
				 cases[i].field);
		ag_mon_msg_clear(&m);
	}
}

static void test_decode_payload_errors_keep_id(void **state)
{
	static const struct {
		const char *in, *field;
	} cases[] = {
		{ "{\"type\":\"DownscaleResult\",\"Status\":\"s\",\"id\":6}", "Ok: missing" },
		{ "{\"type\":\"DownscaleResult\",\"Ok\":\"yes\",\"Status\":\"s\",\"id\":6}",
		  "Ok: expected a boolean" },
		{ "{\"type\":\"DownscaleResult\",\"Ok\":null,\"Status\":\"s\",\"id\":6}",
		  "Ok: expected a boolean" },
		{ "{\"type\":\"DownscaleResult\",\"Ok\":true,\"id\":6}", "status: missing" },
		{ "{\"type\":\"DownscaleResult\",\"Ok\":true,\"Status\":1,\"id\":6}",
		  "status: expected a string" },
		{ "{\"type\":\"InternalError\",\"id\":6}", "error: missing" },
		{ "{\"type\":\"InvalidMessage\",\"error\":{},\"id\":6}",
		  "error: expected a string" },
	};
	struct vmact_err err = { 0 };
	struct ag_mon_msg m;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(decode_s(cases[i].in, &m, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].field))
			fail_msg("%s: message \"%s\" does not name %s", cases[i].in, err.msg,
				 cases[i].field);
		assert_int_equal(m.id, 6);
		assert_non_null(m.type_name);
		ag_mon_msg_clear(&m);
	}
}

static void test_decode_unknown_and_ids(void **state)
{
	struct vmact_err err = { 0 };
	struct ag_mon_msg m;

	/* Types only the agent sends are unknown when they come back. */
	assert_int_equal(decode_s("{\"type\":\"DownscaleRequest\",\"id\":5}", &m, &err), 0);
	assert_int_equal(m.type, AG_MON_UNKNOWN);
	assert_string_equal(m.type_name, "DownscaleRequest");
	ag_mon_msg_clear(&m);
	assert_int_equal(decode_s("{\"type\":\"healthcheck\",\"id\":5}", &m, &err), 0);
	assert_int_equal(m.type, AG_MON_UNKNOWN);
	ag_mon_msg_clear(&m);
	/* float64 then truncation, as the Go agent reads ids. */
	assert_int_equal(decode_s("{\"type\":\"HealthCheck\",\"id\":4.9}", &m, &err), 0);
	assert_int_equal(m.id, 4);
	ag_mon_msg_clear(&m);
	assert_int_equal(decode_s("{\"type\":\"HealthCheck\",\"id\":9007199254740993}", &m, &err),
			 0);
	assert_int_equal(m.id, 9007199254740992ull);
	ag_mon_msg_clear(&m);
	/* Extra fields on payload-less types are ignored, like Go. */
	assert_int_equal(decode_s("{\"type\":\"UpscaleRequest\",\"x\":[1],\"id\":3}", &m, &err), 0);
	assert_int_equal(m.type, AG_MON_UPSCALE_REQUEST);
	ag_mon_msg_clear(&m);
}

static void test_version(void **state)
{
	struct vmact_err err = { 0 };
	_cleanup_free_ char *s = NULL;
	json_auto_t *range = ag_mon_version_range_encode(1, 1),
		    *ok = json_loads("{\"Version\":1}", 0, NULL),
		    *refused = json_loads("{\"error\":\"no overlap\"}", 0, NULL),
		    *two = json_loads("{\"version\":2}", 0, NULL),
		    *none = json_loads("{}", 0, NULL),
		    *bad = json_loads("{\"version\":\"1\"}", 0, NULL);
	uint32_t v = 0;

	s = json_dumps(range, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s, "{\"min\":1,\"max\":1}");
	assert_int_equal(ag_mon_version_response_decode(ok, &v, &err), 0);
	assert_int_equal(v, 1);
	assert_int_equal(ag_mon_version_response_decode(refused, &v, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "no overlap"));
	vmact_err_reset(&err);
	assert_int_equal(ag_mon_version_response_decode(two, &v, &err), -EPROTO);
	vmact_err_reset(&err);
	assert_int_equal(ag_mon_version_response_decode(none, &v, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "version: missing"));
	vmact_err_reset(&err);
	assert_int_equal(ag_mon_version_response_decode(bad, &v, &err), -EBADMSG);
}

static void test_ids(void **state)
{
	uint64_t c = 0;

	assert_int_equal(ag_mon_next_agent_id(&c), 2);
	assert_int_equal(ag_mon_next_agent_id(&c), 4);
	assert_true(ag_mon_id_is_agent(4));
	assert_true(ag_mon_id_is_monitor(3));
	assert_false(ag_mon_id_is_monitor(4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_bytes_match_go),
		cmocka_unit_test(test_encode_rejects),
		cmocka_unit_test(test_decode_case_insensitive),
		cmocka_unit_test(test_decode_envelope_errors),
		cmocka_unit_test(test_decode_payload_errors_keep_id),
		cmocka_unit_test(test_decode_unknown_and_ids),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
