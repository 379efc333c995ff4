/* SPDX-License-Identifier: Apache-2.0 */
/* A node VM made on a host (cluster/host/create.h). */
#include "cluster/host/create.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/macro.h"
#include "cluster/host/virt.h"

DEFINE_PTR_CLEANUP(create_conn_closep, struct _virConnect, virConnectClose)

/* A step's errno: libvirt's wrappers set one, but a failure must never
 * read as success. */
static int code_of(const struct vmact_err *e)
{
	return e->code ? e->code : EIO;
}

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Puts back what a failed creation leaves: a member's placeholder here,
 * with the error; nothing of a standby VM. */
static void undo(virConnectPtr conn, const struct cl_create *c, const char *pool,
		 const char *volume, const char *code, const char *why)
{
	struct vmact_err e = { 0 };

	cl_virt_remove(conn, c->uuid, &e);
	cl_virt_overlay_delete(conn, pool, volume, &e);
	if (!c->standby) {
		struct cl_meta m = *c->meta;
		struct cl_domxml_spec ds = { .group = c->group,
					     .name = c->name,
					     .uuid = c->uuid,
					     .meta = &m,
					     .channel_dir = cl_host_cfg(c->host)->channel_dir };
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
			cl_virt_define(conn, xml, &e);
	}
}

int cl_create_vm(const struct cl_create *c, bool *defined, struct vmact_err *err)
{
	const char *host = cl_host_name(c->host);
	_cleanup_(create_conn_closep) virConnectPtr conn = NULL;
	_cleanup_free_ char *xml = NULL;
	struct cl_meta *m = c->meta;
	struct vmact_err e = { 0 };
	const char *pool;
	char volume[CL_NAME_MAX + 8];

	*defined = false;
	conn = cl_host_conn(c->host, &e);
	if (!conn)
		return vmact_err_set(err, code_of(&e), "%s", e.msg);
	pool = cl_host_cfg(c->host)->storage_pool;
	if (cl_domxml_volume_name(c->name, volume, sizeof(volume)) < 0)
		return vmact_err_set(err, ENAMETOOLONG, "name too long");
	m->state = CL_ST_CREATING;
	m->created = now_real();
	m->booted = 0;
	m->attempts++;

	if (cl_virt_overlay_create(conn, pool, c->group->tpl.base_volume, volume, &e) < 0)
		return vmact_err_set(err, code_of(&e), "disk on %s: %s", host, e.msg);
	{
		struct cl_domxml_spec ds = { .group = c->group,
					     .name = c->name,
					     .uuid = c->uuid,
					     .pool = pool,
					     .volume = volume,
					     .meta = m,
					     .channel_dir = cl_host_cfg(c->host)->channel_dir };

		xml = cl_domxml_domain(&ds, &e);
	}
	if (!xml || cl_virt_define(conn, xml, &e) < 0) {
		struct vmact_err e2 = { 0 };

		cl_virt_overlay_delete(conn, pool, volume, &e2);
		return vmact_err_set(err, code_of(&e), "define on %s: %s", host, e.msg);
	}
	*defined = true;
	/* Defined here now: the placeholder elsewhere goes. A failure leaves
	 * two definitions, which the next start-up sorts out (the pending one
	 * goes). */
	if (c->old_host && c->old_host != c->host) {
		struct vmact_err e2 = { 0 };
		_cleanup_(create_conn_closep) virConnectPtr oc = cl_host_conn(c->old_host, &e2);

		if (oc)
			cl_virt_remove(oc, c->uuid, &e2);
	}
	if (cl_virt_start(conn, c->uuid, &e) < 0) {
		undo(conn, c, pool, volume, "START_FAILED", e.msg);
		return vmact_err_set(err, code_of(&e), "start on %s: %s", host, e.msg);
	}
	m->state = CL_ST_BOOTING;
	m->booted = now_real();
	if (cl_virt_set_meta(conn, c->uuid, m, &e) < 0) {
		undo(conn, c, pool, volume, "START_FAILED", e.msg);
		return vmact_err_set(err, code_of(&e), "record the boot on %s: %s", host, e.msg);
	}
	return 0;
}
