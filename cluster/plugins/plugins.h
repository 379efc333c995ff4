/* SPDX-License-Identifier: Apache-2.0 */
/* The placement plugins vmact-groupd ships (prefix cl_plugins_;
 * doc/cluster.md, "Placement plugins"), by extension point:
 *
 *   PrioritySort   queueSort          members before standby VMs, then the
 *                                     longest waiting first
 *   GroupHosts     preFilter, filter  the group's hosts only (its list, kept
 *                                     in the cycle state by PreFilter)
 *   HostReachable  filter             libvirt and the arbiter answered
 *   Capacity       filter             the VM fits under the host's
 *                                     watermark; a standby VM also leaves
 *                                     one VM's room and no unmet growth
 *   PoolGiveBack   postFilter         the host where giving back standby
 *                                     VMs makes room for a member
 *   FreeCapacity   score (normalize)  most room left after the VM
 *   GroupSpread    score (normalize)  fewest VMs of the group
 *   ArbiterLease   reserve, preBind   a lease at the host's arbiter,
 *                                     taken again before the bind,
 *                                     released by Unreserve
 *   ManualApproval permit             waits for an operator's allow
 *                                     (args: groups, timeoutSeconds)
 *   LibvirtBind    bind               overlay, define, start
 *
 * The default profile enables all but ManualApproval. A running VM's
 * move (live migration) takes the first profile's scheduling cycle with
 * the hosts that take moved VMs for its GroupHosts and its arbiter entry's
 * key for ArbiterLease, and is never bound: ManualApproval lets it
 * through. */
#pragma once

#include "cluster/config/config.h"
#include "cluster/framework/framework.h"
#include "cluster/host/domxml.h"

const struct cl_fw_plugin_table *cl_plugins_table(void);
const struct cl_fw_defaults *cl_plugins_defaults(void);
/* Checks the configuration's scheduler profiles (cl_config.profiles;
 * NULL: the default one) against these plugins: each one's plugins,
 * extension points and arguments; errors name the key
 * ("scheduler.profiles[0].plugins.filter.enabled[0].name: ..."). */
int cl_plugins_check_profiles(const json_t *profiles, struct vmact_err *err);

/* What the engine hands the bind plugin through cl_fw_vm.spec. */
struct cl_bind_spec {
	const struct cl_group_cfg *group;
	struct cl_meta meta; /* written with state creating, then booting */
};

/* Where LibvirtBind leaves the metadata it wrote last (struct cl_meta),
 * in the cycle state. */
#define CL_PLUGINS_BIND_META "LibvirtBind/meta"
/* The host the VM's definition moved to during a bind (a string), even
 * when the bind then failed (the member's placeholder is there now). */
#define CL_PLUGINS_BIND_HOST "LibvirtBind/host"
/* Set (to a non-NULL marker) by ArbiterLease while it holds a lease. */
#define CL_PLUGINS_LEASED "ArbiterLease/leased"
/* The namespace of every lease (what vmactd's runner uses for a VM
 * without <vmact:pod>, so that its pod and the lease are one entry). */
#define CL_PLUGINS_LEASE_NS "default"

/* The individual plugins (tests build registries of their own). */
extern const struct cl_fw_plugin_ops cl_plugin_fit_group_hosts, cl_plugin_fit_host_reachable,
	cl_plugin_fit_capacity, cl_plugin_fit_pool_give_back, cl_plugin_fit_free_capacity,
	cl_plugin_fit_group_spread, cl_plugin_lease_arbiter, cl_plugin_permit_manual_approval,
	cl_plugin_bind_libvirt, cl_plugin_queue_priority_sort;
