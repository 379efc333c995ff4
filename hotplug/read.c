/* SPDX-License-Identifier: Apache-2.0 */
/* Reads: a domain's live state as libvirt (live XML) and QEMU (its vCPU
 * threads) report it, the list of running domains, and the vmact
 * metadata. Short local RPCs, made on the caller's thread. */
#include "hotplug/read.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>

#include "base/macro.h"
#include "base/pidfile.h"
#include "hotplug/conn.h"
#include "hotplug/refusal.h"
#include "hotplug/virt-error.h"
#include "shared/vcpu-name.h"

DEFINE_PTR_CLEANUP(hp_domfreep, struct _virDomain, virDomainFree)
#define _cleanup_dom_ _cleanup_(hp_domfreep)

int hp_qemu_vcpu_threads(const char *rundir, const char *name, uint64_t *mask,
			 struct vmact_err *err)
{
	_cleanup_free_ char *pidfile = NULL, *taskdir = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	pid_t pid;
	int n = 0, r;

	if (mask)
		*mask = 0;
	if (asprintf(&pidfile, "%s/%s.pid", rundir, name) < 0)
		return -ENOMEM;
	if ((r = vmact_pidfile_read(pidfile, &pid, err)) < 0)
		return r;
	if (asprintf(&taskdir, "/proc/%d/task", (int)pid) < 0)
		return -ENOMEM;
	d = opendir(taskdir);
	if (!d)
		return vmact_err_set(err, errno == ENOENT ? ESRCH : errno, "%s: %m", taskdir);
	while ((de = readdir(d))) {
		_cleanup_fclose_ FILE *c = NULL;
		char path[300], comm[64];
		int idx;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", taskdir, de->d_name);
		c = fopen(path, "re");
		if (!c)
			continue; /* thread exited meanwhile */
		if (fgets(comm, sizeof(comm), c) && (idx = vmact_vcpu_thread_index(comm)) >= 0) {
			n++;
			if (mask && idx < 64)
				*mask |= 1ULL << idx;
		}
	}
	return n;
}

enum hp_migration hp_migration_from_job(int type, const virTypedParameter *p, int n)
{
	int op = 0;

	if (type == VIR_DOMAIN_JOB_NONE ||
	    virTypedParamsGetInt((virTypedParameterPtr)p, n, VIR_DOMAIN_JOB_OPERATION, &op) != 1)
		return HP_MIGRATION_NONE;
	if (op == VIR_DOMAIN_JOB_OPERATION_MIGRATION_IN)
		return HP_MIGRATION_ARRIVING;
	if (op == VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT)
		return HP_MIGRATION_LEAVING;
	return HP_MIGRATION_NONE;
}

/* A domain whose job cannot be read is taken as not moving. */
static enum hp_migration migration_of(virDomainPtr dom)
{
	virTypedParameterPtr p = NULL;
	int n = 0, type = VIR_DOMAIN_JOB_NONE;
	enum hp_migration m;

	if (virDomainGetJobStats(dom, &type, &p, &n, 0) < 0) {
		virResetLastError();
		return HP_MIGRATION_NONE;
	}
	m = hp_migration_from_job(type, p, n);
	virTypedParamsFree(p, n);
	return m;
}

static int read_dom(struct hp_conn *c, virDomainPtr dom, struct hp_state *st, struct vmact_err *err)
{
	_cleanup_free_ char *xml = NULL;
	struct vmact_err qerr = { 0 };
	int r, n;

	if (virDomainIsActive(dom) != 1)
		return vmact_err_set(err, ENODEV, "domain is not running");
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml)
		return hp_virt_err(err, "virDomainGetXMLDesc");
	if ((r = hp_state_parse(xml, st, err)) < 0)
		return r;
	n = hp_qemu_vcpu_threads(hp_conn_qemu_rundir(c), st->name, &st->qemu_vcpu_mask, &qerr);
	st->qemu_vcpus = n >= 0 ? n : -1;
	hp_vcpus_refusal_apply(st);
	st->migration = migration_of(dom);
	return 0;
}

int hp_state_read_vc(struct hp_conn *c, virConnectPtr vc, const char *uuid, struct hp_state *st,
		     struct vmact_err *err)
{
	_cleanup_dom_ virDomainPtr dom = virDomainLookupByUUIDString(vc, uuid);

	if (!dom)
		return hp_virt_err(err, uuid);
	return read_dom(c, dom, st, err);
}

static int not_connected(struct hp_conn *c, struct vmact_err *err)
{
	return vmact_err_set(err, ENOTCONN, "not connected to libvirtd (%s)", hp_conn_uri(c));
}

int hp_state_read(struct hp_conn *c, const char *uuid, struct hp_state *st, struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c);
	int r;

	if (!vc)
		return not_connected(c, err);
	r = hp_state_read_vc(c, vc, uuid, st, err);
	virConnectClose(vc);
	return r;
}

int hp_list_running(struct hp_conn *c, struct hp_state **out, size_t *n, struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c);
	virDomainPtr *doms = NULL;
	struct hp_state *arr = NULL;
	int nd, r = 0;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (!vc)
		return not_connected(c, err);
	nd = virConnectListAllDomains(vc, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (nd < 0) {
		r = hp_virt_err(err, "virConnectListAllDomains");
		goto out;
	}
	arr = calloc(nd ? (size_t)nd : 1, sizeof(*arr));
	if (!arr) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nd; i++) {
		struct vmact_err e = { 0 };

		/* A domain that stopped since the listing is simply gone. */
		if (read_dom(c, doms[i], &arr[k], &e) == 0)
			k++;
	}
	*out = TAKE_PTR(arr);
	*n = k;
out:
	for (int i = 0; i < nd; i++)
		virDomainFree(doms[i]);
	free(doms);
	free(arr);
	virConnectClose(vc);
	return r;
}

int hp_meta_read(struct hp_conn *c, const char *uuid, struct hp_meta *meta, struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c);
	_cleanup_free_ char *xml = NULL;
	virDomainPtr dom;
	int r;

	hp_meta_done(meta);
	if (!vc)
		return not_connected(c, err);
	dom = virDomainLookupByUUIDString(vc, uuid);
	if (!dom) {
		r = hp_virt_err(err, uuid);
		goto out;
	}
	xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, HP_NS_URI,
				   VIR_DOMAIN_AFFECT_LIVE);
	if (!xml) {
		r = hp_virt_err(err, "virDomainGetMetadata");
		virDomainFree(dom);
		goto out;
	}
	virDomainFree(dom);
	r = hp_meta_parse(xml, meta, err);
out:
	virConnectClose(vc);
	return r;
}
