/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler's readout arithmetic (bpf/readout.c) without BPF: per-CPU
 * integral sums into totals, the pending run time of lost switch-ins, the
 * interval's load, utilisation and delay, cpu.stat deltas, the bpftool
 * record and the per-thread split. Table-driven. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/macro.h"
#include "bpf/readout.h"

static void test_delta(void **state)
{
	static const struct {
		uint64_t now, then, want;
	} cases[] = {
		{ 10, 3, 7 },
		{ 3, 3, 0 },
		{ 3, 10, 0 },              /* a racing read: never negative */
		{ 5, UINT64_MAX - 4, 10 }, /* across the wrap */
		{ UINT64_MAX, 0, 0 },      /* more than 2^63 apart reads as behind */
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (smp_delta(cases[i].now, cases[i].then) != cases[i].want)
			fail_msg("case %zu: %llu", i,
				 (unsigned long long)smp_delta(cases[i].now, cases[i].then));
}

/* A transition of a VM thread as the BPF hooks account it on one CPU. */
struct ev {
	int cpu;
	int d; /* +1 / -1 */
	uint64_t t;
	bool oncpu; /* the on-CPU gauge, else the runnable one */
};

static void apply(struct smp_cpu_stats *c, const struct ev *e)
{
	if (e->oncpu) {
		c[e->cpu].nr_oncpu += e->d;
		c[e->cpu].oncpu_tsum += (uint64_t)(int64_t)e->d * e->t;
	} else {
		c[e->cpu].nr_runnable += e->d;
		c[e->cpu].runnable_tsum += (uint64_t)(int64_t)e->d * e->t;
	}
}

static void test_totals_from_cpus(void **state)
{
	static const struct {
		struct ev ev[6];
		size_t n;
		uint64_t at;
		uint64_t runnable_ns, oncpu_ns;
		int64_t nr_runnable, nr_oncpu;
	} cases[] = {
		/* nothing happened */
		{ { { 0 } }, 0, 1000, 0, 0, 0, 0 },
		/* runnable from 100 on CPU 0, still at 1000 */
		{ { { 0, +1, 100, false } }, 1, 1000, 900, 0, 1, 0 },
		/* woken on CPU 0, blocked on CPU 1: per-CPU parts wrap, the
		 * total comes out exact */
		{ { { 0, +1, 100, false }, { 1, -1, 400, false } }, 2, 1000, 300, 0, 0, 0 },
		/* two threads, one on a CPU for 200..700 (on CPU 2, off on 3) */
		{ { { 0, +1, 100, false },
		    { 1, +1, 200, false },
		    { 2, +1, 200, true },
		    { 3, -1, 700, true },
		    { 1, -1, 900, false } },
		  5,
		  1000,
		  900 + 700,
		  500,
		  1,
		  0 },
		/* still on a CPU: the open slice counts up to the read */
		{ { { 3, +1, 500, false }, { 3, +1, 600, true } }, 2, 800, 300, 200, 1, 1 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct smp_cpu_stats c[4] = { { 0 } };
		struct smp_totals t;

		for (size_t j = 0; j < cases[i].n; j++)
			apply(c, &cases[i].ev[j]);
		c[0].wakeups = 2, c[3].wakeups = 1;
		c[1].switches = 5, c[2].preemptions = 1, c[2].untracked = 4;
		c[0].recovered_ns = 30, c[1].recovered_ns = 12, c[1].recoveries = 2;
		smp_totals_from_cpus(c, 4, cases[i].at, &t);
		if (t.runnable_ns != cases[i].runnable_ns || t.oncpu_ns != cases[i].oncpu_ns ||
		    t.nr_runnable != cases[i].nr_runnable || t.nr_oncpu != cases[i].nr_oncpu)
			fail_msg("case %zu: runnable %llu oncpu %llu nr %lld on %lld", i,
				 (unsigned long long)t.runnable_ns, (unsigned long long)t.oncpu_ns,
				 (long long)t.nr_runnable, (long long)t.nr_oncpu);
		assert_int_equal(t.wakeups, 3);
		assert_int_equal(t.switches, 5);
		assert_int_equal(t.preemptions, 1);
		assert_int_equal(t.untracked, 4);
		assert_int_equal(t.recovered_ns, 42);
		assert_int_equal(t.recoveries, 2);
	}
}

/* Lost switch-ins: what the iterator found is counted as the hooks will
 * count it at the thread's next seen switch. */
static void test_pending(void **state)
{
	static const struct {
		struct smp_pending p[3];
		size_t n;
		uint64_t runnable_ns, oncpu_ns;
		int64_t nr_oncpu;
	} cases[] = {
		{ { { 0 } }, 0, 0, 0, 0 },
		/* runnable already counted: only on-CPU time is new */
		{ { { .tid = 5, .ns = 300, .runnable = 1, .on_cpu = 1 } }, 1, 0, 300, 1 },
		/* runnable missed too */
		{ { { .tid = 5, .ns = 300, .runnable = 0, .on_cpu = 0 } }, 1, 300, 300, 0 },
		/* summed over threads */
		{ { { .tid = 5, .ns = 300, .runnable = 1, .on_cpu = 1 },
		    { .tid = 6, .ns = 50, .runnable = 0, .on_cpu = 1 },
		    { .tid = 7, .ns = 7, .runnable = 0, .on_cpu = 0 } },
		  3,
		  57,
		  357,
		  2 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct smp_totals base = {
			.runnable_ns = 1000, .oncpu_ns = 400, .nr_oncpu = 1, .wakeups = 9
		};
		struct smp_totals pend = { 0 }, t = base;

		for (size_t j = 0; j < cases[i].n; j++) {
			smp_totals_add_pending(&t, &cases[i].p[j]);
			smp_totals_add_pending(&pend, &cases[i].p[j]);
		}
		assert_int_equal(t.runnable_ns, 1000 + cases[i].runnable_ns);
		assert_int_equal(t.oncpu_ns, 400 + cases[i].oncpu_ns);
		assert_int_equal(t.nr_oncpu, 1 + cases[i].nr_oncpu);
		assert_int_equal(t.wakeups, 9);
		/* gathered per VM first (read_all), then added: the same */
		struct smp_totals u = base;
		smp_totals_add(&u, &pend);
		assert_int_equal(u.runnable_ns, t.runnable_ns);
		assert_int_equal(u.oncpu_ns, t.oncpu_ns);
		assert_int_equal(u.nr_oncpu, t.nr_oncpu);
	}
}

static void test_step(void **state)
{
	static const struct {
		struct smp_totals last, now;
		uint64_t dt;
		double load, cpu, delay_frac;
		uint64_t oncpu_ns, delay_ns;
	} cases[] = {
		/* 1.5 runnable on average over 2 s, 1 CPU used */
		{ { .runnable_ns = 1000 },
		  { .runnable_ns = 3000001000, .oncpu_ns = 2000000000 },
		  2000000000,
		  1.5,
		  1.0,
		  1.0 / 3,
		  2000000000,
		  1000000000 },
		/* idle */
		{ { 0 }, { 0 }, 1000000000, 0, 0, 0, 0, 0 },
		/* a recovery put more on-CPU than runnable time into this
		 * interval: capped, no delay */
		{ { .runnable_ns = 100, .oncpu_ns = 100 },
		  { .runnable_ns = 600, .oncpu_ns = 900 },
		  1000,
		  0.5,
		  0.5,
		  0,
		  500,
		  0 },
		/* totals behind the last ones (racing read): 0, not huge */
		{ { .runnable_ns = 700, .oncpu_ns = 600 },
		  { .runnable_ns = 690, .oncpu_ns = 590 },
		  1000,
		  0,
		  0,
		  0,
		  0,
		  0 },
		/* empty interval: the load is the runnable count now */
		{ { .runnable_ns = 7 }, { .runnable_ns = 7, .nr_runnable = 3 }, 0, 3, 0, 0, 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct smp_readout_state st = { 0 };
		struct smp_totals now = cases[i].now;
		struct smp_reading r;

		now.wakeups = 12, now.switches = 30, now.preemptions = 4, now.recoveries = 1;
		now.recovered_ns = 77, now.untracked = 2, now.nr_oncpu = 1;
		smp_readout_start(&st, &cases[i].last, 5000, 0);
		smp_readout_step(&st, &now, 5000 + cases[i].dt, &r);
		if (fabs(r.load - cases[i].load) > 1e-9 || fabs(r.cpu_util - cases[i].cpu) > 1e-9 ||
		    fabs(r.delay_frac - cases[i].delay_frac) > 1e-9 ||
		    r.oncpu_ns != cases[i].oncpu_ns || r.delay_ns != cases[i].delay_ns)
			fail_msg("case %zu: load %.6f cpu %.6f delay %.6f oncpu %llu delay %llu", i,
				 r.load, r.cpu_util, r.delay_frac, (unsigned long long)r.oncpu_ns,
				 (unsigned long long)r.delay_ns);
		assert_true(fabs(r.interval_s - (double)cases[i].dt / 1e9) < 1e-12);
		assert_int_equal(r.wakeups, 12);
		assert_int_equal(r.switches, 30);
		assert_int_equal(r.preemptions, 4);
		assert_int_equal(r.recovered_ns, 77);
		assert_int_equal(r.recoveries, 1);
		assert_int_equal(r.untracked, 2);
		assert_int_equal(r.nr_oncpu, 1);
		assert_false(r.has_cpu_stat);
		/* the state moved on */
		assert_int_equal(st.last_t, 5000 + cases[i].dt);
		assert_int_equal(st.last.runnable_ns, now.runnable_ns);
	}
}

/* The load averages start at the runnable count of registration and
 * follow loadavg.h's filter. */
static void test_step_loadavg(void **state)
{
	struct smp_readout_state st = { 0 };
	struct smp_totals t = { 0 };
	struct smp_loadavg la = { .avg = { 2, 2, 2 }, .seeded = true };
	struct smp_reading r;

	smp_readout_start(&st, &t, 0, -3); /* clamped */
	for (int j = 0; j < 3; j++)
		assert_true(st.la.avg[j] == 0);
	smp_readout_start(&st, &t, 0, 2);
	for (int j = 0; j < 3; j++)
		assert_true(st.la.avg[j] == 2);
	/* 5 s at 4 runnable */
	t.runnable_ns = 20000000000ULL;
	smp_readout_step(&st, &t, 5000000000ULL, &r);
	smp_loadavg_update(&la, 4.0, 5.0);
	for (int j = 0; j < 3; j++)
		assert_true(fabs(r.loadavg[j] - la.avg[j]) < 1e-12);
	assert_true(r.loadavg[0] > 2 && r.loadavg[0] < 4);
}

static void test_cpustat(void **state)
{
	static const struct {
		struct vmact_cpustat cs;
		uint64_t periods, throttled, ns;
	} seq[] = {
		/* first: counted from the group's start */
		{ { .version = 1, .nr_periods = 10, .nr_throttled = 4, .throttled_ns = 1000 },
		  10,
		  4,
		  1000 },
		{ { .version = 1, .nr_periods = 25, .nr_throttled = 9, .throttled_ns = 1500 },
		  15,
		  5,
		  500 },
		{ { .version = 1, .nr_periods = 25, .nr_throttled = 9, .throttled_ns = 1500 },
		  0,
		  0,
		  0 },
		/* the VM restarted: a new group */
		{ { .version = 1, .nr_periods = 3, .nr_throttled = 1, .throttled_ns = 20 },
		  3,
		  1,
		  20 },
		/* and counted on from there */
		{ { .version = 1, .nr_periods = 4, .nr_throttled = 1, .throttled_ns = 20 },
		  1,
		  0,
		  0 },
	};
	struct smp_readout_state st = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(seq); i++) {
		struct smp_reading r = { 0 };

		smp_readout_cpustat(&st, &seq[i].cs, &r);
		assert_true(r.has_cpu_stat);
		assert_int_equal(r.nr_periods, seq[i].cs.nr_periods);
		assert_int_equal(r.nr_throttled, seq[i].cs.nr_throttled);
		assert_int_equal(r.throttled_ns, seq[i].cs.throttled_ns);
		if (r.periods_delta != seq[i].periods || r.throttled_delta != seq[i].throttled ||
		    r.throttled_ns_delta != seq[i].ns)
			fail_msg("step %zu: %llu %llu %llu", i, (unsigned long long)r.periods_delta,
				 (unsigned long long)r.throttled_delta,
				 (unsigned long long)r.throttled_ns_delta);
		assert_true(st.have_cs);
	}
	/* only the burst count went back: also a new group */
	st.last_cs.nr_bursts = 2;
	struct vmact_cpustat cs = st.last_cs;
	struct smp_reading r = { 0 };
	cs.nr_bursts = 1;
	cs.nr_periods += 5;
	smp_readout_cpustat(&st, &cs, &r);
	assert_int_equal(r.periods_delta, cs.nr_periods);
}

static void test_milli(void **state)
{
	static const struct {
		double v;
		uint32_t want;
	} cases[] = {
		{ 0, 0 },
		{ -1, 0 },
		{ 0.0004, 0 },
		{ 0.0006, 1 },
		{ 1.5, 1500 },
		{ 2.9996, 3000 },
		{ 4294967.295, UINT32_MAX },
		{ 1e12, UINT32_MAX },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (smp_milli(cases[i].v) != cases[i].want)
			fail_msg("case %zu: %u", i, smp_milli(cases[i].v));
}

static void test_record(void **state)
{
	struct smp_reading r = { .interval_s = 2.5,
				 .load = 1.25,
				 .loadavg = { 0.5, 0.25, 0.125 },
				 .nr_runnable = -1,
				 .cpu_util = 0.75,
				 .delay_frac = 0.2,
				 .nr_throttled = 8,
				 .throttled_ns = 99 };
	struct smp_readout o;
	char longname[100];

	memset(&o, 0xff, sizeof(o));
	smp_readout_record(&r, "vm-a", 4242, 123456789, &o);
	assert_string_equal(o.name, "vm-a");
	assert_int_equal(o.name[sizeof(o.name) - 1], 0); /* no stale bytes */
	assert_int_equal(o.tgid, 4242);
	assert_int_equal(o.nr_runnable, 0);
	assert_int_equal(o.at_ns, 123456789);
	assert_int_equal(o.interval_ns, 2500000000ULL);
	assert_int_equal(o.load_milli, 1250);
	assert_int_equal(o.loadavg1_milli, 500);
	assert_int_equal(o.loadavg5_milli, 250);
	assert_int_equal(o.loadavg15_milli, 125);
	assert_int_equal(o.cpu_milli, 750);
	assert_int_equal(o.delay_permille, 200);
	assert_int_equal(o.nr_throttled, 8);
	assert_int_equal(o.throttled_ns, 99);

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	r.nr_runnable = 3;
	smp_readout_record(&r, longname, 1, 0, &o);
	assert_int_equal(strlen(o.name), sizeof(o.name) - 1);
	assert_int_equal(o.nr_runnable, 3);
}

static void test_thread(void **state)
{
	static const struct {
		struct smp_task v;
		uint64_t now;
		struct smp_pending p[2];
		size_t np;
		uint64_t runnable_ns, oncpu_ns, delay_ns;
	} cases[] = {
		/* closed intervals only */
		{ { .runnable_ns = 500, .oncpu_ns = 300 }, 1000, { { 0 } }, 0, 500, 300, 200 },
		/* runnable since 800 and on a CPU since 900 */
		{ { .runnable = 1,
		    .oncpu = 1,
		    .runnable_since = 800,
		    .oncpu_since = 900,
		    .runnable_ns = 500,
		    .oncpu_ns = 300 },
		  1000,
		  { { 0 } },
		  0,
		  700,
		  400,
		  300 },
		/* a lost switch-in of a thread counted runnable */
		{ { .runnable = 1, .runnable_since = 900, .runnable_ns = 500, .oncpu_ns = 300 },
		  1000,
		  { { .tid = 7, .ns = 50, .runnable = 1 } },
		  1,
		  600,
		  350,
		  250 },
		/* ... and of one the hooks believe asleep */
		{ { .runnable_ns = 500, .oncpu_ns = 300 },
		  1000,
		  { { .tid = 7, .ns = 50 }, { .tid = 7, .ns = 10 } },
		  2,
		  560,
		  360,
		  200 },
		/* more on-CPU than runnable (a recovery ahead): capped */
		{ { .runnable_ns = 100, .oncpu_ns = 100 },
		  1000,
		  { { .tid = 7, .ns = 50, .runnable = 1 } },
		  1,
		  100,
		  100,
		  0 },
		/* clocks racing: an open interval that starts after now adds 0 */
		{ { .runnable = 1, .runnable_since = 2000, .runnable_ns = 5 },
		  1000,
		  { { 0 } },
		  0,
		  5,
		  0,
		  5 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct smp_thread t;

		smp_thread_from_task(7, &cases[i].v, cases[i].now, &t);
		for (size_t j = 0; j < cases[i].np; j++)
			smp_thread_add_pending(&t, &cases[i].p[j]);
		smp_thread_finish(&t);
		assert_int_equal(t.tid, 7);
		assert_int_equal(t.runnable, cases[i].v.runnable);
		if (t.runnable_ns != cases[i].runnable_ns || t.oncpu_ns != cases[i].oncpu_ns ||
		    t.delay_ns != cases[i].delay_ns)
			fail_msg("case %zu: runnable %llu oncpu %llu delay %llu", i,
				 (unsigned long long)t.runnable_ns, (unsigned long long)t.oncpu_ns,
				 (unsigned long long)t.delay_ns);
	}
}

static void test_vcpus(void **state)
{
	const struct smp_thread th[] = {
		{ .tid = 1, .vcpu = 0, .runnable_ns = 100, .oncpu_ns = 60, .delay_ns = 40 },
		{ .tid = 2, .vcpu = -1, .runnable_ns = 1000, .oncpu_ns = 1000 },
		{ .tid = 3, .vcpu = 1, .runnable_ns = 50, .oncpu_ns = 50 },
	};
	struct smp_vcpus v = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(th); i++)
		smp_vcpus_add(&v, &th[i]);
	assert_int_equal(v.vcpus, 2);
	assert_int_equal(v.runnable_ns, 150);
	assert_int_equal(v.oncpu_ns, 110);
	assert_int_equal(v.delay_ns, 40);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delta),        cmocka_unit_test(test_totals_from_cpus),
		cmocka_unit_test(test_pending),      cmocka_unit_test(test_step),
		cmocka_unit_test(test_step_loadavg), cmocka_unit_test(test_cpustat),
		cmocka_unit_test(test_milli),        cmocka_unit_test(test_record),
		cmocka_unit_test(test_thread),       cmocka_unit_test(test_vcpus),
	};

	return cmocka_run_group_tests_name("readout", tests, NULL, NULL);
}
