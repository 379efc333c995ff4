/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's readings. Every policy tick (policy.tick_ms) the sampler's
 * figures for the VM's vCPU threads since the previous tick feed the
 * reactive CPU policy (cpu-demand.h), whose goal sizes the CPU; every
 * metrics interval (sampler.interval_ms) the VM's load averages and its
 * memory from libvirt's guest statistics are fed to the core as system
 * metrics (the Neon policy's inputs, and memory under both policies). */
#include <math.h>
#include <string.h>
#include <time.h>

#include "actuator/runner-internal.h"
#include "base/log.h"
#include "bpf/sampler.h"
#include "hotplug/domain.h"

#define MiB (1024ULL * 1024ULL)
/* MemoryUsageBytes = total - available + 100 MiB, as the Neon agent. */
#define MEM_USAGE_PAD (100ULL * MiB)
static bool reactive(const struct act_runner *r)
{
	return r->env->cfg->cpu_policy == ACT_CPU_POLICY_REACTIVE;
}

static uint64_t tick_usec(const struct act_runner *r)
{
	return reactive(r) ? r->env->policy_tick_usec : r->env->metrics_interval_usec;
}

/* The vCPU threads' totals now (one pass over the VM's threads in the
 * sampler, see doc/policy.md "What the faster readout costs"); the window
 * since the last call goes to the policy. A total that went down (a vCPU
 * thread ended) starts over. */
static void feed_vcpus(struct act_runner *r, const struct smp_reading *rd)
{
	struct smp_vcpus v;
	struct vmact_err err = { 0 };
	uint64_t runnable, delay;
	unsigned vcpus;

	if (smp_read_vcpus(r->env->sampler, r->uuid, &v, &err) < 0) {
		if (!r->load_error_logged)
			log_warning("%s: cannot read the VM's threads: %s", r->name, err.msg);
		r->load_error_logged = true;
		return;
	}
	runnable = v.runnable_ns;
	delay = v.delay_ns;
	vcpus = v.vcpus;
	if (r->have_vcpu_totals && runnable >= r->vcpu_runnable_ns && delay >= r->vcpu_delay_ns &&
	    vcpus) {
		struct act_cpu_window w = {
			.at = act_runner_now_ns(r),
			.len = (int64_t)llround(rd->interval_s * 1e9),
			.vcpus = vcpus,
			.quota_milli = r->quota_milli,
			.vcpu_runnable_ns = runnable - r->vcpu_runnable_ns,
			.vcpu_delay_ns = delay - r->vcpu_delay_ns,
			.throttled_ns = rd->has_cpu_stat ? rd->throttled_ns_delta : 0,
		};

		act_cpu_demand_feed(&r->demand, &r->cpu_policy, &w);
	}
	r->have_vcpu_totals = true;
	r->vcpu_runnable_ns = runnable;
	r->vcpu_delay_ns = delay;
}

/* The policy's decision; true when the CPU goal changed. Each change is
 * logged with the classification that made it. */
static bool decide_cpu(struct act_runner *r)
{
	struct act_cpu_decision dec;
	char why[256];

	r->cpu_policy.target = r->st.config.load_average_fraction_target;
	r->cpu_policy.cu_milli = r->st.cu.milli_cpu;
	if (!act_cpu_demand_decide(&r->demand, &r->cpu_policy, &dec))
		return false;
	act_cpu_decision_format(&dec, why, sizeof(why));
	if (r->st.has_cpu_goal && dec.goal_milli == r->st.cpu_goal_milli) {
		if (dec.cls != r->last_cls)
			log_debug("%s: cpu %s", r->name, why);
		r->last_cls = dec.cls;
		return false;
	}
	r->last_cls = dec.cls;
	log_info("%s: cpu %s", r->name, why);
	act_state_update_cpu_goal(&r->st, true, dec.goal_milli);
	return true;
}

static void feed_system(struct act_runner *r, const struct smp_reading *rd)
{
	struct act_system_metrics m = { 0 };
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	m.load1 = rd->loadavg[0];
	m.load5 = rd->loadavg[1];
	if (hp_mem_stats_read(r->env->hp, r->uuid, &ms, &err) == 0 &&
	    ms.total_kib >= ms.available_kib) {
		m.memory_usage_bytes = (double)(ms.total_kib - ms.available_kib) * 1024.0 +
				       (double)MEM_USAGE_PAD;
		m.memory_cached_bytes = ms.has_caches ? (double)ms.caches_kib * 1024.0 : 0.0;
		if (r->mem_absent_logged)
			log_info("%s: guest memory statistics available again", r->name);
		r->mem_absent_logged = false;
	} else {
		m.memory_absent = true;
		if (!r->mem_absent_logged)
			log_warning("%s: no guest memory statistics (%s): memory does not drive "
				    "scaling and the VM's memory is never scaled down",
				    r->name, err.msg[0] ? err.msg : "implausible figures");
		r->mem_absent_logged = true;
	}
	vmact_err_reset(&err);
	if (act_state_update_system_metrics(&r->st, &m, &err) < 0) {
		log_warning("%s: %s", r->name, err.msg);
		return;
	}
	log_debug("%s: load1 %.2f load5 %.2f memory %s", r->name, m.load1, m.load5,
		  m.memory_absent ? "unknown" : "known");
}

static int on_tick(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_runner *r = ud;
	struct smp_reading rd;
	struct vmact_err err = { 0 };
	uint64_t every = tick_usec(r);
	uint64_t per_metrics = r->env->metrics_interval_usec / every;
	bool changed = false;

	sd_event_source_set_time(s, usec + every);
	if (!r->sampler_registered || smp_read(r->env->sampler, r->uuid, &rd, &err) < 0) {
		if (!r->load_error_logged && r->sampler_registered)
			log_warning("%s: cannot read the VM's load: %s", r->name, err.msg);
		r->load_error_logged = true;
		return 0;
	}
	if (reactive(r)) {
		feed_vcpus(r, &rd);
		changed = decide_cpu(r);
	}
	if (r->ticks++ % (per_metrics ? per_metrics : 1) == 0) {
		feed_system(r, &rd);
		changed = true;
	}
	if (changed)
		act_runner_evaluate(r);
	return 0;
}

int act_runner_metrics_start(struct act_runner *r, struct vmact_err *err)
{
	int ret;

	act_cpu_policy_defaults(&r->cpu_policy);
	act_cpu_demand_init(&r->demand);
	ret = sd_event_add_time_relative(r->env->event, &r->metrics, CLOCK_MONOTONIC, tick_usec(r),
					 1000, on_tick, r);
	if (ret >= 0)
		ret = sd_event_source_set_enabled(r->metrics, SD_EVENT_ON);
	if (ret < 0)
		return vmact_err_set(err, -ret, "cannot add the metrics timer: %s", strerror(-ret));
	return 0;
}
