/* SPDX-License-Identifier: Apache-2.0 */
/* The reactive CPU policy on constructed readouts: each case feeds a steady
 * pattern of windows and checks the class and the goal. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include "actuator/policy/cpu-demand.h"
#include "actuator/policy/desired.h"
#include "agent-glue/codec/scaling.h"

#define MS  1000000LL
#define SEC 1000000000LL
/* vmactd's default readout (policy.tick_ms) */
#define TICK (50 * MS)

/* Feeds `count` windows of `len` ns: `vcpus` vCPUs, quota (0 = none), and
 * per window a runnable, delay and throttled share of the window. */
static void feed(struct act_cpu_demand *d, const struct act_cpu_policy *p, int64_t *now,
		 unsigned count, int64_t len, unsigned vcpus, uint32_t quota, double runnable,
		 double delay, double throttled)
{
	for (unsigned i = 0; i < count; i++) {
		struct act_cpu_window w = {
			.len = len,
			.vcpus = vcpus,
			.quota_milli = quota,
			.vcpu_runnable_ns = (uint64_t)(runnable * (double)len),
			.vcpu_delay_ns = (uint64_t)(delay * (double)len),
			.throttled_ns = (uint64_t)(throttled * (double)len),
		};

		*now += len;
		w.at = *now;
		act_cpu_demand_feed(d, p, &w);
	}
}

struct steady_case {
	const char *name;
	unsigned windows;
	unsigned vcpus;
	uint32_t quota;
	double runnable, delay, throttled; /* CPUs, CPUs, share of the window */
	enum act_cpu_class cls;
	uint32_t goal;
};

/* 50 ms readouts (the default tick), the Neon target 0.9, compute unit
 * 250m; the up window is 200 ms. */
static const struct steady_case steady[] = {
	/* busy 1 in a 1-vCPU VM: saturated; grows to 1/0.9 → 1250m at once. */
	{ "one busy thread, one vCPU", 4, 1, 0, 1.0, 0.01, 0, ACT_CPU_SATURATED, 1250 },
	/* 150 ms are not enough: a burst shorter than the up window. */
	{ "burst shorter than the window", 3, 1, 0, 1.0, 0.01, 0, ACT_CPU_SATURATED, 1000 },
	/* two busy threads in 2 vCPUs: saturated; at least one unit more. */
	{ "two busy threads, two vCPUs", 8, 2, 0, 2.0, 0.05, 0, ACT_CPU_SATURATED, 2250 },
	/* the quota holds it back: raise the quota, not beyond the vCPUs. */
	{ "quota-limited", 8, 2, 1250, 2.0, 0.75, 0.4, ACT_CPU_THROTTLED, 2000 },
	/* throttled for a moment but using a third of the quota: not a
	 * reason to grow. */
	{ "throttled burst, little use", 8, 2, 1500, 0.48, 0.1, 0.05, ACT_CPU_OK, 1500 },
	/* waiting for host CPUs that others hold: hold. */
	{ "host contention", 8, 1, 0, 1.0, 0.45, 0, ACT_CPU_CONTENDED, 1000 },
	/* a quota at the vCPUs' size that throttles: saturated, grow. */
	{ "quota at the vCPU count", 8, 1, 1000, 1.0, 0.3, 0.3, ACT_CPU_SATURATED, 1250 },
	/* one busy thread in 2 vCPUs at 1250m: 0.8 busy, within target: stays. */
	{ "converged at 1250m", 16, 2, 1250, 1.0, 0.01, 0, ACT_CPU_OK, 1250 },
	/* idle, not yet for the hold time: no shrink. */
	{ "idle, short", 16, 2, 0, 0.1, 0.0, 0, ACT_CPU_OK, 2000 },
};

static void test_steady(void **state)
{
	for (size_t i = 0; i < sizeof(steady) / sizeof(steady[0]); i++) {
		const struct steady_case *c = &steady[i];
		struct act_cpu_policy p;
		struct act_cpu_demand d;
		struct act_cpu_decision dec;
		int64_t now = 0;

		act_cpu_policy_defaults(&p);
		act_cpu_demand_init(&d);
		feed(&d, &p, &now, c->windows, TICK, c->vcpus, c->quota, c->runnable, c->delay,
		     c->throttled);
		assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
		if (dec.cls != c->cls || dec.goal_milli != c->goal)
			fail_msg("%s: class %s goal %u, expected %s %u", c->name,
				 act_cpu_class_name(dec.cls), dec.goal_milli,
				 act_cpu_class_name(c->cls), c->goal);
	}
}

static void test_no_readout(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;

	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	assert_false(act_cpu_demand_decide(&d, &p, 0, &dec));
}

/* Idle after load: the goal falls only once the slow average has stayed
 * below for the hold time, then to what the slow average needs with the
 * lower shrink target. */
static void test_idle_shrinks_after_hold(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0, first_below = -1;

	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	feed(&d, &p, &now, 240, 250 * MS, 2, 0, 1.9, 0.05, 0); /* a minute busy */
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.cls, ACT_CPU_SATURATED);
	for (int i = 0; i < 4 * 120; i++) {
		feed(&d, &p, &now, 1, 250 * MS, 2, 0, 0.1, 0, 0);
		act_cpu_demand_decide(&d, &p, 0, &dec);
		assert_int_equal(dec.cls, ACT_CPU_OK);
		if (dec.goal_milli < 2000) {
			first_below = now;
			break;
		}
	}
	assert_true(first_below > 0);
	/* Not before the hold time, and not after the slow average had had
	 * a long time to fall. */
	assert_true(first_below >= p.down_hold);
	assert_true(first_below <= 90 * SEC);
	/* What it shrinks to still leaves the slow average within target. */
	assert_true(dec.slow * 1000.0 / dec.goal_milli <= p.down_target + 1e-9);
	/* Long idle: down to one compute unit's worth of what it uses. */
	feed(&d, &p, &now, 4 * 300, 250 * MS, 2, 0, 0.1, 0, 0);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.goal_milli, 250);
}

/* An idle guest whose small load flickers around a compute unit's edge
 * (its status reporter waking it once a second): unbounded, its goal goes
 * 0.25 <-> 0.5 CPU from one readout to the next. With the VM's minimum of
 * 1 CPU it is 1 CPU at every decision, so the runner sees no new goal and
 * writes no decision event; and a saturated VM at its maximum asks for its
 * maximum, not more. */
static void test_goal_within_bounds(void **state)
{
	for (int bounded = 0; bounded < 2; bounded++) {
		struct act_cpu_policy p;
		struct act_cpu_demand d;
		struct act_cpu_decision dec;
		unsigned changes = 0;
		uint32_t last = 0;
		int64_t now = 0;

		act_cpu_policy_defaults(&p);
		if (bounded) {
			p.min_milli = 1000;
			p.max_milli = 2000;
		}
		act_cpu_demand_init(&d);
		feed(&d, &p, &now, 4 * 60, 250 * MS, 1, 1000, 0.18, 0, 0);
		for (int i = 0; i < 4 * 60; i++) {
			double use = (i / 2) % 2 ? 0.26 : 0.12;

			feed(&d, &p, &now, 1, 250 * MS, 1, 1000, use, 0, 0);
			assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
			assert_int_equal(dec.cls, ACT_CPU_OK);
			if (bounded)
				assert_int_equal(dec.goal_milli, 1000);
			changes += i > 0 && dec.goal_milli != last;
			last = dec.goal_milli;
		}
		if (bounded)
			assert_int_equal(changes, 0);
		else
			assert_true(changes >= 20); /* the flapping the bounds stop */
	}
	{
		struct act_cpu_policy p;
		struct act_cpu_demand d;
		struct act_cpu_decision dec;
		int64_t now = 0;

		act_cpu_policy_defaults(&p);
		p.min_milli = 1000;
		p.max_milli = 2000;
		act_cpu_demand_init(&d);
		feed(&d, &p, &now, 4, 250 * MS, 2, 0, 2.0, 0.05, 0);
		assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
		assert_int_equal(dec.cls, ACT_CPU_SATURATED);
		assert_int_equal(dec.goal_milli, 2000);
	}
}

/* A steady load converges and stays put: grow, then at the new size the
 * same load is within target and the shrink goal is not below it. */
static void test_steady_load_converges(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;
	unsigned vcpus = 1;
	uint32_t quota = 0, changes = 0;

	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	for (int i = 0; i < 4 * 300; i++) {
		/* one busy guest thread plus an idle vCPU's noise */
		double runnable = 1.0 + 0.08 * (vcpus - 1);
		uint32_t allowance = quota ? quota : vcpus * 1000;

		if (runnable > allowance / 1000.0)
			runnable = allowance / 1000.0;
		feed(&d, &p, &now, 1, 250 * MS, vcpus, quota, runnable, 0.01, 0);
		act_cpu_demand_decide(&d, &p, 0, &dec);
		if (dec.goal_milli != allowance) {
			changes++;
			quota = dec.goal_milli;
			vcpus = (quota + 999) / 1000;
			act_cpu_demand_resized(&d);
		}
	}
	/* grew once (1 → 1250m over 2 vCPUs) and stayed */
	assert_int_equal(changes, 1);
	assert_int_equal(quota, 1250);
	assert_int_equal(vcpus, 2);
}

/* Bursts shorter than the up window, repeated: never a growth. */
static void test_short_bursts_do_not_grow(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;

	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	/* 150 ms busy, 850 ms idle */
	for (int i = 0; i < 100; i++) {
		feed(&d, &p, &now, 3, TICK, 1, 0, 1.0, 0.01, 0);
		act_cpu_demand_decide(&d, &p, 0, &dec);
		assert_true(dec.goal_milli <= 1000);
		feed(&d, &p, &now, 17, TICK, 1, 0, 0.1, 0, 0);
		act_cpu_demand_decide(&d, &p, 0, &dec);
		assert_true(dec.goal_milli <= 1000);
	}
}

/* A load that began within a readout counts that readout's busy part. It
 * matters where the up window is not a whole number of readouts: here 250
 * ms readouts (a host with policy.tick_ms 250) and a 400 ms window: idle,
 * then a readout 60 % busy (the load began 100 ms into it), then a full
 * one: 150 + 250 ms of saturation cover the window and the VM grows at
 * once. At 40 % (100 + 250 ms) it waits for the next readout. */
struct onset_case {
	double lead_busy;
	bool grows_at_second;
};

static void test_onset_within_a_readout(void **state)
{
	static const struct onset_case cases[] = {
		{ 0.6, true },
		{ 0.4, false },
		{ 0.0, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct act_cpu_policy p;
		struct act_cpu_demand d;
		struct act_cpu_decision dec;
		int64_t now = 0;

		act_cpu_policy_defaults(&p);
		p.up_window = 400 * MS;
		act_cpu_demand_init(&d);
		feed(&d, &p, &now, 8, 250 * MS, 1, 0, 0.05, 0, 0);
		feed(&d, &p, &now, 1, 250 * MS, 1, 0, cases[i].lead_busy, 0, 0);
		feed(&d, &p, &now, 1, 250 * MS, 1, 0, 1.0, 0.01, 0);
		assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
		if (cases[i].grows_at_second)
			assert_int_equal(dec.cls, ACT_CPU_SATURATED);
		assert_int_equal(dec.goal_milli, cases[i].grows_at_second ? 1250 : 1000);
		/* One more saturated readout: 500 ms or more, it grows. */
		feed(&d, &p, &now, 1, 250 * MS, 1, 0, 1.0, 0.01, 0);
		assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
		assert_int_equal(dec.goal_milli, 1250);
	}
}

/* A burst of 150 ms (three readouts) and a readout 30 % busy after it:
 * no growth. */
static void test_burst_then_part_busy(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;

	(void)state;
	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	feed(&d, &p, &now, 8, TICK, 1, 0, 0.05, 0, 0);
	feed(&d, &p, &now, 3, TICK, 1, 0, 1.0, 0.01, 0);
	assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
	assert_int_equal(dec.goal_milli, 1000);
	feed(&d, &p, &now, 1, TICK, 1, 0, 0.3, 0, 0);
	assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
	assert_int_equal(dec.goal_milli, 1000);
}

/* After a resize the old windows are forgotten: one fresh window is not
 * enough to grow again. */
static void test_resized_forgets_fast_history(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;

	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	feed(&d, &p, &now, 4, 250 * MS, 1, 0, 1.0, 0.01, 0);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.goal_milli, 1250);
	act_cpu_demand_resized(&d);
	feed(&d, &p, &now, 1, 250 * MS, 2, 1250, 1.25, 0.2, 0.2);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.goal_milli, 1250);
	/* a full up window, but within the settle time after the resize */
	feed(&d, &p, &now, 1, 250 * MS, 2, 1250, 1.25, 0.2, 0.2);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.cls, ACT_CPU_THROTTLED);
	assert_int_equal(dec.goal_milli, 1250);
	/* settled: the quota rises */
	feed(&d, &p, &now, 6, 250 * MS, 2, 1250, 1.25, 0.2, 0.2);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.cls, ACT_CPU_THROTTLED);
	assert_int_equal(dec.goal_milli, 2000);
}

/* The runner's loop over a load of `base` CPUs with peaks of `peak` CPUs
 * for 3 s every `period` s, in a 2-vCPU guest, from `start` s of load on
 * for `seconds` s; the goal is applied at once as the quota. Readouts of
 * 50 ms while the VM is busy at the target, else of `cool_ms` (the watch
 * sends a cool VM's windows on its slow clock). Counts the growths and
 * shrinks; returns the quota at the end. */
struct flap_run {
	unsigned grew, shrank, flaps;
	int64_t first_shrink_at; /* 0: none */
};

static uint32_t run_peaks(struct act_cpu_demand *d, const struct act_cpu_policy *p, int64_t *now,
			  uint32_t quota, double base, double peak, int period, int seconds,
			  int cool_ms, struct flap_run *run)
{
	int64_t end = *now + seconds * SEC, window = 0;
	uint64_t runnable = 0;

	while (*now < end) {
		int64_t t = *now / MS % (period * 1000LL);
		double load = t < 3000 ? peak : base;
		double use = load < quota / 1000.0 ? load : quota / 1000.0;
		bool hot = use >= p->target * quota / 1000.0;
		struct act_cpu_decision dec;

		*now += TICK;
		window += TICK;
		runnable += (uint64_t)(use * TICK);
		if (!hot && window < cool_ms * MS)
			continue;
		struct act_cpu_window w = { .at = *now,
					    .len = window,
					    .vcpus = 2,
					    .quota_milli = quota,
					    .vcpu_runnable_ns = runnable };

		act_cpu_demand_feed(d, p, &w);
		window = 0;
		runnable = 0;
		act_cpu_demand_decide(d, p, quota, &dec);
		if (dec.goal_milli == quota)
			continue;
		if (dec.goal_milli > quota)
			run->grew++;
		else {
			if (!run->shrank++)
				run->first_shrink_at = *now;
		}
		run->flaps += dec.flap;
		quota = dec.goal_milli;
		act_cpu_demand_resized(d);
	}
	return quota;
}

/* `busy 1` in a 2-vCPU guest: about 1 CPU with peaks of 1.45 CPUs a
 * minute apart (test_reaction's steady case). At 1500m a peak saturates
 * the VM, which grows to 1750m; the slow average then sizes a shrink back
 * to 1500m, where the next peak saturates it again. Without the flap
 * memory it goes back and forth every minute; with it, the first growth
 * back is a flap, and the VM stays at 1750m while the peaks go on. Once
 * the load ends the floor lasts its memory and the VM shrinks. */
static void test_peaks_do_not_flap(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct flap_run run = { 0 };
	int64_t now = 0, ended;
	uint32_t quota;

	(void)state;
	act_cpu_policy_defaults(&p);
	/* The control: no memory, the flap the test looks for. */
	p.down_memory = 0;
	act_cpu_demand_init(&d);
	quota = run_peaks(&d, &p, &now, 1500, 1.0, 1.45, 60, 900, 50, &run);
	assert_true(run.shrank >= 10);
	assert_int_equal(run.flaps, 0);

	act_cpu_policy_defaults(&p);
	memset(&run, 0, sizeof(run));
	now = 0;
	act_cpu_demand_init(&d);
	quota = run_peaks(&d, &p, &now, 1500, 1.0, 1.45, 60, 900, 50, &run);
	assert_int_equal(quota, 1750);
	assert_int_equal(run.shrank, 1);
	assert_int_equal(run.grew, 2);
	assert_int_equal(run.flaps, 1);

	/* The load ends: still 1750m for the memory's time since the last
	 * peak renewed it, then the careful down as usual. */
	ended = now;
	memset(&run, 0, sizeof(run));
	quota = run_peaks(&d, &p, &now, quota, 0.05, 0.05, 60, 600, 50, &run);
	assert_true(run.shrank >= 1);
	assert_int_equal(run.grew, 0);
	assert_true(quota < 1000);
	assert_true(run.first_shrink_at - ended >= p.down_memory - 60 * SEC);
}

/* The same peaks on the watch's clocks: a cool VM's windows are 5 s long,
 * and a 3-s peak in one does not reach the target, so the peaks do not
 * renew the floor. Each flap holds it twice as long as the one before:
 * after 30 minutes at most three shrinks, where the VM without memory
 * shrinks every minute. */
static void test_flaps_back_off(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct flap_run run = { 0 };
	int64_t now = 0;

	(void)state;
	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	run_peaks(&d, &p, &now, 1500, 1.0, 1.45, 60, 1800, 5000, &run);
	assert_true(run.flaps >= 1);
	assert_true(run.shrank <= 3);

	p.down_memory = 0;
	memset(&run, 0, sizeof(run));
	now = 0;
	act_cpu_demand_init(&d);
	run_peaks(&d, &p, &now, 1500, 1.0, 1.45, 60, 1800, 5000, &run);
	assert_true(run.shrank >= 20);
}

/* A load that ends, then another: busy, idle back to the minimum, busy
 * again, idle again (test_daemon's and test_agentless's way). The shrink
 * to where the VM idles is no flap, so the second idle shrinks as the
 * first did. */
static void test_new_load_is_no_flap(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct flap_run run = { 0 };
	int64_t now = 0;
	uint32_t quota = 1000;

	(void)state;
	act_cpu_policy_defaults(&p);
	p.min_milli = 1000;
	act_cpu_demand_init(&d);
	for (int round = 0; round < 2; round++) {
		quota = run_peaks(&d, &p, &now, quota, 1.9, 1.9, 60, 30, 50, &run);
		assert_true(quota >= 2000);
		memset(&run, 0, sizeof(run));
		quota = run_peaks(&d, &p, &now, quota, 0.02, 0.02, 60, 120, 50, &run);
		assert_int_equal(quota, 1000);
		assert_int_equal(run.flaps, 0);
	}
}

/* A minimum raised and lowered by its operator moves the goal both ways:
 * no flap, so the next shrink is not held. */
static void test_bounds_make_no_flap(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	int64_t now = 0;
	uint32_t quota = 1000;
	int shrinks = 0;

	(void)state;
	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	for (int round = 0; round < 3; round++) {
		int64_t end;

		p.min_milli = 2000;
		feed(&d, &p, &now, 1, TICK, 2, quota, 0.1, 0, 0);
		assert_true(act_cpu_demand_decide(&d, &p, quota, &dec));
		assert_int_equal(dec.goal_milli, 2000);
		assert_false(dec.flap);
		quota = dec.goal_milli;
		act_cpu_demand_resized(&d);
		p.min_milli = 0;
		/* Shrunk within the hold and the slow average's fall. */
		for (end = now + 90 * SEC; now < end && quota == 2000;) {
			feed(&d, &p, &now, 1, TICK, 2, quota, 0.1, 0, 0);
			act_cpu_demand_decide(&d, &p, quota, &dec);
			if (dec.goal_milli < quota) {
				shrinks++;
				quota = dec.goal_milli;
				act_cpu_demand_resized(&d);
			}
		}
		assert_true(quota < 2000);
		assert_int_equal(dec.flap_floor_milli, 0);
	}
	assert_int_equal(shrinks, 3);
}

/* The guest's load1 beyond its vCPUs: an idle-looking 1-vCPU VM whose
 * guest reports load 3 grows to 3/0.9 → 3500m; a shrink never goes below
 * the floor; contention still holds; dropping the figure drops the floor. */
static void test_guest_load_floor(void **state)
{
	struct act_cpu_policy p;
	struct act_cpu_demand d;
	struct act_cpu_decision dec;
	char buf[512];
	int64_t now = 0, fell;

	act_cpu_policy_defaults(&p);
	act_cpu_demand_init(&d);
	feed(&d, &p, &now, 4, 250 * MS, 1, 0, 0.05, 0, 0);
	act_cpu_demand_guest_load(&d, true, 3.0);
	assert_true(act_cpu_demand_decide(&d, &p, 0, &dec));
	assert_int_equal(dec.cls, ACT_CPU_OK);
	assert_int_equal(dec.guest_floor_milli, 3500);
	assert_int_equal(dec.goal_milli, 3500);
	assert_int_equal(act_cpu_decision_format(&dec, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "guest load1 3.00: at least 3.500"));

	/* Grown to 4 vCPUs at 3500m and idle for long: stays at the floor. */
	feed(&d, &p, &now, 4 * 120, 250 * MS, 4, 3500, 0.05, 0, 0);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.goal_milli, 3500);
	/* The guest's load falls: the careful shrink goes down to the new
	 * floor, not below. */
	act_cpu_demand_guest_load(&d, true, 1.0);
	fell = now;
	for (int i = 0; i < 4 * 30; i++) {
		feed(&d, &p, &now, 1, 250 * MS, 4, 3500, 0.05, 0, 0);
		act_cpu_demand_decide(&d, &p, 0, &dec);
		/* not before the hold time */
		if (now - fell < p.down_hold)
			assert_int_equal(dec.goal_milli, 3500);
	}
	assert_int_equal(dec.goal_milli, 1250);
	/* Host contention: hold, whatever the guest says. */
	act_cpu_demand_guest_load(&d, true, 8.0);
	feed(&d, &p, &now, 4, 250 * MS, 1, 0, 1.0, 0.45, 0);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.cls, ACT_CPU_CONTENDED);
	assert_int_equal(dec.goal_milli, 1000);
	/* Saturated with a higher guest floor: the floor wins. */
	feed(&d, &p, &now, 4, 250 * MS, 1, 0, 1.0, 0.01, 0);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_int_equal(dec.cls, ACT_CPU_SATURATED);
	assert_int_equal(dec.goal_milli, 9000);
	/* No guest figure (a failed scrape): the host's figures alone. */
	act_cpu_demand_guest_load(&d, false, 0);
	act_cpu_demand_decide(&d, &p, 0, &dec);
	assert_false(dec.has_guest_load);
	assert_int_equal(dec.goal_milli, 1250);
	act_cpu_demand_guest_load(&d, true, NAN);
	assert_false(d.has_guest_load);
}

static void test_format(void **state)
{
	struct act_cpu_decision dec = { .cls = ACT_CPU_SATURATED,
					.demand = 0.98,
					.busy = 0.98,
					.span = 500 * MS,
					.allowance_milli = 1000,
					.goal_milli = 1250 };
	char buf[256];

	assert_int_equal(act_cpu_decision_format(&dec, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "saturated: vCPUs 98 % busy for 0.5 s"));
	assert_non_null(strstr(buf, "goal 1.250 CPUs"));
	assert_int_equal(act_cpu_decision_format(&dec, buf, 8), -1);
}

/* The CPU goal in the desired resources: CPU from the goal, memory from the
 * goal CUs alone; without guest memory statistics the memory stays, the
 * CPU may still fall; a monitor's requested upscale still raises the CPU. */
static void test_desired_with_cpu_goal(void **state)
{
	struct ag_scaling_config cfg;
	struct act_system_metrics sys = { .load1 = 3.0,
					  .load5 = 3.0,
					  .memory_usage_bytes = 300.0 * 1024 * 1024 };
	const struct vmact_resources GiB = { 0, 1ULL << 30 };
	struct act_desired_input in = {
		.cfg = &cfg,
		.cu = { 250, 256ULL << 20 },
		.using_ = { 2000, GiB.mem_bytes },
		.min = { 1000, 512ULL << 20 },
		.max = { 4000, 1536ULL << 20 },
		.sys = &sys,
	};
	uint32_t goal = 1250;
	struct act_requested_upscale up = { .at = 0, .base = { 2000, GiB.mem_bytes }, .cpu = true };
	struct act_desired d;
	struct act_warnings w = { 0 };
	struct vmact_err err = { 0 };

	ag_scaling_config_defaults(&cfg);
	/* Neon: load 3 asks for 3/0.9/0.25 = 13 CUs: 3250m and 3.25 GiB (capped). */
	assert_int_equal(act_desired_resources(&in, 0, &d, &w, &err), 0);
	assert_int_equal(d.res.milli_cpu, 3250);
	in.cpu_goal_milli = &goal;
	assert_int_equal(act_desired_resources(&in, 0, &d, &w, &err), 0);
	assert_int_equal(d.res.milli_cpu, 1250);
	/* memory: 300 MiB / 0.75 → 2 CUs of 256Mi, at least min */
	assert_int_equal(d.res.mem_bytes, 512ULL << 20);
	sys.memory_absent = true;
	assert_int_equal(act_desired_resources(&in, 0, &d, &w, &err), 0);
	assert_int_equal(d.res.milli_cpu, 1250);
	assert_int_equal(d.res.mem_bytes, GiB.mem_bytes);
	sys.memory_absent = false;
	in.requested_upscale = &up;
	in.requested_upscale_valid = 10LL * 1000000000LL;
	assert_int_equal(act_desired_resources(&in, 0, &d, &w, &err), 0);
	assert_int_equal(d.res.milli_cpu, 2250);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady),
		cmocka_unit_test(test_no_readout),
		cmocka_unit_test(test_idle_shrinks_after_hold),
		cmocka_unit_test(test_goal_within_bounds),
		cmocka_unit_test(test_steady_load_converges),
		cmocka_unit_test(test_short_bursts_do_not_grow),
		cmocka_unit_test(test_onset_within_a_readout),
		cmocka_unit_test(test_burst_then_part_busy),
		cmocka_unit_test(test_resized_forgets_fast_history),
		cmocka_unit_test(test_guest_load_floor),
		cmocka_unit_test(test_peaks_do_not_flap),
		cmocka_unit_test(test_flaps_back_off),
		cmocka_unit_test(test_bounds_make_no_flap),
		cmocka_unit_test(test_new_load_is_no_flap),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_desired_with_cpu_goal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
