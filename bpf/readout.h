/* SPDX-License-Identifier: Apache-2.0 */
/* Readout arithmetic of the sampler: plain functions that turn what a
 * backend counted into a VM's reading. No I/O, no BPF: tests/unit/
 * test_readout.c drives them without privileges.
 *
 *  - smp_totals_from_cpus: the per-CPU sums of vmact_stats into cumulative
 *    totals (the integral scheme is explained in sampler-types.h);
 *  - smp_totals_add_pending: the run time of a thread whose switch-in no
 *    event reported, found by the vmact_pending task iterator, counted as
 *    the hooks will count it once they see the thread switch out;
 *  - smp_readout_step: two cumulative totals into the interval's load,
 *    CPU utilisation, run delay and load averages;
 *  - smp_readout_cpustat: the cgroup's throttling counters and their change;
 *  - smp_thread_*: the same for one thread of the per-thread split;
 *  - smp_readout_record: the reading as the vmact_readout map shows it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/cpustat.h"
#include "bpf/loadavg.h"
#include "bpf/sampler-types.h"
#include "bpf/sampler.h"

/* Cumulative totals of one VM since its registration. */
struct smp_totals {
	uint64_t runnable_ns, oncpu_ns;
	uint64_t wakeups, switches, preemptions, untracked, recovered_ns, recoveries;
	int64_t nr_runnable, nr_oncpu;
};

/* What a VM's next readout is measured against. */
struct smp_readout_state {
	uint64_t last_t; /* CLOCK_MONOTONIC ns of the last readout */
	struct smp_totals last;
	struct smp_loadavg la;
	bool have_cs; /* last_cs holds an earlier cpu.stat */
	struct vmact_cpustat last_cs;
};

/* now - then, or 0 when then is later: a read racing an event can be off
 * by a few ns either way. */
uint64_t smp_delta(uint64_t now, uint64_t then);

/* Sums one slot's per-CPU values at time t (taken after the lookup, so
 * that every event folded into the sums happened before it). */
void smp_totals_from_cpus(const struct smp_cpu_stats *v, int ncpus, uint64_t t,
			  struct smp_totals *out);
/* Adds one vmact_pending record: on a CPU for p->ns, and runnable for that
 * long too unless the hooks already count the thread as runnable. */
void smp_totals_add_pending(struct smp_totals *t, const struct smp_pending *p);
/* Adds what smp_totals_add_pending gathered for a VM (runnable_ns,
 * oncpu_ns and nr_oncpu; the other fields of pend are ignored). */
void smp_totals_add(struct smp_totals *t, const struct smp_totals *pend);

/* Starts a VM's readouts at totals first taken at time t; the load
 * averages start at nr_runnable (clamped at 0) instead of the kernel's
 * boot-time 0, so a freshly registered VM does not look idle for minutes. */
void smp_readout_start(struct smp_readout_state *st, const struct smp_totals *first, uint64_t t,
		       int64_t nr_runnable);
/* The reading of the interval from st's last readout to now (taken at t),
 * cpu.stat fields left clear; st moves on to now. */
void smp_readout_step(struct smp_readout_state *st, const struct smp_totals *now, uint64_t t,
		      struct smp_reading *r);
/* The cgroup's counters cs into r, with their change since st's last
 * cpu.stat (from the group's start when there was none or the group was
 * recreated); st keeps cs. */
void smp_readout_cpustat(struct smp_readout_state *st, const struct vmact_cpustat *cs,
			 struct smp_reading *r);

/* v x 1000, rounded, clamped to [0, UINT32_MAX]. */
uint32_t smp_milli(double v);
/* The reading as vmact_readout shows it (name truncated to fit). */
void smp_readout_record(const struct smp_reading *r, const char *name, pid_t tgid, uint64_t t,
			struct smp_readout *o);

/* One thread of the per-thread split from its vmact_tasks entry at time
 * now: the closed intervals plus the open ones. comm and vcpu are left
 * clear. */
void smp_thread_from_task(pid_t tid, const struct smp_task *v, uint64_t now,
			  struct smp_thread *out);
/* Adds a vmact_pending record of that thread. */
void smp_thread_add_pending(struct smp_thread *t, const struct smp_pending *p);
/* Caps on-CPU time at runnable time (see smp_reading) and sets delay_ns. */
void smp_thread_finish(struct smp_thread *t);
/* Adds one thread of the split to a VM's vCPU totals if it is a vCPU
 * thread (t->vcpu >= 0). */
void smp_vcpus_add(struct smp_vcpus *v, const struct smp_thread *t);
