/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduling framework that places a new VM on a host (prefix cl_fw_;
 * doc/cluster.md, "Placement"). It follows the Kubernetes scheduling
 * framework's extension points and status codes, with a VM for the pod
 * and a libvirt host for the node:
 *
 *   the queue
 *     QueueSort   at most one plugin: the order in which VMs waiting for a
 *                 host get their scheduling cycles (without one: as they
 *                 came)
 *   scheduling cycle (the engine runs new VMs' cycles one at a time on a
 *   one-thread job pool; a running VM's move runs its cycle on the job
 *   that plans the move, beside them: plugins are safe for that)
 *     PreFilter   every plugin; anything but Success ends the cycle
 *     Filter      per host, plugins in order, the first non-Success
 *                 excludes the host
 *     PostFilter  only when no host passed: the first plugin that answers
 *                 Success nominates a host (where the pool would give back
 *                 standby VMs); the cycle still ends Unschedulable
 *     Score       per plugin and host, then that plugin's NormalizeScore
 *                 to [0, 100], times its weight, summed; the highest total
 *                 wins, one of the best at random on a tie
 *     Reserve     plugins in order; the first failure stops them
 *                 (Unreserve)
 *     Permit      Success, Wait with a timeout, or anything else (denied:
 *                 Unreserve); with a Wait the VM waits until every waiting
 *                 plugin allowed it, one rejects it or the shortest timeout
 *                 passes (a reject: Unreserve)
 *   binding cycle (a job thread, VMs side by side)
 *     PreBind     plugins in order; the first non-Success fails the bind
 *                 (Unreserve)
 *     Bind        plugins in order, the first that does not answer Skip
 *                 decides; all skipping is an Error; a failure: Unreserve
 *     PostBind    after a successful bind, every plugin (informational)
 *
 * Unreserve is the Kubernetes framework's RunUnreservePlugins: it runs the Unreserve of
 * every Reserve plugin, in reverse order, whichever of them reserved
 * (those after a failing one and the failing one too), so Unreserve must
 * be idempotent and cope with a Reserve that did not happen. It runs once
 * for a VM whose Reserve, Permit, PreBind or Bind failed.
 *
 * The cycle state is shared by the plugins of one VM's cycles (scheduling
 * and binding) and protects nothing between them: plugins are trusted.
 * Waiting VMs are kept by the framework (below).
 *
 * The framework itself does no I/O: plugins do (the arbiter, libvirt). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/resources.h"

enum cl_fw_code {
	CL_FW_SUCCESS = 0,
	CL_FW_ERROR,         /* a plugin's internal failure */
	CL_FW_UNSCHEDULABLE, /* does not fit now; PostFilter may help */
	CL_FW_UNRESOLVABLE,  /* UnschedulableAndUnresolvable: nothing helps */
	CL_FW_WAIT,          /* Permit only */
	CL_FW_SKIP,          /* Bind only: not handled by this plugin */
};
/* "Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable",
 * "Wait", "Skip". */
const char *cl_fw_code_name(enum cl_fw_code c);

#define CL_FW_NAME_MAX    64
#define CL_FW_MSG_MAX     256
#define CL_FW_MAX_HOSTS   64
#define CL_FW_MAX_PLUGINS 16 /* per extension point */
#define CL_FW_MIN_SCORE   0
#define CL_FW_MAX_SCORE   100

struct cl_fw_status {
	enum cl_fw_code code;
	char plugin[CL_FW_NAME_MAX]; /* who decided; "" for the framework */
	char msg[CL_FW_MSG_MAX];
};
void cl_fw_status_set(struct cl_fw_status *st, enum cl_fw_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The VM being placed (the framework's pod). */
struct cl_fw_vm {
	char uid[40];              /* the domain's UUID */
	char name[CL_FW_NAME_MAX]; /* the domain's name */
	char group[CL_FW_NAME_MAX];
	bool standby;                /* a pool refill, not a member */
	struct vmact_resources size; /* what it reserves */
	/* Hosts the group may use (names), and where its definition is now
	 * (a placeholder, "" when none). */
	const char *const *group_hosts;
	size_t n_group_hosts;
	char defined_on[CL_FW_NAME_MAX];
	const void *spec; /* the engine's: what Bind builds (cluster/engine/engine.h) */
	/* A running VM being moved (live migration) rather than a new one:
	 * group is "", group_hosts lists the hosts that take moved VMs; it is
	 * only scheduled and reserved, never bound. */
	bool moving;
	/* Its entry at the arbiters, when not the plugins' default key for
	 * name (its <vmact:pod>): NULL for a new VM. */
	const char *pod_ns, *pod_name;
};

/* A host as the cycle sees it (the framework's NodeInfo): taken once
 * before the cycle, from the host's arbiter and the engine's records. */
struct cl_fw_host {
	char name[CL_FW_NAME_MAX];
	bool reachable;
	bool drained;            /* taken out of placement by its operator */
	char why[CL_FW_MSG_MAX]; /* when unreachable, or no ledger */
	bool ledger;             /* its arbiter answered */
	struct vmact_resources total, watermark, reserved, pressure;
	struct vmact_resources standby; /* held by standby VMs on it */
	unsigned standby_vms;
	unsigned group_vms; /* VMs of the group placed here */
};

/* ---- cycle state ---- */

struct cl_fw_cycle;
int cl_fw_cycle_new(struct cl_fw_cycle **out);
void cl_fw_cycle_free(struct cl_fw_cycle *cs);
/* Stores data under key (a copy of the key is kept); data is freed with
 * free_fn (may be NULL) when replaced, deleted or the state goes. -ENOMEM. */
int cl_fw_cycle_write(struct cl_fw_cycle *cs, const char *key, void *data, void (*free_fn)(void *));
/* NULL when absent. */
void *cl_fw_cycle_read(const struct cl_fw_cycle *cs, const char *key);
void cl_fw_cycle_delete(struct cl_fw_cycle *cs, const char *key);

/* ---- plugins ---- */

struct cl_fw;

/* What plugins are given at init (the FrameworkHandle): the engine's
 * part, and the framework itself (fw, set by cl_fw_new), through which a
 * plugin reaches the waiting VMs: cl_fw_waiting_each, cl_fw_waiting_get,
 * cl_fw_allow, cl_fw_reject (below), from any of its methods. */
struct cl_fw_handle {
	void *ud;
	/* The host called name (struct cl_host *), NULL when unknown. */
	void *(*host)(void *ud, const char *name);
	/* Configuration defaults plugins may read (lease length). */
	uint64_t lease_usec;
	struct cl_fw *fw;
};

/* A VM waiting to be placed, as QueueSort sees it (Kubernetes' PodInfo). */
struct cl_fw_queued {
	const struct cl_fw_vm *vm;
	uint64_t queued_usec; /* since when it waits for a host (CLOCK_MONOTONIC) */
	void *ud;             /* the caller's */
};

/* Methods a plugin has (NULL: not at that extension point). Every method
 * sets *st (it starts as Success with the plugin's name). */
struct cl_fw_plugin_ops {
	const char *name;
	/* args: the plugin's pluginConfig args (NULL: none); h is NULL when
	 * the configuration is only being checked. */
	int (*init)(const struct cl_fw_handle *h, const json_t *args, void **state,
		    struct vmact_err *err);
	void (*fini)(void *state);
	void (*pre_filter)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			   struct cl_fw_status *st);
	void (*filter)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		       const struct cl_fw_host *host, struct cl_fw_status *st);
	/* statuses[i] is what Filter said of hosts[i]; on Success, nominated
	 * names the host that would fit. */
	void (*post_filter)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			    const struct cl_fw_host *hosts, size_t n,
			    const struct cl_fw_status *statuses, char nominated[CL_FW_NAME_MAX],
			    struct cl_fw_status *st);
	void (*score)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		      const struct cl_fw_host *host, int64_t *score, struct cl_fw_status *st);
	/* The plugin's scores of the feasible hosts, in place. */
	void (*normalize)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			  int64_t *scores, size_t n, struct cl_fw_status *st);
	void (*reserve)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			const struct cl_fw_host *host, struct cl_fw_status *st);
	void (*unreserve)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			  const char *host);
	/* Wait: *timeout_usec says how long at most. */
	void (*permit)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm, const char *host,
		       uint64_t *timeout_usec, struct cl_fw_status *st);
	void (*pre_bind)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			 const char *host, struct cl_fw_status *st);
	void (*bind)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm, const char *host,
		     struct cl_fw_status *st);
	void (*post_bind)(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			  const char *host);
	/* QueueSort: a goes before b. */
	bool (*less)(void *p, const struct cl_fw_queued *a, const struct cl_fw_queued *b);
};

/* An init for plugins that take no args and keep only the handle (their
 * state is a copy of it, freed with free()). */
int cl_fw_init_handle_only(const struct cl_fw_handle *h, const json_t *args, void **state,
			   struct vmact_err *err);

/* The plugins a framework may enable, NULL-terminated. */
struct cl_fw_plugin_table {
	const struct cl_fw_plugin_ops *const *plugins;
};

enum cl_fw_point {
	CL_FW_QUEUE_SORT, /* at most one plugin */
	CL_FW_PRE_FILTER,
	CL_FW_FILTER,
	CL_FW_POST_FILTER,
	CL_FW_SCORE,
	CL_FW_RESERVE,
	CL_FW_PERMIT,
	CL_FW_PRE_BIND,
	CL_FW_BIND,
	CL_FW_POST_BIND,
	CL_FW_N_POINTS,
};
/* The configuration's names: "preFilter", "filter", ... */
const char *cl_fw_point_name(enum cl_fw_point p);

/* The plugins enabled when a profile says nothing of an extension point
 * (KubeSchedulerConfiguration's defaults): "enabled" adds to them,
 * "disabled" removes them ("*": all). Names, NULL-terminated per point. */
struct cl_fw_defaults {
	const char *const *points[CL_FW_N_POINTS];
};

/* ---- the framework ---- */

/* Builds a framework from one profile of the configuration:
 *   {"schedulerName": "default",
 *    "plugins": {"filter": {"enabled": [{"name": "X"}], "disabled": [{"name": "*"}]},
 *                "score": {"enabled": [{"name": "Y", "weight": 2}]}, ...},
 *    "pluginConfig": [{"name": "X", "args": {...}}]}
 * (profile NULL: the defaults). Errors name the key under `path`
 * ("scheduler.profiles[0]"). h NULL: only checks the profile. */
int cl_fw_new(const struct cl_fw_plugin_table *table, const struct cl_fw_defaults *defaults,
	      const json_t *profile, const char *path, const struct cl_fw_handle *h,
	      struct cl_fw **out, struct vmact_err *err);
void cl_fw_free(struct cl_fw *fw);
const char *cl_fw_scheduler_name(const struct cl_fw *fw);
/* The enabled plugins of a point, in order; their count. */
size_t cl_fw_plugins(const struct cl_fw *fw, enum cl_fw_point p, const char **names, size_t max);

struct cl_fw_result {
	/* Success: reserved on host and permitted; Wait: reserved on host,
	 * waiting (register it with cl_fw_wait); otherwise the cycle ended
	 * with nothing reserved. */
	struct cl_fw_status status;
	char host[CL_FW_NAME_MAX];
	char nominated[CL_FW_NAME_MAX]; /* PostFilter's, on Unschedulable */
	size_t n_hosts, feasible;
	struct {
		char name[CL_FW_NAME_MAX];
		struct cl_fw_status filter; /* why it was excluded */
		int64_t score;              /* weighted total when feasible */
	} hosts[CL_FW_MAX_HOSTS];
	/* On Wait: the shortest timeout and the plugins that asked. */
	uint64_t wait_usec;
	size_t n_waiting;
	char waiting[CL_FW_MAX_PLUGINS][CL_FW_NAME_MAX];
};

/* Orders the VMs waiting for a host with the QueueSort plugin (a stable
 * sort; without one, the order stays). */
void cl_fw_queue_sort(struct cl_fw *fw, struct cl_fw_queued *q, size_t n);

/* Hosts whose weighted scores tie for the highest: one of them at random
 * (as the Kubernetes scheduler picks among equal scores). seed 0: from
 * getrandom, which cl_fw_new does; tests set their own. */
void cl_fw_seed(struct cl_fw *fw, uint64_t seed);

/* One scheduling cycle for vm over hosts[0..n) (n <= CL_FW_MAX_HOSTS). */
void cl_fw_schedule(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		    const struct cl_fw_host *hosts, size_t n, struct cl_fw_result *res);

/* The binding cycle: PreBind plugins, then Bind plugins, then (on
 * success) PostBind plugins; st says how it went (Error when every bind
 * plugin skipped). The caller runs cl_fw_unreserve on failure. */
void cl_fw_bind(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		const char *host, struct cl_fw_status *st);

/* Unreserve of every Reserve plugin, in reverse order (above). */
void cl_fw_unreserve(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		     const char *host);

/* ---- waiting VMs ----
 *
 * Kept by the framework under a lock of its own: the engine registers
 * them (on its loop, once a scheduling cycle answered Wait), plugins reach
 * them through their handle from the scheduler's thread (a Permit plugin
 * allowing the VMs a new one completes), operators through the API. A VM
 * that waits no more (allowed by every plugin it waited on, or rejected)
 * leaves the map for the resolved list, which the engine takes on its
 * loop (cl_fw_take_resolved) to bind or un-place it. */

struct cl_fw_waiting {
	char uid[40];
	char name[CL_FW_NAME_MAX];
	char group[CL_FW_NAME_MAX];
	char host[CL_FW_NAME_MAX];
	uint64_t since_usec, deadline_usec; /* CLOCK_MONOTONIC */
	size_t n_pending;
	char pending[CL_FW_MAX_PLUGINS][CL_FW_NAME_MAX];
};

/* Registers a VM whose Permit answered Wait (res from cl_fw_schedule);
 * -EEXIST when its uid already waits, -ENOMEM. */
int cl_fw_wait(struct cl_fw *fw, const struct cl_fw_vm *vm, const struct cl_fw_result *res,
	       uint64_t now_usec);
/* Calls fn for each waiting VM, oldest first, under the lock: fn must not
 * allow or reject (collect the uids, then act). */
void cl_fw_waiting_each(struct cl_fw *fw, void (*fn)(void *ud, const struct cl_fw_waiting *w),
			void *ud);
size_t cl_fw_waiting_count(struct cl_fw *fw);
/* A copy of the waiting VM uid (Kubernetes' GetWaitingPod); 0 or -ENOENT. */
int cl_fw_waiting_get(struct cl_fw *fw, const char *uid, struct cl_fw_waiting *out);
/* Allows the VM for plugin (NULL: for every plugin it waits on). 1 when it
 * waits no more (it goes to the resolved list, allowed: bind it), 0 when
 * other plugins still hold it, -ENOENT when it does not wait, -ESRCH when
 * it does not wait on that plugin. */
int cl_fw_allow(struct cl_fw *fw, const char *uid, const char *plugin);
/* Rejects the waiting VM (to the resolved list, rejected with msg:
 * unreserve it). 0 or -ENOENT. */
int cl_fw_reject(struct cl_fw *fw, const char *uid, const char *msg);
/* Takes the VMs that waited and wait no more, in the order they were
 * resolved: fn(ud, w, allowed, msg) for each (msg: the rejection's). */
size_t cl_fw_take_resolved(struct cl_fw *fw,
			   void (*fn)(void *ud, const struct cl_fw_waiting *w, bool allowed,
				      const char *msg),
			   void *ud);
/* The earliest deadline of the waiting VMs, 0 when none. */
uint64_t cl_fw_next_deadline(struct cl_fw *fw);
/* Removes the VMs whose deadline passed, calling fn for each (the engine
 * unreserves them); returns how many. */
size_t cl_fw_expire(struct cl_fw *fw, uint64_t now_usec,
		    void (*fn)(void *ud, const struct cl_fw_waiting *w), void *ud);
