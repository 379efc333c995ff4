/* SPDX-License-Identifier: Apache-2.0 */
/* The per-VM scaling state machine (doc/protocols.md, "Next actions"): given what is
 * known (usage, bounds, metrics, plugin permit, monitor approval, ongoing
 * requests, failures, denials), which of the four actions to start now and
 * how long to sleep before asking again.
 *
 *   upscale:   plugin request (permit) -> hotplug -> monitor notification
 *   downscale: monitor request (one CU per request) -> hotplug (unplug)
 *              -> plugin notification; without a monitor, where the host
 *              approves (act_state_set_host_approval): hotplug -> plugin
 *
 * Pure logic: no I/O, no clock of its own (`now` is the caller's monotonic
 * time in ns), and no allocation but the LFC windows' (a VM without LFC
 * metrics never has them: act_state_free releases them). The caller starts
 * the actions it is given, reports each start and result with the
 * act_state_* functions, and asks again after every report or when `wait`
 * elapses. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "actuator/policy/desired.h"

struct act_timing {
	int64_t plugin_request_tick;      /* scheduler.requestAtLeastEverySeconds (15 s) */
	int64_t plugin_tick_jitter;       /* subtracted from the tick; Go draws 0-99 ms per VM */
	int64_t plugin_retry_wait;        /* scheduler.retryFailedRequestSeconds (3 s) */
	int64_t plugin_denied_retry_wait; /* scheduler.retryDeniedUpscaleSeconds (2 s) */
	int64_t hotplug_retry_wait;       /* neonvm.retryFailedRequestSeconds (5 s) */
	int64_t monitor_denied_downscale_cooldown; /* monitor.retryDeniedDownscaleSeconds (5 s) */
	int64_t monitor_requested_upscale_valid;   /* monitor.requestedUpscaleValidSeconds (10 s) */
	int64_t monitor_retry_wait;                /* monitor.retryFailedRequestSeconds (3 s) */
};

/* The agent defaults of doc/protocols.md, "Agent timing defaults", jitter 0. */
void act_timing_defaults(struct act_timing *t);
/* Go's jitter: a whole number of milliseconds in [0, 100) from a random
 * value the caller draws once per VM. */
int64_t act_plugin_jitter(uint32_t random_value);

#define ACT_LFC_MAX_WINDOWS 1440

enum act_monitor_kind { ACT_MONITOR_NONE, ACT_MONITOR_UPSCALE, ACT_MONITOR_DOWNSCALE };

struct act_state {
	struct act_timing timing;
	struct vmact_resources cu;
	struct ag_scaling_config config; /* effective (defaults + VM overrides) */

	/* VM: using changes only when a hotplug succeeds (Go quirk kept: later
	 * VM updates bring new bounds, never a new usage). */
	struct vmact_resources using_, min, max;

	/* The reactive CPU policy's goal (milli-CPU); without it the goal CUs
	 * size the CPU too (the Neon policy). */
	bool has_cpu_goal;
	uint32_t cpu_goal_milli;
	/* The memory the host's own evidence asks for (a VM without a
	 * monitor, actuator/policy/mem-demand.h); without it the goal CUs
	 * size memory. */
	bool has_mem_goal;
	uint64_t mem_goal_bytes;
	/* No vm-monitor or informant to ask (doc/policy.md, "Without an
	 * agent"): a shrink of the CPU or memory needs no approval, down to
	 * min. With a monitor endpoint, false: its approval, as Neon's. */
	struct {
		bool cpu, mem;
	} host_approves;

	bool has_system;
	struct act_system_metrics system;
	bool has_lfc;
	size_t lfc_n;
	/* lfc_n windows (room for lfc_cap), allocated by the first LFC reading
	 * that has any: only a VM with an LFC metrics endpoint has them, and
	 * ACT_LFC_MAX_WINDOWS of them would be 11.5 KiB in every VM's state
	 * (doc/actuation.md, "vmactd's own footprint"). NULL while lfc_n is 0. */
	double *lfc_pages;
	size_t lfc_cap;

	struct {
		bool ongoing;
		bool has_last_request;
		act_time_t last_request_at;
		struct vmact_resources last_request;
		bool has_failure;
		act_time_t failure_at;
		bool has_permit;
		struct vmact_resources permit;
		/* When the scheduler last said it freed room (0: never; only
		 * vmactd's embedded arbiter says so, doc/policy.md): a request
		 * it denied before then is asked again at once rather than
		 * after plugin_denied_retry_wait. */
		act_time_t room_at;
	} plugin;

	struct {
		bool active; /* connected; approved is meaningful */
		struct vmact_resources approved;
		enum act_monitor_kind ongoing;
		struct vmact_resources ongoing_target;
		bool has_requested_upscale;
		struct act_requested_upscale requested_upscale;
		bool has_denied;
		struct act_denied_downscale denied;
		bool has_downscale_failure;
		act_time_t downscale_failure_at;
		bool has_upscale_failure;
		act_time_t upscale_failure_at;
	} monitor;

	struct {
		bool ongoing;
		struct vmact_resources ongoing_target;
		bool has_failure;
		act_time_t failure_at;
	} hotplug;
};

struct act_res_change {
	struct vmact_resources current, target;
};

struct act_actions {
	bool has_wait;
	int64_t wait; /* ns until the next evaluation is due */

	bool has_plugin;
	struct {
		bool has_last_permit; /* false: "lastPermit": null */
		struct vmact_resources last_permit;
		struct vmact_resources target;
		bool has_metrics;
		double load_avg_1m;
	} plugin;

	bool has_hotplug; /* Neon's "NeonVM request" */
	struct act_res_change hotplug;
	bool has_monitor_upscale;
	struct act_res_change monitor_upscale;
	bool has_monitor_downscale;
	struct act_res_change monitor_downscale;

	struct vmact_resources desired;
	struct act_warnings warnings;
};

/* Starts with nothing known about plugin, monitor or metrics. -EINVAL if
 * the bounds, compute unit or config are unusable. s is not initialised
 * yet (or was freed): what it held is not released. */
int act_state_init(struct act_state *s, const struct act_timing *timing,
		   const struct vmact_resources *cu, const struct ag_scaling_config *config,
		   const struct vmact_resources *using_, const struct vmact_resources *min,
		   const struct vmact_resources *max, struct vmact_err *err);

/* Releases what s holds (the LFC windows); s can be initialised again. */
void act_state_free(struct act_state *s);

/* New bounds/config from a VM update. Usage is kept (see above). Disabling
 * LFC metrics drops the stored ones. */
int act_state_update_vm(struct act_state *s, const struct vmact_resources *min,
			const struct vmact_resources *max, const struct ag_scaling_config *config,
			struct vmact_err *err);

/* Sets (or, with has = false, drops) vmact's own CPU goal. */
void act_state_update_cpu_goal(struct act_state *s, bool has, uint32_t milli);
/* Sets (or drops) the memory goal from the host's evidence. */
void act_state_update_mem_goal(struct act_state *s, bool has, uint64_t bytes);
/* Whether a shrink of the CPU, of memory, is the host's own decision (the
 * VM has no approver). */
void act_state_set_host_approval(struct act_state *s, bool cpu, bool mem);

int act_state_update_system_metrics(struct act_state *s, const struct act_system_metrics *m,
				    struct vmact_err *err);
/* -ENOMEM (the state unchanged) when the windows cannot be stored. */
int act_state_update_lfc_metrics(struct act_state *s, const double *pages, size_t n,
				 struct vmact_err *err);

/* The decision. Fails only on a state that cannot happen through the
 * functions below (it is where the Go agent panics). */
int act_next_actions(const struct act_state *s, act_time_t now, struct act_actions *out,
		     struct vmact_err *err);

/* Plugin. */
int act_plugin_starting(struct act_state *s, act_time_t now, const struct vmact_resources *target,
			struct vmact_err *err);
void act_plugin_failed(struct act_state *s, act_time_t now);
/* Validates the permit as the agent does (no zero field, nothing above the
 * request, nothing below usage); an invalid permit counts as a failure and
 * returns -EPROTO with the reason. */
int act_plugin_response(struct act_state *s, act_time_t now, const struct vmact_resources *permit,
			struct vmact_err *err);

/* The lowest a hotplug may go now: the monitor's approval, min where the
 * host approves, else what the VM has. */
struct vmact_resources act_hotplug_lower(const struct act_state *s);

/* Hotplug (the local counterpart of the NeonVM patch). */
int act_hotplug_starting(struct act_state *s, act_time_t now, const struct vmact_resources *target,
			 struct vmact_err *err);
void act_hotplug_failed(struct act_state *s, act_time_t now);
/* The local hotplug ended, fully or partly: using := what the VM has now,
 * re-read after the operation (vmactd's executor), which may differ from
 * the target (a partial unplug, rounding to blocks). failed also starts the
 * retry backoff. Unlike NeonVM's patch, the result is known, so the core
 * never believes in resources the VM does not have. */
int act_hotplug_finished(struct act_state *s, act_time_t now,
			 const struct vmact_resources *achieved, bool failed,
			 struct vmact_err *err);

/* vm-monitor. connected: approved := using. reset: forget everything
 * (disconnect / reconnect). */
void act_monitor_connected(struct act_state *s);
void act_monitor_reset(struct act_state *s);
int act_monitor_upscale_requested(struct act_state *s, act_time_t now, bool cpu, bool mem,
				  struct vmact_err *err);
int act_monitor_upscale_starting(struct act_state *s, act_time_t now,
				 const struct vmact_resources *target, struct vmact_err *err);
int act_monitor_upscale_ok(struct act_state *s, act_time_t now, struct vmact_err *err);
void act_monitor_upscale_failed(struct act_state *s, act_time_t now);
int act_monitor_downscale_starting(struct act_state *s, act_time_t now,
				   const struct vmact_resources *target, struct vmact_err *err);
int act_monitor_downscale_ok(struct act_state *s, act_time_t now, struct vmact_err *err);
int act_monitor_downscale_denied(struct act_state *s, act_time_t now, struct vmact_err *err);
void act_monitor_downscale_failed(struct act_state *s, act_time_t now);
