/* SPDX-License-Identifier: Apache-2.0 */
/* The informant agent (informant-client.h), one module in three parts:
 * - its lifecycle: one registration (server) after the other, each with a
 *   fresh agent ID; the retry wait after an exit (the owner's backoff),
 *   the health-check timer, stopping with /unregister;
 * - the per-registration HTTP server: the endpoints the informant calls
 *   (GET /id, POST /suspend, /resume, /try-upscale) and the mode changes
 *   they make;
 * - the requests to the informant, one in flight at a time: /register,
 *   /health-check, the caller's /downscale and /upscale, and /unregister
 *   when a server exits (those run beside the others).
 * The three share one state machine and change it in both directions, so
 * they are one file: split, they called each other both ways. */
#include "agent-glue/client/informant-client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/endpoint.h"
#include "base/list.h"
#include "base/macro.h"
#include "net/http-client.h"
#include "net/http-server.h"

/* One registration: its own listener, agent ID and sequence counter. */
struct ag_inf_server {
	struct ag_inf_agent *a;
	VMACT_LIST_FIELDS(struct ag_inf_server, dead);
	struct net_http_server *http;
	struct ag_agent_desc desc;
	uint64_t seq;
	uint32_t version;
	enum ag_inf_mode mode;
	bool register_sent;
	bool received_id_check;
	bool made_contact;
	/* /resume arrived after the informant's /id call but before we saw
	 * its /register answer: the two travel on different connections, so
	 * the order is a race the protocol itself has (the Go agent has a
	 * FIXME about it). The informant only resumes registered agents, so
	 * the answer, once validated, leads straight to running. */
	bool resume_early;
	bool exited;
};

enum ag_inf_op {
	AG_INF_OP_NONE,
	AG_INF_OP_REGISTER,
	AG_INF_OP_HEALTH,
	AG_INF_OP_DOWNSCALE,
	AG_INF_OP_UPSCALE,
};

struct ag_inf_unreg {
	VMACT_LIST_FIELDS(struct ag_inf_unreg, unregs);
	struct ag_inf_agent *a;
	struct net_http_call *call;
	char agent_id[AG_INF_ID_MAX];
};

struct ag_inf_agent {
	sd_event *ev;
	struct ag_inf_agent_config cfg;
	char *informant_url, *listen, *advertise_host;
	struct ag_inf_agent_events events;
	void *ud;
	struct net_http_client *http;

	struct ag_inf_server *srv;  /* current, NULL between registrations */
	struct ag_inf_server *dead; /* exited, listener still to be closed */
	sd_event_source *reap, *retry_timer, *health_timer, *stop_defer;

	/* The one request to the informant in flight. */
	struct net_http_call *inflight;
	enum ag_inf_op inflight_kind;
	bool health_due;

	/* The one caller-requested up/downscale, queued or in flight. */
	struct {
		enum ag_inf_op kind;
		struct vmact_resources to;
		ag_inf_downscale_fn *down_cb;
		ag_inf_upscale_fn *up_cb;
		void *ud;
	} op;

	struct ag_inf_unreg *unregs;
	bool started, stopping;
	void (*stop_done)(void *ud);
	void *stop_ud;
	unsigned generation;
};

/* The state machine (registrations, modes, stopping) */
static void ag_inf_notice(struct ag_inf_agent *a, const struct vmact_err *err);
/* Reports a mode change of the current server. */
static void ag_inf_set_mode(struct ag_inf_agent *a, struct ag_inf_server *srv, enum ag_inf_mode m);
/* Ends the current server: cancels its call, unregisters it if the
 * informant may know it, fails the pending up/downscale and schedules the
 * next registration (unless stopping). */
static void ag_inf_server_exit(struct ag_inf_agent *a, const struct vmact_err *why,
			       bool retry_should_fix);
/* Calls the stop callback once nothing is left to wait for. */
static void ag_inf_stop_check(struct ag_inf_agent *a);

/* The server the informant calls */
/* A server for a new registration, listening, with a fresh agent ID. */
static int ag_inf_server_new(struct ag_inf_agent *a, struct ag_inf_server **out,
			     struct vmact_err *err);
static void ag_inf_server_free(struct ag_inf_server *srv);

/* The requests to the informant */
/* Sends what is due next (register, then the queued up/downscale, then a
 * health check) unless a request is in flight. */
static void ag_inf_kick(struct ag_inf_agent *a);
/* Ends the caller's up/downscale with result. */
static void ag_inf_complete_op(struct ag_inf_agent *a, int result,
			       const struct ag_downscale_result *dr, const struct vmact_err *err);
static void ag_inf_send_unregister(struct ag_inf_agent *a, const struct ag_agent_desc *desc);

/* ---- lifecycle ---------------------------------------------------------- */

static int start_server(struct ag_inf_agent *a, struct vmact_err *err);

const char *ag_inf_mode_name(enum ag_inf_mode m)
{
	switch (m) {
	case AG_INF_NONE:
		return "none";
	case AG_INF_UNCONFIRMED:
		return "unconfirmed";
	case AG_INF_SUSPENDED:
		return "suspended";
	case AG_INF_RUNNING:
		return "running";
	}
	return "?";
}

static void ag_inf_notice(struct ag_inf_agent *a, const struct vmact_err *err)
{
	if (a->events.notice)
		a->events.notice(a->ud, err);
}

static void ag_inf_set_mode(struct ag_inf_agent *a, struct ag_inf_server *srv, enum ag_inf_mode m)
{
	if (srv->mode == m)
		return;
	srv->mode = m;
	if (a->events.mode_changed && a->srv == srv)
		a->events.mode_changed(a->ud, m, srv->desc.agent_id);
}

/* ---- server lifecycle ------------------------------------------------- */

static int on_reap(sd_event_source *s, void *ud)
{
	struct ag_inf_agent *a = ud;

	while (a->dead) {
		struct ag_inf_server *d = a->dead;

		VMACT_LIST_REMOVE(dead, a->dead, d);
		ag_inf_server_free(d);
	}
	return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *ud)
{
	struct ag_inf_agent *a = ud;
	struct vmact_err e = { 0 };

	if (a->stopping || a->srv)
		return 0;
	if (start_server(a, &e) < 0) {
		/* E.g. the listen address is gone: report it and keep trying. */
		if (a->events.server_exited)
			a->events.server_exited(a->ud, "", &e, false);
		sd_event_source_set_time_relative(a->retry_timer, a->cfg.retry_wait_usec);
		sd_event_source_set_enabled(a->retry_timer, SD_EVENT_ONESHOT);
	}
	return 0;
}

static int on_health(sd_event_source *s, uint64_t usec, void *ud)
{
	struct ag_inf_agent *a = ud;

	if (a->srv && a->srv->mode == AG_INF_RUNNING && ag_inf_has_health_check(a->srv->version)) {
		a->health_due = true;
		ag_inf_kick(a);
	}
	if (a->srv) {
		sd_event_source_set_time_relative(s, a->cfg.health_interval_usec);
		sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	}
	return 0;
}

static void ag_inf_server_exit(struct ag_inf_agent *a, const struct vmact_err *why,
			       bool retry_should_fix)
{
	struct ag_inf_server *srv = a->srv;
	struct vmact_err e = { 0 };
	char id[AG_INF_ID_MAX];

	if (!srv || srv->exited)
		return;
	srv->exited = true;
	memcpy(id, srv->desc.agent_id, sizeof(id));
	/* Cut off mid-/register: the informant may have taken it. */
	if (a->inflight_kind == AG_INF_OP_REGISTER)
		srv->made_contact = true;
	if (a->inflight) {
		net_http_call_cancel(a->inflight);
		a->inflight = NULL;
		a->inflight_kind = AG_INF_OP_NONE;
	}
	a->health_due = false;
	sd_event_source_set_enabled(a->health_timer, SD_EVENT_OFF);
	if (srv->made_contact || srv->received_id_check)
		ag_inf_send_unregister(a, &srv->desc);
	ag_inf_set_mode(a, srv, AG_INF_NONE);
	a->srv = NULL;
	/* The listener may be the one whose handler is running right now. */
	VMACT_LIST_PREPEND(dead, a->dead, srv);
	sd_event_source_set_enabled(a->reap, SD_EVENT_ONESHOT);

	if (a->op.kind != AG_INF_OP_NONE) {
		vmact_err_set(&e, ECANCELED, "informant server exited before an answer: %s",
			      why ? why->msg : "");
		ag_inf_complete_op(a, -ECANCELED, NULL, &e);
	}
	if (a->events.server_exited)
		a->events.server_exited(a->ud, id, why, retry_should_fix);
	if (a->stopping) {
		ag_inf_stop_check(a);
		return;
	}
	sd_event_source_set_time_relative(a->retry_timer, a->cfg.retry_wait_usec);
	sd_event_source_set_enabled(a->retry_timer, SD_EVENT_ONESHOT);
}

static int start_server(struct ag_inf_agent *a, struct vmact_err *err)
{
	struct ag_inf_server *srv = NULL;
	int ret;

	ret = ag_inf_server_new(a, &srv, err);
	if (ret < 0)
		return ret;
	a->srv = srv;
	a->generation++;
	if (a->events.mode_changed)
		a->events.mode_changed(a->ud, AG_INF_UNCONFIRMED, srv->desc.agent_id);
	sd_event_source_set_time_relative(a->health_timer, a->cfg.health_interval_usec);
	sd_event_source_set_enabled(a->health_timer, SD_EVENT_ONESHOT);
	ag_inf_kick(a);
	return 0;
}

/* ---- public ----------------------------------------------------------- */

static int dup_or_null(const char *s, char **out)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

int ag_inf_agent_new(sd_event *ev, const struct ag_inf_agent_config *cfg,
		     const struct ag_inf_agent_events *events, void *ud, struct ag_inf_agent **out,
		     struct vmact_err *err)
{
	struct ag_inf_agent *a;
	struct vmact_endpoint url;
	struct vmact_listen lst;
	int ret;

	/* A path is tolerated: the endpoint paths are appended to it. */
	if (vmact_endpoint_parse(cfg->informant_url, VMACT_EP_HTTP | VMACT_EP_NEED_PORT, &url,
				 err) < 0)
		return vmact_err_prefix(err, "informant_url");
	if (vmact_listen_parse(cfg->listen, false, &lst, err) < 0)
		return vmact_err_prefix(err, "listen");
	a = calloc(1, sizeof(*a));
	if (!a)
		return vmact_err_set(err, ENOMEM, "out of memory");
	a->ev = sd_event_ref(ev);
	a->cfg = *cfg;
	if (events)
		a->events = *events;
	a->ud = ud;
	if (!a->cfg.min_version)
		a->cfg.min_version = AG_INF_VERSION_MIN;
	if (!a->cfg.max_version)
		a->cfg.max_version = AG_INF_VERSION_MAX;
#define DEFAULT(f, v)  \
	if (!a->cfg.f) \
	a->cfg.f = (v)
	DEFAULT(register_timeout_usec, AG_INF_DEFAULT_REGISTER_TIMEOUT_USEC);
	DEFAULT(request_timeout_usec, AG_INF_DEFAULT_REQUEST_TIMEOUT_USEC);
	DEFAULT(downscale_timeout_usec, AG_INF_DEFAULT_DOWNSCALE_TIMEOUT_USEC);
	DEFAULT(health_interval_usec, AG_INF_DEFAULT_HEALTH_INTERVAL_USEC);
	DEFAULT(retry_wait_usec, AG_INF_DEFAULT_RETRY_WAIT_USEC);
#undef DEFAULT
	ret = ag_inf_negotiate(a->cfg.min_version, a->cfg.max_version, AG_INF_VERSION_MIN,
			       AG_INF_VERSION_MAX, &(uint32_t){ 0 }, err);
	if (ret < 0)
		goto fail;
	ret = -ENOMEM;
	if (dup_or_null(cfg->informant_url, &a->informant_url) < 0 ||
	    dup_or_null(cfg->listen, &a->listen) < 0)
		goto nomem;
	/* Trailing slashes would double up with the endpoint paths. */
	for (size_t n = strlen(a->informant_url); n > 7 && a->informant_url[n - 1] == '/'; n--)
		a->informant_url[n - 1] = '\0';
	if (cfg->advertise_host) {
		if (dup_or_null(cfg->advertise_host, &a->advertise_host) < 0)
			goto nomem;
	} else {
		if (lst.wildcard) {
			ret = vmact_err_set(
				err, EINVAL,
				"advertise_host: needed when listening on a wildcard address");
			goto fail;
		}
		a->advertise_host = strdup(lst.host);
		if (!a->advertise_host)
			goto nomem;
	}
	a->cfg.informant_url = a->cfg.listen = a->cfg.advertise_host = NULL;
	ret = net_http_client_new(ev, &a->http, err);
	if (ret < 0)
		goto fail;
	if (cfg->dial)
		net_http_client_set_connect(a->http, cfg->dial, cfg->hook_ud);
	if ((ret = sd_event_add_defer(ev, &a->reap, on_reap, a)) < 0 ||
	    (ret = sd_event_add_time(ev, &a->retry_timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_retry,
				     a)) < 0 ||
	    (ret = sd_event_add_time(ev, &a->health_timer, CLOCK_MONOTONIC, UINT64_MAX, 0,
				     on_health, a)) < 0) {
		vmact_err_set(err, -ret, "sd-event: %s", strerror(-ret));
		goto fail;
	}
	sd_event_source_set_enabled(a->reap, SD_EVENT_OFF);
	sd_event_source_set_enabled(a->retry_timer, SD_EVENT_OFF);
	sd_event_source_set_enabled(a->health_timer, SD_EVENT_OFF);
	*out = a;
	return 0;
nomem:
	ret = vmact_err_set(err, ENOMEM, "out of memory");
fail:
	ag_inf_agent_free(a);
	return ret;
}

int ag_inf_agent_start(struct ag_inf_agent *a, struct vmact_err *err)
{
	if (a->started)
		return vmact_err_set(err, EALREADY, "informant agent already started");
	a->started = true;
	return start_server(a, err);
}

void ag_inf_agent_set_retry_wait(struct ag_inf_agent *a, uint64_t usec)
{
	a->cfg.retry_wait_usec = usec ? usec : AG_INF_DEFAULT_RETRY_WAIT_USEC;
}

void ag_inf_agent_retry_later(struct ag_inf_agent *a)
{
	if (a->stopping || a->srv)
		return;
	a->started = true;
	sd_event_source_set_time_relative(a->retry_timer, a->cfg.retry_wait_usec);
	sd_event_source_set_enabled(a->retry_timer, SD_EVENT_ONESHOT);
}

static int on_stop_defer(sd_event_source *s, void *ud)
{
	struct ag_inf_agent *a = ud;
	void (*done)(void *) = a->stop_done;

	a->stop_done = NULL;
	if (done)
		done(a->stop_ud);
	return 0;
}

static void ag_inf_stop_check(struct ag_inf_agent *a)
{
	if (!a->stopping || a->unregs || a->srv || !a->stop_done || a->stop_defer)
		return;
	if (sd_event_add_defer(a->ev, &a->stop_defer, on_stop_defer, a) < 0) {
		/* Cannot defer: call now, the caller is the event loop anyway. */
		on_stop_defer(NULL, a);
	}
}

int ag_inf_agent_stop(struct ag_inf_agent *a, void (*done)(void *ud), void *ud)
{
	struct vmact_err why = { 0 };

	if (a->stopping)
		return -EALREADY;
	a->stopping = true;
	a->stop_done = done;
	a->stop_ud = ud;
	sd_event_source_set_enabled(a->retry_timer, SD_EVENT_OFF);
	vmact_err_set(&why, ECANCELED, "agent stopping");
	ag_inf_server_exit(a, &why, false);
	ag_inf_stop_check(a);
	return 0;
}

void ag_inf_agent_free(struct ag_inf_agent *a)
{
	if (!a)
		return;
	/* Frees every call (unregister ones included) without callbacks. */
	net_http_client_free(a->http);
	while (a->unregs) {
		struct ag_inf_unreg *u = a->unregs;

		VMACT_LIST_REMOVE(unregs, a->unregs, u);
		free(u);
	}
	ag_inf_server_free(a->srv);
	on_reap(NULL, a);
	sd_event_source_disable_unref(a->reap);
	sd_event_source_disable_unref(a->retry_timer);
	sd_event_source_disable_unref(a->health_timer);
	sd_event_source_disable_unref(a->stop_defer);
	free(a->informant_url);
	free(a->listen);
	free(a->advertise_host);
	sd_event_unref(a->ev);
	free(a);
}

enum ag_inf_mode ag_inf_agent_mode(const struct ag_inf_agent *a)
{
	return a->srv ? a->srv->mode : AG_INF_NONE;
}

const char *ag_inf_agent_id(const struct ag_inf_agent *a)
{
	return a->srv ? a->srv->desc.agent_id : "";
}

const char *ag_inf_agent_serve_addr(const struct ag_inf_agent *a)
{
	return a->srv ? a->srv->desc.serve_addr : "";
}

uint32_t ag_inf_agent_version(const struct ag_inf_agent *a)
{
	return a->srv ? a->srv->version : 0;
}

uint64_t ag_inf_agent_seq(const struct ag_inf_agent *a)
{
	return a->srv ? a->srv->seq : 0;
}

unsigned ag_inf_agent_generation(const struct ag_inf_agent *a)
{
	return a->generation;
}

/* ---- the server the informant calls ---------------------------------- */

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

static int ag_inf_server_new(struct ag_inf_agent *a, struct ag_inf_server **out,
			     struct vmact_err *err)
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

static void ag_inf_server_free(struct ag_inf_server *srv)
{
	if (!srv)
		return;
	net_http_server_free(srv->http);
	free(srv);
}

/* ---- the requests to the informant ----------------------------------- */

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

static void ag_inf_complete_op(struct ag_inf_agent *a, int result,
			       const struct ag_downscale_result *dr, const struct vmact_err *err)
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

static void ag_inf_kick(struct ag_inf_agent *a)
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

static void ag_inf_send_unregister(struct ag_inf_agent *a, const struct ag_agent_desc *desc)
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
