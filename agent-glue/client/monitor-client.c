/* SPDX-License-Identifier: Apache-2.0 */
/* The vm-monitor protocol on top of the websocket client (ws-client.c):
 * version negotiation, requests and their replies, health checks and
 * reconnection. */
#include "agent-glue/client/monitor-client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "agent-glue/codec/monitor.h"
#include "base/list.h"
#include "base/time.h"
#include "net/ws-client.h"

#define USEC_PER_SEC 1000000ull
/* Bound on what a peer can make us buffer. */
#define MAX_MESSAGE (1u << 20)
/* Timer slack: the tests run with intervals of tens of milliseconds. */
#define TIMER_ACCURACY 1000

struct pending {
	VMACT_LIST_FIELDS(struct pending, pending);
	struct ag_mon_client *c;
	uint64_t id, generation;
	enum ag_mon_type type;
	sd_event_source *timer;
	ag_mon_done_fn *done;
	void *userdata;
};

struct ag_mon_client {
	sd_event *event;
	struct ag_mon_client_config cfg;
	struct ag_mon_client_callbacks cb;
	void *userdata;

	enum ag_mon_client_state state;
	struct net_ws_client *ws;
	sd_event_source *connect_timer, *health_timer, *retry_timer;
	bool stopping, established;

	uint64_t next_id, generation, attempt_started, next_attempt;
	struct pending *pending;
	bool health_inflight;
	uint64_t health_failing_since, last_success, last_upscale_request;
	struct ag_mon_client_stats stats;
};

static void logf_(struct ag_mon_client *c, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void logf_(struct ag_mon_client *c, int prio, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!c->cb.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->cb.log(c, prio, buf, c->userdata);
}

static double secs(uint64_t usec)
{
	return (double)usec / (double)USEC_PER_SEC;
}

/* Starts the websocket close handshake with `code`; the connection is torn
 * down when the peer answers or after close_timeout (on_ws_close). Safe
 * inside the websocket callbacks. */
static void fail(struct ag_mon_client *c, uint16_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct ag_mon_client *c, uint16_t code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	net_ws_client_close(c->ws, code, msg);
}

/* ---- requests -------------------------------------------------------- */

static void finish(struct ag_mon_client *c, struct pending *p, enum ag_mon_outcome outcome,
		   const char *status)
{
	struct ag_mon_result res = {
		.outcome = outcome,
		.status = status ? status : "",
		.generation = p->generation,
		.id = p->id,
	};

	p->timer = sd_event_source_disable_unref(p->timer);
	if (p->done)
		p->done(c, &res, p->userdata);
	free(p);
}

static struct pending *take_pending(struct ag_mon_client *c, uint64_t id)
{
	struct pending *p;

	VMACT_LIST_FOREACH(pending, p, c->pending)
		if (p->id == id) {
			VMACT_LIST_REMOVE(pending, c->pending, p);
			return p;
		}
	return NULL;
}

static int queue_text(struct ag_mon_client *c, const struct ag_mon_msg *m, struct vmact_err *err)
{
	struct vmact_err e = { 0 };
	_cleanup_free_ char *text = ag_mon_encode_text(m, &e);

	if (!text)
		return vmact_err_set(err, e.code, "%s", e.msg);
	if (net_ws_client_send_text(c->ws, text, strlen(text)) < 0)
		return vmact_err_set(err, ENOTCONN, "vm-monitor connection is closing");
	return 0;
}

static void send_invalid(struct ag_mon_client *c, uint64_t id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void send_invalid(struct ag_mon_client *c, uint64_t id, const char *fmt, ...)
{
	char text[512];
	struct ag_mon_msg m = { .type = AG_MON_INVALID_MESSAGE, .id = id, .error = text };
	struct vmact_err err = { 0 };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (queue_text(c, &m, &err) == 0)
		c->stats.invalid_sent++;
	else
		logf_(c, LOG_WARNING, "could not answer InvalidMessage (%s): %s", text, err.msg);
}

static int on_request_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct pending *p = userdata;
	struct ag_mon_client *c = p->c;
	char msg[128];

	/* Dropping the waiter makes a late reply hit the unknown-id path. */
	if (take_pending(c, p->id) != p)
		return 0;
	c->stats.timeouts++;
	snprintf(msg, sizeof(msg), "timed out waiting %gs for monitor response",
		 secs(c->cfg.response_timeout_usec));
	finish(c, p, AG_MON_OUTCOME_FAILED, msg);
	return 0;
}

static int request(struct ag_mon_client *c, enum ag_mon_type type,
		   const struct vmact_resources *alloc, ag_mon_done_fn *done, void *userdata,
		   uint64_t *id_out, struct vmact_err *err)
{
	_cleanup_free_ struct pending *p = NULL;
	struct ag_mon_msg m = { .type = type };
	uint64_t saved_id = c->next_id;
	int r;

	if (c->state != AG_MON_CLIENT_CONNECTED)
		return vmact_err_set(err, ENOTCONN, "not connected to the vm-monitor (%s)",
				     ag_mon_client_state_name(c->state));
	p = calloc(1, sizeof(*p));
	if (!p)
		return vmact_err_set(err, ENOMEM, "out of memory");
	p->c = c;
	p->type = type;
	p->generation = c->generation;
	p->done = done;
	p->userdata = userdata;
	p->id = ag_mon_next_agent_id(&c->next_id);
	m.id = p->id;
	if (alloc)
		m.alloc = *alloc;
	r = sd_event_add_time_relative(c->event, &p->timer, CLOCK_MONOTONIC,
				       c->cfg.response_timeout_usec, TIMER_ACCURACY,
				       on_request_timeout, p);
	if (r < 0) {
		c->next_id = saved_id;
		return vmact_err_set(err, -r, "cannot arm the response timer: %s", strerror(-r));
	}
	r = queue_text(c, &m, err);
	if (r < 0) {
		p->timer = sd_event_source_disable_unref(p->timer);
		c->next_id = saved_id;
		return r;
	}
	VMACT_LIST_PREPEND(pending, c->pending, p);
	TAKE_PTR(p);
	if (id_out)
		*id_out = m.id;
	return 0;
}

int ag_mon_client_upscale(struct ag_mon_client *c, const struct vmact_resources *granted,
			  ag_mon_done_fn *done, void *userdata, uint64_t *id, struct vmact_err *err)
{
	if (!granted)
		return vmact_err_set(err, EINVAL, "UpscaleNotification: granted: missing");
	return request(c, AG_MON_UPSCALE_NOTIFICATION, granted, done, userdata, id, err);
}

int ag_mon_client_downscale(struct ag_mon_client *c, const struct vmact_resources *target,
			    ag_mon_done_fn *done, void *userdata, uint64_t *id,
			    struct vmact_err *err)
{
	if (!target)
		return vmact_err_set(err, EINVAL, "DownscaleRequest: target: missing");
	return request(c, AG_MON_DOWNSCALE_REQUEST, target, done, userdata, id, err);
}

int ag_mon_client_send_raw(struct ag_mon_client *c, const char *text, struct vmact_err *err)
{
	if (c->state != AG_MON_CLIENT_CONNECTED)
		return vmact_err_set(err, ENOTCONN, "not connected to the vm-monitor (%s)",
				     ag_mon_client_state_name(c->state));
	if (net_ws_client_send_text(c->ws, text, strlen(text)) < 0)
		return vmact_err_set(err, ENOTCONN, "vm-monitor connection is closing");
	return 0;
}

/* ---- health checks ---------------------------------------------------- */

static void health_done(struct ag_mon_client *c, const struct ag_mon_result *res, void *userdata)
{
	uint64_t now = vmact_loop_now_usec(c->event);

	c->health_inflight = false;
	if (res->outcome == AG_MON_OUTCOME_OK) {
		c->stats.health_ok++;
		c->health_failing_since = 0;
		return;
	}
	c->stats.health_failed++;
	/* Failures caused by the connection going away are not the monitor's. */
	if (c->state != AG_MON_CLIENT_CONNECTED || res->generation != c->generation)
		return;
	logf_(c, LOG_WARNING, "vm-monitor health check failed: %s", res->status);
	if (c->health_failing_since == 0) {
		c->health_failing_since = now;
	} else if (now - c->health_failing_since > c->cfg.health_max_failing_usec) {
		fail(c, 1011, "vm-monitor has been failing health checks for at least %gs",
		     secs(c->cfg.health_max_failing_usec));
	}
}

static int on_health_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ag_mon_client *c = userdata;
	struct vmact_err err = { 0 };

	sd_event_source_set_time(s, usec + c->cfg.health_interval_usec);
	/* One at a time, like the Go agent's blocking call in its ticker loop. */
	if (c->state != AG_MON_CLIENT_CONNECTED || c->health_inflight)
		return 0;
	if (request(c, AG_MON_HEALTH_CHECK, NULL, health_done, NULL, NULL, &err) < 0)
		logf_(c, LOG_WARNING, "cannot send health check: %s", err.msg);
	else
		c->health_inflight = true;
	return 0;
}

/* ---- incoming messages ------------------------------------------------ */

static enum ag_mon_type reply_type(enum ag_mon_type req)
{
	switch (req) {
	case AG_MON_UPSCALE_NOTIFICATION:
		return AG_MON_UPSCALE_CONFIRMATION;
	case AG_MON_DOWNSCALE_REQUEST:
		return AG_MON_DOWNSCALE_RESULT;
	default:
		return AG_MON_HEALTH_CHECK;
	}
}

static void complete(struct ag_mon_client *c, struct pending *p, const struct ag_mon_msg *m)
{
	char text[512];

	if (m->type == AG_MON_INTERNAL_ERROR) {
		snprintf(text, sizeof(text), "vm-monitor internal error: %s", m->error);
		finish(c, p, AG_MON_OUTCOME_FAILED, text);
		return;
	}
	if (m->type != reply_type(p->type)) {
		snprintf(text, sizeof(text), "vm-monitor answered %s with %s",
			 ag_mon_type_name(p->type), m->type_name);
		finish(c, p, AG_MON_OUTCOME_FAILED, text);
		return;
	}
	c->last_success = vmact_loop_now_usec(c->event);
	if (m->type == AG_MON_DOWNSCALE_RESULT)
		finish(c, p, m->ok ? AG_MON_OUTCOME_OK : AG_MON_OUTCOME_DENIED, m->status);
	else
		finish(c, p, AG_MON_OUTCOME_OK, "");
}

/* The Go agent fails a waiting call whose id comes back in a message that
 * is not its answer (InvalidMessage, unknown type) instead of letting it
 * time out. */
static void fail_waiter(struct ag_mon_client *c, uint64_t id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail_waiter(struct ag_mon_client *c, uint64_t id, const char *fmt, ...)
{
	struct pending *p = take_pending(c, id);
	char text[512];
	va_list ap;

	if (!p)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	finish(c, p, AG_MON_OUTCOME_FAILED, text);
}

static void handle_message(struct ag_mon_client *c, const uint8_t *buf, size_t len)
{
	struct ag_mon_msg m;
	struct vmact_err err = { 0 };
	struct pending *p;
	uint64_t t;
	int r;

	r = ag_mon_decode_text((const char *)buf, len, &m, &err);
	if (r == -EINVAL) {
		/* Known type, bad payload: tell the monitor, then give up on
		 * the connection as the Go agent's HandleMessage does. */
		send_invalid(c, m.id, "Error unmarshaling %s: %s", m.type_name, err.msg);
		fail(c, 1011, "invalid %s from vm-monitor: %s", m.type_name, err.msg);
		goto out;
	}
	if (r < 0) {
		fail(c, 1011, "invalid message from vm-monitor: %s", err.msg);
		goto out;
	}
	switch (m.type) {
	case AG_MON_UPSCALE_REQUEST:
		t = vmact_loop_now_usec(c->event);
		c->last_upscale_request = t;
		c->stats.upscale_requests++;
		if (c->cb.upscale_requested)
			c->cb.upscale_requested(c, t, c->userdata);
		break;
	case AG_MON_UPSCALE_CONFIRMATION:
	case AG_MON_DOWNSCALE_RESULT:
	case AG_MON_HEALTH_CHECK:
	case AG_MON_INTERNAL_ERROR:
		p = take_pending(c, m.id);
		if (p) {
			complete(c, p, &m);
			break;
		}
		/* A request's deadline passed (or the id is not ours): its
		 * answer changes nothing; said once per answer, so a slow
		 * monitor shows in the log. */
		logf_(c, LOG_WARNING,
		      "ignoring a late %s (id %llu): its request timed out or "
		      "was never sent",
		      m.type_name, (unsigned long long)m.id);
		/* The Go agent names InternalError "MonitorError" here. */
		send_invalid(c, m.id,
			     "Received %s with id %llu but id is unknown or already timed out "
			     "waiting for a reply",
			     m.type == AG_MON_INTERNAL_ERROR ? "MonitorError" : m.type_name,
			     (unsigned long long)m.id);
		break;
	case AG_MON_INVALID_MESSAGE:
		c->stats.invalid_received++;
		logf_(c, LOG_WARNING, "vm-monitor reports an invalid message (id %llu): %s",
		      (unsigned long long)m.id, m.error);
		fail_waiter(c, m.id, "vm-monitor rejected the request: %s", m.error);
		break;
	default:
		send_invalid(c, m.id, "Received message of unknown type: \"%s\"", m.type_name);
		fail_waiter(c, m.id, "vm-monitor answered with a message of unknown type \"%s\"",
			    m.type_name);
		break;
	}
out:
	ag_mon_msg_clear(&m);
}

static void handle_version(struct ag_mon_client *c, const uint8_t *buf, size_t len)
{
	_cleanup_(json_decrefp) json_t *v = NULL;
	struct vmact_err err = { 0 };
	json_error_t jerr;
	uint32_t version;

	v = json_loadb((const char *)buf, len, JSON_DECODE_ANY, &jerr);
	if (!v) {
		fail(c, 1002, "version response: not JSON: %s", jerr.text);
		return;
	}
	if (ag_mon_version_response_decode(v, &version, &err) < 0) {
		fail(c, 1002, "%s", err.msg);
		return;
	}
	c->state = AG_MON_CLIENT_CONNECTED;
	c->established = true;
	c->generation++;
	c->stats.connections++;
	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
	if (sd_event_add_time_relative(c->event, &c->health_timer, CLOCK_MONOTONIC,
				       c->cfg.health_interval_usec, TIMER_ACCURACY, on_health_tick,
				       c) < 0 ||
	    sd_event_source_set_enabled(c->health_timer, SD_EVENT_ON) < 0) {
		fail(c, 1011, "cannot arm the health check timer");
		return;
	}
	if (c->cb.connected)
		c->cb.connected(c, c->generation, c->userdata);
}

/* ---- the websocket underneath ------------------------------------------ */

static void on_ws_open(struct net_ws_client *ws, void *userdata)
{
	struct ag_mon_client *c = userdata;
	_cleanup_(json_decrefp) json_t *range = NULL;
	_cleanup_free_ char *text = NULL;

	c->state = AG_MON_CLIENT_NEGOTIATING;
	range = ag_mon_version_range_encode(AG_MON_PROTO_V1_0, AG_MON_PROTO_V1_0);
	text = range ? json_dumps(range, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (!text) {
		net_ws_client_drop(ws, 0, NULL, "out of memory");
		return;
	}
	if (net_ws_client_send_text(ws, text, strlen(text)) < 0)
		net_ws_client_drop(ws, 0, NULL, "cannot queue the version range");
}

static void on_ws_text(struct net_ws_client *ws, const uint8_t *buf, size_t len, void *userdata)
{
	struct ag_mon_client *c = userdata;

	if (c->state == AG_MON_CLIENT_NEGOTIATING)
		handle_version(c, buf, len);
	else if (c->state == AG_MON_CLIENT_CONNECTED)
		handle_message(c, buf, len);
}

static void on_ws_binary(struct net_ws_client *ws, const uint8_t *buf, size_t len, void *userdata)
{
	struct ag_mon_client *c = userdata;

	if (c->state == AG_MON_CLIENT_NEGOTIATING)
		fail(c, 1002, "expected a text frame with the protocol version");
	else if (c->state == AG_MON_CLIENT_CONNECTED)
		fail(c, 1003, "expected text message");
}

static void on_ws_closing(struct net_ws_client *ws, void *userdata)
{
	struct ag_mon_client *c = userdata;

	c->state = AG_MON_CLIENT_CLOSING;
	c->health_timer = sd_event_source_disable_unref(c->health_timer);
	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
}

static void on_ws_close_frame(struct net_ws_client *ws, bool sent, uint16_t code, void *userdata)
{
	struct ag_mon_client *c = userdata;

	if (sent)
		c->stats.last_close_sent = code;
	else
		c->stats.last_close_received = code;
}

static void schedule_retry(struct ag_mon_client *c);

static void on_ws_close(struct net_ws_client *ws, const char *reason, void *userdata)
{
	struct ag_mon_client *c = userdata;
	struct pending *list = c->pending;
	uint64_t gen = c->generation;
	bool was_established = c->established;
	char msg[256 + 64];

	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
	c->health_timer = sd_event_source_disable_unref(c->health_timer);
	c->pending = NULL;
	c->health_inflight = false;
	c->health_failing_since = 0;
	c->established = false;
	c->state = c->stopping ? AG_MON_CLIENT_STOPPED : AG_MON_CLIENT_WAITING;
	snprintf(c->stats.last_disconnect, sizeof(c->stats.last_disconnect), "%s", reason);

	snprintf(msg, sizeof(msg), "connection to vm-monitor lost: %s", reason);
	while (list) {
		struct pending *p = list;

		VMACT_LIST_REMOVE(pending, list, p);
		finish(c, p, AG_MON_OUTCOME_FAILED, msg);
	}
	if (was_established) {
		if (c->cb.disconnected)
			c->cb.disconnected(c, gen, reason, c->userdata);
	} else {
		logf_(c, LOG_WARNING, "connecting to vm-monitor failed: %s", reason);
	}
	/* A callback may have stopped the client meanwhile. */
	if (c->state == AG_MON_CLIENT_WAITING)
		schedule_retry(c);
}

static void on_ws_log(struct net_ws_client *ws, int priority, const char *msg, void *userdata)
{
	logf_(userdata, priority, "%s", msg);
}

static const struct net_ws_client_callbacks ws_callbacks = {
	.on_open = on_ws_open,
	.on_text = on_ws_text,
	.on_binary = on_ws_binary,
	.on_closing = on_ws_closing,
	.close_frame = on_ws_close_frame,
	.on_close = on_ws_close,
	.log = on_ws_log,
};

/* ---- connection attempts ----------------------------------------------- */

static int on_connect_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ag_mon_client *c = userdata;

	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
	if (c->state == AG_MON_CLIENT_CONNECTING || c->state == AG_MON_CLIENT_NEGOTIATING)
		fail(c, 1002, "timed out connecting to vm-monitor after %gs",
		     secs(c->cfg.connect_timeout_usec));
	return 0;
}

static void begin_attempt(struct ag_mon_client *c)
{
	c->attempt_started = vmact_loop_now_usec(c->event);
	c->next_attempt = 0;
	c->stats.attempts++;
	c->next_id = 0;
	c->state = AG_MON_CLIENT_CONNECTING;
	/* The connect timeout also covers the version negotiation. */
	if (sd_event_add_time_relative(c->event, &c->connect_timer, CLOCK_MONOTONIC,
				       c->cfg.connect_timeout_usec, TIMER_ACCURACY,
				       on_connect_timeout, c) < 0) {
		/* Reported like any failed attempt, through on_ws_close. */
		if (net_ws_client_connect(c->ws) == 0)
			net_ws_client_drop(c->ws, 0, NULL, "cannot register with the event loop");
		return;
	}
	net_ws_client_connect(c->ws);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ag_mon_client *c = userdata;

	c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
	if (c->state == AG_MON_CLIENT_WAITING)
		begin_attempt(c);
	return 0;
}

static void schedule_retry(struct ag_mon_client *c)
{
	uint64_t now = vmact_loop_now_usec(c->event), elapsed = now - c->attempt_started, delay = 0;

	/* Spacing is measured from the start of the previous attempt, so a
	 * connection that lived long enough is retried at once. */
	if (elapsed < c->cfg.retry_min_wait_usec)
		delay = c->cfg.retry_min_wait_usec - elapsed;
	c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
	c->next_attempt = now + delay;
	if (sd_event_add_time(c->event, &c->retry_timer, CLOCK_MONOTONIC, now + delay,
			      TIMER_ACCURACY, on_retry, c) < 0)
		logf_(c, LOG_ERR, "cannot schedule a reconnect to the vm-monitor");
}

/* ---- public ------------------------------------------------------------ */

int ag_mon_client_new(sd_event *event, const struct ag_mon_client_config *cfg,
		      const struct ag_mon_client_callbacks *cb, void *userdata,
		      struct ag_mon_client **out, struct vmact_err *err)
{
	_cleanup_(ag_mon_client_freep) struct ag_mon_client *c = NULL;
	struct net_ws_client_config wc;
	int r;

	if (!event || !cfg || !out)
		return vmact_err_set(err, EINVAL, "monitor client: missing argument");
	c = calloc(1, sizeof(*c));
	if (!c)
		return vmact_err_set(err, ENOMEM, "out of memory");
	c->state = AG_MON_CLIENT_IDLE;
	c->event = sd_event_ref(event);
	c->cfg = *cfg;
	/* The websocket client keeps its own copies of the strings. */
	c->cfg.host = c->cfg.unix_path = c->cfg.path = NULL;
	if (!c->cfg.port)
		c->cfg.port = AG_MON_DEFAULT_PORT;
	if (!c->cfg.connect_timeout_usec)
		c->cfg.connect_timeout_usec = 4 * USEC_PER_SEC;
	if (!c->cfg.response_timeout_usec)
		c->cfg.response_timeout_usec = 5 * USEC_PER_SEC;
	if (!c->cfg.health_interval_usec)
		c->cfg.health_interval_usec = 5 * USEC_PER_SEC;
	if (!c->cfg.health_max_failing_usec)
		c->cfg.health_max_failing_usec = 30 * USEC_PER_SEC;
	if (!c->cfg.retry_min_wait_usec)
		c->cfg.retry_min_wait_usec = 5 * USEC_PER_SEC;
	if (!c->cfg.close_timeout_usec)
		c->cfg.close_timeout_usec = 5 * USEC_PER_SEC;
	if (cb)
		c->cb = *cb;
	c->userdata = userdata;
	wc = (struct net_ws_client_config){
		.host = cfg->host,
		.port = c->cfg.port,
		.unix_path = cfg->unix_path,
		.path = cfg->path ? cfg->path : AG_MON_PATH,
		.peer = "vm-monitor",
		.close_timeout_usec = c->cfg.close_timeout_usec,
		.max_message = MAX_MESSAGE,
		.dial = cfg->dial,
		.dial_ud = cfg->dial_ud,
	};
	r = net_ws_client_new(event, &wc, &ws_callbacks, c, &c->ws, err);
	if (r < 0) {
		vmact_err_prefix(err, "monitor client");
		return r;
	}
	*out = TAKE_PTR(c);
	return 0;
}

int ag_mon_client_start(struct ag_mon_client *c, struct vmact_err *err)
{
	if (c->state != AG_MON_CLIENT_IDLE)
		return vmact_err_set(err, EALREADY, "monitor client already started");
	begin_attempt(c);
	return 0;
}

void ag_mon_client_stop(struct ag_mon_client *c)
{
	if (!c || c->state == AG_MON_CLIENT_STOPPED)
		return;
	c->stopping = true;
	c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
	if (!c->ws || net_ws_client_state(c->ws) == NET_WS_CLOSED) {
		c->state = AG_MON_CLIENT_STOPPED;
		return;
	}
	/* Says goodbye, then tears down (at once, unless called from a
	 * callback: then once it returns). */
	net_ws_client_drop(c->ws, 1000, "normal exit", "client stopped");
}

void ag_mon_client_free(struct ag_mon_client *c)
{
	if (!c)
		return;
	ag_mon_client_stop(c);
	/* A stop requested from inside a callback is finished here. */
	net_ws_client_free(c->ws);
	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
	c->health_timer = sd_event_source_disable_unref(c->health_timer);
	c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
	sd_event_unref(c->event);
	free(c);
}

enum ag_mon_client_state ag_mon_client_state(const struct ag_mon_client *c)
{
	return c->state;
}

const char *ag_mon_client_state_name(enum ag_mon_client_state s)
{
	static const char *const names[] = {
		[AG_MON_CLIENT_IDLE] = "idle",
		[AG_MON_CLIENT_CONNECTING] = "connecting",
		[AG_MON_CLIENT_NEGOTIATING] = "negotiating",
		[AG_MON_CLIENT_CONNECTED] = "connected",
		[AG_MON_CLIENT_CLOSING] = "closing",
		[AG_MON_CLIENT_WAITING] = "waiting to reconnect",
		[AG_MON_CLIENT_STOPPED] = "stopped",
	};

	return (size_t)s < ARRAY_SIZE(names) ? names[s] : "?";
}

uint64_t ag_mon_client_generation(const struct ag_mon_client *c)
{
	return c->generation;
}

unsigned ag_mon_client_pending(const struct ag_mon_client *c)
{
	unsigned n = 0;

	const struct pending *p;

	VMACT_LIST_FOREACH(pending, p, c->pending)
		n++;
	return n;
}

uint64_t ag_mon_client_last_upscale_request(const struct ag_mon_client *c)
{
	return c->last_upscale_request;
}

uint64_t ag_mon_client_last_success(const struct ag_mon_client *c)
{
	return c->last_success;
}

const struct ag_mon_client_stats *ag_mon_client_stats(const struct ag_mon_client *c)
{
	return &c->stats;
}

uint64_t ag_mon_client_attempt_started(const struct ag_mon_client *c)
{
	return c->attempt_started;
}

uint64_t ag_mon_client_next_attempt(const struct ag_mon_client *c)
{
	return c->state == AG_MON_CLIENT_WAITING ? c->next_attempt : 0;
}
