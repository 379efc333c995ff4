/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/cgroup/cpu-quota.h"

#include <errno.h>
#include <math.h>

#define USEC_PER_SEC 1000000ULL

typedef unsigned __int128 u128;

static u128 div_round_up(u128 a, u128 b)
{
	return (a + b - 1) / b;
}

int act_cpu_bw_from_milli(uint32_t milli, uint32_t overcommit, uint64_t period_us,
			  struct act_cpu_bw *out, struct act_cpu_bw_info *info,
			  struct vmact_err *err)
{
	if (milli == 0)
		return vmact_err_set(
			err, EINVAL,
			"milli_cpu: 0 is not a CPU limit (use an unlimited limit to remove it)");
	if (overcommit < ACT_CPU_OVERCOMMIT_MIN || overcommit > ACT_CPU_OVERCOMMIT_MAX)
		return vmact_err_set(err, EINVAL, "overcommit: %u/1000 outside [%u, %u]/1000",
				     overcommit, ACT_CPU_OVERCOMMIT_MIN, ACT_CPU_OVERCOMMIT_MAX);
	if (period_us < ACT_CPU_PERIOD_MIN_US || period_us > ACT_CPU_PERIOD_MAX_US)
		return vmact_err_set(err, EINVAL,
				     "period_us: %llu outside the kernel's [%llu, %llu]",
				     (unsigned long long)period_us, ACT_CPU_PERIOD_MIN_US,
				     ACT_CPU_PERIOD_MAX_US);

	/* Rate in µs of CPU per second of wall time; exact in integers because
	 * the factor is in thousandths: milli/1000 CPUs × f/1000 × 1e6 µs. */
	u128 rate = (u128)milli * overcommit;
	if (rate < ACT_CPU_QUOTA_MIN_US)
		return vmact_err_set(err, ERANGE,
				     "milli_cpu: %u × %u/1000 is below the kernel's smallest limit "
				     "(1 ms per 1 s period)",
				     milli, overcommit);

	/* systemd's cgroup_cpu_adjust_period(): the period must be long enough
	 * for the quota to reach 1 ms: P >= 1 ms × 1 s / rate. With rate >=
	 * 1000 µs/s that bound is at most 1 s. */
	u128 min_period = div_round_up((u128)ACT_CPU_QUOTA_MIN_US * USEC_PER_SEC, rate);
	u128 period = period_us;
	bool clamped = false;
	if (period < min_period) {
		period = min_period;
		clamped = true;
	}

	u128 quota = div_round_up(rate * period, USEC_PER_SEC);
	if (quota > ACT_CPU_QUOTA_MAX_US)
		return vmact_err_set(
			err, ERANGE,
			"milli_cpu: %u × %u/1000 needs a quota above the kernel's %llu us", milli,
			overcommit, ACT_CPU_QUOTA_MAX_US);
	/* ceil(rate × period / 1 s) >= 1000 follows from period >= min_period. */
	out->quota_us = (uint64_t)quota;
	out->period_us = (uint64_t)period;
	if (info)
		info->period_clamped = clamped;
	return 0;
}

int act_cpu_overcommit_from_double(double factor, uint32_t *permille, struct vmact_err *err)
{
	/* !(a <= x) also catches NaN */
	if (!(factor >= ACT_CPU_OVERCOMMIT_MIN / 1000.0 &&
	      factor <= ACT_CPU_OVERCOMMIT_MAX / 1000.0))
		return vmact_err_set(err, EINVAL, "overcommit: %g outside [%g, %g]", factor,
				     ACT_CPU_OVERCOMMIT_MIN / 1000.0,
				     ACT_CPU_OVERCOMMIT_MAX / 1000.0);
	*permille = (uint32_t)llround(factor * 1000.0);
	return 0;
}

int act_cpu_bw_check(const struct act_cpu_bw *bw, struct vmact_err *err)
{
	if (bw->period_us < ACT_CPU_PERIOD_MIN_US || bw->period_us > ACT_CPU_PERIOD_MAX_US)
		return vmact_err_set(err, EINVAL, "period_us: %llu outside [%llu, %llu]",
				     (unsigned long long)bw->period_us, ACT_CPU_PERIOD_MIN_US,
				     ACT_CPU_PERIOD_MAX_US);
	if (bw->quota_us != ACT_CPU_QUOTA_UNLIMITED &&
	    (bw->quota_us < ACT_CPU_QUOTA_MIN_US || bw->quota_us > ACT_CPU_QUOTA_MAX_US))
		return vmact_err_set(err, EINVAL, "quota_us: %llu outside [%llu, %llu]",
				     (unsigned long long)bw->quota_us, ACT_CPU_QUOTA_MIN_US,
				     ACT_CPU_QUOTA_MAX_US);
	return 0;
}

uint32_t act_cpu_bw_to_milli(const struct act_cpu_bw *bw, uint32_t overcommit)
{
	if (bw->quota_us == ACT_CPU_QUOTA_UNLIMITED || bw->period_us == 0 || overcommit == 0)
		return UINT32_MAX;
	u128 milli = (u128)bw->quota_us * USEC_PER_SEC / bw->period_us / overcommit;
	return milli > UINT32_MAX ? UINT32_MAX : (uint32_t)milli;
}

/* Compares q1/p1 with q2/p2, unlimited being larger than any ratio. */
static int ratio_cmp(uint64_t q1, uint64_t p1, uint64_t q2, uint64_t p2)
{
	bool inf1 = q1 == ACT_CPU_QUOTA_UNLIMITED, inf2 = q2 == ACT_CPU_QUOTA_UNLIMITED;
	if (inf1 || inf2)
		return inf1 - inf2;
	u128 a = (u128)q1 * p2, b = (u128)q2 * p1;
	return (a > b) - (a < b);
}

/* Is q/p within the closed interval spanned by the old and new ratios? */
static bool ratio_between(uint64_t q, uint64_t p, const struct act_cpu_bw *a,
			  const struct act_cpu_bw *b)
{
	const struct act_cpu_bw *lo = a, *hi = b;
	if (ratio_cmp(a->quota_us, a->period_us, b->quota_us, b->period_us) > 0) {
		lo = b;
		hi = a;
	}
	return ratio_cmp(q, p, lo->quota_us, lo->period_us) >= 0 &&
	       ratio_cmp(q, p, hi->quota_us, hi->period_us) <= 0;
}

int act_cpu_v1_plan(const struct act_cpu_bw *old, const struct act_cpu_bw *new,
		    struct act_cpu_v1_step steps[ACT_CPU_V1_PLAN_MAX])
{
	int n = 0;
#define STEP(k, v) (steps[n++] = (struct act_cpu_v1_step){ .kind = (k), .value = (v) })

	if (old->period_us == new->period_us) {
		if (old->quota_us != new->quota_us)
			STEP(ACT_CPU_V1_QUOTA, new->quota_us);
		return n;
	}
	if (new->quota_us == ACT_CPU_QUOTA_UNLIMITED) {
		/* Unlimited first: its effective ratio is the parent's, always valid. */
		if (old->quota_us != ACT_CPU_QUOTA_UNLIMITED)
			STEP(ACT_CPU_V1_QUOTA, ACT_CPU_QUOTA_UNLIMITED);
		STEP(ACT_CPU_V1_PERIOD, new->period_us);
		return n;
	}
	if (old->quota_us == ACT_CPU_QUOTA_UNLIMITED) {
		/* The period of an unlimited group constrains nothing. */
		STEP(ACT_CPU_V1_PERIOD, new->period_us);
		STEP(ACT_CPU_V1_QUOTA, new->quota_us);
		return n;
	}
	if (ratio_between(new->quota_us, old->period_us, old, new)) {
		STEP(ACT_CPU_V1_QUOTA, new->quota_us);
		STEP(ACT_CPU_V1_PERIOD, new->period_us);
	} else if (ratio_between(old->quota_us, new->period_us, old, new)) {
		STEP(ACT_CPU_V1_PERIOD, new->period_us);
		STEP(ACT_CPU_V1_QUOTA, new->quota_us);
	} else {
		STEP(ACT_CPU_V1_QUOTA, ACT_CPU_QUOTA_UNLIMITED);
		STEP(ACT_CPU_V1_PERIOD, new->period_us);
		STEP(ACT_CPU_V1_QUOTA, new->quota_us);
	}
	return n;
#undef STEP
}
