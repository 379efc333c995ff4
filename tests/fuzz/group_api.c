/* SPDX-License-Identifier: Apache-2.0 */
/* Any answer of vmact-groupd through every decoder of its API's codec
 * (shared/group-api.c), as vmact-cloudprovider and vmact-groupctl read
 * them: a refusal must say why and leave nothing allocated; an accepted
 * document must encode again and decode to the same count. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/group-api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused_well(int r, const struct vmact_err *err, const void *items)
{
	if (r < 0 && (err->code == 0 || !err->msg[0] || items))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	struct vmact_err err = { 0 };
	const char *s, **ids;
	long long delta;
	int32_t target;
	size_t n;
	int r;

	if (!doc)
		return 0;
	{
		struct vmact_gapi_groups g;

		r = vmact_gapi_groups_decode(doc, &g, &err);
		refused_well(r, &err, g.g);
		if (r == 0) {
			json_t *again = vmact_gapi_groups_encode(g.g, g.n);
			struct vmact_gapi_groups b;

			err = (struct vmact_err){ 0 };
			if (!again || vmact_gapi_groups_decode(again, &b, &err) < 0 || b.n != g.n)
				abort();
			vmact_gapi_groups_clear(&b);
			json_decref(again);
		}
		vmact_gapi_groups_clear(&g);
	}
	{
		struct vmact_gapi_nodes v;

		err = (struct vmact_err){ 0 };
		r = vmact_gapi_nodes_decode(doc, &v, &err);
		refused_well(r, &err, v.v);
		if (r == 0) {
			json_t *again = vmact_gapi_nodes_encode(v.v, v.n);
			struct vmact_gapi_nodes b;

			err = (struct vmact_err){ 0 };
			if (!again || vmact_gapi_nodes_decode(again, &b, &err) < 0 || b.n != v.n)
				abort();
			vmact_gapi_nodes_clear(&b);
			json_decref(again);
		}
		vmact_gapi_nodes_clear(&v);
	}
	{
		struct vmact_gapi_vms v;

		err = (struct vmact_err){ 0 };
		r = vmact_gapi_vms_decode(doc, &v, &err);
		refused_well(r, &err, v.v);
		if (r == 0) {
			json_t *again = vmact_gapi_vms_encode(v.v, v.n,
							      v.has_ready ? &v.ready : NULL);
			struct vmact_gapi_vms b;

			err = (struct vmact_err){ 0 };
			if (!again || vmact_gapi_vms_decode(again, &b, &err) < 0 || b.n != v.n ||
			    b.has_ready != v.has_ready)
				abort();
			vmact_gapi_vms_clear(&b);
			json_decref(again);
		}
		vmact_gapi_vms_clear(&v);
	}
	{
		struct vmact_gapi_hosts v;

		err = (struct vmact_err){ 0 };
		r = vmact_gapi_hosts_decode(doc, &v, &err);
		refused_well(r, &err, v.v);
		vmact_gapi_hosts_clear(&v);
	}
	{
		struct vmact_gapi_waitings v;

		err = (struct vmact_err){ 0 };
		r = vmact_gapi_waitings_decode(doc, &v, &err);
		refused_well(r, &err, v.v);
		vmact_gapi_waitings_clear(&v);
	}
	{
		struct vmact_gapi_error e;
		enum vmact_gapi_verdict v;

		err = (struct vmact_err){ 0 };
		refused_well(vmact_gapi_error_decode(doc, &e, &err), &err, NULL);
		err = (struct vmact_err){ 0 };
		refused_well(vmact_gapi_target_decode(doc, &target, &err), &err, NULL);
		err = (struct vmact_err){ 0 };
		refused_well(vmact_gapi_node_group_decode(doc, &s, &err), &err, NULL);
		err = (struct vmact_err){ 0 };
		refused_well(vmact_gapi_verdict_done_decode(doc, &s, &v, &err), &err, NULL);
		err = (struct vmact_err){ 0 };
		refused_well(vmact_gapi_verdict_decode(doc, VMACT_GAPI_ALLOW, &s, &err), &err,
			     NULL);
		err = (struct vmact_err){ 0 };
		refused_well(vmact_gapi_delta_decode(doc, &delta, &err), &err, NULL);
		err = (struct vmact_err){ 0 };
		r = vmact_gapi_delete_nodes_decode(doc, &ids, &n, &err);
		refused_well(r, &err, r < 0 ? ids : NULL);
		if (r == 0)
			free(ids);
	}
	json_decref(doc);
	return 0;
}
