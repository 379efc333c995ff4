/* SPDX-License-Identifier: Apache-2.0 */
/* Milli-CPUs to CFS bandwidth (quota/period), and the order in which a v1
 * cgroup's two bandwidth files must be written. Pure functions: no I/O.
 *
 * Units: quota and period in microseconds, as the kernel's cgroup files
 * take them (cpu.cfs_quota_us / cpu.cfs_period_us on v1, cpu.max on v2). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Kernel limits (kernel/sched/core.c, Documentation/scheduler/sched-bwc.rst):
 * period and quota at least 1 ms, period at most 1 s, quota at most
 * max_cfs_runtime = 2^44 - 1 µs. */
#define ACT_CPU_PERIOD_MIN_US 1000ULL
#define ACT_CPU_PERIOD_MAX_US 1000000ULL
#define ACT_CPU_QUOTA_MIN_US  1000ULL
#define ACT_CPU_QUOTA_MAX_US  17592186044415ULL
/* The kernel's and libvirt's default period. */
#define ACT_CPU_PERIOD_DEFAULT_US 100000ULL
/* "No limit": v1 cpu.cfs_quota_us -1, v2 "max". */
#define ACT_CPU_QUOTA_UNLIMITED UINT64_MAX

/* Overcommit factor in thousandths: 1000 = ×1.0 (vmact's default: a VM
 * given 250m gets exactly 25 ms of CPU per 100 ms), 4000 = ×4 (what Neon's
 * neonvm-runner used, doc/protocols.md, "Runner cgroup quota": the exact
 * limit was found too pessimistic because QEMU's own threads share it). Below 1000 the host
 * gives a VM less than it was granted. Range ×0.01 … ×100, the same as the
 * configuration key cgroup.cpu_quota_overcommit. */
#define ACT_CPU_OVERCOMMIT_DEFAULT 1000U
#define ACT_CPU_OVERCOMMIT_MIN     10U
#define ACT_CPU_OVERCOMMIT_MAX     100000U

/* The configuration's factor (a JSON number such as 1.0 or 4) in
 * thousandths, rounded to the nearest; -EINVAL naming "overcommit" when
 * not finite or outside the range. */
int act_cpu_overcommit_from_double(double factor, uint32_t *permille, struct vmact_err *err);

struct act_cpu_bw {
	uint64_t quota_us; /* ACT_CPU_QUOTA_UNLIMITED = no limit */
	uint64_t period_us;
};

/* How a limit was derived; period_clamped says the requested period was
 * raised so the quota stays >= 1 ms (systemd logs this once per unit). */
struct act_cpu_bw_info {
	bool period_clamped;
};

/* quota = ceil(rate × period) with rate = milli × overcommit / 1000 CPUs,
 * period raised like systemd's cgroup_cpu_adjust_period() so the quota is
 * never below 1 ms, and never above 1 s.
 *
 * milli == 0 is -EINVAL: a zero limit is not "no limit" and not "the
 * smallest limit"; callers that mean unlimited use act_cpu_bw_unlimited().
 * period_us must be within [1 ms, 1 s] (-EINVAL, named "period_us"),
 * overcommit within [ACT_CPU_OVERCOMMIT_MIN, ACT_CPU_OVERCOMMIT_MAX]
 * (-EINVAL). A rate below 1 milli-CPU (possible only with a factor below
 * ×1) cannot be expressed — the kernel's smallest limit is 1 ms per 1 s —
 * and a quota beyond the kernel's maximum cannot either: both -ERANGE,
 * never clamped (a silently different limit is a bound nobody asked for).
 * info may be NULL. */
int act_cpu_bw_from_milli(uint32_t milli, uint32_t overcommit, uint64_t period_us,
			  struct act_cpu_bw *out, struct act_cpu_bw_info *info,
			  struct vmact_err *err);

static inline struct act_cpu_bw act_cpu_bw_unlimited(uint64_t period_us)
{
	return (struct act_cpu_bw){ .quota_us = ACT_CPU_QUOTA_UNLIMITED, .period_us = period_us };
}

/* Validates a limit before it is written (both fields within the kernel's
 * ranges; unlimited quota allowed). */
int act_cpu_bw_check(const struct act_cpu_bw *bw, struct vmact_err *err);

/* Milli-CPUs a limit grants (floor), for reporting; UINT32_MAX when
 * unlimited or beyond uint32. overcommit as above. */
uint32_t act_cpu_bw_to_milli(const struct act_cpu_bw *bw, uint32_t overcommit);

/* v1 write plan. On cgroup v1 the kernel checks after every single write
 * that no group's quota/period ratio exceeds its nearest limited ancestor's
 * (EINVAL otherwise, tg_cfs_schedulable_down). Writing quota and period
 * separately passes through an intermediate ratio; the plan picks an order
 * whose intermediate ratio lies between the old and the new ratio, which is
 * valid whenever both ends are. When no such order exists (quota and period
 * move in opposite directions relative to the ratio), it goes through
 * "unlimited" (-1): a v1 group with quota -1 takes its parent's ratio,
 * which is always valid, so every intermediate state is. */
enum act_cpu_v1_step_kind {
	ACT_CPU_V1_QUOTA,  /* write value to cpu.cfs_quota_us (UNLIMITED = -1) */
	ACT_CPU_V1_PERIOD, /* write value to cpu.cfs_period_us */
};

struct act_cpu_v1_step {
	enum act_cpu_v1_step_kind kind;
	uint64_t value;
};

#define ACT_CPU_V1_PLAN_MAX 3

/* Fills steps (at most ACT_CPU_V1_PLAN_MAX) and returns how many, 0 when
 * nothing changes. */
int act_cpu_v1_plan(const struct act_cpu_bw *old, const struct act_cpu_bw *new,
		    struct act_cpu_v1_step steps[ACT_CPU_V1_PLAN_MAX]);
