/* SPDX-License-Identifier: Apache-2.0 */
/* Any answer of vmact-groupd's GET /v1/groups through vmact-cloudprovider's
 * decoder (cloudprovider/group.c), and every group it accepts through the
 * template node's encoder (cloudprovider/template.c): a refusal must say
 * why; an accepted group's node must decode again (protobuf-c) with its
 * name, labels and the three resources. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cloudprovider/arena.h"
#include "cloudprovider/group.h"
#include "cloudprovider/k8s-node.pb-c.h"
#include "cloudprovider/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_node(const struct vmact_gapi_group *g)
{
	struct vmact_err err = { 0 };
	struct cp_arena a;
	ProtobufCBinaryData out;
	Vmact__K8s__Node *n;

	cp_arena_init(&a, 16u << 20);
	if (cp_template_node(g, &a, &out, &err) < 0)
		abort();
	n = vmact__k8s__node__unpack(NULL, out.len, out.data);
	if (!n || !n->metadata || strncmp(n->metadata->name, g->id, strlen(g->id)) ||
	    n->metadata->n_labels < 3 || !n->status || n->status->n_capacity != 3 ||
	    n->status->n_allocatable != 3 || (g->ntaints && n->spec->n_taints != g->ntaints))
		abort();
	vmact__k8s__node__free_unpacked(n, NULL);
	cp_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct cp_groups *s = NULL;
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);

	if (!doc)
		return 0;
	if (cp_groups_from_json(doc, &s, &err) == 0) {
		for (size_t i = 0; i < s->n; i++)
			check_node(&s->g[i]);
		cp_groups_unref(s);
	} else if (err.code == 0 || !err.msg[0] || s) {
		abort();
	}
	json_decref(doc);
	return 0;
}
