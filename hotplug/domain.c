/* SPDX-License-Identifier: Apache-2.0 */
#include "hotplug/domain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The typed parameters' names of the balloon group (virsh domstats
 * --balloon) that fill struct hp_mem_stats. */
static bool param(const virTypedParameter *p, int n, const char *name, uint64_t *v)
{
	unsigned long long x;

	if (virTypedParamsGetULLong((virTypedParameterPtr)p, n, name, &x) != 1)
		return false;
	*v = x;
	return true;
}

int hp_mem_stats_from_params(const virTypedParameter *p, int n, struct hp_mem_stats *out,
			     struct vmact_err *err)
{
	uint64_t v = 0;
	int state;
	bool has_total, has_avail;

	*out = (struct hp_mem_stats){ 0 };
	/* A domain that stopped between two readings still has a record
	 * (its balloon's size), never figures. */
	if (virTypedParamsGetInt((virTypedParameterPtr)p, n, "state.state", &state) == 1 &&
	    (state == VIR_DOMAIN_SHUTOFF || state == VIR_DOMAIN_CRASHED ||
	     state == VIR_DOMAIN_NOSTATE))
		return vmact_err_set(err, ENODEV, "the domain is not running");
	has_total = param(p, n, "balloon.available", &out->total_kib);
	has_avail = param(p, n, "balloon.usable", &out->available_kib);
	out->has_caches = param(p, n, "balloon.disk_caches", &out->caches_kib);
	out->has_unused = param(p, n, "balloon.unused", &out->unused_kib);
	out->has_swap = param(p, n, "balloon.swap_in", &out->swap_in_kib);
	out->has_swap |= param(p, n, "balloon.swap_out", &out->swap_out_kib);
	out->has_faults = param(p, n, "balloon.major_fault", &out->major_faults);
	out->has_faults |= param(p, n, "balloon.minor_fault", &out->minor_faults);
	if (param(p, n, "balloon.last-update", &v))
		out->last_update = v;
	if (!has_total || !has_avail)
		return vmact_err_set(err, ENODATA,
				     "the guest reports no %s: no virtio balloon, a stats period "
				     "of 0, or no balloon driver in the guest",
				     !has_total ? "'available' (MemTotal) memory statistic"
						: "'usable' (MemAvailable) memory statistic");
	return 0;
}

/* The record of the domain uuid: the next one in order (libvirt answers
 * in the order asked, leaving out domains that went), else any. */
static virDomainStatsRecordPtr record_of(virDomainStatsRecordPtr *recs, int nrec, int *next,
					 const char *uuid)
{
	char u[VIR_UUID_STRING_BUFLEN];

	for (int k = 0; k < nrec; k++) {
		int i = (*next + k) % nrec;

		if (virDomainGetUUIDString(recs[i]->dom, u) == 0 && strcasecmp(u, uuid) == 0) {
			*next = i + 1;
			return recs[i];
		}
	}
	return NULL;
}

/* One call for every domain in reqs that has a handle; false when the call
 * itself failed (each of them then has its error). */
static bool batch_call(struct hp_conn *c, struct hp_mem_stats_req *reqs, size_t n)
{
	virDomainStatsRecordPtr *recs = NULL;
	virDomainPtr *doms = calloc(n + 1, sizeof(*doms));
	size_t nd = 0;
	int nrec, next = 0;

	if (!doms) {
		for (size_t i = 0; i < n; i++)
			if (reqs[i].rc == 0)
				reqs[i].rc = vmact_err_set(&reqs[i].err, ENOMEM, "out of memory");
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		if (reqs[i].rc)
			continue;
		if (!*reqs[i].dom) {
			*reqs[i].dom = hp_domain_lookup(c, reqs[i].uuid, &reqs[i].err);
			if (!*reqs[i].dom) {
				reqs[i].rc = -(reqs[i].err.code ? reqs[i].err.code : ENODEV);
				continue;
			}
		}
		doms[nd++] = *reqs[i].dom;
	}
	if (!nd) {
		free(doms);
		return true;
	}
	/* No NOWAIT: without the domain's job the figures are left out,
	 * which would read as a guest without statistics. */
	nrec = virDomainListGetStats(doms, VIR_DOMAIN_STATS_STATE | VIR_DOMAIN_STATS_BALLOON, &recs,
				     0);
	free(doms);
	for (size_t i = 0; i < n; i++) {
		virDomainStatsRecordPtr rec;

		if (reqs[i].rc)
			continue;
		if (nrec < 0) {
			reqs[i].rc = hp_virt_err(&reqs[i].err, "virDomainListGetStats");
			continue;
		}
		rec = record_of(recs, nrec, &next, reqs[i].uuid);
		if (!rec)
			reqs[i].rc = vmact_err_set(&reqs[i].err, ENODEV, "the domain is gone");
		else
			reqs[i].rc = hp_mem_stats_from_params(rec->params, rec->nparams,
							      &reqs[i].out, &reqs[i].err);
	}
	if (recs)
		virDomainStatsRecordListFree(recs);
	return nrec >= 0;
}

void hp_mem_stats_read_batch(struct hp_conn *c, struct hp_mem_stats_req *reqs, size_t n)
{
	bool kept = false;

	for (size_t i = 0; i < n; i++) {
		reqs[i].rc = 0;
		reqs[i].out = (struct hp_mem_stats){ 0 };
		vmact_err_reset(&reqs[i].err);
		kept |= *reqs[i].dom != NULL;
	}
	if (batch_call(c, reqs, n) || !kept)
		return;
	/* Through kept handles: libvirtd restarted (their connection is
	 * closed), or handles of two connections met. Once more with fresh
	 * ones. */
	for (size_t i = 0; i < n; i++) {
		if (*reqs[i].dom)
			virDomainFree(*reqs[i].dom);
		*reqs[i].dom = NULL;
		reqs[i].rc = 0;
		vmact_err_reset(&reqs[i].err);
	}
	batch_call(c, reqs, n);
}

struct stats_job {
	struct hp_ework e;
	struct hp_mem_stats_req *reqs;
	size_t n;
	hp_mem_stats_done_fn done;
	void *userdata;
};

static void stats_job_run(struct hp_conn *c, void *userdata)
{
	struct stats_job *j = userdata;

	hp_mem_stats_read_batch(c, j->reqs, j->n);
}

static void stats_job_done(struct hp_conn *c, void *userdata, bool delivered)
{
	struct stats_job *j = userdata;
	hp_mem_stats_done_fn done = j->done;
	void *ud = j->userdata;

	free(j);
	done(ud, delivered);
}

int hp_mem_stats_read_async(struct hp_conn *c, struct hp_mem_stats_req *reqs, size_t n,
			    hp_mem_stats_done_fn done, void *userdata, struct vmact_err *err)
{
	struct stats_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return vmact_err_set(err, ENOMEM, "out of memory");
	*j = (struct stats_job){ .reqs = reqs, .n = n, .done = done, .userdata = userdata };
	r = hp_conn_run(c, &j->e, stats_job_run, stats_job_done, j, err);
	if (r < 0)
		free(j);
	return r;
}

int hp_mem_stats_read_kept(struct hp_conn *c, const char *uuid, virDomainPtr *dom,
			   struct hp_mem_stats *out, struct vmact_err *err)
{
	struct hp_mem_stats_req req = { .uuid = uuid, .dom = dom };

	hp_mem_stats_read_batch(c, &req, 1);
	*out = req.out;
	if (req.rc < 0 && err)
		vmact_err_set(err, req.err.code ? req.err.code : -req.rc, "%s", req.err.msg);
	return req.rc;
}
