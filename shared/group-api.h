/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's API (doc/cluster-api.md), the one codec of it (prefix
 * vmact_gapi_): its paths, the C types of what vmact-groupd,
 * vmact-cloudprovider and vmact-groupctl exchange, their JSON encoders
 * (vmact-groupd's answers, the clients' requests) and decoders, and the
 * one request to vmact-groupd's socket. No program names a field of the
 * API outside this file and group-api.c (tests/checks/check-group-api.sh).
 *
 * Decoders take the peer's bytes as untrusted: a missing or ill-typed
 * field is -EPROTO with its name in the message ("groups[2].template.vcpus:
 * not an integer"), never a crash; a string is at most
 * VMACT_GAPI_TEXT_MAX bytes and holds no NUL. A decoded struct's strings
 * point into the JSON document it was decoded from (the lists keep a
 * reference on it); its arrays are its own, freed by its _clear. The
 * encoders write each document as vmact-groupd always has (its keys in
 * doc/cluster-api.md's order), and return NULL only when out of memory
 * (or given a NULL string that has no default). Each type is a table in
 * group-api.c that shared/json-desc.c walks both ways.
 * Pure: no I/O but vmact_gapi_call, no logging. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Far above any real group; keeps what a broken peer sends small. */
#define VMACT_GAPI_TEXT_MAX   1024
#define VMACT_GAPI_LABELS_MAX 256
#define VMACT_GAPI_TAINTS_MAX 64
#define VMACT_GAPI_LIST_MAX   100000
/* A delete-nodes request's ids. */
#define VMACT_GAPI_IDS_MAX 1000

/* ---- paths ---- */

#define VMACT_GAPI_PATH_GROUPS     "/v1/groups"
#define VMACT_GAPI_PATH_NODE_GROUP "/v1/node-group"
#define VMACT_GAPI_PATH_VMS        "/v1/vms"
#define VMACT_GAPI_PATH_HOSTS      "/v1/hosts"
#define VMACT_GAPI_PATH_WAITING    "/v1/waiting"
#define VMACT_GAPI_PATH_MIGRATIONS "/v1/migrations"
/* POST /v1/vms/{name}/migrate */
#define VMACT_GAPI_MIGRATE "migrate"
/* POST /v1/hosts/{name}/drain, .../undrain (no body) -> the host, H */
#define VMACT_GAPI_DRAIN   "drain"
#define VMACT_GAPI_UNDRAIN "undrain"
/* GET /v1/node-group's query argument */
#define VMACT_GAPI_ARG_PROVIDER_ID "provider_id"

/* What follows /v1/groups/{id}. */
enum vmact_gapi_group_res {
	VMACT_GAPI_GROUP,           /* the group itself (no suffix) */
	VMACT_GAPI_NODES,           /* /nodes */
	VMACT_GAPI_STANDBY,         /* /standby */
	VMACT_GAPI_INCREASE,        /* /increase */
	VMACT_GAPI_DELETE_NODES,    /* /delete-nodes */
	VMACT_GAPI_DECREASE_TARGET, /* /decrease-target */
};
/* "nodes", ...; "" for VMACT_GAPI_GROUP. */
const char *vmact_gapi_group_res_name(enum vmact_gapi_group_res r);
/* The resource a suffix names (without its '/'), or -ENOENT. */
int vmact_gapi_group_res_parse(const char *s, enum vmact_gapi_group_res *out);

enum vmact_gapi_verdict {
	VMACT_GAPI_ALLOW,
	VMACT_GAPI_REJECT,
};
const char *vmact_gapi_verdict_name(enum vmact_gapi_verdict v); /* "allow", "reject" */
int vmact_gapi_verdict_parse(const char *s, enum vmact_gapi_verdict *out);

/* Paths with their segment or query percent-encoded, malloc'd; NULL on
 * ENOMEM. */
char *vmact_gapi_group_path(const char *id, enum vmact_gapi_group_res r);
char *vmact_gapi_node_group_path(const char *provider_id);
char *vmact_gapi_waiting_path(const char *uid, enum vmact_gapi_verdict v);

/* ---- errors: {"error": sentence, "reason": reason} ---- */

/* The reasons of doc/cluster-api.md (its errors table). */
#define VMACT_GAPI_NOT_FOUND    "not-found"
#define VMACT_GAPI_INVALID      "invalid"
#define VMACT_GAPI_OUT_OF_RANGE "out-of-range"
#define VMACT_GAPI_PRECONDITION "precondition"
#define VMACT_GAPI_UNAVAILABLE  "unavailable"
#define VMACT_GAPI_INTERNAL     "internal"

/* The error to answer when there is no memory to encode one. */
#define VMACT_GAPI_OOM_ERROR "{\"error\":\"out of memory\",\"reason\":\"internal\"}"

struct vmact_gapi_error {
	const char *message; /* NULL: none said */
	const char *reason;  /* NULL: none said */
};
json_t *vmact_gapi_error_encode(const char *message, const char *reason);
int vmact_gapi_error_decode(const json_t *doc, struct vmact_gapi_error *out, struct vmact_err *err);
/* What a reason means as an errno: -ENOENT not-found, -EINVAL invalid,
 * -ERANGE out-of-range, -EBUSY precondition, -EAGAIN unavailable, -EIO
 * internal; an unknown or missing reason by the HTTP status, so that a
 * newer vmact-groupd still maps sensibly. */
int vmact_gapi_reason_errno(const char *reason, long status);

/* ---- a group: GET /v1/groups, /v1/groups/{id} ---- */

struct vmact_gapi_label {
	const char *key, *value;
};

struct vmact_gapi_taint {
	const char *key, *value, *effect;
};

/* What one of the group's VMs boots with. */
struct vmact_gapi_template {
	uint32_t vcpus, max_vcpus;
	uint64_t memory_bytes, max_memory_bytes;
	uint64_t ephemeral_bytes; /* the node's ephemeral-storage; 0: not said */
	uint32_t pods;
	const char *arch;
	const char *os;
	/* What a node's kubelet reports (doc/cluster-api.md): its capacity
	 * where it is not the boot shape (the guest's kernel keeps some of
	 * its memory), and its allocatable; 0: as the boot shape says (an
	 * older vmact-groupd). reported_by: the Node whose kubelet reported
	 * them, "" for an estimate. */
	uint64_t capacity_milli_cpu, capacity_memory_bytes, capacity_pods;
	uint64_t alloc_milli_cpu, alloc_memory_bytes, alloc_ephemeral_bytes, alloc_pods;
	const char *reported_by;
};

/* The group's NodeGroupAutoscalingOptions; `set` says which
 * (VMACT_GAPI_OPT_*): only those are on the wire. */
enum {
	VMACT_GAPI_OPT_UTIL = 1u << 0,
	VMACT_GAPI_OPT_GPU_UTIL = 1u << 1,
	VMACT_GAPI_OPT_UNNEEDED = 1u << 2,
	VMACT_GAPI_OPT_UNREADY = 1u << 3,
	VMACT_GAPI_OPT_PROVISION = 1u << 4,
	VMACT_GAPI_OPT_ZERO_OR_MAX = 1u << 5,
	VMACT_GAPI_OPT_IGNORE_DS = 1u << 6,
	VMACT_GAPI_OPT_STARTUP = 1u << 7,
	VMACT_GAPI_OPT_NON_ATOMIC = 1u << 8,
};

struct vmact_gapi_options {
	unsigned set;
	double util, gpu_util;                                /* fractions */
	double unneeded_s, unready_s, provision_s, startup_s; /* [0, 1e9] s */
	bool zero_or_max, ignore_ds, non_atomic;
};

/* The standby pool's tiers, in the order of the pool's object. */
enum vmact_gapi_tier {
	VMACT_GAPI_TIER_RUNNING,
	VMACT_GAPI_TIER_PAUSED,
	VMACT_GAPI_TIER_SAVED,
	VMACT_GAPI_TIERS,
};
const char *vmact_gapi_tier_name(enum vmact_gapi_tier t); /* "running", ... */

struct vmact_gapi_pool_tier {
	uint32_t size, ready, starting;
};

struct vmact_gapi_group {
	const char *id;
	int32_t min, max, target, in_service;
	const char **hosts;
	size_t nhosts;
	struct vmact_gapi_label *labels; /* in the document's order */
	size_t nlabels;
	struct vmact_gapi_taint *taints;
	size_t ntaints;
	struct vmact_gapi_template tmpl;
	struct vmact_gapi_options opts;
	struct vmact_gapi_pool_tier pool[VMACT_GAPI_TIERS];
	const char *scheduler_name; /* "" when not said */
};

json_t *vmact_gapi_group_encode(const struct vmact_gapi_group *g);
/* Required: id (not empty), min, max (>= min), target, template (vcpus,
 * memory_bytes); the rest takes its default when missing (max_vcpus:
 * vcpus, max_memory_bytes: memory_bytes, pods: 110, arch "amd64", os
 * "linux"). On failure *g is left for vmact_gapi_group_clear. */
int vmact_gapi_group_decode(const json_t *obj, struct vmact_gapi_group *g, struct vmact_err *err);
/* Frees the arrays (whoever filled them, with malloc). */
void vmact_gapi_group_clear(struct vmact_gapi_group *g);
/* The options object alone: also what vmact-groupd's configuration holds
 * (doc/cluster.md), so groupd reads its own configuration through it. */
int vmact_gapi_options_decode(const json_t *obj, struct vmact_gapi_options *o,
			      struct vmact_err *err);

/* {"groups": [G, ...]}: ids are unique (a duplicate is refused). */
struct vmact_gapi_groups {
	json_t *doc;
	size_t n;
	struct vmact_gapi_group *g;
};
json_t *vmact_gapi_groups_encode(const struct vmact_gapi_group *g, size_t n);
/* Takes a reference on doc; errors name the group ("groups[2].max: ...").
 * On failure *out is empty. */
int vmact_gapi_groups_decode(json_t *doc, struct vmact_gapi_groups *out, struct vmact_err *err);
void vmact_gapi_groups_clear(struct vmact_gapi_groups *s);

/* ---- a group's members: GET /v1/groups/{id}/nodes ---- */

enum vmact_gapi_node_state {
	VMACT_GAPI_NODE_CREATING,
	VMACT_GAPI_NODE_RUNNING,
	VMACT_GAPI_NODE_DELETING,
};
const char *vmact_gapi_node_state_name(enum vmact_gapi_node_state s);

/* A VM's last failure. */
#define VMACT_GAPI_CLASS_OUT_OF_RESOURCES "out-of-resources"
struct vmact_gapi_vm_error {
	const char *cls; /* "out-of-resources", "other"; "" when not said */
	const char *code;
	const char *message; /* "" when not said */
	double at;           /* Unix seconds; 0 when not said */
};

struct vmact_gapi_node {
	const char *provider_id;
	const char *name, *host; /* "" when not said */
	enum vmact_gapi_node_state state;
	const char *vm_state, *tier; /* informational; "" when not said */
	bool has_error;
	struct vmact_gapi_vm_error error;
};

/* {"nodes": [N, ...]}; required of each: provider_id (not empty), state,
 * and an error's code. */
struct vmact_gapi_nodes {
	json_t *doc;
	size_t n;
	struct vmact_gapi_node *v;
};
json_t *vmact_gapi_nodes_encode(const struct vmact_gapi_node *v, size_t n);
int vmact_gapi_nodes_decode(json_t *doc, struct vmact_gapi_nodes *out, struct vmact_err *err);
void vmact_gapi_nodes_clear(struct vmact_gapi_nodes *s);

/* ---- every VM: GET /v1/vms, /v1/groups/{id}/standby ---- */

struct vmact_gapi_vm {
	const char *provider_id, *name, *host, *group;
	const char *role;  /* "member", "pool" */
	const char *tier;  /* "running", "paused", "saved", "cold" */
	const char *state; /* doc/cluster.md's states */
	bool leased, busy;
	int32_t attempts;
	double created, booted, requested, in_service; /* Unix seconds, 0: not yet */
	bool has_error;
	struct vmact_gapi_vm_error error;
	bool configured; /* false: a group no longer configured */
};

/* {"vms": [V, ...]} and, from GET /v1/vms, "ready" (has_ready). */
struct vmact_gapi_vms {
	json_t *doc;
	size_t n;
	struct vmact_gapi_vm *v;
	bool has_ready, ready;
};
json_t *vmact_gapi_vms_encode(const struct vmact_gapi_vm *v, size_t n, const bool *ready);
int vmact_gapi_vms_decode(json_t *doc, struct vmact_gapi_vms *out, struct vmact_err *err);
void vmact_gapi_vms_clear(struct vmact_gapi_vms *s);

/* ---- hosts: GET /v1/hosts ---- */

struct vmact_gapi_res {
	int64_t milli_cpu, memory_bytes;
};

struct vmact_gapi_host {
	const char *name, *uri;
	bool reachable, scanned;
	bool libvirt_ok, arbiter_ok;
	const char *libvirt_error, *arbiter_error;
	int32_t vms, leases;
	/* the host's arbiter's ledger as last read */
	bool has_ledger;
	struct vmact_gapi_res capacity, watermark, reserved, pressure;
	int64_t arbiter_pods, arbiter_leases;
	struct vmact_gapi_res standby; /* what the standby VMs hold there */
	/* Out of placement, its opted-in VMs moving away; what relief or
	 * the drain does there ("" when nothing); the VMs that stay, with
	 * their reasons ("VM: reason; ..."). */
	bool draining;
	const char *relief, *unmovable;
};

struct vmact_gapi_hosts {
	json_t *doc;
	size_t n;
	struct vmact_gapi_host *v;
};
json_t *vmact_gapi_hosts_encode(const struct vmact_gapi_host *v, size_t n);
int vmact_gapi_hosts_decode(json_t *doc, struct vmact_gapi_hosts *out, struct vmact_err *err);
void vmact_gapi_hosts_clear(struct vmact_gapi_hosts *s);

/* ---- VMs waiting in Permit: GET /v1/waiting ---- */

struct vmact_gapi_waiting {
	const char *uid, *name, *group, *host;
	const char **pending; /* the placement plugins it waits on */
	size_t npending;
	double waited_s, timeout_s;
};

struct vmact_gapi_waitings {
	json_t *doc;
	size_t n;
	struct vmact_gapi_waiting *v;
};
/* (v[i].pending is the caller's.) */
json_t *vmact_gapi_waitings_encode(const struct vmact_gapi_waiting *v, size_t n);
int vmact_gapi_waitings_decode(json_t *doc, struct vmact_gapi_waitings *out, struct vmact_err *err);
void vmact_gapi_waitings_clear(struct vmact_gapi_waitings *s);

/* ---- live migration: POST /v1/vms/{name}/migrate, GET /v1/migrations ---- */

/* The request: {"to": host (optional: the best host), "force": bool
 * (optional: move a VM that has not opted in)}. */
struct vmact_gapi_migrate {
	const char *to; /* NULL: the best host */
	bool force;
};
json_t *vmact_gapi_migrate_encode(const struct vmact_gapi_migrate *m);
int vmact_gapi_migrate_decode(const json_t *doc, struct vmact_gapi_migrate *m,
			      struct vmact_err *err);
/* "/v1/hosts/NAME/drain" or ".../undrain" (malloc'd; NULL: out of memory). */
char *vmact_gapi_drain_path(const char *host, bool drain);
/* "/v1/vms/NAME/migrate", the name escaped (malloc'd; NULL: out of memory). */
char *vmact_gapi_migrate_path(const char *vm);

/* One move, in flight or ended (the answer to the request is the same
 * document, as accepted). */
struct vmact_gapi_migration {
	uint64_t id;
	const char *vm, *uuid, *from, *to;
	const char *reason;  /* "command", "pressure", "drain" */
	const char *why;     /* what chose it ("" for a command) */
	const char *phase;   /* planned, reserved, freezing, migrating, done, failed */
	const char *result;  /* "" in flight; "success", "failed" */
	const char *error;   /* "" unless failed */
	double started;      /* Unix seconds */
	double duration_s;   /* so far, or start to end */
	int64_t downtime_ms; /* as libvirt measured it; -1: not (yet) known */
};
json_t *vmact_gapi_migration_encode(const struct vmact_gapi_migration *m);
int vmact_gapi_migration_decode(const json_t *doc, struct vmact_gapi_migration *m,
				struct vmact_err *err);
struct vmact_gapi_migrations {
	json_t *doc;
	size_t n;
	struct vmact_gapi_migration *v;
};
/* {"migrations": [...]}: those in flight and the last ones ended. */
json_t *vmact_gapi_migrations_encode(const struct vmact_gapi_migration *v, size_t n);
int vmact_gapi_migrations_decode(json_t *doc, struct vmact_gapi_migrations *out,
				 struct vmact_err *err);
void vmact_gapi_migrations_clear(struct vmact_gapi_migrations *s);

/* ---- the changes: requests and answers ---- */

/* POST .../increase, .../decrease-target: {"delta": n} */
json_t *vmact_gapi_delta_encode(long long delta);
int vmact_gapi_delta_decode(const json_t *doc, long long *delta, struct vmact_err *err);

/* POST .../delete-nodes: {"provider_ids": [...]}, 1 to VMACT_GAPI_IDS_MAX;
 * *ids (malloc'd, its strings in doc) is the caller's to free. */
json_t *vmact_gapi_delete_nodes_encode(const char *const *ids, size_t n);
int vmact_gapi_delete_nodes_decode(const json_t *doc, const char ***ids, size_t *n,
				   struct vmact_err *err);

/* The answer of the three: {"target": t}, t in [0, 2^31). */
json_t *vmact_gapi_target_encode(int32_t target);
int vmact_gapi_target_decode(const json_t *doc, int32_t *target, struct vmact_err *err);

/* POST /v1/waiting/{uid}/allow [{"plugin": name}] and .../reject
 * [{"message": text}]: arg NULL for none (doc NULL: no body). */
json_t *vmact_gapi_verdict_encode(enum vmact_gapi_verdict v, const char *arg);
int vmact_gapi_verdict_decode(const json_t *doc, enum vmact_gapi_verdict v, const char **arg,
			      struct vmact_err *err);
/* Their answer: {"uid": uid, "done": "allow"|"reject"} */
json_t *vmact_gapi_verdict_done_encode(const char *uid, enum vmact_gapi_verdict v);
int vmact_gapi_verdict_done_decode(const json_t *doc, const char **uid, enum vmact_gapi_verdict *v,
				   struct vmact_err *err);

/* GET /v1/node-group?provider_id=...: {"id": group}, "" for none. */
json_t *vmact_gapi_node_group_encode(const char *id);
int vmact_gapi_node_group_decode(const json_t *doc, const char **id, struct vmact_err *err);

/* ---- the request ---- */

/* One request to vmact-groupd's socket (shared/http-call.c; any thread,
 * after curl_global_init). method "GET" or "POST" (body NULL for none);
 * path one of the above. On 2xx *out is the answer. Otherwise a negative
 * errno by vmact_gapi_reason_errno with "vmact-groupd: <its sentence>";
 * -EAGAIN also when vmact-groupd cannot be reached ("cannot reach
 * vmact-groupd at SOCKET: ..."), -ETIMEDOUT no answer within
 * timeout_usec, -EIO an answer that is not JSON. */
int vmact_gapi_call(const char *socket, const char *method, const char *path, const json_t *body,
		    uint64_t timeout_usec, json_t **out, struct vmact_err *err);
