/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as a request body to the arbiter's protocol core, one arbiter
 * across inputs (so state builds up). Every answer must be a protocol
 * status with a body; a 200 must decode as a PluginResponse whose permit
 * is what the arbiter now holds for that pod, and carries "migrate" only
 * for a pod a moving lease marked (and then whenever its agent takes it,
 * from 2.0). Every 16th pod answered is marked moving through the lease
 * interface, as the cluster layer does before it moves a VM. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/arbiter/arbiter.h"
#include "shared/lease.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t key[] = "fuzzing key of thirty-two bytes!";
static struct ag_arbiter *arb;
static uint64_t now;
static unsigned answered;

/* Marks the pod moving with a signed lease, as vmact-groupd does. Names
 * the lease interface refuses (longer, other characters) stay unmarked. */
static void mark_moving(const char *ns, const char *name)
{
	struct vmact_lease_request lr = { .ttl_s = 60, .existing = true, .moving = true };
	struct net_http_server_reply reply = { 0 };
	char sig[VMACT_LEASE_SIG_HEX + 1];
	char *body;

	if (!vmact_lease_name_valid(ns) || !vmact_lease_name_valid(name))
		return;
	snprintf(lr.ns, sizeof(lr.ns), "%s", ns);
	snprintf(lr.name, sizeof(lr.name), "%s", name);
	body = vmact_lease_request_encode(&lr);
	if (!body)
		abort();
	vmact_lease_sign(key, sizeof(key) - 1, "POST", "/v1/leases", 1000, body, strlen(body), sig);
	ag_arbiter_lease_handle(arb, "POST", "/v1/leases", "1000", sig, body, strlen(body), now,
				1000, &reply);
	if (reply.status != 200)
		abort();
	free(reply.body);
	free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_http_server_reply reply = { 0 };
	struct ag_agent_request req;
	struct ag_plugin_response resp;
	struct vmact_resources held;
	struct vmact_lease_pod e;
	json_t *in, *out;

	if (!arb) {
		struct ag_arbiter_config cfg = {
			.capacity = { 16000, 64ULL << 30 },
			.slot_bytes = 1ULL << 30,
			.pod_ttl_usec = 1000,
			.lease_key = key,
			.lease_key_len = sizeof(key) - 1,
		};

		if (ag_arbiter_new(&cfg, &arb, NULL) < 0)
			abort();
	}
	now += 1;
	if (now % 4096 == 0)
		ag_arbiter_expire(arb, now + 61000000); /* keep the pod table bounded */
	ag_arbiter_handle(arb, "POST", (const char *)data, size, now, &reply);
	if ((reply.status != 200 && reply.status != 400 && reply.status != 500) || !reply.body ||
	    reply.body_len == 0)
		abort();
	if (reply.status == 200) {
		in = json_loadb((const char *)data, size, 0, NULL);
		out = json_loadb(reply.body, reply.body_len, 0, NULL);
		if (!in || !out || ag_agent_request_decode(in, 1ULL << 30, &req, NULL) < 0 ||
		    ag_plugin_response_decode(req.version, out, 1ULL << 30, &resp, NULL) < 0 ||
		    ag_arbiter_pod(arb, req.pod_namespace, req.pod_name, &held, NULL) < 0 ||
		    ag_arbiter_pod_entry(arb, req.pod_namespace, req.pod_name, now, &e) < 0 ||
		    resp.migrate != (e.moving && ag_plugin_agent_takes_migrate(req.version)) ||
		    held.milli_cpu != resp.permit.milli_cpu ||
		    held.mem_bytes != resp.permit.mem_bytes)
			abort();
		if (++answered % 16 == 0)
			mark_moving(req.pod_namespace, req.pod_name);
		json_decref(in);
		json_decref(out);
	}
	free(reply.body);
	return 0;
}
