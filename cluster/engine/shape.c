/* SPDX-License-Identifier: Apache-2.0 */
/* What a group's nodes look like to Kubernetes (doc/cluster.md, "The
 * template node"): the resources a node's kubelet reports, which the
 * template node cluster-autoscaler simulates on must match.
 *
 * Until one of the group's VMs has a registered Node they are estimated
 * from the template as a kubelet with its defaults would report them: the
 * boot vCPUs and memory, the node image's disk as its ephemeral storage,
 * and for allocatable the kubelet's default hard eviction thresholds taken
 * off. The estimate cannot know what the guest's kernel keeps of its
 * memory or what the root filesystem keeps of its disk: once a member in
 * service has a Node (its spec.providerID the member's), what its kubelet
 * reported replaces the estimate, for as long as the template stays what
 * it was for that Node. Reports are kept in the state directory, so that a
 * group scaled to zero keeps its shape through a restart. */
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

DEFINE_PTR_CLEANUP(shape_conn_closep, struct _virConnect, virConnectClose)
DEFINE_PTR_CLEANUP(shape_jsonp, json_t, json_decref)

#define SHAPE_FILE "node-shapes.json"
/* A member in service whose Node is not there yet is asked again this
 * soon: its kubelet registers seconds after the claim. */
#define RETRY_USEC (2 * 1000000ULL)
/* An API server or host that failed: asked again after this long. */
#define ERROR_RETRY_USEC (30 * 1000000ULL)
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

void cl_shape_view(const struct cl_group *g, struct cl_engine_group_view *v)
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

static void job_done(void *data)
{
	struct shape_job *j = data;
	struct cl_group *g = j->g;
	struct cl_shape *s = &g->shape;
	uint64_t now = vmact_loop_now_usec(j->e->ev);
	struct vmact_err err = { 0 };

	g->shape_busy = false;
	g->next_shape_usec = now + (j->r < 0 ? ERROR_RETRY_USEC : j->r == 0 ? RETRY_USEC : 0);
	if (cl_jobs_stopping(j->e->jobs) || strcmp(j->key, s->key) != 0) {
		free(j);
		return;
	}
	if (j->r < 0) {
		/* Said once, not every 30 s: again only when it changes. */
		if (strcmp(s->last_error, j->err.msg) != 0)
			cl_vm_emit(j->e, LOG_WARNING, NULL, "group %s: %s: %s", g->cfg->id,
				   j->kind == SJ_NODE ? "its Node's resources"
						      : "its node image's size",
				   j->err.msg);
		snprintf(s->last_error, sizeof(s->last_error), "%s", j->err.msg);
		free(j);
		return;
	}
	s->last_error[0] = 0;
	if (j->kind == SJ_DISK) {
		s->disk_bytes = j->disk_bytes;
	} else if (j->r == 1) {
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
	if (j->r == 1 || j->kind == SJ_DISK) {
		if (shape_save(j->e, &err) < 0)
			cl_vm_emit(j->e, LOG_WARNING, NULL, "group %s: node shape not kept: %s",
				   g->cfg->id, err.msg);
	}
	free(j);
}

static void submit(struct cl_engine *e, struct cl_group *g, struct shape_job *j)
{
	j->e = e;
	j->g = g;
	snprintf(j->key, sizeof(j->key), "%s", g->shape.key);
	g->shape_busy = true;
	if (cl_jobs_submit(e->jobs, job_run, job_done, j) < 0) {
		g->shape_busy = false;
		free(j);
	}
}

/* A member in service, the one a Node is asked for. */
static const struct cl_vm *in_service(const struct cl_group *g)
{
	const struct cl_vm *vm;

	VMACT_LIST_FOREACH(vms, vm, g->vms)
		if (cl_vm_is_member(vm) && vm->meta.state == CL_ST_CLAIMED && !vm->want_delete &&
		    vm->host[0])
			return vm;
	return NULL;
}

void cl_shape_tick(struct cl_engine *e, struct cl_group *g, uint64_t now)
{
	const struct cl_template *t = &g->cfg->tpl;
	struct cl_shape *s = &g->shape;
	const struct cl_vm *vm;
	struct shape_job *j;
	struct cl_ehost *h;

	if (g->shape_busy || now < g->next_shape_usec)
		return;
	if (!current(g)) {
		/* A new template (or the first): what was seen is forgotten. */
		memset(s, 0, sizeof(*s));
		cl_shape_key(t, s->key, sizeof(s->key));
	}
	if (!s->disk_bytes && !t->ephemeral_storage && g->cfg->n_hosts > 0 &&
	    (h = cl_vm_ehost(e, g->cfg->hosts[0]))) {
		if (!(j = calloc(1, sizeof(*j))))
			return;
		j->kind = SJ_DISK;
		j->host = h->h;
		snprintf(j->pool, sizeof(j->pool), "%s", cl_host_cfg(h->h)->storage_pool);
		snprintf(j->volume, sizeof(j->volume), "%s", t->base_volume);
		submit(e, g, j);
		return;
	}
	if (s->reported || !e->cfg->kube.server[0] || !(vm = in_service(g)))
		return;
	if (!(j = calloc(1, sizeof(*j))))
		return;
	j->kind = SJ_NODE;
	snprintf(j->name, sizeof(j->name), "%s", vm->name);
	snprintf(j->provider_id, sizeof(j->provider_id), "libvirt://%s/%s", vm->host, vm->uuid);
	submit(e, g, j);
}
