/* SPDX-License-Identifier: Apache-2.0 */
/* The informant agent's per-registration HTTP server (informant-priv.h):
 * the endpoints the informant calls (GET /id, POST /suspend, /resume,
 * /try-upscale), with the checks and answers of the Go agent's handlers,
 * and the mode changes they make. */
#define AG_INF_PRIV_ALLOW
#include "agent-glue/client/informant-priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

static void reply_json(struct net_http_server_reply *reply, json_t *v)
{
	char *s = v ? ag_inf_dump(v) : NULL;

	json_decref(v);
	if (!s) {
		net_http_reply_text(reply, 500, NULL, "internal error");
		return;
	}
	reply->status = 200;
	reply->content_type = "application/json";
	reply->body = s;
	reply->body_len = strlen(s);
}

static void reply_id_message(struct ag_inf_server *srv, struct net_http_server_reply *reply)
{
	reply_json(reply, ag_agent_id_message_encode(srv->desc.agent_id, ++srv->seq));
}

static void reply_error(struct net_http_server_reply *reply, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply_error(struct net_http_server_reply *reply, unsigned status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	net_http_reply_text(reply, status, "text/plain; charset=utf-8", msg);
}

/* A /suspend, /resume or /try-upscale in a state the protocol does not
 * allow: answer 400 and, as the Go agent did "to be nice", restart with a
 * fresh registration so a temporary confusion does not become permanent. */
static void violation(struct ag_inf_server *srv, struct net_http_server_reply *reply,
		      const char *what, const char *answer)
{
	struct vmact_err e = { 0 };

	vmact_err_set(&e, EPROTO, "informant sent %s while the server is %s", what,
		      ag_inf_mode_name(srv->mode));
	reply_error(reply, 400, "%s", answer);
	ag_inf_server_exit(srv->a, &e, true);
}

static void handle_id(struct ag_inf_server *srv, const json_t *body,
		      struct net_http_server_reply *reply)
{
	struct vmact_err e = { 0 };

	if (ag_inf_empty_decode(body, &e) < 0) {
		vmact_err_prefix(&e, "GET /id");
		ag_inf_notice(srv->a, &e);
		reply_error(reply, 400, "bad JSON");
		return;
	}
	srv->received_id_check = true;
	if (srv->exited) {
		reply_error(reply, 404, "Server has already exited");
		return;
	}
	reply_id_message(srv, reply);
}

/* Common prologue of /suspend, /resume, /try-upscale: 0 to go on. */
static int check_expected(struct ag_inf_server *srv, const char *id,
			  struct net_http_server_reply *reply)
{
	if (strcmp(id, srv->desc.agent_id) != 0) {
		reply_error(reply, 404, "AgentID \"%s\" not found", id);
		return -1;
	}
	if (srv->exited) {
		reply_error(reply, 404, "Server has already exited");
		return -1;
	}
	return 0;
}

/* SuspendAgent / ResumeAgent: decode and check the expected ID. */
static int expected_prologue(struct ag_inf_server *srv, const json_t *body, const char *what,
			     struct net_http_server_reply *reply)
{
	struct vmact_err e = { 0 };
	char id[AG_INF_ID_MAX];

	if (ag_expected_id_decode(body, id, &e) < 0) {
		vmact_err_prefix(&e, "%s", what);
		ag_inf_notice(srv->a, &e);
		reply_error(reply, 400, "bad JSON");
		return -1;
	}
	return check_expected(srv, id, reply);
}

static void handle_suspend(struct ag_inf_server *srv, const json_t *body,
			   struct net_http_server_reply *reply)
{
	struct vmact_err e = { 0 };

	if (expected_prologue(srv, body, "POST /suspend", reply) < 0)
		return;
	switch (srv->mode) {
	case AG_INF_RUNNING:
		ag_inf_set_mode(srv->a, srv, AG_INF_SUSPENDED);
		reply_id_message(srv, reply);
		/* A request still waiting for its turn may not go out now. */
		if (srv->a->op.kind != AG_INF_OP_NONE && srv->a->inflight_kind != srv->a->op.kind) {
			vmact_err_set(&e, EAGAIN,
				      "informant suspended the agent before the request went out");
			ag_inf_complete_op(srv->a, -EAGAIN, NULL, &e);
		}
		return;
	case AG_INF_SUSPENDED:
		violation(srv, reply, "/suspend", "Cannot suspend agent that is already suspended");
		return;
	default:
		if (srv->resume_early) {
			/* Resumed and suspended again before the /register
			 * answer got here. */
			srv->resume_early = false;
			reply_id_message(srv, reply);
			return;
		}
		violation(srv, reply, "/suspend",
			  "Cannot suspend agent that is not yet registered");
		return;
	}
}

static void handle_resume(struct ag_inf_server *srv, const json_t *body,
			  struct net_http_server_reply *reply)
{
	if (expected_prologue(srv, body, "POST /resume", reply) < 0)
		return;
	switch (srv->mode) {
	case AG_INF_SUSPENDED:
		ag_inf_set_mode(srv->a, srv, AG_INF_RUNNING);
		reply_id_message(srv, reply);
		ag_inf_kick(srv->a);
		return;
	case AG_INF_RUNNING:
		violation(srv, reply, "/resume", "Cannot resume agent that is already running");
		return;
	default:
		if (srv->received_id_check && srv->a->inflight_kind == AG_INF_OP_REGISTER &&
		    !srv->resume_early) {
			srv->resume_early = true;
			reply_id_message(srv, reply);
			return;
		}
		violation(srv, reply, "/resume", "Cannot resume agent that is not yet registered");
		return;
	}
}

static void handle_try_upscale(struct ag_inf_server *srv, const json_t *body,
			       struct net_http_server_reply *reply)
{
	struct ag_inf_agent *a = srv->a;
	struct ag_more_resources m;
	struct vmact_err e = { 0 };

	if (ag_more_resources_decode(body, &m, &e) < 0) {
		vmact_err_prefix(&e, "POST /try-upscale");
		ag_inf_notice(a, &e);
		reply_error(reply, 400, "bad JSON");
		return;
	}
	if (check_expected(srv, m.expected_id, reply) < 0)
		return;
	switch (srv->mode) {
	case AG_INF_RUNNING:
		if (!ag_inf_has_try_upscale(srv->version)) {
			reply_error(reply, 400,
				    "/try-upscale not supported for protocol version v%s",
				    ag_inf_version_name(srv->version));
			return;
		}
		reply_id_message(srv, reply);
		if (m.cpu || m.memory) {
			if (a->events.try_upscale)
				a->events.try_upscale(a->ud, m.cpu, m.memory);
		} else {
			vmact_err_set(&e, EINVAL,
				      "POST /try-upscale asks for neither cpu nor memory");
			ag_inf_notice(a, &e);
		}
		return;
	case AG_INF_SUSPENDED:
		violation(srv, reply, "/try-upscale", "Cannot process upscale while suspended");
		return;
	default:
		violation(srv, reply, "/try-upscale", "Cannot process upscale while unconfirmed");
		return;
	}
}

static const struct {
	const char *path, *method;
	void (*fn)(struct ag_inf_server *, const json_t *, struct net_http_server_reply *);
} endpoints[] = {
	{ "/id", "GET", handle_id },
	{ "/suspend", "POST", handle_suspend },
	{ "/resume", "POST", handle_resume },
	{ "/try-upscale", "POST", handle_try_upscale },
};

static void on_request(void *ud, const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	struct ag_inf_server *srv = ud;
	_cleanup_(json_decrefp) json_t *body = NULL;
	struct vmact_err e = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(endpoints); i++) {
		if (strcmp(req->url, endpoints[i].path) != 0)
			continue;
		/* The checks and answers of Go's util.AddHandler. */
		if (strcmp(req->method, endpoints[i].method) != 0) {
			reply_error(reply, 405, "request method must be %s", endpoints[i].method);
			return;
		}
		if (ag_inf_parse_body(req->body, req->body_len, &body, &e) < 0) {
			vmact_err_prefix(&e, "%s %s: bad JSON", req->method, req->url);
			ag_inf_notice(srv->a, &e);
			reply_error(reply, 400, "bad JSON");
			return;
		}
		endpoints[i].fn(srv, body, reply);
		return;
	}
	reply_error(reply, 404, "404 page not found");
}

/* "host:port" with IPv6 literals bracketed. */
static int make_serve_addr(const char *host, unsigned port, char *out, size_t len)
{
	bool v6 = strchr(host, ':') && host[0] != '[';
	int n = snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", host, port);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int ag_inf_server_new(struct ag_inf_agent *a, struct ag_inf_server **out, struct vmact_err *err)
{
	struct net_http_server_config hc = { .listen = a->listen };
	struct ag_inf_server *srv;
	int ret;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return vmact_err_set(err, ENOMEM, "informant server: out of memory");
	srv->a = a;
	srv->mode = AG_INF_UNCONFIRMED;
	srv->desc.min_version = a->cfg.min_version;
	srv->desc.max_version = a->cfg.max_version;
	ret = ag_inf_uuid_new(srv->desc.agent_id, err);
	if (ret == 0 && a->cfg.listen_socket) {
		/* Opened for us (doc/privsep.md): the server takes it. */
		ret = a->cfg.listen_socket(a->cfg.hook_ud, err);
		if (ret >= 0) {
			hc.adopt_fd = true;
			hc.listen_fd = ret;
			ret = 0;
		}
	}
	if (ret == 0)
		ret = net_http_server_new(a->ev, &hc, on_request, srv, &srv->http, err);
	if (ret == 0 && make_serve_addr(a->advertise_host, net_http_server_port(srv->http),
					srv->desc.serve_addr, sizeof(srv->desc.serve_addr)) < 0)
		ret = vmact_err_set(err, ENAMETOOLONG, "advertise host too long");
	if (ret < 0) {
		ag_inf_server_free(srv);
		return ret;
	}
	*out = srv;
	return 0;
}

void ag_inf_server_free(struct ag_inf_server *srv)
{
	if (!srv)
		return;
	net_http_server_free(srv->http);
	free(srv);
}
