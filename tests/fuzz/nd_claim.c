/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as a claim line on a node's port (node/claim.c, vmact-node(8)):
 * the host is not trusted. A refusal must say why and hold nothing; an
 * accepted claim has its three names, at most its bounds of labels and
 * taints, and reads back as itself from the JSON vmact-node keeps. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node/claim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct nd_claim c, again;
	char *json, *line = NULL;

	if (nd_claim_parse((const char *)data, size, &c, &err) != 0) {
		if (err.code == 0 || !err.msg[0] || c.doc || c.nlabels || c.ntaints)
			abort();
		return 0;
	}
	if (!c.group || !c.name || !c.provider_id || !*c.group || !*c.name ||
	    c.nlabels > ND_LABELS_MAX || c.ntaints > ND_TAINTS_MAX)
		abort();
	json = nd_claim_json(&c);
	if (!json || asprintf(&line, "claim %s\n", json) < 0)
		abort();
	if (nd_claim_parse(line, strlen(line), &again, &err) != 0 || !nd_claim_same(&c, &again))
		abort();
	nd_claim_clear(&again);
	nd_claim_clear(&c);
	free(line);
	free(json);
	return 0;
}
