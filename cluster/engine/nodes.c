/* SPDX-License-Identifier: Apache-2.0 */
/* The groups' Nodes in the cluster's API server (the configuration's
 * "kubernetes"; doc/cluster.md, "Nodes in the API server" and "The
 * template node"): whether a member in service registered its Node, and
 * what its kubelet reports, which the template node cluster-autoscaler
 * simulates on must match.
 *
 * A member in service is looked up by name (its Node's name is the VM's,
 * its spec.providerID the VM's) until its Node is there; one that has none
 * by the autoscaler's max_node_provision_time (the group's option, else
 * the autoscaler's default 15 minutes) is reported with the error
 * NOT_REGISTERED in its node's status, cleared if it registers later.
 *
 * What the nodes report is estimated from the template until one of them
 * has: the boot vCPUs and memory, the node image's disk as its ephemeral
 * storage, and for allocatable the kubelet's default hard eviction
 * thresholds taken off. The estimate cannot know what the guest's kernel
 * keeps of its memory or what the root filesystem keeps of its disk: the
 * first member found registered gives what its kubelet reported, which
 * stands for as long as the template stays what it was for that Node.
 * Reports are kept in the state directory, so that a group scaled to zero
 * keeps its shape through a restart.
 *
 * Nodes left behind: at start-up and every RECONCILE_USEC, every Node whose
 * spec.providerID names one of the configured hosts and a domain that
 * host's libvirt does not have is deleted, as a cloud's controller manager
 * deletes the Node of an instance that no longer exists (a vmact-groupd
 * killed between a removal and its Node's deletion, a VM undefined by
 * hand). Only an answer of "no such domain" from a reachable host counts:
 * a host that cannot be asked leaves its Nodes alone, and a domain of any
 * owner keeps its Node. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/time.h"

#include <libvirt/virterror.h>

DEFINE_PTR_CLEANUP(shape_conn_closep, struct _virConnect, virConnectClose)
DEFINE_PTR_CLEANUP(shape_jsonp, json_t, json_decref)

#define SHAPE_FILE "node-shapes.json"
/* A member in service whose Node is not there yet is asked again this
 * soon: its kubelet registers seconds after the claim. */
#define RETRY_USEC (2 * 1000000ULL)
/* An API server or host that failed: asked again after this long. */
#define ERROR_RETRY_USEC (30 * 1000000ULL)
/* At most this many members asked about at once (a restart of
 * vmact-groupd asks about every member in service once). */
#define MAX_ASKING 4
/* cluster-autoscaler's default --max-node-provision-time. */
#define REGISTER_TIMEOUT_S 900.0
/* How often the Nodes are checked for ones whose VM is gone. */
#define RECONCILE_USEC (600 * 1000000ULL)
/* The kubelet's default hard eviction thresholds (memory.available 100Mi,
 * nodefs.available 10 %), which its allocatable leaves out. */
#define EVICTION_MEMORY_BYTES   (100ULL << 20)
#define EVICTION_NODEFS_PERCENT 10

enum shape_kind { SJ_DISK, SJ_NODE };

struct shape_job {
	enum shape_kind kind;
	struct cl_engine *e;
	struct cl_group *g;
	struct cl_host *host;
	char key[CL_SHAPE_KEY_MAX];
	char name[CL_NAME_MAX], provider_id[160], pool[CL_NAME_MAX], volume[256];
	char uuid[VIR_UUID_STRING_BUFLEN];
	uint64_t disk_bytes;
	struct cl_node_report rep;
	int r;
	struct vmact_err err;
};

static uint64_t fnv(uint64_t h, const char *text)
{
	for (const char *p = text; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
	return (h ^ '|') * 0x100000001b3ULL;
}

/* What of the template a kubelet's report depends on: the boot shape and
 * the image (its kernel's and its filesystem's share). FNV-1a, as text. */
void cl_shape_key(const struct cl_template *t, char *buf, size_t len)
{
	char shape[64];
	uint64_t h = 0xcbf29ce484222325ULL;

	snprintf(shape, sizeof(shape), "%u|%llu", t->vcpus, (unsigned long long)t->memory);
	h = fnv(fnv(fnv(fnv(fnv(h, shape), t->base_volume), t->kernel), t->initrd), t->cmdline);
	snprintf(buf, len, "%016llx", (unsigned long long)h);
}

static bool current(const struct cl_group *g)
{
	char key[CL_SHAPE_KEY_MAX];

	cl_shape_key(&g->cfg->tpl, key, sizeof(key));
	return strcmp(key, g->shape.key) == 0;
}

void cl_nodes_view(const struct cl_group *g, struct cl_engine_group_view *v)
{
	const struct cl_template *t = &g->cfg->tpl;
	struct cl_node_resources *c = &v->node.capacity, *a = &v->node.allocatable;

	if (current(g) && g->shape.reported) {
		v->node = g->shape.rep;
		v->node_reported_by = g->shape.node;
		return;
	}
	v->node_reported_by = NULL;
	c->milli_cpu = (uint64_t)t->vcpus * 1000;
	c->memory = t->memory;
	c->pods = t->pods;
	c->ephemeral = t->ephemeral_storage;
	if (!c->ephemeral && current(g))
		c->ephemeral = g->shape.disk_bytes;
	*a = *c;
	a->memory = c->memory > EVICTION_MEMORY_BYTES ? c->memory - EVICTION_MEMORY_BYTES : 0;
	a->ephemeral = c->ephemeral - c->ephemeral * EVICTION_NODEFS_PERCENT / 100;
}

/* ---- the state directory ---- */

static json_t *resources_json(const struct cl_node_resources *r)
{
	return json_pack("{sI sI sI sI}", "milli_cpu", (json_int_t)r->milli_cpu, "memory",
			 (json_int_t)r->memory, "ephemeral", (json_int_t)r->ephemeral, "pods",
			 (json_int_t)r->pods);
}

static bool resources_read(const json_t *o, struct cl_node_resources *r)
{
	json_int_t cpu, mem, eph, pods;

	if (json_unpack((json_t *)o, "{sI sI sI sI}", "milli_cpu", &cpu, "memory", &mem,
			"ephemeral", &eph, "pods", &pods) < 0 ||
	    cpu <= 0 || mem <= 0 || eph < 0 || pods <= 0)
		return false;
	*r = (struct cl_node_resources){ (uint64_t)cpu, (uint64_t)mem, (uint64_t)eph,
					 (uint64_t)pods };
	return true;
}

static int shape_save(struct cl_engine *e, struct vmact_err *err)
{
	_cleanup_(shape_jsonp) json_t *doc = json_object(), *groups = json_object();
	_cleanup_free_ char *path = NULL, *tmp = NULL;
	int fd, r = 0;

	if (!e->state_dir[0])
		return 0;
	if (!doc || !groups)
		return vmact_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < e->n_groups; i++) {
		const struct cl_shape *s = &e->groups[i].shape;
		json_t *o;

		if (!s->key[0])
			continue;
		o = json_pack("{ss sI}", "template", s->key, "disk_bytes",
			      (json_int_t)s->disk_bytes);
		if (o && s->reported)
			json_object_set_new(o, "reported",
					    json_pack("{ss sf so so}", "node", s->node, "at", s->at,
						      "capacity", resources_json(&s->rep.capacity),
						      "allocatable",
						      resources_json(&s->rep.allocatable)));
		if (!o || json_object_set_new(groups, e->groups[i].cfg->id, o) < 0)
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	json_object_set_new(doc, "version", json_integer(1));
	json_object_set(doc, "groups", groups);
	if (asprintf(&path, "%s/" SHAPE_FILE, e->state_dir) < 0 ||
	    asprintf(&tmp, "%s/." SHAPE_FILE ".tmp", e->state_dir) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return vmact_err_set(err, errno, "%s: %m", tmp);
	if (json_dumpfd(doc, fd, JSON_INDENT(1) | JSON_SORT_KEYS) < 0 || write(fd, "\n", 1) != 1)
		r = vmact_err_set(err, EIO, "%s: could not write", tmp);
	else if (fsync(fd) < 0)
		r = vmact_err_set(err, errno, "%s: %m", tmp);
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = vmact_err_set(err, errno, "%s: %m", path);
	if (r < 0)
		unlink(tmp);
	return r;
}

int cl_engine_load_shapes(struct cl_engine *e, const char *dir, struct vmact_err *err)
{
	_cleanup_(shape_jsonp) json_t *doc = NULL;
	_cleanup_free_ char *path = NULL;
	json_error_t jerr;
	const json_t *groups;

	if ((size_t)snprintf(e->state_dir, sizeof(e->state_dir), "%s", dir ? dir : "") >=
	    sizeof(e->state_dir)) {
		e->state_dir[0] = 0;
		return vmact_err_set(err, ENAMETOOLONG, "state directory %s: name too long", dir);
	}
	if (!e->state_dir[0])
		return 0;
	if (asprintf(&path, "%s/" SHAPE_FILE, dir) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return vmact_err_set(err, EINVAL, "%s: line %d: %s", path, jerr.line, jerr.text);
	groups = json_object_get(doc, "groups");
	if (json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_object(groups))
		return vmact_err_set(err, EINVAL, "%s: not a version 1 file of node shapes", path);
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_shape *s = &e->groups[i].shape;
		const json_t *o = json_object_get(groups, e->groups[i].cfg->id), *rep;
		const char *key = json_string_value(json_object_get(o, "template"));
		json_int_t disk = json_integer_value(json_object_get(o, "disk_bytes"));
		const char *node;

		/* What was seen for another template says nothing of this one. */
		cl_shape_key(&e->groups[i].cfg->tpl, s->key, sizeof(s->key));
		if (!key || strcmp(key, s->key) != 0)
			continue;
		s->disk_bytes = disk > 0 ? (uint64_t)disk : 0;
		rep = json_object_get(o, "reported");
		node = json_string_value(json_object_get(rep, "node"));
		if (rep && node && strlen(node) < sizeof(s->node) &&
		    resources_read(json_object_get(rep, "capacity"), &s->rep.capacity) &&
		    resources_read(json_object_get(rep, "allocatable"), &s->rep.allocatable)) {
			snprintf(s->node, sizeof(s->node), "%s", node);
			s->at = json_real_value(json_object_get(rep, "at"));
			s->reported = true;
		}
	}
	return 0;
}

/* ---- asking ---- */

static void job_run(void *data)
{
	struct shape_job *j = data;
	_cleanup_(shape_conn_closep) virConnectPtr c = NULL;

	if (cl_jobs_stopping(j->e->jobs))
		return;
	if (j->kind == SJ_NODE) {
		j->r = cl_node_api_report(&j->e->cfg->kube, j->name, j->provider_id, &j->rep,
					  &j->err);
		return;
	}
	c = cl_host_conn(j->host, &j->err);
	j->r = c ? cl_virt_volume_capacity(c, j->pool, j->volume, &j->disk_bytes, &j->err) : -EIO;
}

static struct cl_vm *find_vm(struct cl_group *g, const char *uuid)
{
	struct cl_vm *vm;

	VMACT_LIST_FOREACH(vms, vm, g->vms)
		if (!strcmp(vm->uuid, uuid))
			return vm;
	return NULL;
}

static double register_timeout_s(const struct cl_group *g)
{
	const json_t *v = json_object_get(g->cfg->options, "max_node_provision_time_s");

	return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v)
							     : REGISTER_TIMEOUT_S;
}

static bool not_registered_reported(const struct cl_vm *vm)
{
	return vm->meta.has_error && !strcmp(vm->meta.err_code, "NOT_REGISTERED");
}

static void error_recorded(struct cl_vm *vm, int r, const char *err)
{
	if (r < 0)
		cl_vm_emit(vm->g->e, LOG_WARNING, vm, "could not record its error: %s", err);
	cl_vm_kick(vm->g->e);
}

/* A member's Node found, or not: its error set or cleared. */
static void member_seen(struct cl_vm *vm, bool registered, uint64_t now)
{
	double secs = cl_vm_now_real() - vm->meta.in_service;

	if (registered) {
		vm->node_registered = true;
		if (not_registered_reported(vm)) {
			vm->meta.has_error = false;
			cl_vm_emit(vm->g->e, LOG_INFO, vm,
				   "its Node registered %.0f s after its claim: its error cleared",
				   secs);
			if (!vm->busy)
				cl_vm_record(vm, error_recorded);
		}
		return;
	}
	vm->next_node_usec = now + RETRY_USEC;
	if (vm->meta.in_service <= 0 || secs < register_timeout_s(vm->g) ||
	    not_registered_reported(vm) || vm->meta.has_error || vm->busy)
		return;
	vm->g->c.failures[CL_FAIL_NOT_REGISTERED]++;
	vm->meta.has_error = true;
	snprintf(vm->meta.err_class, sizeof(vm->meta.err_class), "other");
	snprintf(vm->meta.err_code, sizeof(vm->meta.err_code), "NOT_REGISTERED");
	snprintf(vm->meta.err_msg, sizeof(vm->meta.err_msg),
		 "no Node named %s with its providerID %.0f s after its claim", vm->name, secs);
	vm->meta.err_at = cl_vm_now_real();
	cl_vm_emit(vm->g->e, LOG_WARNING, vm, "%s: reported, left in service", vm->meta.err_msg);
	cl_vm_record(vm, error_recorded);
}

static void job_done(void *data)
{
	struct shape_job *j = data;
	struct cl_group *g = j->g;
	struct cl_shape *s = &g->shape;
	uint64_t now = vmact_loop_now_usec(j->e->ev);
	struct vmact_err err = { 0 };
	struct cl_vm *vm = NULL;

	if (j->kind == SJ_DISK) {
		g->shape_busy = false;
		g->next_shape_usec = now + (j->r < 0 ? ERROR_RETRY_USEC : 0);
	} else {
		j->e->nodes_asking--;
		vm = find_vm(g, j->uuid);
		if (vm) {
			vm->node_asking = false;
			vm->next_node_usec = now + (j->r < 0 ? ERROR_RETRY_USEC : RETRY_USEC);
		}
	}
	if (cl_jobs_stopping(j->e->jobs)) {
		free(j);
		return;
	}
	if (j->r < 0) {
		/* Said once, not every 30 s: again only when it changes. */
		if (strcmp(s->last_error, j->err.msg) != 0)
			cl_vm_emit(j->e, LOG_WARNING, NULL, "group %s: %s: %s", g->cfg->id,
				   j->kind == SJ_NODE ? "its Nodes" : "its node image's size",
				   j->err.msg);
		snprintf(s->last_error, sizeof(s->last_error), "%s", j->err.msg);
		free(j);
		return;
	}
	s->last_error[0] = 0;
	if (j->kind == SJ_DISK) {
		if (!strcmp(j->key, s->key))
			s->disk_bytes = j->disk_bytes;
	} else {
		if (vm && vm->g == g && cl_vm_is_member(vm) && vm->meta.state == CL_ST_CLAIMED)
			member_seen(vm, j->r == 1, now);
		/* What it reported is the group's, if it is of the template
		 * the group has now. */
		if (j->r != 1 || s->reported || strcmp(j->key, s->key) != 0) {
			free(j);
			return;
		}
		s->rep = j->rep;
		s->reported = true;
		s->at = cl_vm_now_real();
		snprintf(s->node, sizeof(s->node), "%s", j->name);
		cl_vm_emit(j->e, LOG_INFO, NULL,
			   "group %s: its template node now says what Node %s's kubelet reports "
			   "(memory %llu of %llu bytes allocatable, ephemeral storage %llu of %llu)",
			   g->cfg->id, j->name, (unsigned long long)s->rep.allocatable.memory,
			   (unsigned long long)s->rep.capacity.memory,
			   (unsigned long long)s->rep.allocatable.ephemeral,
			   (unsigned long long)s->rep.capacity.ephemeral);
	}
	if (shape_save(j->e, &err) < 0)
		cl_vm_emit(j->e, LOG_WARNING, NULL, "group %s: node shape not kept: %s", g->cfg->id,
			   err.msg);
	free(j);
}

static int submit(struct cl_engine *e, struct cl_group *g, struct shape_job *j)
{
	j->e = e;
	j->g = g;
	snprintf(j->key, sizeof(j->key), "%s", g->shape.key);
	if (cl_jobs_submit(e->jobs, job_run, job_done, j) < 0) {
		free(j);
		return -ESHUTDOWN;
	}
	return 0;
}

/* The node image's size, for the estimate, once per template. */
static void ask_disk(struct cl_engine *e, struct cl_group *g)
{
	const struct cl_template *t = &g->cfg->tpl;
	struct shape_job *j;
	struct cl_ehost *h;

	if (g->shape.disk_bytes || t->ephemeral_storage || g->cfg->n_hosts == 0 ||
	    !(h = cl_vm_ehost(e, g->cfg->hosts[0])) || !(j = calloc(1, sizeof(*j))))
		return;
	j->kind = SJ_DISK;
	j->host = h->h;
	snprintf(j->pool, sizeof(j->pool), "%s", cl_host_cfg(h->h)->storage_pool);
	snprintf(j->volume, sizeof(j->volume), "%s", t->base_volume);
	g->shape_busy = true;
	if (submit(e, g, j) < 0)
		g->shape_busy = false;
}

/* The Node of each member in service not yet seen registered. */
static void ask_members(struct cl_engine *e, struct cl_group *g, uint64_t now)
{
	struct cl_vm *vm;
	struct shape_job *j;

	VMACT_LIST_FOREACH(vms, vm, g->vms) {
		if (e->nodes_asking >= MAX_ASKING)
			return;
		if (!cl_vm_is_member(vm) || vm->meta.state != CL_ST_CLAIMED || !vm->host[0] ||
		    vm->node_registered || vm->node_asking || now < vm->next_node_usec)
			continue;
		if (!(j = calloc(1, sizeof(*j))))
			return;
		j->kind = SJ_NODE;
		snprintf(j->uuid, sizeof(j->uuid), "%s", vm->uuid);
		snprintf(j->name, sizeof(j->name), "%s", vm->name);
		cl_vm_provider_id(vm, j->provider_id, sizeof(j->provider_id));
		if (submit(e, g, j) < 0)
			return;
		vm->node_asking = true;
		e->nodes_asking++;
	}
}

void cl_nodes_tick(struct cl_engine *e, struct cl_group *g, uint64_t now)
{
	struct cl_shape *s = &g->shape;

	if (!current(g)) {
		/* A new template (or the first): what was seen is forgotten. */
		memset(s, 0, sizeof(*s));
		cl_shape_key(&g->cfg->tpl, s->key, sizeof(s->key));
	}
	if (!g->shape_busy && now >= g->next_shape_usec)
		ask_disk(e, g);
	if (e->cfg->kube.server[0])
		ask_members(e, g, now);
}

/* ---- Nodes left behind ---- */

struct stale {
	char name[CL_NAME_MAX * 2], provider_id[160];
	int r; /* cl_node_api_delete's */
	struct vmact_err err;
};

struct reconcile_job {
	struct cl_engine *e;
	struct stale *v;
	size_t n, cap;
	bool nomem;
	int r;
	struct vmact_err err;
};

/* A Node naming one of the configured hosts: a candidate (its domain is
 * looked for on every host: has_domain). */
static void candidate(void *ud, const char *name, const char *provider_id)
{
	struct reconcile_job *j = ud;
	const char *host = NULL;
	struct stale *s;
	size_t hl;

	if (strncmp(provider_id, "libvirt://", 10) != 0 || strlen(name) >= sizeof(s->name) ||
	    strlen(provider_id) >= sizeof(s->provider_id))
		return;
	hl = strcspn(provider_id + 10, "/");
	for (size_t i = 0; i < j->e->n_hosts && !host; i++) {
		const char *h = cl_host_name(j->e->hosts[i].h);

		if (strlen(h) == hl && !strncmp(h, provider_id + 10, hl))
			host = h;
	}
	if (!host)
		return;
	if (j->n == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		struct stale *v = realloc(j->v, cap * sizeof(*v));

		if (!v) {
			j->nomem = true;
			return;
		}
		j->v = v;
		j->cap = cap;
	}
	s = &j->v[j->n++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->provider_id, sizeof(s->provider_id), "%s", provider_id);
}

/* Whether the domain of a candidate's provider ID is there: 1 a host has
 * it, 0 every host answered that it has none, -1 one could not be asked.
 * Every host is asked, the one the ID names first: a VM that moved keeps
 * the provider ID it was claimed with (a Node's never changes). */
static int has_domain(struct cl_engine *e, const char *provider_id)
{
	const char *hp = provider_id + 10, *uuid = strchr(hp, '/');
	int r = 0;

	if (!uuid)
		return 1;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < e->n_hosts; i++) {
			const char *h = cl_host_name(e->hosts[i].h);
			bool named = strlen(h) == (size_t)(uuid - hp) &&
				     !strncmp(h, hp, (size_t)(uuid - hp));
			_cleanup_(shape_conn_closep) virConnectPtr c = NULL;
			struct vmact_err err = { 0 };
			virDomainPtr d;
			virErrorPtr ve;

			if (named != (pass == 0))
				continue;
			if (!(c = cl_host_conn(e->hosts[i].h, &err))) {
				r = -1;
				continue;
			}
			if ((d = virDomainLookupByUUIDString(c, uuid + 1))) {
				virDomainFree(d);
				return 1;
			}
			ve = virGetLastError();
			if (!ve || ve->code != VIR_ERR_NO_DOMAIN)
				r = -1;
		}
	return r;
}

static void reconcile_run(void *data)
{
	struct reconcile_job *j = data;

	if (cl_jobs_stopping(j->e->jobs))
		return;
	j->r = cl_node_api_list(&j->e->cfg->kube, candidate, j, &j->err);
	for (size_t i = 0; i < j->n; i++) {
		struct stale *s = &j->v[i];

		s->r = has_domain(j->e, s->provider_id);
		if (s->r != 0) {
			s->r = 0;
			continue;
		}
		/* 1: deleted; 0: gone or not this VM's by now. */
		s->r = cl_node_api_delete(&j->e->cfg->kube, s->name, s->provider_id, &s->err);
	}
}

static void reconcile_done(void *data)
{
	struct reconcile_job *j = data;
	struct cl_engine *e = j->e;

	e->nodes_reconciling = false;
	e->next_reconcile_usec = vmact_loop_now_usec(e->ev) + RECONCILE_USEC;
	if (!cl_jobs_stopping(e->jobs)) {
		if (j->r < 0)
			cl_vm_emit(e, LOG_WARNING, NULL, "the Nodes of VMs that are gone: %s",
				   j->err.msg);
		for (size_t i = 0; i < j->n; i++) {
			if (j->v[i].r > 0)
				cl_vm_emit(e, LOG_INFO, NULL,
					   "Node %s: no host has the domain of %s; deleted from the "
					   "API server",
					   j->v[i].name, j->v[i].provider_id);
			else if (j->v[i].r < 0)
				cl_vm_emit(e, LOG_WARNING, NULL,
					   "Node %s: no host has the domain of %s, but: %s",
					   j->v[i].name, j->v[i].provider_id, j->v[i].err.msg);
		}
	}
	free(j->v);
	free(j);
}

void cl_nodes_engine_tick(struct cl_engine *e, uint64_t now)
{
	struct reconcile_job *j;

	if (!e->cfg->kube.server[0] || !e->ready || e->nodes_reconciling ||
	    now < e->next_reconcile_usec || !(j = calloc(1, sizeof(*j))))
		return;
	j->e = e;
	e->nodes_reconciling = true;
	if (cl_jobs_submit(e->jobs, reconcile_run, reconcile_done, j) < 0) {
		e->nodes_reconciling = false;
		free(j);
	}
}
