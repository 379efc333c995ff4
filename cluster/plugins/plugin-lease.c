/* SPDX-License-Identifier: Apache-2.0 */
/* ArbiterLease (cluster/plugins/plugins.h): Reserve takes a lease of the VM's
 * size at the chosen host's arbiter, the same ledger the arbiter's
 * permits to growing VMs come from, so the two cannot promise the same
 * room twice; PreBind takes it again just before the bind (a VM a Permit
 * plugin held may have waited long: if its lease lapsed and the room went
 * to someone else, the bind does not happen); Unreserve gives it back.
 * The engine renews the lease for as long as the VM holds capacity, a
 * waiting VM's too (doc/cluster.md, "Capacity leases"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster/host/host.h"
#include "cluster/plugins/plugins.h"

/* The VM's entry at the arbiter: a moved VM keeps its own key. */
static const char *ns_of(const struct cl_fw_vm *vm)
{
	return vm->pod_ns ? vm->pod_ns : CL_PLUGINS_LEASE_NS;
}

static const char *name_of(const struct cl_fw_vm *vm)
{
	return vm->pod_name ? vm->pod_name : vm->name;
}

static void lease_reserve(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			  const struct cl_fw_host *host, struct cl_fw_status *st)
{
	const struct cl_fw_handle *handle = p;
	struct cl_host *h = handle->host(handle->ud, host->name);
	struct vmact_err err = { 0 };
	int r;

	if (!h)
		return cl_fw_status_set(st, CL_FW_ERROR, "no host %s", host->name);
	r = cl_host_lease(h, ns_of(vm), name_of(vm), vm->size, handle->lease_usec, false, &err);
	if (r == -EBUSY)
		/* The snapshot was older than the ledger: a VM grew, or another
		 * placement came first. */
		return cl_fw_status_set(st, CL_FW_UNSCHEDULABLE, "arbiter of %s: %s", host->name,
					err.msg);
	if (r < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "%s", err.msg);
	if (cl_fw_cycle_write(cs, CL_PLUGINS_LEASED, (void *)1, NULL) < 0)
		cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
}

static void lease_pre_bind(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			   const char *host, struct cl_fw_status *st)
{
	const struct cl_fw_handle *handle = p;
	struct cl_host *h = handle->host(handle->ud, host);
	struct vmact_err err = { 0 };
	int r;

	if (!h)
		return cl_fw_status_set(st, CL_FW_ERROR, "no host %s", host);
	/* Never existing: the VM does not run yet. A lease still held is
	 * only renewed; a lapsed one is taken again only if the room is
	 * still there. */
	r = cl_host_lease(h, ns_of(vm), name_of(vm), vm->size, handle->lease_usec, false, &err);
	if (r == -EBUSY)
		return cl_fw_status_set(st, CL_FW_UNSCHEDULABLE,
					"its reservation on %s is gone and so is the room: %s",
					host, err.msg);
	if (r < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "%s", err.msg);
	if (cl_fw_cycle_write(cs, CL_PLUGINS_LEASED, (void *)1, NULL) < 0)
		cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
}

static void lease_unreserve(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			    const char *host)
{
	const struct cl_fw_handle *handle = p;
	struct cl_host *h = handle->host(handle->ud, host);
	struct vmact_err err = { 0 };

	if (!h || !cl_fw_cycle_read(cs, CL_PLUGINS_LEASED))
		return;
	/* A release that does not get through expires with the lease. */
	cl_host_release(h, ns_of(vm), name_of(vm), &err);
	cl_fw_cycle_delete(cs, CL_PLUGINS_LEASED);
}

const struct cl_fw_plugin_ops cl_plugin_lease_arbiter = {
	.name = "ArbiterLease",
	.init = cl_fw_init_handle_only,
	.fini = free,
	.reserve = lease_reserve,
	.unreserve = lease_unreserve,
	.pre_bind = lease_pre_bind,
};
