/* SPDX-License-Identifier: Apache-2.0 */
/* vCPU hotplug and unplug under a vmact CPU limit, with a real Linux guest:
 * the project's test guest (tests/guest/, `make guest`, helpers tg_* in
 * tests/lib/guest.h): it reports its online CPUs and busy loops on its
 * serial log, onlines hot-added CPUs, and runs "busy <n>" / "idle".
 *
 * Checks, on a TCG domain vmact-cg-<pid>-1 (always destroyed):
 *  - a limit on the VM pools across vCPUs: with one busy guest thread on a
 *    2-vCPU guest, 400m on the VM gives it 0.4 CPUs; the same 400m split as
 *    200m per vCPU (libvirt's vcpu_quota model) gives it less (each vCPU
 *    is held to 0.2; the guest migrating its thread recovers some);
 *  - after hotplug 1→2 with the limit set, both vCPU threads busy stay
 *    within the VM's limit together, vcpu1's group inherits (quota -1) and
 *    the VM's limit is untouched;
 *  - after unplug 2→1 (libvirt may report its 5 s timeout while the guest
 *    completes it), the VM's limit is untouched and still holds.
 * Without a built guest the tests skip, saying so. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "actuator/cgroup/cgroup.h"
#include "base/macro.h"
#include "tests/lib/cg-vm.h"
#include "tests/lib/cpu-use.h"
#include "tests/lib/guest.h"

static struct tg_guest guest;

static int setup(void **state)
{
	char gd[PATH_MAX];
	if (!realpath(tg_guest_dir(), gd)) {
		printf("no test guest in %s (make guest; or set VMACT_GUEST_DIR): tests skip\n",
		       tg_guest_dir());
		return 0;
	}
	int r = th_vm_open();
	if (r <= 0)
		return r < 0 ? -1 : 0;
	char msg[512];
	if (tg_start(th_vm.conn, "vmact-cg", NULL, &guest, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "test guest: %s\n", msg);
		return -1;
	}
	if (th_vm_adopt(guest.dom) < 0)
		return -1;
	guest.dom = NULL; /* owned by tests/lib/cg-vm.c now: th_vm_stop() destroys it */
	struct tg_report rep;
	if (!tg_wait(&guest, 0, NULL, NULL, 120, &rep)) {
		fprintf(stderr, "guest %s did not report within 120 s (see %s)\n", th_vm.name,
			guest.log);
		th_vm.usable = false;
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	th_vm_stop();
	tg_destroy(&guest); /* its log and control socket */
	return 0;
}

static void busy(unsigned n)
{
	struct tg_report r = { 0 };
	tg_report(&guest, &r);
	char line[32];
	snprintf(line, sizeof(line), n ? "busy %u" : "idle", n);
	assert_int_equal(tg_cmd(&guest, line), 0);
	if (!tg_wait(&guest, r.seq, tg_busy_eq, &n, 30, &r))
		fail_msg("guest did not start %u busy loops", n);
}

static void hotplug(unsigned n)
{
	struct tg_report r = { 0 };
	tg_report(&guest, &r);
	if (TH_VM_LV(virDomainSetVcpusFlags(th_vm.dom, n, VIR_DOMAIN_AFFECT_LIVE)) < 0)
		printf("setvcpus %u: %s (waiting for the guest's own count)\n", n, th_vm.lv_msg);
	if (!tg_wait(&guest, r.seq, tg_cpus_eq, &n, 60, &r))
		fail_msg("guest does not show %u CPUs online", n);
}

static struct act_cpu_bw bw_of(uint32_t milli)
{
	struct act_cpu_bw bw;
	assert_int_equal(act_cpu_bw_from_milli(milli, ACT_CPU_OVERCOMMIT_DEFAULT,
					       ACT_CPU_PERIOD_DEFAULT_US, &bw, NULL, NULL),
			 0);
	return bw;
}

static void test_hotplug_then_pooling(void **state)
{
	TH_NEED_VM();
	const struct act_cpu_bw vm400 = bw_of(400), v200 = bw_of(200);
	const struct act_cpu_bw unl = act_cpu_bw_unlimited(ACT_CPU_PERIOD_DEFAULT_US);
	struct act_cpu_bw v;
	bool drifted = true;

	th_vm_set_or_fail(th_vm.group, &vm400);
	hotplug(2);
	/* libvirt made vcpu1 under the VM's group, inheriting its limit */
	assert_int_equal(act_cg_cpu_get(&th_vm.cg, th_vm_child("vcpu1"), &v, NULL), 0);
	assert_int_equal(v.quota_us, ACT_CPU_QUOTA_UNLIMITED);
	assert_int_equal(act_cg_cpu_ensure(&th_vm.cg, th_vm.group, &vm400, &drifted, NULL, NULL),
			 0);
	assert_false(drifted);

	/* both vCPUs busy: held together to the VM's limit */
	struct vmact_cpustat a0, a1, b0, b1, da, db;
	busy(2);
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm.group, &a0, NULL), 0);
	struct th_vm_use both = th_vm_measure(6.0);
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm.group, &a1, NULL), 0);
	th_vm_set_or_fail(th_vm.group, &unl);
	struct th_vm_use ctl2 = th_vm_measure(4.0);

	/* one busy thread on two vCPUs: pooled VM limit vs per-vCPU split */
	busy(1);
	struct th_vm_use ctl1 = th_vm_measure(4.0);
	th_vm_set_or_fail(th_vm.group, &vm400);
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm.group, &b0, NULL), 0);
	struct th_vm_use pooled = th_vm_measure(6.0);
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm.group, &b1, NULL), 0);
	th_vm_set_or_fail(th_vm.group, &unl);
	th_vm_set_or_fail(th_vm_child("vcpu0"), &v200);
	th_vm_set_or_fail(th_vm_child("vcpu1"), &v200);
	struct th_vm_use split = th_vm_measure(6.0);
	th_vm_set_or_fail(th_vm_child("vcpu0"), &unl);
	th_vm_set_or_fail(th_vm_child("vcpu1"), &unl);
	th_vm_set_or_fail(th_vm.group, &vm400);
	assert_int_equal(vmact_cpustat_delta(&a0, &a1, &da), 0);
	assert_int_equal(vmact_cpustat_delta(&b0, &b1, &db), 0);

	printf("2 vCPUs, 2 busy: unlimited %.3f; 400m on VM: total %.3f = vCPUs %.3f + "
	       "emulator %.3f (throttled %llu of %llu periods)\n",
	       ctl2.total, both.total, both.vcpus, both.emulator,
	       (unsigned long long)da.nr_throttled, (unsigned long long)da.nr_periods);
	printf("2 vCPUs, 1 busy: unlimited %.3f; 400m on VM: vCPUs %.3f (total %.3f, throttled "
	       "%llu of %llu); 200m on each vCPU: vCPUs %.3f (total %.3f)\n",
	       ctl1.total, pooled.vcpus, pooled.total, (unsigned long long)db.nr_throttled,
	       (unsigned long long)db.nr_periods, split.vcpus, split.total);

	/* the split holds each vCPU to 0.2 (0.4 together at most) */
	assert_true(split.vcpus <= 0.44);
	cpu_use_judge("2 busy, 400m on the VM", 0.4, ctl2.total, both.total, da.nr_throttled,
		      da.nr_periods);
	cpu_use_judge("1 busy, 400m on the VM", 0.4, ctl1.total, pooled.total, db.nr_throttled,
		      db.nr_periods);
	/* it pools only as far as the guest moves its busy thread between
	 * throttled vCPUs, so one busy thread gets less than under the VM's
	 * limit */
	assert_true(pooled.vcpus > split.vcpus);
}

static void test_unplug_keeps_limit(void **state)
{
	TH_NEED_VM();
	const struct act_cpu_bw vm400 = bw_of(400);
	th_vm_set_or_fail(th_vm.group, &vm400);
	struct tg_report r = { 0 };
	assert_true(tg_report(&guest, &r));
	if (r.cpus != 2)
		hotplug(2);
	busy(2);
	hotplug(1);
	bool drifted = true;
	struct act_cpu_bw found;
	assert_int_equal(act_cg_cpu_ensure(&th_vm.cg, th_vm.group, &vm400, &drifted, &found, NULL),
			 0);
	assert_false(drifted);
	/* the unplugged vCPU's thread is gone; what remains is held */
	struct th_vm_use u = th_vm_measure(5.0);
	struct act_cpu_bw v;
	bool vcpu1_group = act_cg_cpu_get(&th_vm.cg, th_vm_child("vcpu1"), &v, NULL) == 0;
	printf("after unplug to 1 vCPU, 2 busy in the guest, 400m on VM: total %.3f = vCPU %.3f + "
	       "emulator %.3f; libvirt %s the vcpu1 group\n",
	       u.total, u.vcpus, u.emulator, vcpu1_group ? "kept (empty)" : "removed");
	assert_true(u.total <= 0.44);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hotplug_then_pooling),
		cmocka_unit_test(test_unplug_keeps_limit),
	};
	return cmocka_run_group_tests_name("cgroup-guest", tests, setup, teardown);
}
