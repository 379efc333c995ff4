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
		net_http_reply_text(reply, 500, JSON_TYPE,
				    "{\"error\":\"out of memory\",\"reason\":\"internal\"}");
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
	reply_json(reply, status, json_pack("{s:s,s:s}", "error", msg, "reason", reason));
}

/* ---- documents ---- */

static json_t *res_json(struct vmact_resources r)
{
	return json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)r.milli_cpu, "memory_bytes",
			 (json_int_t)r.mem_bytes);
}

static json_t *group_json(const struct cl_engine_group_view *v)
{
	const struct cl_group_cfg *g = v->cfg;
	const struct cl_template *t = &g->tpl;
	json_t *hosts = json_array(), *taints = json_array(), *pool = json_object();

	for (size_t i = 0; i < g->n_hosts; i++)
		json_array_append_new(hosts, json_string(g->hosts[i]));
	for (size_t i = 0; i < g->n_taints; i++)
		json_array_append_new(taints,
				      json_pack("{s:s,s:s,s:s}", "key", g->taints[i].key, "value",
						g->taints[i].value, "effect", g->taints[i].effect));
	for (int k = 0; k < 3; k++)
		json_object_set_new(pool, cl_domxml_tier_name(k),
				    json_pack("{s:i,s:i,s:i}", "size", (int)v->tiers[k].size,
					      "ready", (int)v->tiers[k].ready, "starting",
					      (int)v->tiers[k].starting));
	return json_pack("{s:s,s:i,s:i,s:i,s:i,s:o,s:O,s:o,s:{s:i,s:i,s:I,s:I,s:I,s:i,s:s,s:s},s:O,"
			 "s:o,s:s}",
			 "id", g->id, "min", (int)g->min, "max", (int)g->max, "target",
			 (int)v->target, "in_service", (int)v->in_service, "hosts", hosts, "labels",
			 g->labels, "taints", taints, "template", "vcpus", (int)t->vcpus,
			 "max_vcpus", (int)t->max_vcpus, "memory_bytes", (json_int_t)t->memory,
			 "max_memory_bytes", (json_int_t)t->max_memory, "ephemeral_storage_bytes",
			 (json_int_t)t->ephemeral_storage, "pods", (int)t->pods, "arch", t->arch,
			 "os", t->os, "options", g->options, "pool", pool, "scheduler_name",
			 g->scheduler_name);
}

static const char *node_state(const struct cl_engine_vm_view *v)
{
	if (v->meta->state == CL_ST_DELETING || v->want_delete)
		return "deleting";
	return v->meta->state == CL_ST_CLAIMED ? "running" : "creating";
}

static json_t *error_json(const struct cl_meta *m)
{
	return json_pack("{s:s,s:s,s:s,s:f}", "class", m->err_class, "code", m->err_code, "message",
			 m->err_msg, "at", m->err_at);
}

struct collect {
	json_t *arr;
	bool members, standby, all;
};

static void collect_vm(void *ud, const struct cl_engine_vm_view *v)
{
	struct collect *c = ud;
	const struct cl_meta *m = v->meta;
	bool member = m->role == CL_ROLE_MEMBER;
	json_t *o;

	if (!c->all && (member ? !c->members : !c->standby))
		return;
	/* Given back to the pool: no member any more. */
	if (c->members && !c->all && v->want_return)
		return;
	if (c->members && !c->all) {
		o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "provider_id", v->provider_id, "name",
			      v->name, "host", v->host, "state", node_state(v), "vm_state",
			      cl_domxml_state_name(m->state), "tier", cl_domxml_tier_name(m->tier));
		/* A member in service has one only while it is unhealthy (its
		 * claim cleared the last attempt's). */
		if (o && m->has_error && m->state != CL_ST_DELETING)
			json_object_set_new(o, "error", error_json(m));
	} else {
		o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:b,s:i,s:f,s:f,s:f,s:f}",
			      "provider_id", v->provider_id, "name", v->name, "host", v->host,
			      "group", v->group ? v->group : m->group, "role",
			      cl_domxml_role_name(m->role), "tier", cl_domxml_tier_name(m->tier),
			      "state", cl_domxml_state_name(m->state), "leased", v->leased, "busy",
			      v->busy || v->placing, "attempts", (int)m->attempts, "created",
			      m->created, "booted", m->booted, "requested", m->requested,
			      "in_service", m->in_service);
		if (o && m->has_error)
			json_object_set_new(o, "error", error_json(m));
		if (o && !v->group)
			json_object_set_new(o, "configured", json_false());
	}
	if (o)
		json_array_append_new(c->arr, o);
}

static void waiting_json(void *ud, const struct cl_fw_waiting *w)
{
	json_t *arr = ud, *pending = json_array();
	uint64_t now = vmact_now_usec();

	for (size_t i = 0; i < w->n_pending; i++)
		json_array_append_new(pending, json_string(w->pending[i]));
	json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:o,s:f,s:f}", "uid", w->uid, "name",
					     w->name, "group", w->group, "host", w->host, "pending",
					     pending, "waited_s", (now - w->since_usec) / 1e6,
					     "timeout_s",
					     w->deadline_usec > now ? (w->deadline_usec - now) / 1e6
								    : 0.0));
}

static json_t *host_json(const struct cl_engine_host_view *v)
{
	const struct cl_host_status *st = &v->st;
	json_t *o = json_pack("{s:s,s:s,s:b,s:b,s:{s:b,s:s},s:{s:b,s:s},s:i,s:i}", "name", v->name,
			      "uri", v->uri, "reachable", st->libvirt_ok && st->arbiter_ok,
			      "scanned", v->scanned, "libvirt", "ok", st->libvirt_ok, "error",
			      st->libvirt_err, "arbiter", "ok", st->arbiter_ok, "error",
			      st->arbiter_err, "vms", (int)v->vms, "leases", (int)v->leases);

	if (o && st->have_ledger) {
		json_object_set_new(o, "capacity", res_json(st->ledger.total));
		json_object_set_new(o, "watermark", res_json(st->ledger.watermark));
		json_object_set_new(o, "reserved", res_json(st->ledger.reserved));
		json_object_set_new(o, "pressure", res_json(st->ledger.pressure));
		json_object_set_new(o, "arbiter_pods", json_integer(st->ledger.pods));
		json_object_set_new(o, "arbiter_leases", json_integer(st->ledger.leases));
	}
	if (o)
		json_object_set_new(o, "standby", res_json(v->standby));
	return o;
}

/* ---- deferred answers ---- */

static void on_answer(void *ud, struct cl_engine_answer *a)
{
	struct net_http_pending *p = ud;
	struct net_http_server_reply reply = { 0 };

	/* Its request could not wait (answered 500 at once). */
	if (!p) {
		json_decref(a->body);
		return;
	}
	if (a->status >= 200 && a->status < 300)
		reply_json(&reply, a->status, a->body ? a->body : json_object());
	else
		reply_error(&reply, a->status, a->reason ? a->reason : "internal", "%s", a->error);
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
		if (a->status >= 200 && a->status < 300)
			reply_json(nl->reply, a->status, a->body ? a->body : json_object());
		else
			reply_error(nl->reply, a->status, a->reason ? a->reason : "internal", "%s",
				    a->error);
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
		reply_error(reply, 400, "invalid", "body: a JSON object is required%s%s",
			    j ? "" : ": ", j ? "" : je.text);
		return NULL;
	}
	return j;
}

static bool get_delta(json_t *j, long long *delta, struct net_http_server_reply *reply)
{
	json_t *v = json_object_get(j, "delta");

	if (!json_is_integer(v)) {
		reply_error(reply, 400, "invalid", "delta: an integer is required");
		return false;
	}
	*delta = json_integer_value(v);
	return true;
}

static void change(struct cl_api *a, const char *group, const char *what,
		   const struct net_http_server_request *req, struct net_http_server_reply *reply)
{
	struct now_or_later *nl = calloc(1, sizeof(*nl));
	json_t *j;
	long long delta = 0;
	const char **ids = NULL;
	size_t n = 0;

	if (!nl)
		return reply_error(reply, 500, "internal", "out of memory");
	j = body_object(req, reply);
	if (!j) {
		free(nl);
		return;
	}
	if (strcmp(what, "delete-nodes") == 0) {
		json_t *arr = json_object_get(j, "provider_ids"), *it;
		size_t i;

		if (!json_is_array(arr) || !json_array_size(arr) || json_array_size(arr) > 1000) {
			reply_error(reply, 400, "invalid", "provider_ids: a list of 1 to 1000 ids");
			goto out;
		}
		ids = calloc(json_array_size(arr), sizeof(*ids));
		if (!ids) {
			reply_error(reply, 500, "internal", "out of memory");
			goto out;
		}
		json_array_foreach(arr, i, it) {
			if (!json_is_string(it)) {
				reply_error(reply, 400, "invalid", "provider_ids[%zu]: a string",
					    i);
				goto out;
			}
			ids[n++] = json_string_value(it);
		}
	} else if (!get_delta(j, &delta, reply)) {
		goto out;
	}
	nl->reply = reply;
	if (strcmp(what, "increase") == 0)
		cl_engine_increase(a->e, group, delta, answer_now_or_later, nl);
	else if (strcmp(what, "decrease-target") == 0)
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
		reply_error(reply, 500, "internal", "cannot defer the answer");
		nl->pending = NULL;
	}
	nl = NULL;
out:
	free(ids);
	free(nl);
	json_decref(j);
}

/* ---- routing ---- */

static bool method_is(const struct net_http_server_request *req, const char *m,
		      struct net_http_server_reply *reply)
{
	if (strcmp(req->method, m) == 0)
		return true;
	reply_error(reply, 405, "invalid", "%s %s: use %s", req->method, req->url, m);
	return false;
}

static void groups_route(struct cl_api *a, const char *rest,
			 const struct net_http_server_request *req,
			 struct net_http_server_reply *reply)
{
	struct cl_engine_group_view v;
	char id[CL_NAME_MAX];
	const char *slash = strchr(rest, '/');
	size_t len = slash ? (size_t)(slash - rest) : strlen(rest);

	if (!len || len >= sizeof(id))
		return reply_error(reply, 404, "not-found", "no node group '%.*s'", (int)len, rest);
	snprintf(id, sizeof(id), "%.*s", (int)len, rest);
	if (cl_engine_group(a->e, id, &v) < 0)
		return reply_error(reply, 404, "not-found", "no node group '%s'", id);
	if (!slash) {
		if (method_is(req, "GET", reply))
			reply_json(reply, 200, group_json(&v));
		return;
	}
	rest = slash + 1;
	if (strcmp(rest, "nodes") == 0 || strcmp(rest, "standby") == 0) {
		struct collect c = { .arr = json_array() };

		if (!method_is(req, "GET", reply)) {
			json_decref(c.arr);
			return;
		}
		c.members = rest[0] == 'n';
		c.standby = !c.members;
		if (c.members) {
			/* Members only: those given back are no longer any. */
			json_t *all = c.arr;

			cl_engine_each_vm(a->e, id, collect_vm, &c);
			return reply_json(reply, 200, json_pack("{s:o}", "nodes", all));
		}
		cl_engine_each_vm(a->e, id, collect_vm, &c);
		return reply_json(reply, 200, json_pack("{s:o}", "vms", c.arr));
	}
	if (strcmp(rest, "increase") == 0 || strcmp(rest, "delete-nodes") == 0 ||
	    strcmp(rest, "decrease-target") == 0) {
		if (method_is(req, "POST", reply))
			change(a, id, rest, req, reply);
		return;
	}
	reply_error(reply, 404, "not-found", "no such resource: %s (see doc/cluster-api.md)",
		    req->url);
}

static void waiting_route(struct cl_api *a, const char *rest,
			  const struct net_http_server_request *req,
			  struct net_http_server_reply *reply)
{
	const char *slash = strchr(rest, '/');
	char uid[64];
	json_t *j = NULL;
	int r;

	if (!slash || (size_t)(slash - rest) >= sizeof(uid))
		return reply_error(reply, 404, "not-found", "no such resource: %s", req->url);
	snprintf(uid, sizeof(uid), "%.*s", (int)(slash - rest), rest);
	if (strcmp(slash + 1, "allow") && strcmp(slash + 1, "reject"))
		return reply_error(reply, 404, "not-found", "no such resource: %s (allow, reject)",
				   req->url);
	if (!method_is(req, "POST", reply))
		return;
	if (req->body_len && !(j = body_object(req, reply)))
		return;
	if (slash[1] == 'a')
		r = cl_engine_allow(a->e, uid, json_string_value(json_object_get(j, "plugin")));
	else
		r = cl_engine_reject(a->e, uid, json_string_value(json_object_get(j, "message")));
	json_decref(j);
	if (r == -ENOENT)
		return reply_error(reply, 404, "not-found", "no VM %s waits", uid);
	if (r == -ESRCH)
		return reply_error(reply, 404, "not-found", "VM %s does not wait on that plugin",
				   uid);
	if (r < 0)
		return reply_error(reply, 500, "internal", "%s", strerror(-r));
	reply_json(reply, 200,
		   json_pack("{s:s,s:s}", "uid", uid, "done",
			     slash[1] == 'a' ? "allow" : "reject"));
}

static void handle(void *ud, const struct net_http_server_request *req,
		   struct net_http_server_reply *reply)
{
	struct cl_api *a = ud;
	const char *p = req->url;

	/* The socket's mode keeps others out; this holds should it be
	 * loosened. */
	if (req->peer_uid < 0 || ((unsigned long long)req->peer_uid != 0 &&
				  (unsigned long long)req->peer_uid != a->own_uid))
		return reply_error(reply, 403, "precondition",
				   "permission denied: vmact-groupd's API is for root and uid %llu, "
				   "this peer is uid %lld",
				   a->own_uid, req->peer_uid);
	if (strcmp(p, "/v1/groups") == 0) {
		json_t *arr;

		if (!method_is(req, "GET", reply))
			return;
		arr = json_array();
		for (size_t i = 0; i < cl_engine_n_groups(a->e); i++) {
			struct cl_engine_group_view v;

			cl_engine_group_at(a->e, i, &v);
			json_array_append_new(arr, group_json(&v));
		}
		return reply_json(reply, 200, json_pack("{s:o}", "groups", arr));
	}
	if (strncmp(p, "/v1/groups/", 11) == 0)
		return groups_route(a, p + 11, req, reply);
	if (strcmp(p, "/v1/node-group") == 0) {
		const char *id = net_http_request_arg(req, "provider_id");

		if (!method_is(req, "GET", reply))
			return;
		if (!id)
			return reply_error(reply, 400, "invalid", "provider_id: required");
		return reply_json(reply, 200,
				  json_pack("{s:s}", "id", cl_engine_group_of(a->e, id)));
	}
	if (strcmp(p, "/v1/vms") == 0) {
		struct collect c = { .arr = json_array(), .all = true };

		if (!method_is(req, "GET", reply)) {
			json_decref(c.arr);
			return;
		}
		cl_engine_each_vm(a->e, NULL, collect_vm, &c);
		return reply_json(reply, 200,
				  json_pack("{s:o,s:b}", "vms", c.arr, "ready",
					    cl_engine_ready(a->e)));
	}
	if (strcmp(p, "/v1/hosts") == 0) {
		json_t *arr;

		if (!method_is(req, "GET", reply))
			return;
		arr = json_array();
		for (size_t i = 0; i < cl_engine_n_hosts(a->e); i++) {
			struct cl_engine_host_view v;

			cl_engine_host_at(a->e, i, &v);
			json_array_append_new(arr, host_json(&v));
		}
		return reply_json(reply, 200, json_pack("{s:o}", "hosts", arr));
	}
	if (strcmp(p, "/v1/waiting") == 0) {
		json_t *arr;

		if (!method_is(req, "GET", reply))
			return;
		arr = json_array();
		cl_engine_each_waiting(a->e, waiting_json, arr);
		return reply_json(reply, 200, json_pack("{s:o}", "waiting", arr));
	}
	if (strncmp(p, "/v1/waiting/", 12) == 0)
		return waiting_route(a, p + 12, req, reply);
	reply_error(reply, 404, "not-found", "no such resource: %s (see doc/cluster-api.md)", p);
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
