/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin table of vmact-groupd's placement plugins and its default
 * profile (cluster/plugins/plugins.h). */
#include "cluster/plugins/plugins.h"

#include <stddef.h>
#include <stdio.h>

static const struct cl_fw_plugin_ops *const all[] = {
	&cl_plugin_fit_group_hosts,
	&cl_plugin_fit_host_reachable,
	&cl_plugin_fit_capacity,
	&cl_plugin_fit_pool_give_back,
	&cl_plugin_fit_free_capacity,
	&cl_plugin_fit_group_spread,
	&cl_plugin_lease_arbiter,
	&cl_plugin_permit_manual_approval,
	&cl_plugin_bind_libvirt,
	&cl_plugin_queue_priority_sort,
	NULL,
};

static const struct cl_fw_plugin_table table = { .plugins = all };

static const char *const queue_sort[] = { "PrioritySort", NULL };
static const char *const pre_filter[] = { "GroupHosts", NULL };
static const char *const filter[] = { "GroupHosts", "HostReachable", "Capacity", NULL };
static const char *const post_filter[] = { "PoolGiveBack", NULL };
static const char *const score[] = { "FreeCapacity", "GroupSpread", NULL };
static const char *const reserve[] = { "ArbiterLease", NULL };
static const char *const pre_bind[] = { "ArbiterLease", NULL };
static const char *const bind[] = { "LibvirtBind", NULL };

static const struct cl_fw_defaults defaults = {
	.points = {
		[CL_FW_QUEUE_SORT] = queue_sort,
		[CL_FW_PRE_FILTER] = pre_filter,
		[CL_FW_FILTER] = filter,
		[CL_FW_POST_FILTER] = post_filter,
		[CL_FW_SCORE] = score,
		[CL_FW_RESERVE] = reserve,
		[CL_FW_PERMIT] = NULL,
		[CL_FW_PRE_BIND] = pre_bind,
		[CL_FW_BIND] = bind,
		[CL_FW_POST_BIND] = NULL,
	},
};

const struct cl_fw_plugin_table *cl_plugins_table(void)
{
	return &table;
}

const struct cl_fw_defaults *cl_plugins_defaults(void)
{
	return &defaults;
}

int cl_plugins_check_profiles(const json_t *profiles, struct vmact_err *err)
{
	size_t i;
	json_t *it;

	json_array_foreach(profiles, i, it) {
		struct cl_fw *fw = NULL;
		char path[64];
		int r;

		snprintf(path, sizeof(path), "scheduler.profiles[%zu]", i);
		r = cl_fw_new(&table, &defaults, it, path, NULL, &fw, err);
		if (r < 0)
			return r;
		cl_fw_free(fw);
	}
	return 0;
}
