/* SPDX-License-Identifier: Apache-2.0 */
/* The routes of vmact-groupd's API (doc/cluster-api.md). Reads are
 * answered from the engine's memory; changes when the engine has recorded
 * them in libvirt (deferred replies). */
#include "cluster/daemon/api.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/time.h"
#include "net/http-server.h"
#include "shared/group-api.h"
#include "shared/sockpath.h"

#define JSON_TYPE "application/json"
#define MAX_BODY  (64 * 1024)
/* Above the longest a change takes to be recorded (a busy VM's job
 * first: a bind, a restore). */
#define REQUEST_TIMEOUT_USEC (60 * 1000000ULL)

struct cl_api {
	sd_event *ev;
	struct net_http_server *http;
	struct cl_engine *e;
	char socket[108];
	unsigned long long own_uid;
};

static void reply_json(struct net_http_server_reply *reply, unsigned status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (!text) {
		net_http_reply_text(reply, 500, JSON_TYPE, VMACT_GAPI_OOM_ERROR);
		return;
	}
	free(reply->body);
	reply->status = status;
	reply->content_type = JSON_TYPE;
	reply->body = text;
	reply->body_len = strlen(text);
}

static void reply_error(struct net_http_server_reply *reply, unsigned status, const char *reason,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void reply_error(struct net_http_server_reply *reply, unsigned status, const char *reason,
			const char *fmt, ...)
{
	char msg[VMACT_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_json(reply, status, vmact_gapi_error_encode(msg, reason));
}

/* ---- documents (shared/group-api.h's types, filled from the engine's
 * views; their strings stay the engine's) ---- */

static struct vmact_gapi_res res_of(struct vmact_resources r)
{
	return (struct vmact_gapi_res){ .milli_cpu = (int64_t)r.milli_cpu,
					.memory_bytes = (int64_t)r.mem_bytes };
}

/* g's arrays are malloc'd (vmact_gapi_group_clear); -ENOMEM. */
static int group_fill(const struct cl_engine_group_view *v, struct vmact_gapi_group *g)
{
	const struct cl_group_cfg *cfg = v->cfg;
	const struct cl_template *t = &cfg->tpl;
	struct vmact_err err = { 0 };
	const char *key;
	json_t *val;

	*g = (struct vmact_gapi_group){
		.id = cfg->id,
		.min = (int32_t)cfg->min,
		.max = (int32_t)cfg->max,
		.target = (int32_t)v->target,
		.in_service = (int32_t)v->in_service,
		.tmpl = { .vcpus = t->vcpus,
			  .max_vcpus = t->max_vcpus,
			  .memory_bytes = t->memory,
			  .max_memory_bytes = t->max_memory,
			  .ephemeral_bytes = v->node.capacity.ephemeral,
			  .pods = t->pods,
			  .arch = t->arch,
			  .os = t->os,
			  .capacity_milli_cpu = v->node.capacity.milli_cpu,
			  .capacity_memory_bytes = v->node.capacity.memory,
			  .capacity_pods = v->node.capacity.pods,
			  .alloc_milli_cpu = v->node.allocatable.milli_cpu,
			  .alloc_memory_bytes = v->node.allocatable.memory,
			  .alloc_ephemeral_bytes = v->node.allocatable.ephemeral,
			  .alloc_pods = v->node.allocatable.pods,
			  .reported_by = v->node_reported_by },
		.scheduler_name = cfg->scheduler_name,
	};
	g->hosts = calloc(cfg->n_hosts + 1, sizeof(*g->hosts));
	g->labels = calloc(json_object_size(cfg->labels) + 1, sizeof(*g->labels));
	g->taints = calloc(cfg->n_taints + 1, sizeof(*g->taints));
	if (!g->hosts || !g->labels || !g->taints)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_hosts; i++)
		g->hosts[g->nhosts++] = cfg->hosts[i];
	/* The configuration checked both labels and options
	 * (cluster/config/group.c): the options are the API's object. */
	json_object_foreach(cfg->labels, key, val)
		g->labels[g->nlabels++] = (struct vmact_gapi_label){ key, json_string_value(val) };
	for (size_t i = 0; i < cfg->n_taints; i++)
		g->taints[g->ntaints++] = (struct vmact_gapi_taint){ cfg->taints[i].key,
								     cfg->taints[i].value,
								     cfg->taints[i].effect };
	if (vmact_gapi_options_decode(cfg->options, &g->opts, &err) < 0)
		return -EINVAL;
	for (int k = 0; k < VMACT_GAPI_TIERS; k++)
		g->pool[k] = (struct vmact_gapi_pool_tier){ v->tiers[k].size, v->tiers[k].ready,
							    v->tiers[k].starting };
	return 0;
}

static json_t *group_json(const struct cl_engine_group_view *v)
{
	struct vmact_gapi_group g;
	json_t *doc = group_fill(v, &g) < 0 ? NULL : vmact_gapi_group_encode(&g);

	vmact_gapi_group_clear(&g);
	return doc;
}

static json_t *groups_json(const struct cl_engine *e)
{
	size_t n = cl_engine_n_groups(e), filled = 0;
	struct cl_engine_group_view *v = calloc(n + 1, sizeof(*v));
	struct vmact_gapi_group *g = calloc(n + 1, sizeof(*g));
	json_t *doc = NULL;

	if (v && g) {
		for (; filled < n; filled++) {
			cl_engine_group_at(e, filled, &v[filled]);
			if (group_fill(&v[filled], &g[filled]) < 0) {
				filled++;
				break;
			}
		}
		if (filled == n)
			doc = vmact_gapi_groups_encode(g, n);
	}
	for (size_t i = 0; g && i < filled; i++)
		vmact_gapi_group_clear(&g[i]);
	free(g);
	free(v);
	return doc;
}

static enum vmact_gapi_node_state node_state(const struct cl_engine_vm_view *v)
{
	if (v->meta->state == CL_ST_DELETING || v->want_delete)
		return VMACT_GAPI_NODE_DELETING;
	return v->meta->state == CL_ST_CLAIMED ? VMACT_GAPI_NODE_RUNNING : VMACT_GAPI_NODE_CREATING;
}

static struct vmact_gapi_vm_error error_of(const struct cl_meta *m)
{
	return (struct vmact_gapi_vm_error){
		.cls = m->err_class, .code = m->err_code, .message = m->err_msg, .at = m->err_at
	};
}

/* The VMs of a listing, members (nodes) or all; their strings point into
 * the engine's records, which stay as they are until the handler
 * returns. */
struct collect {
	bool members, standby, all;
	size_t n, cap;
	struct vmact_gapi_node *nodes;
	struct vmact_gapi_vm *vms;
	char (*pids)[160];
	bool oom;
};

static void collect_vm(void *ud, const struct cl_engine_vm_view *v)
{
	struct collect *c = ud;
	const struct cl_meta *m = v->meta;
	bool member = m->role == CL_ROLE_MEMBER;

	if (!c->all && (member ? !c->members : !c->standby))
		return;
	/* Given back to the pool: no member any more. */
	if (c->members && !c->all && v->want_return)
		return;
	if (c->oom)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		void *p = realloc(c->pids, cap * sizeof(*c->pids));

		if (p)
			c->pids = p;
		p = p ? realloc(c->nodes, cap * sizeof(*c->nodes)) : NULL;
		if (p)
			c->nodes = p;
		p = p ? realloc(c->vms, cap * sizeof(*c->vms)) : NULL;
		if (p)
			c->vms = p;
		if (!p) {
			c->oom = true;
			return;
		}
		c->cap = cap;
	}
	/* The view's provider id is its own copy, gone with the call; the
	 * documents point to these once the walk is over (collect_done), as
	 * the array may still move. */
	snprintf(c->pids[c->n], sizeof(c->pids[c->n]), "%s", v->provider_id);
	if (c->members && !c->all) {
		c->nodes[c->n] = (struct vmact_gapi_node){
			.name = v->name,
			.host = v->host,
			.state = node_state(v),
			.vm_state = cl_domxml_state_name(m->state),
			.tier = cl_domxml_tier_name(m->tier),
			/* A member in service has one only while it is
			 * unhealthy (its claim cleared the last attempt's). */
			.has_error = m->has_error && m->state != CL_ST_DELETING,
			.error = error_of(m),
		};
	} else {
		c->vms[c->n] = (struct vmact_gapi_vm){
			.name = v->name,
			.host = v->host,
			.group = v->group ? v->group : m->group,
			.role = cl_domxml_role_name(m->role),
			.tier = cl_domxml_tier_name(m->tier),
			.state = cl_domxml_state_name(m->state),
			.leased = v->leased,
			.busy = v->busy || v->placing,
			.attempts = (int32_t)m->attempts,
			.created = m->created,
			.booted = m->booted,
			.requested = m->requested,
			.in_service = m->in_service,
			.has_error = m->has_error,
			.error = error_of(m),
			.configured = v->group != NULL,
		};
	}
	c->n++;
}

static void collect_done(struct collect *c)
{
	for (size_t i = 0; !c->oom && i < c->n; i++) {
		if (c->members && !c->all)
			c->nodes[i].provider_id = c->pids[i];
		else
			c->vms[i].provider_id = c->pids[i];
	}
}

static void collect_free(struct collect *c)
{
	free(c->pids);
	free(c->nodes);
	free(c->vms);
}

/* The waiting VMs, copied: the framework's lock is held only during the
 * walk. */
struct waiting_list {
	size_t n, cap;
	struct cl_fw_waiting *w;
	bool oom;
};

static void waiting_copy(void *ud, const struct cl_fw_waiting *w)
{
	struct waiting_list *l = ud;

	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		void *p = realloc(l->w, cap * sizeof(*l->w));

		if (!p) {
			l->oom = true;
			return;
		}
		l->w = p;
		l->cap = cap;
	}
	l->w[l->n++] = *w;
}

static json_t *waiting_json(const struct waiting_list *l)
{
	struct vmact_gapi_waiting *v = calloc(l->n + 1, sizeof(*v));
	const char **pending = calloc(l->n * CL_FW_MAX_PLUGINS + 1, sizeof(*pending));
	uint64_t now = vmact_now_usec();
	json_t *doc = NULL;

	if (!v || !pending)
		goto out;
	for (size_t i = 0; i < l->n; i++) {
		const struct cl_fw_waiting *w = &l->w[i];

		v[i] = (struct vmact_gapi_waiting){
			.uid = w->uid,
			.name = w->name,
			.group = w->group,
			.host = w->host,
			.pending = pending + i * CL_FW_MAX_PLUGINS,
			.waited_s = (now - w->since_usec) / 1e6,
			.timeout_s = w->deadline_usec > now ? (w->deadline_usec - now) / 1e6 : 0.0,
		};
		for (size_t k = 0; k < w->n_pending; k++)
			v[i].pending[v[i].npending++] = w->pending[k];
	}
	doc = vmact_gapi_waitings_encode(v, l->n);
out:
	free(v);
	free(pending);
	return doc;
}

static struct vmact_gapi_host host_of(const struct cl_engine_host_view *v)
{
	const struct cl_host_status *st = &v->st;

	return (struct vmact_gapi_host){
		.name = v->name,
		.uri = v->uri,
		.reachable = st->libvirt_ok && st->arbiter_ok,
		.scanned = v->scanned,
		.libvirt_ok = st->libvirt_ok,
		.libvirt_error = st->libvirt_err,
		.arbiter_ok = st->arbiter_ok,
		.arbiter_error = st->arbiter_err,
		.vms = (int32_t)v->vms,
		.leases = (int32_t)v->leases,
		.has_ledger = st->have_ledger,
		.capacity = res_of(st->ledger.total),
		.watermark = res_of(st->ledger.watermark),
		.reserved = res_of(st->ledger.reserved),
		.pressure = res_of(st->ledger.pressure),
		.arbiter_pods = (int64_t)st->ledger.pods,
		.arbiter_leases = (int64_t)st->ledger.leases,
		.standby = res_of(v->standby),
		.draining = v->draining,
		.relief = v->relief,
		.unmovable = v->unmovable,
	};
}

/* The views hold the strings the documents point to. */
static json_t *hosts_json(struct cl_engine *e)
{
	size_t n = cl_engine_n_hosts(e);
	struct cl_engine_host_view *v = calloc(n + 1, sizeof(*v));
	struct vmact_gapi_host *h = calloc(n + 1, sizeof(*h));
	json_t *doc = NULL;

	if (v && h) {
		for (size_t i = 0; i < n; i++) {
			cl_engine_host_at(e, i, &v[i]);
			h[i] = host_of(&v[i]);
		}
		doc = vmact_gapi_hosts_encode(h, n);
	}
	free(h);
	free(v);
	return doc;
}

/* ---- deferred answers ---- */

static struct vmact_gapi_migration migration_of(const struct cl_engine_move_view *m)
{
	return (struct vmact_gapi_migration){
		.id = m->id,
		.vm = m->vm,
		.uuid = m->uuid,
		.from = m->from,
		.to = m->to,
		.reason = m->reason,
		.why = m->why,
		.phase = m->phase,
		.result = m->result,
		.error = m->error,
		.started = m->started,
		.duration_s = m->duration_s,
		.downtime_ms = m->downtime_ms,
	};
}

static void answer_reply(struct net_http_server_reply *reply, const struct cl_engine_answer *a)
{
	if (a->status >= 200 && a->status < 300 && a->move) {
		struct vmact_gapi_migration g = migration_of(a->move);

		reply_json(reply, a->status, vmact_gapi_migration_encode(&g));
	} else if (a->status >= 200 && a->status < 300)
		reply_json(reply, a->status, vmact_gapi_target_encode((int32_t)a->target));
	else
		reply_error(reply, a->status, a->reason ? a->reason : VMACT_GAPI_INTERNAL, "%s",
			    a->error);
}

static void on_answer(void *ud, struct cl_engine_answer *a)
{
	struct net_http_pending *p = ud;
	struct net_http_server_reply reply = { 0 };

	/* Its request could not wait (answered 500 at once). */
	if (!p)
		return;
	answer_reply(&reply, a);
	net_http_pending_reply(p, &reply);
	free(reply.body);
}

/* Runs an engine operation whose answer may come later. */
struct now_or_later {
	struct net_http_server_reply *reply; /* set while the call runs */
	struct net_http_pending *pending;
};

static void answer_now_or_later(void *ud, struct cl_engine_answer *a)
{
	struct now_or_later *nl = ud;

	if (nl->reply) {
		answer_reply(nl->reply, a);
		nl->reply = NULL;
		return;
	}
	on_answer(nl->pending, a);
	free(nl);
}

/* ---- changes ---- */

static json_t *body_object(const struct net_http_server_request *req,
			   struct net_http_server_reply *reply)
{
	json_error_t je;
	json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);

	if (!json_is_object(j)) {
		json_decref(j);
		reply_error(reply, 400, VMACT_GAPI_INVALID, "body: a JSON object is required%s%s",
			    j ? "" : ": ", j ? "" : je.text);
		return NULL;
	}
	return j;
}

static void change(struct cl_api *a, const char *group, enum vmact_gapi_group_res what,
		   const struct net_http_server_request *req, struct net_http_server_reply *reply)
{
	struct now_or_later *nl = calloc(1, sizeof(*nl));
	struct vmact_err err = { 0 };
	json_t *j;
	long long delta = 0;
	const char **ids = NULL;
	size_t n = 0;
	int r;

	if (!nl)
		return reply_error(reply, 500, VMACT_GAPI_INTERNAL, "out of memory");
	j = body_object(req, reply);
	if (!j) {
		free(nl);
		return;
	}
	if (what == VMACT_GAPI_DELETE_NODES)
		r = vmact_gapi_delete_nodes_decode(j, &ids, &n, &err);
	else
		r = vmact_gapi_delta_decode(j, &delta, &err);
	if (r < 0) {
		reply_error(reply, r == -ENOMEM ? 500 : 400,
			    r == -ENOMEM ? VMACT_GAPI_INTERNAL : VMACT_GAPI_INVALID, "%s", err.msg);
		goto out;
	}
	nl->reply = reply;
	if (what == VMACT_GAPI_INCREASE)
		cl_engine_increase(a->e, group, delta, answer_now_or_later, nl);
	else if (what == VMACT_GAPI_DECREASE_TARGET)
		cl_engine_decrease(a->e, group, delta, answer_now_or_later, nl);
	else
		cl_engine_delete_nodes(a->e, group, ids, n, answer_now_or_later, nl);
	if (!nl->reply) {
		/* Answered already. */
		free(nl);
		nl = NULL;
		goto out;
	}
	nl->reply = NULL;
	nl->pending = net_http_defer(req);
	if (!nl->pending) {
		/* The engine answers later anyway: the client gets a 500 now
		 * and the change goes on. */
		reply_error(reply, 500, VMACT_GAPI_INTERNAL, "cannot defer the answer");
		nl->pending = NULL;
	}
	nl = NULL;
out:
	free(ids);
	free(nl);
	json_decref(j);
}

/* ---- live migration ---- */

static bool method_is(const struct net_http_server_request *req, const char *m,
		      struct net_http_server_reply *reply)
{
	if (strcmp(req->method, m) == 0)
		return true;
	reply_error(reply, 405, VMACT_GAPI_INVALID, "%s %s: use %s", req->method, req->url, m);
	return false;
}

struct moves_list {
	struct vmact_gapi_migration *v;
	size_t n, cap;
	bool oom;
};

static void move_copy(void *ud, const struct cl_engine_move_view *m)
{
	struct moves_list *l = ud;

	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct vmact_gapi_migration *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->oom = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = migration_of(m);
}

static void migrate(struct cl_api *a, const char *vm, const struct net_http_server_request *req,
		    struct net_http_server_reply *reply)
{
	struct now_or_later *nl;
	struct vmact_gapi_migrate m;
	struct vmact_err err = { 0 };
	json_t *j = NULL;

	if (req->body_len && !(j = body_object(req, reply)))
		return;
	if (!j && !(j = json_object()))
		return reply_error(reply, 500, VMACT_GAPI_INTERNAL, "out of memory");
	if (vmact_gapi_migrate_decode(j, &m, &err) < 0) {
		json_decref(j);
		return reply_error(reply, 400, VMACT_GAPI_INVALID, "%s", err.msg);
	}
	nl = calloc(1, sizeof(*nl));
	if (!nl) {
		json_decref(j);
		return reply_error(reply, 500, VMACT_GAPI_INTERNAL, "out of memory");
	}
	nl->reply = reply;
	cl_engine_migrate(a->e, vm, m.to, m.force, answer_now_or_later, nl);
	json_decref(j);
	if (!nl->reply) {
		free(nl);
		return;
	}
	nl->reply = NULL;
	nl->pending = net_http_defer(req);
	if (!nl->pending)
		reply_error(reply, 500, VMACT_GAPI_INTERNAL, "cannot defer the answer");
}

/* /v1/hosts/NAME/drain, /v1/hosts/NAME/undrain: the host's document. */
static void host_route(struct cl_api *a, const char *rest,
		       const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	const char *slash = strchr(rest, '/');
	struct vmact_err err = { 0 };
	char name[CL_NAME_MAX];
	bool drain;
	int r;

	if (!slash || slash == rest || (size_t)(slash - rest) >= sizeof(name) ||
	    (strcmp(slash + 1, VMACT_GAPI_DRAIN) && strcmp(slash + 1, VMACT_GAPI_UNDRAIN)))
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND,
				   "no such resource: %s (drain, undrain)", req->url);
	if (!method_is(req, "POST", reply))
		return;
	snprintf(name, sizeof(name), "%.*s", (int)(slash - rest), rest);
	drain = !strcmp(slash + 1, VMACT_GAPI_DRAIN);
	r = cl_engine_drain(a->e, name, drain, &err);
	if (r == -ENOENT)
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND, "%s", err.msg);
	if (r < 0)
		return reply_error(reply, 500, VMACT_GAPI_INTERNAL, "%s", err.msg);
	for (size_t i = 0; i < cl_engine_n_hosts(a->e); i++) {
		struct cl_engine_host_view v;

		cl_engine_host_at(a->e, i, &v);
		if (!strcmp(v.name, name)) {
			struct vmact_gapi_host h = host_of(&v);

			return reply_json(reply, 200, vmact_gapi_hosts_encode(&h, 1));
		}
	}
}

/* /v1/vms/NAME/migrate */
static void vm_route(struct cl_api *a, const char *rest, const struct net_http_server_request *req,
		     struct net_http_server_reply *reply)
{
	const char *slash = strchr(rest, '/');
	char name[CL_NAME_MAX];

	if (!slash || (size_t)(slash - rest) >= sizeof(name) || slash == rest ||
	    strcmp(slash + 1, VMACT_GAPI_MIGRATE))
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND,
				   "no such resource: %s (see doc/cluster-api.md)", req->url);
	snprintf(name, sizeof(name), "%.*s", (int)(slash - rest), rest);
	if (method_is(req, "POST", reply))
		migrate(a, name, req, reply);
}

/* ---- routing ---- */

static void vms_route(struct cl_api *a, const char *group, bool members,
		      const struct net_http_server_request *req,
		      struct net_http_server_reply *reply)
{
	struct collect c = { .members = members, .standby = group && !members, .all = !group };
	bool ready = cl_engine_ready(a->e);

	if (!method_is(req, "GET", reply))
		return;
	cl_engine_each_vm(a->e, group, collect_vm, &c);
	collect_done(&c);
	if (c.oom)
		reply_error(reply, 500, VMACT_GAPI_INTERNAL, "out of memory");
	else if (members)
		reply_json(reply, 200, vmact_gapi_nodes_encode(c.nodes, c.n));
	else
		reply_json(reply, 200, vmact_gapi_vms_encode(c.vms, c.n, group ? NULL : &ready));
	collect_free(&c);
}

static void groups_route(struct cl_api *a, const char *rest,
			 const struct net_http_server_request *req,
			 struct net_http_server_reply *reply)
{
	struct cl_engine_group_view v;
	enum vmact_gapi_group_res what;
	char id[CL_NAME_MAX];
	const char *slash = strchr(rest, '/');
	size_t len = slash ? (size_t)(slash - rest) : strlen(rest);

	if (!len || len >= sizeof(id))
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND, "no node group '%.*s'",
				   (int)len, rest);
	snprintf(id, sizeof(id), "%.*s", (int)len, rest);
	if (cl_engine_group(a->e, id, &v) < 0)
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND, "no node group '%s'", id);
	if (!slash) {
		if (method_is(req, "GET", reply))
			reply_json(reply, 200, group_json(&v));
		return;
	}
	if (vmact_gapi_group_res_parse(slash + 1, &what) < 0)
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND,
				   "no such resource: %s (see doc/cluster-api.md)", req->url);
	/* Members only in nodes: those given back are no longer any. */
	if (what == VMACT_GAPI_NODES || what == VMACT_GAPI_STANDBY)
		return vms_route(a, id, what == VMACT_GAPI_NODES, req, reply);
	if (method_is(req, "POST", reply))
		change(a, id, what, req, reply);
}

static void waiting_route(struct cl_api *a, const char *rest,
			  const struct net_http_server_request *req,
			  struct net_http_server_reply *reply)
{
	const char *slash = strchr(rest, '/'), *arg = NULL;
	enum vmact_gapi_verdict verdict;
	struct vmact_err err = { 0 };
	char uid[64];
	json_t *j = NULL;
	int r;

	if (!slash || (size_t)(slash - rest) >= sizeof(uid))
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND, "no such resource: %s",
				   req->url);
	snprintf(uid, sizeof(uid), "%.*s", (int)(slash - rest), rest);
	if (vmact_gapi_verdict_parse(slash + 1, &verdict) < 0)
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND,
				   "no such resource: %s (allow, reject)", req->url);
	if (!method_is(req, "POST", reply))
		return;
	if (req->body_len && !(j = body_object(req, reply)))
		return;
	if (vmact_gapi_verdict_decode(j, verdict, &arg, &err) < 0) {
		json_decref(j);
		return reply_error(reply, 400, VMACT_GAPI_INVALID, "%s", err.msg);
	}
	if (verdict == VMACT_GAPI_ALLOW)
		r = cl_engine_allow(a->e, uid, arg);
	else
		r = cl_engine_reject(a->e, uid, arg);
	json_decref(j);
	if (r == -ENOENT)
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND, "no VM %s waits", uid);
	if (r == -ESRCH)
		return reply_error(reply, 404, VMACT_GAPI_NOT_FOUND,
				   "VM %s does not wait on that plugin", uid);
	if (r < 0)
		return reply_error(reply, 500, VMACT_GAPI_INTERNAL, "%s", strerror(-r));
	reply_json(reply, 200, vmact_gapi_verdict_done_encode(uid, verdict));
}

static void handle(void *ud, const struct net_http_server_request *req,
		   struct net_http_server_reply *reply)
{
	struct cl_api *a = ud;
	const char *p = req->url;
	const size_t groups_len = strlen(VMACT_GAPI_PATH_GROUPS "/"),
		     waiting_len = strlen(VMACT_GAPI_PATH_WAITING "/"),
		     vms_len = strlen(VMACT_GAPI_PATH_VMS "/"),
		     hosts_len = strlen(VMACT_GAPI_PATH_HOSTS "/");

	/* The socket's mode keeps others out; this holds should it be
	 * loosened. */
	if (req->peer_uid < 0 || ((unsigned long long)req->peer_uid != 0 &&
				  (unsigned long long)req->peer_uid != a->own_uid))
		return reply_error(reply, 403, VMACT_GAPI_PRECONDITION,
				   "permission denied: vmact-groupd's API is for root and uid %llu, "
				   "this peer is uid %lld",
				   a->own_uid, req->peer_uid);
	if (strcmp(p, VMACT_GAPI_PATH_GROUPS) == 0) {
		if (method_is(req, "GET", reply))
			reply_json(reply, 200, groups_json(a->e));
		return;
	}
	if (strncmp(p, VMACT_GAPI_PATH_GROUPS "/", groups_len) == 0)
		return groups_route(a, p + groups_len, req, reply);
	if (strcmp(p, VMACT_GAPI_PATH_NODE_GROUP) == 0) {
		const char *id = net_http_request_arg(req, VMACT_GAPI_ARG_PROVIDER_ID);

		if (!method_is(req, "GET", reply))
			return;
		if (!id)
			return reply_error(reply, 400, VMACT_GAPI_INVALID,
					   VMACT_GAPI_ARG_PROVIDER_ID ": required");
		return reply_json(reply, 200,
				  vmact_gapi_node_group_encode(cl_engine_group_of(a->e, id)));
	}
	if (strcmp(p, VMACT_GAPI_PATH_VMS) == 0)
		return vms_route(a, NULL, false, req, reply);
	if (strncmp(p, VMACT_GAPI_PATH_VMS "/", vms_len) == 0)
		return vm_route(a, p + vms_len, req, reply);
	if (strcmp(p, VMACT_GAPI_PATH_MIGRATIONS) == 0) {
		struct moves_list l = { 0 };

		if (!method_is(req, "GET", reply))
			return;
		cl_engine_each_move(a->e, move_copy, &l);
		reply_json(reply, 200, l.oom ? NULL : vmact_gapi_migrations_encode(l.v, l.n));
		free(l.v);
		return;
	}
	if (strcmp(p, VMACT_GAPI_PATH_HOSTS) == 0) {
		if (method_is(req, "GET", reply))
			reply_json(reply, 200, hosts_json(a->e));
		return;
	}
	if (strncmp(p, VMACT_GAPI_PATH_HOSTS "/", hosts_len) == 0)
		return host_route(a, p + hosts_len, req, reply);
	if (strcmp(p, VMACT_GAPI_PATH_WAITING) == 0) {
		struct waiting_list l = { 0 };

		if (!method_is(req, "GET", reply))
			return;
		cl_engine_each_waiting(a->e, waiting_copy, &l);
		reply_json(reply, 200, l.oom ? NULL : waiting_json(&l));
		free(l.w);
		return;
	}
	if (strncmp(p, VMACT_GAPI_PATH_WAITING "/", waiting_len) == 0)
		return waiting_route(a, p + waiting_len, req, reply);
	reply_error(reply, 404, VMACT_GAPI_NOT_FOUND,
		    "no such resource: %s (see doc/cluster-api.md)", p);
}

/* ---- the socket ---- */

int cl_api_new(sd_event *ev, const char *socket, struct cl_engine *e, struct cl_api **out,
	       struct vmact_err *err)
{
	_cleanup_free_ char *listen = NULL;
	struct cl_api *a;
	int r;

	if ((r = vmact_sockpath_prepare(socket, "api.socket", "vmact-groupd", err)) < 0)
		return r;
	if (asprintf(&listen, "unix:%s", socket) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	a = calloc(1, sizeof(*a));
	if (!a)
		return vmact_err_set(err, ENOMEM, "out of memory");
	a->ev = sd_event_ref(ev);
	a->e = e;
	a->own_uid = getuid();
	snprintf(a->socket, sizeof(a->socket), "%s", socket);
	{
		struct net_http_server_config hc = {
			.listen = listen,
			.max_body = MAX_BODY,
			.conn_limit = 64,
			.per_client_limit = 32,
			.idle_timeout_sec = 60,
			.request_timeout_usec = REQUEST_TIMEOUT_USEC,
			.allow_defer = true,
		};

		r = net_http_server_new(ev, &hc, handle, a, &a->http, err);
	}
	if (r >= 0 && chmod(socket, 0600) < 0)
		r = vmact_err_set(err, errno, "api.socket %s: chmod: %m", socket);
	if (r < 0) {
		cl_api_free(a);
		return vmact_err_prefix(err, "api");
	}
	*out = a;
	return 0;
}

void cl_api_free(struct cl_api *a)
{
	if (!a)
		return;
	net_http_server_free(a->http);
	if (a->socket[0])
		unlink(a->socket);
	sd_event_unref(a->ev);
	free(a);
}
