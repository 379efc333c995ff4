/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU limit vmactd wrote for a VM, read back from the kernel: the
 * group comes from vmactd's log ("managing (..., cgroup GROUP, ..."), the
 * figure from the v1 cpu controller (cpu.cfs_quota_us / cpu.cfs_period_us)
 * or, where it is not mounted, cgroup2's cpu.max. */
#pragma once

#include <stddef.h>

#define TH_CG_UNLIMITED (-1L)
#define TH_CG_UNKNOWN   (-2L)

/* The VM's cgroup as vmactd logged it in log (a file); 0 or -ENOENT. */
int th_log_vm_cgroup(const char *log, char *group, size_t len);

/* The same for the VM named name, from the last "NAME: managing (" line
 * (several VMs in one log); 0 or -ENOENT. */
int th_log_named_vm_cgroup(const char *log, const char *name, char *group, size_t len);

/* The group's CFS quota and period in microseconds as the kernel has
 * them (*quota_us -1: unlimited); 0, or -ENOENT when no limit file is
 * readable. */
int th_cg_limit(const char *group, long *quota_us, long *period_us);

/* The group's CPU limit in milli-CPUs, TH_CG_UNLIMITED, or TH_CG_UNKNOWN
 * when no limit file is readable. */
long th_cg_limit_milli(const char *group);

/* Both: the limit of the VM group vmactd logged in log. */
long th_vmactd_quota_milli(const char *log);
