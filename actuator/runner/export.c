/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's side of the metrics page (doc/metrics.md): the hooks the
 * decision loop, the scheduler, approver and hotplug paths call where
 * things happen (counters and latencies into the daemon's act_metrics),
 * and the VM's figures taken at scrape time. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "base/cpustat.h"
#include "bpf/sampler.h"

/* QEMU's threads of one VM: its vCPUs and a handful of others (as
 * runner/readings.c). */
#define MAX_THREADS 512

static double since(struct act_runner *r, act_time_t t0)
{
	return (double)(act_runner_now_ns(r) - t0) / 1e9;
}

void act_runner_export_desired(struct act_runner *r, const struct vmact_resources *d)
{
	struct act_metrics *m = r->env->prom;

	if (r->ex.has_desired) {
		if (d->milli_cpu != r->ex.desired.milli_cpu)
			act_metrics_decision(m, d->milli_cpu > r->ex.desired.milli_cpu
							? ACT_DECISION_CPU_UP
							: ACT_DECISION_CPU_DOWN);
		if (d->mem_bytes != r->ex.desired.mem_bytes)
			act_metrics_decision(m, d->mem_bytes > r->ex.desired.mem_bytes
							? ACT_DECISION_MEMORY_UP
							: ACT_DECISION_MEMORY_DOWN);
	}
	r->ex.has_desired = true;
	r->ex.desired = *d;
}

void act_runner_export_demand(struct act_runner *r, const struct act_cpu_decision *dec)
{
	r->ex.has_dec = true;
	r->ex.dec = *dec;
}

void act_runner_export_plugin_start(struct act_runner *r, const struct vmact_resources *target)
{
	r->ex.plugin_t0 = act_runner_now_ns(r);
	r->ex.plugin_dir = act_metrics_direction(r->st.using_, *target);
}

void act_runner_export_plugin_done(struct act_runner *r, bool failed)
{
	act_metrics_observe(r->env->prom, ACT_LATENCY_PLUGIN, r->ex.plugin_dir,
			    since(r, r->ex.plugin_t0));
	if (failed)
		act_runner_export_failure(r, ACT_FAILURE_PLUGIN);
}

void act_runner_export_approver_start(struct act_runner *r, bool up)
{
	r->ex.approver_t0 = act_runner_now_ns(r);
	r->ex.approver_dir = up ? ACT_DIR_INC : ACT_DIR_DEC;
}

void act_runner_export_approver_done(struct act_runner *r, bool failed)
{
	/* A runner being freed fails its own pending request: not the
	 * approver's failure, nor a latency. */
	if (r->freeing)
		return;
	act_metrics_observe(r->env->prom, ACT_LATENCY_MONITOR, r->ex.approver_dir,
			    since(r, r->ex.approver_t0));
	if (failed)
		act_runner_export_failure(r, ACT_FAILURE_MONITOR);
}

void act_runner_export_hotplug_start(struct act_runner *r)
{
	r->ex.hp_t0 = act_runner_now_ns(r);
	r->ex.hp_from = r->st.using_;
	r->ex.hp_dir = act_metrics_direction(r->st.using_, r->rs.plan.target);
}

/* The daemon's counter and the VM's own (vmact_vm_resizes_total). */
static void resized(struct act_runner *r, enum act_metric_resize kind)
{
	act_metrics_resize(r->env->prom, kind);
	r->ex.resizes[kind]++;
}

void act_runner_export_hotplug_done(struct act_runner *r, const struct vmact_resources *got,
				    bool failed)
{
	struct act_metrics *m = r->env->prom;

	act_metrics_observe(m, ACT_LATENCY_HOTPLUG, r->ex.hp_dir, since(r, r->ex.hp_t0));
	if (failed)
		act_runner_export_failure(r, ACT_FAILURE_HOTPLUG);
	/* What really changed, also of a resize that failed half-way. */
	if (got->milli_cpu != r->ex.hp_from.milli_cpu)
		resized(r, got->milli_cpu > r->ex.hp_from.milli_cpu ? ACT_RESIZE_CPU_UP
								    : ACT_RESIZE_CPU_DOWN);
	if (got->mem_bytes != r->ex.hp_from.mem_bytes)
		resized(r, got->mem_bytes > r->ex.hp_from.mem_bytes ? ACT_RESIZE_MEMORY_UP
								    : ACT_RESIZE_MEMORY_DOWN);
}

/* The daemon's counter and the VM's own (vmact_vm_failures_total). */
void act_runner_export_failure(struct act_runner *r, enum act_metric_failure kind)
{
	act_metrics_failure(r->env->prom, kind);
	if (kind < ACT_FAILURE_N)
		r->ex.failures[kind]++;
}

/* The vCPU threads' totals since registration; a thread that ended takes
 * its share with it, so only increases are added up (a counter must not
 * go back). */
static bool thread_totals(struct act_runner *r)
{
	struct smp_thread th[MAX_THREADS];
	uint64_t delay = 0, oncpu = 0;
	int n;

	if (!r->rd.sampler_registered)
		return false;
	n = smp_read_threads(r->env->sampler, r->uuid, th, MAX_THREADS, NULL);
	if (n < 0)
		return false;
	for (int i = 0; i < n; i++) {
		if (th[i].vcpu < 0)
			continue;
		delay += th[i].delay_ns;
		oncpu += th[i].oncpu_ns;
	}
	r->ex.thr_delay += delay > r->ex.thr_seen_delay ? delay - r->ex.thr_seen_delay : 0;
	r->ex.thr_oncpu += oncpu > r->ex.thr_seen_oncpu ? oncpu - r->ex.thr_seen_oncpu : 0;
	r->ex.thr_seen_delay = delay;
	r->ex.thr_seen_oncpu = oncpu;
	return true;
}

void act_runner_metrics(struct act_runner *r, struct act_vm_metrics *out)
{
	struct vmact_cpustat cs;
	char dir[PATH_MAX + 512];

	*out = (struct act_vm_metrics){
		.name = r->name,
		.uuid = r->uuid,
		.paused = r->meta.paused,
		.recommend = r->meta.recommend,
		.current = r->st.using_,
		.min = r->st.min,
		.max = r->st.max,
		.has_desired = r->ex.has_desired,
		.desired = r->ex.desired,
		.has_permit = r->st.plugin.has_permit,
		.permit = r->st.plugin.permit,
		.quota_milli = r->quota_milli,
		.vcpus = r->rs.have_state ? r->rs.seen.vcpus : 0,
		.has_load = r->st.has_system,
		.load1 = r->st.system.load1,
		.load5 = r->st.system.load5,
		.has_memory_usage = r->st.has_system && !r->st.system.memory_absent,
		.memory_usage_bytes = r->st.system.memory_usage_bytes,
		.has_demand = r->ex.has_dec,
		.demand = r->ex.dec,
	};
	memcpy(out->resizes, r->ex.resizes, sizeof(out->resizes));
	memcpy(out->failures, r->ex.failures, sizeof(out->failures));
	if (thread_totals(r)) {
		out->has_threads = true;
		out->run_delay_seconds = (double)r->ex.thr_delay / 1e9;
		out->cpu_seconds = (double)r->ex.thr_oncpu / 1e9;
	}
	snprintf(dir, sizeof(dir), "%s%s", r->env->cg->cpu_mount, r->group);
	if (vmact_cpustat_read(dir, &cs, NULL) == 0) {
		out->has_cpu_stat = true;
		out->nr_periods = cs.nr_periods;
		out->nr_throttled = cs.nr_throttled;
		out->throttled_seconds = (double)cs.throttled_ns / 1e9;
	}
}
