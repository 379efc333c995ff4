/* SPDX-License-Identifier: Apache-2.0 */
/* The placement plugins that only read the cycle's host snapshot: which
 * hosts may take the VM and which is best (cluster/plugins/plugins.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>

#include "base/macro.h"
#include "base/quantity.h"
#include "cluster/plugins/plugins.h"

#define GROUP_HOSTS_KEY "GroupHosts/allowed"

static void fmt_res(struct vmact_resources r, char *buf, size_t len)
{
	char c[32], m[32];

	vmact_quantity_format_milli(r.milli_cpu, c, sizeof(c));
	vmact_quantity_format_bytes(r.mem_bytes, m, sizeof(m));
	snprintf(buf, len, "%s CPU / %s", c, m);
}

/* ---- GroupHosts ---- */

struct allowed {
	size_t n;
	char names[CL_FW_MAX_HOSTS][CL_FW_NAME_MAX];
};

static void group_hosts_pre_filter(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
				   struct cl_fw_status *st)
{
	struct allowed *a;

	if (!vm->n_group_hosts)
		return cl_fw_status_set(st, CL_FW_UNRESOLVABLE, "group %s lists no hosts",
					vm->group);
	a = calloc(1, sizeof(*a));
	if (!a)
		return cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
	for (size_t i = 0; i < vm->n_group_hosts && i < CL_FW_MAX_HOSTS; i++)
		snprintf(a->names[a->n++], CL_FW_NAME_MAX, "%s", vm->group_hosts[i]);
	if (cl_fw_cycle_write(cs, GROUP_HOSTS_KEY, a, free) < 0)
		cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
}

static void group_hosts_filter(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			       const struct cl_fw_host *host, struct cl_fw_status *st)
{
	const struct allowed *a = cl_fw_cycle_read(cs, GROUP_HOSTS_KEY);

	if (!a)
		return cl_fw_status_set(st, CL_FW_ERROR, "PreFilter did not run");
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->names[i], host->name) == 0)
			return;
	cl_fw_status_set(st, CL_FW_UNRESOLVABLE, "not one of group %s's hosts", vm->group);
}

const struct cl_fw_plugin_ops cl_plugin_fit_group_hosts = {
	.name = "GroupHosts",
	.pre_filter = group_hosts_pre_filter,
	.filter = group_hosts_filter,
};

/* ---- HostReachable ---- */

static void reachable_filter(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			     const struct cl_fw_host *host, struct cl_fw_status *st)
{
	if (host->drained)
		return cl_fw_status_set(st, CL_FW_UNRESOLVABLE,
					"drained (vmact-groupctl undrain %s puts it back)",
					host->name);
	if (!host->reachable)
		return cl_fw_status_set(st, CL_FW_UNRESOLVABLE, "unreachable: %s", host->why);
	if (!host->ledger)
		return cl_fw_status_set(st, CL_FW_UNRESOLVABLE, "no capacity ledger: %s",
					host->why);
}

const struct cl_fw_plugin_ops cl_plugin_fit_host_reachable = {
	.name = "HostReachable",
	.filter = reachable_filter,
};

/* ---- Capacity ---- */

static struct vmact_resources free_of(const struct cl_fw_host *h)
{
	struct vmact_resources f = { 0 };

	if (h->watermark.milli_cpu > h->reserved.milli_cpu)
		f.milli_cpu = h->watermark.milli_cpu - h->reserved.milli_cpu;
	if (h->watermark.mem_bytes > h->reserved.mem_bytes)
		f.mem_bytes = h->watermark.mem_bytes - h->reserved.mem_bytes;
	return f;
}

static bool fits(struct vmact_resources want, struct vmact_resources have)
{
	return want.milli_cpu <= have.milli_cpu && want.mem_bytes <= have.mem_bytes;
}

static void capacity_filter(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			    const struct cl_fw_host *host, struct cl_fw_status *st)
{
	struct vmact_resources f = free_of(host), want = vm->size;
	char a[80], b[80];

	if (!host->ledger)
		return cl_fw_status_set(st, CL_FW_UNRESOLVABLE, "no capacity ledger");
	if (vm->standby) {
		/* A refill keeps room for one more VM of the kind it stands in
		 * for, and stops while VMs in service want to grow: the pool
		 * must never be why placement or growth fails. */
		if (host->pressure.milli_cpu || host->pressure.mem_bytes) {
			fmt_res(host->pressure, a, sizeof(a));
			return cl_fw_status_set(st, CL_FW_UNSCHEDULABLE,
						"VMs in service want %s more than they were granted",
						a);
		}
		want.milli_cpu = (uint32_t)MIN((uint64_t)want.milli_cpu * 2, UINT32_MAX);
		want.mem_bytes *= 2;
	}
	if (fits(want, f))
		return;
	fmt_res(vm->size, a, sizeof(a));
	fmt_res(f, b, sizeof(b));
	cl_fw_status_set(st, CL_FW_UNSCHEDULABLE, "%s%s does not fit: %s free under the watermark",
			 a, vm->standby ? " and room for another" : "", b);
}

const struct cl_fw_plugin_ops cl_plugin_fit_capacity = {
	.name = "Capacity",
	.filter = capacity_filter,
};

/* ---- PoolGiveBack ---- */

static void give_back_post_filter(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
				  const struct cl_fw_host *hosts, size_t n,
				  const struct cl_fw_status *statuses,
				  char nominated[CL_FW_NAME_MAX], struct cl_fw_status *st)
{
	uint64_t best_need = UINT64_MAX;
	int best = -1;

	/* Standby VMs give way to members only, never to each other. */
	if (vm->standby)
		return cl_fw_status_set(st, CL_FW_UNSCHEDULABLE,
					"a standby VM takes no one's place");
	for (size_t i = 0; i < n; i++) {
		struct vmact_resources f = free_of(&hosts[i]), with = f;
		uint64_t need;

		if (statuses[i].code != CL_FW_UNSCHEDULABLE || !hosts[i].standby_vms)
			continue;
		with.milli_cpu = (uint32_t)MIN((uint64_t)f.milli_cpu + hosts[i].standby.milli_cpu,
					       UINT32_MAX);
		with.mem_bytes = f.mem_bytes + hosts[i].standby.mem_bytes;
		if (!fits(vm->size, with))
			continue;
		/* Least to give back first (memory weighs as its GiB). */
		need = (vm->size.milli_cpu > f.milli_cpu ? vm->size.milli_cpu - f.milli_cpu : 0) +
		       (vm->size.mem_bytes > f.mem_bytes ? (vm->size.mem_bytes - f.mem_bytes) >> 20
							 : 0);
		if (need < best_need) {
			best_need = need;
			best = (int)i;
		}
	}
	if (best < 0)
		return cl_fw_status_set(st, CL_FW_UNSCHEDULABLE,
					"no host fits even with its standby VMs given back");
	snprintf(nominated, CL_FW_NAME_MAX, "%s", hosts[best].name);
	cl_fw_status_set(st, CL_FW_SUCCESS, "%s fits once standby VMs give back their room",
			 hosts[best].name);
}

const struct cl_fw_plugin_ops cl_plugin_fit_pool_give_back = {
	.name = "PoolGiveBack",
	.post_filter = give_back_post_filter,
};

/* ---- FreeCapacity ---- */

/* The share of the watermark left free after the VM, of the scarcer
 * resource, in 0..100. */
static void free_score(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		       const struct cl_fw_host *host, int64_t *score, struct cl_fw_status *st)
{
	struct vmact_resources f = free_of(host);
	double cpu = 0, mem = 0;

	if (host->watermark.milli_cpu && f.milli_cpu >= vm->size.milli_cpu)
		cpu = (double)(f.milli_cpu - vm->size.milli_cpu) / host->watermark.milli_cpu;
	if (host->watermark.mem_bytes && f.mem_bytes >= vm->size.mem_bytes)
		mem = (double)(f.mem_bytes - vm->size.mem_bytes) /
		      (double)host->watermark.mem_bytes;
	*score = (int64_t)(100 * (cpu < mem ? cpu : mem));
}

/* Scales the best to 100, so that its weight counts the same whatever the
 * hosts' sizes. */
static void scale_to_max(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			 int64_t *scores, size_t n, struct cl_fw_status *st)
{
	int64_t max = 0;

	for (size_t i = 0; i < n; i++)
		max = scores[i] > max ? scores[i] : max;
	for (size_t i = 0; i < n; i++)
		scores[i] = max ? scores[i] * CL_FW_MAX_SCORE / max : CL_FW_MAX_SCORE;
}

const struct cl_fw_plugin_ops cl_plugin_fit_free_capacity = {
	.name = "FreeCapacity",
	.score = free_score,
	.normalize = scale_to_max,
};

/* ---- GroupSpread ---- */

static void spread_score(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			 const struct cl_fw_host *host, int64_t *score, struct cl_fw_status *st)
{
	/* Raw: the count; NormalizeScore turns fewest into best. */
	*score = host->group_vms;
}

static void spread_normalize(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			     int64_t *scores, size_t n, struct cl_fw_status *st)
{
	int64_t max = 0;

	for (size_t i = 0; i < n; i++)
		max = scores[i] > max ? scores[i] : max;
	for (size_t i = 0; i < n; i++)
		scores[i] = max ? (max - scores[i]) * CL_FW_MAX_SCORE / max : CL_FW_MAX_SCORE;
}

const struct cl_fw_plugin_ops cl_plugin_fit_group_spread = {
	.name = "GroupSpread",
	.score = spread_score,
	.normalize = spread_normalize,
};
