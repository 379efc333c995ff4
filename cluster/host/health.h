/* SPDX-License-Identifier: Apache-2.0 */
/* Is a node VM healthy (prefix cl_health_)? One probe of the group's kind
 * (doc/cluster.md, "Health"):
 *   serial  a console line starting with the pattern (the guest prints
 *           one at least every probe timeout: a heartbeat)
 *   agent   qemu-guest-agent answers guest-ping
 *   tcp     a connection to ADDR:PORT succeeds
 * Blocking, from a job thread. 0 healthy; -ETIMEDOUT or another -errno
 * with the reason when not. */
#pragma once

#include <libvirt/libvirt.h>

#include "base/error.h"
#include "cluster/config/config.h"

int cl_health_probe(virConnectPtr c, const char *uuid, const struct cl_health *h,
		    struct vmact_err *err);

/* The tcp probe alone: a connection to addr ("ADDR:PORT", numeric)
 * within timeout. */
int cl_health_tcp(const char *addr, uint64_t timeout_usec, struct vmact_err *err);
