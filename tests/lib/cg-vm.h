/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the cgroup integration tests that run a libvirt guest: one
 * transient domain per test program (vmact-cg-<pid>), its cgroup found
 * through act_cg_domain_group(), CPU use of its QEMU measured from /proc,
 * libvirt calls that survive libvirtd restarts by other tests on the same
 * machine, and reaping of domains left by test processes that died.
 * The test's one VM is the global th_vm. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "actuator/cgroup/cgroup-domain.h"
#include "actuator/cgroup/cgroup.h"

struct th_vm {
	struct act_cg cg;
	virConnectPtr conn;
	virDomainPtr dom;
	char name[64];
	char *group; /* the VM's cgroup, below the cpu controller's mount */
	pid_t qemu;
	bool usable;      /* a domain was adopted: tests can run */
	bool env_failed;  /* th_vm_open() failed (not: skipped) */
	char lv_msg[512]; /* the error of the last TH_VM_LV() call */
};

extern struct th_vm th_vm;

/* Reconnects to libvirtd if it restarted (waiting up to ~10 s for it to
 * answer again) and finds the domain again by name; false if it cannot. */
bool th_vm_relink(void);

/* A libvirt call, retried once on a fresh connection if the daemon went
 * away during it; th_vm.lv_msg keeps the call's error message (later calls
 * such as virConnectIsAlive() reset libvirt's). */
#define TH_VM_LV(call)                                                                     \
	({                                                                                 \
		int lv_r_ = -1;                                                            \
		snprintf(th_vm.lv_msg, sizeof(th_vm.lv_msg), "no connection to libvirtd"); \
		for (int lv_i_ = 0; lv_i_ < 2; lv_i_++) {                                  \
			if (!th_vm_relink())                                               \
				break;                                                     \
			lv_r_ = (call);                                                    \
			if (lv_r_ < 0)                                                     \
				snprintf(th_vm.lv_msg, sizeof(th_vm.lv_msg), "%s",         \
					 virGetLastErrorMessage());                        \
			if (lv_r_ >= 0 || virConnectIsAlive(th_vm.conn) == 1)              \
				break;                                                     \
		}                                                                          \
		lv_r_;                                                                     \
	})

/* Opens cgroups and libvirt and names the domain. 1 when usable, 0 when
 * the tests must skip (not root), -1 on failure (th_vm.env_failed set). */
int th_vm_open(void);

/* Adopts a started domain: finds its cgroup and QEMU pid. */
int th_vm_adopt(virDomainPtr d);

/* Starts the domain from xml and adopts it. */
int th_vm_start(const char *xml);

/* Destroys the domain and closes the connection. */
void th_vm_stop(void);

#define TH_NEED_VM()                                                \
	do {                                                        \
		if (!th_vm.usable) {                                \
			printf("skipped: no guest (needs root)\n"); \
			skip();                                     \
		}                                                   \
	} while (0)

/* CPUs used over a measuring window: by the whole QEMU process, by its
 * vCPU threads, and the rest (emulator = total - vcpus). */
struct th_vm_use {
	double total, vcpus, emulator;
};

struct th_vm_use th_vm_measure(double secs);

/* act_cg_cpu_set() on group, failing the test on an error. */
void th_vm_set_or_fail(const char *group, const struct act_cpu_bw *bw);

/* "<the VM's group>/sub" (a static buffer). */
char *th_vm_child(const char *sub);
