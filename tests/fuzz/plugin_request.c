/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as an AgentRequest body (the arbiter's decoder). Whatever
 * decodes must encode again (unless the encoder refuses it with an error)
 * and decode to the same request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/codec/plugin.h"

static int res_eq(const struct vmact_resources *a, const struct vmact_resources *b)
{
	return a->milli_cpu == b->milli_cpu && a->mem_bytes == b->mem_bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const struct ag_agent_request *a, const struct ag_agent_request *b)
{
	return a->version == b->version && strcmp(a->pod_namespace, b->pod_namespace) == 0 &&
	       strcmp(a->pod_name, b->pod_name) == 0 &&
	       a->has_compute_unit == b->has_compute_unit &&
	       (!a->has_compute_unit || res_eq(&a->compute_unit, &b->compute_unit)) &&
	       res_eq(&a->resources, &b->resources) && a->has_last_permit == b->has_last_permit &&
	       (!a->has_last_permit || res_eq(&a->last_permit, &b->last_permit)) &&
	       a->has_metrics == b->has_metrics &&
	       (!a->has_metrics ||
		(a->metrics.load_avg_1m == b->metrics.load_avg_1m &&
		 (!ag_plugin_includes_extended_metrics(a->version) ||
		  a->metrics.load_avg_5m == b->metrics.load_avg_5m) &&
		 (!ag_plugin_sends_memory_usage(a->version) ||
		  a->metrics.memory_usage_bytes == b->metrics.memory_usage_bytes)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t slots[] = { 0, 1, 1ULL << 30 };
	json_t *j = json_loadb((const char *)data, size, 0, NULL);
	long long ver;

	if (!j)
		return 0;
	ag_agent_request_peek_version(j, &ver, NULL);
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		struct ag_agent_request r, back;
		struct vmact_err err = { 0 };
		json_t *e;
		char *s;

		if (ag_agent_request_decode(j, slots[i], &r, &err) < 0) {
			if (!err.code || !err.msg[0])
				abort(); /* every rejection names its cause */
			continue;
		}
		e = ag_agent_request_encode(&r, slots[i], &err);
		if (!e)
			continue;
		s = ag_plugin_dumps(e);
		json_decref(e);
		if (!s)
			abort();
		e = json_loads(s, 0, NULL);
		free(s);
		if (!e || ag_agent_request_decode(e, slots[i], &back, &err) < 0 || !same(&r, &back))
			abort();
		json_decref(e);
	}
	json_decref(j);
	return 0;
}
