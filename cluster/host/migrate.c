/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/host/migrate.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/virterror.h>

#include "base/macro.h"
#include "cluster/host/domxml.h"

/* vmactd's element (doc/domain.md); hotplug/ reads it for vmactd, a layer
 * the cluster does not link: the few attributes a move needs are read
 * here. */
#define VMACT_NS "https://vmact.dev/xmlns/vmact/1"

DEFINE_PTR_CLEANUP(mig_dom_freep, struct _virDomain, virDomainFree)
DEFINE_PTR_CLEANUP(mig_doc_freep, xmlDoc, xmlFreeDoc)
DEFINE_PTR_CLEANUP(mig_ctx_freep, xmlXPathContext, xmlXPathFreeContext)

static const char *virt_msg(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->message ? e->message : "unknown libvirt error";
}

/* The string value of an XPath expression over doc ("" when none). */
static void xpath_str(xmlXPathContextPtr ctx, const char *expr, char *buf, size_t len)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);

	buf[0] = 0;
	if (o && o->type == XPATH_STRING && o->stringval)
		snprintf(buf, len, "%s", (const char *)o->stringval);
	xmlXPathFreeObject(o);
}

static double xpath_num(xmlXPathContextPtr ctx, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	double v = o && o->type == XPATH_NUMBER ? o->floatval : 0;

	xmlXPathFreeObject(o);
	return v;
}

/* What the live XML says: the opt-in, the pod key, whether our metadata
 * is there, the disks. */
static int read_xml(virDomainPtr d, struct cl_migrate_dom *out, struct vmact_err *err)
{
	_cleanup_free_ char *xml = virDomainGetXMLDesc(d, 0);
	_cleanup_(mig_doc_freep) xmlDocPtr doc = NULL;
	_cleanup_(mig_ctx_freep) xmlXPathContextPtr ctx = NULL;
	char v[128];

	if (!xml)
		return vmact_err_set(err, EIO, "domain %s: its XML: %s", out->name, virt_msg());
	doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL,
			    XML_PARSE_NONET | XML_PARSE_NOBLANKS);
	if (!doc || !(ctx = xmlXPathNewContext(doc)))
		return vmact_err_set(err, EIO, "domain %s: its XML does not parse", out->name);
	if (xmlXPathRegisterNs(ctx, BAD_CAST "v", BAD_CAST VMACT_NS) < 0 ||
	    xmlXPathRegisterNs(ctx, BAD_CAST "cl", BAD_CAST CL_DOMXML_NS) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	xpath_str(ctx, "string(/domain/metadata/v:autoscaling/v:migration/@enabled)", v, sizeof(v));
	out->opted_in = !strcmp(v, "true");
	out->ours = xpath_num(ctx, "count(/domain/metadata/cl:*)") > 0;
	out->has_disks = xpath_num(ctx, "count(/domain/devices/disk[source])") > 0 ||
			 xpath_num(ctx, "count(/domain/devices/filesystem[source])") > 0;
	xpath_str(ctx, "string(/domain/metadata/v:autoscaling/v:pod/@namespace)", out->pod_ns,
		  sizeof(out->pod_ns));
	xpath_str(ctx, "string(/domain/metadata/v:autoscaling/v:pod/@name)", out->pod_name,
		  sizeof(out->pod_name));
	if (!out->pod_ns[0] || !out->pod_name[0]) {
		/* vmactd's runner's own key (doc/domain.md). */
		snprintf(out->pod_ns, sizeof(out->pod_ns), "default");
		snprintf(out->pod_name, sizeof(out->pod_name), "%.*s", VMACT_LEASE_NAME_MAX,
			 out->name);
	}
	return 0;
}

int cl_migrate_inspect(virConnectPtr c, const char *name, struct cl_migrate_dom *out,
		       struct vmact_err *err)
{
	_cleanup_(mig_dom_freep) virDomainPtr d = virDomainLookupByName(c, name);
	virDomainInfo info;
	int state = 0, reason = 0, vcpus;

	memset(out, 0, sizeof(*out));
	if (!d) {
		virErrorPtr e = virGetLastError();

		if (e && e->code == VIR_ERR_NO_DOMAIN)
			return vmact_err_set(err, ENOENT, "no domain %s", name);
		return vmact_err_set(err, EIO, "domain %s: %s", name, virt_msg());
	}
	snprintf(out->name, sizeof(out->name), "%s", name);
	if (virDomainGetUUIDString(d, out->uuid) < 0 ||
	    virDomainGetState(d, &state, &reason, 0) < 0)
		return vmact_err_set(err, EIO, "domain %s: %s", name, virt_msg());
	if (state != VIR_DOMAIN_RUNNING)
		return vmact_err_set(err, ESRCH, "domain %s does not run", name);
	out->persistent = virDomainIsPersistent(d) == 1;
	vcpus = virDomainGetVcpusFlags(d, VIR_DOMAIN_AFFECT_LIVE);
	if (vcpus <= 0 || virDomainGetInfo(d, &info) < 0)
		return vmact_err_set(err, EIO, "domain %s: its size: %s", name, virt_msg());
	out->size.milli_cpu = (uint32_t)vcpus * 1000;
	out->size.mem_bytes = (uint64_t)info.memory * 1024;
	return read_xml(d, out, err);
}

int cl_migrate_list(virConnectPtr c, void (*fn)(void *ud, const struct cl_migrate_dom *d), void *ud,
		    struct vmact_err *err)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(c, &doms, VIR_CONNECT_LIST_DOMAINS_RUNNING);

	if (n < 0)
		return vmact_err_set(err, EIO, "listing the domains: %s", virt_msg());
	for (int i = 0; i < n; i++) {
		struct cl_migrate_dom d;
		struct vmact_err e = { 0 };
		const char *name = virDomainGetName(doms[i]);

		if (name && cl_migrate_inspect(c, name, &d, &e) == 0)
			fn(ud, &d);
		virDomainFree(doms[i]);
	}
	free(doms);
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The finished job's figures, as the destination (else the source) has
 * them. */
static void job_stats(virDomainPtr moved, virDomainPtr src, struct cl_migrate_result *res)
{
	virDomainPtr at[] = { moved, src };

	res->downtime_ms = -1;
	for (size_t i = 0; i < ARRAY_SIZE(at); i++) {
		virTypedParameterPtr p = NULL;
		int n = 0, type = 0;
		unsigned long long v;

		if (!at[i] || virDomainGetJobStats(at[i], &type, &p, &n,
						   VIR_DOMAIN_JOB_STATS_COMPLETED) < 0) {
			virResetLastError();
			continue;
		}
		if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_DOWNTIME, &v) == 1)
			res->downtime_ms = (int64_t)v;
		if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_MEMORY_PROCESSED, &v) == 1)
			res->bytes = v;
		virTypedParamsFree(p, n);
		if (res->downtime_ms >= 0)
			return;
	}
}

/* Whether path lies under dir ("dir/..."). */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return n && !strncmp(path, dir, n) && path[n] == '/';
}

char *cl_migrate_rewrite_xml(const char *xml, const struct cl_migrate_disks *k, bool live,
			     struct vmact_err *err)
{
	_cleanup_(mig_doc_freep) xmlDocPtr doc = NULL;
	_cleanup_(mig_ctx_freep) xmlXPathContextPtr ctx = NULL;
	xmlXPathObjectPtr o;
	xmlChar *out = NULL;
	int len = 0;
	char *r;

	doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
	if (!doc || !(ctx = xmlXPathNewContext(doc))) {
		vmact_err_set(err, EINVAL, "the domain's XML does not parse");
		return NULL;
	}
	o = xmlXPathEvalExpression(BAD_CAST "/domain/devices/disk/source", ctx);
	for (int i = 0; o && o->nodesetval && i < o->nodesetval->nodeNr; i++) {
		xmlNodePtr s = o->nodesetval->nodeTab[i];
		xmlChar *type = xmlGetProp(s->parent, BAD_CAST "type");
		xmlChar *pool = xmlGetProp(s, BAD_CAST "pool");
		xmlChar *vol = xmlGetProp(s, BAD_CAST "volume");
		xmlChar *file = xmlGetProp(s, BAD_CAST "file");
		bool of_pool = type && !strcmp((const char *)type, "volume") && pool &&
			       !strcmp((const char *)pool, k->from_pool);
		bool moved = (of_pool && vol && !strcmp((const char *)vol, k->volume)) ||
			     (type && !strcmp((const char *)type, "file") && file &&
			      k->from_volume_path &&
			      !strcmp((const char *)file, k->from_volume_path));

		if (moved) {
			xmlUnsetProp(s, BAD_CAST "pool");
			xmlUnsetProp(s, BAD_CAST "volume");
			xmlUnsetProp(s, BAD_CAST "file");
			xmlSetProp(s->parent, BAD_CAST "type", BAD_CAST(live ? "file" : "volume"));
			if (live) {
				xmlSetProp(s, BAD_CAST "file", BAD_CAST k->volume_path);
			} else {
				xmlSetProp(s, BAD_CAST "pool", BAD_CAST k->to_pool);
				xmlSetProp(s, BAD_CAST "volume", BAD_CAST k->volume);
			}
		} else if (of_pool) {
			xmlSetProp(s, BAD_CAST "pool", BAD_CAST k->to_pool);
		}
		xmlFree(file);
		xmlFree(vol);
		xmlFree(pool);
		xmlFree(type);
	}
	xmlXPathFreeObject(o);
	o = xmlXPathEvalExpression(BAD_CAST "/domain/devices/channel[@type='unix']/source[@path]",
				   ctx);
	for (int i = 0; o && o->nodesetval && i < o->nodesetval->nodeNr; i++) {
		xmlNodePtr s = o->nodesetval->nodeTab[i];
		xmlChar *path = xmlGetProp(s, BAD_CAST "path");
		char *moved = NULL;

		if (path && k->from_channel_dir && strcmp(k->from_channel_dir, k->to_channel_dir) &&
		    under((const char *)path, k->from_channel_dir)) {
			if (!k->to_channel_dir[0])
				xmlUnsetProp(s, BAD_CAST "path");
			else if (asprintf(&moved, "%s%s", k->to_channel_dir,
					  (const char *)path + strlen(k->from_channel_dir)) >= 0)
				xmlSetProp(s, BAD_CAST "path", BAD_CAST moved);
		}
		free(moved);
		xmlFree(path);
	}
	xmlXPathFreeObject(o);
	xmlDocDumpMemory(doc, &out, &len);
	if (!out) {
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	r = strndup((const char *)out, (size_t)len);
	xmlFree(out);
	if (!r)
		vmact_err_set(err, ENOMEM, "out of memory");
	return r;
}

/* The definitions the target takes (live, and persistent when the domain
 * is): the source's, rewritten for the target's pool and directories. */
static int disk_params(virDomainPtr d, bool persistent, const struct cl_migrate_disks *k,
		       virTypedParameterPtr *params, int *n, int *max, struct vmact_err *err)
{
	static const unsigned what[] = { VIR_DOMAIN_XML_MIGRATABLE | VIR_DOMAIN_XML_SECURE,
					 VIR_DOMAIN_XML_MIGRATABLE | VIR_DOMAIN_XML_SECURE |
						 VIR_DOMAIN_XML_INACTIVE };
	static const char *const param[] = { VIR_MIGRATE_PARAM_DEST_XML,
					     VIR_MIGRATE_PARAM_PERSIST_XML };

	for (size_t i = 0; i < (persistent ? 2u : 1u); i++) {
		_cleanup_free_ char *xml = virDomainGetXMLDesc(d, what[i]);
		_cleanup_free_ char *to = NULL;

		if (!xml)
			return vmact_err_set(err, EIO, "its definition: %s", virt_msg());
		if (!(to = cl_migrate_rewrite_xml(xml, k, i == 0, err)))
			return -err->code;
		if (virTypedParamsAddString(params, n, max, param[i], to) < 0)
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* The watch over a move while its call runs (cl_migrate_live, "stuck"):
 * on its own thread, through the same connections (libvirt's are shared
 * between threads). */
#define WEDGE_POLL_S 2

enum stuck { NOT_STUCK, STUCK_PAUSED, STUCK_RUNNING };

struct wedge_watch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done; /* the call returned */
	virConnectPtr src, dst;
	const char *name;
	bool may_stop; /* a group's VM */
	bool paused;   /* it paused the VM (STUCK_RUNNING) */
	bool stopped;  /* it stopped the VM (STUCK_PAUSED) */
	char what[320];
};

/* How the move looks now: libvirt's job on src going on with its bytes at
 * *processed (updated; *moved when they changed), no domain of the name
 * on dst, the VM paused by the move or running. */
static enum stuck stuck_now(struct wedge_watch *w, unsigned long long *processed, bool *moved)
{
	_cleanup_(mig_dom_freep) virDomainPtr s = virDomainLookupByName(w->src, w->name);
	_cleanup_(mig_dom_freep) virDomainPtr d = NULL;
	virTypedParameterPtr p = NULL;
	unsigned long long v = 0;
	int state = 0, reason = 0, type = 0, n = 0;
	enum stuck k;

	*moved = false;
	if (!s || virDomainGetState(s, &state, &reason, 0) < 0) {
		virResetLastError();
		return NOT_STUCK;
	}
	if (state == VIR_DOMAIN_PAUSED && reason == VIR_DOMAIN_PAUSED_MIGRATION)
		k = STUCK_PAUSED;
	else if (state == VIR_DOMAIN_RUNNING)
		k = STUCK_RUNNING;
	else
		return NOT_STUCK;
	if (virDomainGetJobStats(s, &type, &p, &n, 0) < 0 || type != VIR_DOMAIN_JOB_UNBOUNDED) {
		virResetLastError();
		virTypedParamsFree(p, n);
		return NOT_STUCK;
	}
	if (virTypedParamsGetULLong(p, n, VIR_DOMAIN_JOB_DATA_PROCESSED, &v) != 1)
		v = 0;
	virTypedParamsFree(p, n);
	*moved = v != *processed;
	*processed = v;
	d = virDomainLookupByName(w->dst, w->name);
	if (d)
		return NOT_STUCK;
	if (!virGetLastError() || virGetLastError()->code != VIR_ERR_NO_DOMAIN)
		k = NOT_STUCK;
	virResetLastError();
	return k;
}

/* Ends a stuck move: the VM paused where libvirt waits for a pause that
 * never comes, or stopped where QEMU never ends its migration. */
static void unstick(struct wedge_watch *w, enum stuck k, unsigned long long processed)
{
	_cleanup_(mig_dom_freep) virDomainPtr s = virDomainLookupByName(w->src, w->name);

	if (!s) {
		virResetLastError();
		return;
	}
	if (k == STUCK_RUNNING) {
		snprintf(w->what, sizeof(w->what),
			 "running, no copy on the target and no byte sent (%llu) for %d s: libvirt "
			 "waited for a pause that never came after the move was cancelled at its "
			 "switch-over; the guest was paused for a moment to end it",
			 processed, CL_MIGRATE_WEDGE_S);
		w->paused = virDomainSuspend(s) == 0;
	} else {
		snprintf(w->what, sizeof(w->what),
			 "paused by the move, no copy on the target and no byte sent (%llu) for "
			 "%d s: QEMU 7.2 never ends a migration cancelled as the guest paused "
			 "for its switch-over; the VM was stopped on the source",
			 processed, CL_MIGRATE_WEDGE_S);
		/* The call returns once QEMU is gone. libvirt may answer the
		 * destroy with the move's own failure ("domain is not
		 * running": the killed QEMU ended the job first): what counts
		 * is that it runs no more. */
		if (virDomainDestroy(s) < 0)
			virResetLastError();
		w->stopped = virDomainIsActive(s) == 0;
	}
	virResetLastError();
}

static void *wedge_run(void *arg)
{
	struct wedge_watch *w = arg;
	unsigned long long processed = 0;
	enum stuck was = NOT_STUCK;
	double since = 0;

	pthread_mutex_lock(&w->lock);
	while (!w->done) {
		struct timespec at;
		enum stuck k;
		bool moved;

		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += WEDGE_POLL_S;
		if (pthread_cond_timedwait(&w->cond, &w->lock, &at) == 0 && w->done)
			break;
		pthread_mutex_unlock(&w->lock);
		k = stuck_now(w, &processed, &moved);
		if (k == NOT_STUCK || moved) {
			since = 0;
		} else if (k != was || !since) {
			since = mono_s();
		} else if (mono_s() - since >= CL_MIGRATE_WEDGE_S &&
			   (k == STUCK_RUNNING || w->may_stop)) {
			/* Once done, the call's end is waited for; refused, tried
			 * again after as long. */
			unstick(w, k, processed);
			since = 0;
			if (w->paused || w->stopped) {
				pthread_mutex_lock(&w->lock);
				while (!w->done)
					pthread_cond_wait(&w->cond, &w->lock);
				break;
			}
		}
		was = k;
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int cl_migrate_live(virConnectPtr src, virConnectPtr dst, const char *name,
		    const struct cl_host_cfg *to, const struct cl_migrate_disks *disks,
		    struct cl_migrate_result *res, struct vmact_err *err)
{
	_cleanup_(mig_dom_freep) virDomainPtr d = virDomainLookupByName(src, name);
	_cleanup_(mig_dom_freep) virDomainPtr moved = NULL;
	virTypedParameterPtr params = NULL;
	struct wedge_watch ww = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char why[VMACT_ERR_MSG_MAX];
	bool watching = false;
	pthread_t wt;
	int n = 0, max = 0, r = 0;
	unsigned flags = VIR_MIGRATE_LIVE | VIR_MIGRATE_ABORT_ON_ERROR | VIR_MIGRATE_AUTO_CONVERGE;
	char uri[300];
	double t0;

	memset(res, 0, sizeof(*res));
	res->downtime_ms = -1;
	if (!d)
		return vmact_err_set(err, ENOENT, "domain %s: %s", name, virt_msg());
	if (!to->migration_address[0])
		return vmact_err_set(err, EINVAL,
				     "host %s takes no moved VMs (no migration.address)", to->name);
	/* A persistent domain's definition moves with it; a transient one
	 * stays transient on the target. */
	if (virDomainIsPersistent(d) == 1)
		flags |= VIR_MIGRATE_PERSIST_DEST | VIR_MIGRATE_UNDEFINE_SOURCE;
	if (disks) {
		flags |= VIR_MIGRATE_NON_SHARED_INC;
		if (disk_params(d, virDomainIsPersistent(d) == 1, disks, &params, &n, &max, err) <
		    0) {
			virTypedParamsFree(params, n);
			return -err->code;
		}
	}
	/* An IPv6 literal goes into the URI in brackets. */
	if (strchr(to->migration_address, ':') && to->migration_address[0] != '[')
		snprintf(uri, sizeof(uri), "tcp://[%s]", to->migration_address);
	else
		snprintf(uri, sizeof(uri), "tcp://%s", to->migration_address);
	if (virTypedParamsAddString(&params, &n, &max, VIR_MIGRATE_PARAM_URI, uri) < 0 ||
	    virTypedParamsAddString(&params, &n, &max, VIR_MIGRATE_PARAM_LISTEN_ADDRESS,
				    to->migration_address) < 0 ||
	    (to->migration_bandwidth_mib_s &&
	     virTypedParamsAddULLong(&params, &n, &max, VIR_MIGRATE_PARAM_BANDWIDTH,
				     to->migration_bandwidth_mib_s) < 0)) {
		virTypedParamsFree(params, n);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ww.cond, &ca);
		pthread_condattr_destroy(&ca);
		ww.src = src;
		ww.dst = dst;
		ww.name = name;
		ww.may_stop = disks != NULL;
		watching = pthread_create(&wt, NULL, wedge_run, &ww) == 0;
	}
	t0 = mono_s();
	moved = virDomainMigrate3(d, dst, params, (unsigned)n, flags);
	res->seconds = mono_s() - t0;
	virTypedParamsFree(params, n);
	if (!moved)
		snprintf(why, sizeof(why), "%s", virt_msg());
	if (watching) {
		pthread_mutex_lock(&ww.lock);
		ww.done = true;
		pthread_cond_signal(&ww.cond);
		pthread_mutex_unlock(&ww.lock);
		pthread_join(wt, NULL);
	}
	pthread_cond_destroy(&ww.cond);
	if (ww.paused) {
		/* libvirt resumes a guest whose move failed as it found it;
		 * one it left paused runs on here. */
		int state = 0, reason = 0;

		if (virDomainGetState(d, &state, &reason, 0) == 0 && state == VIR_DOMAIN_PAUSED &&
		    virDomainResume(d) < 0)
			virResetLastError();
	}
	/* What ended the call, rather than how libvirt's job ended then. */
	if (!moved && (ww.paused || ww.stopped))
		r = vmact_err_set(err, EIO, "moving %s to %s: the move stuck (%s)", name, to->name,
				  ww.what);
	else if (!moved)
		r = vmact_err_set(err, EIO, "moving %s to %s: %s", name, to->name, why);
	if (moved)
		job_stats(moved, d, res);
	return r;
}

int cl_migrate_settle(virConnectPtr src, virConnectPtr dst, const char *name, struct vmact_err *err)
{
	_cleanup_(mig_dom_freep) virDomainPtr d = NULL, s = NULL;
	int state = 0, reason = 0;

	if (!src || !dst)
		return vmact_err_set(err, EAGAIN, "a daemon cannot be reached");
	d = virDomainLookupByName(dst, name);
	if (!d) {
		virErrorPtr e = virGetLastError();

		if (e && e->code == VIR_ERR_NO_DOMAIN)
			return 0;
		return vmact_err_set(err, EAGAIN, "domain %s at the target: %s", name, virt_msg());
	}
	if (virDomainGetState(d, &state, &reason, 0) < 0)
		return vmact_err_set(err, EAGAIN, "domain %s at the target: %s", name, virt_msg());
	if (state != VIR_DOMAIN_RUNNING)
		return 0;
	/* It runs at the target: a copy left at the source (inactive, or
	 * paused after a move nobody confirmed) goes, its definition with it
	 * when the target's is persistent. */
	s = virDomainLookupByName(src, name);
	if (!s) {
		virResetLastError();
		return 1;
	}
	if (virDomainIsActive(s) == 1 && virDomainDestroy(s) < 0)
		return vmact_err_set(err, EAGAIN, "domain %s left at the source: %s", name,
				     virt_msg());
	if (virDomainIsPersistent(s) != 1)
		return 1;
	/* The target's copy runs transient (its half of the move never
	 * persisted it, its daemon or ours gone meanwhile): the definition
	 * moves to it first, as PERSIST_DEST would have moved it, so that
	 * removing the source's leaves the VM defined. */
	if (virDomainIsPersistent(d) != 1) {
		_cleanup_free_ char *xml = virDomainGetXMLDesc(s, VIR_DOMAIN_XML_INACTIVE |
									  VIR_DOMAIN_XML_SECURE);
		virDomainPtr nd = xml ? virDomainDefineXML(dst, xml) : NULL;

		if (!nd)
			return vmact_err_set(err, EAGAIN, "defining %s at the target: %s", name,
					     virt_msg());
		virDomainFree(nd);
	}
	if (virDomainUndefineFlags(s, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE) < 0)
		return vmact_err_set(err, EAGAIN, "domain %s left at the source: %s", name,
				     virt_msg());
	return 1;
}

/* Paused by a migration, with no job under way: libvirt gave it up. */
static bool orphaned(virDomainPtr d)
{
	virDomainJobInfo job;
	int state = 0, reason = 0;

	if (virDomainGetState(d, &state, &reason, 0) < 0 || state != VIR_DOMAIN_PAUSED ||
	    reason != VIR_DOMAIN_PAUSED_MIGRATION)
		return false;
	if (virDomainGetJobInfo(d, &job) < 0) {
		virResetLastError();
		return false;
	}
	return job.type == VIR_DOMAIN_JOB_NONE;
}

int cl_migrate_list_orphans(virConnectPtr c, void (*fn)(void *ud, const struct cl_migrate_dom *d),
			    void *ud, struct vmact_err *err)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(c, &doms, VIR_CONNECT_LIST_DOMAINS_PAUSED);

	if (n < 0)
		return vmact_err_set(err, EIO, "listing the domains: %s", virt_msg());
	for (int i = 0; i < n; i++) {
		struct cl_migrate_dom d = { 0 };
		struct vmact_err e = { 0 };
		const char *name = virDomainGetName(doms[i]);

		if (name && orphaned(doms[i])) {
			snprintf(d.name, sizeof(d.name), "%s", name);
			if (virDomainGetUUIDString(doms[i], d.uuid) == 0 &&
			    read_xml(doms[i], &d, &e) == 0 && d.opted_in && !d.ours)
				fn(ud, &d);
		}
		virResetLastError();
		virDomainFree(doms[i]);
	}
	free(doms);
	return 0;
}

int cl_migrate_recover(virConnectPtr here, virConnectPtr *others, const char *const *other_names,
		       size_t n, const char *name, const char **ran_at, struct vmact_err *err)
{
	_cleanup_(mig_dom_freep) virDomainPtr d = NULL;

	*ran_at = NULL;
	for (size_t i = 0; i < n; i++) {
		int r = cl_migrate_settle(here, others[i], name, err);

		if (r < 0)
			return r;
		if (r == 1) {
			*ran_at = other_names[i];
			return 1;
		}
	}
	/* Runs nowhere else: this copy is the VM. */
	d = virDomainLookupByName(here, name);
	if (!d || !orphaned(d))
		return vmact_err_set(err, EAGAIN, "domain %s changed meanwhile", name);
	if (virDomainResume(d) < 0)
		return vmact_err_set(err, EAGAIN, "resuming %s: %s", name, virt_msg());
	return 0;
}
