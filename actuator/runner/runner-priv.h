/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's state, shared by its files and private to them (the rest
 * of vmactd uses runner.h):
 *   runner.c      the core: decision loop, approver glue and lifecycle
 *   plugin.c      the scheduler (plugin) requests
 *   resize.c      carrying out a plan (quota, vCPUs, memory)
 *   readings.c    the periodic load and memory readings
 *   neonvm-api.c  the neonvm-runner CPU API of a <vmact:runner> VM
 *   informant.c   a legacy informant's approver, drained on free
 *   export.c      what the metrics page shows of the runner
 *   view.c        what the control API shows of it
 *   memory.c      the memory of a VM without an approver (host evidence)
 *   state.c       what every concern reads or does to the core's state
 * runner.c calls the concerns; they report back through r->core and call
 * only state.c, export.c and view.c (tests/checks/check-cycles.sh). */
#pragma once

/* Like libvirt's *priv.h: a file outside actuator/runner/ (or its unit
 * test) that includes this has made a mistake the compiler should catch. */
#ifndef ACT_RUNNER_PRIV_ALLOW
#error "runner-priv.h is private to actuator/runner/: include actuator/runner/runner.h"
#endif

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuator/control/events.h"
#include "actuator/metrics/metrics.h"
#include "actuator/policy/cpu-demand.h"
#include "actuator/policy/mem-demand.h"
#include "actuator/runner/runner.h"
#include "bpf/sampler.h"
#include "guestd/approver.h"
#include "hotplug/domain.h"

struct net_http_client;
struct ag_plugin_client;
struct act_scrape_proxy;
struct net_http_server;

/* One of the guest's metrics endpoints (<vmact:metrics>), scraped by the
 * VM's metrics worker on the loop's timer. */
struct act_guest_ep {
	/* malloc'd; NULL when the VM names none (most do: a URL's room in
	 * every runner was 600 bytes, doc/actuation.md "vmactd's own
	 * footprint"). */
	char *url;
	sd_event_source *timer;
	int last_error; /* 0: working (or never failed) */
	long last_status;
};

/* What the concerns tell the core (runner.c, which sets it when it creates
 * the runner). The concerns below never call into runner.c: they report
 * through this, so the files depend one way (runner.c on the concerns,
 * every concern on state.c, export.c and view.c). */
struct act_runner_core_ops {
	/* Something a decision depends on changed (a permit came, a resize
	 * ended, new readings): decide again. */
	void (*changed)(struct act_runner *r);
};

/* plugin.c: the scheduler requests. */
struct act_runner_plugin {
	struct ag_plugin_client *client;
	bool busy;
	/* What the last request asked for, and why the permit fell short of
	 * it ("" when it did not): vmactl show, permit events. */
	struct vmact_resources asked;
	char *short_why; /* act_runner_text_set */
};

/* resize.c: the hotplug in progress (its plan, the step being done) and
 * the live state read after the last operation. */
struct act_runner_resize {
	bool busy;
	struct act_plan plan;
	unsigned step;
	bool dimm_attach; /* the DIMM step grows */
	bool failed;
	/* What the live state said after the last operation (the three
	 * figures the runner reads back, not the whole struct hp_state:
	 * 2 KiB a VM, doc/actuation.md, "vmactd's own footprint"). */
	bool have_state;
	struct {
		unsigned vcpus;
		uint64_t mem_kib;  /* hp_state_mem_kib */
		uint64_t base_kib; /* boot memory */
	} seen;
	char *error; /* the failure's, while the resize finishes (act_runner_text_set) */
	/* The hash of the last failure's error (resize.c; 0: the last
	 * resize worked): the same failure again is logged at debug level. */
	uint64_t last_error_hash;
	/* The guest kept memory it was asked to give back (-EBUSY from the
	 * memory step): no memory shrink is planned before mem_hold_until;
	 * the hold doubles with each refusal in a row (README "Reliability
	 * and security"). */
	bool mem_refused;
	act_time_t mem_hold_until;
	unsigned mem_hold_s;
	/* The neonvm-runner API's changes: the one in progress is the API's;
	 * a change came during it and api_want is next. */
	bool api;
	bool api_pending;
	uint32_t api_want; /* the last change accepted, milli-CPUs */
	/* When the last resize ended (CLOCK_REALTIME, s): what the guest
	 * reported before then describes the old size (memory.c). */
	uint64_t done_s;
};

/* readings.c: the periodic load and memory readings. */
struct act_runner_readings {
	sd_event_source *timer;
	bool sampler_registered;
	bool mem_absent_logged, load_error_logged;
	/* Said once: the sampler's thread table was full for this VM. */
	bool untracked_logged;
	/* The reactive CPU policy (cpu-demand.h), fed every policy tick
	 * with the vCPU threads' totals since the previous one. */
	struct act_cpu_policy cpu_policy;
	struct act_cpu_demand demand;
	bool have_vcpu_totals;
	uint64_t vcpu_runnable_ns, vcpu_delay_ns;
	/* The sampler's watch closes the VM's windows (readings.c): what
	 * it judges them by, and the cgroup's throttled time at the last
	 * window. */
	bool watching;
	struct smp_watch_params watch_params;
	bool have_throttled;
	uint64_t throttled_ns;
	enum act_cpu_class last_cls;
	uint64_t ticks; /* memory is read every metrics interval */
	/* The guest's own figures (<vmact:metrics>): the system exporter's
	 * replace the host-side load averages and balloon statistics while
	 * they are fresh; a failed scrape drops them. */
	struct act_guest_ep guest_sys, guest_lfc;
	bool has_guest;
	struct act_system_metrics guest;
	/* They are scraped by the VM's metrics worker (doc/privsep.md);
	 * NULL: none runs (no <vmact:metrics>). */
	struct act_scrape_proxy *scrape;
	unsigned guest_seq; /* one more with each system scrape that worked */
	/* A VM with an approver: the balloon's last reading, for the view. */
	bool has_balloon;
	struct hp_mem_stats balloon;
};

/* How to give vmactd a guest's memory statistics (said with their absence). */
#define ACT_RUNNER_BALLOON_FIX                                                               \
	"add <memballoon model='virtio'><stats period='1'/></memballoon> to the domain and " \
	"load the guest's virtio_balloon driver"

/* memory.c: the memory of a VM without an approver, sized on the host's own
 * evidence (actuator/policy/mem-demand.h): its balloon's statistics, read
 * every second while no resize runs, or the guest's exporter. */
struct act_runner_memory {
	bool host;   /* this VM's memory is sized here */
	bool joined; /* to the env's clock (memory.c) */
	struct act_mem_policy policy;
	struct act_mem_demand demand;
	bool has_dec;
	struct act_mem_decision dec;
	bool has_balloon;             /* the last reading had figures */
	struct hp_mem_stats balloon;  /* that reading */
	uint64_t balloon_update;      /* its last_update (QEMU's, Unix s) */
	act_time_t balloon_update_at; /* when that last_update was first seen */
	uint64_t fence;               /* samples up to this last_update predate a resize */
	uint64_t plugged;             /* the size the last sample was taken at */
	unsigned guest_seq;           /* the exporter's figures last fed */
	/* Why there are no memory figures (NULL: there are), said once. */
	char *absent;
	char *last_reason; /* of the last memory decision */
};

/* neonvm-api.c: <vmact:runner>, the VM sized through the neonvm-runner
 * CPU API (doc/runner-api.md). */
struct act_runner_api {
	struct net_http_server *server;
	/* The last refusal, logged at info once; malloc'd at the first one
	 * (NULL: none yet), since only a <vmact:runner> VM has the API. */
	char *last_refusal;
};

/* export.c: what the metrics page shows (doc/metrics.md): the last
 * desired size and CPU decision, the start of each request in flight for
 * its latency, and the vCPU threads' totals kept monotonic across threads
 * that end. */
struct act_runner_export {
	bool has_desired, has_dec;
	struct vmact_resources desired;
	struct act_cpu_decision dec;
	act_time_t plugin_t0, approver_t0, hp_t0;
	enum act_metric_direction plugin_dir, approver_dir, hp_dir;
	struct vmact_resources hp_from;
	uint64_t thr_seen_delay, thr_seen_oncpu, thr_delay, thr_oncpu;
	/* This VM's vmact_vm_resizes_total and vmact_vm_failures_total. */
	uint64_t resizes[ACT_RESIZE_N];
	uint64_t failures[ACT_FAILURE_N];
};

/* view.c: what the control API shows: the last change, and the last
 * reason a "cannot shrink" hold event gave. */
struct act_runner_view {
	uint64_t last_change_usec; /* CLOCK_REALTIME; 0: none yet */
	char *last_change;
	char *shrink_blocked;
	bool has_recommended; /* recommend mode: the last recommendation reported */
	struct vmact_resources recommended;
};

/* A runner: the core's fields, then one part per concern. Each concern
 * writes its own part and reads the others' (the view and the metrics
 * page show all of them); the core's fields are written by runner.c and
 * by state.c's calls. */
struct act_runner {
	struct act_runner_env *env;
	const struct act_runner_core_ops *core;
	char name[HP_NAME_MAX];
	char uuid[HP_UUID_LEN];
	struct hp_meta meta;
	struct act_state st;

	char *group; /* cpu cgroup of the whole VM */
	pid_t pid;
	uint32_t quota_milli; /* last quota written (0 = none yet) */
	sd_event_source *wake;
	/* The domain, kept for the balloon's statistics read every second
	 * (memory.c, readings.c: hp_mem_stats_read_kept); NULL: not yet. */
	virDomainPtr dom;
	/* The scheduler's http client (a remote plugin). */
	struct net_http_client *http;

	/* The vm-monitor or the informant; NULL: the host's own evidence
	 * approves its shrinks (doc/policy.md, "Without an agent"). */
	struct act_approver *approver;
	bool approver_busy; /* an upscale notification or downscale request is pending */
	bool held_logged;   /* "holding a resize" said since the approver last changed */

	unsigned last_warn_hash;
	bool freeing;
	/* <vmact:runner>: vmact is only the VM's hardware side: no decision
	 * loop, no readings, no scheduler or approver. */
	bool api_vm;
	/* The last decision's reason (the control API, events). */
	char *last_reason;

	/* Frozen for a move (act_runner_freeze, and plugin.c on a remote
	 * plugin's "migrate"): by, the sources (enum act_runner_freeze_source;
	 * 0: not frozen); reported once the arbiter heard that no resize is
	 * in flight; why, the last reason (act_runner_text_set). */
	struct {
		unsigned by;
		bool reported;
		uint64_t since_usec; /* CLOCK_REALTIME */
		char *why;
	} frz;

	struct act_runner_plugin plugin;
	struct act_runner_resize rs;
	struct act_runner_readings rd;
	struct act_runner_api api;
	struct act_runner_export ex;
	struct act_runner_view view;
	struct act_runner_memory mem;
};

/* state.c */
act_time_t act_runner_now_ns(const struct act_runner *r);
/* Keeps what the runner reads back of a live state read (r->rs.seen). */
void act_runner_seen_set(struct act_runner *r, const struct hp_state *st);
/* The runner's texts (why a permit fell short, the last decisions'
 * reasons, the last change, why it cannot shrink, a failed resize's
 * error, why there are no memory figures) are malloc'd to their length,
 * NULL while empty: most VMs never have most of them, and a fixed buffer
 * each cost every VM 2.6 KiB (doc/actuation.md, "vmactd's own
 * footprint"). Sets *dst to a copy of text: NULL for "", and when out of
 * memory, since these texts only inform. */
void act_runner_text_set(char **dst, const char *text);
/* A text as read: "" for NULL. */
static inline const char *act_runner_text(const char *t)
{
	return t ? t : "";
}
void act_runner_fmt_res(char *buf, size_t len, struct vmact_resources x);
/* Whether the VM is frozen for a move: no resize of any kind may start. */
static inline bool act_runner_frozen(const struct act_runner *r)
{
	return r->frz.by != 0;
}
/* Sets (on) or clears one source of the freeze; on the runner's change
 * between frozen and not, one log line and one event with why. Starts
 * nothing: the caller has the core decide again. */
void act_runner_freeze_set(struct act_runner *r, enum act_runner_freeze_source src, bool on,
			   const char *why);
/* Writes the VM's CFS quota for `milli` milli-CPUs. */
int act_runner_write_quota(struct act_runner *r, uint32_t milli, struct vmact_err *err);
/* The policies in effect for this VM: its <vmact:policy>, else the host's. */
enum act_cpu_policy_mode act_runner_cpu_policy(const struct act_runner *r);
enum act_cpu_shrink_mode act_runner_cpu_shrink(const struct act_runner *r);

/* view.c: records a finished resize from `from` to `to` (written `what`)
 * as the last change, with the reasons of the last CPU and memory
 * decisions for the parts that moved. */
void act_runner_view_change(struct act_runner *r, const struct vmact_resources *from,
			    const struct vmact_resources *to, const char *what);
/* Why the runner cannot shrink the VM towards its desired size now (""
 * when it can or does not want to): vmactl show. */
void act_runner_shrink_blocked(const struct act_runner *r, char *buf, size_t len);
/* A "cannot shrink" hold event when that reason is new (after each
 * decision). */
void act_runner_view_note_shrink(struct act_runner *r);
/* A decision event (takes fields); in recommend mode marked as a
 * recommendation ("recommendation": true, its text so prefixed). */
void act_runner_decision_event(struct act_runner *r, json_t *fields, const char *text);
/* Recommend mode: a "recommendation" event when the size the core wants
 * differs from the last one reported. */
void act_runner_view_note_recommend(struct act_runner *r, const struct vmact_resources *want);

/* plugin.c */
int act_runner_plugin_setup(struct act_runner *r, struct vmact_err *err);
void act_runner_plugin_start(struct act_runner *r, const struct act_actions *a);
void act_runner_plugin_free(struct act_runner *r);

/* resize.c */
/* A guest that kept its memory: the next hold, 60 s doubling to 960 s;
 * and target's memory kept at using_'s while now is before until (true
 * when it was held). */
unsigned act_runner_mem_hold_next(unsigned prev_s);
bool act_runner_mem_held(struct vmact_resources *target, const struct vmact_resources *using_,
			 act_time_t now, act_time_t until);
void act_runner_resize_start(struct act_runner *r, const struct act_actions *a);
/* The runner API's change: resizes the VM's CPU to `milli` (checked by
 * the caller against its bounds), its memory left as it is; queued (the
 * latest wins) while a resize runs. Errors: the state cannot be read or
 * no plan reaches it. */
int act_runner_resize_cpu(struct act_runner *r, uint32_t milli, struct vmact_err *err);
/* Unfrozen: starts the runner API's change that waited for it, if any. */
void act_runner_resize_thaw(struct act_runner *r);

/* neonvm-api.c */
int act_runner_neonvm_api_start(struct act_runner *r, struct vmact_err *err);
void act_runner_neonvm_api_free(struct act_runner *r);

/* export.c: the metrics page's records, each one call where it happens */
void act_runner_export_desired(struct act_runner *r, const struct vmact_resources *desired);
void act_runner_export_demand(struct act_runner *r, const struct act_cpu_decision *dec);
void act_runner_export_plugin_start(struct act_runner *r, const struct vmact_resources *target);
void act_runner_export_plugin_done(struct act_runner *r, bool failed);
/* up: an upscale notification; else a downscale request. */
void act_runner_export_approver_start(struct act_runner *r, bool up);
void act_runner_export_approver_done(struct act_runner *r, bool failed);
void act_runner_export_hotplug_start(struct act_runner *r);
/* Before the core takes `got` as the VM's size. */
void act_runner_export_hotplug_done(struct act_runner *r, const struct vmact_resources *got,
				    bool failed);
void act_runner_export_failure(struct act_runner *r, enum act_metric_failure kind);

/* readings.c */
int act_runner_readings_start(struct act_runner *r, struct vmact_err *err);
void act_runner_readings_free(struct act_runner *r);
/* The VM's size changed: the watch judges its windows by the new one. */
void act_runner_watch_update(struct act_runner *r);

/* memory.c: start: the policy for the VM's compute unit and, for a VM
 * without an approver, its readings every second (reported through
 * r->core). free: stops them. */
int act_runner_memory_start(struct act_runner *r, struct vmact_err *err);
void act_runner_memory_free(struct act_runner *r);
