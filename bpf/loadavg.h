/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel's load average (kernel/sched/loadavg.c) fed with exact
 * interval averages instead of 5-second point samples.
 *
 * The kernel samples the runnable count n every LOAD_FREQ = 5 s and updates
 *   a' = a*e + n*(1 - e),   e = EXP_k / FIXED_1
 * with FIXED_1 = 2048 and EXP_1 = 1884, EXP_5 = 2014, EXP_15 = 2037
 * (e = exp(-5 s / tau) for tau = 1, 5, 15 min, rounded to 11 bits).
 * We know the integral of n over each readout interval [t0, t1] exactly, so
 * we advance by the interval's mean m = integral / dt with the decay for dt:
 *   a' = a*e^(dt/5s) + m*(1 - e^(dt/5s))
 * using the kernel's own e. For dt = 5 s this is the kernel's step with its
 * point sample replaced by the 5-second mean (no aliasing: a thread that runs
 * 1 s out of every 5 counts 0.2, never 0 or 1). For other dt it is the exact
 * solution of the same first-order filter when n is constant over the
 * interval; when n varies within an interval much shorter than tau the
 * difference is second order in dt/tau. Several short steps compose to one
 * long step with the same mean. An unseeded average takes the first mean
 * as is; the sampler seeds it at registration with the exact runnable count
 * of that instant instead of the kernel's boot-time 0, so a freshly
 * registered VM does not appear idle for minutes. */
#pragma once

#include <stdbool.h>

#define SMP_FSHIFT      11
#define SMP_FIXED_1     (1UL << SMP_FSHIFT)
#define SMP_EXP_1       1884UL
#define SMP_EXP_5       2014UL
#define SMP_EXP_15      2037UL
#define SMP_LOAD_FREQ_S 5.0

struct smp_loadavg {
	double avg[3];
	bool seeded;
};

/* Advances by an interval of dt_s seconds whose mean runnable count was
 * mean. dt_s <= 0 leaves it unchanged. */
void smp_loadavg_update(struct smp_loadavg *la, double mean, double dt_s);

/* One step of the kernel's fixed-point recurrence (calc_load), for tests
 * and comparison: load and active are FIXED_1-scaled. */
unsigned long smp_loadavg_kernel_step(unsigned long load, unsigned long exp, unsigned long active);
