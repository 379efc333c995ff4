/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as a signed lease request to the arbiter (agent-glue/codec/
 * lease.h, the arbiter's /v1/leases), one arbiter across inputs so that
 * leases build up: the request is signed with the arbiter's key, so every
 * input reaches the decoder and the ledger. Every answer must be a status
 * of the interface with a JSON body; a grant only for what the decoder
 * accepts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent-glue/arbiter/arbiter.h"
#include "shared/lease.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t key[] = "fuzzing key of thirty-two bytes!";
static struct ag_arbiter *arb;
static uint64_t now;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_http_server_reply reply = { 0 };
	struct vmact_lease_request req;
	char sig[VMACT_LEASE_SIG_HEX + 1];
	json_t *j;

	if (!arb) {
		struct ag_arbiter_config cfg = {
			.capacity = { 16000, 64ULL << 30 },
			.pod_ttl_usec = 1000,
			.lease_key = key,
			.lease_key_len = sizeof(key) - 1,
		};

		if (ag_arbiter_new(&cfg, &arb, NULL) < 0)
			abort();
	}
	now += 1000000;
	vmact_lease_sign(key, sizeof(key) - 1, "POST", "/v1/leases", 1000, (const char *)data, size,
			 sig);
	ag_arbiter_lease_handle(arb, "POST", "/v1/leases", "1000", sig, (const char *)data, size,
				now, 1000, &reply);
	if ((reply.status != 200 && reply.status != 400 && reply.status != 409) || !reply.body)
		abort();
	j = json_loadb(reply.body, reply.body_len, 0, NULL);
	if (!j)
		abort();
	/* A granted request was one the decoder accepts. */
	if (reply.status == 200 &&
	    vmact_lease_request_decode((const char *)data, size, &req, NULL) < 0)
		abort();
	json_decref(j);
	free(reply.body);
	return 0;
}
