/* SPDX-License-Identifier: Apache-2.0 */
/* The node-groups engine (prefix cl_engine_; doc/cluster.md): groups of
 * VMs across libvirt hosts, each with its members (the nodes of the group,
 * in service or on their way) and its standby pool in three tiers, placed
 * by the scheduling framework, all state in the VMs' libvirt metadata.
 *
 * It lives on one sd-event loop; everything that blocks (libvirt, the
 * arbiters) runs in jobs (cluster/engine/jobs.h). It never logs: what an
 * operator should hear of comes out through the event callback. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "base/error.h"
#include "cluster/config/config.h"
#include "cluster/engine/node-api.h"
#include "cluster/framework/framework.h"
#include "cluster/host/domxml.h"
#include "cluster/host/host.h"

struct cl_engine;

struct cl_engine_event {
	int priority;      /* syslog's: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */
	const char *group; /* NULL when about no group */
	const char *vm;    /* the domain's name, NULL when about no VM */
	const char *text;
};
typedef void cl_engine_event_fn(void *ud, const struct cl_engine_event *ev);

/* Takes cfg (it must outlive the engine). */
int cl_engine_new(sd_event *ev, const struct cl_config *cfg, struct cl_engine **out,
		  struct vmact_err *err);
void cl_engine_free(struct cl_engine *e);
/* Where the groups' node shapes are kept (doc/cluster.md, "The template
 * node"): dir/node-shapes.json, read now (what it says of a template no
 * longer configured is dropped) and written when they change. NULL or "":
 * not kept. Before cl_engine_start; -EINVAL for a file that is not one. */
int cl_engine_load_shapes(struct cl_engine *e, const char *dir, struct vmact_err *err);
void cl_engine_on_event(struct cl_engine *e, cl_engine_event_fn *fn, void *ud);

/* Finds the VMs on every host again (cl_engine_ready once all were
 * scanned or found unreachable), then runs the groups. */
int cl_engine_start(struct cl_engine *e, struct vmact_err *err);
bool cl_engine_ready(const struct cl_engine *e);
/* Stops starting work and waits for the jobs in flight (their VMs stay
 * as their metadata says: the next start-up continues). */
void cl_engine_stop(struct cl_engine *e);

/* ---- the API's operations (doc/cluster-api.md) ---- */

/* An answer: an HTTP status, and either the group's target (2xx) or a
 * reason ("not-found", "invalid", "out-of-range", "precondition",
 * "unavailable", "internal") with a sentence. */
struct cl_engine_move_view;
struct cl_engine_answer {
	unsigned status;
	unsigned target;
	const char *reason;
	char error[VMACT_ERR_MSG_MAX];
	/* cl_engine_migrate's 202: the move accepted (else NULL). */
	const struct cl_engine_move_view *move;
};
typedef void cl_engine_answer_fn(void *ud, struct cl_engine_answer *a);

/* Each answers through fn, at once or when what it changed is recorded
 * in libvirt. */
void cl_engine_increase(struct cl_engine *e, const char *group, long long delta,
			cl_engine_answer_fn *fn, void *ud);
void cl_engine_delete_nodes(struct cl_engine *e, const char *group, const char *const *ids,
			    size_t n, cl_engine_answer_fn *fn, void *ud);
void cl_engine_decrease(struct cl_engine *e, const char *group, long long delta,
			cl_engine_answer_fn *fn, void *ud);

/* ---- what there is (answered from memory) ---- */

struct cl_engine_tier_count {
	unsigned size;     /* configured */
	unsigned ready;    /* standby, healthy, in the tier */
	unsigned starting; /* on their way into it */
};

struct cl_engine_group_view {
	const struct cl_group_cfg *cfg;
	unsigned target; /* members not being deleted */
	unsigned in_service;
	struct cl_engine_tier_count tiers[3];
	/* What a node of the group reports to Kubernetes (doc/cluster.md,
	 * "The template node"): what the kubelet of node_reported_by
	 * reported, or (NULL) estimated from the template. */
	struct cl_node_report node;
	const char *node_reported_by;
};
/* -ENOENT */
int cl_engine_group(const struct cl_engine *e, const char *id, struct cl_engine_group_view *v);
size_t cl_engine_n_groups(const struct cl_engine *e);
void cl_engine_group_at(const struct cl_engine *e, size_t i, struct cl_engine_group_view *v);

struct cl_engine_vm_view {
	const char *group; /* NULL: a VM of a group no longer configured */
	const char *name, *uuid, *host;
	char provider_id[160];
	const struct cl_meta *meta;
	bool busy, placing, leased;
	bool want_delete, want_return; /* being deleted; being given back to the pool */
};
/* fn for each VM of group (NULL: all), members and standby. */
void cl_engine_each_vm(const struct cl_engine *e, const char *group,
		       void (*fn)(void *ud, const struct cl_engine_vm_view *v), void *ud);
/* The group of a providerID "libvirt://HOST/UUID": "" when not ours. */
const char *cl_engine_group_of(const struct cl_engine *e, const char *provider_id);

struct cl_engine_host_view {
	const char *name, *uri;
	bool scanned;             /* its VMs were found (after a start) */
	bool draining;            /* out of placement, its opted-in VMs moving away */
	const char *relief;       /* over its watermark or drained: what is done, "" */
	const char *unmovable;    /* "VM: reason; ..." of those that stay */
	struct cl_host_status st; /* libvirt, the arbiter, the last ledger */
	unsigned vms, leases;     /* ours on it; of them holding leases */
	struct vmact_resources standby;
};
size_t cl_engine_n_hosts(const struct cl_engine *e);
void cl_engine_host_at(struct cl_engine *e, size_t i, struct cl_engine_host_view *v);

/* Waiting VMs of every profile (the framework's Permit waits). */
void cl_engine_each_waiting(const struct cl_engine *e,
			    void (*fn)(void *ud, const struct cl_fw_waiting *w), void *ud);
/* 0, -ENOENT (no such waiting VM), -ESRCH (not waiting on plugin). */
int cl_engine_allow(struct cl_engine *e, const char *uid, const char *plugin);
int cl_engine_reject(struct cl_engine *e, const char *uid, const char *why);

/* ---- counters for the metrics ---- */

#define CL_ENGINE_HIST_BUCKETS 12
/* Seconds: a running standby VM takes well under one, a cold boot under
 * TCG tens. */
#define CL_ENGINE_HIST_BOUNDS                                     \
	{                                                         \
		0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300 \
	}
extern const double cl_engine_hist_bounds[CL_ENGINE_HIST_BUCKETS];

enum cl_engine_failure {
	CL_FAIL_BOOT_TIMEOUT,   /* not healthy within boot_timeout */
	CL_FAIL_UNHEALTHY,      /* a standby VM without a good check for healthy_timeout */
	CL_FAIL_BIND,           /* disk, define or start failed */
	CL_FAIL_CLAIM,          /* waking or telling a standby VM failed */
	CL_FAIL_NO_HOST,        /* no host fits a member */
	CL_FAIL_NOT_REGISTERED, /* a member in service without its Node in time */
	CL_N_FAILURES,
};
const char *cl_engine_failure_name(enum cl_engine_failure f);

struct cl_engine_group_counters {
	uint64_t boots;
	uint64_t returned; /* members given back to the pool unused */
	uint64_t failures[CL_N_FAILURES];
	/* increase -> in service, per tier the VM came from */
	uint64_t hist[CL_N_TIERS][CL_ENGINE_HIST_BUCKETS + 1];
	double hist_sum[CL_N_TIERS];
	uint64_t hist_count[CL_N_TIERS];
};
const struct cl_engine_group_counters *cl_engine_group_counters(const struct cl_engine *e,
								size_t i);
struct cl_engine_host_counters {
	uint64_t granted, refused, errors; /* Reserve at the host's arbiter */
};
const struct cl_engine_host_counters *cl_engine_host_counters(const struct cl_engine *e, size_t i);

/* ---- live migration (doc/cluster.md, "Live migration") ---- */

/* A move of a running VM to another host, in flight or ended. */
struct cl_engine_move_view {
	uint64_t id;
	const char *vm, *uuid, *from, *to;
	const char *reason; /* cl_engine_move_reason_name */
	const char *why;    /* what chose it ("" for a command) */
	const char *phase;  /* planned, reserved, freezing, migrating, done, failed */
	const char *result; /* "" in flight, "success", "failed" */
	const char *error;
	double started;      /* CLOCK_REALTIME s */
	double duration_s;   /* so far, or start to end */
	int64_t downtime_ms; /* libvirt's figure, -1 until known */
};

/* Moves the running domain vm (by name, on whichever host runs it) to
 * host to (NULL: the host the placement framework chooses among those
 * that take moved VMs),
 * live. Answers 202 with the move once it is planned (the VM found, its
 * target chosen); 404 not-found (no such VM running, no such host), 409
 * precondition (it has not opted in and force is not set, it is a node of
 * a group, it moves already, no host fits: each host's reason), 503
 * unavailable (its host cannot be reached). The move goes on after the
 * answer (cl_engine_each_move). */
void cl_engine_migrate(struct cl_engine *e, const char *vm, const char *to, bool force,
		       cl_engine_answer_fn *fn, void *ud);
/* Drains a host (drain): nothing new is placed or moved there, its
 * opted-in VMs are moved away one by one, its standby VMs given back; or
 * puts it back. Kept across restarts in the state directory. -ENOENT. */
int cl_engine_drain(struct cl_engine *e, const char *host, bool drain, struct vmact_err *err);
/* The drained hosts kept in the state directory (cl_engine_load_shapes
 * sets it; before cl_engine_start); -EINVAL for a file that is not one. */
int cl_engine_load_drained(struct cl_engine *e, struct vmact_err *err);
/* The moves in flight and the last CL_ENGINE_MOVES_KEPT ended, oldest
 * first. */
#define CL_ENGINE_MOVES_KEPT 64
void cl_engine_each_move(const struct cl_engine *e,
			 void (*fn)(void *ud, const struct cl_engine_move_view *m), void *ud);

enum cl_engine_move_result { CL_MOVE_SUCCESS, CL_MOVE_FAILED, CL_N_MOVE_RESULTS };
const char *cl_engine_move_result_name(enum cl_engine_move_result r);
/* Why a VM moves: an operator's command, its host over its watermark
 * (pressure relief), its host drained. */
enum cl_engine_move_reason { CL_MOVE_COMMAND, CL_MOVE_PRESSURE, CL_MOVE_DRAIN, CL_N_MOVE_REASONS };
/* "command", "pressure", "drain" */
const char *cl_engine_move_reason_name(enum cl_engine_move_reason r);
#define CL_ENGINE_DOWNTIME_BUCKETS 8
/* Seconds of a move's downtime: libvirt's default target is 0.3 s. */
#define CL_ENGINE_DOWNTIME_BOUNDS                         \
	{                                                 \
		0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5 \
	}
extern const double cl_engine_downtime_bounds[CL_ENGINE_DOWNTIME_BUCKETS];
struct cl_engine_move_counters {
	uint64_t total[CL_N_MOVE_REASONS][CL_N_MOVE_RESULTS];
	/* decision -> running on the target (successes), CL_ENGINE_HIST_BOUNDS */
	uint64_t hist[CL_N_MOVE_REASONS][CL_ENGINE_HIST_BUCKETS + 1];
	double hist_sum[CL_N_MOVE_REASONS];
	uint64_t hist_count[CL_N_MOVE_REASONS];
	uint64_t downtime[CL_ENGINE_DOWNTIME_BUCKETS + 1];
	double downtime_sum;
	uint64_t downtime_count;
};
const struct cl_engine_move_counters *cl_engine_move_counters(const struct cl_engine *e);
