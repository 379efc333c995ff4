/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/arbiter/arbiter.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/time.h"
#include "shared/lease.h"

struct pod {
	/* Its key, one allocation "NS\0NAME\0" (ns points at it): two
	 * buffers of the protocol's longest names cost every VM 2 KiB
	 * (doc/actuation.md, "vmactd's own footprint"). */
	char *ns;
	const char *name;
	uint64_t seq; /* registration order: "oldest first" */
	uint64_t last_seen;
	struct vmact_resources reserved, pressure;
	/* select_migrations() would move it: reported, never in an answer. */
	bool candidate;
	/* A lease marked it moving (shared/lease.h): it grows no more and its
	 * answers carry "migrate" from 2.0 on; informed once one did (then
	 * it may not change, doc/protocols.md "Legacy plugins"); frozen once
	 * nothing resizes it any more (ag_arbiter_pod_frozen, or this
	 * arbiter's own judgement without owner_freezes). */
	bool moving, informed, frozen;
	enum ag_plugin_version version; /* of its agent's last request; 0: none yet */
	/* Kept by its agent's requests (pod_ttl) and/or by a lease (until
	 * lease_until): it goes when neither holds it. */
	bool agent, leased;
	uint64_t lease_until;
};

struct ag_arbiter {
	struct ag_arbiter_config cfg;
	struct vmact_resources total, watermark;
	/* Sums over pods, kept as 64-bit so restored claims cannot wrap. */
	uint64_t reserved_cpu, reserved_mem;
	struct pod *pods;
	size_t npods, cap;
	uint64_t seq;
	uint64_t requests, partial, refused;
	unsigned candidates;
	ag_arbiter_event_fn *event_fn;
	void *event_ud;
	sd_event *ev;
	struct net_http_server *srv;
	sd_event_source *expiry;
	uint8_t *lease_key;
};

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

int ag_arbiter_new(const struct ag_arbiter_config *cfg, struct ag_arbiter **out,
		   struct vmact_err *err)
{
	struct ag_arbiter *a;
	uint64_t cpu, mem;
	uint32_t oc_cpu, oc_mem;
	double wm;

	if (!cfg || !out)
		return vmact_err_set(err, EINVAL, "arbiter: configuration required");
	wm = cfg->watermark ? cfg->watermark : 0.9;
	if (!(wm > 0 && wm <= 1))
		return vmact_err_set(err, EINVAL, "arbiter: watermark %g outside (0, 1]", wm);
	if (cfg->min_version && !ag_plugin_version_valid((int)cfg->min_version))
		return vmact_err_set(err, EINVAL, "arbiter: invalid minimum protocol version");
	if (cfg->max_version && !ag_plugin_version_valid((int)cfg->max_version))
		return vmact_err_set(err, EINVAL, "arbiter: invalid maximum protocol version");
	oc_cpu = cfg->overcommit_cpu_milli ? cfg->overcommit_cpu_milli : 1000;
	oc_mem = cfg->overcommit_mem_milli ? cfg->overcommit_mem_milli : 1000;
	cpu = sat_sub(cfg->capacity.milli_cpu, cfg->reserve.milli_cpu) * oc_cpu / 1000;
	mem = sat_sub(cfg->capacity.mem_bytes, cfg->reserve.mem_bytes);
	if (mem > UINT64_MAX / oc_mem)
		return vmact_err_set(err, ERANGE, "arbiter: memory x overcommit overflows");
	mem = mem * oc_mem / 1000;
	if (cpu == 0 || cpu > UINT32_MAX)
		return vmact_err_set(err, EINVAL,
				     "arbiter: no CPU left to grant (capacity %" PRIu32
				     "m, reserve %" PRIu32 "m)",
				     cfg->capacity.milli_cpu, cfg->reserve.milli_cpu);
	if (mem == 0)
		return vmact_err_set(err, EINVAL,
				     "arbiter: no memory left to grant (capacity %" PRIu64
				     ", reserve %" PRIu64 ")",
				     cfg->capacity.mem_bytes, cfg->reserve.mem_bytes);
	a = calloc(1, sizeof(*a));
	if (!a)
		return vmact_err_set(err, ENOMEM, "arbiter: out of memory");
	a->cfg = *cfg;
	a->cfg.lease_key = NULL;
	if (cfg->lease_key) {
		a->lease_key = malloc(cfg->lease_key_len ? cfg->lease_key_len : 1);
		if (!a->lease_key) {
			free(a);
			return vmact_err_set(err, ENOMEM, "arbiter: out of memory");
		}
		memcpy(a->lease_key, cfg->lease_key, cfg->lease_key_len);
	}
	a->cfg.watermark = wm;
	a->cfg.overcommit_cpu_milli = oc_cpu;
	a->cfg.overcommit_mem_milli = oc_mem;
	if (!a->cfg.min_version)
		a->cfg.min_version = AG_PLUGIN_V1_0;
	if (!a->cfg.max_version)
		a->cfg.max_version = AG_PLUGIN_V5_0;
	/* Slot-counting versions (below 4.0) are understood with NeonVM's
	 * default slot unless told otherwise: with none, the oldest agents
	 * were all refused by default. */
	if (!a->cfg.slot_bytes)
		a->cfg.slot_bytes = AG_ARBITER_DEFAULT_SLOT_BYTES;
	if (a->cfg.min_version > a->cfg.max_version) {
		free(a->lease_key);
		free(a);
		return vmact_err_set(err, EINVAL, "arbiter: empty protocol version range");
	}
	if (!a->cfg.legacy_compute_unit.milli_cpu)
		a->cfg.legacy_compute_unit.milli_cpu = 250;
	if (!a->cfg.legacy_compute_unit.mem_bytes)
		a->cfg.legacy_compute_unit.mem_bytes = a->cfg.slot_bytes;
	if (a->cfg.slot_bytes && a->cfg.legacy_compute_unit.mem_bytes % a->cfg.slot_bytes) {
		free(a->lease_key);
		free(a);
		return vmact_err_set(
			err, EINVAL,
			"arbiter: compute unit memory is not a multiple of the slot size");
	}
	if (!a->cfg.request_timeout_usec)
		a->cfg.request_timeout_usec = 10ULL * 1000000ULL;
	if (!a->cfg.pod_ttl_usec)
		a->cfg.pod_ttl_usec = 60ULL * 1000000ULL;
	a->total.milli_cpu = (uint32_t)cpu;
	a->total.mem_bytes = mem;
	a->watermark.milli_cpu = (uint32_t)floor((double)cpu * wm);
	a->watermark.mem_bytes = (uint64_t)floorl((long double)mem * wm);
	*out = a;
	return 0;
}

void ag_arbiter_free(struct ag_arbiter *a)
{
	if (!a)
		return;
	net_http_server_free(a->srv);
	sd_event_source_disable_unref(a->expiry);
	sd_event_unref(a->ev);
	for (size_t i = 0; i < a->npods; i++)
		free(a->pods[i].ns);
	free(a->pods);
	free(a->lease_key);
	free(a);
}

void ag_arbiter_on_event(struct ag_arbiter *a, ag_arbiter_event_fn *fn, void *userdata)
{
	a->event_fn = fn;
	a->event_ud = userdata;
}

static struct pod *find_pod(const struct ag_arbiter *a, const char *ns, const char *name)
{
	for (size_t i = 0; i < a->npods; i++)
		if (strcmp(a->pods[i].name, name) == 0 && strcmp(a->pods[i].ns, ns) == 0)
			return &a->pods[i];
	return NULL;
}

static struct pod *add_pod(struct ag_arbiter *a, const char *ns, const char *name)
{
	size_t lns = strlen(ns), lname = strlen(name);
	char *key;
	struct pod *p;

	if (a->npods == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		struct pod *n = realloc(a->pods, cap * sizeof(*n));

		if (!n)
			return NULL;
		a->pods = n;
		a->cap = cap;
	}
	key = malloc(lns + lname + 2);
	if (!key)
		return NULL;
	memcpy(key, ns, lns + 1);
	memcpy(key + lns + 1, name, lname + 1);
	p = &a->pods[a->npods++];
	memset(p, 0, sizeof(*p));
	p->ns = key;
	p->name = key + lns + 1;
	p->seq = ++a->seq;
	return p;
}

static void remove_pod(struct ag_arbiter *a, size_t i)
{
	a->reserved_cpu -= a->pods[i].reserved.milli_cpu;
	a->reserved_mem -= a->pods[i].reserved.mem_bytes;
	free(a->pods[i].ns);
	a->pods[i] = a->pods[--a->npods];
}

static void set_reserved(struct ag_arbiter *a, struct pod *p, struct vmact_resources r)
{
	a->reserved_cpu = a->reserved_cpu - p->reserved.milli_cpu + r.milli_cpu;
	a->reserved_mem = a->reserved_mem - p->reserved.mem_bytes + r.mem_bytes;
	p->reserved = r;
}

/* Whether its agent spoke for the pod within pod_ttl. A pod seen at or
 * after now (a request handled later in the loop than the time asked
 * about) is fresh, not 2^64 old. */
static bool agent_live(const struct ag_arbiter *a, const struct pod *p, uint64_t now_usec)
{
	return p->agent &&
	       !(now_usec > p->last_seen && now_usec - p->last_seen > a->cfg.pod_ttl_usec);
}

static void clear_moving(struct pod *p)
{
	p->moving = false;
	p->informed = false;
	p->frozen = false;
}

/* One resource of the HEAD plugin's reconcilePod (doc/protocols.md,
 * "Permit computation"), the ceiling being the watermark rather than the
 * total. Returns the new reservation; *pressure gets what
 * stays ungranted. */
static uint64_t reconcile(uint64_t reserved, uint64_t requested, uint64_t node_reserved,
			  uint64_t watermark, uint64_t unit, uint64_t *pressure)
{
	uint64_t remaining, max_increase, grant;

	*pressure = 0;
	if (requested <= reserved)
		return requested;
	remaining = sat_sub(watermark, node_reserved);
	/* Whole units only, unless the rest of the request is smaller. */
	max_increase = remaining / unit * unit;
	grant = requested - reserved;
	if (grant > max_increase)
		grant = max_increase;
	*pressure = requested - reserved - grant;
	return reserved + grant;
}

/* Recomputes which pods would be migrated (the candidates, only
 * reported: moving a VM is the cluster layer's decision, which marks it
 * through a moving lease): while reservations minus what is already
 * moving exceed the watermark, pods oldest first, skipping any whose
 * reservation alone exceeds the watermark (doc/protocols.md, "Permit
 * computation"; Neon's migration.go). */
static void select_migrations(struct ag_arbiter *a)
{
	uint64_t cpu = a->reserved_cpu, mem = a->reserved_mem, over_cpu, over_mem;

	a->candidates = 0;
	for (size_t i = 0; i < a->npods; i++) {
		a->pods[i].candidate = false;
		if (a->pods[i].moving) {
			cpu -= a->pods[i].reserved.milli_cpu;
			mem -= a->pods[i].reserved.mem_bytes;
		}
	}
	over_cpu = sat_sub(cpu, a->watermark.milli_cpu);
	over_mem = sat_sub(mem, a->watermark.mem_bytes);
	while (over_cpu || over_mem) {
		struct pod *oldest = NULL;

		for (size_t i = 0; i < a->npods; i++) {
			struct pod *p = &a->pods[i];

			if (p->candidate || p->moving ||
			    p->reserved.milli_cpu > a->watermark.milli_cpu ||
			    p->reserved.mem_bytes > a->watermark.mem_bytes)
				continue;
			if ((over_cpu && p->reserved.milli_cpu) ||
			    (over_mem && p->reserved.mem_bytes))
				if (!oldest || p->seq < oldest->seq)
					oldest = p;
		}
		if (!oldest)
			break;
		oldest->candidate = true;
		a->candidates++;
		over_cpu = sat_sub(over_cpu, oldest->reserved.milli_cpu);
		over_mem = sat_sub(over_mem, oldest->reserved.mem_bytes);
	}
}

static void emit(struct ag_arbiter *a, const struct ag_arbiter_event *ev)
{
	if (a->event_fn)
		a->event_fn(a->event_ud, ev);
}

static void fail(struct ag_arbiter *a, struct net_http_server_reply *reply, unsigned status,
		 const char *text, const struct ag_agent_request *req)
{
	struct ag_arbiter_event ev = { .status = status, .text = text };

	if (req) {
		ev.pod_namespace = req->pod_namespace;
		ev.pod_name = req->pod_name;
		ev.version = req->version;
		ev.requested = req->resources;
	}
	a->refused++;
	net_http_reply_text(reply, status, "text/plain", text);
	emit(a, &ev);
}

static void range_string(const struct ag_arbiter *a, char *buf, size_t len)
{
	char lo[32], hi[32];

	ag_plugin_version_string(a->cfg.min_version, lo, sizeof(lo));
	ag_plugin_version_string(a->cfg.max_version, hi, sizeof(hi));
	if (a->cfg.min_version == a->cfg.max_version)
		snprintf(buf, len, "%s", lo);
	else
		snprintf(buf, len, "%s to %s", lo, hi);
}

/* Below 2.0 permits must be whole CPUs: the legacy plugin multiplied its
 * unit by 2, 3, ... until the CPU part was integral
 * (doc/protocols.md, "Plugin versions"). */
static struct vmact_resources unit_for(const struct ag_arbiter *a, enum ag_plugin_version v,
				       const struct ag_agent_request *req)
{
	struct vmact_resources cu;

	if (ag_plugin_agent_sends_compute_unit(v))
		return req->compute_unit;
	cu = a->cfg.legacy_compute_unit;
	if (!ag_plugin_supports_fractional_cpu(v)) {
		uint32_t k = 1;

		while ((cu.milli_cpu * k) % 1000)
			k++;
		cu.milli_cpu *= k;
		cu.mem_bytes *= k;
	}
	return cu;
}

void ag_arbiter_handle(struct ag_arbiter *a, const char *method, const char *body, size_t len,
		       uint64_t now_usec, struct net_http_server_reply *reply)
{
	_cleanup_(json_decrefp) json_t *j = NULL;
	_cleanup_(json_decrefp) json_t *out = NULL;
	struct ag_agent_request req;
	struct ag_plugin_response resp = { 0 };
	struct ag_arbiter_event ev = { 0 };
	struct vmact_err err = { 0 };
	struct vmact_resources cu, want, pressure;
	struct pod *p;
	long long ver;
	char msg[256], a1[80], a2[48];
	uint64_t pc, pm;
	int r;

	a->requests++;
	if (strcmp(method, "POST") != 0)
		return fail(a, reply, 400, "must be POST", NULL);
	/* Bytes that are not JSON get the plugin's own words; JSON the
	 * decoder refuses gets its message, which names the key. */
	j = json_loadb(body, len, 0, NULL);
	if (!j)
		return fail(a, reply, 400, "bad JSON", NULL);
	if (ag_agent_request_peek_version(j, &ver, &err) < 0)
		return fail(a, reply, 400, err.msg, NULL);
	if (ver == 0)
		return fail(a, reply, 400, "invalid protocol version <invalid: zero>", NULL);
	if (ver < a->cfg.min_version || ver > a->cfg.max_version) {
		range_string(a, a1, sizeof(a1));
		snprintf(msg, sizeof(msg), "protocol version mismatch: need %s but got %s", a1,
			 ag_plugin_version_string(ver, a2, sizeof(a2)));
		return fail(a, reply, 400, msg, NULL);
	}
	r = ag_agent_request_decode(j, a->cfg.slot_bytes, &req, &err);
	if (r == -EDOM)
		return fail(
			a, reply, 400,
			"agent requested fractional CPU with protocol version that does not support it",
			NULL);
	if (r == -ENODATA) {
		snprintf(msg, sizeof(msg), "nil metrics not supported for protocol version %s",
			 ag_plugin_version_string(ver, a1, sizeof(a1)));
		return fail(a, reply, 400, msg, NULL);
	}
	if (r < 0)
		return fail(a, reply, 400, err.msg, NULL);
	if (ag_plugin_agent_sends_compute_unit(req.version)) {
		if (!req.has_compute_unit || !req.compute_unit.milli_cpu)
			return fail(a, reply, 400,
				    "computeUnit fields must be non-zero: vCPUs must be non-zero",
				    &req);
		if (!req.compute_unit.mem_bytes)
			return fail(a, reply, 400,
				    "computeUnit fields must be non-zero: mem must be non-zero",
				    &req);
	}
	cu = unit_for(a, req.version, &req);

	p = find_pod(a, req.pod_namespace, req.pod_name);
	if (!p) {
		p = add_pod(a, req.pod_namespace, req.pod_name);
		if (!p)
			return fail(a, reply, 500, "request handler panicked", &req);
		/* What the pod already holds: its last permit after our
		 * restart, else the size it runs at now. */
		set_reserved(a, p, req.has_last_permit ? req.last_permit : req.resources);
		ev.new_pod = true;
	}
	p->last_seen = now_usec;
	p->agent = true;
	p->version = req.version;
	/* A pod told it is migrating may not change any more: the legacy
	 * plugins' refusal, in their words (doc/protocols.md, "Legacy
	 * plugins"). Its agent still speaks for it. */
	if (p->moving && p->informed && !vmact_res_eq(req.resources, p->reserved))
		return fail(a, reply, 400,
			    "cannot change resources: agent has already been informed that pod "
			    "is migrating",
			    &req);
	/* Growth stops at the watermark, so a resource above it (after
	 * registrations or restored reservations) grows no further. */
	want = req.resources;
	if (p->moving) {
		/* Moving away: a decrease is granted, an increase is not (the
		 * legacy plugins' migrating pod, doc/protocols.md "Legacy
		 * plugins"); what it asks beyond is pressure. */
		struct vmact_resources next = {
			.milli_cpu = want.milli_cpu < p->reserved.milli_cpu ? want.milli_cpu
									    : p->reserved.milli_cpu,
			.mem_bytes = want.mem_bytes < p->reserved.mem_bytes ? want.mem_bytes
									    : p->reserved.mem_bytes,
		};

		pc = sat_sub(want.milli_cpu, next.milli_cpu);
		pm = sat_sub(want.mem_bytes, next.mem_bytes);
		set_reserved(a, p, next);
	} else {
		uint64_t node_cpu = a->reserved_cpu, node_mem = a->reserved_mem;
		struct vmact_resources next;

		next.milli_cpu = (uint32_t)reconcile(p->reserved.milli_cpu, want.milli_cpu,
						     node_cpu, a->watermark.milli_cpu, cu.milli_cpu,
						     &pc);
		next.mem_bytes = reconcile(p->reserved.mem_bytes, want.mem_bytes, node_mem,
					   a->watermark.mem_bytes, cu.mem_bytes, &pm);
		set_reserved(a, p, next);
	}
	pressure.milli_cpu = (uint32_t)pc;
	pressure.mem_bytes = pm;
	p->pressure = pressure;
	if (pc || pm)
		a->partial++;
	select_migrations(a);

	/* "migrate" tells an agent its VM is moving away: only a VM the
	 * cluster layer really moves (a moving lease) is told; candidates
	 * are only reported (ev.candidate). Agents below 2.0 panic on it
	 * (doc/protocols.md, "What each era's agents sent"): the codec never
	 * writes it for them, so they are pinned at their reservation
	 * without being told. */
	resp.permit = p->reserved;
	resp.migrate = p->moving;
	if (p->moving && ag_plugin_agent_takes_migrate(req.version))
		p->informed = true;
	/* A standalone arbiter's agents are not vmact's to stop: the pod is
	 * still from the answer that tells its agent, or from this one when
	 * the agent cannot be told. */
	if (p->moving && !a->cfg.owner_freezes)
		p->frozen = true;
	resp.has_resource_unit = ag_plugin_plugin_sends_compute_unit(req.version);
	resp.resource_unit = cu;
	out = ag_plugin_response_encode(req.version, &resp, a->cfg.slot_bytes, &err);
	if (!out || !(reply->body = ag_plugin_dumps(out)))
		return fail(a, reply, 500, "request handler panicked", &req);
	reply->body_len = strlen(reply->body);
	reply->status = 200;
	reply->content_type = "application/json";

	ev.status = 200;
	ev.pod_namespace = p->ns;
	ev.pod_name = p->name;
	ev.version = req.version;
	ev.requested = req.resources;
	ev.permit = p->reserved;
	ev.pressure = pressure;
	ev.candidate = p->candidate;
	ev.migrate = p->moving && ag_plugin_agent_takes_migrate(req.version);
	ev.moving = p->moving;
	emit(a, &ev);
}

unsigned ag_arbiter_expire(struct ag_arbiter *a, uint64_t now_usec)
{
	unsigned n = 0;

	for (size_t i = 0; i < a->npods;) {
		struct pod *p = &a->pods[i];
		bool agent = agent_live(a, p, now_usec);

		if (p->leased && now_usec >= p->lease_until) {
			p->leased = false;
			/* A mover that stopped renewing gave the move up: the
			 * mark lapses with its lease (doc/cluster.md,
			 * "Capacity leases"). */
			if (p->moving) {
				struct ag_arbiter_event ev = { .status = 200,
							       .lease = true,
							       .pod_namespace = p->ns,
							       .pod_name = p->name,
							       .moving_changed = true };

				clear_moving(p);
				emit(a, &ev);
			}
		}
		if (!agent && !p->leased) {
			remove_pod(a, i);
			n++;
		} else {
			i++;
		}
	}
	if (n)
		select_migrations(a);
	return n;
}

void ag_arbiter_totals(const struct ag_arbiter *a, struct ag_arbiter_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->total = a->total;
	t->watermark = a->watermark;
	t->reserved.milli_cpu = a->reserved_cpu > UINT32_MAX ? UINT32_MAX
							     : (uint32_t)a->reserved_cpu;
	t->reserved.mem_bytes = a->reserved_mem;
	for (size_t i = 0; i < a->npods; i++) {
		t->pressure.milli_cpu += a->pods[i].pressure.milli_cpu;
		t->pressure.mem_bytes += a->pods[i].pressure.mem_bytes;
	}
	t->pods = (unsigned)a->npods;
	for (size_t i = 0; i < a->npods; i++)
		t->leases += a->pods[i].leased;
	t->candidates = a->candidates;
	for (size_t i = 0; i < a->npods; i++)
		t->migrating += a->pods[i].moving;
	t->requests = a->requests;
	t->grants_partial = a->partial;
	t->refused = a->refused;
}

void ag_arbiter_migration_candidates(const struct ag_arbiter *a,
				     void (*fn)(void *ud, const char *ns, const char *name,
						const struct vmact_resources *reserved),
				     void *userdata)
{
	uint64_t last = 0;

	/* Oldest first: walk in registration order. */
	for (;;) {
		const struct pod *next = NULL;

		for (size_t i = 0; i < a->npods; i++)
			if (a->pods[i].candidate && a->pods[i].seq > last &&
			    (!next || a->pods[i].seq < next->seq))
				next = &a->pods[i];
		if (!next)
			return;
		fn(userdata, next->ns, next->name, &next->reserved);
		last = next->seq;
	}
}

int ag_arbiter_pod(const struct ag_arbiter *a, const char *ns, const char *name,
		   struct vmact_resources *reserved, struct vmact_resources *pressure)
{
	const struct pod *p = find_pod(a, ns, name);

	if (!p)
		return -ENOENT;
	if (reserved)
		*reserved = p->reserved;
	if (pressure)
		*pressure = p->pressure;
	return 0;
}

int ag_arbiter_pod_entry(const struct ag_arbiter *a, const char *ns, const char *name,
			 uint64_t now_usec, struct vmact_lease_pod *out)
{
	const struct pod *p = find_pod(a, ns, name);

	if (!p)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	/* The plugin protocol's names may be longer than a lease's: such an
	 * entry is only ever read in-process, by its full name. */
	snprintf(out->ns, sizeof(out->ns), "%.*s", VMACT_LEASE_NAME_MAX, p->ns);
	snprintf(out->name, sizeof(out->name), "%.*s", VMACT_LEASE_NAME_MAX, p->name);
	out->size = p->reserved;
	out->pressure = p->pressure;
	out->agent = agent_live(a, p, now_usec);
	out->leased = p->leased;
	out->moving = p->moving;
	/* Without an owner, a pod whose agent fell silent since the mark
	 * changes no more either. */
	out->frozen = p->frozen || (p->moving && !a->cfg.owner_freezes && !out->agent);
	return 0;
}

int ag_arbiter_pod_frozen(struct ag_arbiter *a, const char *ns, const char *name, bool frozen)
{
	struct pod *p = find_pod(a, ns, name);

	if (!p)
		return -ENOENT;
	/* Frozen means something only while the pod moves: a report that
	 * crossed the mark's clearing is dropped. */
	p->frozen = frozen && p->moving;
	return 0;
}

void ag_arbiter_forget(struct ag_arbiter *a, const char *ns, const char *name)
{
	struct pod *p = find_pod(a, ns, name);

	if (!p)
		return;
	/* No agent asks for it any more: neither its hold nor the growth it
	 * was refused count. A lease keeps its reservation (and a mark)
	 * until released or expired. */
	p->agent = false;
	p->version = 0;
	p->pressure = (struct vmact_resources){ 0 };
	if (!p->leased)
		remove_pod(a, (size_t)(p - a->pods));
	select_migrations(a);
}

/* ---- leases: the cluster layer's Reserve (shared/lease.h) ---- */

/* How a lease request changed the moving mark. */
enum moving_news { MOVING_SAME, MOVING_SET, MOVING_CLEARED };

static void lease_reply_news(struct ag_arbiter *a, struct net_http_server_reply *reply,
			     unsigned status, json_t *doc, const char *ns, const char *name,
			     const char *text, enum moving_news news)
{
	struct ag_arbiter_event ev = { .status = status,
				       .text = text,
				       .lease = true,
				       .pod_namespace = ns,
				       .pod_name = name,
				       .moving = news == MOVING_SET,
				       .moving_changed = news != MOVING_SAME };
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (status != 200)
		a->refused++;
	if (!body) {
		net_http_reply_text(reply, 500, "application/json",
				    "{\"error\":\"out of memory\"}");
	} else {
		reply->status = status;
		reply->content_type = "application/json";
		reply->body = body;
		reply->body_len = strlen(body);
	}
	emit(a, &ev);
}

static void lease_reply(struct ag_arbiter *a, struct net_http_server_reply *reply, unsigned status,
			json_t *doc, const char *ns, const char *name, const char *text)
{
	lease_reply_news(a, reply, status, doc, ns, name, text, MOVING_SAME);
}

static void lease_error(struct ag_arbiter *a, struct net_http_server_reply *reply, unsigned status,
			const char *ns, const char *name, const char *text)
{
	lease_reply(a, reply, status, json_pack("{s:s}", "error", text), ns, name, text);
}

static json_t *res_json(struct vmact_resources r)
{
	return json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)r.milli_cpu, "memory_bytes",
			 (json_int_t)r.mem_bytes);
}

static void lease_take(struct ag_arbiter *a, const struct vmact_lease_request *lr,
		       uint64_t now_usec, struct net_http_server_reply *reply)
{
	struct pod *p = find_pod(a, lr->ns, lr->name);
	struct vmact_resources want = lr->size, free_ = { 0 };
	bool agent = p && agent_live(a, p, now_usec);
	enum moving_news news = MOVING_SAME;
	uint64_t more_cpu, more_mem;
	char msg[256], c[32], m[32];

	/* An entry its agent speaks for keeps the agent's reservation: the
	 * lease only keeps it alive (its size is the agent's business). */
	if (agent)
		want = p->reserved;
	more_cpu = sat_sub(want.milli_cpu, p ? p->reserved.milli_cpu : 0);
	more_mem = sat_sub(want.mem_bytes, p ? p->reserved.mem_bytes : 0);
	/* The same books as growth: room under the watermark, unless the
	 * VM runs already and is only being recorded. */
	if (!lr->existing && ((more_cpu && a->reserved_cpu + more_cpu > a->watermark.milli_cpu) ||
			      (more_mem && a->reserved_mem + more_mem > a->watermark.mem_bytes))) {
		free_.milli_cpu = (uint32_t)sat_sub(a->watermark.milli_cpu, a->reserved_cpu);
		free_.mem_bytes = sat_sub(a->watermark.mem_bytes, a->reserved_mem);
		vmact_quantity_format_milli(free_.milli_cpu, c, sizeof(c));
		vmact_quantity_format_bytes(free_.mem_bytes, m, sizeof(m));
		snprintf(msg, sizeof(msg), "no room: %s CPU / %s free under the watermark", c, m);
		return lease_reply(a, reply, 409,
				   json_pack("{s:s,s:o}", "error", msg, "free", res_json(free_)),
				   lr->ns, lr->name, msg);
	}
	if (!p) {
		p = add_pod(a, lr->ns, lr->name);
		if (!p)
			return lease_error(a, reply, 500, lr->ns, lr->name, "out of memory");
		p->last_seen = now_usec;
	}
	set_reserved(a, p, want);
	p->leased = true;
	p->lease_until = now_usec + (uint64_t)lr->ttl_s * VMACT_USEC_PER_SEC;
	/* Every POST says whether the VM moves: a renewal without the mark
	 * (the move was given up) clears it. */
	if (lr->moving && !p->moving) {
		p->moving = true;
		news = MOVING_SET;
		/* Without an owner to stop it, a pod nobody speaks for (or
		 * whose agent cannot be told, below 2.0) changes no more. */
		if (!a->cfg.owner_freezes &&
		    (!agent || (p->version && !ag_plugin_agent_takes_migrate(p->version))))
			p->frozen = true;
	} else if (!lr->moving && p->moving) {
		clear_moving(p);
		news = MOVING_CLEARED;
	}
	select_migrations(a);
	lease_reply_news(a, reply, 200,
			 json_pack("{s:s,s:s,s:I,s:I,s:I}", "namespace", p->ns, "name", p->name,
				   "milli_cpu", (json_int_t)p->reserved.milli_cpu, "memory_bytes",
				   (json_int_t)p->reserved.mem_bytes, "ttl_s",
				   (json_int_t)lr->ttl_s),
			 p->ns, p->name, NULL, news);
}

static void lease_release(struct ag_arbiter *a, const char *ns, const char *name,
			  struct net_http_server_reply *reply)
{
	struct pod *p = find_pod(a, ns, name);
	bool released = p && p->leased;
	enum moving_news news = MOVING_SAME;

	if (p && p->leased) {
		p->leased = false;
		/* The mark lives with the lease. */
		if (p->moving) {
			clear_moving(p);
			news = MOVING_CLEARED;
		}
		/* Its agent (if any) keeps it until it falls silent. */
		if (!p->agent)
			remove_pod(a, (size_t)(p - a->pods));
		select_migrations(a);
	}
	lease_reply_news(a, reply, 200, json_pack("{s:b}", "released", released), ns, name, NULL,
			 news);
}

/* GET /v1/leases/NS/NAME. */
static void lease_entry(struct ag_arbiter *a, const char *ns, const char *name, uint64_t now_usec,
			struct net_http_server_reply *reply)
{
	struct vmact_lease_pod e;

	if (ag_arbiter_pod_entry(a, ns, name, now_usec, &e) < 0)
		return lease_error(a, reply, 404, ns, name, "no such pod");
	lease_reply(a, reply, 200, vmact_lease_pod_encode(&e), ns, name, NULL);
}

void ag_arbiter_lease_handle(struct ag_arbiter *a, const char *method, const char *url,
			     const char *ts, const char *sig, const char *body, size_t len,
			     uint64_t now_usec, long long now_real,
			     struct net_http_server_reply *reply)
{
	struct vmact_err err = { 0 };
	struct vmact_lease_request lr;

	a->requests++;
	if (!a->lease_key)
		return lease_error(a, reply, 404, NULL, NULL,
				   "this arbiter has no lease interface (no lease key configured)");
	if (vmact_lease_verify(a->lease_key, a->cfg.lease_key_len, method, url, ts, sig, body, len,
			       now_real, &err) < 0)
		return lease_error(a, reply, 401, NULL, NULL, err.msg);
	/* Expired leases must not be renewed as if they still held room. */
	ag_arbiter_expire(a, now_usec);
	if (strcmp(url, "/v1/leases") == 0) {
		if (strcmp(method, "GET") == 0) {
			struct ag_arbiter_totals t;
			struct vmact_lease_ledger l = { 0 };

			ag_arbiter_totals(a, &t);
			l.total = t.total;
			l.watermark = t.watermark;
			l.reserved = t.reserved;
			l.pressure = t.pressure;
			l.pods = t.pods;
			l.leases = t.leases;
			return lease_reply(a, reply, 200, vmact_lease_ledger_encode(&l), NULL, NULL,
					   NULL);
		}
		if (strcmp(method, "POST") != 0)
			return lease_error(a, reply, 405, NULL, NULL, "use GET or POST");
		if (vmact_lease_request_decode(body, len, &lr, &err) < 0)
			return lease_error(a, reply, 400, NULL, NULL, err.msg);
		return lease_take(a, &lr, now_usec, reply);
	}
	{
		const char *rest = url + strlen("/v1/leases/"), *slash = strchr(rest, '/');
		char ns[VMACT_LEASE_NAME_MAX + 1], name[VMACT_LEASE_NAME_MAX + 1];

		if (strcmp(method, "DELETE") != 0 && strcmp(method, "GET") != 0)
			return lease_error(a, reply, 405, NULL, NULL, "use GET or DELETE");
		if (!slash || (size_t)(slash - rest) > VMACT_LEASE_NAME_MAX ||
		    strlen(slash + 1) > VMACT_LEASE_NAME_MAX)
			return lease_error(a, reply, 404, NULL, NULL, "no such lease");
		snprintf(ns, sizeof(ns), "%.*s", (int)(slash - rest), rest);
		snprintf(name, sizeof(name), "%s", slash + 1);
		if (!vmact_lease_name_valid(ns) || !vmact_lease_name_valid(name))
			return lease_error(a, reply, 404, NULL, NULL, "no such lease");
		if (strcmp(method, "GET") == 0)
			return lease_entry(a, ns, name, now_usec, reply);
		lease_release(a, ns, name, reply);
	}
}

/* ---- on the event loop -------------------------------------------------- */

static void on_request(void *ud, const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	struct ag_arbiter *a = ud;

	/* The plugin protocol answers any other path, as the plugin does. */
	if (strcmp(req->url, "/v1/leases") == 0 || strncmp(req->url, "/v1/leases/", 11) == 0)
		return ag_arbiter_lease_handle(a, req->method, req->url,
					       net_http_request_arg(req, "ts"),
					       net_http_request_arg(req, "sig"), req->body,
					       req->body_len, vmact_loop_now_usec(a->ev),
					       (long long)time(NULL), reply);
	ag_arbiter_handle(a, req->method, req->body, req->body_len, vmact_loop_now_usec(a->ev),
			  reply);
}

/* How often entries are looked at: a quarter of the pod ttl, at most a
 * second (a lease's ttl is seconds). */
static uint64_t expiry_period(const struct ag_arbiter *a)
{
	uint64_t p = a->cfg.pod_ttl_usec / 4;

	return p < VMACT_USEC_PER_SEC ? p : VMACT_USEC_PER_SEC;
}

/* The next look after now: on whole periods of CLOCK_MONOTONIC, within a
 * millisecond. vmactd's other clocks tick on whole seconds (the memory
 * readings, the policy's grid), so a second's timers wake the loop once,
 * not once each: a timer of its own phase (sd-event's default accuracy
 * put it a fraction of a second off the others) was a second wake-up a
 * second (doc/actuation.md, "vmactd's own footprint"). */
#define EXPIRY_ACCURACY_USEC 1000

static uint64_t next_expiry(const struct ag_arbiter *a, uint64_t now)
{
	uint64_t p = expiry_period(a);

	return p ? (now / p + 1) * p : now + VMACT_USEC_PER_SEC;
}

static int on_expiry(sd_event_source *s, uint64_t usec, void *ud)
{
	struct ag_arbiter *a = ud;
	uint64_t now = vmact_loop_now_usec(a->ev);

	/* usec is when the timer was due; a busy loop runs it later, after
	 * requests stamped with the loop's later time: expire against that. */
	(void)usec;
	ag_arbiter_expire(a, now);
	sd_event_source_set_time(s, next_expiry(a, now));
	return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

int ag_arbiter_attach(struct ag_arbiter *a, sd_event *ev, struct vmact_err *err)
{
	uint64_t now;
	int r;

	if (a->ev)
		return 0;
	a->ev = sd_event_ref(ev);
	now = vmact_loop_now_usec(ev);
	r = sd_event_add_time(ev, &a->expiry, CLOCK_MONOTONIC, next_expiry(a, now),
			      EXPIRY_ACCURACY_USEC, on_expiry, a);
	if (r < 0)
		return vmact_err_set(err, -r, "arbiter: expiry timer: %s", strerror(-r));
	sd_event_source_set_enabled(a->expiry, SD_EVENT_ON);
	return 0;
}

void ag_arbiter_local(void *userdata, const char *body, size_t len,
		      struct net_http_server_reply *reply)
{
	struct ag_arbiter *a = userdata;

	ag_arbiter_handle(a, "POST", body, len, vmact_loop_now_usec(a->ev), reply);
}

int ag_arbiter_listen(struct ag_arbiter *a, sd_event *ev, const char *listen, struct vmact_err *err)
{
	struct net_http_server_config hc = {
		.listen = listen,
		.max_body = AG_PLUGIN_MAX_BODY,
		/* What the plugin's 1 KiB LimitReader turns a long body into. */
		.too_large_status = 400,
		.too_large_body = "bad JSON",
		.conn_limit = 512,
		.idle_timeout_sec = 30,
		.request_timeout_usec = a->cfg.request_timeout_usec,
	};
	int r;

	if (a->srv)
		return vmact_err_set(err, EBUSY, "arbiter: already listening");
	r = ag_arbiter_attach(a, ev, err);
	if (r < 0)
		return r;
	return net_http_server_new(ev, &hc, on_request, a, &a->srv, err);
}

unsigned ag_arbiter_port(const struct ag_arbiter *a)
{
	return net_http_server_port(a->srv);
}

int ag_host_capacity(struct vmact_resources *out, struct vmact_err *err)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	FILE *f;
	uint64_t kb = 0;

	if (cpus <= 0 || cpus > (long)(UINT32_MAX / 1000))
		return vmact_err_set(err, EIO, "host capacity: cannot count online CPUs");
	f = fopen("/proc/meminfo", "re");
	if (!f)
		return vmact_err_set(err, errno, "host capacity: /proc/meminfo: %m");
	while (getline(&line, &cap, f) > 0) {
		unsigned long long v;

		if (sscanf(line, "MemTotal: %llu kB", &v) == 1) {
			kb = v;
			break;
		}
	}
	fclose(f);
	if (!kb || kb > UINT64_MAX / 1024)
		return vmact_err_set(err, EIO, "host capacity: no MemTotal in /proc/meminfo");
	out->milli_cpu = (uint32_t)cpus * 1000;
	out->mem_bytes = kb * 1024;
	return 0;
}
