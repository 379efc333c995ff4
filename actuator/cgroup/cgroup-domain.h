/* SPDX-License-Identifier: Apache-2.0 */
/* The one libvirt-dependent piece of cgroup enforcement: from a running
 * domain to its QEMU pid and the VM's cgroup. Everything else about libvirt
 * lives in hotplug/. */
#pragma once

#include <libvirt/libvirt.h>
#include <sys/types.h>

#include "actuator/cgroup/cgroup.h"

/* libvirt's QEMU driver state directory, where <name>.pid lives. */
#define ACT_LIBVIRT_QEMU_RUN_DIR "/run/libvirt/qemu"

/* QEMU pid of a running domain, from <run_dir>/<name>.pid (run_dir NULL =
 * ACT_LIBVIRT_QEMU_RUN_DIR). -ESRCH when the domain is not running. */
int act_cg_domain_pid(virDomainPtr dom, const char *run_dir, pid_t *pid, struct vmact_err *err);

/* The VM's cgroup (act_cg_vm_group() of its QEMU pid), checked against the
 * domain id libvirt puts in the group name ("qemu-<id>-" on v1,
 * "qemu\x2d<id>\x2d" in a systemd scope). *group is malloc'ed; pid may be
 * NULL. */
int act_cg_domain_group(const struct act_cg *cg, virDomainPtr dom, const char *run_dir,
			char **group, pid_t *pid, struct vmact_err *err);
