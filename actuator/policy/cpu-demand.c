/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/policy/cpu-demand.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *act_cpu_class_name(enum act_cpu_class c)
{
	switch (c) {
	case ACT_CPU_OK:
		return "ok";
	case ACT_CPU_SATURATED:
		return "saturated";
	case ACT_CPU_THROTTLED:
		return "throttled";
	case ACT_CPU_CONTENDED:
		return "contended";
	}
	return "?";
}

void act_cpu_policy_defaults(struct act_cpu_policy *p)
{
	*p = (struct act_cpu_policy){
		.target = 0.9,
		.down_target = 0.75,
		.up_window = 200 * 1000000LL,
		.down_tau = 20 * 1000000000LL,
		.down_hold = 15 * 1000000000LL,
		.settle = 2 * 1000000000LL,
		.down_memory = 300 * 1000000000LL,
		.contended_share = 0.25,
		.throttled_share = 0.05,
		.cu_milli = 250,
	};
}

void act_cpu_demand_init(struct act_cpu_demand *d)
{
	memset(d, 0, sizeof(*d));
}

void act_cpu_demand_guest_load(struct act_cpu_demand *d, bool has, double load1)
{
	d->has_guest_load = has && isfinite(load1) && load1 >= 0;
	d->guest_load = d->has_guest_load ? load1 : 0;
}

void act_cpu_demand_resized(struct act_cpu_demand *d)
{
	if (d->n) {
		d->resized = true;
		d->resized_at = d->ring[(d->head + ACT_CPU_RING - 1) % ACT_CPU_RING].at;
	}
	d->n = 0;
	d->head = 0;
	d->below = false;
}

static double window_demand(const struct act_cpu_window *w)
{
	return (double)w->vcpu_runnable_ns / (double)w->len;
}

void act_cpu_demand_feed(struct act_cpu_demand *d, const struct act_cpu_policy *p,
			 const struct act_cpu_window *w)
{
	double x;

	if (w->len <= 0)
		return;
	d->ring[d->head] = *w;
	d->head = (d->head + 1) % ACT_CPU_RING;
	if (d->n < ACT_CPU_RING)
		d->n++;
	x = window_demand(w);
	if (!d->has_slow) {
		d->slow = x;
		d->has_slow = true;
	} else {
		/* An exponential average over time, whatever the readout
		 * rate: each window weighs by its own length. */
		double a = 1.0 - exp(-(double)w->len / (double)p->down_tau);

		d->slow += a * (x - d->slow);
	}
}

/* Whole compute units at or above milli. */
static uint32_t ceil_cu(double milli, uint32_t cu)
{
	double units = ceil(milli / cu - 1e-9);

	if (units < 1)
		units = 1;
	if (units * cu >= (double)UINT32_MAX)
		return UINT32_MAX - UINT32_MAX % cu;
	return (uint32_t)units * cu;
}

static uint32_t u32_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static uint32_t u32_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

#define FLAP_USED_SHARE 0.5

/* The flap memory (doc/policy.md, "The reactive policy"). A steady load with
 * peaks a minute apart is ok at the size its peaks grew it to, and the
 * slow average sizes a shrink below it; at the next peak the VM grows
 * back. That shrink was wrong: the size grown back to holds shrinks for
 * down_memory, twice as long after each further flap. */
static void remember_growth(struct act_cpu_demand *d, const struct act_cpu_policy *p, int64_t now,
			    uint32_t goal, struct act_cpu_decision *out)
{
	if (!p->down_memory || !d->shrank || now - d->shrank_at >= p->down_memory ||
	    goal < d->shrank_from)
		return;
	d->shrank = false;
	out->flap_after = now - d->shrank_at;
	if (d->floor_milli && now - d->floor_until >= p->down_memory)
		d->flaps = 0; /* the last flap is long past: start again */
	if (d->flaps < 4)
		d->flaps++;
	d->floor_milli = goal;
	out->flap_hold = p->down_memory << (d->flaps - 1);
	d->floor_until = now + out->flap_hold;
	out->flap = true;
}

/* The floor a shrink keeps to now, 0: none. Readings whose demand would
 * saturate the next size down renew it: the peaks that caused the flap
 * are still there. */
static uint32_t flap_floor(struct act_cpu_demand *d, const struct act_cpu_policy *p, int64_t now,
			   struct act_cpu_decision *out)
{
	if (!d->floor_milli || now >= d->floor_until)
		return 0;
	if (d->floor_milli > p->cu_milli &&
	    out->demand * 1000.0 >= p->target * (double)(d->floor_milli - p->cu_milli) &&
	    d->floor_until < now + p->down_memory)
		d->floor_until = now + p->down_memory;
	out->flap_floor_milli = d->floor_milli;
	return d->floor_milli;
}

bool act_cpu_demand_decide(struct act_cpu_demand *d, const struct act_cpu_policy *p,
			   uint32_t cur_milli, struct act_cpu_decision *out)
{
	const struct act_cpu_window *last;
	uint64_t runnable = 0, delay = 0, throttled = 0;
	int64_t span = 0, run_span = 0, lead = 0;
	unsigned run_n = 0, limit;
	bool sustained;
	uint32_t vcpu_milli, allowance, cur, goal;
	double own_delay;
	/* The goal moved on the readings, not on a bound or the guest's
	 * load average: only those changes make a flap (a minimum raised
	 * and lowered again by its operator is none). */
	bool by_load = false;
	double used = 0; /* demand now at an ok-class shrink (CPUs) */

	memset(out, 0, sizeof(*out));
	if (!d->n)
		return false;
	last = &d->ring[(d->head + ACT_CPU_RING - 1) % ACT_CPU_RING];
	vcpu_milli = last->vcpus * 1000u;
	allowance = last->quota_milli ? u32_min(last->quota_milli, vcpu_milli) : vcpu_milli;
	cur = cur_milli ? cur_milli : allowance;
	/* The trailing run of readouts that each reach the target, newest
	 * first, and the busy part of the readout before them: a load that
	 * started within a readout has been saturating the VM for that part
	 * of it already. Growth needs this run to cover the up window, so a
	 * decision does not wait for whole readouts after the load began,
	 * and a burst shorter than the window never grows the VM. */
	for (unsigned i = 0; i < d->n && allowance; i++) {
		const struct act_cpu_window *w =
			&d->ring[(d->head + ACT_CPU_RING - 1 - i) % ACT_CPU_RING];
		double wb = window_demand(w) * 1000.0 / allowance;

		if (wb < p->target) {
			if (run_span)
				lead = (int64_t)((wb < 1 ? wb : 1) * (double)w->len);
			break;
		}
		run_span += w->len;
		run_n++;
	}
	sustained = run_span && run_span + lead >= p->up_window;
	/* The figures are those of the newest readouts that cover the up
	 * window (only the run's, when it is sustained): a run can be a
	 * second long, and a class taken over all of it mixes the load of a
	 * second ago with the load now — a VM contended for 0.8 s whose host
	 * just freed up read as throttled in the tick its load ended. */
	limit = sustained ? run_n : d->n;
	for (unsigned i = 0; i < limit && span < p->up_window; i++) {
		const struct act_cpu_window *w =
			&d->ring[(d->head + ACT_CPU_RING - 1 - i) % ACT_CPU_RING];

		runnable += w->vcpu_runnable_ns;
		delay += w->vcpu_delay_ns;
		throttled += w->throttled_ns;
		span += w->len;
	}
	out->allowance_milli = allowance;
	out->slow = d->slow;
	out->demand = (double)runnable / (double)span;
	out->busy = allowance ? out->demand * 1000.0 / allowance : 0;
	out->throttled = (double)throttled / (double)span;
	/* How long the VM has been saturated, for the reason; the figures
	 * above cover the newest part of it. */
	out->span = sustained ? run_span + lead : span;
	/* While the group is throttled its runnable vCPUs all wait: that
	 * part of the run delay is the VM's own quota, the rest is waiting
	 * for host CPUs that others hold. */
	own_delay = (double)delay - (double)throttled * out->demand;
	out->contended = runnable && own_delay > 0 ? own_delay / (double)runnable : 0;

	/* Throttling alone is no reason to grow: a short burst throttles a
	 * VM that uses a third of its quota. It must use its allowance too. */
	if (out->busy < p->target)
		out->cls = ACT_CPU_OK;
	else if (out->throttled >= p->throttled_share && last->quota_milli &&
		 last->quota_milli < vcpu_milli)
		out->cls = ACT_CPU_THROTTLED;
	else
		out->cls = out->contended >= p->contended_share ? ACT_CPU_CONTENDED
								: ACT_CPU_SATURATED;

	if (d->has_guest_load && p->target > 0) {
		out->has_guest_load = true;
		out->guest_load = d->guest_load;
		out->guest_floor_milli =
			d->guest_load > 0 ? ceil_cu(d->guest_load * 1000.0 / p->target, p->cu_milli)
					  : 0;
	}
	/* Every class but ok holds at least the goal in force: a hold is
	 * "no change", not "the allowance these figures were read at",
	 * which after a growth can still be the size before it (a vCPU
	 * plugged whose thread the sampler has not seen run yet). */
	goal = cur;
	if (out->cls != ACT_CPU_OK)
		d->below = false;
	switch (out->cls) {
	case ACT_CPU_SATURATED:
	case ACT_CPU_THROTTLED:
		/* Grow only once the up window is saturated throughout: one
		 * short burst is not a load. At least one compute unit, at
		 * once. */
		if (!sustained)
			break;
		/* Nothing of the VM's was runnable when the window closed:
		 * its average still shows the load, but the load is over. */
		if (last->ended)
			break;
		/* A guest onlining a vCPU just plugged keeps it busy for a
		 * moment: that is not the load's demand. */
		if (d->resized && last->at - d->resized_at < p->settle)
			break;
		/* The quota first, all the way to the vCPUs the VM has (a
		 * throttled VM's demand is capped by the quota, so it cannot
		 * say how much more it wants); more vCPUs only once it is no
		 * longer the quota that holds it back. */
		if (out->cls == ACT_CPU_THROTTLED)
			goal = u32_max(vcpu_milli, cur);
		else
			goal = u32_max(u32_max(ceil_cu(out->demand * 1000.0 / p->target,
						       p->cu_milli),
					       allowance + p->cu_milli),
				       cur);
		by_load = true;
		break;
	case ACT_CPU_CONTENDED:
		break;
	case ACT_CPU_OK: {
		double base = d->slow > out->demand ? d->slow : out->demand;
		uint32_t g =
			u32_max(ceil_cu(base * 1000.0 / p->down_target, p->cu_milli),
				u32_max(out->guest_floor_milli, flap_floor(d, p, last->at, out)));

		/* Down only after the goal has stayed below the one in force
		 * (the allowance, once the VM has reached it) for the down
		 * hold, and never within the down hold of a growth. */
		if (g >= cur) {
			d->below = false;
			break;
		}
		if (!d->below) {
			d->below = true;
			d->below_since = last->at;
		}
		if (last->at - d->below_since >= p->down_hold &&
		    !(d->grew && last->at - d->grew_at < p->down_hold)) {
			goal = g;
			by_load = true;
			used = out->demand;
		}
		break;
	}
	}
	/* The guest's queue beyond its vCPUs, which the host cannot see;
	 * not a reason to grow once the load has ended. */
	if (out->cls != ACT_CPU_CONTENDED)
		goal = u32_max(goal, last->ended
					     ? u32_min(out->guest_floor_milli, u32_max(goal, cur))
					     : out->guest_floor_milli);
	if (p->max_milli && goal > p->max_milli)
		goal = p->max_milli;
	if (goal < p->min_milli)
		goal = p->min_milli;
	if (goal > cur) {
		d->grew = true;
		d->grew_at = last->at;
		d->below = false;
		if (by_load)
			remember_growth(d, p, last->at, goal, out);
	} else if (goal < cur && by_load) {
		/* Only a shrink that left the VM using half its new size or
		 * more, now (the slow average still carries a load that
		 * ended), can be a flap: after one down to where it idles a
		 * growth is a new load, not a peak. */
		d->shrank = used * 1000.0 >= FLAP_USED_SHARE * goal;
		d->shrank_at = last->at;
		d->shrank_from = cur;
	}
	out->goal_milli = goal;
	return true;
}

int act_cpu_decision_format(const struct act_cpu_decision *dec, char *buf, unsigned len)
{
	int n = snprintf(buf, len,
			 "%s: vCPUs %.0f %% busy for %.1f s (%.2f of %u.%03u CPUs, slow %.2f, "
			 "waiting for host %.0f %%, throttled %.0f %%), goal %u.%03u CPUs",
			 act_cpu_class_name(dec->cls), dec->busy * 100, dec->span / 1e9,
			 dec->demand, dec->allowance_milli / 1000, dec->allowance_milli % 1000,
			 dec->slow, dec->contended * 100, dec->throttled * 100,
			 dec->goal_milli / 1000, dec->goal_milli % 1000);

	if (n >= 0 && (unsigned)n < len && dec->has_guest_load)
		n += snprintf(buf + n, len - (unsigned)n, " (guest load1 %.2f: at least %u.%03u)",
			      dec->guest_load, dec->guest_floor_milli / 1000,
			      dec->guest_floor_milli % 1000);
	if (n >= 0 && (unsigned)n < len && dec->flap)
		n += snprintf(buf + n, len - (unsigned)n,
			      " (grown back after a shrink: no shrink below it for %.0f s)",
			      dec->flap_hold / 1e9);
	else if (n >= 0 && (unsigned)n < len && dec->flap_floor_milli &&
		 dec->flap_floor_milli >= dec->goal_milli)
		n += snprintf(buf + n, len - (unsigned)n, " (at least %u.%03u since a flap)",
			      dec->flap_floor_milli / 1000, dec->flap_floor_milli % 1000);
	return n < 0 || (unsigned)n >= len ? -1 : 0;
}

int act_cpu_decision_reason(const struct act_cpu_decision *dec, uint32_t from_milli, char *buf,
			    unsigned len)
{
	unsigned vcpus = (dec->goal_milli + 999) / 1000;
	const char *verb = dec->goal_milli > from_milli   ? "grow to"
			   : dec->goal_milli < from_milli ? "shrink to"
							  : "stay at";
	int n = snprintf(buf, len, "%s %u vCPU%s (%u.%03u CPU): ", verb, vcpus,
			 vcpus == 1 ? "" : "s", dec->goal_milli / 1000, dec->goal_milli % 1000);

	if (n < 0 || (unsigned)n >= len)
		return -1;
	switch (dec->cls) {
	case ACT_CPU_THROTTLED:
		n += snprintf(buf + n, len - (unsigned)n,
			      "throttled by its quota %.0f %% of %.1f s", dec->throttled * 100,
			      dec->span / 1e9);
		break;
	case ACT_CPU_SATURATED:
		n += snprintf(buf + n, len - (unsigned)n, "vCPUs %.0f %% busy for %.1f s",
			      dec->busy * 100, dec->span / 1e9);
		break;
	case ACT_CPU_CONTENDED:
		n += snprintf(buf + n, len - (unsigned)n, "vCPUs waiting for host CPUs %.0f %%",
			      dec->contended * 100);
		break;
	case ACT_CPU_OK:
	default:
		n += snprintf(buf + n, len - (unsigned)n,
			      "%.2f CPUs used on average (slow), "
			      "vCPUs %.0f %% busy",
			      dec->slow, dec->busy * 100);
		break;
	}
	if (n >= 0 && (unsigned)n < len && dec->has_guest_load &&
	    dec->guest_floor_milli >= dec->goal_milli)
		n += snprintf(buf + n, len - (unsigned)n, ", guest load1 %.2f", dec->guest_load);
	if (n >= 0 && (unsigned)n < len && dec->flap)
		n += snprintf(buf + n, len - (unsigned)n,
			      ", back to the size a shrink left %.0f s before (no shrink below it "
			      "for %.0f s)",
			      dec->flap_after / 1e9, dec->flap_hold / 1e9);
	return n < 0 || (unsigned)n >= len ? -1 : 0;
}
