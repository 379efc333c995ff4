/* SPDX-License-Identifier: Apache-2.0 */
/* CPU bandwidth of a VM's cgroup: where the cpu controller lives (cgroup v1,
 * v2, hybrid), which cgroup a QEMU process is in, and reading/writing its
 * CFS quota (the files themselves, not libcgroup: doc/actuation.md), and
 * its cpu.stat (base/cpustat.h).
 *
 * Group paths are relative to the cpu controller's mount and start with
 * '/', as /proc/<pid>/cgroup prints them ("/machine/qemu-1-vm.libvirt-qemu").
 *
 * Which group vmact limits: the whole VM (libvirt's <vm> group, parent of
 * emulator/ and vcpuN/), not the vCPU threads. Measured on a TCG guest
 * doing BIOS disk reads (tests/integration/test_cgroup_vm.c), 250m:
 *   whole VM:    total 0.25 CPUs = vCPU 0.23 + QEMU's own threads 0.02
 *   vcpu0 only:  total 0.28 CPUs = vCPU 0.25 + QEMU's own threads 0.03
 * The whole-VM limit is what the VM was granted, I/O emulation included
 * (a vCPU-only limit lets the host give ~10 % more than granted to an
 * I/O-heavy guest, unbounded for emulator-heavy ones); one group covers
 * hot-plugged vCPUs with no extra write (libvirt creates vcpuN with quota
 * -1, which v1 and v2 bound by the parent), and a limit on the group is
 * pooled across vCPUs instead of split per thread (Linux guest, 2 vCPUs,
 * one busy thread, tests/integration/test_cgroup_guest.c: 400m on the VM
 * gave it 0.35–0.40 CPUs, 200m on each vCPU 0.28–0.32). The cost: QEMU's I/O
 * work is paid from the guest's share (0.23 instead of 0.25 for the vCPU
 * above) — the overcommit factor (cpu-quota.h) is the knob for that.
 * The same file is libvirt's global_quota (virsh schedinfo shows vmact's
 * value); libvirt's per-vCPU vcpu_quota above the VM's share is refused by
 * the kernel on v1 (EINVAL) and capped on v2. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuator/cgroup/cpu-quota.h"
#include "base/cpustat.h"
#include "base/error.h"

enum act_cg_layout {
	ACT_CG_LEGACY = 1, /* only v1 hierarchies */
	ACT_CG_HYBRID,     /* v1 hierarchies plus a cgroup2 mount */
	ACT_CG_UNIFIED,    /* only cgroup2 */
};

const char *act_cg_layout_name(enum act_cg_layout l);

/* Where to look; NULL fields take the real system's paths. Tests point
 * them into a temporary tree (see tests/unit/test_cgroup_fake.c). */
struct act_cg_opts {
	const char *mounts; /* mount table, default /proc/self/mounts */
	const char *proc;   /* procfs root, default /proc */
};

struct act_cg {
	enum act_cg_layout layout;
	int cpu_version; /* 1 or 2: hierarchy carrying the cpu controller */
	char cpu_mount[PATH_MAX];
	char cpuacct_mount[PATH_MAX]; /* v1: a cpuacct hierarchy (usage source), or "" */
	char proc[PATH_MAX];
};

/* Reads the mount table, classifies the layout and locates the cpu (and on
 * v1 the cpuacct) controller. -ENODEV when no hierarchy carries cpu. */
int act_cg_open(struct act_cg *cg, const struct act_cg_opts *opts, struct vmact_err *err);

/* Pure classifier used by act_cg_open(), exposed for unit tests: one entry
 * per cgroup/cgroup2 mount. */
struct act_cg_mount {
	bool v2;
	bool has_cpu; /* v1: "cpu" in the mount options; v2: in cgroup.controllers */
	bool has_cpuacct;
	const char *dir;
};
int act_cg_classify(const struct act_cg_mount *m, size_t n, enum act_cg_layout *layout,
		    const struct act_cg_mount **cpu, struct vmact_err *err);

/* The cgroup of pid in the cpu hierarchy (from <proc>/<pid>/cgroup).
 * *out is malloc'ed. */
int act_cg_pid_group(const struct act_cg *cg, pid_t pid, char **out, struct vmact_err *err);

/* The cgroup of a libvirt QEMU process as a whole VM: libvirt keeps the
 * main thread in <vm>/emulator (v1: /machine/qemu-N-NAME.libvirt-qemu/
 * emulator; v2: /machine.slice/machine-qemu\x2dN\x2dNAME.scope/libvirt/
 * emulator), the vCPU threads in <vm>/vcpuN. Returns <vm>. -ENOENT when
 * the process is not in an emulator group (not started by libvirt, or
 * libvirt without cgroup support). */
int act_cg_vm_group(const struct act_cg *cg, pid_t qemu_pid, char **out, struct vmact_err *err);

/* Current limit of group. */
int act_cg_cpu_get(const struct act_cg *cg, const char *group, struct act_cpu_bw *out,
		   struct vmact_err *err);

/* Writes the limit: v2 one write of cpu.max; v1 cpu.cfs_quota_us and
 * cpu.cfs_period_us in act_cpu_v1_plan() order. On a failure part-way the
 * previous limit is written back (best effort) and the error names the file,
 * the value and the kernel's errno. */
int act_cg_cpu_set(const struct act_cg *cg, const char *group, const struct act_cpu_bw *bw,
		   struct vmact_err *err);

/* Reads the limit back and rewrites it when it differs (someone else —
 * libvirt's global_quota, an operator — changed it). *drifted tells whether
 * a rewrite happened; found (may be NULL) gets what was there. */
int act_cg_cpu_ensure(const struct act_cg *cg, const char *group, const struct act_cpu_bw *want,
		      bool *drifted, struct act_cpu_bw *found, struct vmact_err *err);

/* cpu.stat of group (base/cpustat.h: times in ns). On v1 the usage comes
 * from cpuacct.usage when the group exists in a cpuacct hierarchy (libvirt
 * on a host with separate cpu and cpuacct mounts does not put VMs there:
 * has_usage is then false). A file of the other cgroup version than the
 * cpu controller's is refused. Per-window changes: vmact_cpustat_delta(). */
int act_cg_cpu_stat(const struct act_cg *cg, const char *group, struct vmact_cpustat *out,
		    struct vmact_err *err);
