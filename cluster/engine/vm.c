/* SPDX-License-Identifier: Apache-2.0 */
/* The engine's VMs as the files of the engine share them (engine-priv.h):
 * a VM's record, the events about it, the API requests waiting on it,
 * and recording its metadata. The bottom of the engine: it calls none of
 * engine.c, place.c, life.c and recover.c. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/macro.h"
#include "base/time.h"

DEFINE_PTR_CLEANUP(vm_conn_closep, struct _virConnect, virConnectClose)

double cl_vm_now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void cl_vm_emit(struct cl_engine *e, int prio, const struct cl_vm *vm, const char *fmt, ...)
{
	struct cl_engine_event ev = { .priority = prio };
	char text[1024];
	va_list ap;

	if (!e->event_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	ev.text = text;
	if (vm) {
		ev.vm = vm->name;
		ev.group = vm->group_id;
	}
	e->event_fn(e->event_ud, &ev);
}

struct cl_ehost *cl_vm_ehost(struct cl_engine *e, const char *name)
{
	for (size_t i = 0; i < e->n_hosts; i++)
		if (strcmp(cl_host_name(e->hosts[i].h), name) == 0)
			return &e->hosts[i];
	return NULL;
}

struct cl_vm *cl_vm_new(struct cl_group *g, const char *uuid, const char *name)
{
	struct cl_vm *vm = calloc(1, sizeof(*vm));

	if (!vm)
		return NULL;
	vm->g = g;
	snprintf(vm->uuid, sizeof(vm->uuid), "%s", uuid);
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	if (g) {
		snprintf(vm->group_id, sizeof(vm->group_id), "%s", g->cfg->id);
		snprintf(vm->meta.group, sizeof(vm->meta.group), "%s", g->cfg->id);
		VMACT_LIST_APPEND(vms, g->vms, vm);
	}
	return vm;
}

void cl_vm_free(struct cl_engine *e, struct cl_vm *vm)
{
	struct cl_vm_op *o;

	if (vm->g)
		VMACT_LIST_REMOVE(vms, vm->g->vms, vm);
	else
		VMACT_LIST_REMOVE(vms, e->orphans, vm);
	while ((o = vm->ops)) {
		VMACT_LIST_REMOVE(ops, vm->ops, o);
		free(o);
	}
	cl_fw_cycle_free(vm->cs);
	free(vm);
}

struct cl_vm *cl_vm_by_uuid(struct cl_engine *e, const char *uuid)
{
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms)
			if (strcasecmp(vm->uuid, uuid) == 0)
				return vm;
	}
	return NULL;
}

void cl_vm_provider_id(const struct cl_vm *vm, char *buf, size_t len)
{
	snprintf(buf, len, "libvirt://%s/%s",
		 vm->meta.provider_host[0] ? vm->meta.provider_host : vm->host, vm->uuid);
}

bool cl_vm_is_member(const struct cl_vm *vm)
{
	return vm->meta.role == CL_ROLE_MEMBER && vm->meta.state != CL_ST_DELETING &&
	       !vm->want_delete && !vm->want_return;
}

unsigned cl_vm_group_target(const struct cl_group *g)
{
	unsigned n = 0;
	struct cl_vm *vm;

	VMACT_LIST_FOREACH(vms, vm, g->vms)
		n += cl_vm_is_member(vm);
	return n;
}

static void op_finish(struct cl_op *op)
{
	struct cl_engine_answer a = { 0 };

	if (op->failed && op->failed == op->pending + op->failed) {
		/* Nothing of it was recorded. */
		a.status = 503;
		a.reason = "unavailable";
		snprintf(a.error, sizeof(a.error), "%s", op->first_error);
	} else if (op->failed) {
		a.status = 503;
		a.reason = "unavailable";
		snprintf(a.error, sizeof(a.error),
			 "only part of the change was recorded (target now %u): %.400s",
			 cl_vm_group_target(op->g), op->first_error);
	} else {
		a.status = 200;
		a.target = cl_vm_group_target(op->g);
	}
	op->fn(op->ud, &a);
	free(op);
}

struct cl_op *cl_vm_op_new(struct cl_engine *e, struct cl_group *g, cl_engine_answer_fn *fn,
			   void *ud)
{
	struct cl_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->e = e;
	op->g = g;
	op->fn = fn;
	op->ud = ud;
	/* One for the caller: it finishes the op once it queued everything. */
	op->pending = 1;
	return op;
}

void cl_vm_op_done(struct cl_op *op, int r, const char *err)
{
	op->pending--;
	if (r < 0) {
		if (!op->failed++)
			snprintf(op->first_error, sizeof(op->first_error), "%s",
				 err ? err : "failed");
	}
	if (!op->pending)
		op_finish(op);
}

int cl_vm_op_attach(struct cl_op *op, struct cl_vm *vm)
{
	struct cl_vm_op *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->op = op;
	op->pending++;
	VMACT_LIST_APPEND(ops, vm->ops, o);
	return 0;
}

void cl_vm_ops_done(struct cl_vm *vm, int r, const char *err)
{
	struct cl_vm_op *o;

	while ((o = vm->ops)) {
		struct cl_op *op = o->op;

		VMACT_LIST_REMOVE(ops, vm->ops, o);
		free(o);
		cl_vm_op_done(op, r, err);
	}
}

void cl_vm_kick(struct cl_engine *e)
{
	/* At the loop's next iteration, not from inside a handler. */
	if (e->tick && !e->stopping)
		sd_event_source_set_time(e->tick, 0);
}

/* ---- recording ---- */

struct rjob {
	struct cl_engine *e;
	struct cl_vm *vm;
	struct cl_host *host;
	const struct cl_group_cfg *g;
	char uuid[VIR_UUID_STRING_BUFLEN], name[CL_NAME_MAX];
	struct cl_meta meta;
	int r;
	struct vmact_err err;
	void (*then)(struct cl_vm *vm, int r, const char *err);
};

static struct rjob *rjob_new(struct cl_vm *vm)
{
	struct rjob *j = calloc(1, sizeof(*j));
	struct cl_ehost *h;

	if (!j)
		return NULL;
	j->e = vm->g->e;
	j->vm = vm;
	j->g = vm->g->cfg;
	h = vm->host[0] ? cl_vm_ehost(j->e, vm->host) : NULL;
	j->host = h ? h->h : NULL;
	snprintf(j->uuid, sizeof(j->uuid), "%s", vm->uuid);
	snprintf(j->name, sizeof(j->name), "%s", vm->name);
	j->meta = vm->meta;
	return j;
}

static void record_run(void *data)
{
	struct rjob *j = data;
	_cleanup_(vm_conn_closep) virConnectPtr c = NULL;

	if (!j->host) {
		j->r = vmact_err_set(&j->err, ENOENT, "no host recorded");
		return;
	}
	c = cl_host_conn(j->host, &j->err);
	j->r = c ? cl_virt_set_meta(c, j->uuid, &j->meta, &j->err) : -EHOSTUNREACH;
}

static void placeholder_run(void *data)
{
	struct rjob *j = data;
	_cleanup_(vm_conn_closep) virConnectPtr c = NULL;
	_cleanup_free_ char *xml = NULL;
	struct cl_domxml_spec ds = {
		.group = j->g, .name = j->name, .uuid = j->uuid, .meta = &j->meta
	};

	if (!j->host) {
		j->r = vmact_err_set(&j->err, ENOENT, "no host for the placeholder");
		return;
	}
	c = cl_host_conn(j->host, &j->err);
	if (!c) {
		j->r = -EHOSTUNREACH;
		return;
	}
	ds.channel_dir = cl_host_cfg(j->host)->channel_dir;
	xml = cl_domxml_domain(&ds, &j->err);
	j->r = xml ? cl_virt_define(c, xml, &j->err) : -ENOMEM;
}

static void then_done(void *data)
{
	struct rjob *j = data;
	struct cl_vm *vm = j->vm;

	vm->busy = false;
	if (j->r >= 0)
		vm->meta = j->meta;
	if (j->then)
		j->then(vm, j->r, j->r < 0 ? j->err.msg : NULL);
	free(j);
}

static void submit(struct rjob *j, void (*run)(void *))
{
	j->vm->busy = true;
	if (cl_jobs_submit(j->e->jobs, run, then_done, j) < 0) {
		j->r = -ESHUTDOWN;
		vmact_err_set(&j->err, ESHUTDOWN, "vmact-groupd is stopping");
		then_done(j);
	}
}

void cl_vm_record(struct cl_vm *vm, void (*done)(struct cl_vm *vm, int r, const char *err))
{
	struct rjob *j = rjob_new(vm);

	if (!j)
		return done(vm, -ENOMEM, "out of memory");
	j->then = done;
	submit(j, record_run);
}

void cl_vm_define_placeholder(struct cl_vm *vm,
			      void (*done)(struct cl_vm *vm, int r, const char *err))
{
	struct rjob *j = rjob_new(vm);

	if (!j)
		return done(vm, -ENOMEM, "out of memory");
	j->then = done;
	submit(j, placeholder_run);
}

void cl_vm_evictions_done(struct cl_engine *e)
{
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms)
			if (vm->evict_wait)
				vm->evict_wait = false;
	}
	cl_vm_kick(e);
}

void cl_vm_observe(struct cl_group *g, enum cl_tier t, double secs)
{
	static const double bounds[CL_ENGINE_HIST_BUCKETS] = CL_ENGINE_HIST_BOUNDS;
	size_t b = 0;

	while (b < CL_ENGINE_HIST_BUCKETS && secs > bounds[b])
		b++;
	g->c.hist[t][b]++;
	g->c.hist_sum[t] += secs;
	g->c.hist_count[t]++;
}
