/* SPDX-License-Identifier: Apache-2.0 */
/* The per-VM executor (the Neon agent's Runner and its executors,
 * doc/protocols.md, "Per-VM runner" and "Next actions"): owns the scaling core's state
 * (actuator/policy/actions.h), feeds it metrics and results, and carries out the
 * actions it asks for through the components:
 *
 *   plugin request      -> agent-glue/plugin-client (arbiter or plugin.url)
 *                          (runner/plugin.c)
 *   hotplug             -> actuator/cgroup (CPU quota) + hotplug/ (vCPUs,
 *                          virtio-mem or DIMMs), one step at a time
 *                          (runner/resize.c, planned by plan.h)
 *   monitor up/down     -> the VM's approver (approver.h): the vm-monitor,
 *                          or for guests with a legacy VM informant the
 *                          informant (approval and notification the same
 *                          way; a suspended agent does not resize at all)
 *   metrics             -> bpf/sampler (load) + libvirt memory statistics
 *                          (runner/readings.c)
 *
 * Everything runs on the daemon's sd-event loop; nothing blocks except
 * short local libvirt RPCs and cgroup file writes. The decision loop and
 * lifecycle are runner.c. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "actuator/cgroup/cgroup.h"
#include "actuator/config/config.h"
#include "actuator/policy/actions.h"
#include "actuator/policy/plan.h"
#include "agent-glue/codec/quantity.h"
#include "hotplug/hotplug.h"

struct smp_sampler;
struct ag_arbiter;
struct act_metrics;
struct act_vm_metrics;
struct act_events;

/* ---- the VM's config ------------------------------------------------ */

/* The VM's scaling config: defaults with the metadata's <scaling>
 * overrides, validated. */
int act_meta_scaling_config(const struct ag_scaling_config *defaults, const struct hp_meta *meta,
			    struct ag_scaling_config *out, struct vmact_err *err);

/* ---- the executor ---------------------------------------------------- */

struct act_runner;
struct act_inf_drain;
struct act_approver;
struct act_approver_events;

/* Shared by every runner; owned by the registry. */
struct act_runner_env {
	sd_event *event;
	struct hp_conn *hp;
	const struct act_config *cfg;
	struct act_cg *cg;           /* NULL: no cpu controller found */
	struct smp_sampler *sampler; /* NULL: no load metrics */
	const char *plugin_url;      /* http://HOST:PORT/ (plugin.mode remote) */
	struct ag_arbiter *arbiter;  /* else the embedded arbiter, in-process */
	struct act_metrics *prom;    /* the daemon's counters (metrics.h); may be NULL */
	uint32_t overcommit;         /* permille, cgroup.cpu_quota_overcommit */
	uint64_t metrics_interval_usec;
	uint64_t policy_tick_usec; /* policy.tick_ms */
	struct act_events *events; /* the control API's ring; NULL: none */
	/* Maps a hotplug completion (by domain uuid) to its runner. */
	struct act_runner *(*find)(void *ud, const char *uuid);
	void *find_ud;
	/* Informant agents of freed runners, still sending DELETE /unregister
	 * (bounded by the client's register timeout); drained(drained_ud)
	 * runs once the list becomes empty. */
	struct act_inf_drain *inf_draining;
	void (*inf_drained)(void *ud);
	void *inf_drained_ud;
	/* runner/memory.c's one clock for the balloons of every VM whose
	 * memory is sized here: there while one is. */
	struct act_mem_clock *mem_clock;
};

/* Starts managing a running VM: finds its QEMU process and cgroup,
 * registers it with the sampler, writes the CPU quota of its current size,
 * connects to its monitor and asks the core for the first actions. */
int act_runner_new(struct act_runner_env *env, const struct hp_state *st,
		   const struct hp_meta *meta, struct act_runner **out, struct vmact_err *err);
/* Stops everything the runner started (pending requests are cancelled;
 * an in-flight hotplug finishes in libvirt, its result is dropped). An
 * informant agent is stopped and moved to env->inf_draining until its
 * DELETE /unregister is answered. */
void act_runner_free(struct act_runner *r);

/* A window of the VM's vCPU threads from the sampler's watch
 * (bpf/sampler.h): fed to the reactive policy, which decides at once.
 * The registry hands each window to the runner its name (the VM's uuid)
 * belongs to. */
struct smp_window;
void act_runner_on_window(struct act_runner *r, const struct smp_window *w);

/* Autoscaling was turned off for the VM: removes vmactd's CPU quota so the
 * VM runs as its definition says (its vCPUs and memory stay as they are).
 * Not done on daemon shutdown or restart: the next vmactd reads the quota
 * back as the VM's size. */
int act_runner_release(struct act_runner *r, struct vmact_err *err);

/* New metadata for the same VM. Returns 1 when the change needs a new
 * runner (compute unit, memory method, monitor or informant endpoint, runner API
 * address changed), 0 when
 * applied, <0 on invalid bounds/config (the runner keeps the old ones). */
int act_runner_update(struct act_runner *r, const struct hp_meta *meta, struct vmact_err *err);

const char *act_runner_name(const struct act_runner *r);
const char *act_runner_uuid(const struct act_runner *r);
/* The core's view, for status and tests. */
const struct act_state *act_runner_state(const struct act_runner *r);

/* The namespace and name the runner speaks for to the scheduler (its
 * pod key): the domain's <vmact:pod>, else "default" and the domain's
 * name. They point into the runner. */
void act_runner_pod_key(const struct act_runner *r, const char **ns, const char **name);

/* What froze a runner (act_runner_frozen): its VM is being moved away. */
enum act_runner_freeze_source {
	ACT_RUNNER_FREEZE_LEASE = 1u << 0,  /* the embedded arbiter's moving mark */
	ACT_RUNNER_FREEZE_PLUGIN = 1u << 1, /* a remote scheduler plugin's "migrate" */
};
/* The embedded arbiter marked (on) or unmarked the VM's pod as moving
 * (doc/cluster.md, "Capacity leases"). While frozen no resize of any kind
 * starts (hot-plug, CPU quota, vm-monitor or informant requests); one in
 * flight finishes first, and once none is the runner tells the arbiter
 * the pod is frozen (ag_arbiter_pod_frozen). why: for the log line and
 * the event. Acts from the loop (never within the call): callable from
 * the arbiter's event callback. */
void act_runner_freeze(struct act_runner *r, bool on, const char *why);

/* The embedded arbiter freed room (a lease released or lapsed, a VM gone
 * from the host): a runner whose last request it denied asks again at
 * once rather than after the denial's backoff (doc/policy.md, "The Neon
 * policy, and memory with a monitor"); the others are left alone. Acts
 * from the loop: callable from the arbiter's event callback. */
void act_runner_room_freed(struct act_runner *r);

/* What the metrics page shows of the VM (runner/export.c): its sizes,
 * readings and the policy's last decision; reads the VM's cpu.stat and its
 * vCPU threads' totals. out->name points into the runner. */
void act_runner_metrics(struct act_runner *r, struct act_vm_metrics *out);
/* What `vmactl status/show` say of the VM (doc/control-api.md). */
struct act_vm_view;
void act_runner_view(const struct act_runner *r, struct act_vm_view *v);

/* hp_op_fn for every runner's operations: userdata is the env. */
void act_runner_hp_done(struct hp_conn *c, const char *uuid, const struct hp_op_result *res,
			void *userdata);

/* ---- informant.c: a VM's legacy informant ------------------------------ */

/* Registers with the informant at `endpoint` (http://HOST:PORT) through
 * the VM's guest worker, which serves on the env's informant listen
 * address. On free the agent unregisters on
 * its own, from env->inf_draining. */
int act_runner_informant_new(struct act_runner_env *env, const char *name, const char *endpoint,
			     const struct act_approver_events *events, void *userdata,
			     struct act_approver **out, struct vmact_err *err);
/* Frees the informant agents still unregistering, at once (no more
 * callbacks). For the registry's teardown. */
void act_runner_informant_drain_free(struct act_runner_env *env);
