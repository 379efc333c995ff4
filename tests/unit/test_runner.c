/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's pure logic besides planning (tests/unit/test_plan.c): the
 * achieved state fed back to the core, the VM's scaling config and the
 * informant's gate and backoff. The executor itself is tested end to end
 * against a real guest by tests/integration/test_daemon.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/runner/runner.h"
#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/config/config.h"
#include "actuator/runner/runner-priv.h"
#include "agent-glue/client/informant-client.h"
#include "guestd/approver.h"

#define MiB (1024ULL * 1024ULL)

/* What the VM reached, not what was asked, becomes the core's usage; a
 * failure also starts the core's retry backoff. */
static void test_result_feedback(void **state)
{
	struct ag_scaling_config sc;
	struct act_timing t;
	struct vmact_resources cu = { 500, 256 * MiB }, use = { 1000, 512 * MiB },
			       min = { 1000, 512 * MiB }, max = { 2000, 1024 * MiB },
			       permit = { 2000, 1024 * MiB }, part = { 1500, 512 * MiB };
	struct vmact_err err = { 0 };
	struct act_actions a;
	struct act_state s;

	(void)state;
	ag_scaling_config_defaults(&sc);
	act_timing_defaults(&t);
	assert_int_equal(act_state_init(&s, &t, &cu, &sc, &use, &min, &max, &err), 0);
	assert_int_equal(act_plugin_starting(&s, 0, &permit, &err), 0);
	assert_int_equal(act_plugin_response(&s, 0, &permit, &err), 0);
	assert_int_equal(act_hotplug_starting(&s, 0, &permit, &err), 0);
	assert_int_equal(act_hotplug_finished(&s, ACT_SEC(1), &part, true, &err), 0);
	assert_int_equal(s.using_.milli_cpu, 1500);
	assert_int_equal(s.using_.mem_bytes, 512 * MiB);
	assert_true(s.hotplug.has_failure);
	/* metrics asking for max: the retry waits for the backoff */
	{
		struct act_system_metrics m = { .load1 = 4,
						.load5 = 4,
						.memory_usage_bytes = 600.0 * MiB };

		assert_int_equal(act_state_update_system_metrics(&s, &m, &err), 0);
	}
	assert_int_equal(act_next_actions(&s, ACT_SEC(2), &a, &err), 0);
	assert_false(a.has_hotplug);
	assert_true(a.has_wait);
	assert_int_equal(act_next_actions(&s, ACT_SEC(7), &a, &err), 0);
	assert_true(a.has_hotplug);
	assert_int_equal(a.hotplug.current.milli_cpu, 1500);
	/* without an ongoing hotplug a result is an error */
	assert_int_equal(act_hotplug_finished(&s, ACT_SEC(8), &part, false, &err), -EINVAL);
}

/* Memory statistics missing: CPU still drives growth, nothing shrinks. */
static void test_memory_absent(void **state)
{
	struct ag_scaling_config sc;
	struct act_timing t;
	struct vmact_resources cu = { 500, 256 * MiB }, use = { 2000, 1024 * MiB },
			       min = { 500, 256 * MiB }, max = { 4000, 2048 * MiB };
	struct act_system_metrics idle = { .load1 = 0, .load5 = 0, .memory_absent = true };
	struct act_system_metrics busy = { .load1 = 3, .load5 = 3, .memory_absent = true };
	struct vmact_err err = { 0 };
	struct act_actions a;
	struct act_state s;

	(void)state;
	ag_scaling_config_defaults(&sc);
	act_timing_defaults(&t);
	assert_int_equal(act_state_init(&s, &t, &cu, &sc, &use, &min, &max, &err), 0);
	assert_int_equal(act_state_update_system_metrics(&s, &idle, &err), 0);
	assert_int_equal(act_next_actions(&s, 0, &a, &err), 0);
	assert_int_equal(a.desired.milli_cpu, 2000);
	assert_int_equal(a.desired.mem_bytes, 1024 * MiB);
	assert_int_equal(act_state_update_system_metrics(&s, &busy, &err), 0);
	assert_int_equal(act_next_actions(&s, 0, &a, &err), 0);
	assert_true(a.desired.milli_cpu > 2000);
	/* the memory fields are not checked when absent */
	busy.memory_usage_bytes = -1;
	assert_int_equal(act_state_update_system_metrics(&s, &busy, &err), 0);
}

static void test_meta_scaling(void **state)
{
	struct ag_scaling_config d, out;
	struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	(void)state;
	hp_meta_done(&m); /* an empty meta: its texts "" */
	ag_scaling_config_defaults(&d);
	m.scaling.has_load_avg_target = true;
	m.scaling.load_avg_target = 0.5;
	assert_int_equal(act_meta_scaling_config(&d, &m, &out, &err), 0);
	assert_true(out.load_average_fraction_target == 0.5);
	assert_true(out.memory_usage_fraction_target == d.memory_usage_fraction_target);
	m.scaling.has_mem_usage_target = true;
	m.scaling.mem_usage_target = 1.5;
	assert_true(act_meta_scaling_config(&d, &m, &out, &err) < 0);
	assert_non_null(strstr(err.msg, "memoryUsageFractionTarget"));
}

/* enableLFCMetrics without the guest's LFC exporter would do nothing:
 * refused, whether the VM or the host's "scaling" asks for it. */
static void test_lfc_needs_endpoint(void **state)
{
	struct ag_scaling_config d, out;
	struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	(void)state;
	hp_meta_done(&m); /* an empty meta: its texts "" */
	ag_scaling_config_defaults(&d);
	m.scaling.has_enable_lfc = true;
	m.scaling.enable_lfc = true;
	assert_int_equal(act_meta_scaling_config(&d, &m, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "enableLFCMetrics (<vmact:scaling>): needs "
					"<vmact:metrics lfc='http://HOST:9499'>"));
	vmact_err_reset(&err);
	m.scaling.has_enable_lfc = false;
	d.enable_lfc_metrics = true;
	assert_int_equal(act_meta_scaling_config(&d, &m, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "enableLFCMetrics (the host's \"scaling\")"));
	/* The VM turns the host's setting off, or names its exporter. */
	vmact_err_reset(&err);
	m.scaling.has_enable_lfc = true;
	m.scaling.enable_lfc = false;
	assert_int_equal(act_meta_scaling_config(&d, &m, &out, &err), 0);
	m.scaling.has_enable_lfc = false;
	m.metrics = "http://10.0.0.2:9100";
	m.metrics_lfc = "http://10.0.0.2:9499";
	assert_int_equal(act_meta_scaling_config(&d, &m, &out, &err), 0);
	assert_true(out.enable_lfc_metrics);
}

/* <vmact:policy> over the host's policy.cpu and policy.cpu_shrink. */
static void test_policy_selection(void **state)
{
	struct act_config cfg;
	struct act_runner_env env = { 0 };
	struct act_runner r = { 0 };

	(void)state;
	act_config_defaults(&cfg);
	env.cfg = &cfg;
	r.env = &env;
	assert_int_equal(act_runner_cpu_policy(&r), cfg.cpu_policy);
	assert_int_equal(act_runner_cpu_shrink(&r), cfg.cpu_shrink);
	cfg.cpu_policy = ACT_CPU_POLICY_NEON;
	cfg.cpu_shrink = ACT_CPU_SHRINK_UNPLUG;
	assert_int_equal(act_runner_cpu_policy(&r), ACT_CPU_POLICY_NEON);
	/* The host's "unplug" is for VMs whose shrinks an approver allows:
	 * one without keeps its vCPUs unless its own metadata asks. */
	assert_int_equal(act_runner_cpu_shrink(&r), ACT_CPU_SHRINK_QUOTA);
	r.approver = (struct act_approver *)&r; /* only compared with NULL */
	assert_int_equal(act_runner_cpu_shrink(&r), ACT_CPU_SHRINK_UNPLUG);
	r.approver = NULL;
	r.meta.policy_cpu = HP_POLICY_CPU_REACTIVE;
	r.meta.policy_shrink = HP_POLICY_SHRINK_QUOTA;
	assert_int_equal(act_runner_cpu_policy(&r), ACT_CPU_POLICY_REACTIVE);
	assert_int_equal(act_runner_cpu_shrink(&r), ACT_CPU_SHRINK_QUOTA);
	cfg.cpu_policy = ACT_CPU_POLICY_REACTIVE;
	cfg.cpu_shrink = ACT_CPU_SHRINK_QUOTA;
	r.meta.policy_cpu = HP_POLICY_CPU_NEON;
	r.meta.policy_shrink = HP_POLICY_SHRINK_UNPLUG;
	assert_int_equal(act_runner_cpu_policy(&r), ACT_CPU_POLICY_NEON);
	assert_int_equal(act_runner_cpu_shrink(&r), ACT_CPU_SHRINK_UNPLUG);
	act_config_free(&cfg);
}

/* As doc/protocols.md, "Informant lifecycle" has it: only a running
 * agent may scale down (with the informant's approval); a suspended one
 * must not resize at all until /resume; one without a confirmed
 * registration scales up only, like a VM whose vm-monitor is not connected. */
static void test_informant_gate(void **state)
{
	struct act_inf_gate g;

	(void)state;
	g = act_inf_gate_for(AG_INF_RUNNING);
	assert_true(g.may_resize);
	assert_true(g.approves);
	g = act_inf_gate_for(AG_INF_SUSPENDED);
	assert_false(g.may_resize);
	assert_false(g.approves);
	g = act_inf_gate_for(AG_INF_UNCONFIRMED);
	assert_true(g.may_resize);
	assert_false(g.approves);
	g = act_inf_gate_for(AG_INF_NONE);
	assert_true(g.may_resize);
	assert_false(g.approves);
}

static void test_informant_backoff(void **state)
{
	uint64_t prev = 0;

	(void)state;
	assert_int_equal(act_inf_retry_usec(0), 5000000);
	assert_int_equal(act_inf_retry_usec(1), 5000000);
	assert_int_equal(act_inf_retry_usec(2), 10000000);
	assert_int_equal(act_inf_retry_usec(3), 20000000);
	assert_int_equal(act_inf_retry_usec(5), 80000000);
	for (unsigned n = 1; n < 1000; n++) {
		uint64_t w = act_inf_retry_usec(n);

		assert_true(w >= prev);
		assert_true(w <= 80000000);
		prev = w;
	}
	assert_int_equal(act_inf_retry_usec(UINT32_MAX), 80000000);
}

/* A guest that kept memory it was asked to give back is not asked again
 * before its hold ends; the hold doubles up to 16 minutes; CPU changes
 * go on meanwhile. */
static void test_mem_hold(void **state)
{
	struct vmact_resources using_ = { 1000, 1024 * MiB };
	struct vmact_resources t;
	unsigned s = 0, seen[8];

	(void)state;
	for (unsigned i = 0; i < 8; i++)
		seen[i] = s = act_runner_mem_hold_next(s);
	assert_int_equal(seen[0], 60);
	assert_int_equal(seen[1], 120);
	assert_int_equal(seen[4], 960);
	assert_int_equal(seen[7], 960);

	t = (struct vmact_resources){ 2000, 512 * MiB };
	assert_true(act_runner_mem_held(&t, &using_, ACT_SEC(10), ACT_SEC(70)));
	assert_int_equal(t.milli_cpu, 2000);
	assert_int_equal(t.mem_bytes, 1024 * MiB);
	/* The hold is over, or the memory grows: nothing held. */
	t = (struct vmact_resources){ 2000, 512 * MiB };
	assert_false(act_runner_mem_held(&t, &using_, ACT_SEC(70), ACT_SEC(70)));
	assert_int_equal(t.mem_bytes, 512 * MiB);
	t = (struct vmact_resources){ 1000, 1536 * MiB };
	assert_false(act_runner_mem_held(&t, &using_, ACT_SEC(10), ACT_SEC(70)));
	assert_int_equal(t.mem_bytes, 1536 * MiB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_feedback),   cmocka_unit_test(test_memory_absent),
		cmocka_unit_test(test_meta_scaling),      cmocka_unit_test(test_lfc_needs_endpoint),
		cmocka_unit_test(test_policy_selection),  cmocka_unit_test(test_informant_gate),
		cmocka_unit_test(test_informant_backoff), cmocka_unit_test(test_mem_hold),
	};

	return cmocka_run_group_tests_name("runner", tests, NULL, NULL);
}
