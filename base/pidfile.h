/* SPDX-License-Identifier: Apache-2.0 */
/* The one reader of a daemon's pid file (QEMU's <rundir>/<name>.pid, read
 * by hotplug/ for QEMU's vCPU threads and by actuator/ for the VM's cgroup). */
#pragma once

#include <sys/types.h>

#include "base/error.h"

/* Strict: the file holds one decimal pid (digits only, > 0, fits pid_t),
 * optionally followed by one newline, and nothing else; it is read at most
 * VMACT_PIDFILE_MAX bytes far. Errors: the open's errno (-ENOENT for a
 * missing file), -EPROTO for any other content, each with a message that
 * names the path. */
#define VMACT_PIDFILE_MAX 32

int vmact_pidfile_read(const char *path, pid_t *out, struct vmact_err *err);
