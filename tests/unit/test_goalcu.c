/* SPDX-License-Identifier: Apache-2.0 */
/* Goal compute units, the working-set estimator and desired resources,
 * table-driven from the Go agent's tests (doc/protocols.md, "Agent test cases"), plus the
 * inputs on which the Go agent panics or wraps. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/policy/desired.h"
#include "base/macro.h"

#define GiB (1024ULL * 1024 * 1024)
#define MiB (1024ULL * 1024)
static const struct vmact_resources CU = { 250, GiB };

/* goalcu_test.go: LAFT 1.0, MUFT 0.5, MTFT 0.9, LFC enabled. */
static void goal_test_config(struct ag_scaling_config *c, double stable, double mixed)
{
	ag_scaling_config_defaults(c);
	c->load_average_fraction_target = 1.0;
	c->memory_usage_fraction_target = 0.5;
	c->memory_total_fraction_target = 0.9;
	c->enable_lfc_metrics = true;
	c->cpu_stable_zone_ratio = stable;
	c->cpu_mixed_zone_ratio = mixed;
}

static void test_goal_cpu_table(void **state)
{
	static const struct {
		const char *name;
		double stable, mixed, load1, load5;
		double want;
	} cases[] = {
		{ "cpu-load1-1cu", 0, 0, 0.2, 0, 0.8 },
		{ "cpu-load1-4cu", 0, 0, 1.0, 0, 4.0 },
		{ "cpu-zone-load1", 0.5, 0, 0.7, 0, 2.8 },
		{ "cpu-zone-load5", 0.5, 0, 1.0, 0.7, 2.8 },
		{ "cpu-zone-mixed", 0.5, 0.5, 1.75, 1.0, 5.499997000005999 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ag_scaling_config cfg;
		struct act_system_metrics sys = { .load1 = cases[i].load1,
						  .load5 = cases[i].load5 };
		struct act_warnings w = { 0 };
		struct act_goal g;

		goal_test_config(&cfg, cases[i].stable, cases[i].mixed);
		assert_int_equal(act_goal_cu(&cfg, &CU, &sys, NULL, &g, &w, NULL), 0);
		assert_true(g.has_cpu);
		if (fabs(g.cpu - cases[i].want) > 1e-6) {
			print_error("%s: cpu part %.15g, want %.15g\n", cases[i].name, g.cpu,
				    cases[i].want);
			fail();
		}
		/* LFC is enabled but absent: not all metrics */
		assert_false(g.has_all_metrics);
		assert_int_equal(w.n, 1);
		assert_string_equal(w.msg[0], ACT_WARN_MISSING_METRICS);
	}
}

static void test_goal_no_metrics(void **state)
{
	struct ag_scaling_config cfg;
	struct act_warnings w = { 0 };
	struct act_goal g;

	goal_test_config(&cfg, 0, 0);
	assert_int_equal(act_goal_cu(&cfg, &CU, NULL, NULL, &g, &w, NULL), 0);
	assert_false(g.has_all_metrics);
	assert_false(g.has_cpu);
	assert_false(g.has_mem);
	assert_false(g.has_lfc);
	assert_int_equal(g.goal_cu, 0);
	assert_int_equal(w.n, 1);
}

/* The production-default examples of doc/protocols.md, "Agent test cases". */
static void test_goal_production_defaults(void **state)
{
	static const struct {
		double load1, mem_usage;
		uint32_t want;
	} cases[] = {
		{ 1.0, 0, 4 },           /* 1/0.9/0.25 = 4.44 -> round 4 */
		{ 0, 3.0 * GiB, 4 },     /* 3 GiB / 0.75 = 4 GiB */
		{ 0, 3.0 * GiB + 1, 5 }, /* 4.0000000009 -> ceil 5 */
		{ 0.3375, 0, 2 },        /* 1.5 -> round half away -> 2 */
		{ 0.3374, 0, 1 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ag_scaling_config cfg;
		struct act_system_metrics sys = { .load1 = cases[i].load1,
						  .memory_usage_bytes = cases[i].mem_usage };
		struct act_warnings w = { 0 };
		struct act_goal g;

		ag_scaling_config_defaults(&cfg);
		assert_int_equal(act_goal_cu(&cfg, &CU, &sys, NULL, &g, &w, NULL), 0);
		assert_true(g.has_all_metrics);
		assert_int_equal(w.n, 0);
		if (g.goal_cu != cases[i].want) {
			print_error("case %zu: goal %u, want %u\n", i, g.goal_cu, cases[i].want);
			fail();
		}
	}
	assert_true(act_round_half_away(2.5) == 3.0);
	assert_true(act_round_half_away(-2.5) == -3.0);
	assert_true(act_round_half_away(2.4999) == 2.0);
}

static const double lfc_series[] = {
	0,      15000,  30000,  40000,  50000,  150000, 175000, 180000, 185000, 190000,
	250000, 300000, 350000, 375000, 400000, 415000, 425000, 430000, 435000, 435000,
};

/* The LFC hand check of doc/protocols.md, "Agent test cases": estimate
 * 190000 pages, projection 200000 pages, 1 638 400 000 B / 0.75 / 1 GiB
 * = 2.03 CU -> 3. */
static void test_goal_lfc(void **state)
{
	struct ag_scaling_config cfg;
	struct act_lfc_metrics lfc = { lfc_series, ARRAY_SIZE(lfc_series) };
	struct act_system_metrics sys = { .memory_cached_bytes = 1.0 * GiB };
	struct act_warnings w = { 0 };
	struct act_goal g;

	ag_scaling_config_defaults(&cfg);
	cfg.enable_lfc_metrics = true;
	assert_int_equal(act_goal_cu(&cfg, &CU, &sys, &lfc, &g, &w, NULL), 0);
	assert_true(g.has_all_metrics);
	assert_int_equal(w.n, 0);
	assert_true(g.has_wss);
	assert_int_equal(g.wss_bytes, 200000ULL * 8192);
	assert_true(fabs(g.lfc - 1638400000.0 / 0.75 / GiB) < 1e-12);
	/* memory total: min(wss, cached 1 GiB) / 0.9 -> 1.11 CU */
	assert_true(fabs(g.mem - 1.0 / 0.9) < 1e-12);
	assert_int_equal(g.goal_cu, 3);

	/* the largest window instead of the estimator: 435000 pages */
	cfg.lfc_use_largest_window = true;
	assert_int_equal(act_goal_cu(&cfg, &CU, &sys, &lfc, &g, &w, NULL), 0);
	/* whole series projected: 430000 -> 435000 continues to 437500 pages,
	 * 3.58 GB / 0.75 / 1 GiB = 4.45 */
	assert_int_equal(g.wss_bytes, 437500ULL * 8192);
	assert_int_equal(g.goal_cu, 5);
}

static void test_goal_lfc_not_enough_values(void **state)
{
	struct ag_scaling_config cfg;
	struct act_lfc_metrics lfc = { lfc_series, 8 }; /* need min wait 5 - 1 + window 5 = 9 */
	struct act_warnings w = { 0 };
	struct act_goal g;

	ag_scaling_config_defaults(&cfg);
	cfg.enable_lfc_metrics = true;
	assert_int_equal(act_goal_cu(&cfg, &CU, NULL, &lfc, &g, &w, NULL), 0);
	assert_true(g.has_lfc); /* present, as 0 */
	assert_true(g.lfc == 0.0);
	assert_false(g.has_wss);
	assert_int_equal(w.n, 2);
	assert_string_equal(w.msg[0], ACT_WARN_MISSING_METRICS);
	assert_string_equal(w.msg[1], ACT_WARN_NOT_ENOUGH_WSS);
}

/* Where the Go agent panics or produces an arbitrary uint32, vmact answers. */
static void test_goal_go_crash_inputs(void **state)
{
	struct ag_scaling_config cfg;
	struct act_warnings w = { 0 };
	struct act_goal g;
	struct vmact_err err = { 0 };
	/* window 2, min wait 2: offset 1; the estimate cuts at index 2 (value
	 * 5) and index 1 (10) is above it, so the slice to project has length
	 * 1 and Go's ProjectNextHighest panics. */
	static const double zigzag[] = { 0, 10, 5, 100 };
	struct act_lfc_metrics lfc = { zigzag, ARRAY_SIZE(zigzag) };
	struct act_system_metrics sys = { .load1 = 1.0 };

	ag_scaling_config_defaults(&cfg);
	cfg.enable_lfc_metrics = true;
	cfg.lfc_window_size_minutes = 2;
	cfg.lfc_min_wait_before_downscale_minutes = 2;
	assert_int_equal(act_goal_cu(&cfg, &CU, NULL, &lfc, &g, &w, NULL), 0);
	assert_true(g.has_wss);
	assert_int_equal(g.wss_bytes, 0); /* the one-point slice projects to 0 */

	/* min wait below the window: rejected, not a panic */
	cfg.lfc_min_wait_before_downscale_minutes = 1;
	assert_int_equal(act_goal_cu(&cfg, &CU, NULL, &lfc, &g, &w, &err), -ERANGE);
	assert_non_null(strstr(err.msg, "lfcMinWaitBeforeDownscaleMinutes"));

	/* a zero target: Go's uint32(+Inf) is 0 on amd64; here it saturates */
	ag_scaling_config_defaults(&cfg);
	cfg.load_average_fraction_target = 0;
	assert_int_equal(act_goal_cu(&cfg, &CU, &sys, NULL, &g, &w, NULL), 0);
	assert_int_equal(g.goal_cu, UINT32_MAX);
	/* and 0/0 carries no information */
	sys.load1 = 0;
	assert_int_equal(act_goal_cu(&cfg, &CU, &sys, NULL, &g, &w, NULL), 0);
	assert_int_equal(g.goal_cu, 0);
}

static void test_wss_estimate(void **state)
{
	double s1[25], v;
	static const double s2[] = { 0.1, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.4,
				     0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1 };
	struct vmact_err err = { 0 };

	for (int i = 0; i < 10; i++)
		s1[i] = (i + 1) / 10.0;
	for (int i = 10; i < 15; i++)
		s1[i] = 1.0;
	for (int i = 15; i < 25; i++)
		s1[i] = (i - 4) / 10.0;
	assert_int_equal(act_wss_estimate(s1, 25, 2.0, 9, 5, &v, NULL), 0);
	assert_true(fabs(v - 1.0) < 1e-12);
	assert_int_equal(act_wss_estimate(s2, ARRAY_SIZE(s2), 2.0, 9, 5, &v, NULL), 0);
	assert_true(fabs(v - 1.1) < 1e-12);

	/* Go panics on these */
	assert_int_equal(act_wss_estimate(s2, ARRAY_SIZE(s2), 2.0, 9, 1, &v, &err), -EINVAL);
	vmact_err_reset(&err);
	assert_int_equal(act_wss_estimate(s2, ARRAY_SIZE(s2), 2.0, 3, 5, &v, &err), -EINVAL);
	assert_int_equal(act_wss_estimate(s2, 0, 2.0, 9, 5, &v, NULL), -EINVAL);
	/* a series shorter than offset + window: the last value */
	assert_int_equal(act_wss_estimate(s2, 11, 2.0, 9, 5, &v, NULL), 0);
	assert_true(v == s2[10]);
}

static void test_project_next_highest(void **state)
{
	static const double s1[] = { 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0 };
	static const double s2[] = { 0.0, 0.3, 0.5, 0.6 };
	static const double falling[] = { 5, 3, 1 };
	double v;

	assert_int_equal(act_project_next_highest(s1, ARRAY_SIZE(s1), 0.5, &v, NULL), 0);
	assert_true(fabs(v - 1.05) < 1e-12);
	assert_int_equal(act_project_next_highest(s2, ARRAY_SIZE(s2), 2.0, &v, NULL), 0);
	assert_true(v == 0.9); /* exact, as in the Go test */
	/* decreases are ignored: the first value stays the highest */
	assert_int_equal(act_project_next_highest(falling, 3, 0.5, &v, NULL), 0);
	assert_true(v == 5);
	assert_int_equal(act_project_next_highest(s1, 1, 0.5, &v, NULL), -EINVAL);
}

/* Test_DesiredResourcesFromMetricsOrRequestedUpscaling. */
static void test_desired_table(void **state)
{
	static const struct {
		const char *name;
		bool has_sys;
		double load1;
		bool lfc, enable_lfc;
		struct vmact_resources using_;
		bool has_denied;
		struct vmact_resources denied;
		struct vmact_resources want;
		const char *warn;
	} cases[] = {
		{ "BasicScaleup",
		  true,
		  0.3,
		  false,
		  false,
		  { 250, GiB },
		  false,
		  { 0 },
		  { 500, 2 * GiB },
		  NULL },
		{ "MismatchedApprovedNoScaledown",
		  true,
		  0,
		  false,
		  false,
		  { 250, 2 * GiB },
		  true,
		  { 250, GiB },
		  { 500, 2 * GiB },
		  NULL },
		{ "MismatchedApprovedNoScaledownButVMAtMaximum",
		  true,
		  0,
		  false,
		  false,
		  { 1000, 5 * GiB },
		  true,
		  { 1000, 4 * GiB },
		  { 1000, 5 * GiB },
		  ACT_WARN_DENIED_ABOVE_MAX },
		{ "BasicLFCScaleup",
		  true,
		  0,
		  true,
		  true,
		  { 250, GiB },
		  false,
		  { 0 },
		  { 750, 3 * GiB },
		  NULL },
		{ "CanScaleUpWithoutExpectedLFCMetrics",
		  true,
		  0.3,
		  false,
		  true,
		  { 250, GiB },
		  false,
		  { 0 },
		  { 500, 2 * GiB },
		  ACT_WARN_MISSING_METRICS },
		{ "CanScaleToBoundsWithoutExpectedMetrics",
		  true,
		  0.3,
		  false,
		  true,
		  { 750, 5 * GiB },
		  false,
		  { 0 },
		  { 750, 4 * GiB },
		  ACT_WARN_MISSING_METRICS },
		{ "CanScaleUpWithoutExpectedSystemMetrics",
		  false,
		  0,
		  true,
		  true,
		  { 250, GiB },
		  false,
		  { 0 },
		  { 750, 3 * GiB },
		  ACT_WARN_MISSING_METRICS },
	};
	const act_time_t now = ACT_SEC(77);

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ag_scaling_config cfg;
		struct act_system_metrics sys = { .load1 = cases[i].load1 };
		struct act_lfc_metrics lfc = { lfc_series, ARRAY_SIZE(lfc_series) };
		/* the Go test denies right away: current = approved = using */
		struct act_denied_downscale dd = { now, cases[i].using_, cases[i].denied };
		struct act_desired_input in = {
			.cfg = &cfg,
			.cu = CU,
			.using_ = cases[i].using_,
			.min = { 250, GiB },
			.max = { 1000, 4 * GiB },
			.sys = cases[i].has_sys ? &sys : NULL,
			.lfc = cases[i].lfc ? &lfc : NULL,
			.denied = cases[i].has_denied ? &dd : NULL,
			.denied_cooldown = ACT_SEC(1),
		};
		struct act_warnings w = { 0 };
		struct act_desired d;

		ag_scaling_config_defaults(&cfg);
		cfg.load_average_fraction_target = 0.5;
		cfg.memory_usage_fraction_target = 0.5;
		cfg.memory_total_fraction_target = 0.9;
		cfg.enable_lfc_metrics = cases[i].enable_lfc;
		assert_int_equal(act_desired_resources(&in, now, &d, &w, NULL), 0);
		if (!vmact_res_eq(d.res, cases[i].want)) {
			print_error("%s: %u m / %llu B, want %u m / %llu B\n", cases[i].name,
				    d.res.milli_cpu, (unsigned long long)d.res.mem_bytes,
				    cases[i].want.milli_cpu,
				    (unsigned long long)cases[i].want.mem_bytes);
			fail();
		}
		if (w.n != (cases[i].warn ? 1u : 0u) ||
		    (cases[i].warn && strcmp(w.msg[0], cases[i].warn) != 0)) {
			print_error("%s: warnings %u (%s)\n", cases[i].name, w.n,
				    w.n ? w.msg[0] : "-");
			fail();
		}
	}
}

/* Floors expire, min/max hold, a huge goal saturates instead of wrapping. */
static void test_desired_floors_and_bounds(void **state)
{
	struct ag_scaling_config cfg;
	struct act_system_metrics sys = { 0 };
	struct act_requested_upscale up = { .at = ACT_SEC(10), .base = { 250, GiB }, .mem = true };
	struct act_desired_input in = {
		.cfg = &cfg,
		.cu = CU,
		.using_ = { 250, GiB },
		.min = { 250, GiB },
		.max = { 2000, 8 * GiB },
		.sys = &sys,
		.requested_upscale = &up,
		.requested_upscale_valid = ACT_SEC(10),
	};
	struct act_warnings w = { 0 };
	struct act_desired d;
	struct vmact_err err = { 0 };
	int64_t wait;

	ag_scaling_config_defaults(&cfg);
	assert_int_equal(act_desired_resources(&in, ACT_SEC(12), &d, &w, NULL), 0);
	assert_true(vmact_res_eq(d.res, ((struct vmact_resources){ 500, 2 * GiB })));
	assert_true(d.requested_upscale_affected);
	assert_true(act_desired_wait(&d, false, false, &wait));
	assert_int_equal(wait, ACT_SEC(8));
	/* expired */
	assert_int_equal(act_desired_resources(&in, ACT_SEC(20), &d, &w, NULL), 0);
	assert_true(vmact_res_eq(d.res, in.min));
	assert_false(act_desired_wait(&d, false, false, &wait));

	/* 70000 CU of load: Go's uint16 multiplier wraps to 4464 CU; here
	 * the goal saturates and max caps it */
	sys.load1 = 70000 * 0.25 * 0.9;
	in.requested_upscale = NULL;
	assert_int_equal(act_desired_resources(&in, 0, &d, &w, NULL), 0);
	assert_true(vmact_res_eq(d.res, in.max));

	/* unusable input is an error, not a panic */
	in.min.milli_cpu = 4000;
	assert_int_equal(act_desired_resources(&in, 0, &d, &w, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "min"));
	in.min.milli_cpu = 250;
	in.cu.mem_bytes = 0;
	assert_int_equal(act_desired_resources(&in, 0, &d, &w, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goal_cpu_table),
		cmocka_unit_test(test_goal_no_metrics),
		cmocka_unit_test(test_goal_production_defaults),
		cmocka_unit_test(test_goal_lfc),
		cmocka_unit_test(test_goal_lfc_not_enough_values),
		cmocka_unit_test(test_goal_go_crash_inputs),
		cmocka_unit_test(test_wss_estimate),
		cmocka_unit_test(test_project_next_highest),
		cmocka_unit_test(test_desired_table),
		cmocka_unit_test(test_desired_floors_and_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
