/* SPDX-License-Identifier: Apache-2.0 */
/* Placement: a VM's scheduling cycle on the one-thread scheduler pool
 * (a host snapshot from the arbiters, then the framework), its Permit
 * wait, and its binding cycle on the job pool; what the engine does with
 * each outcome. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "base/macro.h"
#include "base/time.h"

DEFINE_PTR_CLEANUP(place_conn_closep, struct _virConnect, virConnectClose)

struct cl_place_job {
	struct cl_engine *e;
	struct cl_vm *vm;
	struct cl_fw *fw;
	struct cl_fw_vm fvm;
	struct cl_fw_host hosts[CL_MAX_HOSTS];
	bool scanned[CL_MAX_HOSTS];
	size_t n_hosts;
	struct cl_fw_result res;
	int wait_r; /* registering its Permit wait, in the scheduler's thread */
	/* Allowed or rejected (by a plugin in a later cycle) before the loop
	 * saw its cycle end. */
	bool early_allowed, early_rejected;
	char early_msg[CL_FW_MSG_MAX];
	struct cl_fw_status bind;
};

/* ---- the snapshot ---- */

/* The engine's half, on the loop: standby room and the group's VMs per
 * host. */
static void snapshot_engine(struct cl_engine *e, struct cl_place_job *j)
{
	const struct cl_group *vg = j->vm->g;

	j->n_hosts = 0;
	for (size_t i = 0; i < e->n_hosts && i < CL_MAX_HOSTS; i++) {
		struct cl_fw_host *h = &j->hosts[j->n_hosts++];
		const char *name = cl_host_name(e->hosts[i].h);

		memset(h, 0, sizeof(*h));
		snprintf(h->name, sizeof(h->name), "%s", name);
		j->scanned[j->n_hosts - 1] = e->hosts[i].scanned;
		for (size_t k = 0; k < e->n_groups; k++) {
			const struct cl_group *g = &e->groups[k];
			struct cl_vm *vm;

			VMACT_LIST_FOREACH(vms, vm, g->vms) {
				if (strcmp(vm->host, name) != 0)
					continue;
				if (g == vg && vm != j->vm)
					h->group_vms++;
				/* What giving back standby VMs could free: those
				 * holding a lease and not already going. */
				if (vm->meta.role == CL_ROLE_POOL && vm->leased &&
				    !vm->want_delete && vm->meta.state != CL_ST_DELETING) {
					h->standby_vms++;
					h->standby.milli_cpu += g->cfg->tpl.reserve.milli_cpu;
					h->standby.mem_bytes += g->cfg->tpl.reserve.mem_bytes;
				}
			}
		}
	}
}

void cl_place_snapshot_host(struct cl_engine *e, struct cl_fw_host *h, bool scanned)
{
	struct cl_ehost *eh = cl_vm_ehost(e, h->name);
	struct vmact_err err = { 0 };
	struct vmact_lease_ledger l;
	_cleanup_(place_conn_closep) virConnectPtr c = NULL;

	h->drained = cl_host_draining(eh->h);
	/* Its VMs are not known yet: nothing goes there before. */
	if (!scanned) {
		snprintf(h->why, sizeof(h->why), "its VMs are not found yet");
		return;
	}
	c = cl_host_conn(eh->h, &err);
	h->reachable = c != NULL;
	if (!c) {
		snprintf(h->why, sizeof(h->why), "%.200s", err.msg);
		return;
	}
	if (cl_host_ledger(eh->h, &l, &err) < 0) {
		snprintf(h->why, sizeof(h->why), "%.200s", err.msg);
		return;
	}
	h->ledger = true;
	h->total = l.total;
	h->watermark = l.watermark;
	h->reserved = l.reserved;
	h->pressure = l.pressure;
}

/* The hosts' half, in the job: libvirt reachable, the arbiter's ledger. */
static void snapshot_hosts(struct cl_place_job *j)
{
	for (size_t i = 0; i < j->n_hosts; i++)
		cl_place_snapshot_host(j->e, &j->hosts[i], j->scanned[i]);
}

static void reject(struct cl_engine *e, struct cl_vm *vm, const char *who, const char *why);

/* ---- the cycles ---- */

static void schedule_run(void *data)
{
	struct cl_place_job *j = data;

	snapshot_hosts(j);
	cl_fw_schedule(j->fw, j->vm->cs, &j->fvm, j->hosts, j->n_hosts, &j->res);
	/* Registered here, before the next cycle: its Permit plugins see this
	 * VM waiting (a gang completed by the next one allows it). */
	if (j->res.status.code == CL_FW_WAIT)
		j->wait_r = cl_fw_wait(j->fw, &j->fvm, &j->res, vmact_now_usec());
}

static void bind_run(void *data)
{
	struct cl_place_job *j = data;

	cl_fw_bind(j->fw, j->vm->cs, &j->fvm, j->res.host, &j->bind);
	if (j->bind.code != CL_FW_SUCCESS)
		cl_fw_unreserve(j->fw, j->vm->cs, &j->fvm, j->res.host);
}

static void unreserve_run(void *data)
{
	struct cl_place_job *j = data;

	cl_fw_unreserve(j->fw, j->vm->cs, &j->fvm, j->res.host);
}

static void job_free(struct cl_place_job *j)
{
	free(j);
}

/* The VM leaves placement: its cycle state goes. */
static void placing_end(struct cl_vm *vm)
{
	vm->placing = false;
	vm->busy = false;
	vm->pjob = NULL;
	vm->sjob = NULL;
	vm->reserved_host[0] = 0;
	cl_fw_cycle_free(vm->cs);
	vm->cs = NULL;
}

/* Standby room on host given back to make room for need: the newest
 * standby VMs holding leases there go first. */
static void evict(struct cl_engine *e, const char *host, struct vmact_resources need,
		  struct cl_vm *for_vm)
{
	uint64_t cpu = 0, mem = 0;

	for (size_t k = e->n_groups; k-- > 0 && (cpu < need.milli_cpu || mem < need.mem_bytes);) {
		struct cl_group *g = &e->groups[k];
		struct cl_vm *vm;

		for (vm = g->vms; vm && vm->vms_next; vm = vm->vms_next)
			;
		for (; vm && (cpu < need.milli_cpu || mem < need.mem_bytes); vm = vm->vms_prev) {
			if (vm->meta.role != CL_ROLE_POOL || !vm->leased || vm->want_delete ||
			    vm->meta.state == CL_ST_DELETING || strcmp(vm->host, host) != 0)
				continue;
			vm->want_delete = true;
			cpu += g->cfg->tpl.reserve.milli_cpu;
			mem += g->cfg->tpl.reserve.mem_bytes;
			cl_vm_emit(e, LOG_INFO, vm, "standby VM gives back its room on %s to %s",
				   host, for_vm->name);
		}
	}
}

static void record_error_done(struct cl_vm *vm, int r, const char *err)
{
	if (r < 0)
		cl_vm_emit(vm->g->e, LOG_WARNING, vm, "could not record its error: %s", err);
	cl_vm_kick(vm->g->e);
}

/* A member that could not be placed (or bound): its error recorded, the
 * next try after the back-off. */
static void member_unplaced(struct cl_vm *vm, const char *class, const char *code, const char *msg,
			    enum cl_engine_failure why)
{
	struct cl_engine *e = vm->g->e;
	bool same = vm->meta.has_error && strcmp(vm->meta.err_code, code) == 0;

	vm->next_try_usec = vmact_loop_now_usec(e->ev) + vm->g->cfg->life.retry_backoff_usec;
	vm->meta.state = CL_ST_PENDING;
	if (same && strcmp(vm->meta.err_msg, msg) == 0)
		return;
	if (!same) {
		vm->g->c.failures[why]++;
		cl_vm_emit(e, LOG_WARNING, vm, "not placed (%s): %s", code, msg);
	}
	vm->meta.has_error = true;
	snprintf(vm->meta.err_class, sizeof(vm->meta.err_class), "%s", class);
	snprintf(vm->meta.err_code, sizeof(vm->meta.err_code), "%s", code);
	snprintf(vm->meta.err_msg, sizeof(vm->meta.err_msg), "%s", msg);
	vm->meta.err_at = cl_vm_now_real();
	cl_vm_record(vm, record_error_done);
}

/* The cycle ended without a host (or its Permit or Bind failed). */
static void unplaced(struct cl_place_job *j, const struct cl_fw_status *st, bool bind_failed)
{
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	struct cl_group *g = vm->g;
	char msg[CL_FW_MSG_MAX + CL_FW_NAME_MAX + 8];

	snprintf(msg, sizeof(msg), "%s%s%s", st->plugin[0] ? st->plugin : "",
		 st->plugin[0] ? ": " : "", st->msg);
	if (strcmp(st->plugin, "ArbiterLease") == 0 && j->res.host[0]) {
		struct cl_ehost *h = cl_vm_ehost(e, j->res.host);

		if (h && st->code == CL_FW_UNSCHEDULABLE)
			h->c.refused++;
		else if (h)
			h->c.errors++;
	}
	placing_end(vm);
	if (vm->meta.role == CL_ROLE_POOL) {
		if (bind_failed)
			g->c.failures[CL_FAIL_BIND]++;
		cl_vm_emit(e, bind_failed ? LOG_WARNING : LOG_DEBUG, vm,
			   "standby VM for tier %s not made: %s",
			   cl_domxml_tier_name(vm->meta.tier), msg);
		g->next_refill_usec = vmact_loop_now_usec(e->ev) + g->cfg->life.retry_backoff_usec;
		cl_vm_ops_done(vm, -EAGAIN, msg);
		if (bind_failed && j->res.host[0]) {
			/* A failed bind undoes itself, but not when libvirtd
			 * went away under it: a definition it reported as
			 * failed may be on disk, a start's undo may not have
			 * reached it. So the VM stays, as a removal on that
			 * host, until the host says neither domain nor
			 * overlay is there (both calls take "none" as done). */
			if (!vm->host[0])
				snprintf(vm->host, sizeof(vm->host), "%s", j->res.host);
			vm->persisted = true;
			vm->meta.state = CL_ST_DELETING;
			vm->want_delete = true;
			return;
		}
		cl_vm_free(e, vm);
		return;
	}
	if (bind_failed && st->code == CL_FW_UNSCHEDULABLE) {
		/* A PreBind found the room gone (its lease lapsed while it
		 * waited and another took it): placed again after the
		 * back-off. */
		member_unplaced(vm, "out-of-resources", "HOST_CAPACITY", msg, CL_FAIL_NO_HOST);
	} else if (bind_failed) {
		member_unplaced(vm, "other", "BIND_FAILED", msg, CL_FAIL_BIND);
	} else if (strcmp(st->plugin, "Permit") == 0) {
		member_unplaced(vm, "other", "PERMIT_REJECTED", msg, CL_FAIL_NO_HOST);
	} else if (st->code == CL_FW_UNSCHEDULABLE || st->code == CL_FW_UNRESOLVABLE) {
		member_unplaced(vm, "out-of-resources", "HOST_CAPACITY", msg, CL_FAIL_NO_HOST);
	} else {
		member_unplaced(vm, "other", "PLACEMENT_FAILED", msg, CL_FAIL_NO_HOST);
	}
}

static void bind_done(void *data)
{
	struct cl_place_job *j = data;
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	const struct cl_meta *m = cl_fw_cycle_read(vm->cs, CL_PLUGINS_BIND_META);
	const char *moved = cl_fw_cycle_read(vm->cs, CL_PLUGINS_BIND_HOST);
	struct cl_ehost *h = cl_vm_ehost(e, j->res.host);

	/* Where the VM's definition is now, whatever the outcome. */
	if (moved)
		snprintf(vm->host, sizeof(vm->host), "%s", moved);
	if (j->bind.code != CL_FW_SUCCESS || !m) {
		unplaced(j, &j->bind, true);
		job_free(j);
		cl_vm_kick(e);
		return;
	}
	if (h)
		h->c.granted++;
	vm->meta = *m;
	vm->persisted = true;
	vm->leased = true;
	vm->healthy = false;
	vm->boot_deadline_usec = vmact_loop_now_usec(e->ev) + vm->g->cfg->life.boot_timeout_usec;
	vm->next_probe_usec = 0;
	vm->g->c.boots++;
	cl_vm_emit(e, LOG_INFO, vm, "started on %s (%s, attempt %u)", vm->host,
		   vm->meta.role == CL_ROLE_MEMBER ? "member" : cl_domxml_tier_name(vm->meta.tier),
		   vm->meta.attempts);
	placing_end(vm);
	job_free(j);
	cl_vm_kick(e);
}

static void submit_bind(struct cl_place_job *j)
{
	if (cl_jobs_submit(j->e->jobs, bind_run, bind_done, j) < 0) {
		struct cl_fw_status st = { .code = CL_FW_ERROR };

		snprintf(st.msg, sizeof(st.msg), "vmact-groupd is stopping");
		cl_fw_unreserve(j->fw, j->vm->cs, &j->fvm, j->res.host);
		unplaced(j, &st, false);
		job_free(j);
	}
}

static void schedule_done(void *data)
{
	struct cl_place_job *j = data;
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	uint64_t now = vmact_loop_now_usec(e->ev);

	/* Reserve took a lease there: it is renewed until the VM is bound
	 * or un-placed. */
	if (j->res.status.code == CL_FW_SUCCESS || j->res.status.code == CL_FW_WAIT)
		snprintf(vm->reserved_host, sizeof(vm->reserved_host), "%s", j->res.host);
	switch (j->res.status.code) {
	case CL_FW_SUCCESS:
		if (e->stopping) {
			/* Give the lease back; the VM stays as recorded. */
			struct cl_fw_status st = { .code = CL_FW_ERROR };

			snprintf(st.msg, sizeof(st.msg), "vmact-groupd is stopping");
			unreserve_run(j);
			unplaced(j, &st, false);
			job_free(j);
			return;
		}
		submit_bind(j);
		cl_place_take_resolved(e);
		return;
	case CL_FW_WAIT:
		if (j->wait_r < 0) {
			struct cl_fw_status st = { .code = CL_FW_ERROR };

			snprintf(st.msg, sizeof(st.msg), "cannot register the Permit wait");
			unreserve_run(j);
			unplaced(j, &st, false);
			job_free(j);
			return;
		}
		vm->pjob = j;
		cl_vm_emit(e, LOG_INFO, vm, "waits on %s for Permit (%s), at most %.0f s",
			   j->res.host, j->res.status.msg, j->res.wait_usec / 1e6);
		if (j->early_allowed) {
			vm->pjob = NULL;
			cl_vm_emit(e, LOG_INFO, vm, "allowed: binding on %s", j->res.host);
			submit_bind(j);
		} else if (j->early_rejected) {
			reject(e, vm, "Permit", j->early_msg);
		}
		cl_place_take_resolved(e);
		return;
	default:
		if (j->res.nominated[0] && vm->meta.role == CL_ROLE_MEMBER) {
			struct vmact_resources need = vm->g->cfg->tpl.reserve;

			for (size_t i = 0; i < j->n_hosts; i++)
				if (strcmp(j->hosts[i].name, j->res.nominated) == 0) {
					struct vmact_resources f = { 0 };

					if (j->hosts[i].watermark.milli_cpu >
					    j->hosts[i].reserved.milli_cpu)
						f.milli_cpu = j->hosts[i].watermark.milli_cpu -
							      j->hosts[i].reserved.milli_cpu;
					if (j->hosts[i].watermark.mem_bytes >
					    j->hosts[i].reserved.mem_bytes)
						f.mem_bytes = j->hosts[i].watermark.mem_bytes -
							      j->hosts[i].reserved.mem_bytes;
					need.milli_cpu = need.milli_cpu > f.milli_cpu
								 ? need.milli_cpu - f.milli_cpu
								 : 0;
					need.mem_bytes = need.mem_bytes > f.mem_bytes
								 ? need.mem_bytes - f.mem_bytes
								 : 0;
				}
			evict(e, j->res.nominated, need, vm);
			placing_end(vm);
			vm->evict_wait = true;
			vm->next_try_usec = now;
			job_free(j);
			cl_vm_kick(e);
			return;
		}
		unplaced(j, &j->res.status, false);
		job_free(j);
		cl_vm_kick(e);
	}
}

void cl_place_submit(struct cl_vm *vm)
{
	struct cl_engine *e = vm->g->e;
	const struct cl_group_cfg *cfg = vm->g->cfg;
	struct cl_place_job *j;

	if (vm->placing || vm->busy || e->stopping)
		return;
	j = calloc(1, sizeof(*j));
	if (!j || cl_fw_cycle_new(&vm->cs) < 0) {
		free(j);
		return;
	}
	j->e = e;
	j->vm = vm;
	j->fw = vm->g->fw;
	snprintf(j->fvm.uid, sizeof(j->fvm.uid), "%s", vm->uuid);
	snprintf(j->fvm.name, sizeof(j->fvm.name), "%s", vm->name);
	snprintf(j->fvm.group, sizeof(j->fvm.group), "%s", cfg->id);
	j->fvm.standby = vm->meta.role == CL_ROLE_POOL;
	j->fvm.size = cfg->tpl.reserve;
	for (size_t i = 0; i < cfg->n_hosts; i++)
		vm->hosts_list[i] = cfg->hosts[i];
	j->fvm.group_hosts = vm->hosts_list;
	j->fvm.n_group_hosts = cfg->n_hosts;
	if (vm->persisted)
		snprintf(j->fvm.defined_on, sizeof(j->fvm.defined_on), "%s", vm->host);
	vm->spec.group = cfg;
	vm->spec.meta = vm->meta;
	j->fvm.spec = &vm->spec;
	snapshot_engine(e, j);
	vm->placing = true;
	vm->busy = true;
	vm->evict_wait = false;
	vm->sjob = j;
	if (cl_jobs_submit(e->sched, schedule_run, schedule_done, j) < 0) {
		placing_end(vm);
		free(j);
	}
}

/* ---- Permit waits ---- */

static struct cl_vm *waiting_vm(struct cl_engine *e, const char *uid)
{
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms)
			if (vm->pjob && strcmp(vm->uuid, uid) == 0)
				return vm;
	}
	return NULL;
}

static void rejected_done(void *data)
{
	struct cl_place_job *j = data;
	struct cl_engine *e = j->e;

	unplaced(j, &j->bind, false);
	job_free(j);
	cl_vm_kick(e);
}

static void reject(struct cl_engine *e, struct cl_vm *vm, const char *who, const char *why)
{
	struct cl_place_job *j = vm->pjob;

	vm->pjob = NULL;
	j->bind.code = CL_FW_UNSCHEDULABLE;
	snprintf(j->bind.plugin, sizeof(j->bind.plugin), "%s", who);
	snprintf(j->bind.msg, sizeof(j->bind.msg), "%s", why);
	cl_vm_emit(e, LOG_INFO, vm, "rejected while waiting: %s", why);
	if (cl_jobs_submit(e->jobs, unreserve_run, rejected_done, j) < 0) {
		unreserve_run(j);
		rejected_done(j);
	}
}

static void on_expired(void *ud, const struct cl_fw_waiting *w)
{
	struct cl_engine *e = ud;
	struct cl_vm *vm = waiting_vm(e, w->uid);
	char why[CL_FW_MSG_MAX];

	if (!vm)
		return;
	snprintf(why, sizeof(why), "Permit wait timed out after %.0f s",
		 (w->deadline_usec - w->since_usec) / 1e6);
	reject(e, vm, "Permit", why);
}

/* A VM the framework resolved: bound when allowed, un-placed when
 * rejected; one whose cycle's end the loop has not seen yet is marked for
 * it (schedule_done acts then). */
static void on_resolved(void *ud, const struct cl_fw_waiting *w, bool allowed, const char *msg)
{
	struct cl_engine *e = ud;
	struct cl_vm *vm = waiting_vm(e, w->uid);
	struct cl_place_job *j;

	if (!vm) {
		for (size_t i = 0; i < e->n_groups && !vm; i++) {
			struct cl_vm *v;

			VMACT_LIST_FOREACH(vms, v, e->groups[i].vms)
				if (v->sjob && strcmp(v->uuid, w->uid) == 0)
					vm = v;
		}
		/* Already acted on (a loss, a reject the engine made). */
		if (!vm)
			return;
		vm->sjob->early_allowed = allowed;
		vm->sjob->early_rejected = !allowed;
		snprintf(vm->sjob->early_msg, sizeof(vm->sjob->early_msg), "%s", msg);
		return;
	}
	j = vm->pjob;
	if (!allowed) {
		reject(e, vm, "Permit", msg && *msg ? msg : "rejected");
		return;
	}
	vm->pjob = NULL;
	cl_vm_emit(e, LOG_INFO, vm, "allowed: binding on %s", j->res.host);
	submit_bind(j);
}

void cl_place_take_resolved(struct cl_engine *e)
{
	for (size_t i = 0; i < e->n_fws; i++)
		cl_fw_take_resolved(e->fws[i], on_resolved, e);
}

void cl_place_waiting_expire(struct cl_engine *e)
{
	uint64_t now = vmact_now_usec();

	cl_place_take_resolved(e);
	for (size_t i = 0; i < e->n_fws; i++) {
		uint64_t next = cl_fw_next_deadline(e->fws[i]);

		if (next && next <= now)
			cl_fw_expire(e->fws[i], now, on_expired, e);
	}
	/* A member given up while it waits: rejected now. */
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms)
			if (vm->pjob && (vm->want_delete || vm->want_return))
				cl_fw_reject(vm->pjob->fw, vm->uuid, "given up while waiting");
	}
	cl_place_take_resolved(e);
}

int cl_place_allow(struct cl_engine *e, const char *uid, const char *plugin)
{
	struct cl_vm *vm = waiting_vm(e, uid);
	int r;

	if (!vm)
		return -ENOENT;
	r = cl_fw_allow(vm->pjob->fw, uid, plugin);
	if (r < 0)
		return r;
	cl_place_take_resolved(e);
	return 0;
}

int cl_place_reject(struct cl_engine *e, const char *uid, const char *why)
{
	struct cl_vm *vm = waiting_vm(e, uid);

	if (!vm)
		return -ENOENT;
	cl_fw_reject(vm->pjob->fw, uid, why && *why ? why : "rejected by an operator");
	cl_place_take_resolved(e);
	return 0;
}

void cl_place_lost(struct cl_engine *e, struct cl_vm *vm, const char *why)
{
	struct cl_fw *fw;

	if (!vm->pjob)
		return;
	fw = vm->pjob->fw;
	reject(e, vm, "ArbiterLease", why);
	/* Out of the framework's map too; its resolved entry finds no
	 * waiting VM and is dropped. */
	cl_fw_reject(fw, vm->uuid, why);
}
