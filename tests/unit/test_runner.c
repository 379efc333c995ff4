/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's pure logic: the order of quota and hotplug steps, bound
 * enforcement before any step starts, rounding to what the VM's layout can
 * do, and the achieved state fed back to the core. The executor itself is
 * tested end to end against a real guest by
 * tests/integration/test_daemon.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/runner.h"
#include "agent-glue/informant-client.h"

#define MiB (1024ULL * 1024ULL)

static const struct act_vm_layout layout = {
	.vcpus_max = 4,
	.vcpus_now = 2,
	.base_bytes = 512 * MiB,
	.method = HP_METHOD_VIRTIO_MEM,
	.vmem_size_bytes = 1024 * MiB,
	.vmem_block_bytes = 2 * MiB,
};

static struct act_plan_limits limits(void)
{
	return (struct act_plan_limits){
		.min = { 1000, 512 * MiB },
		.max = { 4000, 1536 * MiB },
		.has_permit = true,
		.permit = { 4000, 1536 * MiB },
		.has_approved = true,
		.approved = { 1000, 512 * MiB },
	};
}

static void plan_ok(const struct vmact_resources *from, const struct vmact_resources *to,
		    const struct act_plan_limits *lim, const struct act_vm_layout *l,
		    struct act_plan *p)
{
	struct vmact_err err = { 0 };

	if (act_plan_hotplug(from, to, lim, l, p, &err) < 0)
		fail_msg("plan refused: %s", err.msg);
}

/* Shrinking: the quota goes down before any vCPU is unplugged. */
static void test_shrink_quota_first(void **state)
{
	struct vmact_resources from = { 2000, 1024 * MiB }, to = { 1000, 512 * MiB };
	struct act_plan_limits lim = limits();
	struct act_plan p;

	(void)state;
	plan_ok(&from, &to, &lim, &layout, &p);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.steps[0].kind, ACT_STEP_QUOTA);
	assert_int_equal(p.steps[0].milli, 1000);
	assert_int_equal(p.steps[1].kind, ACT_STEP_VCPUS);
	assert_int_equal(p.steps[1].vcpus, 1);
	assert_int_equal(p.steps[2].kind, ACT_STEP_MEM);
	assert_int_equal(p.steps[2].mem_bytes, 512 * MiB);
	assert_int_equal(p.target.milli_cpu, 1000);
}

/* Growing: vCPUs are plugged first, the quota is raised last. */
static void test_grow_quota_last(void **state)
{
	struct act_vm_layout l = layout;
	struct vmact_resources from = { 1000, 512 * MiB }, to = { 1500, 768 * MiB };
	struct act_plan_limits lim = limits();
	struct act_plan p;

	(void)state;
	l.vcpus_now = 1;
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.steps[0].kind, ACT_STEP_VCPUS);
	assert_int_equal(p.steps[0].vcpus, 2);
	assert_int_equal(p.steps[1].kind, ACT_STEP_MEM);
	assert_int_equal(p.steps[1].mem_bytes, 768 * MiB);
	assert_int_equal(p.steps[2].kind, ACT_STEP_QUOTA);
	assert_int_equal(p.steps[2].milli, 1500);
}

/* A fractional change within the same vCPU count is the quota alone. */
static void test_fraction_quota_only(void **state)
{
	struct vmact_resources from = { 2000, 512 * MiB }, to = { 1500, 512 * MiB };
	struct act_plan_limits lim = limits();
	struct act_plan p;

	(void)state;
	plan_ok(&from, &to, &lim, &layout, &p);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.steps[0].kind, ACT_STEP_QUOTA);
	assert_int_equal(p.steps[0].milli, 1500);
}

static void refused(const struct vmact_resources *from, const struct vmact_resources *to,
		    const struct act_plan_limits *lim, const char *what)
{
	struct vmact_err err = { 0 };
	struct act_plan p;

	assert_int_equal(act_plan_hotplug(from, to, lim, &layout, &p, &err), -ERANGE);
	if (!strstr(err.msg, what))
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, what);
	assert_int_equal(p.n, 0);
}

/* Targets outside the bounds are never started, whatever the core says. */
static void test_bounds_refused(void **state)
{
	struct vmact_resources from = { 2000, 1024 * MiB }, to;
	struct act_plan_limits lim = limits();

	(void)state;
	to = (struct vmact_resources){ 5000, 1024 * MiB };
	refused(&from, &to, &lim, "max");
	to = (struct vmact_resources){ 2000, 2048 * MiB };
	refused(&from, &to, &lim, "max");
	lim.permit.milli_cpu = 3000;
	to = (struct vmact_resources){ 3500, 1024 * MiB };
	refused(&from, &to, &lim, "permit");
	lim = limits();
	lim.has_permit = false;
	refused(&from, &to, &lim, "without a permit");
	lim = limits();
	to = (struct vmact_resources){ 500, 1024 * MiB };
	refused(&from, &to, &lim, "min");
	to = (struct vmact_resources){ 2000, 256 * MiB };
	refused(&from, &to, &lim, "min");
	lim.has_approved = false;
	to = (struct vmact_resources){ 1000, 1024 * MiB };
	refused(&from, &to, &lim, "approval");
	lim = limits();
	lim.approved.milli_cpu = 1500;
	refused(&from, &to, &lim, "approved");
}

/* Rounding never passes the wanted value: growth rounds down, shrink up,
 * vCPUs stop at the domain's maximum. */
static void test_rounding(void **state)
{
	struct act_vm_layout l = layout;
	struct vmact_resources from = { 1000, 512 * MiB }, to = { 5000, 513 * MiB };
	struct act_plan_limits lim = limits();
	struct act_plan p;

	(void)state;
	lim.max.milli_cpu = lim.permit.milli_cpu = 8000;
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.target.milli_cpu, 4000); /* 4 vCPUs at most */
	assert_int_equal(p.target.mem_bytes, 512 * MiB); /* below one block: nothing */

	from = (struct vmact_resources){ 2000, 1024 * MiB };
	to = (struct vmact_resources){ 2000, 601 * MiB };
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.target.mem_bytes, 602 * MiB);
	assert_int_equal(p.n, 1);

	/* The device cannot give more than its size. */
	from = (struct vmact_resources){ 2000, 512 * MiB };
	to = (struct vmact_resources){ 2000, 1536 * MiB };
	l.vmem_size_bytes = 256 * MiB;
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.target.mem_bytes, 768 * MiB);

	/* No representable change at all: an empty plan, target = using. */
	l = layout;
	l.vmem_size_bytes = 0;
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.target.mem_bytes, from.mem_bytes);

	/* DIMMs: whole DIMMs of the compute unit's size, within the slots. */
	l = layout;
	l.method = HP_METHOD_DIMM;
	l.dimm_bytes = 256 * MiB;
	l.dimm_slots = 2;
	to = (struct vmact_resources){ 2000, 1500 * MiB };
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.target.mem_bytes, 1024 * MiB);
}

/* vCPUs locked (libvirt refuses changes): the quota alone moves, within
 * the vCPUs there are. */
static void test_vcpus_locked(void **state)
{
	struct act_vm_layout l = layout;
	struct vmact_resources from = { 1000, 512 * MiB }, to = { 2000, 512 * MiB };
	struct act_plan_limits lim = limits();
	struct act_plan p;

	(void)state;
	l.vcpus_now = 2;
	l.vcpus_locked = true;
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.target.milli_cpu, 2000);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.steps[0].kind, ACT_STEP_QUOTA);
	l.vcpus_now = 1;
	to.milli_cpu = 1500;
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.target.milli_cpu, 1000);
	from.milli_cpu = 2000;
	l.vcpus_now = 2;
	to.milli_cpu = 1000;
	plan_ok(&from, &to, &lim, &l, &p);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.steps[0].kind, ACT_STEP_QUOTA);
	assert_int_equal(p.steps[0].milli, 1000);
}

/* Random plans: the target lies between using and want, inside every
 * limit, and the quota is lowered before vCPUs go and raised after they
 * come. */
static void test_property(void **state)
{
	unsigned seed = 12345;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct act_plan_limits lim;
		struct act_vm_layout l = layout;
		struct vmact_resources from, to;
		struct vmact_err err = { 0 };
		struct act_plan p;
		int r;

		lim.min = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 4),
						 512 * MiB + (uint64_t)(rand_r(&seed) % 4) * 256 * MiB };
		lim.max = (struct vmact_resources){ lim.min.milli_cpu + 250u * (rand_r(&seed) % 16),
						 lim.min.mem_bytes +
							 (uint64_t)(rand_r(&seed) % 5) * 256 * MiB };
		lim.has_permit = rand_r(&seed) % 4 != 0;
		lim.permit = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
						    (uint64_t)(1 + rand_r(&seed) % 8) * 256 * MiB };
		lim.has_approved = rand_r(&seed) % 4 != 0;
		lim.approved = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
						      (uint64_t)(1 + rand_r(&seed) % 8) * 256 * MiB };
		from = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
					      512 * MiB + (uint64_t)(rand_r(&seed) % 5) * 256 * MiB };
		to = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
					    (uint64_t)(1 + rand_r(&seed) % 8) * 255 * MiB };
		l.vcpus_now = (from.milli_cpu + 999) / 1000;
		l.vmem_block_bytes = (uint64_t)(1 + rand_r(&seed) % 4) * MiB;
		l.vcpus_locked = rand_r(&seed) % 4 == 0;

		r = act_plan_hotplug(&from, &to, &lim, &l, &p, &err);
		if (r < 0) {
			assert_int_equal(r, -ERANGE);
			continue;
		}
		/* between using and want */
		assert_true(to.milli_cpu >= from.milli_cpu
				    ? p.target.milli_cpu >= from.milli_cpu &&
					      p.target.milli_cpu <= to.milli_cpu
				    : p.target.milli_cpu <= from.milli_cpu &&
					      p.target.milli_cpu >= to.milli_cpu);
		assert_true(to.mem_bytes >= from.mem_bytes
				    ? p.target.mem_bytes >= from.mem_bytes &&
					      p.target.mem_bytes <= to.mem_bytes
				    : p.target.mem_bytes <= from.mem_bytes &&
					      p.target.mem_bytes >= to.mem_bytes);
		/* within every limit */
		if (p.target.milli_cpu > from.milli_cpu)
			assert_true(lim.has_permit && p.target.milli_cpu <= lim.max.milli_cpu &&
				    p.target.milli_cpu <= lim.permit.milli_cpu);
		if (p.target.mem_bytes > from.mem_bytes)
			assert_true(lim.has_permit && p.target.mem_bytes <= lim.max.mem_bytes &&
				    p.target.mem_bytes <= lim.permit.mem_bytes);
		if (p.target.milli_cpu < from.milli_cpu)
			assert_true(lim.has_approved && p.target.milli_cpu >= lim.min.milli_cpu &&
				    p.target.milli_cpu >= lim.approved.milli_cpu);
		if (p.target.mem_bytes < from.mem_bytes)
			assert_true(lim.has_approved && p.target.mem_bytes >= lim.min.mem_bytes &&
				    p.target.mem_bytes >= lim.approved.mem_bytes);
		/* ordering: CPU usable = min(quota, vCPUs) never above
		 * max(from, target) after any step */
		{
			uint32_t quota = from.milli_cpu;
			unsigned vcpus = l.vcpus_now;
			uint32_t cap = from.milli_cpu > p.target.milli_cpu ? from.milli_cpu
									   : p.target.milli_cpu;

			for (unsigned k = 0; k < p.n; k++) {
				if (p.steps[k].kind == ACT_STEP_QUOTA)
					quota = p.steps[k].milli;
				else if (p.steps[k].kind == ACT_STEP_VCPUS)
					vcpus = p.steps[k].vcpus;
				assert_true(act_achieved(quota, vcpus, 0).milli_cpu <= cap);
				/* a shrink is enforced before its unplug */
				if (p.steps[k].kind == ACT_STEP_VCPUS &&
				    p.target.milli_cpu < from.milli_cpu)
					assert_int_equal(quota, p.target.milli_cpu);
			}
			assert_int_equal(act_achieved(quota, vcpus, 0).milli_cpu,
					 p.n ? p.target.milli_cpu
					     : act_achieved(quota, vcpus, 0).milli_cpu);
		}
	}
}

static void test_achieved(void **state)
{
	(void)state;
	assert_int_equal(act_achieved(1500, 2, 1).milli_cpu, 1500);
	assert_int_equal(act_achieved(3000, 2, 1).milli_cpu, 2000);
	assert_int_equal(act_achieved(0, 3, 1).milli_cpu, 3000);
	assert_int_equal(act_achieved(0, 3, 7).mem_bytes, 7);
}

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
		struct act_system_metrics m = { .load1 = 4, .load5 = 4,
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

/* §3.4: only a running agent may scale down (with the informant's
 * approval); a suspended one must not resize at all until /resume; one
 * without a confirmed registration scales up only, like a VM without a
 * vm-monitor. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shrink_quota_first),
		cmocka_unit_test(test_grow_quota_last),
		cmocka_unit_test(test_fraction_quota_only),
		cmocka_unit_test(test_bounds_refused),
		cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_vcpus_locked),
		cmocka_unit_test(test_property),
		cmocka_unit_test(test_achieved),
		cmocka_unit_test(test_result_feedback),
		cmocka_unit_test(test_memory_absent),
		cmocka_unit_test(test_meta_scaling),
		cmocka_unit_test(test_informant_gate),
		cmocka_unit_test(test_informant_backoff),
	};

	return cmocka_run_group_tests_name("runner", tests, NULL, NULL);
}
