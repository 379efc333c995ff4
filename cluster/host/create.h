/* SPDX-License-Identifier: Apache-2.0 */
/* A node VM made on a host (prefix cl_create_): the libvirt sequence the
 * LibvirtBind plugin runs (cluster/plugins/plugin-bind.c), kept on this
 * side so that no plugin calls libvirt itself. Blocking, from a job
 * thread. */
#pragma once

#include <stdbool.h>

#include "base/error.h"
#include "cluster/config/config.h"
#include "cluster/host/domxml.h"
#include "cluster/host/host.h"

struct cl_create {
	struct cl_host *host; /* where the VM goes */
	/* Where a member's placeholder is defined now (another host), or
	 * NULL: it goes once the VM is defined on host. */
	struct cl_host *old_host;
	const struct cl_group_cfg *group;
	const char *name, *uuid;
	bool standby; /* a failure puts nothing back */
	/* In: the VM's metadata; out: what was recorded on host last (state
	 * creating, then booting), one more attempt counted. */
	struct cl_meta *meta;
};

/* The overlay first (libvirt's storage API), then the definition with
 * state "creating", then the start, then state "booting": each step
 * recorded before the next, so that a vmact-groupd killed in between
 * finds the VM and knows it was being created without a result (and
 * destroys it). A failure undoes what this call made; a member keeps its
 * placeholder (its definition without a disk, the error in its metadata)
 * so that it is not lost. *defined: the VM's definition is on host now,
 * failure or not. Errors name the step and the host ("start on h1: ..."). */
int cl_create_vm(const struct cl_create *c, bool *defined, struct vmact_err *err);
