/* SPDX-License-Identifier: Apache-2.0 */
/* Informant protocol codecs (agent-glue/codec/informant.h) and the neonvm-runner's
 * VCPUs bodies (agent-glue/codec/neonvm-runner.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent-glue/codec/informant.h"
#include "agent-glue/codec/neonvm-runner.h"
#include "base/macro.h"

#define ID "6e4c3f2a-1b2d-4e8f-9a0b-1c2d3e4f5a6b"

static json_t *parse(const char *s)
{
	struct vmact_err err = { 0 };
	json_t *v = NULL;

	assert_int_equal(ag_inf_parse_body(s, strlen(s), &v, &err), 0);
	return v;
}

/* Asserts that text equals the compact, key-sorted form of v. */
static void assert_json(json_t *v, const char *want)
{
	char *got;

	assert_non_null(v);
	got = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	json_decref(v);
}

/* Asserts err names `field`. */
static void assert_err_names(const struct vmact_err *err, const char *field)
{
	assert_true(err->code != 0);
	if (!strstr(err->msg, field))
		fail_msg("error \"%s\" does not name \"%s\"", err->msg, field);
}

static void test_versions(void **state)
{
	struct vmact_err err = { 0 };
	uint32_t v = 0;

	(void)state;
	assert_string_equal(ag_inf_version_name(1), "1.0");
	assert_string_equal(ag_inf_version_name(4), "2.0");
	assert_null(ag_inf_version_name(0));
	assert_null(ag_inf_version_name(5));
	assert_int_equal(ag_inf_version_parse("1.2", &v, &err), 0);
	assert_int_equal(v, AG_INF_V1_2);
	assert_int_equal(ag_inf_version_parse("3.0", &v, &err), -EINVAL);
	assert_true(!ag_inf_has_try_upscale(1) && ag_inf_has_try_upscale(2));
	assert_true(!ag_inf_has_health_check(2) && ag_inf_has_health_check(3));
	assert_true(!ag_inf_signed_resources(3) && ag_inf_signed_resources(4));
}

static void test_negotiate(void **state)
{
	struct vmact_err err = { 0 };
	uint32_t v = 0;

	(void)state;
	/* v0.10 agent (1.0-2.0) against each informant generation. */
	assert_int_equal(ag_inf_negotiate(1, 4, 4, 4, &v, &err), 0);
	assert_int_equal(v, 4);
	assert_int_equal(ag_inf_negotiate(1, 4, 2, 3, &v, &err), 0);
	assert_int_equal(v, 3);
	assert_int_equal(ag_inf_negotiate(1, 2, 2, 2, &v, &err), 0);
	assert_int_equal(v, 2);
	/* v0.1.0 agent (1.0 only) against a 1.1-only informant. */
	v = 99;
	assert_int_equal(ag_inf_negotiate(1, 1, 2, 2, &v, &err), -EPROTO);
	assert_int_equal(v, 99);
	assert_err_names(&err, "mismatch");
	vmact_err_reset(&err);
	assert_int_equal(ag_inf_negotiate(3, 2, 1, 4, &v, &err), -EINVAL);
	vmact_err_reset(&err);
	assert_int_equal(ag_inf_negotiate(1, 5, 1, 4, &v, &err), -EINVAL);
	vmact_err_reset(&err);
	assert_int_equal(ag_inf_negotiate(0, 4, 1, 4, &v, &err), -EINVAL);
}

static void test_uuid(void **state)
{
	struct vmact_err err = { 0 };
	char a[AG_INF_ID_MAX], b[AG_INF_ID_MAX];

	(void)state;
	assert_int_equal(ag_inf_uuid_parse("6E4C3F2A-1B2D-4E8F-9A0B-1C2D3E4F5A6B", a), 0);
	assert_string_equal(a, ID);
	assert_int_equal(ag_inf_uuid_parse("{" ID "}", a), 0);
	assert_string_equal(a, ID);
	assert_int_equal(ag_inf_uuid_parse("urn:uuid:" ID, a), 0);
	assert_string_equal(a, ID);
	assert_int_equal(ag_inf_uuid_parse("6e4c3f2a1b2d4e8f9a0b1c2d3e4f5a6b", a), 0);
	assert_string_equal(a, ID);
	assert_int_equal(ag_inf_uuid_parse("6e4c3f2a-1b2d-4e8f-9a0b-1c2d3e4f5a6", a), -EINVAL);
	assert_int_equal(ag_inf_uuid_parse("6e4c3f2a-1b2d-4e8f-9a0b_1c2d3e4f5a6b", a), -EINVAL);
	assert_int_equal(ag_inf_uuid_parse("6e4c3f2a-1b2d-4e8f-9a0b-1c2d3e4f5a6g", a), -EINVAL);
	assert_int_equal(ag_inf_uuid_parse("", a), -EINVAL);
	assert_int_equal(ag_inf_uuid_new(a, &err), 0);
	assert_int_equal(ag_inf_uuid_new(b, &err), 0);
	assert_int_equal(strlen(a), 36);
	assert_string_not_equal(a, b);
	assert_int_equal(a[14], '4');
	assert_int_equal(ag_inf_uuid_parse(a, b), 0);
	assert_string_equal(a, b);
}

static void assert_desc_equal(const struct ag_agent_desc *a, const struct ag_agent_desc *b)
{
	assert_string_equal(a->agent_id, b->agent_id);
	assert_string_equal(a->serve_addr, b->serve_addr);
	assert_int_equal(a->min_version, b->min_version);
	assert_int_equal(a->max_version, b->max_version);
}

static void test_agent_desc(void **state)
{
	struct ag_agent_desc d = { .agent_id = ID,
				   .serve_addr = "127.0.0.1:41233",
				   .min_version = 1,
				   .max_version = 4 },
			     got;
	struct vmact_err err = { 0 };
	json_t *v;

	(void)state;
	v = ag_agent_desc_encode(&d);
	assert_int_equal(ag_agent_desc_decode(v, &got, &err), 0);
	assert_desc_equal(&got, &d);
	assert_json(v, "{\"agentID\":\"" ID "\",\"agentServeAddr\":\"127.0.0.1:41233\","
		       "\"maxProtoVersion\":4,\"minProtoVersion\":1}");

	/* Case-insensitive keys, unknown keys ignored, upper-case UUID. */
	v = parse(
		"{\"AGENTID\":\"6E4C3F2A-1B2D-4E8F-9A0B-1C2D3E4F5A6B\",\"agentserveaddr\":\"[::1]:5\","
		"\"MinProtoVersion\":2,\"maxprotoversion\":3,\"extra\":[1]}");
	assert_int_equal(ag_agent_desc_decode(v, &got, &err), 0);
	assert_string_equal(got.agent_id, ID);
	assert_string_equal(got.serve_addr, "[::1]:5");
	assert_int_equal(got.min_version, 2);
	assert_int_equal(got.max_version, 3);
	json_decref(v);

	static const struct {
		const char *body, *field;
	} bad[] = {
		{ "{\"agentServeAddr\":\"a:1\",\"minProtoVersion\":1,\"maxProtoVersion\":4}",
		  "agentID" },
		{ "{\"agentID\":\"nope\",\"agentServeAddr\":\"a:1\",\"minProtoVersion\":1,\"maxProtoVersion\":4}",
		  "agentID" },
		{ "{\"agentID\":7,\"agentServeAddr\":\"a:1\",\"minProtoVersion\":1,\"maxProtoVersion\":4}",
		  "agentID" },
		{ "{\"agentID\":\"" ID "\",\"minProtoVersion\":1,\"maxProtoVersion\":4}",
		  "agentServeAddr" },
		{ "{\"agentID\":\"" ID
		  "\",\"agentServeAddr\":\"\",\"minProtoVersion\":1,\"maxProtoVersion\":4}",
		  "agentServeAddr" },
		{ "{\"agentID\":\"" ID "\",\"agentServeAddr\":\"a:1\",\"maxProtoVersion\":4}",
		  "minProtoVersion" },
		{ "{\"agentID\":\"" ID
		  "\",\"agentServeAddr\":\"a:1\",\"minProtoVersion\":0,\"maxProtoVersion\":4}",
		  "minProtoVersion" },
		{ "{\"agentID\":\"" ID
		  "\",\"agentServeAddr\":\"a:1\",\"minProtoVersion\":1,\"maxProtoVersion\":5}",
		  "maxProtoVersion" },
		{ "{\"agentID\":\"" ID
		  "\",\"agentServeAddr\":\"a:1\",\"minProtoVersion\":1,\"maxProtoVersion\":\"4\"}",
		  "maxProtoVersion" },
		{ "{\"agentID\":\"" ID
		  "\",\"agentServeAddr\":\"a:1\",\"minProtoVersion\":-1,\"maxProtoVersion\":4}",
		  "minProtoVersion" },
		{ "{\"agentID\":\"" ID
		  "\",\"agentServeAddr\":\"a:1\",\"minProtoVersion\":4,\"maxProtoVersion\":1}",
		  "minProtoVersion" },
		{ "[]", "AgentDesc" },
		{ "null", "AgentDesc" },
	};
	/* Embedded NUL (only reachable when a caller built the JSON). */
	v = json_pack("{s:s,s:s#,s:i,s:i}", "agentID", ID, "agentServeAddr", "a\0b", (int)3,
		      "minProtoVersion", 1, "maxProtoVersion", 4);
	assert_true(ag_agent_desc_decode(v, &got, &err) < 0);
	assert_err_names(&err, "agentServeAddr");
	json_decref(v);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct ag_agent_desc untouched = d;

		vmact_err_reset(&err);
		v = parse(bad[i].body);
		assert_true(ag_agent_desc_decode(v, &untouched, &err) < 0);
		assert_desc_equal(&untouched, &d);
		assert_err_names(&err, bad[i].field);
		json_decref(v);
	}
}

static void test_informant_desc(void **state)
{
	struct ag_informant_desc d = { .version = 4,
				       .has_prometheus = true,
				       .prometheus_port = 9100 },
				 got;
	struct vmact_err err = { 0 };
	json_t *v;

	(void)state;
	v = ag_informant_desc_encode(&d);
	assert_int_equal(ag_informant_desc_decode(v, 1, 4, &got, &err), 0);
	assert_int_equal(got.version, 4);
	assert_true(got.has_prometheus);
	assert_int_equal(got.prometheus_port, 9100);
	assert_json(v, "{\"metricsMethod\":{\"prometheus\":{\"port\":9100}},\"protoVersion\":4}");

	v = parse("{\"ProtoVersion\":3,\"MetricsMethod\":{\"Prometheus\":{\"Port\":9101}}}");
	assert_int_equal(ag_informant_desc_decode(v, 1, 4, &got, &err), 0);
	assert_int_equal(got.version, 3);
	assert_int_equal(got.prometheus_port, 9101);
	/* Outside the agent's range. */
	assert_int_equal(ag_informant_desc_decode(v, 1, 2, &got, &err), -EPROTO);
	assert_err_names(&err, "protoVersion");
	json_decref(v);

	static const struct {
		const char *body, *field;
	} bad[] = {
		{ "{\"protoVersion\":4,\"metricsMethod\":{}}", "metrics method" },
		{ "{\"protoVersion\":4,\"metricsMethod\":{\"prometheus\":null}}",
		  "metrics method" },
		{ "{\"protoVersion\":4}", "metricsMethod" },
		{ "{\"protoVersion\":4,\"metricsMethod\":[]}", "metricsMethod" },
		{ "{\"protoVersion\":4,\"metricsMethod\":{\"prometheus\":{}}}",
		  "metricsMethod.prometheus: port" },
		{ "{\"protoVersion\":4,\"metricsMethod\":{\"prometheus\":{\"port\":65536}}}",
		  "port" },
		{ "{\"protoVersion\":4,\"metricsMethod\":{\"prometheus\":{\"port\":0}}}", "port" },
		{ "{\"protoVersion\":4,\"metricsMethod\":{\"prometheus\":{\"port\":\"9100\"}}}",
		  "port" },
		{ "{\"protoVersion\":4,\"metricsMethod\":{\"prometheus\":5}}", "prometheus" },
		{ "{\"protoVersion\":0,\"metricsMethod\":{\"prometheus\":{\"port\":1}}}",
		  "protoVersion" },
		{ "{\"protoVersion\":\"2.0\",\"metricsMethod\":{\"prometheus\":{\"port\":1}}}",
		  "protoVersion" },
		{ "{\"metricsMethod\":{\"prometheus\":{\"port\":1}}}", "protoVersion" },
		{ "\"x\"", "InformantDesc" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		vmact_err_reset(&err);
		v = parse(bad[i].body);
		assert_true(ag_informant_desc_decode(v, 1, 4, &got, &err) < 0);
		assert_err_names(&err, bad[i].field);
		json_decref(v);
	}
}

static void test_agent_message(void **state)
{
	struct vmact_err err = { 0 };
	char id[AG_INF_ID_MAX];
	uint64_t seq = 0;
	json_t *v;

	(void)state;
	v = ag_agent_id_message_encode(ID, 7);
	assert_int_equal(ag_agent_id_message_decode(v, id, &seq, &err), 0);
	assert_string_equal(id, ID);
	assert_int_equal(seq, 7);
	assert_json(v, "{\"data\":{\"agentID\":\"" ID "\"},\"sequenceNumber\":7}");

	v = parse("{\"Data\":{\"AgentId\":\"" ID "\"},\"SEQUENCENUMBER\":18446744073709551615e0}");
	assert_true(ag_agent_id_message_decode(v, id, &seq, &err) < 0);
	json_decref(v);

	static const struct {
		const char *body, *field;
	} bad[] = {
		{ "{\"data\":{\"agentID\":\"" ID "\"}}", "sequenceNumber" },
		{ "{\"data\":{\"agentID\":\"" ID "\"},\"sequenceNumber\":-1}", "sequenceNumber" },
		{ "{\"data\":{\"agentID\":\"" ID "\"},\"sequenceNumber\":\"1\"}",
		  "sequenceNumber" },
		{ "{\"sequenceNumber\":1}", "data" },
		{ "{\"data\":{},\"sequenceNumber\":1}", "data: agentID" },
		{ "{\"data\":[],\"sequenceNumber\":1}", "data" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		vmact_err_reset(&err);
		v = parse(bad[i].body);
		assert_true(ag_agent_id_message_decode(v, id, &seq, &err) < 0);
		assert_err_names(&err, bad[i].field);
		json_decref(v);
	}
	/* encode steals data even when it fails. */
	assert_null(ag_agent_message_encode(json_object(), UINT64_MAX));
	assert_null(ag_agent_message_encode(NULL, 1));
}

static void test_raw_resources(void **state)
{
	struct vmact_resources r = { .milli_cpu = 250, .mem_bytes = 4ULL << 30 }, got;
	struct vmact_err err = { 0 };
	char id[AG_INF_ID_MAX];
	uint64_t seq;
	json_t *v;

	(void)state;
	v = ag_raw_resources_encode(&r);
	assert_int_equal(ag_raw_resources_decode(v, &got, &err), 0);
	assert_int_equal(got.milli_cpu, 250);
	assert_int_equal(got.mem_bytes, 4ULL << 30);
	assert_json(v, "{\"cpu\":\"250m\",\"memory\":\"4Gi\"}");
	r.milli_cpu = 2000;
	r.mem_bytes = 1536ULL << 20;
	assert_json(ag_raw_resources_encode(&r), "{\"cpu\":\"2\",\"memory\":\"1536Mi\"}");

	/* resource.Quantity also takes numbers and any suffix; ceil. */
	v = parse("{\"CPU\":0.0005,\"Memory\":\"1G\"}");
	assert_int_equal(ag_raw_resources_decode(v, &got, &err), 0);
	assert_int_equal(got.milli_cpu, 1);
	assert_int_equal(got.mem_bytes, 1000000000ULL);
	json_decref(v);

	static const struct {
		const char *body, *field;
	} bad[] = {
		{ "{\"memory\":\"1Gi\"}", "cpu" },
		{ "{\"cpu\":\"1\"}", "memory" },
		{ "{\"cpu\":\"-1\",\"memory\":\"1Gi\"}", "cpu" },
		{ "{\"cpu\":\"1\",\"memory\":\"lots\"}", "memory" },
		{ "{\"cpu\":true,\"memory\":\"1Gi\"}", "cpu" },
		{ "{\"cpu\":null,\"memory\":\"1Gi\"}", "cpu" },
		{ "{\"cpu\":\"1\",\"memory\":\"99Ei\"}", "memory" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		vmact_err_reset(&err);
		v = parse(bad[i].body);
		assert_true(ag_raw_resources_decode(v, &got, &err) < 0);
		assert_err_names(&err, bad[i].field);
		json_decref(v);
	}

	/* v2.0 AgentResourceMessage. */
	r.milli_cpu = 500;
	r.mem_bytes = 2ULL << 30;
	v = ag_resource_message_encode(&r, ID, 7);
	assert_int_equal(ag_resource_message_decode(v, &got, id, &seq, &err), 0);
	assert_int_equal(got.milli_cpu, 500);
	assert_int_equal(got.mem_bytes, 2ULL << 30);
	assert_string_equal(id, ID);
	assert_int_equal(seq, 7);
	assert_json(v, "{\"data\":{\"cpu\":\"500m\",\"id\":{\"agentID\":\"" ID "\"},"
		       "\"memory\":\"2Gi\"},\"sequenceNumber\":7}");
	vmact_err_reset(&err);
	v = parse("{\"data\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"sequenceNumber\":1}");
	assert_true(ag_resource_message_decode(v, &got, id, &seq, &err) < 0);
	assert_err_names(&err, "data: id");
	json_decref(v);
	vmact_err_reset(&err);
	v = parse(
		"{\"data\":{\"cpu\":\"1\",\"memory\":\"1Gi\",\"id\":{\"agentID\":1}},\"sequenceNumber\":1}");
	assert_true(ag_resource_message_decode(v, &got, id, &seq, &err) < 0);
	assert_err_names(&err, "data: id: agentID");
	json_decref(v);
}

static void test_small_types(void **state)
{
	struct ag_more_resources m = { .cpu = false, .memory = true, .expected_id = ID }, mgot;
	struct ag_downscale_result dr = { .ok = false, .status = "not enough free memory" }, dgot;
	struct vmact_err err = { 0 };
	char id[AG_INF_ID_MAX];
	bool active = false;
	json_t *v;

	(void)state;
	v = ag_more_resources_encode(&m);
	assert_int_equal(ag_more_resources_decode(v, &mgot, &err), 0);
	assert_true(mgot.cpu == m.cpu && mgot.memory == m.memory);
	assert_string_equal(mgot.expected_id, m.expected_id);
	assert_json(v, "{\"cpu\":false,\"expectedID\":\"" ID "\",\"memory\":true}");
	v = parse("{\"cpu\":1,\"memory\":true,\"expectedID\":\"" ID "\"}");
	assert_true(ag_more_resources_decode(v, &mgot, &err) < 0);
	assert_err_names(&err, "cpu");
	json_decref(v);
	vmact_err_reset(&err);
	v = parse("{\"cpu\":true,\"memory\":true}");
	assert_true(ag_more_resources_decode(v, &mgot, &err) < 0);
	assert_err_names(&err, "expectedID");
	json_decref(v);

	v = ag_expected_id_encode(ID);
	assert_int_equal(ag_expected_id_decode(v, id, &err), 0);
	assert_string_equal(id, ID);
	assert_json(v, "{\"expectedID\":\"" ID "\"}");
	vmact_err_reset(&err);
	v = parse("{\"expectedId\":\"zzz\"}");
	assert_true(ag_expected_id_decode(v, id, &err) < 0);
	assert_err_names(&err, "expectedID");
	json_decref(v);

	v = ag_unregister_encode(true);
	assert_int_equal(ag_unregister_decode(v, &active, &err), 0);
	assert_true(active);
	assert_json(v, "{\"wasActive\":true}");
	vmact_err_reset(&err);
	v = parse("{\"wasactive\":null}");
	assert_true(ag_unregister_decode(v, &active, &err) < 0);
	assert_err_names(&err, "wasActive");
	json_decref(v);

	v = ag_downscale_result_encode(&dr);
	assert_int_equal(ag_downscale_result_decode(v, &dgot, &err), 0);
	assert_false(dgot.ok);
	assert_string_equal(dgot.status, dr.status);
	assert_json(v, "{\"Ok\":false,\"Status\":\"not enough free memory\"}");
	/* The vm-monitor and any lower-case variant decode alike. */
	v = parse("{\"ok\":true,\"status\":\"fine\"}");
	assert_int_equal(ag_downscale_result_decode(v, &dgot, &err), 0);
	assert_true(dgot.ok);
	assert_string_equal(dgot.status, "fine");
	json_decref(v);
	vmact_err_reset(&err);
	v = parse("{\"Ok\":true}");
	assert_true(ag_downscale_result_decode(v, &dgot, &err) < 0);
	assert_err_names(&err, "Status");
	json_decref(v);
	vmact_err_reset(&err);
	v = parse("{\"Ok\":\"yes\",\"Status\":\"\"}");
	assert_true(ag_downscale_result_decode(v, &dgot, &err) < 0);
	assert_err_names(&err, "Ok");
	json_decref(v);

	v = parse("{}");
	assert_int_equal(ag_inf_empty_decode(v, &err), 0);
	json_decref(v);
	v = parse("null");
	assert_int_equal(ag_inf_empty_decode(v, &err), 0);
	json_decref(v);
	v = parse("[]");
	assert_true(ag_inf_empty_decode(v, &err) < 0);
	json_decref(v);
}

static void test_parse_body(void **state)
{
	static const char *const bad[] = { "",    "{",
					   "{}x", "{\"a\":1,\"a\":2}",
					   "nul", "{\"a\":\"\\u0000\"}" };
	struct vmact_err err = { 0 };
	json_t *v = NULL;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		vmact_err_reset(&err);
		assert_true(ag_inf_parse_body(bad[i], strlen(bad[i]), &v, &err) < 0);
		assert_null(v);
		assert_true(err.msg[0] != '\0');
	}
	assert_true(ag_inf_parse_body("{}\0", 3, &v, &err) < 0);
	assert_int_equal(ag_inf_parse_body(" {} \n", 5, &v, &err), 0);
	json_decref(v);
}

static void test_neonvm_runner(void **state)
{
	struct vmact_err err = { 0 };
	uint32_t m = 0;
	json_t *v;

	(void)state;
	assert_json(ag_neonvm_runner_vcpu_change_encode(2000), "{\"VCPUs\":2}");
	assert_json(ag_neonvm_runner_vcpu_change_encode(1500), "{\"VCPUs\":\"1500m\"}");
	assert_json(ag_neonvm_runner_vcpu_cgroup_encode(250), "{\"VCPUs\":\"250m\"}");
	v = parse("{\"vcpus\":\"0.25\"}");
	assert_int_equal(ag_neonvm_runner_vcpu_change_decode(v, &m, &err), 0);
	assert_int_equal(m, 250);
	json_decref(v);
	v = parse("{\"VCPUs\":1.5}");
	assert_int_equal(ag_neonvm_runner_vcpu_cgroup_decode(v, &m, &err), 0);
	assert_int_equal(m, 1500);
	json_decref(v);
	v = parse("{\"VCPUs\":\"fast\"}");
	assert_true(ag_neonvm_runner_vcpu_change_decode(v, &m, &err) < 0);
	assert_err_names(&err, "VCPUs");
	json_decref(v);
	vmact_err_reset(&err);
	v = parse("{\"cpus\":1}");
	assert_true(ag_neonvm_runner_vcpu_cgroup_decode(v, &m, &err) < 0);
	assert_err_names(&err, "VCPUs");
	json_decref(v);
	vmact_err_reset(&err);
	v = parse("[1]");
	assert_true(ag_neonvm_runner_vcpu_change_decode(v, &m, &err) < 0);
	assert_err_names(&err, "VCPUChange");
	json_decref(v);

	assert_int_equal(ag_neonvm_runner_version_parse("1", &m, &err), 0);
	assert_int_equal(m, 1);
	assert_true(ag_neonvm_runner_supports_cgroup_fractional_cpu(m));
	assert_int_equal(ag_neonvm_runner_version_parse("0", &m, &err), -EINVAL);
	assert_int_equal(ag_neonvm_runner_version_parse("", &m, &err), -EINVAL);
	assert_int_equal(ag_neonvm_runner_version_parse("-1", &m, &err), -EINVAL);
	assert_int_equal(ag_neonvm_runner_version_parse("1x", &m, &err), -EINVAL);
	vmact_err_reset(&err);
	assert_int_equal(ag_neonvm_runner_version_parse("99999999999", &m, &err), -ERANGE);
}

/* The runner's HTTP surface: routes, the /cpu_change body as text, the
 * /cpu_current answer. */
static void test_neonvm_runner_http(void **state)
{
	static const struct {
		const char *body;
		uint32_t milli;
	} good[] = {
		{ "{\"VCPUs\":2}", 2000 },
		{ "{\"VCPUs\":\"1500m\"}", 1500 },
		{ "{\"vcpus\":0.25}", 250 },
		{ " {\"VCPUs\":\"1.5\",\"other\":[1]} ", 1500 },
		{ "{\"VCPUs\":1,\"VCPUs\":3}", 3000 }, /* Go keeps the last */
	};
	static const struct {
		const char *body;
		const char *want;
	} bad[] = {
		{ "", "bad JSON" },
		{ "{\"VCPUs\":", "bad JSON" },
		{ "VCPUs=2", "bad JSON" },
		{ "null", "VCPUChange" },
		{ "2", "VCPUChange" },
		{ "{}", "VCPUs: missing" },
		{ "{\"VCPUs\":null}", "VCPUs" },
		{ "{\"VCPUs\":-1}", "VCPUs" },
		{ "{\"VCPUs\":\"two\"}", "VCPUs" },
		{ "{\"VCPUs\":5000000}", "VCPUs" }, /* past uint32 milli-CPUs */
		{ "{\"VCPUs\":true}", "VCPUs" },
	};
	struct vmact_err err = { 0 };
	uint32_t m = 0;
	size_t len = 0;
	char *s;

	(void)state;
	assert_int_equal(ag_neonvm_runner_route("POST", "/cpu_change"), AG_RUNNER_CPU_CHANGE);
	assert_int_equal(ag_neonvm_runner_route("GET", "/cpu_current"), AG_RUNNER_CPU_CURRENT);
	assert_int_equal(ag_neonvm_runner_route("GET", "/cpu_change"), AG_RUNNER_BAD_METHOD);
	assert_int_equal(ag_neonvm_runner_route("PUT", "/cpu_change"), AG_RUNNER_BAD_METHOD);
	assert_int_equal(ag_neonvm_runner_route("POST", "/cpu_current"), AG_RUNNER_BAD_METHOD);
	assert_int_equal(ag_neonvm_runner_route("post", "/cpu_change"), AG_RUNNER_BAD_METHOD);
	assert_int_equal(ag_neonvm_runner_route("HEAD", "/ready"), AG_RUNNER_READY);
	assert_int_equal(ag_neonvm_runner_route("POST", "/cpu_change/"), AG_RUNNER_NOT_FOUND);
	assert_int_equal(ag_neonvm_runner_route("POST", "/CPU_CHANGE"), AG_RUNNER_NOT_FOUND);
	assert_int_equal(ag_neonvm_runner_route("GET", "/"), AG_RUNNER_NOT_FOUND);
	assert_int_equal(ag_neonvm_runner_route("GET", "/metrics"), AG_RUNNER_NOT_FOUND);

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		vmact_err_reset(&err);
		if (ag_neonvm_runner_change_parse(good[i].body, strlen(good[i].body), &m, &err) < 0)
			fail_msg("'%s': %s", good[i].body, err.msg);
		assert_int_equal(m, good[i].milli);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		vmact_err_reset(&err);
		int r = ag_neonvm_runner_change_parse(bad[i].body, strlen(bad[i].body), &m, &err);

		if ((r != -EINVAL && r != -ERANGE) || !strstr(err.msg, bad[i].want))
			fail_msg("'%s': '%s', want '%s'", bad[i].body, err.msg, bad[i].want);
	}
	/* A NUL inside the body is not JSON. */
	vmact_err_reset(&err);
	assert_int_equal(ag_neonvm_runner_change_parse("{\"VCPUs\":2}\0", 13, &m, &err), -EINVAL);

	s = ag_neonvm_runner_cgroup_dump(1500, &len);
	assert_non_null(s);
	assert_string_equal(s, "{\"VCPUs\":\"1500m\"}");
	assert_int_equal(len, strlen(s));
	free(s);
	s = ag_neonvm_runner_cgroup_dump(2000, &len);
	assert_string_equal(s, "{\"VCPUs\":2}");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_uuid),
		cmocka_unit_test(test_agent_desc),
		cmocka_unit_test(test_informant_desc),
		cmocka_unit_test(test_agent_message),
		cmocka_unit_test(test_raw_resources),
		cmocka_unit_test(test_small_types),
		cmocka_unit_test(test_parse_body),
		cmocka_unit_test(test_neonvm_runner),
		cmocka_unit_test(test_neonvm_runner_http),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
