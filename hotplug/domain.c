/* SPDX-License-Identifier: Apache-2.0 */
#include "hotplug/domain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int hp_domain_resolve(struct hp_conn *c, const char *name_or_uuid, char *uuid, char *name,
		      struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c);
	virDomainPtr dom = NULL;
	const char *n;
	int r = 0;

	if (!vc)
		return vmact_err_set(err, ENOTCONN, "not connected to libvirtd (%s)",
				     hp_conn_uri(c));
	/* A UUID first, as virsh does: a domain may be named like another's
	 * UUID, but the UUID is the one that cannot be ambiguous. */
	if (strlen(name_or_uuid) >= 32 && strlen(name_or_uuid) < VIR_UUID_STRING_BUFLEN + 8)
		dom = virDomainLookupByUUIDString(vc, name_or_uuid);
	if (!dom)
		dom = virDomainLookupByName(vc, name_or_uuid);
	virConnectClose(vc);
	if (!dom)
		return vmact_err_set(err, ENODEV, "no domain named or with the UUID '%s'",
				     name_or_uuid);
	n = virDomainGetName(dom);
	if (!n || virDomainGetUUIDString(dom, uuid) < 0)
		r = hp_virt_err(err, name_or_uuid);
	else
		snprintf(name, HP_NAME_MAX, "%s", n);
	virDomainFree(dom);
	return r;
}

int hp_domain_xml(struct hp_conn *c, const char *uuid, bool inactive, char **xml, bool *active,
		  bool *persistent, struct vmact_err *err)
{
	virDomainPtr dom = hp_domain_lookup(c, uuid, err);
	int r = 0;

	*xml = NULL;
	if (!dom)
		return -(err->code ? err->code : ENODEV);
	if (active)
		*active = virDomainIsActive(dom) == 1;
	if (persistent)
		*persistent = virDomainIsPersistent(dom) == 1;
	*xml = virDomainGetXMLDesc(dom, inactive ? VIR_DOMAIN_XML_INACTIVE : 0);
	if (!*xml)
		r = hp_virt_err(err,
				inactive ? "the domain's definition" : "the domain's live XML");
	virDomainFree(dom);
	return r;
}

/* The statistics of dom; *call_failed: libvirt's call failed (not the
 * guest's figures). */
static int stats_of(virDomainPtr dom, struct hp_mem_stats *out, bool *call_failed,
		    struct vmact_err *err)
{
	virDomainMemoryStatStruct st[VIR_DOMAIN_MEMORY_STAT_NR];
	bool has_total = false, has_avail = false;
	int n;

	*out = (struct hp_mem_stats){ 0 };
	*call_failed = false;
	n = virDomainMemoryStats(dom, st, VIR_DOMAIN_MEMORY_STAT_NR, 0);
	if (n < 0) {
		*call_failed = true;
		return hp_virt_err(err, "virDomainMemoryStats");
	}
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

int hp_mem_stats_read_kept(struct hp_conn *c, const char *uuid, virDomainPtr *dom,
			   struct hp_mem_stats *out, struct vmact_err *err)
{
	bool failed;
	int r;

	if (*dom) {
		r = stats_of(*dom, out, &failed, err);
		if (!failed)
			return r;
		/* libvirtd restarted (the domain's connection is closed) or
		 * the domain went: what a fresh lookup says. */
		vmact_err_reset(err);
		virDomainFree(*dom);
		*dom = NULL;
	}
	*out = (struct hp_mem_stats){ 0 };
	*dom = hp_domain_lookup(c, uuid, err);
	if (!*dom)
		return -(err && err->code ? err->code : ENODEV);
	r = stats_of(*dom, out, &failed, err);
	if (failed) {
		virDomainFree(*dom);
		*dom = NULL;
	}
	return r;
}
