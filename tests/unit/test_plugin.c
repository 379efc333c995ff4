/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin protocol codec: every version, every error path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/codec/plugin.h"

#define GiB (1024ULL * 1024 * 1024)

static char *dump(const json_t *j)
{
	char *s = ag_plugin_dumps(j);

	assert_non_null(s);
	return s;
}

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", s, e.text);
	return j;
}

static struct ag_agent_request base_request(enum ag_plugin_version v)
{
	struct ag_agent_request r;

	memset(&r, 0, sizeof(r));
	r.version = v;
	strcpy(r.pod_namespace, "default");
	strcpy(r.pod_name, "p");
	r.has_compute_unit = true;
	r.compute_unit = (struct vmact_resources){ 1000, 1 * GiB };
	r.resources = (struct vmact_resources){ 2000, 2 * GiB };
	r.has_last_permit = true;
	r.last_permit = (struct vmact_resources){ 1000, 1 * GiB };
	r.has_metrics = true;
	r.metrics = (struct ag_plugin_metrics){ 0.37f, 0.25f, 100000000.0f };
	return r;
}

static void test_versions(void **state)
{
	static const struct {
		const char *s;
		enum ag_plugin_version v;
		bool nil, frac, perm, plugcu, agentcu, bytes, ext;
	} t[] = {
		{ "1.0", AG_PLUGIN_V1_0, 0, 0, 0, 1, 0, 0, 1 },
		{ "1.1", AG_PLUGIN_V1_1, 1, 0, 0, 1, 0, 0, 1 },
		{ "2.0", AG_PLUGIN_V2_0, 1, 1, 0, 1, 0, 0, 1 },
		{ "2.1", AG_PLUGIN_V2_1, 1, 1, 1, 1, 0, 0, 1 },
		{ "3.0", AG_PLUGIN_V3_0, 1, 1, 1, 0, 0, 0, 1 },
		{ "4.0", AG_PLUGIN_V4_0, 1, 1, 1, 0, 1, 1, 1 },
		{ "5.0", AG_PLUGIN_V5_0, 1, 1, 1, 0, 1, 1, 0 },
	};
	struct vmact_err err = { 0 };
	char buf[64];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum ag_plugin_version v;

		assert_int_equal(ag_plugin_version_parse(t[i].s, &v, &err), 0);
		assert_int_equal(v, t[i].v);
		assert_int_equal(v, (int)i + 1);
		assert_string_equal(ag_plugin_version_format(v), t[i].s);
		snprintf(buf, sizeof(buf), "v%s", t[i].s);
		assert_int_equal(ag_plugin_version_parse(buf, &v, &err), 0);
		assert_int_equal(v, t[i].v);
		assert_string_equal(ag_plugin_version_string(v, buf, sizeof(buf)) + 1, t[i].s);
		assert_int_equal(ag_plugin_allows_nil_metrics(v), t[i].nil);
		assert_int_equal(ag_plugin_supports_fractional_cpu(v), t[i].frac);
		assert_int_equal(ag_plugin_sends_last_permit(v), t[i].perm);
		assert_int_equal(ag_plugin_plugin_sends_compute_unit(v), t[i].plugcu);
		assert_int_equal(ag_plugin_agent_sends_compute_unit(v), t[i].agentcu);
		assert_int_equal(ag_plugin_memory_as_bytes(v), t[i].bytes);
		assert_int_equal(ag_plugin_includes_extended_metrics(v), t[i].ext);
		/* memoryUsageBytes came inside 2.0 (v0.13.0) and went with
		 * 5.0; agents take "migrate" from 2.0 (v0.1.x panic on it). */
		assert_int_equal(ag_plugin_sends_memory_usage(v), v >= AG_PLUGIN_V2_0 && t[i].ext);
		assert_int_equal(ag_plugin_agent_takes_migrate(v), v >= AG_PLUGIN_V2_0);
	}
	assert_string_equal(ag_plugin_version_string(0, buf, sizeof(buf)), "<invalid: zero>");
	assert_string_equal(ag_plugin_version_string(9, buf, sizeof(buf)), "<unknown = v5.0 + 2>");
	assert_string_equal(ag_plugin_version_format(0), "?");
	assert_false(ag_plugin_version_valid(0));
	assert_false(ag_plugin_version_valid(8));
	{
		enum ag_plugin_version v;
		const char *bad[] = { "", "6.0", "5", "v", "5.0 ", "1.2" };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			vmact_err_reset(&err);
			assert_int_equal(ag_plugin_version_parse(bad[i], &v, &err), -EINVAL);
			assert_non_null(strstr(err.msg, "protocol version"));
		}
	}
}

/* The exact bytes of one request in every version. */
static void test_encode_every_version(void **state)
{
	static const char *want[] = {
		"{\"protoVersion\":1,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":2},"
		"\"metrics\":{\"loadAvg1M\":0.37,\"loadAvg5M\":0.25}}",
		"{\"protoVersion\":2,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":2},"
		"\"metrics\":{\"loadAvg1M\":0.37,\"loadAvg5M\":0.25}}",
		"{\"protoVersion\":3,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":2},"
		"\"metrics\":{\"loadAvg1M\":0.37,\"loadAvg5M\":0.25,\"memoryUsageBytes\":100000000}}",
		"{\"protoVersion\":4,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":2},\"lastPermit\":{\"vCPUs\":1,\"mem\":1},"
		"\"metrics\":{\"loadAvg1M\":0.37,\"loadAvg5M\":0.25,\"memoryUsageBytes\":100000000}}",
		"{\"protoVersion\":5,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":2},\"lastPermit\":{\"vCPUs\":1,\"mem\":1},"
		"\"metrics\":{\"loadAvg1M\":0.37,\"loadAvg5M\":0.25,\"memoryUsageBytes\":100000000}}",
		"{\"protoVersion\":6,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
		"\"computeUnit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":\"2Gi\"},\"lastPermit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
		"\"metrics\":{\"loadAvg1M\":0.37,\"loadAvg5M\":0.25,\"memoryUsageBytes\":100000000}}",
		"{\"protoVersion\":7,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
		"\"computeUnit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":\"2Gi\"},\"lastPermit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
		"\"metrics\":{\"loadAvg1M\":0.37}}",
	};

	for (int v = 1; v <= 7; v++) {
		struct ag_agent_request r = base_request((enum ag_plugin_version)v), back;
		struct vmact_err err = { 0 };
		json_t *j = ag_agent_request_encode(&r, GiB, &err);
		char *s;

		if (!j)
			fail_msg("v%d: %s", v, err.msg);
		s = dump(j);
		assert_string_equal(s, want[v - 1]);
		/* And the arbiter's decoder reads back what was meant. */
		assert_int_equal(ag_agent_request_decode(j, GiB, &back, &err), 0);
		assert_int_equal(back.version, v);
		assert_string_equal(back.pod_name, "p");
		assert_int_equal(back.resources.milli_cpu, 2000);
		assert_int_equal(back.resources.mem_bytes, 2 * GiB);
		assert_int_equal(back.has_last_permit, v >= 4);
		assert_int_equal(back.has_compute_unit, v >= 6);
		assert_true(back.has_metrics);
		assert_true(back.metrics.load_avg_1m == 0.37f);
		if (v < 7)
			assert_true(back.metrics.load_avg_5m == 0.25f);
		if (v >= 3 && v < 7)
			assert_true(back.metrics.memory_usage_bytes == 100000000.0f);
		free(s);
		json_decref(j);
	}
}

static void test_encode_fractional_and_nulls(void **state)
{
	struct ag_agent_request r = base_request(AG_PLUGIN_V2_0);
	struct vmact_err err = { 0 };
	json_t *j;
	char *s;

	r.resources.milli_cpu = 250;
	r.has_metrics = false;
	j = ag_agent_request_encode(&r, GiB, &err);
	assert_non_null(j);
	s = dump(j);
	assert_string_equal(s,
			    "{\"protoVersion\":3,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
			    "\"resources\":{\"vCPUs\":\"250m\",\"mem\":2},\"metrics\":null}");
	free(s);
	json_decref(j);

	r = base_request(AG_PLUGIN_V5_0);
	r.has_last_permit = false;
	r.has_metrics = false;
	r.resources = (struct vmact_resources){ 1500, 1536ULL * 1024 * 1024 };
	j = ag_agent_request_encode(&r, 0, &err);
	assert_non_null(j);
	s = dump(j);
	assert_string_equal(s,
			    "{\"protoVersion\":7,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
			    "\"computeUnit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
			    "\"resources\":{\"vCPUs\":\"1500m\",\"mem\":\"1536Mi\"},"
			    "\"lastPermit\":null,\"metrics\":null}");
	free(s);
	json_decref(j);
}

static void test_float32_shortest(void **state)
{
	static const struct {
		float f;
		double want;
	} t[] = {
		{ 0.37f, 0.37 },
		{ 0.1f, 0.1 },
		{ 1.0f / 3.0f, 0.33333334 },
		{ 123.456f, 123.456 },
		{ 16777216.0f, 16777216.0 },
		{ 1e-7f, 1e-7 },
		{ 0.0f, 0.0 },
		{ 2.5e9f, 2.5e9 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		double d = ag_plugin_float32_wire(t[i].f);
		json_t *j = json_pack("{s:f}", "x", d);
		char *s = dump(j);
		json_t *back = parse(s);

		assert_true(d == t[i].want);
		assert_true((float)json_real_value(json_object_get(back, "x")) == t[i].f);
		free(s);
		json_decref(j);
		json_decref(back);
	}
}

static void expect_encode_error(struct ag_agent_request *r, uint64_t slot, const char *needle)
{
	struct vmact_err err = { 0 };
	json_t *j = ag_agent_request_encode(r, slot, &err);

	if (j) {
		char *s = dump(j);

		fail_msg("expected error containing \"%s\", got %s", needle, s);
	}
	assert_true(err.code > 0);
	if (!strstr(err.msg, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, needle);
}

static void test_encode_errors(void **state)
{
	struct ag_agent_request r;

	r = base_request(AG_PLUGIN_V1_1);
	r.resources.milli_cpu = 1500;
	expect_encode_error(&r, GiB, "resources: vCPUs: 1500m is fractional");
	r = base_request(AG_PLUGIN_V2_1);
	r.last_permit.milli_cpu = 1;
	r.last_permit.mem_bytes = GiB + 1;
	expect_encode_error(&r, GiB, "lastPermit: mem:");
	r = base_request(AG_PLUGIN_V3_0);
	expect_encode_error(&r, 0, "slot size required");
	r = base_request(AG_PLUGIN_V4_0);
	r.has_compute_unit = false;
	expect_encode_error(&r, 0, "computeUnit");
	r = base_request(AG_PLUGIN_V5_0);
	r.compute_unit.mem_bytes = 0;
	expect_encode_error(&r, 0, "computeUnit");
	r = base_request(AG_PLUGIN_V1_0);
	r.has_metrics = false;
	expect_encode_error(&r, GiB, "metrics: protocol 1.0 requires metrics");
	r = base_request(AG_PLUGIN_V5_0);
	r.pod_name[0] = '\0';
	expect_encode_error(&r, 0, "pod.name");
	r = base_request(AG_PLUGIN_V5_0);
	r.metrics.load_avg_1m = NAN;
	expect_encode_error(&r, 0, "metrics.loadAvg1M");
	r = base_request(AG_PLUGIN_V4_0);
	r.metrics.memory_usage_bytes = INFINITY;
	expect_encode_error(&r, 0, "metrics.memoryUsageBytes");
	r = base_request((enum ag_plugin_version)0);
	expect_encode_error(&r, 0, "protoVersion");
	r = base_request((enum ag_plugin_version)8);
	expect_encode_error(&r, 0, "protoVersion");
}

static void expect_request_error(const char *body, uint64_t slot, const char *needle)
{
	struct vmact_err err = { 0 };
	struct ag_agent_request r;
	json_t *j = parse(body);
	int rc = ag_agent_request_decode(j, slot, &r, &err);

	json_decref(j);
	if (rc == 0)
		fail_msg("decoded without error: %s", body);
	assert_true(rc < 0);
	if (!strstr(err.msg, needle))
		fail_msg("error \"%s\" does not mention \"%s\" (body %s)", err.msg, needle, body);
}

#define POD "\"pod\":{\"namespace\":\"d\",\"name\":\"p\"}"
#define CU  "\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"}"

/* Request bodies the decoder refuses, with the slot size it decodes them
 * with and what its message must mention. */
static const struct {
	const char *body;
	uint64_t slot;
	const char *needle;
} request_errors[] = {
	{ "[]", 0, "expected a JSON object" },
	{ "{\"protoVersion\":\"7\"}", 0, "protoVersion: expected an integer" },
	{ "{\"protoVersion\":9," POD "}", 0, "protoVersion: 9" },
	{ "{\"protoVersion\":7}", 0, "pod: missing" },
	{ "{\"protoVersion\":7,\"pod\":[]}", 0, "pod: expected an object" },
	{ "{\"protoVersion\":7,\"pod\":{\"name\":\"p\"}}", 0, "pod: namespace: missing" },
	{ "{\"protoVersion\":7,\"pod\":{\"namespace\":\"d\",\"name\":5}}", 0,
	  "pod: name: expected a string" },
	{ "{\"protoVersion\":7,\"pod\":{\"namespace\":\"d\",\"name\":\"\"}}", 0,
	  "pod.name: must not be empty" },
	{ "{\"protoVersion\":7,\"pod\":{\"namespace\":\"d\",\"name\":\"a\\u0000b\"}}", 0, "NUL" },
	{ "{\"protoVersion\":7," POD "," CU "}", 0, "resources: missing" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":\"x\",\"mem\":1}}", 0,
	  "resources: vCPUs" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":1,\"mem\":-1}}", 0,
	  "resources: mem" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":1}}", 0,
	  "resources: mem: missing" },
	{ "{\"protoVersion\":7," POD ",\"computeUnit\":{\"vCPUs\":true,\"mem\":1},"
	  "\"resources\":{\"vCPUs\":1,\"mem\":1}}",
	  0, "computeUnit: vCPUs" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":1,\"mem\":1},"
	  "\"lastPermit\":5}",
	  0, "lastPermit: expected an object" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":1,\"mem\":1},"
	  "\"metrics\":{\"loadAvg1M\":0.5,\"loadAvg5M\":\"0.1\"}}",
	  0, "metrics: loadAvg5M: expected a number" },
	{ "{\"protoVersion\":1," POD ",\"resources\":{\"vCPUs\":1,\"mem\":1},"
	  "\"metrics\":{\"loadAvg1M\":0.5,\"memoryUsageBytes\":1e300}}",
	  GiB, "metrics: memoryUsageBytes: 1e+300 does not fit a float32" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":1,\"mem\":1},"
	  "\"metrics\":{}}",
	  0, "metrics: loadAvg1M: missing" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":1,\"mem\":1},"
	  "\"metrics\":{\"loadAvg1M\":\"0.5\"}}",
	  0, "metrics: loadAvg1M: expected a number" },
	{ "{\"protoVersion\":7," POD "," CU ",\"resources\":{\"vCPUs\":1,\"mem\":1},"
	  "\"metrics\":{\"loadAvg1M\":1e300}}",
	  0, "float32" },
	{ "{\"protoVersion\":1," POD ",\"resources\":{\"vCPUs\":1,\"mem\":1},"
	  "\"metrics\":null}",
	  GiB, "metrics: null is not allowed with protocol 1.0" },
	{ "{\"protoVersion\":2," POD ",\"resources\":{\"vCPUs\":0.5,\"mem\":1}}", GiB,
	  "resources: vCPUs: fractional CPU" },
	{ "{\"protoVersion\":3," POD ",\"resources\":{\"vCPUs\":1,\"mem\":1}}", 0,
	  "slot size required" },
	{ "{\"protoVersion\":3," POD ",\"resources\":{\"vCPUs\":1,\"mem\":1e19}}", GiB,
	  "resources: mem" },
	{ "{\"protoVersion\":3," POD ",\"resources\":{\"vCPUs\":1,\"mem\":17179869184}}", GiB,
	  "overflow" },
};

static void test_decode_request_errors(void **state)
{
	for (size_t i = 0; i < sizeof(request_errors) / sizeof(request_errors[0]); i++)
		expect_request_error(request_errors[i].body, request_errors[i].slot,
				     request_errors[i].needle);
	{
		char body[1300];
		char name[1100];

		memset(name, 'n', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		snprintf(body, sizeof(body),
			 "{\"protoVersion\":7,\"pod\":{\"namespace\":\"d\",\"name\":\"%s\"}}",
			 name);
		expect_request_error(body, 0, "pod: name: longer than 1023");
	}
}

static void test_decode_request_lenient_like_go(void **state)
{
	/* Keys match case-insensitively, unknown keys are ignored, metrics
	 * may be absent (nil) from 1.1, computeUnit absent is reported as
	 * such (the arbiter words that error). */
	json_t *j = parse("{\"PROTOVERSION\":7,\"Pod\":{\"Namespace\":\"d\",\"NAME\":\"p\"},"
			  "\"resources\":{\"vcpus\":\"0.5\",\"MEM\":\"1G\"},\"extra\":[1,2]}");
	struct ag_agent_request r;
	struct vmact_err err = { 0 };
	long long v;

	assert_int_equal(ag_agent_request_decode(j, 0, &r, &err), 0);
	assert_int_equal(r.version, AG_PLUGIN_V5_0);
	assert_string_equal(r.pod_namespace, "d");
	assert_int_equal(r.resources.milli_cpu, 500);
	assert_int_equal(r.resources.mem_bytes, 1000000000ULL);
	assert_false(r.has_compute_unit);
	assert_false(r.has_last_permit);
	assert_false(r.has_metrics);
	json_decref(j);

	j = parse("{\"pod\":{}}");
	assert_int_equal(ag_agent_request_peek_version(j, &v, &err), 0);
	assert_int_equal(v, 0);
	json_decref(j);
	j = parse("{\"protoVersion\":-3}");
	assert_int_equal(ag_agent_request_peek_version(j, &v, &err), 0);
	assert_int_equal(v, -3);
	assert_int_equal(ag_agent_request_decode(j, 0, &r, &err), -EPROTONOSUPPORT);
	json_decref(j);
}

static void expect_response(enum ag_plugin_version v, uint64_t slot, const char *body,
			    struct ag_plugin_response *out)
{
	struct vmact_err err = { 0 };
	json_t *j = parse(body);

	if (ag_plugin_response_decode(v, j, slot, out, &err) < 0)
		fail_msg("%s: %s", body, err.msg);
	json_decref(j);
}

static void expect_response_error(enum ag_plugin_version v, uint64_t slot, const char *body,
				  const char *needle)
{
	struct vmact_err err = { 0 };
	struct ag_plugin_response r;
	json_t *j = parse(body);
	int rc = ag_plugin_response_decode(v, j, slot, &r, &err);

	json_decref(j);
	if (rc == 0)
		fail_msg("decoded without error: %s", body);
	if (!strstr(err.msg, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, needle);
}

static void test_response_every_version(void **state)
{
	for (int v = 1; v <= 7; v++) {
		struct ag_plugin_response r = {
			.permit = { 3000, 3 * GiB },
			.migrate = true,
			.has_resource_unit = true,
			.resource_unit = { 1000, GiB },
		};
		struct ag_plugin_response back;
		struct vmact_err err = { 0 };
		json_t *j = ag_plugin_response_encode((enum ag_plugin_version)v, &r, GiB, &err);
		char *s;

		assert_non_null(j);
		s = dump(j);
		/* Below 2.0 "migrate" never goes out: v0.1.8 .. v0.5.1 agents
		 * panic on it (doc/protocols.md, "What each era's agents sent"). */
		if (v < AG_PLUGIN_V2_0)
			assert_string_equal(s, "{\"permit\":{\"vCPUs\":3,\"mem\":3},"
					       "\"resourceUnit\":{\"vCPUs\":1,\"mem\":1}}");
		else if (v < AG_PLUGIN_V3_0)
			assert_string_equal(s, "{\"permit\":{\"vCPUs\":3,\"mem\":3},\"migrate\":{},"
					       "\"resourceUnit\":{\"vCPUs\":1,\"mem\":1}}");
		else if (v < AG_PLUGIN_V4_0)
			assert_string_equal(s,
					    "{\"permit\":{\"vCPUs\":3,\"mem\":3},\"migrate\":{}}");
		else
			assert_string_equal(
				s, "{\"permit\":{\"vCPUs\":3,\"mem\":\"3Gi\"},\"migrate\":{}}");
		assert_int_equal(ag_plugin_response_decode((enum ag_plugin_version)v, j, GiB, &back,
							   &err),
				 0);
		assert_int_equal(back.permit.milli_cpu, 3000);
		assert_int_equal(back.permit.mem_bytes, 3 * GiB);
		assert_int_equal(back.migrate, v >= AG_PLUGIN_V2_0);
		assert_int_equal(back.has_resource_unit, v < AG_PLUGIN_V3_0);
		free(s);
		json_decref(j);
	}
}

/* Permit responses the decoder refuses: version, slot size, body, and
 * what the message must mention. */
static const struct {
	enum ag_plugin_version v;
	uint64_t slot;
	const char *body;
	const char *needle;
} response_errors[] = {
	{ AG_PLUGIN_V5_0, 0, "null", "expected a JSON object" },
	{ AG_PLUGIN_V5_0, 0, "{}", "permit: missing" },
	{ AG_PLUGIN_V5_0, 0, "{\"permit\":null}", "permit: missing" },
	{ AG_PLUGIN_V5_0, 0, "{\"permit\":{\"vCPUs\":\"x\",\"mem\":1}}", "permit: vCPUs" },
	{ AG_PLUGIN_V5_0, 0, "{\"permit\":{\"vCPUs\":1}}", "permit: mem: missing" },
	{ AG_PLUGIN_V5_0, 0, "{\"permit\":{\"vCPUs\":1,\"mem\":1},\"migrate\":true}",
	  "migrate: expected an object" },
	{ AG_PLUGIN_V1_1, GiB, "{\"permit\":{\"vCPUs\":\"500m\",\"mem\":1}}", "fractional CPU" },
	{ AG_PLUGIN_V2_0, GiB,
	  "{\"permit\":{\"vCPUs\":1,\"mem\":1},\"resourceUnit\":{\"vCPUs\":1}}",
	  "resourceUnit: mem: missing" },
	{ AG_PLUGIN_V3_0, 0, "{\"permit\":{\"vCPUs\":1,\"mem\":1}}", "slot size required" },
	{ (enum ag_plugin_version)0, 0, "{\"permit\":{\"vCPUs\":1,\"mem\":1}}",
	  "invalid protocol version" },
};

static void test_response_decode_cases(void **state)
{
	struct ag_plugin_response r;

	expect_response(AG_PLUGIN_V5_0, 0,
			"{\"permit\":{\"vCPUs\":\"750m\",\"mem\":\"3Gi\"},\"migrate\":null}", &r);
	assert_int_equal(r.permit.milli_cpu, 750);
	assert_false(r.migrate);
	expect_response(AG_PLUGIN_V5_0, 0,
			"{\"Permit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},\"migrate\":{\"x\":1},"
			"\"resourceUnit\":\"ignored from 3.0\"}",
			&r);
	assert_true(r.migrate);
	assert_false(r.has_resource_unit);
	expect_response(AG_PLUGIN_V2_1, 512 * 1024 * 1024ULL,
			"{\"permit\":{\"vCPUs\":\"1500m\",\"mem\":3}}", &r);
	assert_int_equal(r.permit.mem_bytes, 3 * 512 * 1024 * 1024ULL);
	assert_false(r.has_resource_unit);

	for (size_t i = 0; i < sizeof(response_errors) / sizeof(response_errors[0]); i++)
		expect_response_error(response_errors[i].v, response_errors[i].slot,
				      response_errors[i].body, response_errors[i].needle);
}

static void test_permit_validate(void **state)
{
	struct vmact_resources req = { 1000, 4 * GiB }, cur = { 250, GiB };
	struct {
		struct vmact_resources permit;
		const char *needle;
	} t[] = {
		{ { 0, GiB }, "vCPUs is zero" },
		{ { 250, 0 }, "mem is zero" },
		{ { 1250, GiB }, "vCPUs 1250m is above the requested 1" },
		{ { 250, 5 * GiB }, "mem 5Gi is above the requested 4Gi" },
		{ { 200, GiB }, "vCPUs 200m is below current usage 250m" },
		{ { 250, GiB / 2 }, "mem 512Mi is below current usage 1Gi" },
	};
	struct vmact_err err = { 0 };
	struct vmact_resources ok = { 750, 3 * GiB };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		vmact_err_reset(&err);
		assert_int_equal(ag_plugin_permit_validate(&t[i].permit, &req, &cur, &err),
				 -EPROTO);
		if (!strstr(err.msg, t[i].needle))
			fail_msg("\"%s\" lacks \"%s\"", err.msg, t[i].needle);
	}
	assert_int_equal(ag_plugin_permit_validate(&ok, &req, &cur, &err), 0);
	assert_int_equal(ag_plugin_permit_validate(&req, &req, &req, &err), 0);
	assert_int_equal(ag_plugin_permit_validate(&ok, &req, NULL, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_encode_every_version),
		cmocka_unit_test(test_encode_fractional_and_nulls),
		cmocka_unit_test(test_float32_shortest),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_decode_request_errors),
		cmocka_unit_test(test_decode_request_lenient_like_go),
		cmocka_unit_test(test_response_every_version),
		cmocka_unit_test(test_response_decode_cases),
		cmocka_unit_test(test_permit_validate),
	};

	return cmocka_run_group_tests_name("test_plugin", tests, NULL, NULL);
}
