/* SPDX-License-Identifier: Apache-2.0 */
/* The informant agent's core (informant-priv.h lists its files): its
 * lifecycle, one registration (server) after the other, each with a fresh
 * agent ID; the retry wait after an exit (the owner's backoff), the
 * health-check timer, stopping with /unregister; and the public calls. */
#define AG_INF_PRIV_ALLOW
#include "agent-glue/client/informant-priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/endpoint.h"
#include "base/macro.h"

/* ---- lifecycle ---------------------------------------------------------- */

static int start_server(struct ag_inf_agent *a, struct vmact_err *err);
static void core_server_exit(struct ag_inf_agent *a, const struct vmact_err *why,
			     bool retry_should_fix);
static void core_stop_check(struct ag_inf_agent *a);

static const struct ag_inf_core_ops core_ops = {
	.server_exit = core_server_exit,
	.stop_check = core_stop_check,
};

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

static void core_server_exit(struct ag_inf_agent *a, const struct vmact_err *why,
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
	a->core = &core_ops;
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

static void core_stop_check(struct ag_inf_agent *a)
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
