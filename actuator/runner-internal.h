/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's state, shared by its files (not part of its interface):
 *   runner.c          decision loop, approver glue and lifecycle
 *   runner-plugin.c   the scheduler (plugin) requests
 *   runner-hotplug.c  carrying out a plan (quota, vCPUs, memory)
 *   runner-metrics.c  the periodic load and memory readings
 *   runner-api.c      the neonvm-runner CPU API of a <vmact:runner> VM */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuator/approver.h"
#include "actuator/cpu-demand.h"
#include "actuator/events.h"
#include "actuator/metrics.h"
#include "actuator/runner.h"

struct net_http_client;
struct ag_plugin_client;
struct ag_exporter_scrape;
struct act_gm_proxy;
struct net_http_server;

/* One of the guest's metrics endpoints (<vmact:metrics>), scraped on the
 * loop. */
struct act_guest_ep {
	char url[600];                 /* "" when the VM names none */
	sd_event_source *timer;
	struct ag_exporter_scrape *scrape; /* the one in flight, or the last */
	int last_error;                /* 0: working (or never failed) */
	long last_status;
};

struct act_runner {
	struct act_runner_env *env;
	char name[HP_NAME_MAX];
	char uuid[HP_UUID_LEN];
	struct hp_meta meta;
	struct act_state st;

	char *group;            /* cpu cgroup of the whole VM */
	pid_t pid;
	uint32_t quota_milli;   /* last quota written (0 = none yet) */
	bool sampler_registered;
	bool mem_absent_logged, load_error_logged;
	/* Said once: the sampler's thread table was full for this VM. */
	bool untracked_logged;

	sd_event_source *wake, *metrics;

	/* The reactive CPU policy (cpu-demand.h), fed every policy tick
	 * with the vCPU threads' totals since the previous one. */
	struct act_cpu_policy cpu_policy;
	struct act_cpu_demand demand;
	bool have_vcpu_totals;
	uint64_t vcpu_runnable_ns, vcpu_delay_ns;
	enum act_cpu_class last_cls;
	uint64_t ticks;             /* memory is read every metrics interval */

	/* The guest's own figures (<vmact:metrics>): the system exporter's
	 * replace the host-side load averages and balloon statistics while
	 * they are fresh; a failed scrape drops them. */
	struct act_guest_ep guest_sys, guest_lfc;
	bool has_guest;
	struct act_system_metrics guest;
	/* They are scraped by the VM's metrics worker (doc/privsep.md);
	 * NULL: in vmactd (guest_worker.enabled false). */
	struct act_gm_proxy *gm_proxy;

	struct net_http_client *http;
	struct ag_plugin_client *plugin;
	bool plugin_busy;

	/* The vm-monitor or the informant; NULL: scaled up only. */
	struct act_approver *approver;
	bool approver_busy;  /* an upscale notification or downscale request is pending */
	bool held_logged;    /* "holding a resize" said since the approver last changed */

	/* The hotplug in progress: its plan, the step being done. */
	bool hp_busy;
	struct act_plan plan;
	unsigned step;
	bool dimm_attach; /* the DIMM step grows */
	bool hp_failed;
	bool have_state;
	struct hp_state hp_state; /* re-read after the last operation */
	char hp_error[VMACT_ERR_MSG_MAX];
	char last_hp_error[VMACT_ERR_MSG_MAX];
	/* The guest kept memory it was asked to give back (-EBUSY from the
	 * memory step): no memory shrink is planned before mem_hold_until;
	 * the hold doubles with each refusal in a row (README "Reliability
	 * and security"). */
	bool mem_refused;
	act_time_t mem_hold_until;
	unsigned mem_hold_s;

	unsigned last_warn_hash;
	bool freeing;

	/* <vmact:runner>: the VM is sized through the neonvm-runner CPU API
	 * (runner-api.c, doc/runner-api.md). vmact is only its hardware side:
	 * no decision loop, no readings, no scheduler or approver. */
	bool api_vm;
	struct net_http_server *api;
	bool hp_api;       /* the hotplug in progress is the API's */
	bool api_pending;  /* a change came during it: api_want is next */
	uint32_t api_want; /* the last change accepted, milli-CPUs */
	char api_last_refusal[VMACT_ERR_MSG_MAX + 64]; /* logged at info once */
	/* What the metrics page shows (doc/metrics.md; runner-export.c):
	 * the last desired size and CPU decision, the start of each request
	 * in flight for its latency, and the vCPU threads' totals kept
	 * monotonic across threads that end. */
	bool has_desired, has_dec;
	struct vmact_resources desired;
	struct act_cpu_decision dec;
	act_time_t plugin_t0, approver_t0, hp_t0;
	enum act_metric_direction plugin_dir, approver_dir, hp_dir;
	struct vmact_resources hp_from;
	uint64_t thr_seen_delay, thr_seen_oncpu, thr_delay, thr_oncpu;
	/* For the control API (runner-view.c): the last decision's reason
	 * and the last change. */
	char last_reason[ACT_EVENT_TEXT_MAX];
	uint64_t last_change_usec; /* CLOCK_REALTIME; 0: none yet */
	char last_change[ACT_EVENT_TEXT_MAX];
};

/* runner.c */
act_time_t act_runner_now_ns(struct act_runner *r);
/* A guest that kept its memory (runner-hotplug.c): the next hold, 60 s
 * doubling to 960 s; and target's memory kept at using_'s while now is
 * before until (true when it was held). */
unsigned act_runner_mem_hold_next(unsigned prev_s);
bool act_runner_mem_held(struct vmact_resources *target, const struct vmact_resources *using_,
			 act_time_t now, act_time_t until);
void act_runner_fmt_res(char *buf, size_t len, struct vmact_resources x);
/* Asks the core for the next actions and starts them. */
void act_runner_evaluate(struct act_runner *r);
/* Writes the VM's CFS quota for `milli` milli-CPUs. */
int act_runner_write_quota(struct act_runner *r, uint32_t milli, struct vmact_err *err);

/* runner-view.c: records a finished resize to `what` as the last change,
 * with the last decision's reason. */
void act_runner_note_change(struct act_runner *r, const char *what);

/* runner-plugin.c */
int act_runner_plugin_setup(struct act_runner *r, struct vmact_err *err);
void act_runner_plugin_start(struct act_runner *r, const struct act_actions *a);
void act_runner_plugin_free(struct act_runner *r);

/* runner-hotplug.c */
void act_runner_hotplug_start(struct act_runner *r, const struct act_actions *a);
/* The runner API's change: resizes the VM's CPU to `milli` (checked by
 * the caller against its bounds), its memory left as it is; queued (the
 * latest wins) while a resize runs. Errors: the state cannot be read or
 * no plan reaches it. */
int act_runner_cpu_resize(struct act_runner *r, uint32_t milli, struct vmact_err *err);

/* runner-api.c */
int act_runner_api_start(struct act_runner *r, struct vmact_err *err);
void act_runner_api_free(struct act_runner *r);

/* runner-export.c: the metrics hooks, each one call where it happens */
void act_runner_note_desired(struct act_runner *r, const struct vmact_resources *desired);
void act_runner_note_demand(struct act_runner *r, const struct act_cpu_decision *dec);
void act_runner_note_plugin_start(struct act_runner *r, const struct vmact_resources *target);
void act_runner_note_plugin_done(struct act_runner *r, bool failed);
/* up: an upscale notification; else a downscale request. */
void act_runner_note_approver_start(struct act_runner *r, bool up);
void act_runner_note_approver_done(struct act_runner *r, bool failed);
void act_runner_note_hotplug_start(struct act_runner *r);
/* Before the core takes `got` as the VM's size. */
void act_runner_note_hotplug_done(struct act_runner *r, const struct vmact_resources *got,
				  bool failed);
void act_runner_note_failure(struct act_runner *r, enum act_metric_failure kind);

/* runner-metrics.c */
int act_runner_metrics_start(struct act_runner *r, struct vmact_err *err);
void act_runner_metrics_free(struct act_runner *r);
/* The policies in effect for this VM: its <vmact:policy>, else the host's. */
enum act_cpu_policy_mode act_runner_cpu_policy(const struct act_runner *r);
enum act_cpu_shrink_mode act_runner_cpu_shrink(const struct act_runner *r);
