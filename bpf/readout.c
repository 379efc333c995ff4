/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/readout.h"

#include <stdio.h>
#include <string.h>

uint64_t smp_delta(uint64_t now, uint64_t then)
{
	return (int64_t)(now - then) > 0 ? now - then : 0;
}

void smp_totals_from_cpus(const struct smp_cpu_stats *v, int ncpus, uint64_t t,
			  struct smp_totals *out)
{
	uint64_t nr = 0, tsum = 0, on = 0, onsum = 0;

	*out = (struct smp_totals){ 0 };
	for (int c = 0; c < ncpus; c++) {
		/* Unsigned: per-CPU parts wrap, the totals do not. */
		nr += (uint64_t)v[c].nr_runnable;
		tsum += v[c].runnable_tsum;
		on += (uint64_t)v[c].nr_oncpu;
		onsum += v[c].oncpu_tsum;
		out->wakeups += v[c].wakeups;
		out->switches += v[c].switches;
		out->preemptions += v[c].preemptions;
		out->untracked += v[c].untracked;
		out->recovered_ns += v[c].recovered_ns;
		out->recoveries += v[c].recoveries;
	}
	out->nr_runnable = (int64_t)nr;
	out->nr_oncpu = (int64_t)on;
	out->runnable_ns = t * nr - tsum;
	out->oncpu_ns = t * on - onsum;
}

void smp_totals_add_pending(struct smp_totals *t, const struct smp_pending *p)
{
	/* As recover() in sampler.bpf.c will: on a CPU, and runnable too if
	 * we missed that. */
	t->oncpu_ns += p->ns;
	if (!p->runnable)
		t->runnable_ns += p->ns;
	if (p->on_cpu)
		t->nr_oncpu++;
}

void smp_totals_add(struct smp_totals *t, const struct smp_totals *pend)
{
	t->runnable_ns += pend->runnable_ns;
	t->oncpu_ns += pend->oncpu_ns;
	t->nr_oncpu += pend->nr_oncpu;
}

void smp_readout_start(struct smp_readout_state *st, const struct smp_totals *first, uint64_t t,
		       int64_t nr_runnable)
{
	st->last = *first;
	st->last_t = t;
	for (int i = 0; i < 3; i++)
		st->la.avg[i] = (double)(nr_runnable > 0 ? nr_runnable : 0);
	st->la.seeded = true;
}

void smp_readout_step(struct smp_readout_state *st, const struct smp_totals *now, uint64_t t,
		      struct smp_reading *r)
{
	const struct smp_totals *last = &st->last;
	uint64_t dt = smp_delta(t, st->last_t);

	*r = (struct smp_reading){ 0 };
	r->interval_s = (double)dt / 1e9;
	r->runnable_ns = smp_delta(now->runnable_ns, last->runnable_ns);
	r->oncpu_ns = smp_delta(now->oncpu_ns, last->oncpu_ns);
	/* A recovery adds on-CPU time when the thread switches out, which
	 * may be after this interval began; its runnable time was counted
	 * as it passed. */
	if (r->oncpu_ns > r->runnable_ns)
		r->oncpu_ns = r->runnable_ns;
	r->delay_ns = smp_delta(r->runnable_ns, r->oncpu_ns);
	r->wakeups = now->wakeups - last->wakeups;
	r->switches = now->switches - last->switches;
	r->preemptions = now->preemptions - last->preemptions;
	r->untracked = now->untracked - last->untracked;
	r->recovered_ns = now->recovered_ns - last->recovered_ns;
	r->recoveries = now->recoveries - last->recoveries;
	r->nr_runnable = now->nr_runnable;
	r->nr_oncpu = now->nr_oncpu;
	if (dt > 0) {
		r->load = (double)r->runnable_ns / (double)dt;
		r->cpu_util = (double)r->oncpu_ns / (double)dt;
	} else {
		r->load = (double)now->nr_runnable;
	}
	r->delay_frac = r->runnable_ns ? (double)r->delay_ns / (double)r->runnable_ns : 0;
	smp_loadavg_update(&st->la, r->load, r->interval_s);
	memcpy(r->loadavg, st->la.avg, sizeof(r->loadavg));
	st->last = *now;
	st->last_t = t;
}

void smp_readout_cpustat(struct smp_readout_state *st, const struct vmact_cpustat *cs,
			 struct smp_reading *r)
{
	struct vmact_cpustat d;

	r->has_cpu_stat = true;
	r->nr_periods = cs->nr_periods;
	r->nr_throttled = cs->nr_throttled;
	r->throttled_ns = cs->throttled_ns;
	/* Counters that went back mean a new cgroup (VM restarted): count
	 * from its start. */
	if (st->have_cs)
		vmact_cpustat_delta(&st->last_cs, cs, &d);
	else
		d = *cs;
	r->periods_delta = d.nr_periods;
	r->throttled_delta = d.nr_throttled;
	r->throttled_ns_delta = d.throttled_ns;
	st->last_cs = *cs;
	st->have_cs = true;
}

uint32_t smp_milli(double v)
{
	v = v * 1000.0 + 0.5;
	return v <= 0 ? 0 : v >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void smp_readout_record(const struct smp_reading *r, const char *name, pid_t tgid, uint64_t t,
			struct smp_readout *o)
{
	*o = (struct smp_readout){
		.tgid = (__u32)tgid,
		.nr_runnable = r->nr_runnable > 0 ? (__u32)r->nr_runnable : 0,
		.at_ns = t,
		.interval_ns = (__u64)(r->interval_s * 1e9),
		.load_milli = smp_milli(r->load),
		.loadavg1_milli = smp_milli(r->loadavg[0]),
		.loadavg5_milli = smp_milli(r->loadavg[1]),
		.loadavg15_milli = smp_milli(r->loadavg[2]),
		.cpu_milli = smp_milli(r->cpu_util),
		.delay_permille = smp_milli(r->delay_frac),
		.nr_throttled = r->nr_throttled,
		.throttled_ns = r->throttled_ns,
	};
	snprintf(o->name, sizeof(o->name), "%s", name);
}

void smp_thread_from_task(pid_t tid, const struct smp_task *v, uint64_t now, struct smp_thread *out)
{
	*out = (struct smp_thread){
		.tid = tid,
		.runnable = v->runnable,
		.runnable_ns = v->runnable_ns +
			       (v->runnable ? smp_delta(now, v->runnable_since) : 0),
		.oncpu_ns = v->oncpu_ns + (v->oncpu ? smp_delta(now, v->oncpu_since) : 0),
	};
}

void smp_thread_add_pending(struct smp_thread *t, const struct smp_pending *p)
{
	t->oncpu_ns += p->ns;
	if (!p->runnable)
		t->runnable_ns += p->ns;
}

void smp_thread_finish(struct smp_thread *t)
{
	if (t->oncpu_ns > t->runnable_ns) /* see smp_reading */
		t->oncpu_ns = t->runnable_ns;
	t->delay_ns = smp_delta(t->runnable_ns, t->oncpu_ns);
}

void smp_vcpus_add(struct smp_vcpus *v, const struct smp_thread *t)
{
	if (t->vcpu < 0)
		return;
	v->vcpus++;
	if (t->runnable)
		v->runnable_now++;
	v->runnable_ns += t->runnable_ns;
	v->oncpu_ns += t->oncpu_ns;
	v->delay_ns += t->delay_ns;
}
