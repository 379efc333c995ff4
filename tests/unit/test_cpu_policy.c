/* SPDX-License-Identifier: Apache-2.0 */
/* The reactive CPU policy never moves against the load (doc/policy.md,
 * "What a decision never does"): the sequences seen on real hosts that made
 * it do so, then its promises as properties of random sequences of
 * readings, each decision's goal also driven through the scaling core to
 * the hotplug it would start (bounds and the scheduler's permit). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include "actuator/policy/actions.h"
#include "actuator/policy/cpu-demand.h"
#include "agent-glue/codec/scaling.h"

#define MS   1000000LL
#define SEC  1000000000LL
#define TICK (50 * MS) /* vmactd's default policy.tick_ms */

/* One readout of `len` ns: vCPUs the sampler counted, quota (0: none), the
 * vCPU threads' runnable and waiting time and the throttled time, each as a
 * share of the window, and whether a vCPU was runnable at its end. */
struct reading {
	unsigned vcpus;
	uint32_t quota;
	double runnable, delay, throttled;
	bool ended;
};

static void feed_one(struct act_cpu_demand *d, const struct act_cpu_policy *p, int64_t *now,
		     const struct reading *r)
{
	struct act_cpu_window w = {
		.len = TICK,
		.vcpus = r->vcpus,
		.quota_milli = r->quota,
		.vcpu_runnable_ns = (uint64_t)(r->runnable * (double)TICK),
		.vcpu_delay_ns = (uint64_t)(r->delay * (double)TICK),
		.throttled_ns = (uint64_t)(r->throttled * (double)TICK),
		.ended = r->ended,
	};

	*now += TICK;
	w.at = *now;
	act_cpu_demand_feed(d, p, &w);
}

static uint32_t feed_decide(struct act_cpu_demand *d, const struct act_cpu_policy *p, int64_t *now,
			    unsigned count, const struct reading *r, uint32_t cur,
			    struct act_cpu_decision *dec)
{
	for (unsigned i = 0; i < count; i++) {
		feed_one(d, p, now, r);
		assert_true(act_cpu_demand_decide(d, p, cur, dec));
		cur = dec->goal_milli;
	}
	return cur;
}

static void policy_for(struct act_cpu_policy *p, uint32_t min, uint32_t max)
{
	act_cpu_policy_defaults(p);
	p->min_milli = min;
	p->max_milli = max;
}

/* The Cockpit page's busy guest: grown 1 CPU -> 1250m (2 vCPUs), then read
 * with the second vCPU's thread not yet seen by the sampler (it has not
 * run): the allowance read 1000m and the held goal was taken from it,
 * "shrink to 1 vCPU (1.000 CPU): vCPUs 97 % busy for 0.2 s". */
static void test_grown_then_stale_allowance_holds(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;
	const struct reading busy1 = { .vcpus = 1, .runnable = 1.0, .delay = 0.01 };
	const struct reading after = { .vcpus = 1, .quota = 1250, .runnable = 0.97, .delay = 0.02 };
	uint32_t cur;

	policy_for(&p, 1000, 4000);
	act_cpu_demand_init(&d);
	cur = feed_decide(&d, &p, &now, 4, &busy1, 1000, &dec);
	assert_int_equal(dec.cls, ACT_CPU_SATURATED);
	assert_int_equal(cur, 1250);
	act_cpu_demand_resized(&d);
	/* A second of readouts at the new size, the same guest load. */
	for (int i = 0; i < 20; i++) {
		feed_one(&d, &p, &now, &after);
		assert_true(act_cpu_demand_decide(&d, &p, cur, &dec));
		if (dec.goal_milli < cur)
			fail_msg("readout %d after the growth: %s with goal %u below %u", i,
				 act_cpu_class_name(dec.cls), dec.goal_milli, cur);
	}
}

/* A growth decided, its permit not yet there (the VM still at its old
 * size): the next readouts a little below the target must not take the
 * goal back at once. */
static void test_growth_not_undone_before_it_happens(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;
	const struct reading busy = { .vcpus = 1, .runnable = 1.0, .delay = 0.01 };
	const struct reading dip = { .vcpus = 1, .runnable = 0.85, .delay = 0.01 };
	uint32_t cur;

	policy_for(&p, 1000, 4000);
	act_cpu_demand_init(&d);
	cur = feed_decide(&d, &p, &now, 4, &busy, 1000, &dec);
	assert_int_equal(cur, 1250);
	cur = feed_decide(&d, &p, &now, 10, &dip, cur, &dec);
	assert_int_equal(dec.cls, ACT_CPU_OK);
	assert_int_equal(cur, 1250);
}

/* The demo's plot: 2 busy loops in 2 vCPUs at 1250m on a busy host,
 * contended for 12 s (held at 1250m); the host frees up as the loops end
 * and the last readout before they were gone reads throttled. The growth
 * to 2 CPUs came in the tick the load ended, and went 15 s later. */
static void test_no_growth_when_the_load_has_ended(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d, again;
	struct act_cpu_decision dec;
	int64_t now = 0, t;
	const struct reading contended = {
		.vcpus = 2, .quota = 1250, .runnable = 2.0, .delay = 1.1, .throttled = 0.02
	};
	/* throttled time is credited when the group is let run again: it can
	 * come in a lump, in the readout the load ends in */
	struct reading throttled = {
		.vcpus = 2, .quota = 1250, .runnable = 2.0, .delay = 1.9, .throttled = 0.9
	};
	uint32_t cur;

	policy_for(&p, 1000, 4000);
	act_cpu_demand_init(&d);
	cur = feed_decide(&d, &p, &now, 240, &contended, 1250, &dec);
	assert_int_equal(dec.cls, ACT_CPU_CONTENDED);
	assert_int_equal(cur, 1250);
	again = d;
	t = now;
	throttled.ended = true;
	feed_decide(&d, &p, &now, 1, &throttled, cur, &dec);
	if (dec.goal_milli != cur)
		fail_msg("%s, no vCPU runnable at the readout: goal %u, was %u",
			 act_cpu_class_name(dec.cls), dec.goal_milli, cur);
	/* The same readout with the load still there: the quota holds it
	 * back, the quota goes up first. */
	throttled.ended = false;
	feed_decide(&again, &p, &t, 1, &throttled, cur, &dec);
	assert_int_equal(dec.cls, ACT_CPU_THROTTLED);
	assert_int_equal(dec.goal_milli, 2000);
}

/* A contended stretch is a hold whatever the goal in force: not the
 * allowance of the readouts, when the goal above it waits for its permit. */
static void test_contended_holds_the_goal(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;
	const struct reading contended = { .vcpus = 1, .runnable = 1.0, .delay = 0.45 };

	policy_for(&p, 1000, 4000);
	act_cpu_demand_init(&d);
	feed_decide(&d, &p, &now, 40, &contended, 1500, &dec);
	assert_int_equal(dec.cls, ACT_CPU_CONTENDED);
	assert_int_equal(dec.goal_milli, 1500);
}

/* ---- properties -------------------------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
	/* splitmix64: a seed replays a run */
	uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static unsigned rndn(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static double rndf(void)
{
	return (double)(rnd() >> 11) / (double)(1ULL << 53);
}

static const struct vmact_resources CU = { 250, 256ULL << 20 };

/* The VM as the runner sees it: vCPUs plugged, quota, and a scaling core
 * whose hotplug is the one the goal would start. */
struct vm {
	unsigned vcpus;
	uint32_t quota;
	unsigned seen_lag; /* readouts the sampler still counts the old vCPUs */
	unsigned seen_vcpus;
	struct act_state core;
};

static uint32_t vm_size(const struct vm *v)
{
	uint32_t c = v->vcpus * 1000u;

	return v->quota && v->quota < c ? v->quota : c;
}

/* The hotplug the scaling core would start for this goal and permit lies
 * within the bounds and the permit. */
static void check_core(struct vm *v, uint32_t goal, uint32_t permit, uint64_t seed, int step)
{
	struct vmact_resources perm = { permit, v->core.using_.mem_bytes };
	struct act_actions a;
	struct vmact_err err = { 0 };

	act_state_update_cpu_goal(&v->core, true, goal);
	v->core.plugin.has_permit = true;
	v->core.plugin.permit = perm;
	assert_int_equal(act_next_actions(&v->core, 0, &a, &err), 0);
	if (!a.has_hotplug)
		return;
	if (a.hotplug.target.milli_cpu > permit ||
	    a.hotplug.target.milli_cpu > v->core.max.milli_cpu ||
	    a.hotplug.target.milli_cpu < v->core.min.milli_cpu)
		fail_msg("seed %llu step %d: hotplug to %u with permit %u, bounds %u-%u",
			 (unsigned long long)seed, step, a.hotplug.target.milli_cpu, permit,
			 v->core.min.milli_cpu, v->core.max.milli_cpu);
}

static void random_walk(uint64_t seed)
{
	struct ag_scaling_config cfg;
	struct act_timing timing;
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	struct vm v = { 0 };
	int64_t now = 0, grew_at = -1, regime_end = 0;
	double load = 0, wait = 0; /* the guest's runnable threads, host wait share */
	unsigned max_vcpus;
	uint32_t min, max, cur, permit;
	struct vmact_resources rmin, rmax, start;

	rng = seed * 0x2545F4914F6CDD1DULL + 7;
	max_vcpus = 1 + rndn(4);
	min = (1 + rndn(max_vcpus * 4)) * 250u;
	max = max_vcpus * 1000u;
	if (min > max)
		min = max;
	policy_for(&p, min, max);
	act_cpu_demand_init(&d);
	v.vcpus = (min + 999u) / 1000u;
	v.quota = min % 1000u ? min : 0;
	v.seen_vcpus = v.vcpus;
	cur = min;
	permit = max;

	ag_scaling_config_defaults(&cfg);
	act_timing_defaults(&timing);
	rmin = (struct vmact_resources){ min, 1ULL << 30 };
	rmax = (struct vmact_resources){ max, 1ULL << 30 };
	start = rmin;
	assert_int_equal(act_state_init(&v.core, &timing, &CU, &cfg, &start, &rmin, &rmax, NULL),
			 0);
	act_state_set_host_approval(&v.core, true, false);

	for (int step = 0; step < 3000; step++) {
		struct reading r = { 0 };
		uint32_t size = vm_size(&v), allowance;
		double use, f = 1.0;
		unsigned vc;

		/* The guest's load: a new level now and then, from idle to
		 * more threads than it has vCPUs, with or without others
		 * holding the host's CPUs. */
		if (now >= regime_end) {
			load = rndn(4) == 0 ? 0 : rndf() * (max_vcpus + 1);
			wait = rndn(3) == 0 ? 0.2 + 0.5 * rndf() : 0.05 * rndf();
			regime_end = now + (int64_t)(100 + rndn(5000)) * MS;
			/* the new level begins within this readout */
			f = rndf();
		}
		/* The sampler counts a plugged vCPU once its thread has run. */
		if (v.seen_lag) {
			v.seen_lag--;
			if (!v.seen_lag)
				v.seen_vcpus = v.vcpus;
		}
		vc = v.seen_vcpus;
		use = load < v.vcpus ? load : v.vcpus;
		/* what the quota lets it run; the rest of the time it waits,
		 * throttled */
		r.vcpus = vc;
		r.quota = v.quota;
		r.runnable = use;
		r.throttled = v.quota && use * 1000.0 > v.quota ? 0.3 + 0.3 * rndf()
								: 0.01 * rndf();
		r.delay = use * wait + r.throttled * use;
		if (f < 1.0 && load == 0) {
			/* the load ended within this readout: its busy part
			 * is still in the window's average */
			r.runnable = r.runnable > 0 ? r.runnable : (double)vc * (1 - f);
			r.delay = r.runnable * wait;
		}
		r.ended = load == 0 || (rndn(50) == 0 && load < 0.5);
		feed_one(&d, &p, &now, &r);
		assert_true(act_cpu_demand_decide(&d, &p, cur, &dec));

		allowance = r.quota && r.quota < vc * 1000u ? r.quota : vc * 1000u;
		if (dec.goal_milli < min || dec.goal_milli > max)
			fail_msg("seed %llu step %d: goal %u outside %u-%u",
				 (unsigned long long)seed, step, dec.goal_milli, min, max);
		if (dec.goal_milli < cur && dec.cls != ACT_CPU_OK)
			fail_msg("seed %llu step %d: shrink %u -> %u while %s",
				 (unsigned long long)seed, step, cur, dec.goal_milli,
				 act_cpu_class_name(dec.cls));
		if (dec.goal_milli < cur && grew_at >= 0 && now - grew_at < p.down_hold)
			fail_msg("seed %llu step %d: shrink %u -> %u %.2f s after a growth",
				 (unsigned long long)seed, step, cur, dec.goal_milli,
				 (double)(now - grew_at) / SEC);
		if (dec.goal_milli > cur && cur >= min) {
			if (r.ended)
				fail_msg("seed %llu step %d: growth %u -> %u on a readout whose "
					 "load had ended",
					 (unsigned long long)seed, step, cur, dec.goal_milli);
			if (r.runnable * 1000.0 < p.target * allowance)
				fail_msg("seed %llu step %d: growth %u -> %u on a readout %.0f %% "
					 "busy",
					 (unsigned long long)seed, step, cur, dec.goal_milli,
					 100.0 * r.runnable * 1000.0 / allowance);
			grew_at = now;
		}
		cur = dec.goal_milli;
		check_core(&v, cur, permit, seed, step);

		/* Now and then the scheduler's permit changes, and the VM is
		 * resized to what the goal and the permit allow, its new
		 * vCPU seen by the sampler some readouts later. */
		if (rndn(40) == 0)
			permit = min + rndn((max - min) / 250u + 1) * 250u;
		if (rndn(10) == 0) {
			uint32_t want = cur < permit ? cur : permit;

			if (want != size) {
				unsigned nv = (want + 999u) / 1000u;

				if (nv > v.vcpus) {
					v.vcpus = nv;
					v.seen_lag = rndn(30);
					if (!v.seen_lag)
						v.seen_vcpus = nv;
				}
				v.quota = want < v.vcpus * 1000u ? want : 0;
				act_cpu_demand_resized(&d);
				v.core.using_.milli_cpu = want;
			}
		}
	}
	act_state_free(&v.core);
}

static void test_property_never_against_the_load(void **state)
{
	const char *env = getenv("VMACT_POLICY_SEED");

	if (env) {
		random_walk(strtoull(env, NULL, 10));
		return;
	}
	for (uint64_t seed = 1; seed <= 300; seed++)
		random_walk(seed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grown_then_stale_allowance_holds),
		cmocka_unit_test(test_growth_not_undone_before_it_happens),
		cmocka_unit_test(test_no_growth_when_the_load_has_ended),
		cmocka_unit_test(test_contended_holds_the_goal),
		cmocka_unit_test(test_property_never_against_the_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
