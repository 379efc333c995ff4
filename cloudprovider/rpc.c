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

/* "/v1/groups/<id><tail>", the id escaped; arena memory. */
static int group_path(struct cp_rpc_ctx *ctx, const char *id, const char *tail, char **out,
		      struct vmact_err *err)
{
	_cleanup_free_ char *esc = NULL;
	int r = check_id(id, "id", err);

	if (r < 0)
		return r;
	esc = cp_groupd_escape(id);
	*out = esc ? cp_arena_printf(ctx->arena, "/v1/groups/%s%s", esc, tail) : NULL;
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

static EG(NodeGroup) * node_group(struct cp_rpc_ctx *ctx, const struct cp_group *g)
{
	EG(NodeGroup) *ng = answer(ctx, &EG_D(node_group));

	if (!ng)
		return NULL;
	if (g) {
		ng->id = g->id;
		ng->minsize = g->min;
		ng->maxsize = g->max;
		ng->debug = g->debug;
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
		/* the answer outlives s: its strings go into the arena */
		struct cp_group copy = s->g[i];

		copy.id = cp_arena_strdup(ctx->arena, s->g[i].id);
		copy.debug = cp_arena_strdup(ctx->arena, s->g[i].debug);
		a->nodegroups[i] = copy.id && copy.debug ? node_group(ctx, &copy) : NULL;
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
	_cleanup_free_ char *esc = cp_groupd_escape(provider_id);
	const json_t *v;
	char *path;
	int r;

	path = esc ? cp_arena_printf(ctx->arena, "/v1/node-group?provider_id=%s", esc) : NULL;
	if (!path)
		return vmact_err_set(err, ENOMEM, "out of memory");
	r = ask(ctx, "GET", path, NULL, &doc, err);
	if (r < 0)
		return r;
	v = json_object_get(doc, "id");
	if (!json_is_string(v))
		return vmact_err_set(err, EIO,
				     "vmact-groupd's GET /v1/node-group: no \"id\" string");
	*id = cp_arena_strdup(ctx->arena, json_string_value(v));
	return *id ? 0 : vmact_err_set(err, ENOMEM, "out of memory");
}

static int node_group_for_node(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m,
			       ProtobufCMessage **resp, struct vmact_err *err)
{
	const EG(NodeGroupForNodeRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_groupsp) struct cp_groups *s = NULL;
	_cleanup_free_ char *cached = NULL;
	const struct cp_group *g = NULL;
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
	if (g) {
		struct cp_group copy = *g;

		copy.id = cp_arena_strdup(ctx->arena, g->id);
		copy.debug = cp_arena_strdup(ctx->arena, g->debug);
		if (!copy.id || !copy.debug)
			return vmact_err_set(err, ENOMEM, "out of memory");
		g = &copy;
		a->nodegroup = node_group(ctx, g);
	} else {
		a->nodegroup = node_group(ctx, NULL);
	}
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
	const json_t *v = json_object_get(doc, "target");

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return vmact_err_set(err, EIO, "vmact-groupd's %s: no \"target\" in [0, 2^31)",
				     what);
	*out = (int32_t)json_integer_value(v);
	return 0;
}

static int target_size(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		       struct vmact_err *err)
{
	const EG(NodeGroupTargetSizeRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_jsonp) json_t *doc = NULL;
	char *path;
	int32_t t;
	int r = group_path(ctx, req->id, "", &path, err);

	if (r >= 0)
		r = ask(ctx, "GET", path, NULL, &doc, err);
	if (r >= 0)
		r = get_target(doc, "GET /v1/groups/{id}", &t, err);
	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupTargetSizeResponse, node_group_target_size_response, a);
	a->targetsize = t;
	*resp = &a->base;
	return 0;
}

/* POST {"delta": delta} to the group's `action`; groupd answers once the
 * target is what the request makes it (doc/cluster-api.md). */
static int change(struct cp_rpc_ctx *ctx, const char *id, const char *action, json_t *body,
		  struct vmact_err *err)
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
	r = change(ctx, req->id, "/increase", json_pack("{s:i}", "delta", (json_int_t)req->delta),
		   err);
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
	r = change(ctx, req->id, "/decrease-target",
		   json_pack("{s:i}", "delta", (json_int_t)req->delta), err);
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
	json_t *ids = json_array(), *body;
	int r = check_id(req->id, "id", err);

	body = json_pack("{s:o}", "provider_ids", ids);
	if (r < 0) {
		json_decref(body);
		return r;
	}
	if (!req->n_nodes) {
		json_decref(body);
		return vmact_err_set(err, EINVAL, "nodes: none given");
	}
	for (size_t i = 0; body && i < req->n_nodes; i++) {
		const EG(ExternalGrpcNode) *n = req->nodes[i];
		const char *pid = n ? n->providerid : NULL;
		bool seen = false;
		size_t j;
		json_t *v;

		r = check_id(pid, "providerID", err);
		if (r < 0) {
			json_decref(body);
			return vmact_err_prefix(err, "nodes[%zu] (%.64s)", i,
						n && n->name ? n->name : "");
		}
		json_array_foreach(ids, j, v)
			seen |= !strcmp(json_string_value(v), pid);
		if (!seen && json_array_append_new(ids, json_string(pid)) < 0)
			break;
	}
	r = change(ctx, req->id, "/delete-nodes", body, err);
	if (r < 0)
		return r;
	ANSWER(ctx, NodeGroupDeleteNodesResponse, node_group_delete_nodes_response, a);
	*resp = &a->base;
	return 0;
}

static int instance_state(const char *s)
{
	if (!strcmp(s, "running"))
		return STATE(instanceRunning);
	if (!strcmp(s, "creating"))
		return STATE(instanceCreating);
	if (!strcmp(s, "deleting"))
		return STATE(instanceDeleting);
	return -1;
}

static int instance_error(struct cp_rpc_ctx *ctx, const json_t *e, EG(InstanceStatus) * st,
			  struct vmact_err *err)
{
	const char *cls = json_string_value(json_object_get(e, "class"));
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	EG(InstanceErrorInfo) * info;

	if (!json_is_object(e) || !code || !code[0])
		return vmact_err_set(err, EIO, "error: not an object with a \"code\"");
	info = answer(ctx, &EG_D(instance_error_info));
	if (!info)
		return vmact_err_set(err, ENOMEM, "out of memory");
	info->errorcode = cp_arena_strdup(ctx->arena, code);
	info->errormessage = cp_arena_strdup(ctx->arena, msg ? msg : "");
	info->instanceerrorclass = cls && !strcmp(cls, "out-of-resources")
					   ? ERROR_CLASS_OUT_OF_RESOURCES
					   : ERROR_CLASS_OTHER;
	if (!info->errorcode || !info->errormessage)
		return vmact_err_set(err, ENOMEM, "out of memory");
	st->errorinfo = info;
	return 0;
}

static int instance(struct cp_rpc_ctx *ctx, const json_t *n, EG(Instance) * *out,
		    struct vmact_err *err)
{
	const char *pid = json_string_value(json_object_get(n, "provider_id"));
	const char *state = json_string_value(json_object_get(n, "state"));
	const json_t *e = json_object_get(n, "error");
	EG(InstanceStatus) * st;
	EG(Instance) * in;
	int s;

	if (!pid || !pid[0])
		return vmact_err_set(err, EIO, "provider_id: missing");
	s = state ? instance_state(state) : -1;
	if (s < 0)
		return vmact_err_set(err, EIO, "state: not creating, running or deleting");
	in = answer(ctx, &EG_D(instance));
	st = answer(ctx, &EG_D(instance_status));
	if (!in || !st || !(in->id = cp_arena_strdup(ctx->arena, pid)))
		return vmact_err_set(err, ENOMEM, "out of memory");
	st->instancestate = s;
	in->status = st;
	*out = in;
	return e && !json_is_null(e) ? instance_error(ctx, e, st, err) : 0;
}

static int group_nodes(struct cp_rpc_ctx *ctx, const ProtobufCMessage *m, ProtobufCMessage **resp,
		       struct vmact_err *err)
{
	const EG(NodeGroupNodesRequest) *req = (const void *)m;
	_cleanup_(cp_rpc_jsonp) json_t *doc = NULL;
	const json_t *nodes, *n;
	char *path;
	size_t i;
	int r = group_path(ctx, req->id, "/nodes", &path, err);

	if (r >= 0)
		r = ask(ctx, "GET", path, NULL, &doc, err);
	if (r < 0)
		return r;
	nodes = json_object_get(doc, "nodes");
	if (!json_is_array(nodes))
		return vmact_err_set(err, EIO, "vmact-groupd's GET %s: no \"nodes\" array", path);
	ANSWER(ctx, NodeGroupNodesResponse, node_group_nodes_response, a);
	a->instances = cp_arena_array(ctx->arena, json_array_size(nodes), sizeof(*a->instances));
	if (json_array_size(nodes) && !a->instances)
		return vmact_err_set(err, ENOMEM, "out of memory");
	json_array_foreach(nodes, i, n) {
		r = instance(ctx, n, &a->instances[i], err);
		if (r < 0)
			return vmact_err_prefix(err, "vmact-groupd's GET %s: nodes[%zu]", path, i);
		a->n_instances++;
	}
	*resp = &a->base;
	return 0;
}

/* The group as of the last Refresh, as the autoscaler knows it. */
static int find_group(struct cp_rpc_ctx *ctx, const char *id, struct cp_groups **s,
		      const struct cp_group **g, struct vmact_err *err)
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
	const struct cp_group *g;
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
 * cp_group_from_json) fits an int64. */
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
	const struct cp_options *go;
	const struct cp_group *g;
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
	o->scaledownutilizationthreshold = go->set & CP_OPT_UTIL ? go->util
					   : d                   ? d->scaledownutilizationthreshold
								 : 0;
	o->scaledowngpuutilizationthreshold = go->set & CP_OPT_GPU_UTIL ? go->gpu_util
					      : d ? d->scaledowngpuutilizationthreshold
						  : 0;
	o->zeroormaxnodescaling = go->set & CP_OPT_ZERO_OR_MAX ? go->zero_or_max
				  : d                          ? d->zeroormaxnodescaling
							       : 0;
	o->ignoredaemonsetsutilization = go->set & CP_OPT_IGNORE_DS ? go->ignore_ds
					 : d                        ? d->ignoredaemonsetsutilization
								    : 0;
	o->allownonatomicscaleuptomax = go->set & CP_OPT_NON_ATOMIC ? go->non_atomic
					: d                         ? d->allownonatomicscaleuptomax
								    : 0;
	unneeded = pick_nanos(go->set & CP_OPT_UNNEEDED, go->unneeded_s,
			      d ? d->scaledownunneededduration : NULL,
			      d ? d->scaledownunneededtime : NULL);
	unready = pick_nanos(go->set & CP_OPT_UNREADY, go->unready_s,
			     d ? d->scaledownunreadyduration : NULL,
			     d ? d->scaledownunreadytime : NULL);
	provision = pick_nanos(go->set & CP_OPT_PROVISION, go->provision_s,
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
	if (go->set & CP_OPT_STARTUP)
		o->maxnodestartupduration = duration(ctx, seconds_nanos(go->startup_s));
	else if (d && d->maxnodestartupduration)
		o->maxnodestartupduration = duration(ctx, pb_nanos(d->maxnodestartupduration));
	if (((go->set & CP_OPT_STARTUP) || (d && d->maxnodestartupduration)) &&
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
