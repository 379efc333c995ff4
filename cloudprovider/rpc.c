/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/rpc.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/time.h"
#include "cloudprovider/externalgrpc.pb-c.h"
#include "cloudprovider/group.h"
#include "cloudprovider/groupd.h"
#include "cloudprovider/template.h"
#include "shared/group-api.h"

/* protobuf-c's names for the contract's package */
#define EG(x)   Clusterautoscaler__Cloudprovider__V1__Externalgrpc__##x
#define EG_D(x) clusterautoscaler__cloudprovider__v1__externalgrpc__##x##__descriptor
#define STATE(x) \
	CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__INSTANCE_STATUS__INSTANCE_STATE__##x

/* cluster-autoscaler's InstanceErrorClass values */
#define ERROR_CLASS_OUT_OF_RESOURCES 1
#define ERROR_CLASS_OTHER            99

/* Nodes of vmact's groups carry none: the label names no node, so the
 * autoscaler sees no GPUs (doc/cloudprovider.md, "The RPCs"). */
#define GPU_LABEL "vmact.io/gpu"

/* Ids and provider ids are short; longer ones are not vmact's. */
#define ID_MAX 253

DEFINE_PTR_CLEANUP(cp_rpc_jsonp, json_t, json_decref)
DEFINE_PTR_CLEANUP(cp_rpc_groupsp, struct cp_groups, cp_groups_unref)

static int time_left(const struct cp_rpc_ctx *ctx, uint64_t *usec, struct vmact_err *err)
{
	uint64_t now = vmact_now_usec();

	/* below a millisecond nothing useful can be asked of groupd */
	if (now + 1000 >= ctx->deadline_usec)
		return vmact_err_set(err, ETIMEDOUT, "the call's deadline has passed");
	*usec = ctx->deadline_usec - now;
	return 0;
}

static int ask(struct cp_rpc_ctx *ctx, const char *method, const char *path, const json_t *body,
	       json_t **out, struct vmact_err *err)
{
	uint64_t left = 0;
	int r = time_left(ctx, &left, err);

	return r < 0 ? r : cp_groupd_call(ctx->groupd, method, path, body, left, out, err);
}

static int snapshot(struct cp_rpc_ctx *ctx, struct cp_groups **out, struct vmact_err *err)
{
	uint64_t left = 0;
	int r = time_left(ctx, &left, err);

	return r < 0 ? r : cp_cache_groups(ctx->cache, left, out, err);
}

static int check_id(const char *id, const char *what, struct vmact_err *err)
{
	if (!id || !id[0])
		return vmact_err_set(err, EINVAL, "%s: empty", what);
	if (strlen(id) > ID_MAX)
		return vmact_err_set(err, EINVAL, "%s: longer than %d bytes", what, ID_MAX);
	return 0;
}

/* The group's path (shared/group-api.h), the id escaped; arena memory. */
static int group_path(struct cp_rpc_ctx *ctx, const char *id, enum vmact_gapi_group_res what,
		      char **out, struct vmact_err *err)
{
	_cleanup_free_ char *p = NULL;
	int r = check_id(id, "id", err);

	if (r < 0)
		return r;
	p = vmact_gapi_group_path(id, what);
	*out = p ? cp_arena_strdup(ctx->arena, p) : NULL;
	return *out ? 0 : vmact_err_set(err, ENOMEM, "out of memory");
}

static void *answer(struct cp_rpc_ctx *ctx, const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = cp_arena_alloc(ctx->arena, d->sizeof_message);

	if (m)
		protobuf_c_message_init(d, m);
	return m;
}

#define ANSWER(ctx, type, snake, var)                \
	EG(type) *var = answer((ctx), &EG_D(snake)); \
	if (!var)                                    \
	return vmact_err_set(err, ENOMEM, "out of memory")

/* g NULL: the empty group (not ours). The answer outlives the snapshot
 * that holds g: its strings go into the arena. */
static EG(NodeGroup) * node_group(struct cp_rpc_ctx *ctx, const struct vmact_gapi_group *g)
{
	EG(NodeGroup) *ng = answer(ctx, &EG_D(node_group));

	if (!ng)
		return NULL;
	if (g) {
		ng->id = cp_arena_strdup(ctx->arena, g->id);
		ng->minsize = g->min;
		ng->maxsize = g->max;
		ng->debug = cp_group_debug(g, ctx->arena);
		if (!ng->id || !ng->debug)
			return NULL;
	}
	return ng;
}

static int node_groups(struct cp_rpc_ctx *ctx, const ProtobufCMessage *req, ProtobufCMessage **resp,
		       struct vmact_err *err)
{
	_cleanup_(cp_rpc_groupsp) struct cp_groups *s = NULL;
	int r = snapshot(ctx, &s, err);

	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupsResponse, node_groups_response, a);
	a->nodegroups = cp_arena_array(ctx->arena, s->n, sizeof(*a->nodegroups));
	if (s->n && !a->nodegroups)
		return vmact_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < s->n; i++) {
		a->nodegroups[i] = node_group(ctx, &s->g[i]);
		if (!a->nodegroups[i])
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	a->n_nodegroups = s->n;
	*resp = &a->base;
	return 0;
}

/* Which group a provider id belongs to, by groupd: "" when none. */
static int lookup_node(struct cp_rpc_ctx *ctx, const char *provider_id, char **id,
		       struct vmact_err *err)
{
	_cleanup_(cp_rpc_jsonp) json_t *doc = NULL;
	_cleanup_free_ char *p = vmact_gapi_node_group_path(provider_id);
	const char *v;
	char *path;
	int r;

	path = p ? cp_arena_strdup(ctx->arena, p) : NULL;
	if (!path)
		return vmact_err_set(err, ENOMEM, "out of memory");
	r = ask(ctx, "GET", path, NULL, &doc, err);
	if (r < 0)
		return r;
	r = vmact_gapi_node_group_decode(doc, &v, err);
	if (r < 0)
		return vmact_err_prefix(err, "vmact-groupd's GET " VMACT_GAPI_PATH_NODE_GROUP);
	*id = cp_arena_strdup(ctx->arena, v);
	return *id ? 0 : vmact_err_set(err, ENOMEM, "out of memory");
}

static int node_group_for_node(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m,
			       ProtobufCMessage **resp, struct vmact_err *err)
{
	const EG(NodeGroupForNodeRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_groupsp) struct cp_groups *s = NULL;
	_cleanup_free_ char *cached = NULL;
	const struct vmact_gapi_group *g = NULL;
	const char *pid;
	char *key, *id;
	int r;

	if (!req->node)
		return vmact_err_set(err, EINVAL, "node: missing");
	pid = req->node->providerid;
	ANSWER(ctx, NodeGroupForNodeResponse, node_group_for_node_response, a);
	*resp = &a->base;
	/* Without a provider id nothing says which VM it is: not ours. */
	if (!pid || !pid[0]) {
		a->nodegroup = node_group(ctx, NULL);
		return a->nodegroup ? 0 : vmact_err_set(err, ENOMEM, "out of memory");
	}
	r = snapshot(ctx, &s, err);
	if (r < 0)
		return r;
	/* the autoscaler's own key, so both caches agree on what a node is */
	key = cp_arena_printf(ctx->arena, "%s%s", req->node->name ? req->node->name : "", pid);
	if (!key)
		return vmact_err_set(err, ENOMEM, "out of memory");
	cached = cp_cache_node_get(ctx->cache, s, key);
	if (cached) {
		g = cp_groups_find(s, cached);
	} else if (strlen(pid) <= ID_MAX) {
		r = lookup_node(ctx, pid, &id, err);
		if (r < 0)
			return r;
		/* A group that appeared since the last Refresh is not in the
		 * autoscaler's list yet: until then its nodes are not ours. */
		g = id[0] ? cp_groups_find(s, id) : NULL;
		if (g)
			cp_cache_node_put(ctx->cache, s, key, g->id);
	}
	a->nodegroup = node_group(ctx, g);
	return a->nodegroup ? 0 : vmact_err_set(err, ENOMEM, "out of memory");
}

static int pricing(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		   struct vmact_err *err)
{
	return vmact_err_set(err, ENOSYS, "vmact has no prices");
}

static int gpu_label(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		     struct vmact_err *err)
{
	ANSWER(ctx, GPULabelResponse, gpulabel_response, a);
	a->label = GPU_LABEL;
	*resp = &a->base;
	return 0;
}

static int gpu_types(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		     struct vmact_err *err)
{
	ANSWER(ctx, GetAvailableGPUTypesResponse, get_available_gputypes_response, a);
	*resp = &a->base;
	return 0;
}

/* The autoscaler is going away; nothing of ours outlives a call. */
static int cleanup(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		   struct vmact_err *err)
{
	ANSWER(ctx, CleanupResponse, cleanup_response, a);
	*resp = &a->base;
	return 0;
}

static int refresh(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		   struct vmact_err *err)
{
	uint64_t left = 0;
	int r = time_left(ctx, &left, err);

	if (r >= 0)
		r = cp_cache_refresh(ctx->cache, left, err);
	if (r < 0)
		return r;
	ANSWER(ctx, RefreshResponse, refresh_response, a);
	*resp = &a->base;
	return 0;
}

static int get_target(const json_t *doc, const char *what, int32_t *out, struct vmact_err *err)
{
	int r = vmact_gapi_target_decode(doc, out, err);

	/* -EPROTO: an answer that is not the API's, an INTERNAL */
	return r < 0 ? vmact_err_prefix(err, "vmact-groupd's %s", what) : 0;
}

static int target_size(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		       struct vmact_err *err)
{
	const EG(NodeGroupTargetSizeRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_jsonp) json_t *doc = NULL;
	char *path;
	int32_t t;
	int r = group_path(ctx, req->id, VMACT_GAPI_GROUP, &path, err);

	if (r >= 0)
		r = ask(ctx, "GET", path, NULL, &doc, err);
	if (r >= 0)
		r = get_target(doc, "GET " VMACT_GAPI_PATH_GROUPS "/{id}", &t, err);
	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupTargetSizeResponse, node_group_target_size_response, a);
	a->targetsize = t;
	*resp = &a->base;
	return 0;
}

/* POST body to the group's `action`; groupd answers once the target is
 * what the request makes it (doc/cluster-api.md). */
static int change(struct cp_rpc_ctx *ctx, const char *id, enum vmact_gapi_group_res action,
		  json_t *body, struct vmact_err *err)
{
	_cleanup_(cp_rpc_jsonp) json_t *b = body, *doc = NULL;
	char *path;
	int32_t t;
	int r;

	if (!b)
		return vmact_err_set(err, ENOMEM, "out of memory");
	r = group_path(ctx, id, action, &path, err);
	if (r >= 0)
		r = ask(ctx, "POST", path, b, &doc, err);
	return r < 0 ? r : get_target(doc, path, &t, err);
}

static int increase_size(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
			 struct vmact_err *err)
{
	const EG(NodeGroupIncreaseSizeRequest) *req = (const void *)m;
	int r;

	if (req->delta <= 0)
		return vmact_err_set(err, EINVAL, "delta: %d, must be positive", req->delta);
	r = change(ctx, req->id, VMACT_GAPI_INCREASE, vmact_gapi_delta_encode(req->delta), err);
	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupIncreaseSizeResponse, node_group_increase_size_response, a);
	*resp = &a->base;
	return 0;
}

static int decrease_target(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m,
			   ProtobufCMessage **resp, struct vmact_err *err)
{
	const EG(NodeGroupDecreaseTargetSizeRequest) *req = (const void *)m;
	int r;

	if (req->delta >= 0)
		return vmact_err_set(err, EINVAL, "delta: %d, must be negative", req->delta);
	r = change(ctx, req->id, VMACT_GAPI_DECREASE_TARGET, vmact_gapi_delta_encode(req->delta),
		   err);
	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupDecreaseTargetSizeResponse, node_group_decrease_target_size_response,
	       a);
	*resp = &a->base;
	return 0;
}

/* The autoscaler names nodes by their spec.providerID; for an instance
 * that never registered it makes a node whose providerID is the
 * instance's id, which is the same thing. */
static int delete_nodes(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
			struct vmact_err *err)
{
	const EG(NodeGroupDeleteNodesRequest) *req = (const void *)m;
	_cleanup_free_ const char **ids = NULL;
	size_t n = 0;
	int r = check_id(req->id, "id", err);

	if (r < 0)
		return r;
	if (!req->n_nodes)
		return vmact_err_set(err, EINVAL, "nodes: none given");
	ids = calloc(req->n_nodes, sizeof(*ids));
	if (!ids)
		return vmact_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < req->n_nodes; i++) {
		const EG(ExternalGrpcNode) *nd = req->nodes[i];
		const char *pid = nd ? nd->providerid : NULL;
		bool seen = false;

		r = check_id(pid, "providerID", err);
		if (r < 0)
			return vmact_err_prefix(err, "nodes[%zu] (%.64s)", i,
						nd && nd->name ? nd->name : "");
		for (size_t j = 0; j < n; j++)
			seen |= !strcmp(ids[j], pid);
		if (!seen)
			ids[n++] = pid;
	}
	r = change(ctx, req->id, VMACT_GAPI_DELETE_NODES, vmact_gapi_delete_nodes_encode(ids, n),
		   err);
	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupDeleteNodesResponse, node_group_delete_nodes_response, a);
	*resp = &a->base;
	return 0;
}

static int instance_state(enum vmact_gapi_node_state s)
{
	switch (s) {
	case VMACT_GAPI_NODE_RUNNING:
		return STATE(instanceRunning);
	case VMACT_GAPI_NODE_DELETING:
		return STATE(instanceDeleting);
	default:
		return STATE(instanceCreating);
	}
}

static int instance_error(struct cp_rpc_ctx *ctx, const struct vmact_gapi_vm_error *e,
			  EG(InstanceStatus) * st, struct vmact_err *err)
{
	EG(InstanceErrorInfo) *info = answer(ctx, &EG_D(instance_error_info));

	if (!info)
		return vmact_err_set(err, ENOMEM, "out of memory");
	info->errorcode = cp_arena_strdup(ctx->arena, e->code);
	info->errormessage = cp_arena_strdup(ctx->arena, e->message);
	info->instanceerrorclass = !strcmp(e->cls, VMACT_GAPI_CLASS_OUT_OF_RESOURCES)
					   ? ERROR_CLASS_OUT_OF_RESOURCES
					   : ERROR_CLASS_OTHER;
	if (!info->errorcode || !info->errormessage)
		return vmact_err_set(err, ENOMEM, "out of memory");
	st->errorinfo = info;
	return 0;
}

static int instance(struct cp_rpc_ctx *ctx, const struct vmact_gapi_node *n, EG(Instance) * *out,
		    struct vmact_err *err)
{
	EG(InstanceStatus) *st = answer(ctx, &EG_D(instance_status));
	EG(Instance) *in = answer(ctx, &EG_D(instance));

	if (!in || !st || !(in->id = cp_arena_strdup(ctx->arena, n->provider_id)))
		return vmact_err_set(err, ENOMEM, "out of memory");
	st->instancestate = instance_state(n->state);
	in->status = st;
	*out = in;
	return n->has_error ? instance_error(ctx, &n->error, st, err) : 0;
}

static int group_nodes(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		       struct vmact_err *err)
{
	const EG(NodeGroupNodesRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_jsonp) json_t *doc = NULL;
	struct vmact_gapi_nodes nodes = { 0 };
	char *path;
	int r = group_path(ctx, req->id, VMACT_GAPI_NODES, &path, err);

	if (r >= 0)
		r = ask(ctx, "GET", path, NULL, &doc, err);
	if (r < 0)
		return r;
	r = vmact_gapi_nodes_decode(doc, &nodes, err);
	if (r < 0)
		return vmact_err_prefix(err, "vmact-groupd's GET %s", path);
	EG(NodeGroupNodesResponse) *a = answer(ctx, &EG_D(node_group_nodes_response));
	if (a)
		a->instances = cp_arena_array(ctx->arena, nodes.n, sizeof(*a->instances));
	if (!a || (nodes.n && !a->instances)) {
		vmact_gapi_nodes_clear(&nodes);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nodes.n; i++) {
		r = instance(ctx, &nodes.v[i], &a->instances[i], err);
		if (r < 0)
			break;
		a->n_instances++;
	}
	vmact_gapi_nodes_clear(&nodes);
	if (r < 0)
		return r;
	*resp = &a->base;
	return 0;
}

/* The group as of the last Refresh, as the autoscaler knows it. */
static int find_group(struct cp_rpc_ctx *ctx, const char *id, struct cp_groups **s,
		      const struct vmact_gapi_group **g, struct vmact_err *err)
{
	int r = check_id(id, "id", err);

	if (r >= 0)
		r = snapshot(ctx, s, err);
	if (r < 0)
		return r;
	*g = cp_groups_find(*s, id);
	return *g ? 0 : vmact_err_set(err, ENOENT, "no node group \"%.64s\"", id);
}

static int template_node_info(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m,
			      ProtobufCMessage **resp, struct vmact_err *err)
{
	const EG(NodeGroupTemplateNodeInfoRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_groupsp) struct cp_groups *s = NULL;
	const struct vmact_gapi_group *g;
	int r = find_group(ctx, req->id, &s, &g, err);

	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupTemplateNodeInfoResponse, node_group_template_node_info_response, a);
	r = cp_template_node(g, ctx->arena, &a->nodebytes, err);
	if (r < 0)
		return r;
	/* the same node for autoscalers before 1.35, as they read it */
	a->nodeinfo = a->nodebytes;
	*resp = &a->base;
	return 0;
}

static Google__Protobuf__Duration *duration(struct cp_rpc_ctx *ctx, int64_t nanos)
{
	Google__Protobuf__Duration *d = answer(ctx, &google__protobuf__duration__descriptor);

	if (d) {
		d->seconds = nanos / 1000000000;
		d->nanos = (int32_t)(nanos % 1000000000);
	}
	return d;
}

static EG(KubernetesDuration) * k8s_duration(struct cp_rpc_ctx *ctx, int64_t nanos)
{
	EG(KubernetesDuration) *d = answer(ctx, &EG_D(kubernetes_duration));

	if (d)
		d->duration = nanos;
	return d;
}

/* A group's setting in seconds as nanoseconds; its range ([0, 1e9] s,
 * vmact_gapi_options_decode) fits an int64. */
static int64_t seconds_nanos(double s)
{
	return (int64_t)llround(s * 1e9);
}

static int64_t pb_nanos(const Google__Protobuf__Duration *d)
{
	const int64_t max_s = INT64_MAX / 1000000000 - 1;

	/* the autoscaler's own values are minutes; anything past int64
	 * nanoseconds is not a duration Go could hold either */
	if (d->seconds > max_s)
		return INT64_MAX;
	if (d->seconds < -max_s)
		return INT64_MIN;
	return d->seconds * 1000000000 + d->nanos;
}

/* A duration of the answer: the group's when it sets one, else the
 * autoscaler's default as it sent it, in the new field or, from an
 * autoscaler before 1.35, the old one. */
static int64_t pick_nanos(bool group_set, double group_s, const Google__Protobuf__Duration *dflt,
			  const EG(KubernetesDuration) * old)
{
	if (group_set)
		return seconds_nanos(group_s);
	if (dflt)
		return pb_nanos(dflt);
	return old ? old->duration : 0;
}

/* The autoscaler takes the answer whole (a field left out is zero, not
 * its default), so the answer is its defaults with the group's settings
 * over them, every field it sent carried back; a group that sets nothing
 * answers with no message, which the autoscaler reads as "use the
 * defaults". Each of the three old durations is there beside its new
 * twin: an autoscaler before 1.35 reads only the old ones and
 * dereferences them unchecked (doc/cloudprovider.md, "Autoscaler
 * versions"). */
static int get_options(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		       struct vmact_err *err)
{
	const EG(NodeGroupAutoscalingOptionsRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_groupsp) struct cp_groups *s = NULL;
	const EG(NodeGroupAutoscalingOptions) *d = req->defaults;
	EG(NodeGroupAutoscalingOptions) * o;
	const struct vmact_gapi_options *go;
	const struct vmact_gapi_group *g;
	int64_t unneeded, unready, provision;
	int r = find_group(ctx, req->id, &s, &g, err);

	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupAutoscalingOptionsResponse, node_group_autoscaling_options_response,
	       a);
	*resp = &a->base;
	go = &g->opts;
	if (!go->set)
		return 0;
	o = answer(ctx, &EG_D(node_group_autoscaling_options));
	if (!o)
		return vmact_err_set(err, ENOMEM, "out of memory");
	o->scaledownutilizationthreshold = go->set & VMACT_GAPI_OPT_UTIL ? go->util
					   : d ? d->scaledownutilizationthreshold
					       : 0;
	o->scaledowngpuutilizationthreshold = go->set & VMACT_GAPI_OPT_GPU_UTIL ? go->gpu_util
					      : d ? d->scaledowngpuutilizationthreshold
						  : 0;
	o->zeroormaxnodescaling = go->set & VMACT_GAPI_OPT_ZERO_OR_MAX ? go->zero_or_max
				  : d                                  ? d->zeroormaxnodescaling
								       : 0;
	o->ignoredaemonsetsutilization = go->set & VMACT_GAPI_OPT_IGNORE_DS ? go->ignore_ds
					 : d ? d->ignoredaemonsetsutilization
					     : 0;
	o->allownonatomicscaleuptomax = go->set & VMACT_GAPI_OPT_NON_ATOMIC ? go->non_atomic
					: d ? d->allownonatomicscaleuptomax
					    : 0;
	unneeded = pick_nanos(go->set & VMACT_GAPI_OPT_UNNEEDED, go->unneeded_s,
			      d ? d->scaledownunneededduration : NULL,
			      d ? d->scaledownunneededtime : NULL);
	unready = pick_nanos(go->set & VMACT_GAPI_OPT_UNREADY, go->unready_s,
			     d ? d->scaledownunreadyduration : NULL,
			     d ? d->scaledownunreadytime : NULL);
	provision = pick_nanos(go->set & VMACT_GAPI_OPT_PROVISION, go->provision_s,
			       d ? d->maxnodeprovisionduration : NULL,
			       d ? d->maxnodeprovisiontime : NULL);
	o->scaledownunneededduration = duration(ctx, unneeded);
	o->scaledownunreadyduration = duration(ctx, unready);
	o->maxnodeprovisionduration = duration(ctx, provision);
	o->scaledownunneededtime = k8s_duration(ctx, unneeded);
	o->scaledownunreadytime = k8s_duration(ctx, unready);
	o->maxnodeprovisiontime = k8s_duration(ctx, provision);
	if (!o->scaledownunneededduration || !o->scaledownunreadyduration ||
	    !o->maxnodeprovisionduration || !o->scaledownunneededtime || !o->scaledownunreadytime ||
	    !o->maxnodeprovisiontime)
		return vmact_err_set(err, ENOMEM, "out of memory");
	/* Only when said: a newer autoscaler reads an absent one as its own
	 * default, a zero one as "no time at all". */
	if (go->set & VMACT_GAPI_OPT_STARTUP)
		o->maxnodestartupduration = duration(ctx, seconds_nanos(go->startup_s));
	else if (d && d->maxnodestartupduration)
		o->maxnodestartupduration = duration(ctx, pb_nanos(d->maxnodestartupduration));
	if (((go->set & VMACT_GAPI_OPT_STARTUP) || (d && d->maxnodestartupduration)) &&
	    !o->maxnodestartupduration)
		return vmact_err_set(err, ENOMEM, "out of memory");
	a->nodegroupautoscalingoptions = o;
	return 0;
}

/* By name, so that the table does not depend on the order protoc-c
 * writes the service's methods in. */
static const struct {
	const char *name;
	cp_rpc_fn *fn;
	bool changes;
} handlers[] = {
	{ "NodeGroups", node_groups, false },
	{ "NodeGroupForNode", node_group_for_node, false },
	{ "PricingNodePrice", pricing, false },
	{ "PricingPodPrice", pricing, false },
	{ "GPULabel", gpu_label, false },
	{ "GetAvailableGPUTypes", gpu_types, false },
	{ "Cleanup", cleanup, false },
	{ "Refresh", refresh, false },
	{ "NodeGroupTargetSize", target_size, false },
	{ "NodeGroupIncreaseSize", increase_size, true },
	{ "NodeGroupDeleteNodes", delete_nodes, true },
	{ "NodeGroupDecreaseTargetSize", decrease_target, true },
	{ "NodeGroupNodes", group_nodes, false },
	{ "NodeGroupTemplateNodeInfo", template_node_info, false },
	{ "NodeGroupGetOptions", get_options, false },
};

const char *cp_rpc_service_name(void)
{
	return EG_D(cloud_provider).name;
}

static struct cp_rpc_method methods[ARRAY_SIZE(handlers)];
static pthread_once_t methods_once = PTHREAD_ONCE_INIT;

/* A handler whose name the service lacks stays without a descriptor and
 * is never found: the table and the .proto cannot disagree silently. */
static void methods_init(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(handlers); i++) {
		methods[i].desc =
			protobuf_c_service_descriptor_get_method_by_name(&EG_D(cloud_provider),
									 handlers[i].name);
		methods[i].fn = handlers[i].fn;
		methods[i].changes = handlers[i].changes;
	}
}

const struct cp_rpc_method *cp_rpc_find(const char *path, size_t len)
{
	const char *svc = EG_D(cloud_provider).name;
	size_t slen = strlen(svc);

	pthread_once(&methods_once, methods_init);
	if (len < slen + 3 || path[0] != '/' || memcmp(path + 1, svc, slen) ||
	    path[slen + 1] != '/')
		return NULL;
	path += slen + 2;
	len -= slen + 2;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (methods[i].desc && strlen(methods[i].desc->name) == len &&
		    !memcmp(methods[i].desc->name, path, len))
			return &methods[i];
	return NULL;
}
