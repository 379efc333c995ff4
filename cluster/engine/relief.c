/* SPDX-License-Identifier: Apache-2.0 */
/* VMs leaving a host on vmact-groupd's own decision (doc/cluster.md,
 * "Live migration"): a host whose arbiter refuses growth for lack of room
 * is relieved by moving an opted-in VM away, and a drained host is
 * emptied of its opted-in VMs. Each round (every RELIEF_USEC, a job) reads
 * every host's ledger; a host over its watermark with growth refused, or
 * drained, has its running VMs looked at, and the first that can go (and
 * that a target takes) is moved by move.c. One move at a time per source
 * host, at most as many as the movers' pool runs at once.
 *
 * The order for relief (Neon's: oldest first until enough is moving;
 * here): a VM whose move alone covers the excess, the smallest such,
 * since it frees enough at the least cost; else the largest. A VM moved
 * recently (migration.min_residence_s) or whose last move failed (within
 * the retry backoff) rests; relief can be switched off
 * (migration.relief), a drain cannot. What holds a host over its watermark when nothing
 * can move is said once per change.
 *
 * Each round also looks for VMs a move left paused with nobody to finish
 * it (cl_migrate_list_orphans: vmact-groupd killed, or its connection
 * lost, between the end of QEMU's sending and the source's confirmation;
 * libvirt leaves the source paused then). One seen in two rounds in a row
 * and not moving is removed where another host runs it, else resumed. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/quantity.h"
#include "base/time.h"

#define RELIEF_USEC VMACT_USEC_PER_SEC
#define DRAIN_FILE  "drained.json"

struct resting {
	char vm[CL_NAME_MAX];
	char why[128];
	bool settling; /* moved recently: holds relief back, not a drain */
};

struct relief_host {
	char name[CL_NAME_MAX];
	bool skip;     /* a move from it is in flight */
	bool draining; /* as the round began */
	/* The round's findings. */
	char status[1536];    /* "" when it needs nothing */
	char unmovable[1024]; /* VM: reason; ... */
	struct cl_move *move; /* planned, to start */
	/* Orphans: last round's (from the engine), this round's, and what
	 * was done with them (said by round_done). */
	char seen[CL_ORPHANS_MAX][CL_NAME_MAX];
	size_t n_seen;
	struct cl_migrate_dom orphans[CL_ORPHANS_MAX];
	size_t n_orphans;
	char recovered[CL_ORPHANS_MAX][512];
	size_t n_recovered;
	bool recover_failed[CL_ORPHANS_MAX];
};

struct relief_job {
	struct cl_engine *e;
	size_t n_resting;
	struct resting *resting;
	struct relief_host *hosts; /* e->n_hosts */
	/* The groups' VMs on a host the round may look at, as the loop had
	 * them (a group's VM moves with its group's migration.enabled). */
	struct cl_move_member *members;
	size_t n_members;
};

/* ---- the round (a job) ---- */

struct found {
	struct cl_migrate_dom d;
	struct vmact_resources res, pressure;
	bool movable;
};

struct listing {
	struct found *v;
	size_t n, cap;
};

static void collect(void *ud, const struct cl_migrate_dom *d)
{
	struct listing *l = ud;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct found *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[l->n]));
	l->v[l->n++].d = *d;
}

static void append(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= len)
		return;
	if (n)
		snprintf(buf + n, len - n, "; "), n += 2;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

static const char *resting_why(const struct relief_job *j, const char *vm, bool draining)
{
	for (size_t i = 0; i < j->n_resting; i++)
		if (!strcmp(j->resting[i].vm, vm))
			return draining && j->resting[i].settling ? NULL : j->resting[i].why;
	return NULL;
}

static const struct cl_move_member *member_of(const struct relief_job *j, const char *name)
{
	for (size_t i = 0; i < j->n_members; i++)
		if (!strcmp(j->members[i].name, name))
			return &j->members[i];
	return NULL;
}

static uint64_t over(uint64_t reserved, uint64_t pressure, uint64_t watermark)
{
	return reserved + pressure > watermark ? reserved + pressure - watermark : 0;
}

/* Whether moving f alone frees the excess. */
static bool covers(const struct found *f, uint64_t ex_cpu, uint64_t ex_mem)
{
	return f->res.milli_cpu + f->pressure.milli_cpu >= ex_cpu &&
	       f->res.mem_bytes + f->pressure.mem_bytes >= ex_mem;
}

/* a before b in relief's order. */
static bool before(const struct found *a, const struct found *b, uint64_t ex_cpu, uint64_t ex_mem)
{
	bool ca = covers(a, ex_cpu, ex_mem), cb = covers(b, ex_cpu, ex_mem);

	if (ca != cb)
		return ca;
	if (a->res.milli_cpu != b->res.milli_cpu)
		return ca ? a->res.milli_cpu < b->res.milli_cpu
			  : a->res.milli_cpu > b->res.milli_cpu;
	if (a->res.mem_bytes != b->res.mem_bytes)
		return ca ? a->res.mem_bytes < b->res.mem_bytes
			  : a->res.mem_bytes > b->res.mem_bytes;
	return strcmp(a->d.name, b->d.name) < 0;
}

static void fmt_cpu(uint64_t milli, char *buf, size_t len)
{
	vmact_quantity_format_milli(milli, buf, len);
}

static void round_host(struct relief_job *j, struct relief_host *rh)
{
	struct cl_engine *e = j->e;
	struct cl_host *h = cl_vm_ehost(e, rh->name)->h;
	struct vmact_lease_ledger l;
	struct vmact_err err = { 0 };
	struct listing list = { 0 };
	uint64_t ex_cpu, ex_mem;
	bool relief;
	virConnectPtr c;
	char a[32], b[32], w[32];

	if (cl_host_ledger(h, &l, &err) < 0)
		return;
	ex_cpu = over(l.reserved.milli_cpu, l.pressure.milli_cpu, l.watermark.milli_cpu);
	ex_mem = over(l.reserved.mem_bytes, l.pressure.mem_bytes, l.watermark.mem_bytes);
	/* Growth refused for lack of room: something asked for more than
	 * the watermark leaves. */
	relief = e->cfg->relief &&
		 ((l.pressure.milli_cpu && ex_cpu) || (l.pressure.mem_bytes && ex_mem));
	if (!relief && !rh->draining)
		return;
	c = cl_host_conn(h, &err);
	if (!c || cl_migrate_list(c, collect, &list, &err) < 0) {
		if (c)
			virConnectClose(c);
		snprintf(rh->status, sizeof(rh->status), "cannot list its VMs: %s", err.msg);
		free(list.v);
		return;
	}
	virConnectClose(c);
	for (size_t i = 0; i < list.n; i++) {
		struct found *f = &list.v[i];
		struct vmact_lease_pod pod;
		const char *rest = resting_why(j, f->d.name, rh->draining);

		if (cl_host_pod(h, f->d.pod_ns, f->d.pod_name, &pod, &err) == 0) {
			f->res = pod.size;
			f->pressure = pod.pressure;
		} else {
			f->res = f->d.size;
		}
		const struct cl_move_member *mem = f->d.ours ? member_of(j, f->d.name) : NULL;

		if (f->d.ours && !mem)
			append(rh->unmovable, sizeof(rh->unmovable),
			       "%s: a VM of a group not configured", f->d.name);
		else if (mem && !mem->g->migration)
			append(rh->unmovable, sizeof(rh->unmovable),
			       "%s: its group %s does not move its VMs (groups[].migration)",
			       f->d.name, mem->g->id);
		else if (mem && mem->stays[0])
			append(rh->unmovable, sizeof(rh->unmovable), "%s: %s", f->d.name,
			       mem->stays);
		else if (!f->d.ours && !f->d.opted_in)
			append(rh->unmovable, sizeof(rh->unmovable), "%s: not opted in", f->d.name);
		else if (rest)
			append(rh->unmovable, sizeof(rh->unmovable), "%s: %s", f->d.name, rest);
		else
			f->movable = true;
	}
	/* Relief's order (a drain takes the largest first too: the excess
	 * is the whole host). */
	if (rh->draining)
		ex_cpu = ex_mem = UINT64_MAX;
	for (size_t i = 1; i < list.n; i++)
		for (size_t k = i; k > 0 && before(&list.v[k], &list.v[k - 1], ex_cpu, ex_mem);
		     k--) {
			struct found t = list.v[k];

			list.v[k] = list.v[k - 1];
			list.v[k - 1] = t;
		}
	fmt_cpu(l.reserved.milli_cpu, a, sizeof(a));
	fmt_cpu(l.pressure.milli_cpu, b, sizeof(b));
	fmt_cpu(l.watermark.milli_cpu, w, sizeof(w));
	for (size_t i = 0; i < list.n && !rh->move; i++) {
		struct found *f = &list.v[i];
		struct cl_move *m;
		char why[512], fr[32], fp[32];

		if (!f->movable)
			continue;
		m = cl_move_new(e, f->d.name, NULL, false,
				rh->draining ? CL_MOVE_DRAIN : CL_MOVE_PRESSURE);
		if (!m)
			break;
		if (f->d.ours)
			cl_move_set_member(m, member_of(j, f->d.name));
		fmt_cpu(f->res.milli_cpu, fr, sizeof(fr));
		fmt_cpu(f->pressure.milli_cpu, fp, sizeof(fp));
		if (rh->draining)
			snprintf(why, sizeof(why), "%s is drained", rh->name);
		else
			snprintf(why, sizeof(why),
				 "%s over its watermark: CPU %s reserved + %s refused against %s; "
				 "%s holds %s%s%s%s",
				 rh->name, a, b, w, f->d.name, fr,
				 f->pressure.milli_cpu ? " and was refused " : "",
				 f->pressure.milli_cpu ? fp : "",
				 covers(f, ex_cpu, ex_mem) ? ", its move alone frees enough"
							   : ", the largest movable");
		cl_move_set_why(m, why);
		if (cl_move_plan(m, rh->name, &f->d)) {
			rh->move = m;
			break;
		}
		append(rh->unmovable, sizeof(rh->unmovable), "%s: %s", f->d.name, cl_move_error(m));
		cl_move_discard(m);
	}
	if (!rh->move) {
		if (rh->draining)
			snprintf(rh->status, sizeof(rh->status), "drained%s%s",
				 rh->unmovable[0] ? "; stays: " : "", rh->unmovable);
		else
			snprintf(rh->status, sizeof(rh->status),
				 "over its watermark (CPU %s reserved + %s refused against %s), "
				 "nothing can move: %s",
				 a, b, w, rh->unmovable[0] ? rh->unmovable : "no VM runs there");
	} else if (rh->draining) {
		snprintf(rh->status, sizeof(rh->status), "draining%s%s",
			 rh->unmovable[0] ? "; stays: " : "", rh->unmovable);
	} else {
		snprintf(rh->status, sizeof(rh->status), "relieving: moving a VM to %s",
			 cl_move_target(rh->move));
	}
	free(list.v);
}

static void collect_orphan(void *ud, const struct cl_migrate_dom *d)
{
	struct relief_host *rh = ud;

	if (rh->n_orphans < CL_ORPHANS_MAX)
		rh->orphans[rh->n_orphans++] = *d;
}

static bool seen_before(const struct relief_host *rh, const char *name)
{
	for (size_t i = 0; i < rh->n_seen; i++)
		if (!strcmp(rh->seen[i], name))
			return true;
	return false;
}

/* One orphan on rh's host, seen in the round before too: asked of every
 * other host (each its own connection; one that cannot be reached holds
 * the decision back). */
int cl_relief_settle_paused(struct cl_engine *e, const char *host, virConnectPtr here,
			    const char *name, const char **ran_at, struct vmact_err *err)
{
	virConnectPtr *others = calloc(e->n_hosts, sizeof(*others));
	const char **names = calloc(e->n_hosts, sizeof(*names));
	size_t n = 0;
	int r;

	*ran_at = NULL;
	if (!others || !names) {
		r = vmact_err_set(err, ENOMEM, "out of memory");
	} else {
		for (size_t i = 0; i < e->n_hosts; i++) {
			struct vmact_err ce = { 0 };

			if (!strcmp(cl_host_name(e->hosts[i].h), host))
				continue;
			names[n] = cl_host_name(e->hosts[i].h);
			others[n++] = cl_host_conn(e->hosts[i].h, &ce);
		}
		r = cl_migrate_recover(here, others, names, n, name, ran_at, err);
	}
	for (size_t i = 0; others && i < n; i++)
		if (others[i])
			virConnectClose(others[i]);
	free(others);
	free(names);
	return r;
}

static void recover(struct relief_job *j, struct relief_host *rh, virConnectPtr here,
		    const struct cl_migrate_dom *d)
{
	struct cl_engine *e = j->e;
	char name[CL_NAME_MAX], msg[512];
	struct vmact_err err = { 0 };
	const char *ran_at = NULL;
	size_t k = rh->n_recovered;
	int r;

	snprintf(name, sizeof(name), "%s", d->name);
	r = cl_relief_settle_paused(e, rh->name, here, name, &ran_at, &err);
	/* Whichever way it went, this host holds no move of it any more: a
	 * mark left by the vmact-groupd that died goes now rather than when
	 * its lease lapses. */
	if (r >= 0)
		cl_host_release(cl_vm_ehost(e, rh->name)->h, d->pod_ns, d->pod_name, &err);
	if (k >= CL_ORPHANS_MAX)
		return;
	rh->recover_failed[k] = r < 0;
	if (r == 1)
		snprintf(msg, sizeof(msg),
			 "VM %s was left paused on host %s by a move nobody finished; it runs on "
			 "%s: the copy on %s is removed",
			 name, rh->name, ran_at, rh->name);
	else if (r == 0)
		snprintf(msg, sizeof(msg),
			 "VM %s was left paused on host %s by a move nobody finished; it runs on "
			 "no other host: resumed on %s",
			 name, rh->name, rh->name);
	else
		snprintf(msg, sizeof(msg),
			 "VM %s was left paused on host %s by a move nobody finished; not "
			 "decided yet: %.300s",
			 name, rh->name, err.msg);
	memcpy(rh->recovered[k], msg, sizeof(msg));
	rh->n_recovered++;
}

static void sweep_orphans(struct relief_job *j, struct relief_host *rh)
{
	struct cl_host *h = cl_vm_ehost(j->e, rh->name)->h;
	struct vmact_err err = { 0 };
	virConnectPtr c = cl_host_conn(h, &err);

	if (!c)
		return;
	if (cl_migrate_list_orphans(c, collect_orphan, rh, &err) == 0)
		for (size_t i = 0; i < rh->n_orphans; i++) {
			const char *why = resting_why(j, rh->orphans[i].name, false);

			/* Our own move of it is still under way. */
			if (why && !strcmp(why, "moving"))
				continue;
			if (seen_before(rh, rh->orphans[i].name))
				recover(j, rh, c, &rh->orphans[i]);
		}
	virConnectClose(c);
}

static void round_run(void *data)
{
	struct relief_job *j = data;

	for (size_t i = 0; i < j->e->n_hosts; i++)
		if (!j->hosts[i].skip) {
			sweep_orphans(j, &j->hosts[i]);
			round_host(j, &j->hosts[i]);
		}
}

static void job_free(struct relief_job *j)
{
	for (size_t i = 0; j && i < j->e->n_hosts; i++)
		cl_move_discard(j->hosts[i].move);
	if (j)
		free(j->resting), free(j->hosts), free(j->members);
	free(j);
}

static void round_done(void *data)
{
	struct relief_job *j = data;
	struct cl_engine *e = j->e;

	e->relief_busy = false;
	for (size_t i = 0; i < e->n_hosts; i++) {
		struct relief_host *rh = &j->hosts[i];
		struct cl_ehost *eh = &e->hosts[i];

		if (rh->skip)
			continue;
		for (size_t k = 0; k < rh->n_orphans; k++)
			snprintf(eh->orphans[k], sizeof(eh->orphans[k]), "%s", rh->orphans[k].name);
		eh->n_orphans = rh->n_orphans;
		for (size_t k = 0; k < rh->n_recovered; k++) {
			if (rh->recover_failed[k] && !strcmp(eh->orphan_said, rh->recovered[k]))
				continue;
			cl_vm_emit(e, rh->recover_failed[k] ? LOG_WARNING : LOG_NOTICE, NULL, "%s",
				   rh->recovered[k]);
			snprintf(eh->orphan_said, sizeof(eh->orphan_said), "%s",
				 rh->recover_failed[k] ? rh->recovered[k] : "");
		}
		if (rh->move && !e->stopping && cl_move_count(e, NULL) < CL_MOVE_THREADS &&
		    cl_move_start(rh->move) == 0)
			rh->move = NULL; /* the engine's now */
		if (strcmp(eh->relief, rh->status)) {
			if (rh->status[0] && !rh->move)
				cl_vm_emit(e, LOG_WARNING, NULL, "host %s: %s", rh->name,
					   rh->status);
			else if (!rh->status[0] && eh->relief[0])
				cl_vm_emit(e, LOG_INFO, NULL, "host %s: %s", rh->name,
					   eh->draining ? "drained: nothing of ours runs there"
							: "no longer over its watermark");
			snprintf(eh->relief, sizeof(eh->relief), "%s", rh->status);
		}
		snprintf(eh->unmovable, sizeof(eh->unmovable), "%s", rh->unmovable);
	}
	job_free(j);
}

struct resting_ctx {
	struct relief_job *j;
	/* A VM that moved stays where it went for residence (no ping-pong
	 * between two full hosts; an operator's command is not held by
	 * it), one whose move failed for the retry backoff. */
	uint64_t now, backoff, residence;
	size_t cap;
	bool oom;
};

static void rest_one(void *ud, const char *vm, uint64_t end, bool ok)
{
	struct resting_ctx *c = ud;
	struct relief_job *j = c->j;
	struct resting *r;

	if (end && ok && c->now - end >= c->residence)
		return;
	if (end && !ok && c->now - end >= c->backoff)
		return;
	if (j->n_resting == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct resting *v = realloc(j->resting, cap * sizeof(*v));

		if (!v) {
			c->oom = true;
			return;
		}
		j->resting = v;
		c->cap = cap;
	}
	r = &j->resting[j->n_resting++];
	snprintf(r->vm, sizeof(r->vm), "%s", vm);
	/* No counting seconds: what a host says is told once per change. */
	if (!end)
		snprintf(r->why, sizeof(r->why), "moving");
	else if (ok)
		snprintf(r->why, sizeof(r->why), "moved less than %.0f s ago",
			 (double)c->residence / 1e6);
	else
		snprintf(r->why, sizeof(r->why),
			 "its last move failed less than %.0f s ago (tried again then)",
			 (double)c->backoff / 1e6);
	r->settling = end && ok;
}

/* Every group's VM as the loop has it: the round moves one only when its
 * group moves its VMs and it is in service, and says why not otherwise. */
static int snapshot_members(struct relief_job *j)
{
	struct cl_engine *e = j->e;
	size_t n = 0;

	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms)
			n++;
	}
	if (!n)
		return 0;
	j->members = calloc(n, sizeof(*j->members));
	if (!j->members)
		return -ENOMEM;
	for (size_t i = 0; i < e->n_groups; i++) {
		struct cl_vm *vm;

		VMACT_LIST_FOREACH(vms, vm, e->groups[i].vms)
			cl_move_member_read(vm, &j->members[j->n_members++]);
	}
	return 0;
}

void cl_relief_tick(struct cl_engine *e, uint64_t now)
{
	struct relief_job *j;

	if (e->relief_busy || now < e->next_relief_usec || !e->movers)
		return;
	e->next_relief_usec = now + RELIEF_USEC;
	if (cl_move_count(e, NULL) >= CL_MOVE_THREADS)
		return;
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->e = e;
	j->hosts = calloc(e->n_hosts + 1, sizeof(*j->hosts));
	if (j->hosts) {
		struct resting_ctx c = { .j = j,
					 .now = now,
					 .backoff = e->cfg->life.retry_backoff_usec,
					 .residence = e->cfg->min_residence_usec };

		cl_move_each_last(e, rest_one, &c);
		if (c.oom) {
			free(j->hosts);
			j->hosts = NULL;
		}
	}
	if (!j->hosts) {
		job_free(j);
		return;
	}
	if (snapshot_members(j) < 0) {
		job_free(j);
		return;
	}
	for (size_t i = 0; i < e->n_hosts; i++) {
		struct relief_host *rh = &j->hosts[i];

		snprintf(rh->name, sizeof(rh->name), "%s", cl_host_name(e->hosts[i].h));
		rh->draining = e->hosts[i].draining;
		rh->skip = cl_move_count(e, rh->name) > 0;
		memcpy(rh->seen, e->hosts[i].orphans, sizeof(rh->seen));
		rh->n_seen = e->hosts[i].n_orphans;
	}
	if (cl_jobs_submit(e->jobs, round_run, round_done, j) < 0) {
		job_free(j);
		return;
	}
	e->relief_busy = true;
}

/* ---- drain ---- */

static int save_drained(struct cl_engine *e, struct vmact_err *err)
{
	_cleanup_free_ char *path = NULL, *tmp = NULL;
	json_t *doc = json_pack("{s:i,s:[]}", "version", 1, "drained");
	int r = 0;

	if (!e->state_dir[0]) {
		json_decref(doc);
		return 0;
	}
	for (size_t i = 0; doc && i < e->n_hosts; i++)
		if (e->hosts[i].draining)
			json_array_append_new(json_object_get(doc, "drained"),
					      json_string(cl_host_name(e->hosts[i].h)));
	if (!doc || asprintf(&path, "%s/" DRAIN_FILE, e->state_dir) < 0 ||
	    asprintf(&tmp, "%s/." DRAIN_FILE ".tmp", e->state_dir) < 0)
		r = vmact_err_set(err, ENOMEM, "out of memory");
	else if (json_dump_file(doc, tmp, JSON_INDENT(1)) < 0 || rename(tmp, path) < 0)
		r = vmact_err_set(err, EIO, "%s: cannot write it: %m", path);
	json_decref(doc);
	return r;
}

int cl_relief_load_drained(struct cl_engine *e, struct vmact_err *err)
{
	_cleanup_free_ char *path = NULL;
	json_error_t jerr;
	json_t *doc, *v;
	size_t i;

	if (!e->state_dir[0])
		return 0;
	if (asprintf(&path, "%s/" DRAIN_FILE, e->state_dir) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc || json_integer_value(json_object_get(doc, "version")) != 1 ||
	    !json_is_array(json_object_get(doc, "drained"))) {
		json_decref(doc);
		return vmact_err_set(err, EINVAL, "%s: not a version 1 list of drained hosts",
				     path);
	}
	json_array_foreach(json_object_get(doc, "drained"), i, v) {
		struct cl_ehost *eh = json_string_value(v) ? cl_vm_ehost(e, json_string_value(v))
							   : NULL;

		/* A host no longer configured is forgotten. */
		if (eh) {
			eh->draining = true;
			cl_host_set_draining(eh->h, true);
		}
	}
	json_decref(doc);
	return 0;
}

int cl_relief_drain(struct cl_engine *e, const char *host, bool drain, struct vmact_err *err)
{
	struct cl_ehost *eh = cl_vm_ehost(e, host);
	int r;

	if (!eh)
		return vmact_err_set(err, ENOENT, "no host '%s'", host);
	if (eh->draining == drain)
		return 0;
	eh->draining = drain;
	cl_host_set_draining(eh->h, drain);
	r = save_drained(e, err);
	if (r < 0) {
		eh->draining = !drain;
		cl_host_set_draining(eh->h, !drain);
		return r;
	}
	eh->relief[0] = 0;
	eh->unmovable[0] = 0;
	cl_vm_emit(e, LOG_NOTICE, NULL, "host %s %s", host,
		   drain ? "drained: nothing new goes there, its opted-in VMs move away, its "
			   "standby VMs are given back"
			 : "back in placement (undrained)");
	/* The next round at once. */
	e->next_relief_usec = 0;
	cl_vm_kick(e);
	return 0;
}
