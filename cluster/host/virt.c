/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/host/virt.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>

#include "base/macro.h"

DEFINE_PTR_CLEANUP(virt_dom_freep, struct _virDomain, virDomainFree)
DEFINE_PTR_CLEANUP(virt_pool_freep, struct _virStoragePool, virStoragePoolFree)
DEFINE_PTR_CLEANUP(virt_vol_freep, struct _virStorageVol, virStorageVolFree)

static int fail(struct vmact_err *err, int code, const char *what, const char *name)
{
	virErrorPtr e = virGetLastError();

	return vmact_err_set(err, code, "%s %s: %s", what, name,
			     e && e->message ? e->message : "unknown libvirt error");
}

static bool no_domain(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->code == VIR_ERR_NO_DOMAIN;
}

static virDomainPtr lookup(virConnectPtr c, const char *uuid, struct vmact_err *err, int *r)
{
	virDomainPtr d = virDomainLookupByUUIDString(c, uuid);

	if (!d)
		*r = no_domain() ? vmact_err_set(err, ENOENT, "no domain %s", uuid)
				 : fail(err, EIO, "domain", uuid);
	return d;
}

static enum cl_virt_run run_of(virDomainPtr d, bool *has_save, bool *move_paused)
{
	int state = 0, reason = 0;

	*has_save = virDomainHasManagedSaveImage(d, 0) == 1;
	*move_paused = false;
	if (virDomainGetState(d, &state, &reason, 0) < 0)
		return no_domain() ? CL_VIRT_GONE : CL_VIRT_OTHER;
	switch (state) {
	case VIR_DOMAIN_RUNNING:
		return CL_VIRT_RUNNING;
	case VIR_DOMAIN_PAUSED:
		*move_paused = reason == VIR_DOMAIN_PAUSED_MIGRATION;
		return CL_VIRT_PAUSED;
	case VIR_DOMAIN_SHUTOFF:
		return CL_VIRT_OFF;
	default:
		return CL_VIRT_OTHER;
	}
}

int cl_virt_list(virConnectPtr c,
		 void (*fn)(void *ud, const struct cl_virt_dom *d, bool bad, const char *why),
		 void *ud, struct vmact_err *err)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(c, &doms, 0);

	if (n < 0)
		return fail(err, EIO, "list", "domains");
	for (int i = 0; i < n; i++) {
		struct cl_virt_dom d = { 0 };
		struct vmact_err e = { 0 };
		unsigned flags = virDomainIsPersistent(doms[i]) == 1 ? VIR_DOMAIN_AFFECT_CONFIG
								     : VIR_DOMAIN_AFFECT_LIVE;
		char *xml = virDomainGetMetadata(doms[i], VIR_DOMAIN_METADATA_ELEMENT, CL_DOMXML_NS,
						 flags);

		if (!xml) {
			/* Not ours (no such element): the usual case. */
			virDomainFree(doms[i]);
			continue;
		}
		snprintf(d.name, sizeof(d.name), "%s", virDomainGetName(doms[i]));
		virDomainGetUUIDString(doms[i], d.uuid);
		d.run = run_of(doms[i], &d.has_save, &d.move_paused);
		if (cl_domxml_meta_parse(xml, &d.meta, &e) < 0)
			fn(ud, &d, true, e.msg);
		else
			fn(ud, &d, false, NULL);
		free(xml);
		virDomainFree(doms[i]);
	}
	free(doms);
	return 0;
}

int cl_virt_list_volumes(virConnectPtr c, const char *pool, const char *prefix,
			 void (*fn)(void *ud, const char *volume), void *ud, struct vmact_err *err)
{
	_cleanup_(virt_pool_freep) virStoragePoolPtr p = virStoragePoolLookupByName(c, pool);
	virStorageVolPtr *vols = NULL;
	int n;

	if (!p) {
		virErrorPtr e = virGetLastError();

		return fail(err, e && e->code == VIR_ERR_NO_STORAGE_POOL ? ENOENT : EIO,
			    "storage pool", pool);
	}
	/* Files made behind libvirt's back (or by a crashed us) show up. */
	virStoragePoolRefresh(p, 0);
	n = virStoragePoolListAllVolumes(p, &vols, 0);
	if (n < 0)
		return fail(err, EIO, "volumes of pool", pool);
	for (int i = 0; i < n; i++) {
		const char *name = virStorageVolGetName(vols[i]);

		if (name && strncmp(name, prefix, strlen(prefix)) == 0)
			fn(ud, name);
		virStorageVolFree(vols[i]);
	}
	free(vols);
	return 0;
}

int cl_virt_state(virConnectPtr c, const char *uuid, enum cl_virt_run *run, bool *has_save,
		  struct vmact_err *err)
{
	_cleanup_(virt_dom_freep) virDomainPtr d = virDomainLookupByUUIDString(c, uuid);
	bool move_paused;

	*has_save = false;
	if (!d) {
		*run = CL_VIRT_GONE;
		return no_domain() ? 0 : fail(err, EIO, "domain", uuid);
	}
	*run = run_of(d, has_save, &move_paused);
	return 0;
}

int cl_virt_define(virConnectPtr c, const char *xml, struct vmact_err *err)
{
	virDomainPtr d = virDomainDefineXML(c, xml);

	if (!d)
		return fail(err, EIO, "define", "domain");
	virDomainFree(d);
	return 0;
}

#define WITH_DOMAIN(c, uuid, err, call, what)                                          \
	({                                                                             \
		int r_ = 0;                                                            \
		_cleanup_(virt_dom_freep) virDomainPtr d_ = lookup(c, uuid, err, &r_); \
		if (d_ && (call) < 0)                                                  \
			r_ = fail(err, EIO, what, uuid);                               \
		r_;                                                                    \
	})

int cl_virt_start(virConnectPtr c, const char *uuid, struct vmact_err *err)
{
	return WITH_DOMAIN(c, uuid, err, virDomainCreate(d_), "start");
}

int cl_virt_suspend(virConnectPtr c, const char *uuid, struct vmact_err *err)
{
	return WITH_DOMAIN(c, uuid, err, virDomainSuspend(d_), "suspend");
}

int cl_virt_resume(virConnectPtr c, const char *uuid, struct vmact_err *err)
{
	return WITH_DOMAIN(c, uuid, err, virDomainResume(d_), "resume");
}

int cl_virt_managed_save(virConnectPtr c, const char *uuid, struct vmact_err *err)
{
	return WITH_DOMAIN(c, uuid, err, virDomainManagedSave(d_, 0), "managed save");
}

int cl_virt_destroy(virConnectPtr c, const char *uuid, struct vmact_err *err)
{
	_cleanup_(virt_dom_freep) virDomainPtr d = virDomainLookupByUUIDString(c, uuid);

	if (!d)
		return no_domain() ? 0 : fail(err, EIO, "domain", uuid);
	if (virDomainIsActive(d) == 1 && virDomainDestroy(d) < 0 && virDomainIsActive(d) == 1)
		return fail(err, EIO, "destroy", uuid);
	return 0;
}

int cl_virt_remove(virConnectPtr c, const char *uuid, struct vmact_err *err)
{
	_cleanup_(virt_dom_freep) virDomainPtr d = virDomainLookupByUUIDString(c, uuid);

	if (!d)
		return no_domain() ? 0 : fail(err, EIO, "domain", uuid);
	if (virDomainIsActive(d) == 1 && virDomainDestroy(d) < 0 && virDomainIsActive(d) == 1)
		return fail(err, EIO, "destroy", uuid);
	if (virDomainIsPersistent(d) == 1 &&
	    virDomainUndefineFlags(d, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE |
					      VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA |
					      VIR_DOMAIN_UNDEFINE_NVRAM) < 0 &&
	    !no_domain())
		return fail(err, EIO, "undefine", uuid);
	return 0;
}

int cl_virt_set_meta(virConnectPtr c, const char *uuid, const struct cl_meta *m,
		     struct vmact_err *err)
{
	_cleanup_free_ char *xml = cl_domxml_meta_format(m, false);
	_cleanup_(virt_dom_freep) virDomainPtr d = NULL;
	unsigned flags = VIR_DOMAIN_AFFECT_CONFIG;
	int r = 0;

	if (!xml)
		return vmact_err_set(err, ENOMEM, "out of memory");
	d = lookup(c, uuid, err, &r);
	if (!d)
		return r;
	if (virDomainIsActive(d) == 1)
		flags |= VIR_DOMAIN_AFFECT_LIVE;
	/* Bare: libvirt puts it into the namespace given here. */
	if (virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, xml, CL_DOMXML_KEY, CL_DOMXML_NS,
				 flags) < 0)
		return fail(err, EIO, "metadata of", uuid);
	return 0;
}

/* The base volume's format, from its XML (qcow2 when it does not say). */
static void volume_format(virStorageVolPtr v, char *buf, size_t len)
{
	_cleanup_free_ char *xml = virStorageVolGetXMLDesc(v, 0);
	xmlDocPtr doc;
	xmlXPathContextPtr ctx;
	xmlXPathObjectPtr o;

	snprintf(buf, len, "qcow2");
	if (!xml || !(doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET)))
		return;
	ctx = xmlXPathNewContext(doc);
	o = ctx ? xmlXPathEvalExpression(BAD_CAST "string(/volume/target/format/@type)", ctx)
		: NULL;
	if (o && o->stringval && o->stringval[0])
		snprintf(buf, len, "%s", (const char *)o->stringval);
	xmlXPathFreeObject(o);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
}

static virStorageVolPtr base_lookup(virStoragePoolPtr p, const char *base_volume)
{
	virStorageVolPtr base = virStorageVolLookupByName(p, base_volume);

	if (!base) {
		/* Put there behind libvirt's back: look again. */
		virStoragePoolRefresh(p, 0);
		base = virStorageVolLookupByName(p, base_volume);
	}
	return base;
}

int cl_virt_volume_capacity(virConnectPtr c, const char *pool, const char *base_volume,
			    uint64_t *bytes, struct vmact_err *err)
{
	_cleanup_(virt_pool_freep) virStoragePoolPtr p = virStoragePoolLookupByName(c, pool);
	_cleanup_(virt_vol_freep) virStorageVolPtr base = NULL;
	virStorageVolInfo info;

	if (!p)
		return fail(err, EIO, "storage pool", pool);
	if (!(base = base_lookup(p, base_volume)))
		return fail(err, ENOENT, "base volume", base_volume);
	if (virStorageVolGetInfo(base, &info) < 0)
		return fail(err, EIO, "base volume", base_volume);
	*bytes = info.capacity;
	return 0;
}

int cl_virt_overlay_create(virConnectPtr c, const char *pool, const char *base_volume,
			   const char *volume, struct vmact_err *err)
{
	_cleanup_(virt_pool_freep) virStoragePoolPtr p = virStoragePoolLookupByName(c, pool);
	_cleanup_(virt_vol_freep) virStorageVolPtr base = NULL;
	_cleanup_(virt_vol_freep) virStorageVolPtr old = NULL;
	_cleanup_(virt_vol_freep) virStorageVolPtr v = NULL;
	_cleanup_free_ char *path = NULL, *xml = NULL;
	virStorageVolInfo info;
	char format[32];

	if (!p)
		return fail(err, EIO, "storage pool", pool);
	if (!(base = base_lookup(p, base_volume)))
		return fail(err, ENOENT, "base volume", base_volume);
	path = virStorageVolGetPath(base);
	if (!path || virStorageVolGetInfo(base, &info) < 0)
		return fail(err, EIO, "base volume", base_volume);
	volume_format(base, format, sizeof(format));
	old = virStorageVolLookupByName(p, volume);
	if (old && virStorageVolDelete(old, 0) < 0)
		return fail(err, EIO, "stale volume", volume);
	xml = cl_domxml_overlay(volume, path, info.capacity, format);
	if (!xml)
		return vmact_err_set(err, ENOMEM, "out of memory");
	v = virStorageVolCreateXML(p, xml, 0);
	if (!v)
		return fail(err, EIO, "create volume", volume);
	return 0;
}

int cl_virt_volume_path(virConnectPtr c, const char *pool, const char *volume, char *buf,
			size_t len, struct vmact_err *err)
{
	_cleanup_(virt_pool_freep) virStoragePoolPtr p = virStoragePoolLookupByName(c, pool);
	_cleanup_(virt_vol_freep) virStorageVolPtr v = NULL;
	_cleanup_free_ char *path = NULL;

	if (!p)
		return fail(err, EIO, "storage pool", pool);
	if (!(v = virStorageVolLookupByName(p, volume)))
		return fail(err, ENOENT, "volume", volume);
	if (!(path = virStorageVolGetPath(v)) || strlen(path) >= len)
		return fail(err, EIO, "volume", volume);
	snprintf(buf, len, "%s", path);
	return 0;
}

int cl_virt_overlay_delete(virConnectPtr c, const char *pool, const char *volume,
			   struct vmact_err *err)
{
	_cleanup_(virt_pool_freep) virStoragePoolPtr p = virStoragePoolLookupByName(c, pool);
	_cleanup_(virt_vol_freep) virStorageVolPtr v = NULL;
	virErrorPtr e;

	if (!p)
		return fail(err, EIO, "storage pool", pool);
	v = virStorageVolLookupByName(p, volume);
	if (!v) {
		e = virGetLastError();
		if (e && e->code == VIR_ERR_NO_STORAGE_VOL)
			return 0;
		return fail(err, EIO, "volume", volume);
	}
	if (virStorageVolDelete(v, 0) < 0)
		return fail(err, EIO, "delete volume", volume);
	return 0;
}
