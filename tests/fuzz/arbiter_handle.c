/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as a request body to the arbiter's protocol core, one arbiter
 * across inputs (so state builds up). Every answer must be a protocol
 * status with a body; a 200 must decode as a PluginResponse whose permit
 * is what the arbiter now holds for that pod, and never carries "migrate"
 * (the arbiter moves no VM). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/arbiter/arbiter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ag_arbiter *arb;
static uint64_t now;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_http_server_reply reply = { 0 };
	struct ag_agent_request req;
	struct ag_plugin_response resp;
	struct vmact_resources held;
	json_t *in, *out;

	if (!arb) {
		struct ag_arbiter_config cfg = {
			.capacity = { 16000, 64ULL << 30 },
			.slot_bytes = 1ULL << 30,
			.pod_ttl_usec = 1000,
		};

		if (ag_arbiter_new(&cfg, &arb, NULL) < 0)
			abort();
	}
	now += 1;
	if (now % 4096 == 0)
		ag_arbiter_expire(arb, now + 2000); /* keep the pod table bounded */
	ag_arbiter_handle(arb, "POST", (const char *)data, size, now, &reply);
	if ((reply.status != 200 && reply.status != 400 && reply.status != 500) || !reply.body ||
	    reply.body_len == 0)
		abort();
	if (reply.status == 200) {
		in = json_loadb((const char *)data, size, 0, NULL);
		out = json_loadb(reply.body, reply.body_len, 0, NULL);
		if (!in || !out || ag_agent_request_decode(in, 1ULL << 30, &req, NULL) < 0 ||
		    ag_plugin_response_decode(req.version, out, 1ULL << 30, &resp, NULL) < 0 ||
		    resp.migrate ||
		    ag_arbiter_pod(arb, req.pod_namespace, req.pod_name, &held, NULL) < 0 ||
		    held.milli_cpu != resp.permit.milli_cpu ||
		    held.mem_bytes != resp.permit.mem_bytes)
			abort();
		json_decref(in);
		json_decref(out);
	}
	free(reply.body);
	return 0;
}
