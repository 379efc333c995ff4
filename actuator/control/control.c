/* SPDX-License-Identifier: Apache-2.0 */
/* The control API's server and routes (doc/control-api.md). Each request
 * is answered from what the daemon holds now, except GET /v1/events with
 * wait=, which is deferred until an event arrives or the wait ends: the
 * only state the daemon keeps for a reader is its pending request. */
#include "actuator/control/control.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/endpoint.h"
#include "base/list.h"
#include "base/macro.h"
#include "base/time.h"
#include "net/http-server.h"
#include "shared/sockpath.h"

#define JSON_TYPE "application/json"

struct waiter {
	VMACT_LIST_FIELDS(struct waiter, waiters);
	struct act_control *c;
	struct net_http_pending *pending;
	sd_event_source *timer;
	uint64_t since;
	char vm[ACT_EVENT_VM_MAX]; /* "" = every VM */
};

struct act_control {
	sd_event *event;
	struct net_http_server *http;
	struct act_events *events;
	struct act_control_backend be;
	unsigned long long allowed_uid;
	char *read_group; /* NULL: root only */
	struct waiter *waiters;
	sd_event_source *flush; /* answers the waiters after new events */
	uint64_t start_usec;    /* CLOCK_REALTIME when the API started */
};

static void reply_json(struct net_http_server_reply *reply, unsigned status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (!text) {
		net_http_reply_text(reply, 500, JSON_TYPE, "{\"error\":\"out of memory\"}");
		return;
	}
	free(reply->body);
	reply->status = status;
	reply->content_type = JSON_TYPE;
	reply->body = text;
	reply->body_len = strlen(text);
}

static void reply_error(struct net_http_server_reply *reply, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply_error(struct net_http_server_reply *reply, unsigned status, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_json(reply, status, act_json_error(msg));
}

/* ---- events ---- */

static bool matches(const struct act_event *ev, const char *vm)
{
	return !vm[0] || strcmp(ev->vm, vm) == 0;
}

static bool have_events(struct act_control *c, uint64_t since, const char *vm)
{
	for (const struct act_event *ev = act_events_after(c->events, since); ev;
	     ev = act_events_after(c->events, ev->seq))
		if (matches(ev, vm))
			return true;
	return false;
}

/* {"events": [...], "last_seq": N}: last_seq is where the next poll
 * starts, also when this one was cut at ACT_CONTROL_MAX_EVENTS. */
static void events_reply(struct act_control *c, uint64_t since, const char *vm,
			 struct net_http_server_reply *reply)
{
	json_t *arr = json_array();
	uint64_t last = act_events_last_seq(c->events);
	unsigned n = 0;

	for (const struct act_event *ev = act_events_after(c->events, since); ev;
	     ev = act_events_after(c->events, ev->seq)) {
		if (n == ACT_CONTROL_MAX_EVENTS) {
			last = ev->seq - 1;
			break;
		}
		if (!matches(ev, vm))
			continue;
		json_array_append_new(arr, act_json_event(ev));
		n++;
	}
	/* daemon_start tells a reader that numbering began again (a new
	 * vmactd): its `since` then means nothing. */
	reply_json(reply, 200,
		   json_pack("{s:o,s:I,s:f}", "events", arr, "last_seq", (json_int_t)last,
			     "daemon_start", c->start_usec / 1e6));
}

static void waiter_answer(struct waiter *w)
{
	struct net_http_server_reply reply = { 0 };
	struct act_control *c = w->c;

	events_reply(c, w->since, w->vm, &reply);
	VMACT_LIST_REMOVE(waiters, c->waiters, w);
	net_http_pending_reply(w->pending, &reply);
	free(reply.body);
	sd_event_source_disable_unref(w->timer);
	free(w);
}

static int on_wait_end(sd_event_source *s, uint64_t usec, void *ud)
{
	waiter_answer(ud);
	return 0;
}

static int on_flush(sd_event_source *s, void *ud)
{
	struct act_control *c = ud;
	struct waiter *w, *next;

	VMACT_LIST_FOREACH_SAFE(waiters, w, next, c->waiters)
		if (have_events(c, w->since, w->vm))
			waiter_answer(w);
	return 0;
}

/* Called from wherever an event is emitted: only schedules the flush. */
static void on_new_event(void *ud)
{
	struct act_control *c = ud;

	if (c->waiters)
		sd_event_source_set_enabled(c->flush, SD_EVENT_ONESHOT);
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end || *out > max)
		return -EINVAL;
	return 0;
}

static void get_events(struct act_control *c, const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	const char *since_s = net_http_request_arg(req, "since");
	const char *wait_s = net_http_request_arg(req, "wait");
	const char *vm = net_http_request_arg(req, "vm");
	unsigned long long since = 0, wait = 0;
	struct waiter *w;

	if (since_s && parse_uint(since_s, UINT64_MAX, &since) < 0)
		return reply_error(reply, 400, "since: '%s' is not a sequence number", since_s);
	if (wait_s && parse_uint(wait_s, ACT_CONTROL_MAX_WAIT_S, &wait) < 0)
		return reply_error(reply, 400, "wait: '%s' is not a number of seconds from 0 to %d",
				   wait_s, ACT_CONTROL_MAX_WAIT_S);
	if (vm && strlen(vm) >= ACT_EVENT_VM_MAX)
		return reply_error(reply, 400, "vm: name too long");
	if (!vm)
		vm = "";
	if (!wait || have_events(c, since, vm))
		return events_reply(c, since, vm, reply);
	w = calloc(1, sizeof(*w));
	if (!w)
		return reply_error(reply, 500, "out of memory");
	w->c = c;
	w->since = since;
	snprintf(w->vm, sizeof(w->vm), "%s", vm);
	if (sd_event_add_time_relative(c->event, &w->timer, CLOCK_MONOTONIC, wait * 1000000u, 0,
				       on_wait_end, w) < 0 ||
	    !(w->pending = net_http_defer(req))) {
		sd_event_source_disable_unref(w->timer);
		free(w);
		return events_reply(c, since, vm, reply);
	}
	VMACT_LIST_PREPEND(waiters, c->waiters, w);
}

/* ---- VMs ---- */

static void get_vms(struct act_control *c, const struct net_http_server_request *req,
		    struct net_http_server_reply *reply)
{
	_cleanup_free_ struct act_vm_view *v = NULL;
	const char *all_s = net_http_request_arg(req, "all");
	bool all = false;
	json_t *arr, *doc;
	size_t n = 0;

	if (all_s && strcmp(all_s, "true") && strcmp(all_s, "1") && strcmp(all_s, "false") &&
	    strcmp(all_s, "0"))
		return reply_error(reply, 400, "all: '%s' is not true or false", all_s);
	all = all_s && (!strcmp(all_s, "true") || !strcmp(all_s, "1"));
	if (c->be.views(c->be.ud, all, &v, &n) < 0)
		return reply_error(reply, 500, "out of memory");
	arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, act_json_vm(&v[i], false));
	doc = json_pack("{s:o}", "vms", arr);
	if (c->be.hook) {
		struct act_hook_status h = { 0 };

		c->be.hook(c->be.ud, &h);
		json_object_set_new(doc, "hook", act_json_hook(&h));
	}
	if (c->be.detection) {
		struct act_detection d = { 0 };

		c->be.detection(c->be.ud, &d);
		json_object_set_new(doc, "detection", act_json_detection(&d));
	}
	reply_json(reply, 200, doc);
}

/* The VM's last decisions, oldest first. */
static json_t *decisions(struct act_control *c, const char *vm)
{
	const struct act_event *last[ACT_CONTROL_DECISIONS];
	unsigned n = 0;
	json_t *arr = json_array();

	for (const struct act_event *ev = act_events_after(c->events, 0); ev;
	     ev = act_events_after(c->events, ev->seq)) {
		if (ev->kind != ACT_EV_DECISION || strcmp(ev->vm, vm) != 0)
			continue;
		if (n == ACT_CONTROL_DECISIONS)
			memmove(last, last + 1, sizeof(last[0]) * --n);
		last[n++] = ev;
	}
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(arr, act_json_event(last[i]));
	return arr;
}

static void get_vm(struct act_control *c, const char *name, struct net_http_server_reply *reply)
{
	_cleanup_free_ struct act_vm_view *v = malloc(sizeof(*v));
	json_t *o;

	if (!v)
		return reply_error(reply, 500, "out of memory");
	if (c->be.view(c->be.ud, name, v) < 0)
		return reply_error(reply, 404, "no VM named '%s' is known to vmactd", name);
	o = act_json_vm(v, true);
	/* Events carry the name: a VM asked for by UUID is found by it. */
	if (o && v->state != ACT_VM_UNMANAGED && v->state != ACT_VM_IGNORED)
		json_object_set_new(o, "decisions", decisions(c, v->name));
	reply_json(reply, 200, o);
}

static void post_vm(struct act_control *c, const char *name, const char *what,
		    const struct net_http_server_request *req, struct net_http_server_reply *reply)
{
	struct hp_meta_change ch = { 0 };
	struct vmact_err err = { 0 };
	unsigned status;
	int r;

	if (strcmp(what, "bounds") == 0) {
		if (act_control_bounds_decode(req->body, req->body_len, &ch, &err) < 0)
			return reply_error(reply, 400, "%s", err.msg);
	} else if (strcmp(what, "pause") == 0 || strcmp(what, "resume") == 0) {
		if (req->body_len && strspn(req->body, " \t\r\n{}") != req->body_len)
			return reply_error(reply, 400, "%s takes no body", what);
		ch.set_paused = true;
		ch.paused = what[0] == 'p';
	} else {
		return reply_error(reply, 404, "unknown action '%s' (bounds, pause, resume)", what);
	}
	r = c->be.change(c->be.ud, name, &ch, &err);
	if (r < 0) {
		status = r == -ENOENT && strstr(err.msg, "no VM")       ? 404
			 : r == -EINVAL || r == -ERANGE || r == -ENOENT ? 400
									: 500;
		return reply_error(reply, status, "%s", err.msg);
	}
	if (ch.set_mode || ch.set_migration)
		act_event(c->events, name, ACT_EV_CONTROL, NULL, "%s%s%s%s set by the operator%s",
			  ch.set_mode ? "mode " : "",
			  ch.set_mode ? (ch.recommend ? "recommend" : "active") : "",
			  ch.set_mode && ch.set_migration ? ", " : "",
			  ch.set_migration ? (ch.migration ? "migration on" : "migration off") : "",
			  ch.set_min_cpu || ch.set_max_cpu || ch.set_min_mem || ch.set_max_mem
				  ? " (and bounds)"
				  : "");
	else
		act_event(c->events, name, ACT_EV_CONTROL, NULL, "%s by the operator",
			  ch.set_paused ? (ch.paused ? "paused" : "resumed") : "bounds set");
	reply_json(reply, 200, json_pack("{s:s,s:s}", "name", name, "done", what));
}

/* ---- domains: vmactl check, enable, disable ---- */

static unsigned enroll_status(int r)
{
	return r == -ENODEV                                   ? 404
	       : r == -EINVAL || r == -ERANGE || r == -ENOENT ? 400
	       : r == -ENOTCONN                               ? 503
							      : 500;
}

static void post_domain(struct act_control *c, const char *dom, const char *what,
			const struct net_http_server_request *req,
			struct net_http_server_reply *reply)
{
	_cleanup_free_ struct act_domain_check *chk = calloc(1, sizeof(*chk));
	struct hp_meta_change bounds = { 0 };
	struct vmact_err err = { 0 };
	bool has_body = req->body_len && strspn(req->body, " \t\r\n{}") != req->body_len;
	char name[HP_NAME_MAX];
	json_t *o;
	int r;

	if (!chk)
		return reply_error(reply, 500, "out of memory");
	if (!c->be.check || !c->be.enable || !c->be.disable)
		return reply_error(reply, 501, "not available");
	if (strcmp(what, "disable") == 0) {
		if (has_body)
			return reply_error(reply, 400, "disable takes no body");
		r = c->be.disable(c->be.ud, dom, name, &err);
		if (r < 0)
			return reply_error(reply, enroll_status(r), "%s", err.msg);
		act_event(c->events, name, ACT_EV_CONTROL, NULL, "disabled by the operator");
		return reply_json(reply, 200, json_pack("{s:s,s:s}", "name", name, "done", what));
	}
	if (strcmp(what, "check") != 0 && strcmp(what, "enable") != 0)
		return reply_error(reply, 404, "unknown action '%s' (check, enable, disable)",
				   what);
	if (has_body && act_control_bounds_decode(req->body, req->body_len, &bounds, &err) < 0)
		return reply_error(reply, 400, "%s", err.msg);
	r = what[0] == 'c' ? c->be.check(c->be.ud, dom, has_body ? &bounds : NULL, chk, &err)
			   : c->be.enable(c->be.ud, dom, has_body ? &bounds : NULL, chk, &err);
	if (r < 0 && !chk->name[0])
		return reply_error(reply, enroll_status(r), "%s", err.msg);
	o = act_json_domain_check(chk);
	if (r < 0) {
		/* A refused enable: the reason, and the check that says why. */
		json_object_set_new(o, "error", json_string(err.msg));
		return reply_json(reply, enroll_status(r), o);
	}
	if (what[0] == 'e') {
		json_object_set_new(o, "done", json_string("enable"));
		act_event(c->events, chk->name, ACT_EV_CONTROL, NULL,
			  "enabled by the operator (bounds %s%s%s)", chk->bounds_from,
			  bounds.set_mode && bounds.recommend ? ", mode recommend" : "",
			  chk->migration ? ", migration on" : "");
	}
	reply_json(reply, 200, o);
}

/* ---- routing ---- */

/* What a member of control.read_group may do: read, and ask for a
 * domain's check (a POST that changes nothing). */
static bool read_only(const struct net_http_server_request *req)
{
	const char *p = req->url, *slash;

	if (strcmp(req->method, "GET") == 0)
		return true;
	if (strcmp(req->method, "POST") != 0 || strncmp(p, "/v1/domains/", 12) != 0)
		return false;
	slash = strchr(p + 12, '/');
	return slash && strcmp(slash, "/check") == 0;
}

static void handle(void *ud, const struct net_http_server_request *req,
		   struct net_http_server_reply *reply)
{
	struct act_control *c = ud;
	const char *p = req->url;
	char name[ACT_EVENT_VM_MAX];
	const char *slash;
	bool get = strcmp(req->method, "GET") == 0, post = strcmp(req->method, "POST") == 0;

	/* The socket's mode keeps others out; this holds should it be
	 * loosened (a group, a bind mount). */
	if (req->peer_uid < 0 || (unsigned long long)req->peer_uid != c->allowed_uid) {
		if (!c->read_group || !req->peer_in_group)
			return reply_error(reply, 403,
					   "permission denied: the vmactd control API is for "
					   "uid %llu%s%s%s only, this peer is uid %lld",
					   c->allowed_uid,
					   c->read_group ? " and, read-only, the members of group '"
							 : "",
					   c->read_group ? c->read_group : "",
					   c->read_group ? "' (control.read_group)" : "",
					   req->peer_uid);
		if (!read_only(req))
			return reply_error(reply, 403,
					   "permission denied: read-only access (group '%s', "
					   "control.read_group): %s %s changes what vmactd does, "
					   "which only uid %llu may",
					   c->read_group, req->method, req->url, c->allowed_uid);
	}
	if (strcmp(p, "/v1/events") == 0) {
		if (!get)
			return reply_error(reply, 405, "%s %s: use GET", req->method, p);
		return get_events(c, req, reply);
	}
	if (strcmp(p, "/v1/vms") == 0) {
		if (!get)
			return reply_error(reply, 405, "%s %s: use GET", req->method, p);
		return get_vms(c, req, reply);
	}
	if (strncmp(p, "/v1/domains/", 12) == 0) {
		char dom[HP_NAME_MAX];

		p += 12;
		slash = strchr(p, '/');
		if (!slash || slash == p || (size_t)(slash - p) >= sizeof(dom) ||
		    strchr(slash + 1, '/'))
			return reply_error(reply, 404, "no such resource: %s", req->url);
		if (!post)
			return reply_error(reply, 405, "%s %s: use POST", req->method, req->url);
		snprintf(dom, sizeof(dom), "%.*s", (int)(slash - p), p);
		return post_domain(c, dom, slash + 1, req, reply);
	}
	if (strncmp(p, "/v1/vms/", 8) != 0)
		return reply_error(reply, 404, "no such resource: %s (see doc/control-api.md)", p);
	p += 8;
	slash = strchr(p, '/');
	if ((slash ? (size_t)(slash - p) : strlen(p)) >= sizeof(name) || p == slash || !*p)
		return reply_error(reply, 400, "bad VM name");
	snprintf(name, sizeof(name), "%.*s", (int)(slash ? slash - p : (long)strlen(p)), p);
	if (!slash) {
		if (!get)
			return reply_error(reply, 405, "%s %s: use GET", req->method, req->url);
		return get_vm(c, name, reply);
	}
	if (!post)
		return reply_error(reply, 405, "%s %s: use POST", req->method, req->url);
	if (strchr(slash + 1, '/'))
		return reply_error(reply, 404, "no such resource: %s", req->url);
	post_vm(c, name, slash + 1, req, reply);
}

/* ---- the socket ---- */

int act_control_new(const struct act_control_opts *o, struct act_control **out,
		    struct vmact_err *err)
{
	_cleanup_free_ char *listen = NULL;
	struct act_control *c;
	int r;

	if ((r = vmact_sockpath_prepare(o->socket, "control.socket", "vmactd", err)) < 0)
		return r;
	if (asprintf(&listen, "unix:%s", o->socket) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	c = calloc(1, sizeof(*c));
	if (!c)
		return vmact_err_set(err, ENOMEM, "out of memory");
	c->event = sd_event_ref(o->event);
	c->events = o->events;
	c->be = o->backend;
	c->allowed_uid = o->allowed_uid;
	if (o->read_group && !(c->read_group = strdup(o->read_group))) {
		act_control_free(c);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		c->start_usec = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	}
	r = sd_event_add_defer(o->event, &c->flush, on_flush, c);
	if (r < 0) {
		act_control_free(c);
		return vmact_err_set(err, -r, "control: %s", strerror(-r));
	}
	sd_event_source_set_enabled(c->flush, SD_EVENT_OFF);
	{
		struct net_http_server_config hc = {
			.listen = listen,
			.max_body = 4096,
			.conn_limit = 64,
			.per_client_limit = 32,
			.idle_timeout_sec = ACT_CONTROL_MAX_WAIT_S + 30,
			/* Above the longest wait: a long poll is never cut. */
			.request_timeout_usec = (ACT_CONTROL_MAX_WAIT_S + 15) * 1000000ull,
			.allow_defer = true,
			.has_group = o->read_group != NULL,
			.group_gid = o->read_gid,
		};

		/* Read-only members reach the socket through its group. The
		 * socket is made (and chowned) with that group as the file
		 * system gid: vmactd.service gives vmactd no CAP_CHOWN, and an
		 * owner may give a file to a group it is in. */
		int fsgid = o->read_group ? setfsgid((uid_t)o->read_gid) : -1;

		r = net_http_server_new(o->event, &hc, handle, c, &c->http, err);
		if (r >= 0 && o->read_group && chown(o->socket, (uid_t)-1, (gid_t)o->read_gid) < 0)
			r = vmact_err_set(err, errno, "control.socket %s: chown to group %s: %m",
					  o->socket, o->read_group);
		if (fsgid >= 0)
			setfsgid((uid_t)fsgid);
	}
	if (r >= 0 && chmod(o->socket, o->read_group ? 0660 : 0600) < 0)
		r = vmact_err_set(err, errno, "control.socket %s: chmod: %m", o->socket);
	if (r < 0) {
		act_control_free(c);
		return vmact_err_prefix(err, "control");
	}
	if (c->events)
		act_events_on_new(c->events, on_new_event, c);
	*out = c;
	return 0;
}

void act_control_free(struct act_control *c)
{
	struct waiter *w;

	if (!c)
		return;
	if (c->events)
		act_events_on_new(c->events, NULL, NULL);
	while ((w = c->waiters)) {
		struct net_http_server_reply reply = { 0 };

		reply_error(&reply, 503, "vmactd is shutting down");
		VMACT_LIST_REMOVE(waiters, c->waiters, w);
		net_http_pending_reply(w->pending, &reply);
		free(reply.body);
		sd_event_source_disable_unref(w->timer);
		free(w);
	}
	net_http_server_free(c->http);
	sd_event_source_disable_unref(c->flush);
	sd_event_unref(c->event);
	free(c->read_group);
	free(c);
}
