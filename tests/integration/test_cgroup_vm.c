/* SPDX-License-Identifier: Apache-2.0 */
/* CPU limits on the real cgroup of a real QEMU guest started through
 * libvirt (transient domain vmact-cg-<pid>, TCG, always destroyed).
 *
 * The guest is a 1 MiB raw disk whose boot sector loops reading sector 1
 * through the BIOS (int 13h): under TCG its vCPU thread is always busy and
 * every read also makes QEMU's own threads (main loop, thread-pool
 * workers: libvirt's emulator cgroup) work, like an I/O-heavy guest. That
 * lets the test measure what a whole-VM limit and a vCPU-only limit each
 * count.
 *
 * CPU use is measured from /proc (process utime+stime, and the vCPU
 * threads' own), as ratios over wall time, against an unlimited control of
 * the same guest in the same run; when the shared machine cannot give the
 * guest clearly more than the quota the case is skipped with the numbers
 * printed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "actuator/cgroup/cgroup-domain.h"
#include "actuator/cgroup/cgroup.h"
#include "base/macro.h"
#include "tests/lib/cg-vm.h"
#include "tests/lib/cpu-use.h"

static char image[128];

/* Boot sector: xor ax,ax; mov es,ax; mov si,dx; loop: mov dx,si; mov dh,0;
 * mov ax,0x0201; mov bx,0x7e00; mov cx,1; int 0x13; jmp loop. */
static const unsigned char boot_code[] = { 0x31, 0xC0, 0x8E, 0xC0, 0x89, 0xD6, 0x89, 0xF2,
					   0xB6, 0x00, 0xB8, 0x01, 0x02, 0xBB, 0x00, 0x7E,
					   0xB9, 0x01, 0x00, 0xCD, 0x13, 0xEB, 0xEF };

static int write_image(void)
{
	static unsigned char img[1 << 20];
	memcpy(img, boot_code, sizeof(boot_code));
	img[510] = 0x55;
	img[511] = 0xAA;
	FILE *f = fopen(image, "we");
	if (!f)
		return -1;
	size_t n = fwrite(img, 1, sizeof(img), f);
	return fclose(f) == 0 && n == sizeof(img) ? 0 : -1;
}

static int setup(void **state)
{
	if (th_vm_open() <= 0)
		return th_vm.env_failed ? -1 : 0;
	snprintf(image, sizeof(image), "/tmp/%s.img", th_vm.name);
	if (write_image() < 0) {
		fprintf(stderr, "cgroup-vm: cannot write %s\n", image);
		return -1;
	}
	char xml[2048];
	snprintf(xml, sizeof(xml),
		 "<domain type='qemu'><name>%s</name><memory unit='MiB'>64</memory>"
		 "<vcpu placement='static' current='1'>2</vcpu>"
		 "<os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>"
		 "<features><acpi/></features>"
		 "<cpu mode='custom' match='exact'><model fallback='forbid'>qemu64</model></cpu>"
		 "<on_poweroff>destroy</on_poweroff><on_crash>destroy</on_crash>"
		 "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
		 "<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
		 "<source file='%s'/><target dev='hda' bus='ide'/></disk>"
		 "</devices></domain>",
		 th_vm.name, image);
	return th_vm_start(xml);
}

static int teardown(void **state)
{
	th_vm_stop();
	if (image[0])
		unlink(image);
	return 0;
}

/* ---- tests -------------------------------------------------------------- */

static void test_layout(void **state)
{
	TH_NEED_VM();
	struct act_cpu_bw bw;
	/* libvirt's layout: VM group with emulator and vcpu0 children, all
	 * unlimited before vmact touches them */
	assert_int_equal(act_cg_cpu_get(&th_vm.cg, th_vm.group, &bw, NULL), 0);
	assert_int_equal(bw.quota_us, ACT_CPU_QUOTA_UNLIMITED);
	assert_int_equal(act_cg_cpu_get(&th_vm.cg, th_vm_child("emulator"), &bw, NULL), 0);
	assert_int_equal(act_cg_cpu_get(&th_vm.cg, th_vm_child("vcpu0"), &bw, NULL), 0);
	assert_int_equal(bw.quota_us, ACT_CPU_QUOTA_UNLIMITED);
	struct vmact_cpustat st;
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm.group, &st, NULL), 0);
	/* the group libvirt made carries the domain id */
	char idpart[32];
	snprintf(idpart, sizeof(idpart), "qemu-%u-", virDomainGetID(th_vm.dom));
	assert_non_null(strstr(th_vm.group, idpart));

	/* pid file problems are errors naming the domain, never a wrong group */
	char dir[] = "/tmp/vmact-cg-run-XXXXXX", pf[PATH_MAX];
	assert_non_null(mkdtemp(dir));
	snprintf(pf, sizeof(pf), "%s/%s.pid", dir, th_vm.name);
	char *g = NULL;
	struct vmact_err err = { 0 };
	assert_int_equal(act_cg_domain_group(&th_vm.cg, th_vm.dom, dir, &g, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.msg, th_vm.name));
	FILE *f = fopen(pf, "we");
	assert_non_null(f);
	fputs("12ab\n", f);
	fclose(f);
	vmact_err_reset(&err);
	assert_int_equal(act_cg_domain_group(&th_vm.cg, th_vm.dom, dir, &g, NULL, &err), -EPROTO);
	/* a stale file naming some other process (here: this test) */
	f = fopen(pf, "we");
	assert_non_null(f);
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	vmact_err_reset(&err);
	assert_true(act_cg_domain_group(&th_vm.cg, th_vm.dom, dir, &g, NULL, &err) < 0);
	printf("stale pid file refused: %s\n", err.msg);
	assert_null(g);
	unlink(pf);
	rmdir(dir);
}

/* The decision's data: the same 250m as a whole-VM limit, then as a limit
 * on the vCPU thread only. */
static void test_whole_vm_vs_vcpu_only(void **state)
{
	TH_NEED_VM();
	struct act_cpu_bw bw, unl = act_cpu_bw_unlimited(ACT_CPU_PERIOD_DEFAULT_US);
	assert_int_equal(act_cpu_bw_from_milli(250, ACT_CPU_OVERCOMMIT_DEFAULT,
					       ACT_CPU_PERIOD_DEFAULT_US, &bw, NULL, NULL),
			 0);
	const double q = 0.25;

	struct th_vm_use ctl = th_vm_measure(4.0);
	th_vm_set_or_fail(th_vm.group, &bw);
	struct vmact_cpustat s0, s1;
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm.group, &s0, NULL), 0);
	struct th_vm_use whole = th_vm_measure(6.0);
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm.group, &s1, NULL), 0);
	th_vm_set_or_fail(th_vm.group, &unl);

	th_vm_set_or_fail(th_vm_child("vcpu0"), &bw);
	struct vmact_cpustat v0, v1, dw, dv;
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm_child("vcpu0"), &v0, NULL), 0);
	struct th_vm_use vonly = th_vm_measure(6.0);
	assert_int_equal(act_cg_cpu_stat(&th_vm.cg, th_vm_child("vcpu0"), &v1, NULL), 0);
	th_vm_set_or_fail(th_vm_child("vcpu0"), &unl);
	assert_int_equal(vmact_cpustat_delta(&s0, &s1, &dw), 0);
	assert_int_equal(vmact_cpustat_delta(&v0, &v1, &dv), 0);

	printf("unlimited:          total %.3f = vCPU %.3f + emulator %.3f CPUs\n", ctl.total,
	       ctl.vcpus, ctl.emulator);
	printf("250m on whole VM:   total %.3f = vCPU %.3f + emulator %.3f CPUs "
	       "(throttled %llu of %llu periods)\n",
	       whole.total, whole.vcpus, whole.emulator, (unsigned long long)dw.nr_throttled,
	       (unsigned long long)dw.nr_periods);
	printf("250m on vcpu0 only: total %.3f = vCPU %.3f + emulator %.3f CPUs "
	       "(throttled %llu of %llu periods)\n",
	       vonly.total, vonly.vcpus, vonly.emulator, (unsigned long long)dv.nr_throttled,
	       (unsigned long long)dv.nr_periods);
	/* whole VM: everything QEMU does counts against the limit */
	cpu_use_judge("250m on the VM", q, ctl.total, whole.total, dw.nr_throttled, dw.nr_periods);
	/* vCPU only: the vCPU thread is held to the limit, QEMU's own work
	 * comes on top of it */
	cpu_use_judge("250m on vcpu0", q, ctl.vcpus, vonly.vcpus, dv.nr_throttled, dv.nr_periods);
	assert_true(vonly.total > vonly.vcpus);
}

static int get_sched_once(const char *field, long long *out)
{
	int n = 0;
	virTypedParameterPtr params = NULL;
	char *type = virDomainGetSchedulerType(th_vm.dom, &n);
	free(type);
	if (n <= 0)
		return -1;
	params = calloc((size_t)n, sizeof(*params));
	if (!params)
		return -1;
	int r = virDomainGetSchedulerParametersFlags(th_vm.dom, params, &n, VIR_DOMAIN_AFFECT_LIVE);
	bool found = false;
	for (int i = 0; r == 0 && i < n; i++)
		if (strcmp(params[i].field, field) == 0) {
			*out = params[i].type == VIR_TYPED_PARAM_LLONG
				       ? params[i].value.l
				       : (long long)params[i].value.ul;
			found = true;
		}
	virTypedParamsClear(params, n);
	free(params);
	return r == 0 && found ? 0 : -1;
}

static int get_sched(const char *field, long long *out)
{
	return TH_VM_LV(get_sched_once(field, out));
}

static int set_sched(const char *field, long long v)
{
	virTypedParameter p;
	memset(&p, 0, sizeof(p));
	snprintf(p.field, sizeof(p.field), "%s", field);
	p.type = VIR_TYPED_PARAM_LLONG;
	p.value.l = v;
	return TH_VM_LV(
		virDomainSetSchedulerParametersFlags(th_vm.dom, &p, 1, VIR_DOMAIN_AFFECT_LIVE));
}

/* libvirt reads the VM group's limit as its global_quota; an operator's
 * `virsh schedinfo --live global_quota=…` overwrites it and vmact's
 * read-back sees the drift and puts its own back. */
static void test_libvirt_global_quota_drift(void **state)
{
	TH_NEED_VM();
	struct act_cpu_bw want = { 25000, 100000 }, found;
	th_vm_set_or_fail(th_vm.group, &want);
	long long gq = 0;
	assert_int_equal(get_sched("global_quota", &gq), 0);
	assert_int_equal(gq, 25000);

	assert_int_equal(set_sched("global_quota", 70000), 0);
	bool drifted = false;
	struct vmact_err err = { 0 };
	if (act_cg_cpu_ensure(&th_vm.cg, th_vm.group, &want, &drifted, &found, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(drifted);
	assert_int_equal(found.quota_us, 70000);
	assert_int_equal(get_sched("global_quota", &gq), 0);
	assert_int_equal(gq, 25000);
	assert_int_equal(act_cg_cpu_ensure(&th_vm.cg, th_vm.group, &want, &drifted, NULL, NULL), 0);
	assert_false(drifted);

	/* libvirt's per-vCPU quota above the VM's share: on v1 the kernel
	 * refuses it (child ratio above the parent's); vmact's limit stays */
	int r = set_sched("vcpu_quota", 50000);
	printf("libvirt vcpu_quota=50000 under a 25000/100000 VM limit: %s%s\n",
	       r == 0 ? "accepted" : "refused: ", r == 0 ? "" : th_vm.lv_msg);
	if (th_vm.cg.cpu_version == 1)
		assert_int_equal(r, -1);
	assert_int_equal(act_cg_cpu_ensure(&th_vm.cg, th_vm.group, &want, &drifted, NULL, NULL), 0);
	assert_false(drifted);
	/* a per-vCPU quota within the share is accepted and coexists */
	assert_int_equal(set_sched("vcpu_quota", 20000), 0);
	struct act_cpu_bw v;
	assert_int_equal(act_cg_cpu_get(&th_vm.cg, th_vm_child("vcpu0"), &v, NULL), 0);
	assert_int_equal(v.quota_us, 20000);
	assert_int_equal(set_sched("vcpu_quota", -1), 0);
	assert_int_equal(act_cg_cpu_ensure(&th_vm.cg, th_vm.group, &want, &drifted, NULL, NULL), 0);
	assert_false(drifted);
}

/* vCPU hotplug after vmact set the limit: libvirt creates <vm>/vcpu1 for
 * the new thread; it must come under the VM's limit (quota -1 = inherit),
 * the VM's own limit must be untouched, and the guest as a whole must
 * still be held to it. */
static void test_hotplug_keeps_limit(void **state)
{
	TH_NEED_VM();
	struct act_cpu_bw want = { 25000, 100000 }, v;
	th_vm_set_or_fail(th_vm.group, &want);
	if (TH_VM_LV(virDomainSetVcpusFlags(th_vm.dom, 2, VIR_DOMAIN_AFFECT_LIVE)) < 0)
		fail_msg("setvcpus 2: %s", th_vm.lv_msg);

	assert_int_equal(act_cg_cpu_get(&th_vm.cg, th_vm_child("vcpu1"), &v, NULL), 0);
	assert_int_equal(v.quota_us, ACT_CPU_QUOTA_UNLIMITED);
	bool drifted = true;
	assert_int_equal(act_cg_cpu_ensure(&th_vm.cg, th_vm.group, &want, &drifted, NULL, NULL), 0);
	assert_false(drifted);

	/* the new vCPU thread really sits under the VM group */
	struct th_vm_use u = th_vm_measure(5.0);
	printf("after hotplug to 2 vCPUs, 250m on the VM: total %.3f = vCPUs %.3f + emulator "
	       "%.3f CPUs\n",
	       u.total, u.vcpus, u.emulator);
	assert_true(u.total <= 0.25 * 1.1);
	int nv = 0;
	char p[PATH_MAX * 2 + 16];
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s%s/vcpu%d", th_vm.cg.cpu_mount, th_vm.group, i);
		struct stat st;
		if (stat(p, &st) == 0)
			nv++;
	}
	assert_int_equal(nv, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_whole_vm_vs_vcpu_only),
		cmocka_unit_test(test_libvirt_global_quota_drift),
		cmocka_unit_test(test_hotplug_keeps_limit),
	};
	return cmocka_run_group_tests_name("cgroup-vm", tests, setup, teardown);
}
