/* SPDX-License-Identifier: Apache-2.0 */
/* Finding the VMs again (a start-up, a host back after being unreachable)
 * from their metadata alone, and the leases they hold kept alive.
 *
 * A scan of a host takes each domain carrying our metadata as what it
 * says it is: a booting VM's wait resumes where its boot time puts it
 * (doc/cluster.md, "Pool lifecycle"), a VM recorded as being created is
 * destroyed (there is no telling how far it got; a member keeps
 * its placeholder and is placed again), a removal goes on. Overlays of
 * ours without a domain are deleted. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "base/macro.h"
#include "base/time.h"

DEFINE_PTR_CLEANUP(rec_conn_closep, struct _virConnect, virConnectClose)

/* A host whose scan failed is tried again after this long. */
#define RESCAN_USEC (10 * 1000000ULL)

struct found {
	struct cl_virt_dom d;
	bool bad;
	char why[128];
};

struct scan_job {
	struct cl_engine *e;
	struct cl_ehost *h;
	struct found *doms;
	size_t n, cap;
	char (*vols)[CL_NAME_MAX + 8];
	size_t n_vols, cap_vols;
	int r;
	struct vmact_err err;
};

static void on_dom(void *ud, const struct cl_virt_dom *d, bool bad, const char *why)
{
	struct scan_job *j = ud;

	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 16;
		struct found *n = realloc(j->doms, cap * sizeof(*n));

		if (!n)
			return;
		j->doms = n;
		j->cap = cap;
	}
	j->doms[j->n].d = *d;
	j->doms[j->n].bad = bad;
	snprintf(j->doms[j->n].why, sizeof(j->doms[j->n].why), "%s", why ? why : "");
	j->n++;
}

static void on_vol(void *ud, const char *vol)
{
	struct scan_job *j = ud;

	if (j->n_vols == j->cap_vols) {
		size_t cap = j->cap_vols ? j->cap_vols * 2 : 16;
		char(*n)[CL_NAME_MAX + 8] = realloc(j->vols, cap * sizeof(*n));

		if (!n)
			return;
		j->vols = n;
		j->cap_vols = cap;
	}
	snprintf(j->vols[j->n_vols++], CL_NAME_MAX + 8, "%s", vol);
}

static void scan_run(void *data)
{
	struct scan_job *j = data;
	_cleanup_(rec_conn_closep) virConnectPtr c = cl_host_conn(j->h->h, &j->err);

	if (!c) {
		j->r = -EHOSTUNREACH;
		return;
	}
	j->r = cl_virt_list(c, on_dom, j, &j->err);
	/* A host without the pool (one that only takes moved VMs) has no
	 * overlays of ours; a group placed there fails its bind, saying so. */
	if (j->r >= 0) {
		j->r = cl_virt_list_volumes(c, cl_host_cfg(j->h->h)->storage_pool,
					    j->e->cfg->name_prefix, on_vol, j, &j->err);
		if (j->r == -ENOENT)
			j->r = 0;
	}
}

/* ---- small jobs of the scan ---- */

struct drop_job {
	struct cl_host *h;
	char uuid[VIR_UUID_STRING_BUFLEN], volume[CL_NAME_MAX + 8];
	struct vmact_err err;
};

static void drop_run(void *data)
{
	struct drop_job *j = data;
	_cleanup_(rec_conn_closep) virConnectPtr c = cl_host_conn(j->h, &j->err);

	if (!c)
		return;
	if (j->uuid[0])
		cl_virt_remove(c, j->uuid, &j->err);
	if (j->volume[0])
		cl_virt_overlay_delete(c, cl_host_cfg(j->h)->storage_pool, j->volume, &j->err);
}

static void drop(struct cl_engine *e, struct cl_ehost *h, const char *uuid, const char *volume)
{
	struct drop_job *j = calloc(1, sizeof(*j));

	if (!j)
		return;
	j->h = h->h;
	snprintf(j->uuid, sizeof(j->uuid), "%s", uuid ? uuid : "");
	snprintf(j->volume, sizeof(j->volume), "%s", volume ? volume : "");
	if (cl_jobs_submit(e->jobs, drop_run, free, j) < 0)
		free(j);
}

/* ---- merging what was found ---- */

static struct cl_group *group_of(struct cl_engine *e, const char *id)
{
	for (size_t i = 0; i < e->n_groups; i++)
		if (strcmp(e->groups[i].cfg->id, id) == 0)
			return &e->groups[i];
	return NULL;
}

static bool holds_capacity(const struct cl_virt_dom *d)
{
	return d->run == CL_VIRT_RUNNING || d->run == CL_VIRT_PAUSED;
}

/* A member in service found on two hosts, one copy running and the other
 * paused: a move of it cut off after the target took over (vmact-groupd
 * killed between the end of the memory's sending and the source's
 * confirmation: libvirt leaves the source paused). The running copy is
 * the VM; the paused one goes with its definition and its disk there
 * (its host's pool: the running copy's disk is the other host's). True
 * when settled so. */
static void copy_removed(struct cl_engine *e, const struct cl_vm *vm, const char *runs_on,
			 const char *stale)
{
	cl_vm_emit(e, LOG_NOTICE, vm,
		   "runs on %s and was left paused on %s by a move nobody finished: the copy on %s "
		   "is removed",
		   runs_on, stale, stale);
}

static bool two_copies(struct cl_engine *e, struct cl_ehost *h, const struct cl_virt_dom *d,
		       struct cl_vm *vm)
{
	const char *host = cl_host_name(h->h);
	struct cl_ehost *oh = cl_vm_ehost(e, vm->host);
	char vol[CL_NAME_MAX + 8];

	if (d->meta.state != CL_ST_CLAIMED || vm->meta.state != CL_ST_CLAIMED || vm->busy ||
	    vm->moving || !oh || oh == h)
		return false;
	cl_domxml_volume_name(vm->name, vol, sizeof(vol));
	if (d->run == CL_VIRT_RUNNING && vm->found_paused) {
		copy_removed(e, vm, host, vm->host);
		drop(e, oh, vm->uuid, vol);
		snprintf(vm->host, sizeof(vm->host), "%s", host);
		vm->meta = d->meta;
		vm->leased = vm->found_running = true;
		vm->found_paused = vm->found_move_paused = false;
		return true;
	}
	if (d->run == CL_VIRT_PAUSED && !vm->found_paused && vm->leased) {
		copy_removed(e, vm, vm->host, host);
		drop(e, h, d->uuid, vol);
		return true;
	}
	return false;
}

static void adopt(struct cl_engine *e, struct cl_ehost *h, const struct cl_virt_dom *d)
{
	const char *host = cl_host_name(h->h);
	struct cl_group *g = group_of(e, d->meta.group);
	uint64_t now = vmact_loop_now_usec(e->ev);
	double real = cl_vm_now_real();
	struct cl_vm *vm, *other;

	if (!g) {
		vm = calloc(1, sizeof(*vm));
		if (!vm)
			return;
		snprintf(vm->uuid, sizeof(vm->uuid), "%s", d->uuid);
		snprintf(vm->name, sizeof(vm->name), "%s", d->name);
		snprintf(vm->host, sizeof(vm->host), "%s", host);
		snprintf(vm->group_id, sizeof(vm->group_id), "%s", d->meta.group);
		vm->meta = d->meta;
		vm->persisted = true;
		VMACT_LIST_APPEND(vms, e->orphans, vm);
		cl_vm_emit(e, LOG_WARNING, vm,
			   "on %s, of group '%s' which is not configured: left alone", host,
			   d->meta.group);
		return;
	}
	other = cl_vm_by_uuid(e, d->uuid);
	if (other) {
		/* One UUID defined twice: a bind moved a member and was cut off
		 * before the placeholder went. The placeholder goes now. */
		if (d->meta.state == CL_ST_PENDING) {
			drop(e, h, d->uuid, NULL);
			return;
		}
		if (other->meta.state == CL_ST_PENDING && !other->busy && !other->placing) {
			struct cl_ehost *oh = cl_vm_ehost(e, other->host);

			if (oh)
				drop(e, oh, other->uuid, NULL);
			snprintf(other->host, sizeof(other->host), "%s", host);
			other->meta = d->meta;
			vm = other;
			goto state;
		}
		if (two_copies(e, h, d, other))
			return;
		/* Seen on both hosts of its move (the target's copy before
		 * the end): the move settles it. */
		if (!other->moving)
			cl_vm_emit(e, LOG_WARNING, other,
				   "also defined on %s: that one is left alone", host);
		return;
	}
	vm = cl_vm_new(g, d->uuid, d->name);
	if (!vm)
		return;
	snprintf(vm->host, sizeof(vm->host), "%s", host);
	vm->meta = d->meta;
	vm->persisted = true;
state:
	vm->leased = holds_capacity(d);
	vm->found_paused = d->run == CL_VIRT_PAUSED;
	vm->found_move_paused = vm->found_paused && d->move_paused;
	vm->next_settle_usec = 0;
	/* It runs: its first lease records it whatever the room. */
	vm->found_running = vm->leased;
	switch (vm->meta.state) {
	case CL_ST_BOOTING: {
		double left = vm->meta.booted + g->cfg->life.boot_timeout_usec / 1e6 - real;

		vm->boot_deadline_usec = now + (left > 0 ? (uint64_t)(left * 1e6) : 0);
		vm->next_probe_usec = now;
		cl_vm_emit(e, LOG_INFO, vm, "found booting on %s: waiting on (%.0f s left)", host,
			   left > 0 ? left : 0);
		break;
	}
	case CL_ST_READY: {
		bool ok = (vm->meta.tier == CL_TIER_RUNNING && d->run == CL_VIRT_RUNNING) ||
			  (vm->meta.tier == CL_TIER_PAUSED && d->run == CL_VIRT_PAUSED) ||
			  (vm->meta.tier == CL_TIER_SAVED && d->run == CL_VIRT_OFF && d->has_save);

		vm->last_healthy_usec = now;
		vm->next_probe_usec = now;
		if (!ok) {
			vm->want_delete = true;
			cl_vm_emit(e, LOG_WARNING, vm,
				   "standby in tier %s but the domain is not (removed)",
				   cl_domxml_tier_name(vm->meta.tier));
		}
		break;
	}
	case CL_ST_CREATING:
		cl_vm_emit(e, LOG_WARNING, vm, "found being created on %s, without a result", host);
		break;
	case CL_ST_CLAIMED:
		if (d->run != CL_VIRT_RUNNING)
			cl_vm_emit(e, LOG_WARNING, vm, "in service but the domain is not running");
		break;
	default:
		break;
	}
}

static void scan_done(void *data)
{
	struct scan_job *j = data;
	struct cl_engine *e = j->e;
	struct cl_ehost *h = j->h;
	bool all = true;

	h->scanning = false;
	if (j->r < 0) {
		h->next_scan_usec = vmact_loop_now_usec(e->ev) + RESCAN_USEC;
		cl_vm_emit(e, LOG_WARNING, NULL, "host %s: cannot find its VMs (tried again): %s",
			   cl_host_name(h->h), j->err.msg);
	} else {
		for (size_t i = 0; i < j->n; i++) {
			if (j->doms[i].bad) {
				cl_vm_emit(e, LOG_WARNING, NULL,
					   "host %s: domain %s has cluster metadata that does not "
					   "parse (left alone): %s",
					   cl_host_name(h->h), j->doms[i].d.name, j->doms[i].why);
				continue;
			}
			adopt(e, h, &j->doms[i].d);
		}
		/* Overlays whose domain is gone: a removal cut off between the
		 * two, or a bind between the disk and the definition. */
		for (size_t v = 0; v < j->n_vols; v++) {
			bool used = false;

			for (size_t i = 0; i < j->n && !used; i++) {
				char want[CL_NAME_MAX + 8];

				cl_domxml_volume_name(j->doms[i].d.name, want, sizeof(want));
				used = strcmp(want, j->vols[v]) == 0;
			}
			/* The overlay a move made on its target before the
			 * domain arrives (or left on its source until it went). */
			if (!used && cl_move_holds_volume(e, cl_host_name(h->h), j->vols[v]))
				used = true;
			if (!used && strstr(j->vols[v], ".qcow2")) {
				cl_vm_emit(e, LOG_INFO, NULL,
					   "host %s: overlay %s belongs to no domain: deleted",
					   cl_host_name(h->h), j->vols[v]);
				drop(e, h, NULL, j->vols[v]);
			}
		}
		h->scanned = true;
		cl_vm_emit(e, LOG_INFO, NULL, "host %s: %zu VM(s) of ours found",
			   cl_host_name(h->h), j->n);
	}
	/* Ready once every host was scanned or tried once: an unreachable
	 * host's VMs join when it answers. */
	for (size_t i = 0; i < e->n_hosts; i++)
		all &= e->hosts[i].scanned || e->hosts[i].next_scan_usec > 0;
	if (all && !e->ready) {
		e->ready = true;
		e->next_renew_usec = 0;
		cl_vm_emit(e, LOG_INFO, NULL, "ready: the VMs of every reachable host are known");
	}
	free(j->doms);
	free(j->vols);
	free(j);
	cl_vm_kick(e);
}

void cl_recover_scan(struct cl_engine *e, struct cl_ehost *h)
{
	struct scan_job *j = calloc(1, sizeof(*j));

	if (!j)
		return;
	j->e = e;
	j->h = h;
	h->scanning = true;
	if (cl_jobs_submit(e->jobs, scan_run, scan_done, j) < 0) {
		h->scanning = false;
		free(j);
	}
}

/* ---- a member left paused by a move ---- */

struct paused_job {
	struct cl_engine *e;
	struct cl_vm *vm;
	char name[CL_NAME_MAX], uuid[VIR_UUID_STRING_BUFLEN], host[CL_NAME_MAX];
	const char *ran_at; /* an engine host's name */
	int r;
	struct vmact_err err;
};

static void paused_run(void *data)
{
	struct paused_job *j = data;
	struct cl_ehost *here = cl_vm_ehost(j->e, j->host);
	_cleanup_(rec_conn_closep) virConnectPtr c = here ? cl_host_conn(here->h, &j->err) : NULL;

	j->r = c ? cl_relief_settle_paused(j->e, j->host, c, j->name, &j->ran_at, &j->err)
		 : -EAGAIN;
}

static void paused_done(void *data)
{
	struct paused_job *j = data;
	struct cl_engine *e = j->e;
	struct cl_vm *vm = j->vm;

	vm->busy = false;
	if (j->r < 0) {
		vm->next_settle_usec = vmact_loop_now_usec(e->ev) + RESCAN_USEC;
		cl_vm_emit(e, LOG_DEBUG, vm, "left paused on %s by a move: not decided yet: %s",
			   j->host, j->err.msg);
	} else {
		vm->found_paused = vm->found_move_paused = false;
		if (j->r == 1) {
			struct cl_ehost *old = cl_vm_ehost(e, j->host);
			char vol[CL_NAME_MAX + 8];

			copy_removed(e, vm, j->ran_at, j->host);
			snprintf(vm->host, sizeof(vm->host), "%s", j->ran_at);
			vm->leased = vm->found_running = true;
			cl_domxml_volume_name(vm->name, vol, sizeof(vol));
			if (old)
				drop(e, old, NULL, vol);
		} else {
			cl_vm_emit(e, LOG_NOTICE, vm,
				   "was left paused on %s by a move nobody finished; it runs on no "
				   "other host: resumed",
				   j->host);
		}
	}
	free(j);
	cl_vm_kick(e);
}

void cl_recover_paused(struct cl_engine *e, uint64_t now)
{
	if (!e->ready || e->stopping)
		return;
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms) {
			struct paused_job *j;

			if (!vm->found_move_paused || vm->meta.state != CL_ST_CLAIMED || vm->busy ||
			    vm->moving || vm->placing || vm->gone || now < vm->next_settle_usec ||
			    !(j = calloc(1, sizeof(*j))))
				continue;
			j->e = e;
			j->vm = vm;
			snprintf(j->name, sizeof(j->name), "%s", vm->name);
			snprintf(j->uuid, sizeof(j->uuid), "%s", vm->uuid);
			snprintf(j->host, sizeof(j->host), "%s", vm->host);
			vm->busy = true;
			if (cl_jobs_submit(e->jobs, paused_run, paused_done, j) < 0) {
				vm->busy = false;
				free(j);
			}
		}
	}
}

/* ---- leases ---- */

/* Renewing a lease is taking it again with the same size: a lease the
 * arbiter still holds is only prolonged, whatever the room. `existing`
 * (recorded whatever the room, as a pod registering at its size is) only
 * for a VM that runs and is not on the books: found running by a scan
 * after a restart of ours, or whose lease the arbiter no longer had
 * (its restart). Never for a VM in placement: it does not run yet, and a
 * lapsed reservation is taken again only if the room is still there;
 * otherwise it is un-placed (doc/cluster.md, "Capacity leases"). */

struct renew_vm {
	char name[CL_NAME_MAX];
	char uuid[VIR_UUID_STRING_BUFLEN];
	struct vmact_resources size;
	bool placing;  /* a reservation, not a running VM */
	bool existing; /* sent as existing */
	int r;
	char err[CL_FW_MSG_MAX];
};

struct renew_job {
	struct cl_engine *e;
	struct cl_host *h;
	size_t n;
	struct renew_vm *vms;
	unsigned failed;
	struct vmact_err err;
};

static void renew_run(void *data)
{
	struct renew_job *j = data;

	for (size_t i = 0; i < j->n; i++) {
		struct renew_vm *v = &j->vms[i];
		struct vmact_err err = { 0 };

		v->r = cl_host_lease(j->h, CL_PLUGINS_LEASE_NS, v->name, v->size,
				     j->e->cfg->life.lease_usec, v->existing, &err);
		if (v->r < 0) {
			j->failed++;
			j->err = err;
			snprintf(v->err, sizeof(v->err), "%.200s", err.msg);
		}
	}
}

struct release_job {
	struct cl_host *h;
	char name[CL_NAME_MAX];
};

static void release_run(void *data)
{
	struct release_job *j = data;
	struct vmact_err err = { 0 };

	cl_host_release(j->h, CL_PLUGINS_LEASE_NS, j->name, &err);
}

static void renew_done(void *data)
{
	struct renew_job *j = data;
	const char *host = cl_host_name(j->h);

	for (size_t i = 0; i < j->n; i++) {
		struct renew_vm *v = &j->vms[i];
		struct cl_vm *vm = cl_vm_by_uuid(j->e, v->uuid);
		bool going = vm && (vm->want_delete || vm->meta.state == CL_ST_DELETING);
		bool holds = vm && !going &&
			     ((vm->leased && strcmp(vm->host, host) == 0) ||
			      strcmp(vm->reserved_host, host) == 0);

		if (v->r >= 0 && !holds) {
			/* Released while the renewal was on its way (the VM
			 * bound elsewhere, un-placed, removed): the renewal
			 * must not keep its room. */
			struct release_job *rj = calloc(1, sizeof(*rj));

			if (rj) {
				rj->h = j->h;
				snprintf(rj->name, sizeof(rj->name), "%s", v->name);
				if (cl_jobs_submit(j->e->jobs, release_run, free, rj) < 0)
					free(rj);
			}
			continue;
		}
		if (!vm)
			continue;
		if (v->r >= 0) {
			vm->found_running = false;
			continue;
		}
		if (v->r != -EBUSY)
			continue;
		if (v->placing && vm->pjob) {
			char why[CL_FW_MSG_MAX + 64];

			snprintf(why, sizeof(why),
				 "its reservation on %s lapsed and the room is gone: %s", host,
				 v->err);
			cl_place_lost(j->e, vm, why);
		} else if (!v->placing && vm->leased) {
			/* The arbiter lost its lease (a restart) and the room is
			 * promised elsewhere; the VM runs all the same: it is
			 * recorded as it is, next time. */
			vm->found_running = true;
			cl_vm_emit(j->e, LOG_WARNING, vm,
				   "its lease on %s was lost and the room promised elsewhere: "
				   "recorded as running",
				   host);
		}
	}
	if (j->failed)
		cl_vm_emit(j->e, LOG_WARNING, NULL, "host %s: %u lease(s) not renewed: %s",
			   cl_host_name(j->h), j->failed, j->err.msg);
	free(j->vms);
	free(j);
}

static int renew_add(struct renew_job *j, size_t *cap, const struct cl_vm *vm, bool placing)
{
	struct renew_vm *v;

	if (j->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		void *nv = realloc(j->vms, nc * sizeof(*j->vms));

		if (!nv)
			return -ENOMEM;
		j->vms = nv;
		*cap = nc;
	}
	v = &j->vms[j->n++];
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", vm->name);
	snprintf(v->uuid, sizeof(v->uuid), "%s", vm->uuid);
	v->size = vm->g->cfg->tpl.reserve;
	v->placing = placing;
	v->existing = !placing && vm->found_running;
	return 0;
}

void cl_recover_renew(struct cl_engine *e)
{
	for (size_t i = 0; i < e->n_hosts; i++) {
		const char *name = cl_host_name(e->hosts[i].h);
		struct renew_job *j = calloc(1, sizeof(*j));
		size_t cap = 0;

		if (!j)
			return;
		j->e = e;
		j->h = e->hosts[i].h;
		for (size_t k = 0; k < e->n_groups; k++) {
			struct cl_vm *vm;

			VMACT_LIST_FOREACH(vms, vm, e->groups[k].vms) {
				int r = 0;

				/* A VM in placement holds the lease its Reserve took
				 * on the host it reserved at (it waits for a Permit
				 * plugin, or is being bound). One moving has its
				 * leases kept by its move (a renewal here would clear
				 * the source's mark). */
				if (vm->placing && strcmp(vm->reserved_host, name) == 0)
					r = renew_add(j, &cap, vm, true);
				else if (!vm->placing && !vm->moving && vm->leased &&
					 !vm->want_delete && vm->meta.state != CL_ST_DELETING &&
					 strcmp(vm->host, name) == 0)
					r = renew_add(j, &cap, vm, false);
				if (r < 0)
					break;
			}
		}
		if (!j->n || cl_jobs_submit(e->jobs, renew_run, renew_done, j) < 0) {
			free(j->vms);
			free(j);
		}
	}
}
