/* SPDX-License-Identifier: Apache-2.0 */
#include "hotplug/domain.h"

#include <errno.h>

#include "hotplug/conn.h"
#include "hotplug/virt-error.h"

virDomainPtr hp_domain_lookup(struct hp_conn *c, const char *uuid, struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c);
	virDomainPtr dom;

	if (!vc) {
		vmact_err_set(err, ENOTCONN, "not connected to libvirtd (%s)", hp_conn_uri(c));
		return NULL;
	}
	dom = virDomainLookupByUUIDString(vc, uuid);
	if (!dom)
		hp_virt_err(err, uuid);
	/* The domain holds its own reference on the connection. */
	virConnectClose(vc);
	return dom;
}

int hp_mem_stats_read(struct hp_conn *c, const char *uuid, struct hp_mem_stats *out,
		      struct vmact_err *err)
{
	virDomainMemoryStatStruct st[VIR_DOMAIN_MEMORY_STAT_NR];
	virDomainPtr dom = hp_domain_lookup(c, uuid, err);
	bool has_total = false, has_avail = false;
	int n;

	*out = (struct hp_mem_stats){ 0 };
	if (!dom)
		return -(err && err->code ? err->code : ENODEV);
	n = virDomainMemoryStats(dom, st, VIR_DOMAIN_MEMORY_STAT_NR, 0);
	if (n < 0) {
		int r = hp_virt_err(err, "virDomainMemoryStats");

		virDomainFree(dom);
		return r;
	}
	virDomainFree(dom);
	for (int i = 0; i < n; i++) {
		switch (st[i].tag) {
		case VIR_DOMAIN_MEMORY_STAT_AVAILABLE:
			out->total_kib = st[i].val;
			has_total = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_USABLE:
			out->available_kib = st[i].val;
			has_avail = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_DISK_CACHES:
			out->caches_kib = st[i].val;
			out->has_caches = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_UNUSED:
			out->unused_kib = st[i].val;
			out->has_unused = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_SWAP_IN:
			out->swap_in_kib = st[i].val;
			out->has_swap = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_SWAP_OUT:
			out->swap_out_kib = st[i].val;
			out->has_swap = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_MAJOR_FAULT:
			out->major_faults = st[i].val;
			out->has_faults = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_MINOR_FAULT:
			out->minor_faults = st[i].val;
			out->has_faults = true;
			break;
		case VIR_DOMAIN_MEMORY_STAT_LAST_UPDATE:
			out->last_update = st[i].val;
			break;
		default:
			break;
		}
	}
	if (!has_total || !has_avail)
		return vmact_err_set(err, ENODATA,
				     "the guest reports no %s: no virtio balloon, a stats period "
				     "of 0, or no balloon driver in the guest",
				     !has_total ? "'available' (MemTotal) memory statistic"
						: "'usable' (MemAvailable) memory statistic");
	return 0;
}
