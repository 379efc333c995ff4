/* SPDX-License-Identifier: Apache-2.0 */
/* Pure hotplug planning (actuator/policy/plan.h): the order of quota and hotplug
 * steps, bound enforcement before any step starts, rounding to what the
 * VM's layout can do, refused vCPU changes, the achieved size and the
 * layout read from a live state. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/policy/plan.h"
#include "base/macro.h"

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

/* ---- accepted plans: target and steps, in order ------------------------ */

#define Q(m)                                         \
	{                                            \
		.kind = ACT_STEP_QUOTA, .milli = (m) \
	}
#define V(n)                                         \
	{                                            \
		.kind = ACT_STEP_VCPUS, .vcpus = (n) \
	}
#define M(b)                                           \
	{                                              \
		.kind = ACT_STEP_MEM, .mem_bytes = (b) \
	}

struct plan_case {
	const char *name;
	struct vmact_resources from, to;
	/* layout changes from `layout` */
	unsigned vcpus_now; /* 0: layout's */
	bool vcpus_refused;
	enum hp_mem_method method;
	uint64_t vmem_size_bytes; /* with vmem_size_set */
	bool vmem_size_set;
	uint64_t dimm_bytes;
	unsigned dimm_slots;
	uint32_t max_cpu; /* 0: limits()'s (raises max and permit) */
	struct vmact_resources target;
	unsigned n;
	struct act_step steps[ACT_PLAN_MAX_STEPS];
};

static const struct plan_case plan_cases[] = {
	{ "shrink: the quota goes down before any vCPU is unplugged",
	  { 2000, 1024 * MiB },
	  { 1000, 512 * MiB },
	  .target = { 1000, 512 * MiB },
	  .n = 3,
	  .steps = { Q(1000), V(1), M(512 * MiB) } },
	{ "growth: vCPUs are plugged first, the quota is raised last",
	  { 1000, 512 * MiB },
	  { 1500, 768 * MiB },
	  .vcpus_now = 1,
	  .target = { 1500, 768 * MiB },
	  .n = 3,
	  .steps = { V(2), M(768 * MiB), Q(1500) } },
	{ "a fractional change within the same vCPU count is the quota alone",
	  { 2000, 512 * MiB },
	  { 1500, 512 * MiB },
	  .target = { 1500, 512 * MiB },
	  .n = 1,
	  .steps = { Q(1500) } },
	{ "growth stops at the domain's maximum vCPUs; below one block: no memory",
	  { 1000, 512 * MiB },
	  { 5000, 513 * MiB },
	  .max_cpu = 8000,
	  .target = { 4000, 512 * MiB },
	  .n = 2,
	  .steps = { V(4), Q(4000) } },
	{ "a memory shrink rounds up to a whole block",
	  { 2000, 1024 * MiB },
	  { 2000, 601 * MiB },
	  .target = { 2000, 602 * MiB },
	  .n = 1,
	  .steps = { M(602 * MiB) } },
	{ "the device cannot give more than its size",
	  { 2000, 512 * MiB },
	  { 2000, 1536 * MiB },
	  .vmem_size_set = true,
	  .vmem_size_bytes = 256 * MiB,
	  .target = { 2000, 768 * MiB },
	  .n = 1,
	  .steps = { M(768 * MiB) } },
	{ "no representable change at all: an empty plan, target = using",
	  { 2000, 512 * MiB },
	  { 2000, 1536 * MiB },
	  .vmem_size_set = true,
	  .vmem_size_bytes = 0,
	  .target = { 2000, 512 * MiB },
	  .n = 0 },
	{ "DIMMs: whole DIMMs of the compute unit's size, within the slots",
	  { 2000, 512 * MiB },
	  { 2000, 1500 * MiB },
	  .method = HP_METHOD_DIMM,
	  .dimm_bytes = 256 * MiB,
	  .dimm_slots = 2,
	  .target = { 2000, 1024 * MiB },
	  .n = 1,
	  .steps = { M(1024 * MiB) } },
	/* vCPU changes refused: the quota alone moves, within the vCPUs
	 * there are; no vCPU is plugged nor unplugged. */
	{ "refused: growth by the quota alone up to the vCPUs there are",
	  { 1000, 512 * MiB },
	  { 2000, 512 * MiB },
	  .vcpus_now = 2,
	  .vcpus_refused = true,
	  .target = { 2000, 512 * MiB },
	  .n = 1,
	  .steps = { Q(2000) } },
	{ "refused: no growth past the vCPUs there are",
	  { 1000, 512 * MiB },
	  { 1500, 512 * MiB },
	  .vcpus_now = 1,
	  .vcpus_refused = true,
	  .target = { 1000, 512 * MiB },
	  .n = 0 },
	{ "refused: a shrink lowers the quota and unplugs nothing",
	  { 2000, 512 * MiB },
	  { 1000, 512 * MiB },
	  .vcpus_now = 2,
	  .vcpus_refused = true,
	  .target = { 1000, 512 * MiB },
	  .n = 1,
	  .steps = { Q(1000) } },
};

static void test_plans(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(plan_cases); i++) {
		const struct plan_case *c = &plan_cases[i];
		struct act_plan_limits lim = limits();
		struct act_vm_layout l = layout;
		struct vmact_err err = { 0 };
		struct act_plan p;

		if (c->vcpus_now)
			l.vcpus_now = c->vcpus_now;
		l.vcpus_refused = c->vcpus_refused;
		if (c->method)
			l.method = c->method;
		if (c->vmem_size_set)
			l.vmem_size_bytes = c->vmem_size_bytes;
		l.dimm_bytes = c->dimm_bytes;
		l.dimm_slots = c->dimm_slots;
		if (c->max_cpu)
			lim.max.milli_cpu = lim.permit.milli_cpu = c->max_cpu;
		if (act_plan_hotplug(&c->from, &c->to, &lim, &l, &p, &err) < 0)
			fail_msg("%s: plan refused: %s", c->name, err.msg);
		if (!vmact_res_eq(p.target, c->target))
			fail_msg("%s: target %u/%llu, expected %u/%llu", c->name,
				 p.target.milli_cpu, (unsigned long long)p.target.mem_bytes,
				 c->target.milli_cpu, (unsigned long long)c->target.mem_bytes);
		if (p.n != c->n)
			fail_msg("%s: %u steps, expected %u", c->name, p.n, c->n);
		for (unsigned k = 0; k < p.n; k++)
			if (p.steps[k].kind != c->steps[k].kind ||
			    p.steps[k].milli != c->steps[k].milli ||
			    p.steps[k].vcpus != c->steps[k].vcpus ||
			    p.steps[k].mem_bytes != c->steps[k].mem_bytes)
				fail_msg("%s: step %u differs", c->name, k);
	}
}

/* ---- refused targets: never started, whatever the core says ------------ */

struct refused_case {
	struct vmact_resources to;
	void (*limits)(struct act_plan_limits *lim);
	const char *mentions;
};

static void lower_permit(struct act_plan_limits *lim)
{
	lim->permit.milli_cpu = 3000;
}

static void no_permit(struct act_plan_limits *lim)
{
	lim->has_permit = false;
}

static void no_approval(struct act_plan_limits *lim)
{
	lim->has_approved = false;
}

static void approved_1500(struct act_plan_limits *lim)
{
	lim->approved.milli_cpu = 1500;
}

static const struct refused_case refused_cases[] = {
	{ { 5000, 1024 * MiB }, NULL, "above the VM's max" },
	{ { 2000, 2048 * MiB }, NULL, "above the VM's max" },
	{ { 3500, 1024 * MiB }, lower_permit, "above the permit" },
	{ { 3500, 1024 * MiB }, no_permit, "without a permit" },
	{ { 500, 1024 * MiB }, NULL, "below the VM's min" },
	{ { 2000, 256 * MiB }, NULL, "below the VM's min" },
	{ { 1000, 1024 * MiB }, no_approval, "without the vm-monitor's approval" },
	{ { 1000, 1024 * MiB }, approved_1500, "below what the vm-monitor approved" },
};

static void test_refused(void **state)
{
	const struct vmact_resources from = { 2000, 1024 * MiB };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(refused_cases); i++) {
		const struct refused_case *c = &refused_cases[i];
		struct act_plan_limits lim = limits();
		struct vmact_err err = { 0 };
		struct act_plan p;

		if (c->limits)
			c->limits(&lim);
		assert_int_equal(act_plan_hotplug(&from, &c->to, &lim, &layout, &p, &err), -ERANGE);
		if (!strstr(err.msg, c->mentions))
			fail_msg("case %zu: error \"%s\" does not mention \"%s\"", i, err.msg,
				 c->mentions);
		assert_int_equal(p.n, 0);
	}
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
						    512 * MiB + (uint64_t)(rand_r(&seed) % 4) *
									256 * MiB };
		lim.max = (struct vmact_resources){
			lim.min.milli_cpu + 250u * (rand_r(&seed) % 16),
			lim.min.mem_bytes + (uint64_t)(rand_r(&seed) % 5) * 256 * MiB
		};
		lim.has_permit = rand_r(&seed) % 4 != 0;
		lim.permit = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
						       (uint64_t)(1 + rand_r(&seed) % 8) * 256 *
							       MiB };
		lim.has_approved = rand_r(&seed) % 4 != 0;
		lim.approved = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
							 (uint64_t)(1 + rand_r(&seed) % 8) * 256 *
								 MiB };
		from = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
						 512 * MiB + (uint64_t)(rand_r(&seed) % 5) * 256 *
								     MiB };
		to = (struct vmact_resources){ 250u * (1 + rand_r(&seed) % 20),
					       (uint64_t)(1 + rand_r(&seed) % 8) * 255 * MiB };
		l.vcpus_now = (from.milli_cpu + 999) / 1000;
		l.vmem_block_bytes = (uint64_t)(1 + rand_r(&seed) % 4) * MiB;
		l.vcpus_refused = rand_r(&seed) % 4 == 0;

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
	static const struct {
		uint32_t quota;
		unsigned vcpus;
		uint64_t mem;
		struct vmact_resources want;
	} cases[] = {
		{ 1500, 2, 1, { 1500, 1 } },
		{ 3000, 2, 1, { 2000, 1 } },
		{ 0, 3, 1, { 3000, 1 } }, /* no quota: the vCPUs */
		{ 0, 3, 7, { 3000, 7 } },
		{ 0, UINT32_MAX, 0, { UINT32_MAX, 0 } }, /* saturates */
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct vmact_resources got = act_achieved(cases[i].quota, cases[i].vcpus,
							  cases[i].mem);

		assert_int_equal(got.milli_cpu, cases[i].want.milli_cpu);
		assert_int_equal(got.mem_bytes, cases[i].want.mem_bytes);
	}
}

/* The layout of a live state: refused vCPU changes come from the state's
 * one flag; DIMM slots are capped by what <maxMemory> leaves room for; a
 * virtio-mem VM without its device has nothing to resize. */
static void test_layout_from_state(void **state)
{
	struct hp_state st = { 0 };
	struct hp_meta meta = { 0 };
	struct act_vm_layout l;

	(void)state;
	st.vcpus_max = 4;
	st.vcpus_current = 3;
	st.qemu_vcpus = 2;
	st.base_kib = 512 * 1024;
	st.max_memory_kib = 1024 * 1024;
	st.slots = 8;
	meta.method = HP_METHOD_DIMM;
	act_vm_layout_from_state(&st, &meta, 128 * MiB, &l);
	assert_int_equal(l.vcpus_max, 4);
	assert_int_equal(l.vcpus_now, 2);
	assert_false(l.vcpus_refused);
	assert_int_equal(l.base_bytes, 512 * MiB);
	assert_int_equal(l.dimm_slots, 4); /* 512 MiB of room / 128 MiB */
	st.vcpus_refused = true;
	act_vm_layout_from_state(&st, &meta, 128 * MiB, &l);
	assert_true(l.vcpus_refused);

	meta.method = HP_METHOD_VIRTIO_MEM;
	meta.mem_alias = "ua-vmem0";
	act_vm_layout_from_state(&st, &meta, 128 * MiB, &l);
	assert_int_equal(l.vmem_size_bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_property),
		cmocka_unit_test(test_achieved),
		cmocka_unit_test(test_layout_from_state),
	};

	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
