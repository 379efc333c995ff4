/* SPDX-License-Identifier: Apache-2.0 */
/* LibvirtBind (cluster/plugins.h): makes the VM on the chosen host. The
 * overlay first (libvirt's storage API), then the definition with state
 * "creating", then the start, then state "booting": each step recorded
 * before the next, so that a vmact-groupd killed in between finds the VM
 * and knows it was being created without a result (and destroys it).
 * A failure undoes what this bind made; a member keeps its placeholder
 * (its definition without a disk) so that it is not lost. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/macro.h"
#include "cluster/host.h"
#include "cluster/plugins.h"
#include "cluster/virt.h"

DEFINE_PTR_CLEANUP(bind_conn_closep, struct _virConnect, virConnectClose)

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Puts back what a failed bind leaves: a member's placeholder here, with
 * the error; nothing of a standby VM. */
static void undo(virConnectPtr c, const struct cl_fw_vm *vm, const struct cl_bind_spec *spec,
		 const char *pool, const char *channel_dir, const char *volume, const char *code,
		 const char *why)
{
	struct vmact_err e = { 0 };

	cl_virt_remove(c, vm->uid, &e);
	cl_virt_overlay_delete(c, pool, volume, &e);
	if (!vm->standby) {
		struct cl_meta m = spec->meta;
		struct cl_domxml_spec ds = { .group = spec->group,
					     .name = vm->name,
					     .uuid = vm->uid,
					     .meta = &m,
					     .channel_dir = channel_dir };
		_cleanup_free_ char *xml = NULL;

		m.state = CL_ST_PENDING;
		m.booted = 0;
		m.has_error = true;
		snprintf(m.err_class, sizeof(m.err_class), "other");
		snprintf(m.err_code, sizeof(m.err_code), "%s", code);
		snprintf(m.err_msg, sizeof(m.err_msg), "%s", why);
		m.err_at = now_real();
		xml = cl_domxml_domain(&ds, &e);
		if (xml)
			cl_virt_define(c, xml, &e);
	}
}

static void bind(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm, const char *host,
		 struct cl_fw_status *st)
{
	const struct cl_fw_handle *handle = p;
	const struct cl_bind_spec *spec = vm->spec;
	struct cl_host *h = handle->host(handle->ud, host);
	_cleanup_(bind_conn_closep) virConnectPtr c = NULL;
	_cleanup_free_ char *xml = NULL;
	struct cl_meta *m;
	struct vmact_err err = { 0 };
	const char *pool;
	char volume[CL_NAME_MAX + 8];

	if (!h || !spec)
		return cl_fw_status_set(st, CL_FW_ERROR, "no host %s", host);
	c = cl_host_conn(h, &err);
	if (!c)
		return cl_fw_status_set(st, CL_FW_ERROR, "%s", err.msg);
	pool = cl_host_cfg(h)->storage_pool;
	if (cl_domxml_volume_name(vm->name, volume, sizeof(volume)) < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "name too long");
	m = malloc(sizeof(*m));
	if (!m || cl_fw_cycle_write(cs, CL_PLUGINS_BIND_META, m, free) < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
	*m = spec->meta;
	m->state = CL_ST_CREATING;
	m->created = now_real();
	m->booted = 0;
	m->attempts++;

	if (cl_virt_overlay_create(c, pool, spec->group->tpl.base_volume, volume, &err) < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "disk on %s: %s", host, err.msg);
	{
		struct cl_domxml_spec ds = { .group = spec->group,
					     .name = vm->name,
					     .uuid = vm->uid,
					     .pool = pool,
					     .volume = volume,
					     .meta = m,
					     .channel_dir = cl_host_cfg(h)->channel_dir };

		xml = cl_domxml_domain(&ds, &err);
	}
	if (!xml || cl_virt_define(c, xml, &err) < 0) {
		struct vmact_err e = { 0 };

		cl_virt_overlay_delete(c, pool, volume, &e);
		return cl_fw_status_set(st, CL_FW_ERROR, "define on %s: %s", host, err.msg);
	}
	{
		char *where = strdup(host);

		if (!where || cl_fw_cycle_write(cs, CL_PLUGINS_BIND_HOST, where, free) < 0)
			return cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
	}
	/* Defined here now: the placeholder elsewhere goes. A failure leaves
	 * two definitions, which the next start-up sorts out (the pending one
	 * goes). */
	if (vm->defined_on[0] && strcmp(vm->defined_on, host) != 0) {
		struct cl_host *old = handle->host(handle->ud, vm->defined_on);
		_cleanup_(bind_conn_closep) virConnectPtr oc = old ? cl_host_conn(old, &err) : NULL;

		if (oc)
			cl_virt_remove(oc, vm->uid, &err);
	}
	if (cl_virt_start(c, vm->uid, &err) < 0) {
		undo(c, vm, spec, pool, cl_host_cfg(h)->channel_dir, volume, "START_FAILED",
		     err.msg);
		return cl_fw_status_set(st, CL_FW_ERROR, "start on %s: %s", host, err.msg);
	}
	m->state = CL_ST_BOOTING;
	m->booted = now_real();
	if (cl_virt_set_meta(c, vm->uid, m, &err) < 0) {
		undo(c, vm, spec, pool, cl_host_cfg(h)->channel_dir, volume, "START_FAILED",
		     err.msg);
		return cl_fw_status_set(st, CL_FW_ERROR, "record the boot on %s: %s", host,
					err.msg);
	}
}

const struct cl_fw_plugin_ops cl_plugin_bind_libvirt = {
	.name = "LibvirtBind",
	.init = cl_fw_init_handle_only,
	.fini = free,
	.bind = bind,
};
