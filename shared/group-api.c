/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/group-api.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "shared/http-call.h"
#include "shared/json-desc.h"

/* A listing of a large group is tens of KiB; the bound keeps a broken
 * vmact-groupd from filling its client. */
#define ANSWER_MAX (8u << 20)

DEFINE_PTR_CLEANUP(vmact_gapi_jsonp, json_t, json_decref)

/* ---- names and paths ---- */

static const char *const group_res[] = {
	[VMACT_GAPI_GROUP] = "",
	[VMACT_GAPI_NODES] = "nodes",
	[VMACT_GAPI_STANDBY] = "standby",
	[VMACT_GAPI_INCREASE] = "increase",
	[VMACT_GAPI_DELETE_NODES] = "delete-nodes",
	[VMACT_GAPI_DECREASE_TARGET] = "decrease-target",
};

const char *vmact_gapi_group_res_name(enum vmact_gapi_group_res r)
{
	return (unsigned)r < ARRAY_SIZE(group_res) ? group_res[r] : "?";
}

int vmact_gapi_group_res_parse(const char *s, enum vmact_gapi_group_res *out)
{
	for (size_t i = 1; i < ARRAY_SIZE(group_res); i++)
		if (strcmp(s, group_res[i]) == 0) {
			*out = (enum vmact_gapi_group_res)i;
			return 0;
		}
	return -ENOENT;
}

static const char *const verdicts[] = {
	[VMACT_GAPI_ALLOW] = "allow",
	[VMACT_GAPI_REJECT] = "reject",
};

const char *vmact_gapi_verdict_name(enum vmact_gapi_verdict v)
{
	return v == VMACT_GAPI_ALLOW ? verdicts[VMACT_GAPI_ALLOW] : verdicts[VMACT_GAPI_REJECT];
}

int vmact_gapi_verdict_parse(const char *s, enum vmact_gapi_verdict *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(verdicts); i++)
		if (strcmp(s, verdicts[i]) == 0) {
			*out = (enum vmact_gapi_verdict)i;
			return 0;
		}
	return -ENOENT;
}

char *vmact_gapi_group_path(const char *id, enum vmact_gapi_group_res r)
{
	_cleanup_free_ char *esc = vmact_http_escape(id);
	char *p = NULL;

	if (esc && asprintf(&p, VMACT_GAPI_PATH_GROUPS "/%s%s%s", esc,
			    r == VMACT_GAPI_GROUP ? "" : "/", vmact_gapi_group_res_name(r)) < 0)
		p = NULL;
	return p;
}

char *vmact_gapi_node_group_path(const char *provider_id)
{
	_cleanup_free_ char *esc = vmact_http_escape(provider_id);
	char *p = NULL;

	if (esc &&
	    asprintf(&p, VMACT_GAPI_PATH_NODE_GROUP "?" VMACT_GAPI_ARG_PROVIDER_ID "=%s", esc) < 0)
		p = NULL;
	return p;
}

char *vmact_gapi_waiting_path(const char *uid, enum vmact_gapi_verdict v)
{
	_cleanup_free_ char *esc = vmact_http_escape(uid);
	char *p = NULL;

	if (esc &&
	    asprintf(&p, VMACT_GAPI_PATH_WAITING "/%s/%s", esc, vmact_gapi_verdict_name(v)) < 0)
		p = NULL;
	return p;
}

/* ---- the documents, each described once (shared/json-desc.h) ---- */

/* The tables' members: FIELD(struct, member, "key", KIND, more...). */
#define FIELD(st, m, k, kind_, ...)                                                  \
	{                                                                            \
		.key = (k), .kind = VMACT_JSON_DESC_##kind_, .off = offsetof(st, m), \
		.text_max = VMACT_GAPI_TEXT_MAX, __VA_ARGS__                         \
	}
#define REQUIRED          .flags = VMACT_JSON_DESC_REQUIRED
#define REQUIRED_NONEMPTY .flags = VMACT_JSON_DESC_REQUIRED | VMACT_JSON_DESC_NONEMPTY
#define OMIT              .flags = VMACT_JSON_DESC_OMIT_DEFAULT
/* (the count of member m is nm) */
#define COUNT(st, m) .count_off = offsetof(st, n##m)
/* An answer's list, {"KEY": [...]}, at the struct's m and n. */
#define LIST(st, m, k, elem)                                                                       \
	FIELD(st, m, k, ARRAY, REQUIRED, .count_off = offsetof(st, n), .max = VMACT_GAPI_LIST_MAX, \
	      .desc = &(elem))

static const struct vmact_json_desc_range fraction = { 0, 1, "a number in [0, 1]" };
static const struct vmact_json_desc_range seconds = { 0, 1e9, "a number of seconds in [0, 1e9]" };
/* times and durations as vmact-groupd reports them */
static const struct vmact_json_desc_range unix_time = { -1e12, 1e12, "a number in [-1e12, 1e12]" };

/* An answer's list ({"KEY": [...]}): decoded whole or not at all, the
 * document kept for its strings. */
static int list_decode(const struct vmact_json_desc *d, json_t *doc, void *out, json_t **keep,
		       struct vmact_err *err)
{
	int r = vmact_json_desc_decode(d, doc, out, err);

	if (r < 0) {
		vmact_json_desc_clear(d, out);
		memset(out, 0, d->size);
		return r;
	}
	*keep = json_incref(doc);
	return 0;
}

static void list_clear(const struct vmact_json_desc *d, void *s, json_t *doc)
{
	vmact_json_desc_clear(d, s);
	json_decref(doc);
	memset(s, 0, d->size);
}

/* ---- errors ---- */

static int error_check(void *p, struct vmact_err *err)
{
	struct vmact_gapi_error *e = p;

	(void)err;
	if (!e->message[0])
		e->message = NULL;
	if (!e->reason[0])
		e->reason = NULL;
	return 0;
}

static const struct vmact_json_desc_field error_fields[] = {
	FIELD(struct vmact_gapi_error, message, "error", TEXT, .text_dflt = ""),
	FIELD(struct vmact_gapi_error, reason, "reason", TEXT, .text_dflt = ""),
};
static const struct vmact_json_desc error_desc =
	VMACT_JSON_DESC(struct vmact_gapi_error, error_fields, .check = error_check);

json_t *vmact_gapi_error_encode(const char *message, const char *reason)
{
	return vmact_json_desc_encode(&error_desc, &(struct vmact_gapi_error){ message, reason });
}

int vmact_gapi_error_decode(const json_t *doc, struct vmact_gapi_error *out, struct vmact_err *err)
{
	return vmact_json_desc_decode(&error_desc, doc, out, err);
}

int vmact_gapi_reason_errno(const char *reason, long status)
{
	static const struct {
		const char *reason;
		int err;
	} map[] = {
		{ VMACT_GAPI_NOT_FOUND, ENOENT },    { VMACT_GAPI_INVALID, EINVAL },
		{ VMACT_GAPI_OUT_OF_RANGE, ERANGE }, { VMACT_GAPI_PRECONDITION, EBUSY },
		{ VMACT_GAPI_UNAVAILABLE, EAGAIN },  { VMACT_GAPI_INTERNAL, EIO },
	};

	for (size_t i = 0; reason && i < ARRAY_SIZE(map); i++)
		if (!strcmp(reason, map[i].reason))
			return -map[i].err;
	switch (status) {
	case 404:
		return -ENOENT;
	case 400:
		return -EINVAL;
	case 409:
		return -EBUSY;
	case 503:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

/* ---- a group ---- */

#define T struct vmact_gapi_template
static const struct vmact_json_desc_field template_fields[] = {
	FIELD(T, vcpus, "vcpus", U32, REQUIRED, .lo = 1, .hi = 4096),
	FIELD(T, max_vcpus, "max_vcpus", U32, .floor = "vcpus", .hi = 4096),
	FIELD(T, memory_bytes, "memory_bytes", U64, REQUIRED, .lo = 1, .hi = 1LL << 52),
	FIELD(T, max_memory_bytes, "max_memory_bytes", U64, .floor = "memory_bytes",
	      .hi = 1LL << 52),
	FIELD(T, ephemeral_bytes, "ephemeral_storage_bytes", U64, .hi = 1LL << 60),
	/* kubelet's own default for --max-pods */
	FIELD(T, pods, "pods", U32, .lo = 1, .hi = 100000, .dflt = 110),
	FIELD(T, arch, "arch", TEXT, .text_dflt = "amd64"),
	FIELD(T, os, "os", TEXT, .text_dflt = "linux"),
	/* Written when said: a document of an older vmact-groupd reads the
	 * same, and reads as the boot shape. */
	FIELD(T, capacity_milli_cpu, "capacity_milli_cpu", U64, OMIT, .hi = 1LL << 40),
	FIELD(T, capacity_memory_bytes, "capacity_memory_bytes", U64, OMIT, .hi = 1LL << 52),
	FIELD(T, capacity_pods, "capacity_pods", U64, OMIT, .hi = 100000),
	FIELD(T, alloc_milli_cpu, "allocatable_milli_cpu", U64, OMIT, .hi = 1LL << 40),
	FIELD(T, alloc_memory_bytes, "allocatable_memory_bytes", U64, OMIT, .hi = 1LL << 52),
	FIELD(T, alloc_ephemeral_bytes, "allocatable_ephemeral_storage_bytes", U64, OMIT,
	      .hi = 1LL << 60),
	FIELD(T, alloc_pods, "allocatable_pods", U64, OMIT, .hi = 100000),
	FIELD(T, reported_by, "reported_by", TEXT, OMIT),
};
#undef T
static const struct vmact_json_desc template_desc = VMACT_JSON_DESC(struct vmact_gapi_template,
								    template_fields);

/* Only the options `set` names are on the wire. */
#define OPTION(m, k, kind_, bit, ...)                                 \
	FIELD(struct vmact_gapi_options, m, k, kind_,                 \
	      .flags = VMACT_JSON_DESC_GATED | VMACT_JSON_DESC_MARKS, \
	      .has_off = offsetof(struct vmact_gapi_options, set), .has_bit = (bit), __VA_ARGS__)
static const struct vmact_json_desc_field options_fields[] = {
	OPTION(util, "scale_down_utilization_threshold", NUMBER, VMACT_GAPI_OPT_UTIL,
	       .range = &fraction),
	OPTION(gpu_util, "scale_down_gpu_utilization_threshold", NUMBER, VMACT_GAPI_OPT_GPU_UTIL,
	       .range = &fraction),
	OPTION(unneeded_s, "scale_down_unneeded_time_s", NUMBER, VMACT_GAPI_OPT_UNNEEDED,
	       .range = &seconds),
	OPTION(unready_s, "scale_down_unready_time_s", NUMBER, VMACT_GAPI_OPT_UNREADY,
	       .range = &seconds),
	OPTION(provision_s, "max_node_provision_time_s", NUMBER, VMACT_GAPI_OPT_PROVISION,
	       .range = &seconds),
	OPTION(startup_s, "max_node_startup_time_s", NUMBER, VMACT_GAPI_OPT_STARTUP,
	       .range = &seconds),
	OPTION(zero_or_max, "zero_or_max_node_scaling", BOOL, VMACT_GAPI_OPT_ZERO_OR_MAX),
	OPTION(ignore_ds, "ignore_daemonsets_utilization", BOOL, VMACT_GAPI_OPT_IGNORE_DS),
	OPTION(non_atomic, "allow_non_atomic_scale_up_to_max", BOOL, VMACT_GAPI_OPT_NON_ATOMIC),
};
#undef OPTION
static const struct vmact_json_desc options_desc = VMACT_JSON_DESC(struct vmact_gapi_options,
								   options_fields);

int vmact_gapi_options_decode(const json_t *oj, struct vmact_gapi_options *o, struct vmact_err *err)
{
	*o = (struct vmact_gapi_options){ 0 };
	return !oj || json_is_null(oj) ? 0 : vmact_json_desc_decode(&options_desc, oj, o, err);
}

#define P struct vmact_gapi_pool_tier
static const struct vmact_json_desc_field tier_fields[] = {
	FIELD(P, size, "size", U32, .hi = INT32_MAX),
	FIELD(P, ready, "ready", U32, .hi = INT32_MAX),
	FIELD(P, starting, "starting", U32, .hi = INT32_MAX),
};
#undef P
static const struct vmact_json_desc tier_desc = VMACT_JSON_DESC(struct vmact_gapi_pool_tier,
								tier_fields);

/* The pool object's keys are the tiers' names, over the group's array. */
#define TIER(t, k)                                                                   \
	{                                                                            \
		.key = (k), .kind = VMACT_JSON_DESC_OBJECT,                          \
		.off = (t) * sizeof(struct vmact_gapi_pool_tier), .desc = &tier_desc \
	}
static const struct vmact_json_desc_field pool_fields[] = {
	TIER(VMACT_GAPI_TIER_RUNNING, "running"),
	TIER(VMACT_GAPI_TIER_PAUSED, "paused"),
	TIER(VMACT_GAPI_TIER_SAVED, "saved"),
};
#undef TIER
static const struct vmact_json_desc pool_desc =
	VMACT_JSON_DESC(struct vmact_gapi_pool_tier[VMACT_GAPI_TIERS], pool_fields, .dotted = true);

const char *vmact_gapi_tier_name(enum vmact_gapi_tier t)
{
	return (unsigned)t < ARRAY_SIZE(pool_fields) ? pool_fields[t].key : "?";
}

static int taint_check(void *p, struct vmact_err *err)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
	const struct vmact_gapi_taint *t = p;

	for (size_t i = 0; i < ARRAY_SIZE(effects); i++)
		if (!strcmp(t->effect, effects[i]))
			return 0;
	return vmact_err_set(err, EPROTO, "effect: \"%.64s\" is not a Kubernetes taint effect",
			     t->effect);
}

static const struct vmact_json_desc_field taint_fields[] = {
	FIELD(struct vmact_gapi_taint, key, "key", TEXT, REQUIRED),
	FIELD(struct vmact_gapi_taint, value, "value", TEXT, .text_dflt = ""),
	FIELD(struct vmact_gapi_taint, effect, "effect", TEXT, REQUIRED),
};
static const struct vmact_json_desc taint_desc =
	VMACT_JSON_DESC(struct vmact_gapi_taint, taint_fields, .check = taint_check);

/* A group's labels are a map's pairs. */
_Static_assert(sizeof(struct vmact_gapi_label) == sizeof(struct vmact_json_desc_pair) &&
		       offsetof(struct vmact_gapi_label, value) ==
			       offsetof(struct vmact_json_desc_pair, value),
	       "a label is a vmact_json_desc_pair");

#define G struct vmact_gapi_group
static const struct vmact_json_desc_field group_fields[] = {
	FIELD(G, id, "id", TEXT, REQUIRED_NONEMPTY),
	FIELD(G, min, "min", I32, REQUIRED, .hi = INT32_MAX),
	FIELD(G, max, "max", I32, REQUIRED, .floor = "min", .hi = INT32_MAX),
	/* vmact-groupd may hold a target outside [min, max] for a moment (a
	 * configuration change); it is its to report, not ours to refuse. */
	FIELD(G, target, "target", I32, REQUIRED, .hi = INT32_MAX),
	FIELD(G, in_service, "in_service", I32, .hi = INT32_MAX),
	FIELD(G, hosts, "hosts", ARRAY, COUNT(G, hosts), .max = VMACT_GAPI_LABELS_MAX),
	FIELD(G, labels, "labels", MAP, COUNT(G, labels), .max = VMACT_GAPI_LABELS_MAX),
	FIELD(G, taints, "taints", ARRAY, COUNT(G, taints), .max = VMACT_GAPI_TAINTS_MAX,
	      .desc = &taint_desc),
	FIELD(G, tmpl, "template", OBJECT, REQUIRED, .desc = &template_desc),
	FIELD(G, opts, "options", OBJECT, .desc = &options_desc),
	FIELD(G, pool, "pool", OBJECT, .desc = &pool_desc),
	FIELD(G, scheduler_name, "scheduler_name", TEXT, .text_dflt = ""),
};
#undef G
static const struct vmact_json_desc group_desc = VMACT_JSON_DESC(struct vmact_gapi_group,
								 group_fields);

json_t *vmact_gapi_group_encode(const struct vmact_gapi_group *g)
{
	return vmact_json_desc_encode(&group_desc, g);
}

int vmact_gapi_group_decode(const json_t *obj, struct vmact_gapi_group *g, struct vmact_err *err)
{
	return vmact_json_desc_decode(&group_desc, obj, g, err);
}

void vmact_gapi_group_clear(struct vmact_gapi_group *g)
{
	vmact_json_desc_clear(&group_desc, g);
	*g = (struct vmact_gapi_group){ 0 };
}

static int groups_check(void *p, struct vmact_err *err)
{
	const struct vmact_gapi_groups *s = p;

	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(s->g[i].id, s->g[k].id))
				return vmact_err_set(err, EPROTO,
						     "groups[%zu]: id: \"%s\" given twice", i,
						     s->g[i].id);
	return 0;
}

static const struct vmact_json_desc_field groups_fields[] = {
	LIST(struct vmact_gapi_groups, g, "groups", group_desc),
};
static const struct vmact_json_desc groups_desc =
	VMACT_JSON_DESC(struct vmact_gapi_groups, groups_fields, .check = groups_check);

json_t *vmact_gapi_groups_encode(const struct vmact_gapi_group *g, size_t n)
{
	return vmact_json_desc_encode(&groups_desc,
				      &(struct vmact_gapi_groups){
					      .n = n, .g = (struct vmact_gapi_group *)g });
}

int vmact_gapi_groups_decode(json_t *doc, struct vmact_gapi_groups *out, struct vmact_err *err)
{
	return list_decode(&groups_desc, doc, out, &out->doc, err);
}

void vmact_gapi_groups_clear(struct vmact_gapi_groups *s)
{
	list_clear(&groups_desc, s, s->doc);
}

/* ---- VMs and nodes ---- */

#define E struct vmact_gapi_vm_error
static const struct vmact_json_desc_field vm_error_fields[] = {
	FIELD(E, cls, "class", TEXT, .text_dflt = ""),
	FIELD(E, code, "code", TEXT, REQUIRED_NONEMPTY),
	FIELD(E, message, "message", TEXT, .text_dflt = ""),
	FIELD(E, at, "at", REAL, .range = &unix_time),
};
#undef E
static const struct vmact_json_desc vm_error_desc = VMACT_JSON_DESC(struct vmact_gapi_vm_error,
								    vm_error_fields);

/* A VM's or node's last failure, there when has_error says. */
#define VM_ERROR(st)                                                                              \
	FIELD(st, error, "error", OBJECT, .flags = VMACT_JSON_DESC_GATED | VMACT_JSON_DESC_MARKS, \
	      .has_off = offsetof(st, has_error), .desc = &vm_error_desc)

static const char *const node_states[] = {
	[VMACT_GAPI_NODE_CREATING] = "creating",
	[VMACT_GAPI_NODE_RUNNING] = "running",
	[VMACT_GAPI_NODE_DELETING] = "deleting",
};
_Static_assert(sizeof(enum vmact_gapi_node_state) == sizeof(int), "an ENUM is an int");

const char *vmact_gapi_node_state_name(enum vmact_gapi_node_state s)
{
	return (unsigned)s < ARRAY_SIZE(node_states) ? node_states[s] : "?";
}

#define N struct vmact_gapi_node
static const struct vmact_json_desc_field node_fields[] = {
	FIELD(N, provider_id, "provider_id", TEXT, REQUIRED_NONEMPTY),
	FIELD(N, name, "name", TEXT, .text_dflt = ""),
	FIELD(N, host, "host", TEXT, .text_dflt = ""),
	FIELD(N, state, "state", ENUM, REQUIRED, .names = node_states,
	      .nnames = ARRAY_SIZE(node_states)),
	FIELD(N, vm_state, "vm_state", TEXT, .text_dflt = ""),
	FIELD(N, tier, "tier", TEXT, .text_dflt = ""),
	VM_ERROR(N),
};
#undef N
static const struct vmact_json_desc node_desc = VMACT_JSON_DESC(struct vmact_gapi_node,
								node_fields);

static const struct vmact_json_desc_field nodes_fields[] = {
	LIST(struct vmact_gapi_nodes, v, "nodes", node_desc),
};
static const struct vmact_json_desc nodes_desc = VMACT_JSON_DESC(struct vmact_gapi_nodes,
								 nodes_fields);

json_t *vmact_gapi_nodes_encode(const struct vmact_gapi_node *v, size_t n)
{
	return vmact_json_desc_encode(&nodes_desc,
				      &(struct vmact_gapi_nodes){
					      .n = n, .v = (struct vmact_gapi_node *)v });
}

int vmact_gapi_nodes_decode(json_t *doc, struct vmact_gapi_nodes *out, struct vmact_err *err)
{
	return list_decode(&nodes_desc, doc, out, &out->doc, err);
}

void vmact_gapi_nodes_clear(struct vmact_gapi_nodes *s)
{
	list_clear(&nodes_desc, s, s->doc);
}

#define V struct vmact_gapi_vm
static const struct vmact_json_desc_field vm_fields[] = {
	FIELD(V, provider_id, "provider_id", TEXT, REQUIRED),
	FIELD(V, name, "name", TEXT, REQUIRED),
	FIELD(V, host, "host", TEXT, REQUIRED),
	FIELD(V, group, "group", TEXT, REQUIRED),
	FIELD(V, role, "role", TEXT, REQUIRED),
	FIELD(V, tier, "tier", TEXT, REQUIRED),
	FIELD(V, state, "state", TEXT, REQUIRED),
	FIELD(V, leased, "leased", BOOL),
	FIELD(V, busy, "busy", BOOL),
	FIELD(V, attempts, "attempts", I32, .hi = INT32_MAX),
	FIELD(V, created, "created", REAL, .range = &unix_time),
	FIELD(V, booted, "booted", REAL, .range = &unix_time),
	FIELD(V, requested, "requested", REAL, .range = &unix_time),
	FIELD(V, in_service, "in_service", REAL, .range = &unix_time),
	VM_ERROR(V),
	/* only a group no longer configured says so */
	FIELD(V, configured, "configured", BOOL, .flags = VMACT_JSON_DESC_OMIT_DEFAULT, .dflt = 1),
};
#undef V
static const struct vmact_json_desc vm_desc = VMACT_JSON_DESC(struct vmact_gapi_vm, vm_fields);

#define S struct vmact_gapi_vms
static const struct vmact_json_desc_field vms_fields[] = {
	LIST(S, v, "vms", vm_desc),
	FIELD(S, ready, "ready", BOOL, .flags = VMACT_JSON_DESC_GATED | VMACT_JSON_DESC_MARKS,
	      .has_off = offsetof(S, has_ready)),
};
#undef S
static const struct vmact_json_desc vms_desc = VMACT_JSON_DESC(struct vmact_gapi_vms, vms_fields);

json_t *vmact_gapi_vms_encode(const struct vmact_gapi_vm *v, size_t n, const bool *ready)
{
	return vmact_json_desc_encode(&vms_desc, &(struct vmact_gapi_vms){
							 .n = n,
							 .v = (struct vmact_gapi_vm *)v,
							 .has_ready = ready,
							 .ready = ready && *ready,
						 });
}

int vmact_gapi_vms_decode(json_t *doc, struct vmact_gapi_vms *out, struct vmact_err *err)
{
	return list_decode(&vms_desc, doc, out, &out->doc, err);
}

void vmact_gapi_vms_clear(struct vmact_gapi_vms *s)
{
	list_clear(&vms_desc, s, s->doc);
}

/* ---- hosts ---- */

static const struct vmact_json_desc_field res_fields[] = {
	FIELD(struct vmact_gapi_res, milli_cpu, "milli_cpu", I64, REQUIRED, .hi = INT64_MAX),
	FIELD(struct vmact_gapi_res, memory_bytes, "memory_bytes", I64, REQUIRED, .hi = INT64_MAX),
};
static const struct vmact_json_desc res_desc = VMACT_JSON_DESC(struct vmact_gapi_res, res_fields);

#define H struct vmact_gapi_host
/* A connection's state, an object on the wire, flat in the host's struct. */
static const struct vmact_json_desc_field libvirt_fields[] = {
	FIELD(H, libvirt_ok, "ok", BOOL, REQUIRED),
	FIELD(H, libvirt_error, "error", TEXT, .text_dflt = ""),
};
static const struct vmact_json_desc libvirt_desc = VMACT_JSON_DESC(H, libvirt_fields);
static const struct vmact_json_desc_field arbiter_fields[] = {
	FIELD(H, arbiter_ok, "ok", BOOL, REQUIRED),
	FIELD(H, arbiter_error, "error", TEXT, .text_dflt = ""),
};
static const struct vmact_json_desc arbiter_desc = VMACT_JSON_DESC(H, arbiter_fields);

/* The arbiter's ledger as last read, there when has_ledger says. */
#define LEDGER(m, k, kind_, ...)                                                                  \
	FIELD(H, m, k, kind_, .flags = VMACT_JSON_DESC_GATED, .has_off = offsetof(H, has_ledger), \
	      __VA_ARGS__)
static const struct vmact_json_desc_field host_fields[] = {
	FIELD(H, name, "name", TEXT, REQUIRED),
	FIELD(H, uri, "uri", TEXT, REQUIRED),
	FIELD(H, reachable, "reachable", BOOL, REQUIRED),
	FIELD(H, scanned, "scanned", BOOL),
	{ .key = "libvirt", .kind = VMACT_JSON_DESC_OBJECT, REQUIRED, .desc = &libvirt_desc },
	{ .key = "arbiter", .kind = VMACT_JSON_DESC_OBJECT, REQUIRED, .desc = &arbiter_desc },
	FIELD(H, vms, "vms", I32, .hi = INT32_MAX),
	FIELD(H, leases, "leases", I32, .hi = INT32_MAX),
	FIELD(H, capacity, "capacity", OBJECT,
	      .flags = VMACT_JSON_DESC_GATED | VMACT_JSON_DESC_MARKS,
	      .has_off = offsetof(H, has_ledger), .desc = &res_desc),
	LEDGER(watermark, "watermark", OBJECT, .desc = &res_desc),
	LEDGER(reserved, "reserved", OBJECT, .desc = &res_desc),
	LEDGER(pressure, "pressure", OBJECT, .desc = &res_desc),
	LEDGER(arbiter_pods, "arbiter_pods", I64, .hi = INT64_MAX),
	LEDGER(arbiter_leases, "arbiter_leases", I64, .hi = INT64_MAX),
	FIELD(H, standby, "standby", OBJECT, .desc = &res_desc),
	/* Written only when there is something to say: a host's document
	 * stays as it was for a host that is neither drained nor full. */
	FIELD(H, draining, "draining", BOOL, OMIT),
	FIELD(H, relief, "relief", TEXT, OMIT, .text_dflt = ""),
	FIELD(H, unmovable, "unmovable", TEXT, OMIT, .text_dflt = ""),
};
#undef LEDGER
#undef H
static const struct vmact_json_desc host_desc = VMACT_JSON_DESC(struct vmact_gapi_host,
								host_fields);

static const struct vmact_json_desc_field hosts_fields[] = {
	LIST(struct vmact_gapi_hosts, v, "hosts", host_desc),
};
static const struct vmact_json_desc hosts_desc = VMACT_JSON_DESC(struct vmact_gapi_hosts,
								 hosts_fields);

json_t *vmact_gapi_hosts_encode(const struct vmact_gapi_host *v, size_t n)
{
	return vmact_json_desc_encode(&hosts_desc,
				      &(struct vmact_gapi_hosts){
					      .n = n, .v = (struct vmact_gapi_host *)v });
}

int vmact_gapi_hosts_decode(json_t *doc, struct vmact_gapi_hosts *out, struct vmact_err *err)
{
	return list_decode(&hosts_desc, doc, out, &out->doc, err);
}

void vmact_gapi_hosts_clear(struct vmact_gapi_hosts *s)
{
	list_clear(&hosts_desc, s, s->doc);
}

/* ---- waiting VMs ---- */

#define W struct vmact_gapi_waiting
static const struct vmact_json_desc_field waiting_fields[] = {
	FIELD(W, uid, "uid", TEXT, REQUIRED),
	FIELD(W, name, "name", TEXT, REQUIRED),
	FIELD(W, group, "group", TEXT, REQUIRED),
	FIELD(W, host, "host", TEXT, REQUIRED),
	FIELD(W, pending, "pending", ARRAY, REQUIRED, COUNT(W, pending),
	      .max = VMACT_GAPI_LABELS_MAX),
	FIELD(W, waited_s, "waited_s", REAL, .range = &unix_time),
	FIELD(W, timeout_s, "timeout_s", REAL, .range = &unix_time),
};
#undef W
static const struct vmact_json_desc waiting_desc = VMACT_JSON_DESC(struct vmact_gapi_waiting,
								   waiting_fields);

static const struct vmact_json_desc_field waitings_fields[] = {
	LIST(struct vmact_gapi_waitings, v, "waiting", waiting_desc),
};
static const struct vmact_json_desc waitings_desc = VMACT_JSON_DESC(struct vmact_gapi_waitings,
								    waitings_fields);

/* (v[i].pending is the caller's.) */
json_t *vmact_gapi_waitings_encode(const struct vmact_gapi_waiting *v, size_t n)
{
	return vmact_json_desc_encode(&waitings_desc,
				      &(struct vmact_gapi_waitings){
					      .n = n, .v = (struct vmact_gapi_waiting *)v });
}

int vmact_gapi_waitings_decode(json_t *doc, struct vmact_gapi_waitings *out, struct vmact_err *err)
{
	return list_decode(&waitings_desc, doc, out, &out->doc, err);
}

void vmact_gapi_waitings_clear(struct vmact_gapi_waitings *s)
{
	list_clear(&waitings_desc, s, s->doc);
}

/* ---- live migration ---- */

#define M struct vmact_gapi_migrate
static const struct vmact_json_desc_field migrate_fields[] = {
	FIELD(M, to, "to", TEXT, OMIT),
	FIELD(M, force, "force", BOOL, OMIT),
};
#undef M
static const struct vmact_json_desc migrate_desc = VMACT_JSON_DESC(struct vmact_gapi_migrate,
								   migrate_fields);

json_t *vmact_gapi_migrate_encode(const struct vmact_gapi_migrate *m)
{
	return vmact_json_desc_encode(&migrate_desc, m);
}

int vmact_gapi_migrate_decode(const json_t *doc, struct vmact_gapi_migrate *m,
			      struct vmact_err *err)
{
	memset(m, 0, sizeof(*m));
	return vmact_json_desc_decode(&migrate_desc, doc, m, err);
}

char *vmact_gapi_drain_path(const char *host, bool drain)
{
	_cleanup_free_ char *esc = vmact_http_escape(host);
	char *p = NULL;

	if (!esc || asprintf(&p, VMACT_GAPI_PATH_HOSTS "/%s/%s", esc,
			     drain ? VMACT_GAPI_DRAIN : VMACT_GAPI_UNDRAIN) < 0)
		p = NULL;
	return p;
}

char *vmact_gapi_migrate_path(const char *vm)
{
	_cleanup_free_ char *esc = vmact_http_escape(vm);
	char *p = NULL;

	if (!esc || asprintf(&p, VMACT_GAPI_PATH_VMS "/%s/" VMACT_GAPI_MIGRATE, esc) < 0)
		p = NULL;
	return p;
}

#define M struct vmact_gapi_migration
static const struct vmact_json_desc_field migration_fields[] = {
	FIELD(M, id, "id", U64, REQUIRED, .lo = 0, .hi = INT64_MAX),
	FIELD(M, vm, "vm", TEXT, REQUIRED),
	FIELD(M, uuid, "uuid", TEXT, REQUIRED),
	FIELD(M, from, "from", TEXT, REQUIRED),
	FIELD(M, to, "to", TEXT, REQUIRED),
	FIELD(M, reason, "reason", TEXT, REQUIRED),
	FIELD(M, why, "why", TEXT, .text_dflt = ""),
	FIELD(M, phase, "phase", TEXT, REQUIRED),
	FIELD(M, result, "result", TEXT, REQUIRED),
	FIELD(M, error, "error", TEXT, REQUIRED),
	FIELD(M, started, "started", REAL, .range = &unix_time),
	FIELD(M, duration_s, "duration_s", REAL, .range = &seconds),
	FIELD(M, downtime_ms, "downtime_ms", I64, REQUIRED, .lo = -1, .hi = INT64_MAX),
};
#undef M
static const struct vmact_json_desc migration_desc = VMACT_JSON_DESC(struct vmact_gapi_migration,
								     migration_fields);

json_t *vmact_gapi_migration_encode(const struct vmact_gapi_migration *m)
{
	return vmact_json_desc_encode(&migration_desc, m);
}

int vmact_gapi_migration_decode(const json_t *doc, struct vmact_gapi_migration *m,
				struct vmact_err *err)
{
	memset(m, 0, sizeof(*m));
	return vmact_json_desc_decode(&migration_desc, doc, m, err);
}

static const struct vmact_json_desc_field migrations_fields[] = {
	LIST(struct vmact_gapi_migrations, v, "migrations", migration_desc),
};
static const struct vmact_json_desc migrations_desc = VMACT_JSON_DESC(struct vmact_gapi_migrations,
								      migrations_fields);

json_t *vmact_gapi_migrations_encode(const struct vmact_gapi_migration *v, size_t n)
{
	return vmact_json_desc_encode(&migrations_desc,
				      &(struct vmact_gapi_migrations){
					      .n = n, .v = (struct vmact_gapi_migration *)v });
}

int vmact_gapi_migrations_decode(json_t *doc, struct vmact_gapi_migrations *out,
				 struct vmact_err *err)
{
	return list_decode(&migrations_desc, doc, out, &out->doc, err);
}

void vmact_gapi_migrations_clear(struct vmact_gapi_migrations *s)
{
	list_clear(&migrations_desc, s, s->doc);
}

/* ---- changes ---- */

/* A change's number, where a body that is not an object has always been
 * refused as one without the number ("delta: an integer is required"). */
static int number_decode(const struct vmact_json_desc *d, const json_t *doc, void *out,
			 struct vmact_err *err)
{
	json_t *none = json_is_object(doc) ? NULL : json_object();
	int r = vmact_json_desc_decode(d, none ? none : doc, out, err);

	json_decref(none);
	return r;
}

struct delta_doc {
	int64_t delta;
};
static const struct vmact_json_desc_field delta_fields[] = {
	FIELD(struct delta_doc, delta, "delta", I64, REQUIRED, .lo = INT64_MIN, .hi = INT64_MAX,
	      .bad = "an integer is required"),
};
static const struct vmact_json_desc delta_desc = VMACT_JSON_DESC(struct delta_doc, delta_fields);

json_t *vmact_gapi_delta_encode(long long delta)
{
	return vmact_json_desc_encode(&delta_desc, &(struct delta_doc){ delta });
}

int vmact_gapi_delta_decode(const json_t *doc, long long *delta, struct vmact_err *err)
{
	struct delta_doc d;
	int r = number_decode(&delta_desc, doc, &d, err);

	if (r >= 0)
		*delta = d.delta;
	return r;
}

struct ids_doc {
	const char *const *ids;
	size_t nids;
};
static const struct vmact_json_desc_field ids_fields[] = {
	FIELD(struct ids_doc, ids, "provider_ids", ARRAY, COUNT(struct ids_doc, ids)),
};
static const struct vmact_json_desc ids_desc = VMACT_JSON_DESC(struct ids_doc, ids_fields);

json_t *vmact_gapi_delete_nodes_encode(const char *const *ids, size_t n)
{
	return vmact_json_desc_encode(&ids_desc, &(struct ids_doc){ ids, n });
}

/* (Its refusals are its own words, which vmact-groupd has always answered
 * with: 1 to VMACT_GAPI_IDS_MAX strings.) */
int vmact_gapi_delete_nodes_decode(const json_t *doc, const char ***ids, size_t *n,
				   struct vmact_err *err)
{
	const json_t *arr = json_object_get(doc, "provider_ids"), *it;
	size_t i;

	*ids = NULL;
	*n = 0;
	if (!json_is_array(arr) || !json_array_size(arr) ||
	    json_array_size(arr) > VMACT_GAPI_IDS_MAX)
		return vmact_err_set(err, EPROTO, "provider_ids: a list of 1 to %d ids",
				     VMACT_GAPI_IDS_MAX);
	*ids = calloc(json_array_size(arr), sizeof(**ids));
	if (!*ids)
		return vmact_err_set(err, ENOMEM, "out of memory");
	json_array_foreach(arr, i, it) {
		if (!json_is_string(it)) {
			free(*ids);
			*ids = NULL;
			*n = 0;
			return vmact_err_set(err, EPROTO, "provider_ids[%zu]: a string", i);
		}
		(*ids)[(*n)++] = json_string_value(it);
	}
	return 0;
}

struct target_doc {
	int32_t target;
};
static const struct vmact_json_desc_field target_fields[] = {
	FIELD(struct target_doc, target, "target", I32, REQUIRED, .hi = INT32_MAX,
	      .bad = "missing or not in [0, 2^31)"),
};
static const struct vmact_json_desc target_desc = VMACT_JSON_DESC(struct target_doc, target_fields);

json_t *vmact_gapi_target_encode(int32_t target)
{
	return vmact_json_desc_encode(&target_desc, &(struct target_doc){ target });
}

int vmact_gapi_target_decode(const json_t *doc, int32_t *target, struct vmact_err *err)
{
	struct target_doc d;
	int r = number_decode(&target_desc, doc, &d, err);

	if (r >= 0)
		*target = d.target;
	return r;
}

/* A verdict's one argument: allow's placement plugin, reject's message. */
struct verdict_doc {
	const char *arg;
};
static const struct vmact_json_desc_field verdict_fields[][1] = {
	[VMACT_GAPI_ALLOW] = { FIELD(struct verdict_doc, arg, "plugin", TEXT) },
	[VMACT_GAPI_REJECT] = { FIELD(struct verdict_doc, arg, "message", TEXT) },
};
static const struct vmact_json_desc verdict_desc[] = {
	[VMACT_GAPI_ALLOW] = VMACT_JSON_DESC(struct verdict_doc, verdict_fields[VMACT_GAPI_ALLOW]),
	[VMACT_GAPI_REJECT] = VMACT_JSON_DESC(struct verdict_doc,
					      verdict_fields[VMACT_GAPI_REJECT]),
};

json_t *vmact_gapi_verdict_encode(enum vmact_gapi_verdict v, const char *arg)
{
	return arg ? vmact_json_desc_encode(&verdict_desc[v], &(struct verdict_doc){ arg })
		   : json_object();
}

int vmact_gapi_verdict_decode(const json_t *doc, enum vmact_gapi_verdict v, const char **arg,
			      struct vmact_err *err)
{
	struct verdict_doc d = { 0 };
	int r = doc ? vmact_json_desc_decode(&verdict_desc[v], doc, &d, err) : 0;

	*arg = r >= 0 ? d.arg : NULL;
	return r;
}

_Static_assert(sizeof(enum vmact_gapi_verdict) == sizeof(int), "an ENUM is an int");
struct done_doc {
	const char *uid;
	enum vmact_gapi_verdict done;
};
static const struct vmact_json_desc_field done_fields[] = {
	FIELD(struct done_doc, uid, "uid", TEXT, REQUIRED),
	FIELD(struct done_doc, done, "done", ENUM, REQUIRED, .names = verdicts,
	      .nnames = ARRAY_SIZE(verdicts)),
};
static const struct vmact_json_desc done_desc = VMACT_JSON_DESC(struct done_doc, done_fields);

json_t *vmact_gapi_verdict_done_encode(const char *uid, enum vmact_gapi_verdict v)
{
	return vmact_json_desc_encode(&done_desc, &(struct done_doc){ uid, v });
}

int vmact_gapi_verdict_done_decode(const json_t *doc, const char **uid, enum vmact_gapi_verdict *v,
				   struct vmact_err *err)
{
	struct done_doc d;
	int r = vmact_json_desc_decode(&done_desc, doc, &d, err);

	if (r >= 0) {
		*uid = d.uid;
		*v = d.done;
	}
	return r;
}

struct node_group_doc {
	const char *id;
};
static const struct vmact_json_desc_field node_group_fields[] = {
	FIELD(struct node_group_doc, id, "id", TEXT, REQUIRED),
};
static const struct vmact_json_desc node_group_desc = VMACT_JSON_DESC(struct node_group_doc,
								      node_group_fields);

json_t *vmact_gapi_node_group_encode(const char *id)
{
	return vmact_json_desc_encode(&node_group_desc, &(struct node_group_doc){ id });
}

int vmact_gapi_node_group_decode(const json_t *doc, const char **id, struct vmact_err *err)
{
	struct node_group_doc d;
	int r = vmact_json_desc_decode(&node_group_desc, doc, &d, err);

	if (r >= 0)
		*id = d.id;
	return r;
}

/* ---- the request ---- */

static int answer_error(long status, const struct vmact_buf *a, struct vmact_err *err)
{
	_cleanup_(vmact_gapi_jsonp) json_t *doc = NULL;
	struct vmact_gapi_error e = { 0 };
	struct vmact_err ignored = { 0 };

	if (a->data)
		doc = json_loadb(a->data, a->len, 0, NULL);
	/* An answer that is not the API's error still has its status. */
	if (!doc || vmact_gapi_error_decode(doc, &e, &ignored) < 0)
		e = (struct vmact_gapi_error){ 0 };
	return vmact_err_set(err, -vmact_gapi_reason_errno(e.reason, status), "vmact-groupd: %s",
			     e.message ? e.message : "HTTP error without a reason");
}

int vmact_gapi_call(const char *socket, const char *method, const char *path, const json_t *body,
		    uint64_t timeout_usec, json_t **out, struct vmact_err *err)
{
	_cleanup_(vmact_http_answer_free) struct vmact_http_answer a = { 0 };
	_cleanup_free_ char *text = NULL;
	struct vmact_err e = { 0 };
	json_error_t je;
	int r;

	*out = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	r = vmact_http_call(&(struct vmact_http_req){ .unix_socket = socket,
						      .url = path,
						      .method = method,
						      .body = text,
						      .timeout_usec = timeout_usec,
						      .answer_max = ANSWER_MAX },
			    &a, &e);
	if (r == -ETIMEDOUT)
		return vmact_err_set(err, ETIMEDOUT,
				     "vmact-groupd at %s did not answer %s %s in time", socket,
				     method, path);
	if (r == -ENOMEM || r == -EINVAL)
		return vmact_err_set(err, -r, "%s", e.msg);
	if (r < 0)
		return vmact_err_set(err, r == -EMSGSIZE ? EIO : EAGAIN,
				     "cannot reach vmact-groupd at %s: %s", socket, e.msg);
	if (a.status < 200 || a.status > 299)
		return answer_error(a.status, &a.body, err);
	*out = json_loadb(a.body.data ? a.body.data : "", a.body.len, 0, &je);
	if (!*out)
		return vmact_err_set(
			err, EIO, "vmact-groupd answered %s %s with something other than JSON: %s",
			method, path, je.text);
	return 0;
}
