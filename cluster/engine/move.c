/* SPDX-License-Identifier: Apache-2.0 */
/* Live migration of a running VM to another host (doc/cluster.md, "Live
 * migration"), in the order that keeps every ledger within its capacity
 * and the VM's allocation fixed while it moves:
 *
 *   plan      find the VM (the host that runs it), check it may move, read
 *             its reservation at its host's arbiter, and place it through
 *             the placement framework (the first scheduler profile's
 *             scheduling cycle) among the hosts that take moved VMs (or
 *             the one asked for): its filters, its scores, and its
 *             Reserve, a lease at the target's arbiter, before anything
 *             moves (no room there, no move);
 *   reserved  the move starts;
 *   freezing  its entry at the source's arbiter marked moving: its agent
 *             is answered Migrate and grows it no further; vmactd stops
 *             resizing it and says so (the entry "frozen");
 *   migrating libvirt moves it, its definition with it;
 *   done      the source's lease ends (vmactd there forgets the VM once
 *             it left); the target's lease holds until the target's
 *             vmactd speaks for the VM.
 *
 * A VM of a group (its group's migration.enabled, a member in service)
 * takes its disk along: before the freeze an overlay of the same name is
 * made in the target's pool over the group's base volume there (libvirt
 * copies only the top of a disk's chain, VIR_MIGRATE_NON_SHARED_INC), the
 * definition is rewritten for the target's pool and channel directory,
 * and its provider ID stays the one it was claimed with (recorded in its
 * metadata as provider-host: a Node's never changes). Done, the source's
 * overlay goes; undone, the target's. The engine holds the VM busy while
 * it moves (no other change of it, no renewal of its lease but the
 * move's) and has it on the target once it ends.
 *
 * A failure at any step undoes the steps before it: the target's lease
 * released, the source's mark cleared; the VM runs on where it ran
 * (libvirt cancels a move that fails, and one whose caller died). Each
 * move is one job on the movers' pool, its phase visible meanwhile. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/quantity.h"
#include "base/time.h"

/* How long the source's vmactd (or a Neon agent answered Migrate) may take
 * to stop resizing the VM: an operation in flight ends first (a memory
 * plug under TCG: seconds), an agent asks the arbiter every few seconds. */
#define FREEZE_TIMEOUT_USEC (30 * VMACT_USEC_PER_SEC)
#define FREEZE_POLL_USEC    (100 * 1000)

enum phase { PH_PLANNED, PH_RESERVED, PH_FREEZING, PH_MIGRATING, PH_DONE, PH_FAILED };
static const char *const phase_names[] = { "planned",   "reserved", "freezing",
					   "migrating", "done",     "failed" };

const double cl_engine_downtime_bounds[CL_ENGINE_DOWNTIME_BUCKETS] = CL_ENGINE_DOWNTIME_BOUNDS;
/* engine.c's cl_engine_hist_bounds, the same values: this file calls none
 * above it. */
static const double hist_bounds[CL_ENGINE_HIST_BUCKETS] = CL_ENGINE_HIST_BOUNDS;

struct cl_move {
	VMACT_LIST_FIELDS(struct cl_move, moves);
	struct cl_engine *e;
	uint64_t id;
	char vm[CL_NAME_MAX];
	char want_to[CL_NAME_MAX]; /* "" = the best host */
	bool force;
	enum cl_engine_move_reason reason;
	char why[512]; /* what chose it (relief, drain) */
	/* The plan's (its job's, then the loop's). */
	struct cl_migrate_dom dom;
	struct vmact_resources size; /* its reservation at its host */
	char from[CL_NAME_MAX], to[CL_NAME_MAX];
	/* Its placement (the plan's scheduling cycle): reserved at `to` until
	 * the move ends or is undone (Unreserve). */
	struct cl_fw *fw;
	struct cl_fw_cycle *cs;
	struct cl_fw_vm fvm;
	const char *allowed[CL_MAX_HOSTS]; /* its GroupHosts: the engine's host names */
	bool reserved;
	bool own_lease; /* taken here: the profile has no ArbiterLease at Reserve */
	/* A group's VM: read on the loop (cl_move_set_member, again at the
	 * start); its overlay volume, and whether the move made the target's. */
	struct cl_move_member mem;
	char volume[CL_NAME_MAX + 8];
	char volume_path[PATH_MAX], from_volume_path[PATH_MAX]; /* the target's, the source's */
	bool dst_overlay;
	char note[VMACT_ERR_MSG_MAX]; /* what a successful move left behind */
	unsigned status;              /* the plan's answer: 202 or the refusal's */
	const char *refusal;
	char error[VMACT_ERR_MSG_MAX];
	cl_engine_answer_fn *fn;
	void *ud;
	/* The move's: the phase is written by its job, read by the loop. */
	int phase;
	bool ended, success;
	double started_real;
	uint64_t started_usec, ended_usec;
	int64_t downtime_ms;
	/* Held by the move's job while it releases and by a renewal while it
	 * renews, so that no renewal re-takes a lease the move let go. */
	pthread_mutex_t lock;
	bool renewing;
	uint64_t next_renew_usec;
};

static enum phase phase_of(const struct cl_move *m)
{
	return (enum phase)__atomic_load_n(&m->phase, __ATOMIC_ACQUIRE);
}

static void set_phase(struct cl_move *m, enum phase p)
{
	__atomic_store_n(&m->phase, (int)p, __ATOMIC_RELEASE);
}

static void move_free(struct cl_move *m)
{
	if (!m)
		return;
	cl_fw_cycle_free(m->cs);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct cl_host *host_of(struct cl_engine *e, const char *name)
{
	struct cl_ehost *h = cl_vm_ehost(e, name);

	return h ? h->h : NULL;
}

const char *cl_engine_move_result_name(enum cl_engine_move_result r)
{
	return r == CL_MOVE_SUCCESS ? "success" : "failed";
}

const char *cl_engine_move_reason_name(enum cl_engine_move_reason r)
{
	static const char *const names[] = { "command", "pressure", "drain" };

	return (unsigned)r < CL_N_MOVE_REASONS ? names[r] : "?";
}

/* ---- plan (a job) ---- */

static void fmt_size(struct vmact_resources r, char *buf, size_t len)
{
	char c[32], m[32];

	vmact_quantity_format_milli(r.milli_cpu, c, sizeof(c));
	vmact_quantity_format_bytes(r.mem_bytes, m, sizeof(m));
	snprintf(buf, len, "%s CPU / %s", c, m);
}

static void refuse(struct cl_move *m, unsigned status, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse(struct cl_move *m, unsigned status, const char *reason, const char *fmt, ...)
{
	va_list ap;

	m->status = status;
	m->refusal = reason;
	va_start(ap, fmt);
	vsnprintf(m->error, sizeof(m->error), fmt, ap);
	va_end(ap);
}

/* Where the VM runs: the first host whose libvirt has it running. */
static bool find_source(struct cl_move *m)
{
	struct cl_engine *e = m->e;
	char unreachable[1024] = "";

	for (size_t i = 0; i < e->n_hosts; i++) {
		struct vmact_err err = { 0 };
		virConnectPtr c = cl_host_conn(e->hosts[i].h, &err);
		int r;

		if (!c) {
			size_t n = strlen(unreachable);

			snprintf(unreachable + n, sizeof(unreachable) - n, "%s%s: %.200s",
				 n ? "; " : "", cl_host_name(e->hosts[i].h), err.msg);
			continue;
		}
		r = cl_migrate_inspect(c, m->vm, &m->dom, &err);
		virConnectClose(c);
		if (r == -ENOENT || r == -ESRCH)
			continue;
		if (r < 0) {
			refuse(m, 503, "unavailable", "%s", err.msg);
			return false;
		}
		snprintf(m->from, sizeof(m->from), "%s", cl_host_name(e->hosts[i].h));
		return true;
	}
	if (unreachable[0])
		refuse(m, 503, "unavailable", "no host reached runs %s (unreachable: %s)", m->vm,
		       unreachable);
	else
		refuse(m, 404, "not-found", "no host runs a domain %s", m->vm);
	return false;
}

/* The reservation at the target given back: the framework's Unreserve
 * (ArbiterLease releases the lease it took), or the lease taken here. */
static void give_back(struct cl_move *m)
{
	struct vmact_err err = { 0 };

	if (m->reserved)
		cl_fw_unreserve(m->fw, m->cs, &m->fvm, m->to);
	if (m->own_lease)
		cl_host_release(host_of(m->e, m->to), m->dom.pod_ns, m->dom.pod_name, &err);
	m->reserved = m->own_lease = false;
}

/* Whether host h may take moved VMs at all (before the framework looks):
 * not the VM's own, with a migration address; why not in why. */
static bool takes_moves(const struct cl_move *m, struct cl_host *h, char *why, size_t len)
{
	const struct cl_host_cfg *cfg = cl_host_cfg(h);

	if (!strcmp(cfg->name, m->from)) {
		snprintf(why, len, "the VM runs there");
		return false;
	}
	if (!cfg->migration_address[0]) {
		snprintf(why, len, "takes no moved VMs (no migration.address)");
		return false;
	}
	if (m->mem.known) {
		/* A group's VM stays among its group's hosts (their pools hold
		 * its base volume). */
		for (size_t i = 0; i < m->mem.g->n_hosts; i++)
			if (!strcmp(m->mem.g->hosts[i], cfg->name))
				return true;
		snprintf(why, len, "not one of group %s's hosts", m->mem.g->id);
		return false;
	}
	return true;
}

/* A group's VM: whether it may move (the loop's reading of it), else the
 * refusal. */
static bool member_may_move(struct cl_move *m)
{
	const struct cl_move_member *mem = &m->mem;

	if (!mem->known || strcasecmp(mem->uuid, m->dom.uuid)) {
		refuse(m, 409, "precondition",
		       "%s carries a group's metadata but is not a VM of a configured group: "
		       "left alone",
		       m->vm);
		return false;
	}
	if (strcmp(mem->host, m->from)) {
		refuse(m, 409, "precondition",
		       "%s runs on %s where vmact-groupd has it on %s: left alone until a scan "
		       "of the hosts settles it",
		       m->vm, m->from, mem->host[0] ? mem->host : "no host");
		return false;
	}
	if (mem->stays[0]) {
		refuse(m, 409, "precondition", "%s cannot move now: %s", m->vm, mem->stays);
		return false;
	}
	if (!mem->g->migration && !m->force) {
		refuse(m, 409, "precondition",
		       "%s is a VM of group %s, which does not move its VMs "
		       "(groups[].migration.enabled); force moves it anyway",
		       m->vm, mem->g->id);
		return false;
	}
	return true;
}

/* The placement framework's cycle for the VM over every host, the
 * n_allowed hosts that take it (m->allowed) as its GroupHosts: Success
 * reserves at m->to. Otherwise the refusal names each host's reason
 * (reasons: those excluded before). */
static bool place(struct cl_move *m, size_t n_allowed, char *reasons, size_t len)
{
	struct cl_engine *e = m->e;
	struct cl_fw_host *hosts = calloc(CL_MAX_HOSTS, sizeof(*hosts));
	struct cl_fw_result *res = calloc(1, sizeof(*res));
	size_t n = 0;
	bool ok = false;

	if (!hosts || !res || cl_fw_cycle_new(&m->cs) < 0) {
		refuse(m, 500, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < e->n_hosts && n < CL_MAX_HOSTS; i++, n++) {
		snprintf(hosts[n].name, sizeof(hosts[n].name), "%s", cl_host_name(e->hosts[i].h));
		cl_place_snapshot_host(e, &hosts[n],
				       __atomic_load_n(&e->hosts[i].scanned, __ATOMIC_RELAXED));
	}
	m->fw = e->fws[0];
	m->fvm = (struct cl_fw_vm){
		.standby = false,
		.size = m->size,
		.group_hosts = m->allowed,
		.n_group_hosts = n_allowed,
		.moving = true,
		.pod_ns = m->dom.pod_ns,
		.pod_name = m->dom.pod_name,
	};
	snprintf(m->fvm.uid, sizeof(m->fvm.uid), "%s", m->dom.uuid);
	snprintf(m->fvm.name, sizeof(m->fvm.name), "%s", m->vm);
	snprintf(m->fvm.defined_on, sizeof(m->fvm.defined_on), "%s", m->from);
	cl_fw_schedule(m->fw, m->cs, &m->fvm, hosts, n, res);
	if (res->status.code == CL_FW_SUCCESS) {
		snprintf(m->to, sizeof(m->to), "%s", res->host);
		m->reserved = true;
		if (!cl_fw_cycle_read(m->cs, CL_PLUGINS_LEASED)) {
			/* A profile without ArbiterLease at Reserve: the room at
			 * the target is still held before anything moves. */
			struct vmact_err err = { 0 };
			int r = cl_host_lease(host_of(e, m->to), m->dom.pod_ns, m->dom.pod_name,
					      m->size, e->cfg->life.lease_usec, false, &err);

			if (r < 0) {
				give_back(m);
				refuse(m, r == -EBUSY ? 409 : 503,
				       r == -EBUSY ? "precondition" : "unavailable",
				       "no host takes %s: %s: %s", m->vm, res->host, err.msg);
				goto out;
			}
			m->own_lease = true;
		}
		set_phase(m, PH_RESERVED);
		ok = true;
		goto out;
	}
	if (res->status.code == CL_FW_WAIT) {
		/* A Permit plugin would hold it: a running VM does not wait. */
		cl_fw_unreserve(m->fw, m->cs, &m->fvm, res->host);
		refuse(m, 409, "precondition", "no host takes %s: %s would hold it on %s (%s)",
		       m->vm, res->status.plugin, res->host, res->status.msg);
		goto out;
	}
	/* Each host the framework looked at (the others are in reasons). */
	for (size_t i = 0; i < res->n_hosts; i++) {
		size_t k = 0, used = strlen(reasons);

		while (k < n_allowed && strcmp(m->allowed[k], res->hosts[i].name))
			k++;
		if (k == n_allowed || res->hosts[i].filter.code == CL_FW_SUCCESS)
			continue;
		snprintf(reasons + used, len - used, "%s%s: %s (%s)", used ? "; " : "",
			 res->hosts[i].name, res->hosts[i].filter.msg, res->hosts[i].filter.plugin);
	}
	if (res->feasible) {
		/* It fit a snapshot, then Reserve found the ledger moved. */
		size_t used = strlen(reasons);

		snprintf(reasons + used, len - used, "%s%s", used ? "; " : "", res->status.msg);
	}
	refuse(m, res->status.code == CL_FW_ERROR ? 503 : 409,
	       res->status.code == CL_FW_ERROR ? "unavailable" : "precondition",
	       "no host takes %s: %s", m->vm, reasons[0] ? reasons : res->status.msg);
out:
	free(hosts);
	free(res);
	return ok;
}

bool cl_move_plan(struct cl_move *m, const char *from, const struct cl_migrate_dom *dom)
{
	struct cl_engine *e = m->e;
	struct vmact_lease_pod pod;
	struct vmact_err err = { 0 };
	char reasons[1024] = "";
	size_t n_allowed = 0;
	int r;

	if (from) {
		snprintf(m->from, sizeof(m->from), "%s", from);
		m->dom = *dom;
	} else if (!find_source(m)) {
		return false;
	}
	if (m->dom.ours) {
		if (!member_may_move(m))
			return false;
	} else if (m->mem.known) {
		/* A group's VM of that name, but this domain carries no
		 * cluster metadata: it is moved as what it is, not as a group's
		 * (its disk stays). */
		memset(&m->mem, 0, sizeof(m->mem));
	}
	if (!m->dom.ours && !m->dom.opted_in && !m->force) {
		refuse(m, 409, "precondition",
		       "%s has not opted in to live migration (<vmact:migration "
		       "enabled='true'/>: vmactl set %s --migration on); force moves it anyway",
		       m->vm, m->vm);
		return false;
	}
	if (m->want_to[0] && !host_of(e, m->want_to)) {
		refuse(m, 404, "not-found", "no host '%s'", m->want_to);
		return false;
	}
	/* What its host's arbiter holds for it: what the target must hold. */
	m->size = m->dom.size;
	r = cl_host_pod(host_of(e, m->from), m->dom.pod_ns, m->dom.pod_name, &pod, &err);
	if (r == 0 && pod.size.milli_cpu && pod.size.mem_bytes) {
		m->size = pod.size;
		/* A VM moved for lack of room takes the growth it was refused
		 * with it: the target holds that too. */
		if (m->reason == CL_MOVE_PRESSURE) {
			m->size.milli_cpu += pod.pressure.milli_cpu;
			m->size.mem_bytes += pod.pressure.mem_bytes;
		}
	} else if (r < 0 && r != -ENOENT) {
		refuse(m, 503, "unavailable", "%s", err.msg);
		return false;
	}
	/* The hosts that may take it, the framework's GroupHosts. */
	for (size_t i = 0; i < e->n_hosts && n_allowed < CL_MAX_HOSTS; i++) {
		struct cl_host *h = e->hosts[i].h;
		char why[VMACT_ERR_MSG_MAX];
		size_t n = strlen(reasons);

		if (m->want_to[0] && strcmp(cl_host_name(h), m->want_to))
			continue;
		if (!takes_moves(m, h, why, sizeof(why))) {
			snprintf(reasons + n, sizeof(reasons) - n, "%s%s: %s", n ? "; " : "",
				 cl_host_name(h), why);
			continue;
		}
		m->allowed[n_allowed++] = cl_host_name(h);
	}
	if (!n_allowed) {
		refuse(m, 409, "precondition", "no host takes %s: %s", m->vm,
		       reasons[0] ? reasons : "no other host");
		return false;
	}
	if (!place(m, n_allowed, reasons, sizeof(reasons)))
		return false;
	m->status = 202;
	return true;
}

static void plan_run(void *data)
{
	cl_move_plan(data, NULL, NULL);
}

/* ---- the move (a job) ---- */

DEFINE_PTR_CLEANUP(mv_conn_closep, struct _virConnect, virConnectClose)

static void fail_move(struct cl_move *m, const struct vmact_err *err)
{
	snprintf(m->error, sizeof(m->error), "%s", err->msg);
}

/* A group's VM, before the freeze: its overlay made in the target's pool
 * (over the group's base volume there: libvirt copies the top of the
 * chain only) and its provider ID kept (provider-host, written into the
 * metadata that moves with it). Hosts whose pools are one storage (the
 * target's volume of that name is the source's file) are refused before
 * anything is made: making the target's would delete the disk it runs
 * from. */
static int prepare_member(struct cl_move *m, struct vmact_err *err)
{
	struct cl_host *src = host_of(m->e, m->from), *dst = host_of(m->e, m->to);
	const char *pool = cl_host_cfg(dst)->storage_pool;
	_cleanup_(mv_conn_closep) virConnectPtr cs = cl_host_conn(src, err);
	_cleanup_(mv_conn_closep) virConnectPtr cd = NULL;
	struct cl_meta meta = m->mem.meta;
	struct vmact_err e2 = { 0 };
	char there[PATH_MAX];

	if (!cs)
		return -EHOSTUNREACH;
	cl_domxml_volume_name(m->vm, m->volume, sizeof(m->volume));
	/* Its file on the source: what it runs from after an earlier move. */
	if (cl_virt_volume_path(cs, cl_host_cfg(src)->storage_pool, m->volume, m->from_volume_path,
				sizeof(m->from_volume_path), &e2) < 0)
		return vmact_err_set(err, e2.code ? e2.code : EIO, "its disk on %s: %s", m->from,
				     e2.msg);
	if (!(cd = cl_host_conn(dst, err)))
		return -EHOSTUNREACH;
	if (cl_virt_volume_path(cd, pool, m->volume, there, sizeof(there), &e2) == 0 &&
	    !strcmp(there, m->from_volume_path))
		return vmact_err_set(
			err, EXDEV,
			"its disk %s is in storage %s and %s share (pools %s and %s): "
			"a group's VM moves only between hosts with storage of their own",
			there, m->from, m->to, cl_host_cfg(src)->storage_pool, pool);
	e2 = (struct vmact_err){ 0 };
	if (cl_virt_overlay_create(cd, pool, m->mem.g->tpl.base_volume, m->volume, &e2) < 0)
		return vmact_err_set(err, e2.code ? e2.code : EIO, "its disk on %s (pool %s): %s",
				     m->to, pool, e2.msg);
	m->dst_overlay = true;
	if (cl_virt_volume_path(cd, pool, m->volume, m->volume_path, sizeof(m->volume_path), &e2) <
	    0)
		return vmact_err_set(err, e2.code ? e2.code : EIO, "its disk on %s (pool %s): %s",
				     m->to, pool, e2.msg);
	if (meta.provider_host[0])
		return 0;
	snprintf(meta.provider_host, sizeof(meta.provider_host), "%s", m->from);
	return cl_virt_set_meta(cs, m->mem.uuid, &meta, err);
}

/* The overlay on host goes, unless a domain of the VM's name is defined
 * there (a disk in use is never deleted: the scan of that host removes
 * one left over). 0 or -errno with err. */
static int drop_overlay(struct cl_move *m, const char *host, struct vmact_err *err)
{
	struct cl_host *h = host_of(m->e, host);
	_cleanup_(mv_conn_closep) virConnectPtr c = cl_host_conn(h, err);
	virDomainPtr d;

	if (!c)
		return -EHOSTUNREACH;
	if ((d = virDomainLookupByName(c, m->vm))) {
		virDomainFree(d);
		return vmact_err_set(err, EBUSY, "%s is still defined on %s", m->vm, host);
	}
	return cl_virt_overlay_delete(c, cl_host_cfg(h)->storage_pool, m->volume, err);
}

/* Undoes the steps before a failure, whatever they were. */
static void undo(struct cl_move *m, enum phase reached)
{
	struct vmact_err err = { 0 };

	pthread_mutex_lock(&m->lock);
	m->ended = true;
	pthread_mutex_unlock(&m->lock);
	if (reached >= PH_FREEZING)
		cl_host_release(host_of(m->e, m->from), m->dom.pod_ns, m->dom.pod_name, &err);
	/* The framework's Reserve undone: the target's lease goes. */
	give_back(m);
	/* The disk made for it on the target (a group's VM). */
	if (m->dst_overlay) {
		struct vmact_err de = { 0 };

		if (drop_overlay(m, m->to, &de) < 0)
			snprintf(m->note, sizeof(m->note), "its disk on %s stays: %.300s", m->to,
				 de.msg);
	}
	set_phase(m, PH_FAILED);
}

static bool frozen_at_source(struct cl_move *m, struct vmact_err *err)
{
	uint64_t deadline = vmact_now_usec() + FREEZE_TIMEOUT_USEC;
	struct vmact_lease_pod pod;

	for (;;) {
		int r = cl_host_pod(host_of(m->e, m->from), m->dom.pod_ns, m->dom.pod_name, &pod,
				    err);

		if (r == 0 && pod.frozen)
			return true;
		if (r < 0 && r != -ENOENT)
			return false;
		if (vmact_now_usec() >= deadline) {
			vmact_err_set(err, ETIMEDOUT,
				      "%s's resizing on %s did not stop within %u s (its entry "
				      "%s/%s at the arbiter never reported frozen)",
				      m->vm, m->from, (unsigned)(FREEZE_TIMEOUT_USEC / 1000000),
				      m->dom.pod_ns, m->dom.pod_name);
			return false;
		}
		usleep(FREEZE_POLL_USEC);
	}
}

/* A failed call: where does the VM run? libvirt may have started it at
 * the target before a daemon died (the source's confirmation lost): then
 * the move happened, and what the source still holds of it goes. Asked
 * until both daemons answer again, SETTLE_USEC at most (then it counts as
 * not moved: its lease at the target lapses, relief looks again). */
#define SETTLE_USEC      (60 * VMACT_USEC_PER_SEC)
#define SETTLE_POLL_USEC (500 * 1000)
static bool settled_at_target(struct cl_move *m)
{
	struct cl_host *src = host_of(m->e, m->from), *dst = host_of(m->e, m->to);
	uint64_t deadline = vmact_now_usec() + SETTLE_USEC;

	for (;;) {
		struct vmact_err err = { 0 };
		virConnectPtr cs = cl_host_conn(src, &err), cd = cl_host_conn(dst, &err);
		int r = cl_migrate_settle(cs, cd, m->vm, &err);

		if (cs)
			virConnectClose(cs);
		if (cd)
			virConnectClose(cd);
		if (r >= 0)
			return r == 1;
		if (vmact_now_usec() >= deadline)
			return false;
		usleep(SETTLE_POLL_USEC);
	}
}

static void move_run(void *data)
{
	struct cl_move *m = data;
	struct cl_engine *e = m->e;
	struct cl_host *src = host_of(e, m->from), *dst = host_of(e, m->to);
	uint64_t ttl = e->cfg->life.lease_usec;
	struct cl_migrate_result res;
	struct vmact_err err = { 0 };
	virConnectPtr cs = NULL, cd = NULL;
	struct cl_migrate_disks disks = { 0 };

	/* Reserved at the target by the plan's Reserve. */
	if (cl_jobs_stopping(e->movers)) {
		snprintf(m->error, sizeof(m->error), "vmact-groupd is stopping");
		return undo(m, PH_RESERVED);
	}
	if (m->mem.known) {
		if (prepare_member(m, &err) < 0) {
			fail_move(m, &err);
			return undo(m, PH_RESERVED);
		}
		disks = (struct cl_migrate_disks){
			.from_pool = cl_host_cfg(src)->storage_pool,
			.to_pool = cl_host_cfg(dst)->storage_pool,
			.volume = m->volume,
			.volume_path = m->volume_path,
			.from_volume_path = m->from_volume_path,
			.from_channel_dir = cl_host_cfg(src)->channel_dir,
			.to_channel_dir = cl_host_cfg(dst)->channel_dir,
		};
	}
	if (cl_host_mark_moving(src, m->dom.pod_ns, m->dom.pod_name, m->size, ttl, true, &err) <
	    0) {
		fail_move(m, &err);
		return undo(m, PH_FREEZING);
	}
	set_phase(m, PH_FREEZING);
	if (!frozen_at_source(m, &err)) {
		fail_move(m, &err);
		return undo(m, PH_FREEZING);
	}
	set_phase(m, PH_MIGRATING);
	cs = cl_host_conn(src, &err);
	cd = cs ? cl_host_conn(dst, &err) : NULL;
	if (!cs || !cd ||
	    cl_migrate_live(cs, cd, m->vm, cl_host_cfg(dst), m->mem.known ? &disks : NULL, &res,
			    &err) < 0) {
		if (cs)
			virConnectClose(cs);
		if (cd)
			virConnectClose(cd);
		fail_move(m, &err);
		if (!settled_at_target(m))
			return undo(m, PH_MIGRATING);
		/* The call failed but the VM runs at the target. */
		m->error[0] = 0;
	} else {
		virConnectClose(cs);
		virConnectClose(cd);
		m->downtime_ms = res.downtime_ms;
		/* A call that succeeded may still leave the source's copy:
		 * libvirt reports success once the target runs the VM, and a
		 * source daemon that died before its confirmation ("guest
		 * probably left in 'paused' state on source") keeps the
		 * definition UNDEFINE_SOURCE would have removed, its QEMU
		 * killed when it starts again. What is left goes now. */
		settled_at_target(m);
	}
	/* It runs on the target: the source holds nothing for it any more
	 * (its vmactd forgets its agent's entry as the domain leaves). The
	 * target's lease stays until it lapses: its vmactd speaks for the VM
	 * by then. */
	pthread_mutex_lock(&m->lock);
	m->ended = true;
	pthread_mutex_unlock(&m->lock);
	cl_host_release(src, m->dom.pod_ns, m->dom.pod_name, &err);
	/* A group's VM left its disk behind on the source. */
	if (m->mem.known) {
		struct vmact_err de = { 0 };

		if (drop_overlay(m, m->from, &de) < 0)
			snprintf(m->note, sizeof(m->note), "its old disk on %s stays: %.300s",
				 m->from, de.msg);
	}
	m->success = true;
	set_phase(m, PH_DONE);
}

static void observe(struct cl_engine *e, const struct cl_move *m, double secs)
{
	struct cl_engine_move_counters *c = &e->mc;
	size_t b = 0;

	c->total[m->reason][m->success ? CL_MOVE_SUCCESS : CL_MOVE_FAILED]++;
	if (!m->success)
		return;
	while (b < CL_ENGINE_HIST_BUCKETS && secs > hist_bounds[b])
		b++;
	c->hist[m->reason][b]++;
	c->hist_sum[m->reason] += secs;
	c->hist_count[m->reason]++;
	if (m->downtime_ms >= 0) {
		double d = (double)m->downtime_ms / 1000;

		for (b = 0; b < CL_ENGINE_DOWNTIME_BUCKETS && d > cl_engine_downtime_bounds[b];)
			b++;
		c->downtime[b]++;
		c->downtime_sum += d;
		c->downtime_count++;
	}
}

/* Forgets the oldest ended moves past the number kept. */
static void trim(struct cl_engine *e)
{
	struct cl_move *m, *next;

	VMACT_LIST_FOREACH_SAFE(moves, m, next, e->moves) {
		if (e->n_moves_ended <= CL_ENGINE_MOVES_KEPT)
			return;
		if (!m->ended || m->renewing)
			continue;
		VMACT_LIST_REMOVE(moves, e->moves, m);
		e->n_moves_ended--;
		move_free(m);
	}
}

/* A group's VM once its move ended: free again, and on the target if it
 * got there (its lease there is the move's, renewed as a member's from
 * now on; the move showed it runs, it is probed at once). */
static void member_moved(struct cl_move *m)
{
	struct cl_engine *e = m->e;
	struct cl_vm *vm = cl_vm_by_uuid(e, m->mem.uuid);
	uint64_t now = vmact_loop_now_usec(e->ev);

	if (!vm || !vm->moving)
		return;
	vm->moving = vm->busy = false;
	if (m->success) {
		snprintf(vm->host, sizeof(vm->host), "%s", m->to);
		vm->leased = true;
		vm->last_healthy_usec = now;
		vm->next_probe_usec = now;
	}
	cl_vm_kick(e);
}

static void move_done(void *data)
{
	struct cl_move *m = data;
	struct cl_engine *e = m->e;
	double secs;

	m->ended_usec = vmact_loop_now_usec(e->ev);
	secs = (double)(m->ended_usec - m->started_usec) / 1e6;
	observe(e, m, secs);
	e->n_moves_ended++;
	if (m->mem.known)
		member_moved(m);
	if (m->success)
		cl_vm_emit(e, LOG_INFO, NULL,
			   "migration %" PRIu64
			   ": %s moved from %s to %s in %.1f s (downtime %s%" PRId64 " ms)%s%s",
			   m->id, m->vm, m->from, m->to, secs, m->downtime_ms < 0 ? "? " : "",
			   m->downtime_ms < 0 ? 0 : m->downtime_ms, m->note[0] ? "; " : "",
			   m->note);
	else
		cl_vm_emit(e, LOG_WARNING, NULL,
			   "migration %" PRIu64 ": %s stays on %s, not moved to %s: %s%s%s", m->id,
			   m->vm, m->from, m->to, m->error, m->note[0] ? "; " : "", m->note);
	trim(e);
}

/* ---- a group's VM (on the loop) ---- */

void cl_move_member_read(const struct cl_vm *vm, struct cl_move_member *out)
{
	const char *stays = NULL;

	memset(out, 0, sizeof(*out));
	out->known = vm->g != NULL;
	snprintf(out->name, sizeof(out->name), "%s", vm->name);
	snprintf(out->uuid, sizeof(out->uuid), "%s", vm->uuid);
	snprintf(out->host, sizeof(out->host), "%s", vm->host);
	out->g = vm->g ? vm->g->cfg : NULL;
	out->meta = vm->meta;
	/* A member in service moves; a standby is given back where it is
	 * (its pool refills where there is room), anything between two
	 * states waits. */
	if (vm->moving)
		stays = "it is moving already";
	else if (vm->want_delete || vm->want_return || vm->meta.state == CL_ST_DELETING || vm->gone)
		stays = "it is being removed";
	else if (vm->meta.state == CL_ST_READY)
		stays = "a standby VM (given back where it is, not moved)";
	else if (vm->meta.state != CL_ST_CLAIMED)
		stays = "not in service yet";
	else if (vm->busy || vm->placing)
		stays = "a change of it is under way";
	if (stays)
		snprintf(out->stays, sizeof(out->stays), "%s", stays);
}

void cl_move_member_find(struct cl_engine *e, const char *name, struct cl_move_member *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms)
			if (!strcmp(vm->name, name)) {
				cl_move_member_read(vm, out);
				return;
			}
	}
}

void cl_move_set_member(struct cl_move *m, const struct cl_move_member *mem)
{
	m->mem = *mem;
}

bool cl_move_holds_volume(const struct cl_engine *e, const char *host, const char *volume)
{
	const struct cl_move *m;

	VMACT_LIST_FOREACH(moves, m, e->moves) {
		char mine[CL_NAME_MAX + 8];

		if (m->ended_usec || !m->mem.known)
			continue;
		cl_domxml_volume_name(m->vm, mine, sizeof(mine));
		if (!strcmp(mine, volume) && (!strcmp(host, m->to) || !strcmp(host, m->from)))
			return true;
	}
	return false;
}

/* ---- the request (on the loop) ---- */

static void view_of(const struct cl_move *m, uint64_t now, struct cl_engine_move_view *v)
{
	enum phase p = phase_of(m);

	*v = (struct cl_engine_move_view){
		.id = m->id,
		.vm = m->vm,
		.uuid = m->dom.uuid,
		.from = m->from,
		.to = m->to,
		.reason = cl_engine_move_reason_name(m->reason),
		.why = m->why,
		.phase = phase_names[p],
		/* A move's end is the loop's to say (its done): until then
		 * it is in flight, whatever its job's phase. */
		.result = !m->ended_usec ? ""
			  : m->success   ? "success"
					 : "failed",
		.error = m->ended_usec && !m->success ? m->error : "",
		.started = m->started_real,
		.duration_s = (double)((m->ended_usec ? m->ended_usec : now) - m->started_usec) /
			      1e6,
		.downtime_ms = m->ended_usec ? m->downtime_ms : -1,
	};
}

static void answer_refusal(struct cl_move *m)
{
	struct cl_engine_answer a = { .status = m->status, .reason = m->refusal };

	snprintf(a.error, sizeof(a.error), "%s", m->error);
	m->fn(m->ud, &a);
}

int cl_move_start(struct cl_move *m)
{
	struct cl_engine *e = m->e;
	struct cl_vm *vm = NULL;
	char size[96];
	int r;

	if (e->stopping || !e->movers) {
		snprintf(m->error, sizeof(m->error), "vmact-groupd is stopping");
		return -ESHUTDOWN;
	}
	if (m->mem.known) {
		/* Read again: the plan ran on another thread meanwhile. */
		vm = cl_vm_by_uuid(e, m->mem.uuid);
		if (vm)
			cl_move_member_read(vm, &m->mem);
		if (!vm || m->mem.stays[0] || strcmp(vm->host, m->from)) {
			snprintf(m->error, sizeof(m->error), "%s cannot move now: %s", m->vm,
				 !vm               ? "vmact-groupd no longer has it"
				 : m->mem.stays[0] ? m->mem.stays
						   : "it is on another host by now");
			return -EBUSY;
		}
	}
	m->id = ++e->next_move_id;
	m->started_usec = vmact_loop_now_usec(e->ev);
	m->started_real = cl_vm_now_real();
	m->downtime_ms = -1;
	r = cl_jobs_submit(e->movers, move_run, move_done, m);
	if (r < 0) {
		snprintf(m->error, sizeof(m->error), "cannot start the move: %s", strerror(-r));
		return r;
	}
	VMACT_LIST_APPEND(moves, e->moves, m);
	if (vm) {
		/* Nothing else changes it while it moves; its lease is the
		 * move's to keep. */
		vm->moving = vm->busy = true;
		if (!vm->meta.provider_host[0])
			snprintf(vm->meta.provider_host, sizeof(vm->meta.provider_host), "%s",
				 m->from);
	}
	m->next_renew_usec = m->started_usec + e->cfg->life.lease_usec / 3;
	fmt_size(m->size, size, sizeof(size));
	cl_vm_emit(e, LOG_INFO, NULL,
		   "migration %" PRIu64 ": moving %s (%s, %s) from %s to %s (%s%s%s)", m->id, m->vm,
		   size,
		   m->force       ? "forced"
		   : m->mem.known ? "its group moves its VMs, its disk with it"
				  : "opted in",
		   m->from, m->to, cl_engine_move_reason_name(m->reason), m->why[0] ? ": " : "",
		   m->why[0] ? m->why : (m->want_to[0] ? "" : ", the host placement chose"));
	return 0;
}

static void plan_done(void *data)
{
	struct cl_move *m = data;
	struct cl_engine_answer a = { .status = 202 };
	struct cl_engine_move_view v;
	int r;

	if (m->status != 202) {
		answer_refusal(m);
		move_free(m);
		return;
	}
	r = cl_move_start(m);
	if (r < 0) {
		m->status = r == -ESHUTDOWN ? 503 : 500;
		m->refusal = r == -ESHUTDOWN ? "unavailable" : "internal";
		answer_refusal(m);
		cl_move_discard(m);
		return;
	}
	view_of(m, m->started_usec, &v);
	a.move = &v;
	m->fn(m->ud, &a);
}

struct cl_move *cl_move_new(struct cl_engine *e, const char *vm, const char *to, bool force,
			    enum cl_engine_move_reason reason)
{
	struct cl_move *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->e = e;
	m->force = force;
	m->reason = reason;
	snprintf(m->vm, sizeof(m->vm), "%s", vm);
	snprintf(m->want_to, sizeof(m->want_to), "%s", to ? to : "");
	return m;
}

void cl_move_set_why(struct cl_move *m, const char *why)
{
	snprintf(m->why, sizeof(m->why), "%s", why);
}

const char *cl_move_error(const struct cl_move *m)
{
	return m->error;
}

const char *cl_move_target(const struct cl_move *m)
{
	return m->to;
}

static void unreserve_run(void *data)
{
	give_back(data);
}

static void unreserve_done(void *data)
{
	move_free(data);
}

void cl_move_discard(struct cl_move *m)
{
	/* Planned, never started: its reservation is given back by a job (a
	 * release that cannot be sent lapses with the lease). */
	if (m && m->reserved && !m->e->stopping && m->e->jobs &&
	    cl_jobs_submit(m->e->jobs, unreserve_run, unreserve_done, m) == 0)
		return;
	move_free(m);
}

/* The last move of vm listed (in flight or ended), NULL. */
static const struct cl_move *move_of(const struct cl_engine *e, const char *vm)
{
	const struct cl_move *m, *last = NULL;

	VMACT_LIST_FOREACH(moves, m, e->moves)
		if (!strcmp(m->vm, vm))
			last = m;
	return last;
}

void cl_move_each_last(const struct cl_engine *e,
		       void (*fn)(void *ud, const char *vm, uint64_t end, bool success), void *ud)
{
	const struct cl_move *m;

	VMACT_LIST_FOREACH(moves, m, e->moves)
		if (move_of(e, m->vm) == m)
			fn(ud, m->vm, m->ended_usec, m->success);
}

unsigned cl_move_count(const struct cl_engine *e, const char *from)
{
	const struct cl_move *m;
	unsigned n = 0;

	VMACT_LIST_FOREACH(moves, m, e->moves)
		if (!m->ended_usec && (!from || !strcmp(m->from, from)))
			n++;
	return n;
}

void cl_move_request(struct cl_engine *e, const char *vm, const char *to, bool force,
		     cl_engine_answer_fn *fn, void *ud)
{
	struct cl_engine_answer a = { .status = 409, .reason = "precondition" };
	struct cl_move *m, *o;
	int r;

	VMACT_LIST_FOREACH(moves, o, e->moves)
		if (!o->ended_usec && !strcmp(o->vm, vm)) {
			snprintf(a.error, sizeof(a.error),
				 "%s is moving already (migration %" PRIu64 ", %s to %s)", vm,
				 o->id, o->from, o->to);
			return fn(ud, &a);
		}
	if (!e->movers) {
		a.status = 503;
		a.reason = "unavailable";
		snprintf(a.error, sizeof(a.error), "vmact-groupd is stopping");
		return fn(ud, &a);
	}
	m = cl_move_new(e, vm, to, force, CL_MOVE_COMMAND);
	if (!m) {
		a.status = 500;
		a.reason = "internal";
		snprintf(a.error, sizeof(a.error), "out of memory");
		return fn(ud, &a);
	}
	m->fn = fn;
	m->ud = ud;
	/* A group's VM is read here, on the loop; the plan checks it. */
	cl_move_member_find(e, vm, &m->mem);
	r = cl_jobs_submit(e->jobs, plan_run, plan_done, m);
	if (r < 0) {
		a.status = 503;
		a.reason = "unavailable";
		snprintf(a.error, sizeof(a.error), "cannot plan the move: %s", strerror(-r));
		move_free(m);
		fn(ud, &a);
	}
}

/* ---- the leases of a long move ---- */

static void renew_run(void *data)
{
	struct cl_move *m = data;
	uint64_t ttl = m->e->cfg->life.lease_usec;
	struct vmact_err err = { 0 };
	enum phase p;

	pthread_mutex_lock(&m->lock);
	p = phase_of(m);
	if (!m->ended) {
		if (p >= PH_RESERVED)
			cl_host_lease(host_of(m->e, m->to), m->dom.pod_ns, m->dom.pod_name, m->size,
				      ttl, true, &err);
		if (p >= PH_FREEZING)
			cl_host_mark_moving(host_of(m->e, m->from), m->dom.pod_ns, m->dom.pod_name,
					    m->size, ttl, true, &err);
	}
	pthread_mutex_unlock(&m->lock);
}

static void renew_done(void *data)
{
	struct cl_move *m = data;

	m->renewing = false;
	trim(m->e);
}

void cl_move_tick(struct cl_engine *e, uint64_t now)
{
	struct cl_move *m;

	VMACT_LIST_FOREACH(moves, m, e->moves) {
		if (m->ended_usec || m->renewing || now < m->next_renew_usec)
			continue;
		m->next_renew_usec = now + e->cfg->life.lease_usec / 3;
		if (cl_jobs_submit(e->jobs, renew_run, renew_done, m) == 0)
			m->renewing = true;
	}
}

void cl_move_free_all(struct cl_engine *e)
{
	while (e->moves) {
		struct cl_move *m = e->moves;

		VMACT_LIST_REMOVE(moves, e->moves, m);
		move_free(m);
	}
}

/* ---- reads ---- */

void cl_engine_each_move(const struct cl_engine *e,
			 void (*fn)(void *ud, const struct cl_engine_move_view *m), void *ud)
{
	uint64_t now = vmact_loop_now_usec(e->ev);
	const struct cl_move *m;
	struct cl_engine_move_view v;

	VMACT_LIST_FOREACH(moves, m, e->moves) {
		view_of(m, now, &v);
		fn(ud, &v);
	}
}

const struct cl_engine_move_counters *cl_engine_move_counters(const struct cl_engine *e)
{
	return &e->mc;
}
