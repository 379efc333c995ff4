/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's executor (actuator/runner/resize.c) between a vm-monitor's
 * approval and the resize it allows, with libvirt replaced by the linker
 * (--wrap=hp_op_start, --wrap=hp_state_read, and --wrap=act_cg_cpu_set for
 * the CPU quota; Kbuild): each operation is
 * recorded and completed by the test, so the connection can drop while
 * one is in flight. A downscale approved before the drop may finish the
 * operation libvirt already runs, never start another that shrinks
 * (doc/policy.md, "The Neon policy, and memory with a monitor"). A runner
 * frozen for a move (act_runner_freeze) lets the operation in flight
 * finish and starts no other, and a runner API change waits for the
 * thaw. */
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
#include "actuator/cgroup/cgroup.h"
#include "actuator/cgroup/cpu-quota.h"
#include "actuator/config/config.h"
#include "actuator/runner/runner-priv.h"

#define MiB (1024ULL * 1024ULL)
#define GiB (1024ULL * MiB)

#define UUID "0b5e4f7c-5a36-4b59-8f0e-27d7c2b0b1a1"

/* What libvirt holds: 2 vCPUs of 4, 1 GiB of boot memory and a 1 GiB
 * virtio-mem device fully plugged. Operations change it when completed. */
static struct hp_state vm;
static struct hp_op_req ops[8];
static unsigned n_ops;

int __wrap_hp_state_read(struct hp_conn *c, const char *uuid, struct hp_state *st,
			 struct vmact_err *err);
int __wrap_hp_state_read(struct hp_conn *c, const char *uuid, struct hp_state *st,
			 struct vmact_err *err)
{
	(void)c;
	(void)uuid;
	(void)err;
	*st = vm;
	return 0;
}

int __wrap_hp_op_start(struct hp_conn *c, const char *uuid, const struct hp_op_req *req,
		       hp_op_fn fn, void *userdata, struct vmact_err *err);
int __wrap_hp_op_start(struct hp_conn *c, const char *uuid, const struct hp_op_req *req,
		       hp_op_fn fn, void *userdata, struct vmact_err *err)
{
	(void)c;
	(void)uuid;
	(void)fn;
	(void)userdata;
	(void)err;
	assert_true(n_ops < sizeof(ops) / sizeof(ops[0]));
	ops[n_ops++] = *req;
	return 0;
}

/* The CPU quota's writes, in milli-CPUs (synchronous: a plan's quota step
 * runs between its operations). */
static uint32_t quotas[8];
static unsigned n_quotas;

int __wrap_act_cg_cpu_set(const struct act_cg *cg, const char *group, const struct act_cpu_bw *bw,
			  struct vmact_err *err);
int __wrap_act_cg_cpu_set(const struct act_cg *cg, const char *group, const struct act_cpu_bw *bw,
			  struct vmact_err *err)
{
	(void)cg;
	(void)group;
	(void)err;
	assert_true(n_quotas < sizeof(quotas) / sizeof(quotas[0]));
	quotas[n_quotas++] = (uint32_t)(bw->quota_us * 1000 / bw->period_us);
	return 0;
}

static void vm_reset(void)
{
	memset(&vm, 0, sizeof(vm));
	snprintf(vm.name, sizeof(vm.name), "vm1");
	snprintf(vm.uuid, sizeof(vm.uuid), UUID);
	vm.vcpus_max = 4;
	vm.vcpus_current = 2;
	vm.vcpus_hotpluggable = 3;
	vm.vcpus_enabled_mask = 0x3;
	vm.qemu_vcpus = -1;
	vm.base_kib = GiB / 1024;
	vm.memory_kib = 2 * GiB / 1024;
	vm.n_memdevs = 1;
	vm.memdevs[0] = (struct hp_memdev){
		.model = HP_MEM_VIRTIO_MEM,
		.alias = "virtiomem0",
		.slot = -1,
		.size_kib = GiB / 1024,
		.block_kib = 2 * 1024,
		.requested_kib = GiB / 1024,
		.current_kib = GiB / 1024,
	};
	n_ops = 0;
	n_quotas = 0;
}

/* Completes the operation in flight as libvirt would, then reports it. */
static void complete(struct act_runner_env *env, const struct hp_op_req *req)
{
	struct hp_op_result res = { 0 };

	if (req->kind == HP_OP_SET_VCPUS) {
		vm.vcpus_current = req->vcpus;
		vm.vcpus_enabled_mask = (1ULL << req->vcpus) - 1;
	} else if (req->kind == HP_OP_VIRTIO_MEM) {
		vm.memdevs[0].requested_kib = req->requested_kib;
		vm.memdevs[0].current_kib = req->requested_kib;
	} else {
		fail_msg("unexpected operation %d", (int)req->kind);
	}
	res.state_valid = true;
	res.state = vm;
	act_runner_hp_done(NULL, UUID, &res, env);
}

static struct act_runner *the_runner;
static unsigned changed;

static struct act_runner *find(void *ud, const char *uuid)
{
	(void)ud;
	return strcmp(uuid, UUID) == 0 ? the_runner : NULL;
}

static void on_changed(struct act_runner *r)
{
	(void)r;
	changed++;
}

static const struct act_runner_core_ops core = { .changed = on_changed };

struct fx {
	sd_event *ev;
	struct act_config cfg;
	struct act_runner_env env;
	struct act_runner r;
};

/* A VM of 2 CPU / 2 GiB whose vm-monitor approved a downscale to
 * 1 CPU / 1 GiB, and the resize to it started: its first operation is in
 * flight. */
static void start_approved_downscale(struct fx *f)
{
	struct ag_scaling_config sc;
	struct act_timing t;
	struct vmact_resources cu = { 1000, GiB }, use = { 2000, 2 * GiB }, min = { 1000, GiB },
			       max = { 4000, 3 * GiB }, down = { 1000, GiB };
	struct vmact_err err = { 0 };
	struct act_actions a;

	memset(f, 0, sizeof(*f));
	vm_reset();
	changed = 0;
	assert_int_equal(sd_event_new(&f->ev), 0);
	act_config_defaults(&f->cfg);
	f->env.event = f->ev;
	f->env.cfg = &f->cfg;
	f->env.find = find;
	f->env.overcommit = 1000;
	f->r.env = &f->env;
	f->r.core = &core;
	snprintf(f->r.name, sizeof(f->r.name), "vm1");
	snprintf(f->r.uuid, sizeof(f->r.uuid), UUID);
	f->r.meta.method = HP_METHOD_VIRTIO_MEM;
	f->r.meta.mem_alias = "virtiomem0";
	f->r.meta.policy_shrink = HP_POLICY_SHRINK_UNPLUG;
	the_runner = &f->r;

	ag_scaling_config_defaults(&sc);
	act_timing_defaults(&t);
	assert_int_equal(act_state_init(&f->r.st, &t, &cu, &sc, &use, &min, &max, &err), 0);
	/* The approver connects, then approves the downscale (what the
	 * runner's downscale_done records). */
	act_monitor_connected(&f->r.st);
	assert_int_equal(act_monitor_downscale_starting(&f->r.st, 0, &down, &err), 0);
	assert_int_equal(act_monitor_downscale_ok(&f->r.st, 0, &err), 0);

	memset(&a, 0, sizeof(a));
	a.has_hotplug = true;
	a.hotplug.current = use;
	a.hotplug.target = down;
	act_runner_resize_start(&f->r, &a);
	assert_true(f->r.rs.busy);
	/* The quota lowered at once, then the vCPU unplug and the memory,
	 * one operation each: the first is in flight. */
	assert_int_equal(f->r.rs.plan.n, 3);
	assert_int_equal(n_quotas, 1);
	assert_int_equal(quotas[0], 1000);
	assert_int_equal(n_ops, 1);
}

static void finish(struct fx *f)
{
	act_config_free(&f->cfg);
	free(f->r.rs.error);
	free(f->r.view.last_change);
	sd_event_unref(f->ev);
	the_runner = NULL;
}

static bool shrinks(const struct hp_op_req *req, const struct hp_state *before)
{
	if (req->kind == HP_OP_SET_VCPUS)
		return req->vcpus < before->vcpus_current;
	if (req->kind == HP_OP_VIRTIO_MEM)
		return req->requested_kib < before->memdevs[0].requested_kib;
	return req->kind == HP_OP_DIMM_DETACH;
}

/* The control: with the connection up, the approved plan runs to its end. */
static void test_approved_downscale_completes(void **state)
{
	struct fx f;

	(void)state;
	start_approved_downscale(&f);
	complete(&f.env, &ops[0]);
	assert_int_equal(n_ops, 2);
	complete(&f.env, &ops[1]);
	assert_false(f.r.rs.busy);
	assert_int_equal(f.r.st.using_.milli_cpu, 1000);
	assert_int_equal(f.r.st.using_.mem_bytes, GiB);
	assert_int_equal(changed, 1);
	finish(&f);
}

/* The connection drops while the first operation is in flight: that one
 * finishes, nothing further shrinks the VM, and the resize ends with what
 * the VM reached. */
static void test_drop_voids_the_approval(void **state)
{
	struct fx f;
	struct hp_state before;

	(void)state;
	start_approved_downscale(&f);
	/* What the runner's approver_lost does to the core. */
	act_monitor_reset(&f.r.st);
	complete(&f.env, &ops[0]);
	assert_int_equal(n_quotas, 1); /* no quota written since */
	before = vm;
	for (unsigned i = 1; i < n_ops; i++)
		if (shrinks(&ops[i], &before))
			fail_msg("operation %u (kind %d) shrinks the VM after its approver's "
				 "connection dropped",
				 i, (int)ops[i].kind);
	assert_int_equal(n_ops, 1);
	assert_false(f.r.rs.busy);
	assert_int_equal(changed, 1);
	/* The core knows what the VM has: the steps done before the drop. */
	assert_int_equal(ops[0].kind, HP_OP_SET_VCPUS);
	assert_int_equal(f.r.st.using_.milli_cpu, 1000);
	assert_int_equal(f.r.st.using_.mem_bytes, 2 * GiB);
	finish(&f);
}

/* Frozen for a move while the first operation is in flight: it finishes,
 * no further step starts (no quota, no operation), the resize ends at what
 * the VM reached. */
static void test_freeze_stops_the_plan(void **state)
{
	struct fx f;

	(void)state;
	start_approved_downscale(&f);
	act_runner_freeze_set(&f.r, ACT_RUNNER_FREEZE_LEASE, true, "a test moves it");
	assert_true(act_runner_frozen(&f.r));
	complete(&f.env, &ops[0]);
	assert_int_equal(n_ops, 1);
	assert_int_equal(n_quotas, 1);
	assert_false(f.r.rs.busy);
	assert_int_equal(changed, 1);
	assert_int_equal(f.r.st.using_.milli_cpu, 1000);
	assert_int_equal(f.r.st.using_.mem_bytes, 2 * GiB);
	/* A runner API change waits; the thaw starts it. */
	f.r.meta.min = (struct vmact_resources){ 1000, GiB };
	f.r.meta.max = (struct vmact_resources){ 4000, 3 * GiB };
	assert_int_equal(act_runner_resize_cpu(&f.r, 2000, NULL), 0);
	assert_false(f.r.rs.busy);
	assert_int_equal(n_ops, 1);
	assert_int_equal(n_quotas, 1);
	act_runner_freeze_set(&f.r, ACT_RUNNER_FREEZE_LEASE, false, "the move was given up");
	act_runner_resize_thaw(&f.r);
	assert_true(f.r.rs.busy);
	assert_int_equal(n_ops, 2);
	assert_int_equal(ops[1].kind, HP_OP_SET_VCPUS);
	assert_int_equal(ops[1].vcpus, 2);
	free(f.r.frz.why);
	finish(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_approved_downscale_completes),
		cmocka_unit_test(test_drop_voids_the_approval),
		cmocka_unit_test(test_freeze_stops_the_plan),
	};

	return cmocka_run_group_tests_name("test_runner_resize", tests, NULL, NULL);
}
