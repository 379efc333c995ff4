/* SPDX-License-Identifier: Apache-2.0 */
/* Milli-CPU → CFS bandwidth conversion and the v1 write-order planner. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/cgroup/cpu-quota.h"
#include "base/macro.h"

#define INF ACT_CPU_QUOTA_UNLIMITED

struct conv_case {
	uint32_t milli, overcommit;
	uint64_t period;
	int ret;
	uint64_t quota_want, period_want;
	bool clamped;
	const char *msg_has; /* error message must name the field */
};

static const struct conv_case conv_cases[] = {
	/* plain */
	{ 250, 1000, 100000, 0, 25000, 100000, false, NULL },
	{ 500, 1000, 100000, 0, 50000, 100000, false, NULL },
	{ 1000, 1000, 100000, 0, 100000, 100000, false, NULL },
	{ 1500, 1000, 100000, 0, 150000, 100000, false, NULL },
	{ 333, 1000, 100000, 0, 33300, 100000, false, NULL },
	{ 16000, 1000, 100000, 0, 1600000, 100000, false, NULL },
	/* Neon's runner factor ×4 (examples in doc/protocols.md, "Runner cgroup quota") */
	{ 250, 4000, 100000, 0, 100000, 100000, false, NULL },
	{ 1000, 4000, 100000, 0, 400000, 100000, false, NULL },
	{ 1500, 4000, 100000, 0, 600000, 100000, false, NULL },
	/* fractional factor ×1.5 */
	{ 250, 1500, 100000, 0, 37500, 100000, false, NULL },
	/* systemd's period clamping: quota never below 1 ms */
	{ 5, 1000, 100000, 0, 1000, 200000, true, NULL },
	{ 1, 1000, 100000, 0, 1000, 1000000, true, NULL },
	{ 1, 1000, 1000000, 0, 1000, 1000000, false, NULL },
	{ 10, 1000, 1000, 0, 1000, 100000, true, NULL },
	{ 400, 1000, 1000, 0, 1000, 2500, true, NULL },   /* systemd: 1 ms @40% → 2.5 ms */
	{ 10, 1000, 10000, 0, 1000, 100000, true, NULL }, /* systemd: 10 ms @1% → 100 ms */
	/* non-divisible clamp: period rounded up, quota rounded up, both >= bound */
	{ 3, 1000, 100000, 0, 1001, 333334, true, NULL },
	{ 7, 1000, 100000, 0, 1001, 142858, true, NULL },
	/* 10 m at exactly the boundary period needs no clamping */
	{ 10, 1000, 100000, 0, 1000, 100000, false, NULL },
	/* period bounds kept */
	{ 250, 1000, 1000000, 0, 250000, 1000000, false, NULL },
	{ 2000, 1000, 1000, 0, 2000, 1000, false, NULL },
	/* huge values: no overflow, kernel max respected */
	{ UINT32_MAX, 1000, 1000000, 0, 4294967295000ULL, 1000000, false, NULL },
	{ 175921860, 100000, 1000000, 0, 17592186000000ULL, 1000000, false, NULL },
	{ 175921861, 100000, 1000000, -ERANGE, 0, 0, false, "milli_cpu" },
	{ UINT32_MAX, 100000, 1000000, -ERANGE, 0, 0, false, "milli_cpu" },
	/* bad input */
	{ 0, 1000, 100000, -EINVAL, 0, 0, false, "milli_cpu" },
	{ 250, 9, 100000, -EINVAL, 0, 0, false, "overcommit" },
	{ 250, 0, 100000, -EINVAL, 0, 0, false, "overcommit" },
	/* factors below ×1: less than granted, down to the kernel's floor */
	{ 250, 500, 100000, 0, 12500, 100000, false, NULL },
	{ 250, 10, 100000, 0, 1000, 400000, true, NULL },
	{ 2, 500, 100000, 0, 1000, 1000000, true, NULL },
	{ 1, 999, 100000, -ERANGE, 0, 0, false, "smallest" },
	{ 99, 10, 100000, -ERANGE, 0, 0, false, "smallest" },
	{ 100, 10, 100000, 0, 1000, 1000000, true, NULL },
	{ 250, 100001, 100000, -EINVAL, 0, 0, false, "overcommit" },
	{ 250, 1000, 999, -EINVAL, 0, 0, false, "period_us" },
	{ 250, 1000, 0, -EINVAL, 0, 0, false, "period_us" },
	{ 250, 1000, 1000001, -EINVAL, 0, 0, false, "period_us" },
};

static void test_conv_table(void **state)
{
	for (size_t i = 0; i < sizeof(conv_cases) / sizeof(conv_cases[0]); i++) {
		const struct conv_case *c = &conv_cases[i];
		struct act_cpu_bw bw = { 77, 77 };
		struct act_cpu_bw_info info = { .period_clamped = !c->clamped };
		struct vmact_err err = { 0 };
		int r = act_cpu_bw_from_milli(c->milli, c->overcommit, c->period, &bw, &info, &err);
		if (r != c->ret)
			fail_msg("case %zu (%u m ×%u/1000, P %llu): ret %d want %d (%s)", i,
				 c->milli, c->overcommit, (unsigned long long)c->period, r, c->ret,
				 err.msg);
		if (r == 0) {
			if (bw.quota_us != c->quota_want || bw.period_us != c->period_want ||
			    info.period_clamped != c->clamped)
				fail_msg(
					"case %zu: got %llu/%llu clamped=%d, want %llu/%llu clamped=%d",
					i, (unsigned long long)bw.quota_us,
					(unsigned long long)bw.period_us, info.period_clamped,
					(unsigned long long)c->quota_want,
					(unsigned long long)c->period_want, c->clamped);
			assert_int_equal(act_cpu_bw_check(&bw, NULL), 0);
		} else {
			assert_non_null(strstr(err.msg, c->msg_has));
			/* failure leaves the output untouched */
			assert_int_equal(bw.quota_us, 77);
		}
	}
}

/* Every milli value up to 20 CPUs and several periods: the limit is never
 * below what was asked, exceeds it by less than 1 µs per period, and stays
 * inside the kernel's bounds. */
static void test_conv_properties(void **state)
{
	static const uint64_t periods[] = { 1000, 10000, 50000, 100000, 333333, 1000000 };
	static const uint32_t factors[] = { 1000, 1500, 4000, 500 };
	for (size_t f = 0; f < ARRAY_SIZE(factors); f++) {
		for (size_t p = 0; p < sizeof(periods) / sizeof(periods[0]); p++) {
			for (uint32_t m = factors[f] < 1000 ? 2 : 1; m <= 20000; m++) {
				struct act_cpu_bw bw;
				struct act_cpu_bw_info info;
				assert_int_equal(act_cpu_bw_from_milli(m, factors[f], periods[p],
								       &bw, &info, NULL),
						 0);
				assert_true(bw.quota_us >= ACT_CPU_QUOTA_MIN_US);
				assert_true(bw.period_us >= periods[p] ||
					    bw.period_us == ACT_CPU_PERIOD_MAX_US);
				assert_true(bw.period_us >= ACT_CPU_PERIOD_MIN_US &&
					    bw.period_us <= ACT_CPU_PERIOD_MAX_US);
				assert_int_equal(info.period_clamped, bw.period_us != periods[p]);
				/* rate × P in µs·µs/s, compared exactly */
				unsigned __int128 want = (unsigned __int128)m * factors[f] *
							 bw.period_us;
				unsigned __int128 got = (unsigned __int128)bw.quota_us * 1000000;
				assert_true(got >= want);
				assert_true(got - want < 1000000);
				/* the granted milli rounds back to at least the request */
				assert_true(act_cpu_bw_to_milli(&bw, factors[f]) >= m);
			}
		}
	}
}

/* Overcommit factors as configured (a double) and as stored (per mille);
 * want 0: refused with -EINVAL, the output untouched. */
static const struct {
	double factor;
	uint32_t want;
} overcommits[] = {
	{ 1.0, 1000 }, { 4, 4000 },  { 0.01, 10 }, { 100, 100000 }, { 1.2345, 1235 },
	{ 0.009, 0 },  { 100.5, 0 }, { NAN, 0 },   { INFINITY, 0 }, { -1, 0 },
};

static void test_overcommit_from_double(void **state)
{
	struct vmact_err err = { 0 };

	for (size_t i = 0; i < sizeof(overcommits) / sizeof(overcommits[0]); i++) {
		uint32_t p = 7;
		int r = act_cpu_overcommit_from_double(overcommits[i].factor, &p, NULL);

		if (overcommits[i].want ? r != 0 || p != overcommits[i].want
					: r != -EINVAL || p != 7)
			fail_msg("%g: %d, %u (want %u)", overcommits[i].factor, r, p,
				 overcommits[i].want);
	}
	{
		uint32_t p = 7;

		assert_int_equal(act_cpu_overcommit_from_double(0.009, &p, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "overcommit"));
	}
}

static void test_check_and_to_milli(void **state)
{
	struct act_cpu_bw ok = { 25000, 100000 }, unl = act_cpu_bw_unlimited(100000);
	struct act_cpu_bw lowq = { 999, 100000 }, lowp = { 1000, 999 }, highp = { 1000, 1000001 };
	struct act_cpu_bw highq = { ACT_CPU_QUOTA_MAX_US + 1, 100000 };
	struct vmact_err err = { 0 };
	assert_int_equal(act_cpu_bw_check(&ok, NULL), 0);
	assert_int_equal(act_cpu_bw_check(&unl, NULL), 0);
	assert_int_equal(act_cpu_bw_check(&lowq, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "quota_us"));
	vmact_err_reset(&err);
	assert_int_equal(act_cpu_bw_check(&lowp, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "period_us"));
	assert_int_equal(act_cpu_bw_check(&highp, NULL), -EINVAL);
	assert_int_equal(act_cpu_bw_check(&highq, NULL), -EINVAL);
	assert_int_equal(act_cpu_bw_to_milli(&ok, 1000), 250);
	assert_int_equal(act_cpu_bw_to_milli(&ok, 4000), 62);
	assert_int_equal(act_cpu_bw_to_milli(&unl, 1000), UINT32_MAX);
}

/* A model of the v1 kernel check (tg_cfs_schedulable_down) for a chain
 * parent → G → child: G's effective ratio is its own, or its parent's when
 * unlimited; it must not exceed the parent's; the child's explicit ratio
 * must not exceed G's effective one. Ratios as (q, p), INF = unlimited. */
struct ratio {
	uint64_t q, p;
};

static int rcmp(struct ratio a, struct ratio b)
{
	if (a.q == INF || b.q == INF)
		return (a.q == INF) - (b.q == INF);
	unsigned __int128 x = (unsigned __int128)a.q * b.p, y = (unsigned __int128)b.q * a.p;
	return (x > y) - (x < y);
}

static bool v1_valid(struct ratio parent, struct ratio g, struct ratio child)
{
	struct ratio eff = g.q == INF ? parent : g;
	if (g.q != INF && rcmp(g, parent) > 0)
		return false;
	if (child.q != INF && rcmp(child, eff) > 0)
		return false;
	return true;
}

static void test_v1_plan_never_invalid(void **state)
{
	static const uint64_t qs[] = { 1000, 5000, 25000, 50000, 100000, 150000, 400000, INF };
	static const uint64_t ps[] = { 1000, 10000, 100000, 200000, 1000000 };
	static const struct ratio parents[] = {
		{ INF, 100000 }, { 50000, 100000 }, { 150000, 100000 }, { 400000, 100000 }
	};
	static const struct ratio children[] = { { INF, 100000 },
						 { 5000, 100000 },
						 { 25000, 100000 } };
	unsigned checked = 0, three_step = 0;

	for (size_t pa = 0; pa < ARRAY_SIZE(parents); pa++)
		for (size_t ch = 0; ch < ARRAY_SIZE(children); ch++)
			for (size_t oq = 0; oq < ARRAY_SIZE(qs); oq++)
				for (size_t op = 0; op < ARRAY_SIZE(ps); op++)
					for (size_t nq = 0; nq < ARRAY_SIZE(qs); nq++)
						for (size_t np = 0; np < ARRAY_SIZE(ps); np++) {
							struct ratio cur = { qs[oq], ps[op] },
								     want = { qs[nq], ps[np] };
							if (!v1_valid(parents[pa], cur,
								      children[ch]) ||
							    !v1_valid(parents[pa], want,
								      children[ch]))
								continue;
							struct act_cpu_bw old = { cur.q, cur.p },
									  new = { want.q, want.p };
							struct act_cpu_v1_step
								steps[ACT_CPU_V1_PLAN_MAX];
							int n = act_cpu_v1_plan(&old, &new, steps);
							assert_true(n >= 0 &&
								    n <= ACT_CPU_V1_PLAN_MAX);
							if (n == 3)
								three_step++;
							for (int i = 0; i < n; i++) {
								if (steps[i].kind ==
								    ACT_CPU_V1_QUOTA)
									cur.q = steps[i].value;
								else
									cur.p = steps[i].value;
								if (!v1_valid(parents[pa], cur,
									      children[ch]))
									fail_msg(
										"parent %llu/%llu child %llu/%llu: %llu/%llu → %llu/%llu: step %d "
										"leaves %llu/%llu invalid",
										(unsigned long long)
											parents[pa]
												.q,
										(unsigned long long)
											parents[pa]
												.p,
										(unsigned long long)
											children[ch]
												.q,
										(unsigned long long)
											children[ch]
												.p,
										(unsigned long long)
											old.quota_us,
										(unsigned long long)
											old.period_us,
										(unsigned long long)new
											.quota_us,
										(unsigned long long)new
											.period_us,
										i,
										(unsigned long long)
											cur.q,
										(unsigned long long)
											cur.p);
							}
							assert_true(cur.q == want.q &&
								    cur.p == want.p);
							checked++;
						}
	/* The grid must exercise the hard case, or the test proves little. */
	assert_true(checked > 1000);
	assert_true(three_step > 0);
}

static void test_v1_plan_shapes(void **state)
{
	struct act_cpu_v1_step s[ACT_CPU_V1_PLAN_MAX];
	struct act_cpu_bw a = { 25000, 100000 }, same = a, q2 = { 50000, 100000 };
	assert_int_equal(act_cpu_v1_plan(&a, &same, s), 0);
	assert_int_equal(act_cpu_v1_plan(&a, &q2, s), 1);
	assert_int_equal(s[0].kind, ACT_CPU_V1_QUOTA);
	assert_int_equal(s[0].value, 50000);
	/* 0.05 → 0.5 with a shorter period: quota first passes 0.25, period
	 * first would pass 0.1 too, but quota-first is tried first */
	struct act_cpu_bw from = { 10000, 200000 }, to = { 50000, 100000 };
	assert_int_equal(act_cpu_v1_plan(&from, &to, s), 2);
	assert_int_equal(s[0].kind, ACT_CPU_V1_QUOTA);
	assert_int_equal(s[1].kind, ACT_CPU_V1_PERIOD);
	/* a new period at the same ratio: either order leaves the ratio
	 * (doubled or halved) outside [old, new], so the plan goes through
	 * unlimited */
	struct act_cpu_bw g1 = { 10000, 100000 }, g2 = { 20000, 200000 };
	assert_int_equal(act_cpu_v1_plan(&g1, &g2, s), 3);
	assert_int_equal(s[0].kind, ACT_CPU_V1_QUOTA);
	assert_int_equal(s[0].value, INF);
	/* to unlimited */
	struct act_cpu_bw u = act_cpu_bw_unlimited(200000);
	assert_int_equal(act_cpu_v1_plan(&g1, &u, s), 2);
	assert_int_equal(s[0].value, INF);
	assert_int_equal(s[1].kind, ACT_CPU_V1_PERIOD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv_table),
		cmocka_unit_test(test_conv_properties),
		cmocka_unit_test(test_check_and_to_milli),
		cmocka_unit_test(test_overcommit_from_double),
		cmocka_unit_test(test_v1_plan_never_invalid),
		cmocka_unit_test(test_v1_plan_shapes),
	};
	return cmocka_run_group_tests_name("cpu-quota", tests, NULL, NULL);
}
