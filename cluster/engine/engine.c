/* SPDX-License-Identifier: Apache-2.0 */
/* The engine: its groups and hosts, the loop's tick (each VM's next step,
 * the pools' refill), and the API's operations. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <syslog.h>
#include <time.h>

#include "base/macro.h"
#include "base/time.h"

/* How often each VM's next step is looked at when nothing kicks it. */
#define TICK_USEC (200 * 1000ULL)
/* Threads for libvirt and arbiter work: boots are watched on their
 * consoles, one thread each while they boot. */
#define JOB_THREADS 16

const double cl_engine_hist_bounds[CL_ENGINE_HIST_BUCKETS] = CL_ENGINE_HIST_BOUNDS;

const char *cl_engine_failure_name(enum cl_engine_failure f)
{
	static const char *const names[] = {
		[CL_FAIL_BOOT_TIMEOUT] = "boot_timeout",
		[CL_FAIL_UNHEALTHY] = "unhealthy",
		[CL_FAIL_BIND] = "bind",
		[CL_FAIL_CLAIM] = "claim",
		[CL_FAIL_NO_HOST] = "no_host",
		[CL_FAIL_NOT_REGISTERED] = "not_registered",
	};

	return (unsigned)f < ARRAY_SIZE(names) ? names[f] : "?";
}

void cl_engine_on_event(struct cl_engine *e, cl_engine_event_fn *fn, void *ud)
{
	e->event_fn = fn;
	e->event_ud = ud;
}

static void *handle_host(void *ud, const char *name)
{
	struct cl_ehost *h = cl_vm_ehost(ud, name);

	return h ? h->h : NULL;
}

/* ---- ops: API requests waiting for their changes to be recorded ---- */

static struct cl_group *group_by_id(struct cl_engine *e, const char *id)
{
	for (size_t i = 0; i < e->n_groups; i++)
		if (strcmp(e->groups[i].cfg->id, id) == 0)
			return &e->groups[i];
	return NULL;
}

static void answer_error(cl_engine_answer_fn *fn, void *ud, unsigned status, const char *reason,
			 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void answer_error(cl_engine_answer_fn *fn, void *ud, unsigned status, const char *reason,
			 const char *fmt, ...)
{
	struct cl_engine_answer a = { .status = status, .reason = reason };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a.error, sizeof(a.error), fmt, ap);
	va_end(ap);
	fn(ud, &a);
}

/* A random (version 4) UUID and the domain name made from it. */
static int new_identity(const struct cl_engine *e, const struct cl_group *g, char *uuid, char *name)
{
	uint8_t raw[16];

	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
		return -EIO;
	raw[6] = (raw[6] & 0x0f) | 0x40;
	raw[8] = (raw[8] & 0x3f) | 0x80;
	snprintf(uuid, VIR_UUID_STRING_BUFLEN,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", raw[0],
		 raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
		 raw[11], raw[12], raw[13], raw[14], raw[15]);
	/* The configuration keeps prefix and id short enough. */
	if (snprintf(name, CL_NAME_MAX, "%s%s-%.8s", e->cfg->name_prefix, g->cfg->id, uuid) >=
	    CL_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- the tick ---- */

/* The VMs that get a scheduling cycle at this tick, before QueueSort
 * orders them. */
struct queue {
	struct cl_fw_queued *q;
	struct cl_fw_vm *vms;
	size_t n, cap;
};

static void enqueue(struct queue *q, struct cl_vm *vm, uint64_t since)
{
	struct cl_fw_vm *fv;

	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct cl_fw_queued *nq = realloc(q->q, cap * sizeof(*nq));
		struct cl_fw_vm *nv;

		if (!nq) {
			cl_place_submit(vm);
			return;
		}
		q->q = nq;
		nv = realloc(q->vms, cap * sizeof(*nv));
		if (!nv) {
			cl_place_submit(vm);
			return;
		}
		q->vms = nv;
		q->cap = cap;
	}
	fv = &q->vms[q->n];
	memset(fv, 0, sizeof(*fv));
	snprintf(fv->uid, sizeof(fv->uid), "%s", vm->uuid);
	snprintf(fv->name, sizeof(fv->name), "%s", vm->name);
	snprintf(fv->group, sizeof(fv->group), "%s", vm->g->cfg->id);
	fv->standby = vm->meta.role == CL_ROLE_POOL;
	fv->size = vm->g->cfg->tpl.reserve;
	q->q[q->n++] = (struct cl_fw_queued){ .queued_usec = since, .ud = vm };
}

/* In QueueSort's order (the default profile's: every profile has the
 * same, cl_engine_new checks), into the scheduler's one-thread queue. */
static void submit_queue(struct cl_engine *e, struct queue *q)
{
	for (size_t i = 0; i < q->n; i++)
		q->q[i].vm = &q->vms[i];
	if (q->n > 1)
		cl_fw_queue_sort(e->fws[0], q->q, q->n);
	for (size_t i = 0; i < q->n; i++)
		cl_place_submit(q->q[i].ud);
	free(q->q);
	free(q->vms);
}

static void refill(struct cl_engine *e, struct cl_group *g, uint64_t now, struct queue *queue)
{
	const struct cl_group_cfg *cfg = g->cfg;
	unsigned have[3] = { 0 };
	bool members_waiting = false;
	struct cl_vm *vm, *next;

	VMACT_LIST_FOREACH(vms, vm, g->vms) {
		struct cl_ehost *eh;

		if (vm->meta.role == CL_ROLE_MEMBER && vm->meta.state == CL_ST_PENDING &&
		    !vm->want_delete)
			members_waiting = true;
		if (vm->meta.role != CL_ROLE_POOL || vm->want_delete ||
		    vm->meta.state == CL_ST_DELETING || vm->meta.tier > CL_TIER_SAVED)
			continue;
		/* A drained host's standby VMs are given back (the pool refills
		 * elsewhere). */
		eh = vm->host[0] && !vm->placing ? cl_vm_ehost(e, vm->host) : NULL;
		if (eh && eh->draining) {
			vm->want_delete = true;
			cl_vm_emit(e, LOG_INFO, vm, "standby VM on drained host %s: removed",
				   vm->host);
			continue;
		}
		have[vm->meta.tier]++;
	}
	for (int t = 0; t < 3; t++) {
		/* Surplus (a smaller pool, a VM given back): the newest go. */
		for (vm = g->vms; vm && vm->vms_next; vm = vm->vms_next)
			;
		for (; vm && have[t] > cfg->pool[t]; vm = next) {
			next = vm->vms_prev;
			if (vm->meta.role != CL_ROLE_POOL || vm->meta.tier != (enum cl_tier)t ||
			    vm->want_delete || vm->meta.state == CL_ST_DELETING || vm->placing)
				continue;
			vm->want_delete = true;
			have[t]--;
			cl_vm_emit(e, LOG_INFO, vm, "standby VM surplus in tier %s: removed",
				   cl_domxml_tier_name(t));
		}
	}
	/* Members come first: no refill while one waits for a host. */
	if (members_waiting || now < g->next_refill_usec || !e->ready)
		return;
	for (int t = 0; t < 3; t++) {
		while (have[t] < cfg->pool[t] &&
		       e->boots_this_iteration < cfg->life.max_boots_per_iteration) {
			char uuid[VIR_UUID_STRING_BUFLEN], name[CL_NAME_MAX];

			if (new_identity(e, g, uuid, name) < 0)
				return;
			vm = cl_vm_new(g, uuid, name);
			if (!vm)
				return;
			vm->meta.role = CL_ROLE_POOL;
			vm->meta.tier = t;
			vm->meta.state = CL_ST_PENDING;
			e->boots_this_iteration++;
			have[t]++;
			enqueue(queue, vm, now);
		}
	}
}

static void tick_once(struct cl_engine *e)
{
	uint64_t now = vmact_loop_now_usec(e->ev);
	bool refill_iteration = false;
	struct queue queue = { 0 };

	if (e->stopping)
		return;
	for (size_t i = 0; i < e->n_hosts; i++)
		if (!e->hosts[i].scanned && !e->hosts[i].scanning &&
		    now >= e->hosts[i].next_scan_usec)
			cl_recover_scan(e, &e->hosts[i]);
	if (!e->ready)
		return;
	cl_place_waiting_expire(e);
	cl_nodes_engine_tick(e, now);
	cl_recover_paused(e, now);
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm, *next;

		VMACT_LIST_FOREACH_SAFE(vms, vm, next, e->groups[i].vms) {
			if (vm->busy)
				continue;
			if (vm->meta.role == CL_ROLE_MEMBER && vm->meta.state == CL_ST_PENDING &&
			    !vm->want_delete && !vm->want_return && !vm->placing &&
			    !vm->evict_wait && now >= vm->next_try_usec) {
				/* A member's placement is a cold boot: it counts
				 * against the iteration's boots like a refill's
				 * (kip's MaxBootPerIteration caps every start);
				 * over it, the member waits for the next. */
				if (e->boots_this_iteration >=
				    e->groups[i].cfg->life.max_boots_per_iteration)
					continue;
				e->boots_this_iteration++;
				enqueue(&queue, vm,
					vm->requested_usec ? vm->requested_usec
							   : vm->next_try_usec);
			} else {
				cl_life_next(vm);
			}
		}
	}
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_group *g = &e->groups[i];

		cl_nodes_tick(e, g, now);
		if (now >= g->next_refill_usec) {
			refill_iteration = true;
			refill(e, g, now, &queue);
			if (now >= g->next_refill_usec)
				g->next_refill_usec = now + g->cfg->life.refill_interval_usec;
		} else {
			/* Surplus is removed at once; growth waits for the iteration. */
			refill(e, g, now, &queue);
		}
	}
	submit_queue(e, &queue);
	if (refill_iteration)
		e->boots_this_iteration = 0;
	if (now >= e->next_renew_usec) {
		e->next_renew_usec = now + e->cfg->life.lease_usec / 3;
		cl_recover_renew(e);
	}
	cl_move_tick(e, now);
	cl_relief_tick(e, now);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *ud)
{
	struct cl_engine *e = ud;

	tick_once(e);
	sd_event_source_set_time(s, vmact_loop_now_usec(e->ev) + TICK_USEC);
	return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

/* ---- life of the engine ---- */

int cl_engine_new(sd_event *ev, const struct cl_config *cfg, struct cl_engine **out,
		  struct vmact_err *err)
{
	struct cl_engine *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return vmact_err_set(err, ENOMEM, "out of memory");
	e->ev = sd_event_ref(ev);
	e->cfg = cfg;
	e->handle = (struct cl_fw_handle){ .ud = e,
					   .host = handle_host,
					   .lease_usec = cfg->life.lease_usec };
	e->hosts = calloc(cfg->n_hosts, sizeof(*e->hosts));
	e->groups = calloc(cfg->n_groups + 1, sizeof(*e->groups));
	e->fws = calloc(cfg->profiles ? json_array_size(cfg->profiles) + 1 : 1, sizeof(*e->fws));
	if (!e->hosts || !e->groups || !e->fws) {
		cl_engine_free(e);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < cfg->n_hosts; i++) {
		r = cl_host_new(&cfg->hosts[i], &e->hosts[i].h, err);
		if (r < 0) {
			cl_engine_free(e);
			return r;
		}
		e->n_hosts++;
	}
	if (!cfg->profiles) {
		r = cl_fw_new(cl_plugins_table(), cl_plugins_defaults(), NULL, "scheduler",
			      &e->handle, &e->fws[0], err);
		if (r < 0) {
			cl_engine_free(e);
			return r;
		}
		e->n_fws = 1;
	} else {
		size_t i;
		json_t *p;

		json_array_foreach(cfg->profiles, i, p) {
			char path[64];

			snprintf(path, sizeof(path), "scheduler.profiles[%zu]", i);
			r = cl_fw_new(cl_plugins_table(), cl_plugins_defaults(), p, path,
				      &e->handle, &e->fws[i], err);
			if (r < 0) {
				cl_engine_free(e);
				return r;
			}
			e->n_fws++;
		}
	}
	/* One queue for every profile, as the Kubernetes scheduler has: the same
	 * QueueSort everywhere. */
	for (size_t i = 1; i < e->n_fws; i++) {
		const char *a[1] = { "" }, *b[1] = { "" };
		size_t na = cl_fw_plugins(e->fws[0], CL_FW_QUEUE_SORT, a, 1);
		size_t nb = cl_fw_plugins(e->fws[i], CL_FW_QUEUE_SORT, b, 1);

		if (na != nb || (na && strcmp(a[0], b[0]) != 0)) {
			cl_engine_free(e);
			return vmact_err_set(err, EINVAL,
					     "scheduler.profiles[%zu].plugins.queueSort: every "
					     "profile must have the same QueueSort (%s, not %s)",
					     i, na ? a[0] : "none", nb ? b[0] : "none");
		}
	}
	for (size_t i = 0; i < cfg->n_groups; i++) {
		struct cl_group *g = &e->groups[i];

		g->e = e;
		g->idx = i;
		g->cfg = &cfg->groups[i];
		for (size_t k = 0; k < e->n_fws; k++)
			if (strcmp(cl_fw_scheduler_name(e->fws[k]), g->cfg->scheduler_name) == 0)
				g->fw = e->fws[k];
		e->n_groups++;
	}
	r = cl_jobs_new(ev, JOB_THREADS, "jobs", &e->jobs, err);
	if (r >= 0)
		r = cl_jobs_new(ev, 1, "scheduler", &e->sched, err);
	/* Moves side by side, each holding a thread for its length. */
	if (r >= 0)
		r = cl_jobs_new(ev, CL_MOVE_THREADS, "movers", &e->movers, err);
	if (r < 0) {
		cl_engine_free(e);
		return r;
	}
	*out = e;
	return 0;
}

void cl_engine_stop(struct cl_engine *e)
{
	if (!e || e->stopping)
		return;
	e->stopping = true;
	sd_event_source_set_enabled(e->tick, SD_EVENT_OFF);
	/* Jobs in flight end; their done handlers start nothing new. */
	if (e->sched)
		cl_jobs_drain(e->sched);
	if (e->movers)
		cl_jobs_drain(e->movers);
	if (e->jobs)
		cl_jobs_drain(e->jobs);
}

void cl_engine_free(struct cl_engine *e)
{
	if (!e)
		return;
	cl_engine_stop(e);
	cl_jobs_free(e->sched);
	cl_jobs_free(e->movers);
	e->movers = NULL;
	cl_jobs_free(e->jobs);
	cl_move_free_all(e);
	for (size_t i = 0; i < e->n_groups; i++)
		while (e->groups[i].vms) {
			cl_vm_ops_done(e->groups[i].vms, -ESHUTDOWN, "vmact-groupd is stopping");
			cl_vm_free(e, e->groups[i].vms);
		}
	while (e->orphans)
		cl_vm_free(e, e->orphans);
	for (size_t i = 0; i < e->n_fws; i++)
		cl_fw_free(e->fws[i]);
	for (size_t i = 0; i < e->n_hosts; i++)
		cl_host_free(e->hosts[i].h);
	sd_event_source_disable_unref(e->tick);
	sd_event_source_disable_unref(e->permit_timer);
	sd_event_unref(e->ev);
	free(e->fws);
	free(e->groups);
	free(e->hosts);
	free(e);
}

int cl_engine_start(struct cl_engine *e, struct vmact_err *err)
{
	int r = sd_event_add_time(e->ev, &e->tick, CLOCK_MONOTONIC, 0, VMACT_TIMER_ACCURACY_USEC,
				  on_tick, e);

	if (r < 0)
		return vmact_err_set(err, -r, "engine timer: %s", strerror(-r));
	return 0;
}

void cl_engine_migrate(struct cl_engine *e, const char *vm, const char *to, bool force,
		       cl_engine_answer_fn *fn, void *ud)
{
	struct cl_engine_answer a = { .status = 503, .reason = "unavailable" };

	if (!e->ready) {
		snprintf(a.error, sizeof(a.error),
			 "vmact-groupd is still finding its VMs on its hosts");
		return fn(ud, &a);
	}
	cl_move_request(e, vm, to, force, fn, ud);
}

int cl_engine_drain(struct cl_engine *e, const char *host, bool drain, struct vmact_err *err)
{
	return cl_relief_drain(e, host, drain, err);
}

int cl_engine_load_drained(struct cl_engine *e, struct vmact_err *err)
{
	return cl_relief_load_drained(e, err);
}

bool cl_engine_ready(const struct cl_engine *e)
{
	return e->ready;
}

/* ---- the API's operations ---- */

static bool can_take(const struct cl_vm *vm, enum cl_tier t)
{
	return vm->meta.role == CL_ROLE_POOL && vm->meta.tier == t &&
	       vm->meta.state == CL_ST_READY && !vm->busy && !vm->want_delete && !vm->want_return &&
	       vm->persisted;
}

static void claim_recorded(struct cl_vm *vm, int r, const char *err)
{
	if (r < 0) {
		/* Not recorded: it stays in the pool. */
		vm->meta.role = CL_ROLE_POOL;
		vm->meta.state = CL_ST_READY;
		vm->meta.requested = 0;
	}
	cl_vm_ops_done(vm, r, err);
	cl_vm_kick(vm->g->e);
}

static void placeholder_recorded(struct cl_vm *vm, int r, const char *err)
{
	struct cl_engine *e = vm->g->e;

	cl_vm_ops_done(vm, r, err);
	if (r < 0) {
		cl_vm_free(e, vm);
		return;
	}
	vm->persisted = true;
	cl_vm_kick(e);
}

/* The host a new member's placeholder is defined on until it is placed:
 * of the group's hosts whose VMs are known and whose libvirt answered,
 * the one with the most room at its arbiter when last read, where the
 * scheduler will most likely put it (its provider ID changes if it goes
 * elsewhere). */
static const char *placeholder_host(struct cl_engine *e, const struct cl_group *g)
{
	const char *best = NULL;
	uint64_t best_room = 0;

	for (size_t i = 0; i < g->cfg->n_hosts; i++) {
		struct cl_ehost *h = cl_vm_ehost(e, g->cfg->hosts[i]);
		struct cl_host_status st;
		uint64_t room = 0;

		cl_host_status(h->h, &st);
		if (!st.libvirt_ok || !h->scanned)
			continue;
		if (st.have_ledger && st.ledger.watermark.milli_cpu > st.ledger.reserved.milli_cpu)
			room = st.ledger.watermark.milli_cpu - st.ledger.reserved.milli_cpu;
		if (!best || room > best_room) {
			best = g->cfg->hosts[i];
			best_room = room;
		}
	}
	return best;
}

void cl_engine_increase(struct cl_engine *e, const char *group, long long delta,
			cl_engine_answer_fn *fn, void *ud)
{
	struct cl_group *g = group_by_id(e, group);
	unsigned target;
	long long left = delta;
	const char *ph;
	struct cl_op *op;

	if (!g)
		return answer_error(fn, ud, 404, "not-found", "no node group '%s'", group);
	if (delta <= 0)
		return answer_error(fn, ud, 400, "invalid", "delta must be positive, not %lld",
				    delta);
	if (!e->ready || e->stopping)
		return answer_error(fn, ud, 503, "unavailable",
				    e->stopping
					    ? "vmact-groupd is stopping"
					    : "vmact-groupd is still finding its VMs on the hosts");
	target = cl_vm_group_target(g);
	if (target + (unsigned long long)delta > g->cfg->max)
		return answer_error(fn, ud, 409, "out-of-range",
				    "target %u + %lld would pass group %s's max of %u", target,
				    delta, group, g->cfg->max);
	op = cl_vm_op_new(e, g, fn, ud);
	if (!op)
		return answer_error(fn, ud, 500, "internal", "out of memory");
	/* The fastest first: running, paused, saved, then a cold boot. */
	for (int t = 0; t < 3 && left; t++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, g->vms) {
			if (!left)
				break;
			if (!can_take(vm, t) || cl_vm_op_attach(op, vm) < 0)
				continue;
			vm->meta.role = CL_ROLE_MEMBER;
			vm->meta.state = CL_ST_CLAIMING;
			vm->meta.requested = cl_vm_now_real();
			vm->requested_usec = vmact_loop_now_usec(e->ev);
			vm->healthy = false;
			left--;
			cl_vm_emit(e, LOG_INFO, vm, "claimed from the %s tier",
				   cl_domxml_tier_name(t));
			cl_vm_record(vm, claim_recorded);
		}
	}
	ph = left ? placeholder_host(e, g) : NULL;
	if (left && !ph) {
		op->failed++;
		snprintf(op->first_error, sizeof(op->first_error),
			 "no host of group %s is reachable to record %lld new VM(s)", group, left);
	}
	for (; left > 0 && ph; left--) {
		char uuid[VIR_UUID_STRING_BUFLEN], name[CL_NAME_MAX];
		struct cl_vm *vm;

		if (new_identity(e, g, uuid, name) < 0)
			break;
		vm = cl_vm_new(g, uuid, name);
		if (!vm || cl_vm_op_attach(op, vm) < 0) {
			if (vm)
				cl_vm_free(e, vm);
			break;
		}
		vm->meta.role = CL_ROLE_MEMBER;
		vm->meta.tier = CL_TIER_COLD;
		vm->meta.state = CL_ST_PENDING;
		vm->meta.requested = cl_vm_now_real();
		vm->meta.created = vm->meta.requested;
		vm->requested_usec = vmact_loop_now_usec(e->ev);
		snprintf(vm->host, sizeof(vm->host), "%s", ph);
		cl_vm_emit(e, LOG_INFO, vm, "new member, to be booted (no standby VM ready)");
		cl_vm_define_placeholder(vm, placeholder_recorded);
	}
	cl_vm_op_done(op, 0, NULL);
}

/* The member whose provider ID is id (a moved VM's names the host it
 * was claimed on: cl_vm_provider_id). */
static struct cl_vm *member_by_provider(struct cl_group *g, const char *id)
{
	struct cl_vm *vm;

	if (strncmp(id, "libvirt://", 10) != 0)
		return NULL;
	VMACT_LIST_FOREACH(vms, vm, g->vms) {
		char mine[160];

		if (vm->meta.role != CL_ROLE_MEMBER || !vm->host[0])
			continue;
		cl_vm_provider_id(vm, mine, sizeof(mine));
		if (strcasecmp(mine, id) == 0)
			return vm;
	}
	return NULL;
}

/* An intent for vm, with op told once it is recorded (by cl_life_next). */
static void intend(struct cl_op *op, struct cl_vm *vm, bool remove)
{
	if (cl_vm_op_attach(op, vm) < 0) {
		op->failed++;
		return;
	}
	if (remove)
		vm->want_delete = true;
	else
		vm->want_return = true;
	if (!vm->busy)
		cl_life_next(vm);
}

/* A member not yet in service given up: back to the pool while it has
 * told the guest nothing (pending: its placeholder just goes). */
static bool give_back(struct cl_op *op, struct cl_vm *vm)
{
	switch (vm->meta.state) {
	case CL_ST_CREATING:
	case CL_ST_BOOTING:
		intend(op, vm, false);
		return true;
	case CL_ST_PENDING:
	case CL_ST_CLAIMING:
		intend(op, vm, true);
		return true;
	default:
		return false;
	}
}

void cl_engine_delete_nodes(struct cl_engine *e, const char *group, const char *const *ids,
			    size_t n, cl_engine_answer_fn *fn, void *ud)
{
	struct cl_group *g = group_by_id(e, group);
	struct cl_vm **vms;
	unsigned target;
	struct cl_op *op;

	if (!g)
		return answer_error(fn, ud, 404, "not-found", "no node group '%s'", group);
	if (!e->ready || e->stopping)
		return answer_error(fn, ud, 503, "unavailable", "vmact-groupd is not ready");
	if (!n)
		return answer_error(fn, ud, 400, "invalid", "provider_ids: no node given");
	vms = calloc(n, sizeof(*vms));
	if (!vms)
		return answer_error(fn, ud, 500, "internal", "out of memory");
	for (size_t i = 0; i < n; i++) {
		vms[i] = member_by_provider(g, ids[i]);
		if (!vms[i]) {
			free(vms);
			return answer_error(fn, ud, 404, "not-found",
					    "%s is not a node of group %s", ids[i], group);
		}
		if (vms[i]->meta.state == CL_ST_DELETING || vms[i]->want_delete ||
		    vms[i]->want_return) {
			free(vms);
			return answer_error(fn, ud, 409, "precondition",
					    "%s is being deleted already", ids[i]);
		}
		for (size_t k = 0; k < i; k++)
			if (vms[k] == vms[i]) {
				free(vms);
				return answer_error(fn, ud, 400, "invalid", "%s is listed twice",
						    ids[i]);
			}
	}
	target = cl_vm_group_target(g);
	if (target < n || target - n < g->cfg->min) {
		free(vms);
		return answer_error(
			fn, ud, 409, "out-of-range",
			"deleting %zu of %u nodes would take group %s below its min of %u", n,
			target, group, g->cfg->min);
	}
	op = cl_vm_op_new(e, g, fn, ud);
	if (!op) {
		free(vms);
		return answer_error(fn, ud, 500, "internal", "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		cl_vm_emit(e, LOG_INFO, vms[i], "deleted (%s)",
			   vms[i]->meta.state == CL_ST_CLAIMED ? "in service: destroyed"
							       : "never in service");
		if (!give_back(op, vms[i]))
			intend(op, vms[i], true);
	}
	free(vms);
	cl_vm_op_done(op, 0, NULL);
}

void cl_engine_decrease(struct cl_engine *e, const char *group, long long delta,
			cl_engine_answer_fn *fn, void *ud)
{
	static const enum cl_state order[] = { CL_ST_PENDING, CL_ST_CREATING, CL_ST_BOOTING,
					       CL_ST_CLAIMING };
	struct cl_group *g = group_by_id(e, group);
	unsigned avail = 0, target;
	long long left;
	struct cl_op *op;
	struct cl_vm *vm;

	if (!g)
		return answer_error(fn, ud, 404, "not-found", "no node group '%s'", group);
	if (delta >= 0)
		return answer_error(fn, ud, 400, "invalid", "delta must be negative, not %lld",
				    delta);
	if (!e->ready || e->stopping)
		return answer_error(fn, ud, 503, "unavailable", "vmact-groupd is not ready");
	target = cl_vm_group_target(g);
	VMACT_LIST_FOREACH(vms, vm, g->vms)
		avail += cl_vm_is_member(vm) && vm->meta.state != CL_ST_CLAIMED;
	if ((unsigned long long)-delta > avail)
		return answer_error(
			fn, ud, 409, "precondition",
			"group %s has %u node(s) not yet in service, %lld asked: a decrease "
			"never deletes a running node",
			group, avail, -delta);
	if (target + delta < (long long)g->cfg->min)
		return answer_error(fn, ud, 409, "out-of-range",
				    "target %u %lld would go below group %s's min of %u", target,
				    delta, group, g->cfg->min);
	op = cl_vm_op_new(e, g, fn, ud);
	if (!op)
		return answer_error(fn, ud, 500, "internal", "out of memory");
	left = -delta;
	/* The least advanced first: a placeholder costs nothing to drop. */
	for (size_t k = 0; k < ARRAY_SIZE(order) && left; k++)
		VMACT_LIST_FOREACH(vms, vm, g->vms) {
			if (!left)
				break;
			if (!cl_vm_is_member(vm) || vm->meta.state != order[k])
				continue;
			cl_vm_emit(e, LOG_INFO, vm, "given up by a target decrease");
			give_back(op, vm);
			left--;
		}
	cl_vm_op_done(op, 0, NULL);
}

/* ---- views ---- */

static void group_view(const struct cl_group *g, struct cl_engine_group_view *v)
{
	struct cl_vm *vm;

	memset(v, 0, sizeof(*v));
	v->cfg = g->cfg;
	for (int t = 0; t < 3; t++)
		v->tiers[t].size = g->cfg->pool[t];
	cl_nodes_view(g, v);
	VMACT_LIST_FOREACH(vms, vm, g->vms) {
		v->target += cl_vm_is_member(vm);
		v->in_service += cl_vm_is_member(vm) && vm->meta.state == CL_ST_CLAIMED;
		if (vm->meta.role != CL_ROLE_POOL || vm->meta.tier > CL_TIER_SAVED ||
		    vm->want_delete || vm->meta.state == CL_ST_DELETING)
			continue;
		if (vm->meta.state == CL_ST_READY && !vm->busy)
			v->tiers[vm->meta.tier].ready++;
		else
			v->tiers[vm->meta.tier].starting++;
	}
}

int cl_engine_group(const struct cl_engine *e, const char *id, struct cl_engine_group_view *v)
{
	for (size_t i = 0; i < e->n_groups; i++)
		if (strcmp(e->groups[i].cfg->id, id) == 0) {
			group_view(&e->groups[i], v);
			return 0;
		}
	return -ENOENT;
}

size_t cl_engine_n_groups(const struct cl_engine *e)
{
	return e->n_groups;
}

void cl_engine_group_at(const struct cl_engine *e, size_t i, struct cl_engine_group_view *v)
{
	group_view(&e->groups[i], v);
}

static void vm_view(const struct cl_vm *vm, struct cl_engine_vm_view *v)
{
	memset(v, 0, sizeof(*v));
	v->group = vm->g ? vm->g->cfg->id : NULL;
	v->name = vm->name;
	v->uuid = vm->uuid;
	v->host = vm->host;
	if (vm->host[0])
		cl_vm_provider_id(vm, v->provider_id, sizeof(v->provider_id));
	v->meta = &vm->meta;
	v->busy = vm->busy;
	v->placing = vm->placing;
	v->leased = vm->leased;
	v->want_delete = vm->want_delete;
	v->want_return = vm->want_return;
}

void cl_engine_each_vm(const struct cl_engine *e, const char *group,
		       void (*fn)(void *ud, const struct cl_engine_vm_view *v), void *ud)
{
	struct cl_engine_vm_view v;
	struct cl_vm *vm;

	for (size_t i = 0; i < e->n_groups; i++) {
		if (group && strcmp(group, e->groups[i].cfg->id) != 0)
			continue;
		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms) {
			vm_view(vm, &v);
			fn(ud, &v);
		}
	}
	if (group)
		return;
	VMACT_LIST_FOREACH(vms, vm, e->orphans) {
		vm_view(vm, &v);
		fn(ud, &v);
	}
}

const char *cl_engine_group_of(const struct cl_engine *e, const char *provider_id)
{
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms) {
			char id[160];

			if (!vm->host[0])
				continue;
			cl_vm_provider_id(vm, id, sizeof(id));
			if (strcasecmp(id, provider_id) == 0)
				return e->groups[i].cfg->id;
		}
	}
	return "";
}

size_t cl_engine_n_hosts(const struct cl_engine *e)
{
	return e->n_hosts;
}

void cl_engine_host_at(struct cl_engine *e, size_t i, struct cl_engine_host_view *v)
{
	struct cl_ehost *h = &e->hosts[i];
	const char *name = cl_host_name(h->h);
	struct cl_host_status *st = &v->st;

	memset(v, 0, sizeof(*v));
	cl_host_status(h->h, st);
	v->name = name;
	v->uri = cl_host_cfg(h->h)->uri;
	v->scanned = h->scanned;
	v->draining = h->draining;
	v->relief = h->relief;
	v->unmovable = h->unmovable;
	for (size_t k = 0; k < e->n_groups; k++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[k].vms) {
			if (strcmp(vm->host, name) != 0)
				continue;
			v->vms++;
			v->leases += vm->leased;
			if (vm->leased && vm->meta.role == CL_ROLE_POOL) {
				v->standby.milli_cpu += e->groups[k].cfg->tpl.reserve.milli_cpu;
				v->standby.mem_bytes += e->groups[k].cfg->tpl.reserve.mem_bytes;
			}
		}
	}
}

void cl_engine_each_waiting(const struct cl_engine *e,
			    void (*fn)(void *ud, const struct cl_fw_waiting *w), void *ud)
{
	for (size_t i = 0; i < e->n_fws; i++)
		cl_fw_waiting_each(e->fws[i], fn, ud);
}

int cl_engine_allow(struct cl_engine *e, const char *uid, const char *plugin)
{
	return cl_place_allow(e, uid, plugin);
}

int cl_engine_reject(struct cl_engine *e, const char *uid, const char *why)
{
	return cl_place_reject(e, uid, why);
}

const struct cl_engine_group_counters *cl_engine_group_counters(const struct cl_engine *e, size_t i)
{
	return &e->groups[i].c;
}

const struct cl_engine_host_counters *cl_engine_host_counters(const struct cl_engine *e, size_t i)
{
	return &e->hosts[i].c;
}
