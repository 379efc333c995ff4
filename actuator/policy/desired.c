/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/policy/desired.h"

#include <errno.h>

/* 1 + floor(x / unit): the smallest whole number of units strictly above x. */
static uint32_t cu_above(uint64_t x, uint64_t unit)
{
	uint64_t q = x / unit;

	return q >= UINT32_MAX ? UINT32_MAX : (uint32_t)(q + 1);
}

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int act_desired_resources(const struct act_desired_input *in, act_time_t now,
			  struct act_desired *out, struct act_warnings *w, struct vmact_err *err)
{
	struct act_desired d = { 0 };
	struct vmact_resources goal_res, result, cu = in->cu;
	uint32_t goal, initial;
	int r;

	if (cu.milli_cpu == 0 || cu.mem_bytes == 0)
		return vmact_err_set(err, EINVAL, "compute unit: cpu and mem must be non-zero");
	if (vmact_res_any_gt(in->min, in->max))
		return vmact_err_set(
			err, EINVAL,
			"bounds: min {%u m, %llu B} has a field above max {%u m, %llu B}",
			in->min.milli_cpu, (unsigned long long)in->min.mem_bytes, in->max.milli_cpu,
			(unsigned long long)in->max.mem_bytes);

	r = act_goal_cu(in->cfg, &cu, in->sys, in->lfc, &d.goal, w, err);
	if (r < 0)
		return r;
	goal = initial = in->cpu_goal_milli ? act_goal_from_parts(&d.goal, false) : d.goal.goal_cu;

	/* Compared with the initial goal, so that the requested upscale raising
	 * the goal does not hide that the denial alone would have too. */
	if (in->requested_upscale) {
		const struct act_requested_upscale *u = in->requested_upscale;
		int64_t left = u->at + in->requested_upscale_valid - now;

		if (left > 0) {
			uint32_t req = 0;

			if (u->cpu && cu_above(u->base.milli_cpu, cu.milli_cpu) > req)
				req = cu_above(u->base.milli_cpu, cu.milli_cpu);
			if (u->mem && cu_above(u->base.mem_bytes, cu.mem_bytes) > req)
				req = cu_above(u->base.mem_bytes, cu.mem_bytes);
			if (req > initial) {
				d.requested_upscale_affected = true;
				d.requested_upscale_expires_in = left;
				if (req > goal)
					goal = req;
			}
		}
	}

	bool denied_in_effect = false;
	int64_t denied_left = 0;

	if (in->denied) {
		denied_left = in->denied->at + in->denied_cooldown - now;
		denied_in_effect = denied_left > 0;
	}
	if (denied_in_effect) {
		uint32_t a = cu_above(in->denied->requested.milli_cpu, cu.milli_cpu);
		uint32_t b = cu_above(in->denied->requested.mem_bytes, cu.mem_bytes);
		uint32_t req = a > b ? a : b;

		if (req > initial) {
			d.denied_affected = true;
			if (req > goal)
				goal = req;
		}
	}

	/* Go multiplies by uint16(goal), wrapping above 65535 CU; saturating
	 * keeps a huge goal huge (and then capped by max). */
	goal_res = vmact_res_mul(cu, goal);
	/* Under vmact's own CPU policy the CUs size memory; the CPU is its
	 * goal, raised to the CUs only by the monitor's floors above. */
	if (in->cpu_goal_milli) {
		uint32_t cpu = *in->cpu_goal_milli;

		if (goal > initial && goal_res.milli_cpu > cpu)
			cpu = goal_res.milli_cpu;
		goal_res.milli_cpu = cpu;
	}

	/* The host's memory evidence sizes memory; the monitor's floors
	 * above still count (a VM without a monitor has none). */
	if (in->mem_goal_bytes) {
		uint64_t mem = *in->mem_goal_bytes;

		if (goal > initial && goal_res.mem_bytes > mem)
			mem = goal_res.mem_bytes;
		goal_res.mem_bytes = mem;
	}

	/* Without every metric a decision may still scale up, but never down:
	 * e.g. an agent restart without LFC data must not flush the cache. */
	if (!d.goal.has_all_metrics) {
		uint32_t cpu = goal_res.milli_cpu;

		goal_res = vmact_res_max(goal_res, in->using_);
		/* vmact's CPU goal has its metrics (the sampler's) whatever
		 * the guest's memory statistics say. */
		if (in->cpu_goal_milli)
			goal_res.milli_cpu = cpu;
	}

	result = vmact_res_max(vmact_res_min(goal_res, in->max), in->min);

	/* A denied downscale must not be retried below what was denied, even
	 * when that leaves the VM above max (bounds lowered under it). */
	if (denied_in_effect) {
		const struct act_denied_downscale *dd = in->denied;
		struct vmact_resources floor_res, before = result;

		if (!vmact_res_any_gt(result, dd->requested))
			act_warn(w, ACT_WARN_DENIED_ABOVE_MAX);
		floor_res.milli_cpu = (uint32_t)
			u64_min(dd->current.milli_cpu,
				(uint64_t)cu.milli_cpu *
					((uint64_t)dd->requested.milli_cpu / cu.milli_cpu + 1));
		{
			unsigned __int128 m =
				(unsigned __int128)cu.mem_bytes *
				((unsigned __int128)(dd->requested.mem_bytes / cu.mem_bytes) + 1);

			floor_res.mem_bytes = m > dd->current.mem_bytes ? dd->current.mem_bytes
									: (uint64_t)m;
		}
		result = vmact_res_max(result, floor_res);
		if (!vmact_res_eq(result, before))
			d.denied_affected = true;
		d.denied_expires_in = denied_left;
	}

	if (!d.denied_affected && vmact_res_any_gt(result, in->max))
		return vmact_err_set(err, EINVAL, "desired resources above max");
	if (vmact_res_any_lt(result, in->min))
		return vmact_err_set(err, EINVAL, "desired resources below min");

	d.res = result;
	*out = d;
	return 0;
}

bool act_desired_wait(const struct act_desired *d, bool monitor_downscale_planned,
		      bool monitor_request_ongoing, int64_t *wait)
{
	bool waiting = false;
	int64_t t = INT64_MAX;

	if (d->denied_affected && !monitor_downscale_planned && !monitor_request_ongoing) {
		t = d->denied_expires_in;
		waiting = true;
	}
	if (d->requested_upscale_affected) {
		if (d->requested_upscale_expires_in < t)
			t = d->requested_upscale_expires_in;
		waiting = true;
	}
	if (waiting)
		*wait = t;
	return waiting;
}
