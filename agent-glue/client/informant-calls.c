/* SPDX-License-Identifier: Apache-2.0 */
/* The informant agent's requests to the informant (informant-priv.h), one
 * in flight at a time: /register, /health-check, the caller's /downscale
 * and /upscale; and /unregister when a server exits, which runs beside
 * them. */
#define AG_INF_PRIV_ALLOW
#include "agent-glue/client/informant-priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

static void on_call_done(void *ud, int result, const struct net_http_response *resp,
			 const struct vmact_err *terr);
static int send_call(struct ag_inf_agent *a, enum ag_inf_op kind, const char *method,
		     const char *path, json_t *body_json, uint64_t timeout, struct vmact_err *err)
{
	_cleanup_(json_decrefp) json_t *body = body_json;
	_cleanup_free_ char *text = NULL, *url = NULL;
	struct net_http_request req = {
		.method = method,
		.content_type = "application/json",
		.timeout_usec = timeout,
	};
	int ret;

	if (!body || !(text = ag_inf_dump(body)))
		return vmact_err_set(err, ENOMEM, "%s: cannot encode the request", path);
	if (asprintf(&url, "%s%s", a->informant_url, path) < 0) {
		url = NULL;
		return vmact_err_set(err, ENOMEM, "%s: out of memory", path);
	}
	req.url = url;
	req.body = text;
	req.body_len = strlen(text);
	ret = net_http_client_start(a->http, &req, on_call_done, a, &a->inflight, err);
	if (ret < 0) {
		a->inflight = NULL;
		return ret;
	}
	a->inflight_kind = kind;
	return 0;
}

void ag_inf_complete_op(struct ag_inf_agent *a, int result, const struct ag_downscale_result *dr,
			const struct vmact_err *err)
{
	enum ag_inf_op kind = a->op.kind;
	ag_inf_downscale_fn *down = a->op.down_cb;
	ag_inf_upscale_fn *up = a->op.up_cb;
	void *ud = a->op.ud;

	/* Cleared first: the callback may queue the next one. */
	memset(&a->op, 0, sizeof(a->op));
	if (kind == AG_INF_OP_DOWNSCALE && down)
		down(ud, result, result == 0 ? dr : NULL, err);
	else if (kind == AG_INF_OP_UPSCALE && up)
		up(ud, result, err);
}

void ag_inf_kick(struct ag_inf_agent *a)
{
	struct ag_inf_server *srv = a->srv;
	struct vmact_err e = { 0 };
	int ret;

	if (a->inflight || !srv || srv->exited)
		return;
	if (!srv->register_sent) {
		srv->register_sent = true;
		ret = send_call(a, AG_INF_OP_REGISTER, "POST", "/register",
				ag_agent_desc_encode(&srv->desc), a->cfg.register_timeout_usec, &e);
		if (ret < 0)
			ag_inf_server_exit(a, &e, false);
		return;
	}
	if (srv->mode != AG_INF_RUNNING)
		return;
	if (a->op.kind != AG_INF_OP_NONE) {
		bool down = a->op.kind == AG_INF_OP_DOWNSCALE;
		json_t *body = ag_inf_signed_resources(srv->version)
				       ? ag_resource_message_encode(&a->op.to, srv->desc.agent_id,
								    srv->seq + 1)
				       : ag_raw_resources_encode(&a->op.to);

		ret = send_call(a, a->op.kind, "PUT", down ? "/downscale" : "/upscale", body,
				a->cfg.downscale_timeout_usec, &e);
		if (ret < 0) {
			ag_inf_complete_op(a, ret, NULL, &e);
			ag_inf_kick(a);
			return;
		}
		/* Counted once it is on its way: the number is in the body. */
		if (ag_inf_signed_resources(srv->version))
			srv->seq++;
		return;
	}
	if (a->health_due && ag_inf_has_health_check(srv->version)) {
		a->health_due = false;
		ret = send_call(a, AG_INF_OP_HEALTH, "PUT", "/health-check",
				ag_agent_id_encode(srv->desc.agent_id), a->cfg.request_timeout_usec,
				&e);
		if (ret < 0)
			ag_inf_notice(a, &e);
	}
}

/* Turns a non-200 answer into an error naming the endpoint. */
static int status_error(const char *path, const struct net_http_response *resp,
			struct vmact_err *err)
{
	int n = resp->body_len > 200 ? 200 : (int)resp->body_len;

	return vmact_err_set(err, EREMOTEIO, "%s: informant answered %ld: %.*s", path, resp->status,
			     n, resp->body);
}

static void register_done(struct ag_inf_agent *a, struct ag_inf_server *srv, int result,
			  const struct net_http_response *resp, const struct vmact_err *terr)
{
	_cleanup_(json_decrefp) json_t *body = NULL;
	struct ag_informant_desc desc;
	struct vmact_err e = { 0 };

	/* Whether the informant may know this agent ID (then it gets an
	 * /unregister when the server exits). */
	srv->made_contact = resp || result == -ETIMEDOUT || srv->received_id_check;
	if (result < 0) {
		vmact_err_set(&e, -result, "/register: %s", terr ? terr->msg : strerror(-result));
		ag_inf_server_exit(a, &e, false);
		return;
	}
	if (resp->status != 200) {
		status_error("/register", resp, &e);
		ag_inf_server_exit(a, &e, false);
		return;
	}
	if (ag_inf_parse_body(resp->body, resp->body_len, &body, &e) < 0 ||
	    ag_informant_desc_decode(body, srv->desc.min_version, srv->desc.max_version, &desc,
				     &e) < 0) {
		vmact_err_prefix(&e, "/register: bad InformantDesc");
		ag_inf_server_exit(a, &e, false);
		return;
	}
	if (!srv->received_id_check) {
		vmact_err_set(
			&e, EPROTO,
			"/register: protocol violation: informant answered 200 without calling GET /id");
		ag_inf_server_exit(a, &e, false);
		return;
	}
	srv->version = desc.version;
	if (a->events.registered)
		a->events.registered(a->ud, srv->desc.agent_id, &desc);
	if (a->srv != srv || srv->exited)
		return;
	ag_inf_set_mode(a, srv, srv->resume_early ? AG_INF_RUNNING : AG_INF_SUSPENDED);
}

static void health_done(struct ag_inf_agent *a, int result, const struct net_http_response *resp,
			const struct vmact_err *terr)
{
	_cleanup_(json_decrefp) json_t *body = NULL;
	struct vmact_err e = { 0 };

	if (result < 0) {
		/* The Go agent only logged these. */
		vmact_err_set(&e, -result, "/health-check: %s",
			      terr ? terr->msg : strerror(-result));
		ag_inf_notice(a, &e);
		return;
	}
	if (resp->status != 200) {
		status_error("/health-check", resp, &e);
		ag_inf_server_exit(a, &e, resp->status == 404);
		return;
	}
	if (ag_inf_parse_body(resp->body, resp->body_len, &body, &e) < 0 ||
	    ag_inf_empty_decode(body, &e) < 0) {
		vmact_err_prefix(&e, "/health-check: bad answer");
		ag_inf_notice(a, &e);
	}
}

static void scale_done(struct ag_inf_agent *a, enum ag_inf_op kind, int result,
		       const struct net_http_response *resp, const struct vmact_err *terr)
{
	const char *path = kind == AG_INF_OP_DOWNSCALE ? "/downscale" : "/upscale";
	_cleanup_(json_decrefp) json_t *body = NULL;
	struct ag_downscale_result dr = { 0 };
	struct vmact_err e = { 0 };
	int ret;

	if (result < 0) {
		vmact_err_set(&e, -result, "%s: %s", path, terr ? terr->msg : strerror(-result));
		ag_inf_complete_op(a, result, NULL, &e);
		return;
	}
	if (resp->status != 200) {
		ret = status_error(path, resp, &e);
		ag_inf_complete_op(a, ret, NULL, &e);
		ag_inf_server_exit(a, &e, resp->status == 404);
		return;
	}
	ret = ag_inf_parse_body(resp->body, resp->body_len, &body, &e);
	if (ret == 0)
		ret = kind == AG_INF_OP_DOWNSCALE ? ag_downscale_result_decode(body, &dr, &e)
						  : ag_inf_empty_decode(body, &e);
	if (ret < 0) {
		vmact_err_prefix(&e, "%s: bad answer", path);
		e.code = EPROTO;
		ag_inf_complete_op(a, -EPROTO, NULL, &e);
		return;
	}
	ag_inf_complete_op(a, 0, &dr, NULL);
}

static void on_call_done(void *ud, int result, const struct net_http_response *resp,
			 const struct vmact_err *terr)
{
	struct ag_inf_agent *a = ud;
	enum ag_inf_op kind = a->inflight_kind;
	struct ag_inf_server *srv = a->srv;

	a->inflight = NULL;
	a->inflight_kind = AG_INF_OP_NONE;
	if (!srv) /* cannot happen: an exit cancels the call */
		return;
	switch (kind) {
	case AG_INF_OP_REGISTER:
		register_done(a, srv, result, resp, terr);
		break;
	case AG_INF_OP_HEALTH:
		health_done(a, result, resp, terr);
		break;
	case AG_INF_OP_DOWNSCALE:
	case AG_INF_OP_UPSCALE:
		scale_done(a, kind, result, resp, terr);
		break;
	case AG_INF_OP_NONE:
		break;
	}
	ag_inf_kick(a);
}

/* ---- /unregister ------------------------------------------------------ */

static void unregister_done(void *ud, int result, const struct net_http_response *resp,
			    const struct vmact_err *terr)
{
	struct ag_inf_unreg *u = ud;
	struct ag_inf_agent *a = u->a;
	_cleanup_(json_decrefp) json_t *body = NULL;
	struct vmact_err e = { 0 };
	bool was_active;

	VMACT_LIST_REMOVE(unregs, a->unregs, u);
	if (result < 0)
		vmact_err_set(&e, -result, "/unregister %s: %s", u->agent_id,
			      terr ? terr->msg : strerror(-result));
	else if (resp->status != 200)
		status_error("/unregister", resp, &e);
	else if (ag_inf_parse_body(resp->body, resp->body_len, &body, &e) < 0 ||
		 ag_unregister_decode(body, &was_active, &e) < 0)
		vmact_err_prefix(&e, "/unregister: bad answer");
	if (e.code)
		ag_inf_notice(a, &e);
	free(u);
	ag_inf_stop_check(a);
}

void ag_inf_send_unregister(struct ag_inf_agent *a, const struct ag_agent_desc *desc)
{
	_cleanup_(json_decrefp) json_t *body = ag_agent_desc_encode(desc);
	_cleanup_free_ char *text = NULL, *url = NULL;
	struct vmact_err e = { 0 };
	struct ag_inf_unreg *u;
	struct net_http_request req = {
		.method = "DELETE",
		.content_type = "application/json",
		.timeout_usec = a->cfg.register_timeout_usec,
	};

	u = calloc(1, sizeof(*u));
	if (!u || !body || !(text = ag_inf_dump(body)) ||
	    asprintf(&url, "%s/unregister", a->informant_url) < 0) {
		url = NULL;
		free(u);
		vmact_err_set(&e, ENOMEM, "/unregister %s: out of memory", desc->agent_id);
		ag_inf_notice(a, &e);
		return;
	}
	u->a = a;
	memcpy(u->agent_id, desc->agent_id, sizeof(u->agent_id));
	req.url = url;
	req.body = text;
	req.body_len = strlen(text);
	if (net_http_client_start(a->http, &req, unregister_done, u, &u->call, &e) < 0) {
		free(u);
		ag_inf_notice(a, &e);
		return;
	}
	VMACT_LIST_PREPEND(unregs, a->unregs, u);
}

static int check_scale(struct ag_inf_agent *a, const char *what, struct vmact_err *err)
{
	if (!a->srv || a->srv->exited)
		return vmact_err_set(err, EAGAIN, "%s: not registered with the informant", what);
	if (a->srv->mode != AG_INF_RUNNING)
		return vmact_err_set(err, EAGAIN, "%s: informant server is %s", what,
				     ag_inf_mode_name(a->srv->mode));
	if (a->op.kind != AG_INF_OP_NONE)
		return vmact_err_set(err, EBUSY, "%s: another up/downscale is pending", what);
	return 0;
}

int ag_inf_agent_downscale(struct ag_inf_agent *a, const struct vmact_resources *to,
			   ag_inf_downscale_fn *cb, void *ud, struct vmact_err *err)
{
	int ret = check_scale(a, "downscale", err);

	if (ret < 0)
		return ret;
	a->op.kind = AG_INF_OP_DOWNSCALE;
	a->op.to = *to;
	a->op.down_cb = cb;
	a->op.ud = ud;
	ag_inf_kick(a);
	return 0;
}

int ag_inf_agent_upscale(struct ag_inf_agent *a, const struct vmact_resources *to,
			 ag_inf_upscale_fn *cb, void *ud, struct vmact_err *err)
{
	int ret = check_scale(a, "upscale", err);

	if (ret < 0)
		return ret;
	a->op.kind = AG_INF_OP_UPSCALE;
	a->op.to = *to;
	a->op.up_cb = cb;
	a->op.ud = ud;
	ag_inf_kick(a);
	return 0;
}
