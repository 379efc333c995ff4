/* SPDX-License-Identifier: Apache-2.0 */
/* Any HTTP body through every informant-protocol and runner decoder, as
 * both sides of the agent <-> informant exchange (and the runner API's
 * server, doc/runner-api.md) would see it. Whatever
 * decodes must re-encode and decode to the same value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/codec/informant.h"
#include "agent-glue/codec/neonvm-runner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *must(json_t *v)
{
	if (!v)
		abort();
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct ag_agent_desc ad, ad2;
	struct ag_informant_desc id, id2;
	struct vmact_resources r, r2;
	struct ag_more_resources m, m2;
	struct ag_downscale_result dr, dr2;
	char s1[AG_INF_ID_MAX], s2[AG_INF_ID_MAX];
	uint64_t seq, seq2;
	uint32_t cpu, cpu2;
	bool b, b2;
	json_t *v = NULL, *e;

	/* The raw bytes as an agent ID and as a version name. */
	if (size < 64) {
		char text[64], canon[AG_INF_ID_MAX];
		uint32_t ver;

		memcpy(text, data, size);
		text[size] = '\0';
		if (ag_inf_uuid_parse(text, s1) == 0 &&
		    (ag_inf_uuid_parse(s1, canon) != 0 || strcmp(s1, canon) != 0))
			abort();
		if (ag_inf_version_parse(text, &ver, &err) == 0 &&
		    strcmp(ag_inf_version_name(ver), text) != 0)
			abort();
		vmact_err_reset(&err);
	}
	/* The bytes as a runner API /cpu_change body: what parses answers
	 * /cpu_current with text that parses back to the same value. */
	if (ag_neonvm_runner_change_parse((const char *)data, size, &cpu, &err) == 0) {
		size_t len = 0;
		char *text = ag_neonvm_runner_cgroup_dump(cpu, &len);

		if (!text || ag_neonvm_runner_change_parse(text, len, &cpu2, &err) || cpu != cpu2)
			abort();
		free(text);
	}
	vmact_err_reset(&err);
	if (ag_inf_parse_body((const char *)data, size, &v, &err) < 0)
		return 0;

	if (ag_agent_desc_decode(v, &ad, &err) == 0) {
		e = must(ag_agent_desc_encode(&ad));
		if (ag_agent_desc_decode(e, &ad2, &err) != 0 || strcmp(ad.agent_id, ad2.agent_id) ||
		    strcmp(ad.serve_addr, ad2.serve_addr) || ad.min_version != ad2.min_version ||
		    ad.max_version != ad2.max_version)
			abort();
		json_decref(e);
	}
	if (ag_informant_desc_decode(v, AG_INF_VERSION_MIN, AG_INF_VERSION_MAX, &id, &err) == 0) {
		e = must(ag_informant_desc_encode(&id));
		if (ag_informant_desc_decode(e, AG_INF_VERSION_MIN, AG_INF_VERSION_MAX, &id2,
					     &err) ||
		    id.version != id2.version || id.prometheus_port != id2.prometheus_port)
			abort();
		json_decref(e);
	}
	if (ag_agent_id_message_decode(v, s1, &seq, &err) == 0) {
		e = must(ag_agent_id_message_encode(s1, seq));
		if (ag_agent_id_message_decode(e, s2, &seq2, &err) || strcmp(s1, s2) || seq != seq2)
			abort();
		json_decref(e);
	}
	if (ag_raw_resources_decode(v, &r, &err) == 0) {
		e = must(ag_raw_resources_encode(&r));
		if (ag_raw_resources_decode(e, &r2, &err) || r.milli_cpu != r2.milli_cpu ||
		    r.mem_bytes != r2.mem_bytes)
			abort();
		json_decref(e);
	}
	if (ag_resource_message_decode(v, &r, s1, &seq, &err) == 0) {
		e = must(ag_resource_message_encode(&r, s1, seq));
		if (ag_resource_message_decode(e, &r2, s2, &seq2, &err) ||
		    r.milli_cpu != r2.milli_cpu || r.mem_bytes != r2.mem_bytes || strcmp(s1, s2) ||
		    seq != seq2)
			abort();
		json_decref(e);
	}
	if (ag_more_resources_decode(v, &m, &err) == 0) {
		e = must(ag_more_resources_encode(&m));
		if (ag_more_resources_decode(e, &m2, &err) || m.cpu != m2.cpu ||
		    m.memory != m2.memory || strcmp(m.expected_id, m2.expected_id))
			abort();
		json_decref(e);
	}
	if (ag_expected_id_decode(v, s1, &err) == 0) {
		e = must(ag_expected_id_encode(s1));
		if (ag_expected_id_decode(e, s2, &err) || strcmp(s1, s2))
			abort();
		json_decref(e);
	}
	if (ag_agent_id_decode(v, s1, &err) == 0) {
		e = must(ag_agent_id_encode(s1));
		if (ag_agent_id_decode(e, s2, &err) || strcmp(s1, s2))
			abort();
		json_decref(e);
	}
	if (ag_unregister_decode(v, &b, &err) == 0) {
		e = must(ag_unregister_encode(b));
		if (ag_unregister_decode(e, &b2, &err) || b != b2)
			abort();
		json_decref(e);
	}
	if (ag_downscale_result_decode(v, &dr, &err) == 0) {
		e = must(ag_downscale_result_encode(&dr));
		if (ag_downscale_result_decode(e, &dr2, &err) || dr.ok != dr2.ok ||
		    strcmp(dr.status, dr2.status))
			abort();
		json_decref(e);
	}
	if (ag_neonvm_runner_vcpu_change_decode(v, &cpu, &err) == 0) {
		e = must(ag_neonvm_runner_vcpu_change_encode(cpu));
		if (ag_neonvm_runner_vcpu_change_decode(e, &cpu2, &err) || cpu != cpu2)
			abort();
		json_decref(e);
	}
	ag_inf_empty_decode(v, &err);
	json_decref(v);
	return 0;
}
