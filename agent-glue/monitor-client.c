/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/monitor-client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <wslay/wslay.h>

#include "agent-glue/monitor.h"
#include "base/list.h"
#include "base/time.h"

#define USEC_PER_SEC 1000000ull
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* Bounds on what a peer can make us buffer. */
#define MAX_UPGRADE_RESPONSE 8192
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
	char *host, *unix_path, *path;
	struct ag_mon_client_callbacks cb;
	void *userdata;

	enum ag_mon_client_state state;
	int fd;
	sd_event_source *io, *connect_timer, *health_timer, *retry_timer, *close_timer, *kick;
	wslay_event_context_ptr ws;
	/* Nesting depth of wslay_event_recv: the context must not be freed
	 * from inside its own callbacks. */
	unsigned in_ws;
	bool in_teardown, stopping, established, lost;
	/* stop() queued a close frame that process() still has to push out. */
	bool goodbye;
	char reason[256];
	/* wslay sends control frames ahead of queued data: a close requested
	 * behind a message (InvalidMessage then 1011) waits for the queue. */
	bool close_deferred;
	uint16_t close_code;
	char close_msg[124];

	/* HTTP upgrade. */
	char *req;
	size_t req_len, req_off;
	char resp[MAX_UPGRADE_RESPONSE + 1];
	size_t resp_len;
	char accept[AG_MON_WS_ACCEPT_LEN + 1];
	/* Bytes that arrived behind the 101 response: the first frames. */
	uint8_t *early;
	size_t early_len, early_off;

	uint64_t next_id, generation, attempt_started, next_attempt;
	struct pending *pending;
	bool health_inflight;
	uint64_t health_failing_since, last_success, last_upscale_request;
	struct ag_mon_client_stats stats;
};

static void process(struct ag_mon_client *c);

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

/* The first cause of a connection's end is the one worth reporting. */
static void set_reason(struct ag_mon_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_reason(struct ag_mon_client *c, const char *fmt, ...)
{
	va_list ap;

	if (c->reason[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
}

#define lost(c, ...)                          \
	do {                                  \
		set_reason((c), __VA_ARGS__); \
		(c)->lost = true;             \
	} while (0)

static void kick(struct ag_mon_client *c)
{
	if (c->kick)
		sd_event_source_set_enabled(c->kick, SD_EVENT_ONESHOT);
}

static double secs(uint64_t usec)
{
	return (double)usec / (double)USEC_PER_SEC;
}

/* ---- failing a connection ------------------------------------------- */

static int on_close_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ag_mon_client *c = userdata;

	lost(c, "vm-monitor did not complete the close handshake");
	process(c);
	return 0;
}

/* Starts the websocket close handshake with `code`; the connection is torn
 * down when the peer answers or after close_timeout. Safe inside wslay
 * callbacks. */
static void fail(struct ag_mon_client *c, uint16_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct ag_mon_client *c, uint16_t code, const char *fmt, ...)
{
	char msg[256];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	set_reason(c, "%s", msg);
	if (!c->ws || c->state == AG_MON_CLIENT_CLOSING) {
		if (!c->ws)
			c->lost = true;
		kick(c);
		return;
	}
	/* A close reason must fit 123 bytes; cut on a UTF-8 boundary. */
	n = strlen(msg);
	if (n > 120) {
		n = 120;
		while (n > 0 && ((unsigned char)msg[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(c->close_msg, msg, n);
	c->close_msg[n] = '\0';
	c->close_code = code;
	c->close_deferred = true;
	c->state = AG_MON_CLIENT_CLOSING;
	c->health_timer = sd_event_source_disable_unref(c->health_timer);
	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
	if (sd_event_add_time_relative(c->event, &c->close_timer, CLOCK_MONOTONIC,
				       c->cfg.close_timeout_usec, TIMER_ACCURACY, on_close_timeout, c) < 0)
		c->lost = true;
	kick(c);
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
	struct wslay_event_msg wm;

	if (!text)
		return vmact_err_set(err, e.code, "%s", e.msg);
	wm.opcode = WSLAY_TEXT_FRAME;
	wm.msg = (const uint8_t *)text;
	wm.msg_length = strlen(text);
	/* wslay copies the message. */
	if (!c->ws || wslay_event_queue_msg(c->ws, &wm) < 0)
		return vmact_err_set(err, ENOTCONN, "vm-monitor connection is closing");
	kick(c);
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
	process(c);
	return 0;
}

static int request(struct ag_mon_client *c, enum ag_mon_type type, const struct vmact_resources *alloc,
		   ag_mon_done_fn *done, void *userdata, uint64_t *id_out, struct vmact_err *err)
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
			    ag_mon_done_fn *done, void *userdata, uint64_t *id, struct vmact_err *err)
{
	if (!target)
		return vmact_err_set(err, EINVAL, "DownscaleRequest: target: missing");
	return request(c, AG_MON_DOWNSCALE_REQUEST, target, done, userdata, id, err);
}

int ag_mon_client_send_raw(struct ag_mon_client *c, const char *text, struct vmact_err *err)
{
	struct wslay_event_msg wm = {
		.opcode = WSLAY_TEXT_FRAME,
		.msg = (const uint8_t *)text,
		.msg_length = strlen(text),
	};

	if (c->state != AG_MON_CLIENT_CONNECTED)
		return vmact_err_set(err, ENOTCONN, "not connected to the vm-monitor (%s)",
				     ag_mon_client_state_name(c->state));
	if (wslay_event_queue_msg(c->ws, &wm) < 0)
		return vmact_err_set(err, ENOTCONN, "vm-monitor connection is closing");
	kick(c);
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
		snprintf(text, sizeof(text), "vm-monitor answered %s with %s", ag_mon_type_name(p->type),
			 m->type_name);
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
		if (p)
			complete(c, p, &m);
		else
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
				       c->cfg.health_interval_usec, TIMER_ACCURACY, on_health_tick, c) < 0 ||
	    sd_event_source_set_enabled(c->health_timer, SD_EVENT_ON) < 0) {
		fail(c, 1011, "cannot arm the health check timer");
		return;
	}
	if (c->cb.connected)
		c->cb.connected(c, c->generation, c->userdata);
}

static void on_ws_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
		      void *userdata)
{
	struct ag_mon_client *c = userdata;

	switch (arg->opcode) {
	case WSLAY_CONNECTION_CLOSE:
		c->stats.last_close_received = arg->status_code;
		set_reason(c, "vm-monitor closed the connection (status %u%s%.*s)", arg->status_code,
			   arg->msg_length > 2 ? ": " : "",
			   arg->msg_length > 2 ? (int)(arg->msg_length - 2) : 0,
			   arg->msg_length > 2 ? (const char *)arg->msg + 2 : "");
		return;
	case WSLAY_PING:
	case WSLAY_PONG:
		return; /* wslay answers pings itself */
	case WSLAY_TEXT_FRAME:
		break;
	default:
		if (c->state == AG_MON_CLIENT_NEGOTIATING)
			fail(c, 1002, "expected a text frame with the protocol version");
		else if (c->state == AG_MON_CLIENT_CONNECTED)
			fail(c, 1003, "expected text message");
		return;
	}
	if (c->state == AG_MON_CLIENT_NEGOTIATING)
		handle_version(c, arg->msg, arg->msg_length);
	else if (c->state == AG_MON_CLIENT_CONNECTED)
		handle_message(c, arg->msg, arg->msg_length);
	/* CLOSING: whatever still arrives is dropped. */
}

/* ---- wslay I/O -------------------------------------------------------- */

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
		       void *userdata)
{
	struct ag_mon_client *c = userdata;
	ssize_t n;

	if (c->early_off < c->early_len) {
		size_t k = c->early_len - c->early_off;

		if (k > len)
			k = len;
		memcpy(buf, c->early + c->early_off, k);
		c->early_off += k;
		return (ssize_t)k;
	}
	n = read(c->fd, buf, len);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (n == 0)
		set_reason(c, "vm-monitor connection closed without a close frame");
	else
		set_reason(c, "read from vm-monitor: %s", strerror(errno));
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *userdata)
{
	struct ag_mon_client *c = userdata;
	ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);

	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	set_reason(c, "write to vm-monitor: %s", strerror(errno));
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static int ws_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *userdata)
{
	/* Masking only defeats proxy cache poisoning; never block for it. */
	if (getrandom(buf, len, GRND_NONBLOCK) != (ssize_t)len) {
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rand();
	}
	return 0;
}

static const struct wslay_event_callbacks ws_callbacks = {
	.recv_callback = ws_recv,
	.send_callback = ws_send,
	.genmask_callback = ws_genmask,
	.on_msg_recv_callback = on_ws_msg,
};

static void ws_receive(struct ag_mon_client *c)
{
	int r;

	c->in_ws++;
	r = wslay_event_recv(c->ws);
	c->in_ws--;
	if (r < 0)
		lost(c, "websocket receive failed");
}

/* ---- HTTP/1.1 upgrade ------------------------------------------------- */

_Static_assert(BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) == AG_MON_WS_ACCEPT_LEN,
	       "accept length");

void ag_mon_ws_accept(const char *key, char out[AG_MON_WS_ACCEPT_LEN + 1])
{
	uint8_t digest[SHA1_DIGEST_SIZE];
	struct sha1_ctx sha;

	sha1_init(&sha);
	sha1_update(&sha, strlen(key), (const uint8_t *)key);
	sha1_update(&sha, strlen(WS_GUID), (const uint8_t *)WS_GUID);
	sha1_digest(&sha, sizeof(digest), digest);
	base64_encode_raw(out, sizeof(digest), digest);
	out[AG_MON_WS_ACCEPT_LEN] = '\0';
}

static int build_upgrade(struct ag_mon_client *c)
{
	uint8_t nonce[16];
	char key[BASE64_ENCODE_RAW_LENGTH(sizeof(nonce)) + 1], hostbuf[300];
	int n;

	if (getrandom(nonce, sizeof(nonce), GRND_NONBLOCK) != (ssize_t)sizeof(nonce))
		for (size_t i = 0; i < sizeof(nonce); i++)
			nonce[i] = (uint8_t)rand();
	base64_encode_raw(key, sizeof(nonce), nonce);
	key[sizeof(key) - 1] = '\0';
	ag_mon_ws_accept(key, c->accept);

	if (c->unix_path)
		snprintf(hostbuf, sizeof(hostbuf), "localhost");
	else if (strchr(c->host, ':'))
		snprintf(hostbuf, sizeof(hostbuf), "[%s]:%u", c->host, c->cfg.port);
	else
		snprintf(hostbuf, sizeof(hostbuf), "%s:%u", c->host, c->cfg.port);
	n = asprintf(&c->req,
		     "GET %s HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Upgrade: websocket\r\n"
		     "Connection: Upgrade\r\n"
		     "Sec-WebSocket-Key: %s\r\n"
		     "Sec-WebSocket-Version: 13\r\n"
		     "\r\n",
		     c->path, hostbuf, key);
	if (n < 0) {
		c->req = NULL;
		return -ENOMEM;
	}
	c->req_len = (size_t)n;
	c->req_off = 0;
	return 0;
}

static bool has_token(const char *value, const char *token)
{
	size_t tl = strlen(token);

	for (const char *p = value; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		while (len && (*p == ' ' || *p == '\t'))
			p++, len--;
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == tl && strncasecmp(p, token, tl) == 0)
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

int ag_mon_ws_check_upgrade(char *head, const char *accept_want, struct vmact_err *err)
{
	char *save = NULL, *line;
	bool upgrade = false, connection = false, accept = false;

	line = strtok_r(head, "\r\n", &save);
	if (!line || strncmp(line, "HTTP/1.1 101", 12) != 0 || (line[12] != ' ' && line[12] != '\0'))
		return vmact_err_set(err, EPROTO, "websocket upgrade refused: %.200s",
				     line ? line : "(empty response)");
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		char *colon = strchr(line, ':'), *v;

		if (!colon)
			continue;
		*colon = '\0';
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		for (size_t n = strlen(v); n && (v[n - 1] == ' ' || v[n - 1] == '\t'); n--)
			v[n - 1] = '\0';
		if (strcasecmp(line, "Upgrade") == 0)
			upgrade = has_token(v, "websocket");
		else if (strcasecmp(line, "Connection") == 0)
			connection = has_token(v, "upgrade");
		else if (strcasecmp(line, "Sec-WebSocket-Accept") == 0)
			accept = strcmp(v, accept_want) == 0;
		else if (strcasecmp(line, "Sec-WebSocket-Extensions") == 0 ||
			 strcasecmp(line, "Sec-WebSocket-Protocol") == 0)
			return vmact_err_set(err, EPROTO,
					     "websocket upgrade: server chose %.64s we did not offer", line);
	}
	if (!upgrade || !connection || !accept)
		return vmact_err_set(err, EPROTO, "websocket upgrade: %s header missing or wrong",
				     !upgrade ? "Upgrade" : !connection ? "Connection" : "Sec-WebSocket-Accept");
	return 0;
}

static void start_websocket(struct ag_mon_client *c)
{
	_cleanup_(json_decrefp) json_t *range = NULL;
	_cleanup_free_ char *text = NULL;
	struct wslay_event_msg wm;

	if (wslay_event_context_client_init(&c->ws, &ws_callbacks, c) != 0) {
		c->ws = NULL;
		lost(c, "out of memory");
		return;
	}
	wslay_event_config_set_max_recv_msg_length(c->ws, MAX_MESSAGE);
	c->state = AG_MON_CLIENT_NEGOTIATING;
	range = ag_mon_version_range_encode(AG_MON_PROTO_V1_0, AG_MON_PROTO_V1_0);
	text = range ? json_dumps(range, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (!text) {
		lost(c, "out of memory");
		return;
	}
	wm.opcode = WSLAY_TEXT_FRAME;
	wm.msg = (const uint8_t *)text;
	wm.msg_length = strlen(text);
	if (wslay_event_queue_msg(c->ws, &wm) != 0) {
		lost(c, "cannot queue the version range");
		return;
	}
	if (c->early_len)
		ws_receive(c);
}

static void read_upgrade(struct ag_mon_client *c)
{
	struct vmact_err err = { 0 };
	char *end;
	ssize_t n;
	size_t head_len;

	n = read(c->fd, c->resp + c->resp_len, MAX_UPGRADE_RESPONSE - c->resp_len);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			lost(c, "read from vm-monitor during upgrade: %s", strerror(errno));
		return;
	}
	if (n == 0) {
		lost(c, "vm-monitor closed the connection during the websocket upgrade");
		return;
	}
	c->resp_len += (size_t)n;
	c->resp[c->resp_len] = '\0';
	end = memmem(c->resp, c->resp_len, "\r\n\r\n", 4);
	if (!end) {
		if (c->resp_len == MAX_UPGRADE_RESPONSE)
			lost(c, "websocket upgrade response longer than %d bytes", MAX_UPGRADE_RESPONSE);
		return;
	}
	head_len = (size_t)(end - c->resp);
	if (c->resp_len > head_len + 4) {
		c->early_len = c->resp_len - head_len - 4;
		c->early = malloc(c->early_len);
		if (!c->early) {
			lost(c, "out of memory");
			return;
		}
		memcpy(c->early, end + 4, c->early_len);
		c->early_off = 0;
		logf_(c, LOG_DEBUG, "%zu bytes of frames arrived with the upgrade response",
		      c->early_len);
	}
	*end = '\0';
	if (ag_mon_ws_check_upgrade(c->resp, c->accept, &err) < 0) {
		lost(c, "%s", err.msg);
		return;
	}
	start_websocket(c);
}

/* ---- connection lifecycle -------------------------------------------- */

static void update_io(struct ag_mon_client *c)
{
	uint32_t ev = 0;

	if (!c->io)
		return;
	if (c->state == AG_MON_CLIENT_CONNECTING) {
		ev = (!c->req || c->req_off < c->req_len) ? EPOLLOUT : EPOLLIN;
	} else if (c->ws) {
		if (wslay_event_want_read(c->ws))
			ev |= EPOLLIN;
		if (wslay_event_want_write(c->ws))
			ev |= EPOLLOUT;
	}
	sd_event_source_set_io_events(c->io, ev);
}

static void schedule_retry(struct ag_mon_client *c);

static void teardown(struct ag_mon_client *c)
{
	struct pending *list = c->pending;
	uint64_t gen = c->generation;
	bool was_established = c->established;
	char reason[sizeof(c->reason)];
	char msg[sizeof(c->reason) + 64];

	c->in_teardown = true;
	snprintf(reason, sizeof(reason), "%s", c->reason[0] ? c->reason : "connection closed");
	c->io = sd_event_source_disable_unref(c->io);
	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
	c->health_timer = sd_event_source_disable_unref(c->health_timer);
	c->close_timer = sd_event_source_disable_unref(c->close_timer);
	if (c->ws)
		wslay_event_context_free(c->ws);
	c->ws = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->req);
	c->req = NULL;
	free(c->early);
	c->early = NULL;
	c->early_len = c->early_off = c->resp_len = 0;
	c->pending = NULL;
	c->health_inflight = false;
	c->health_failing_since = 0;
	c->established = false;
	c->lost = false;
	c->close_deferred = false;
	c->goodbye = false;
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
	c->in_teardown = false;
	/* A callback may have stopped the client meanwhile. */
	if (c->state == AG_MON_CLIENT_WAITING)
		schedule_retry(c);
}

/* After any event: flush queued frames, then tear down what is finished. */
static void process(struct ag_mon_client *c)
{
	if (c->in_ws || c->in_teardown)
		return;
	if (c->ws && !c->lost && wslay_event_want_write(c->ws) && wslay_event_send(c->ws) < 0)
		lost(c, "websocket send failed");
	if (c->ws && !c->lost && c->close_deferred && wslay_event_get_queued_msg_count(c->ws) == 0) {
		c->close_deferred = false;
		if (wslay_event_queue_close(c->ws, c->close_code, (const uint8_t *)c->close_msg,
					    strlen(c->close_msg)) < 0) {
			c->lost = true;
		} else {
			c->stats.last_close_sent = c->close_code;
			if (wslay_event_send(c->ws) < 0)
				lost(c, "websocket send failed");
		}
	}
	if (c->lost) {
		if (c->goodbye && c->ws && wslay_event_want_write(c->ws))
			wslay_event_send(c->ws); /* best effort, non-blocking */
		teardown(c);
		return;
	}
	/* A close we did not ask for: wslay's answer to a framing violation
	 * (1002, 1007, 1009). It stops reading at once; if it still waits for
	 * the peer, bound that wait like any close. */
	if (c->ws && c->state != AG_MON_CLIENT_CLOSING && wslay_event_get_close_sent(c->ws) &&
	    !wslay_event_get_close_received(c->ws)) {
		c->stats.last_close_sent = wslay_event_get_status_code_sent(c->ws);
		set_reason(c, "websocket protocol violation by the vm-monitor (closed with %u)",
			   c->stats.last_close_sent);
		c->state = AG_MON_CLIENT_CLOSING;
		c->health_timer = sd_event_source_disable_unref(c->health_timer);
		c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
		if (sd_event_add_time_relative(c->event, &c->close_timer, CLOCK_MONOTONIC,
					       c->cfg.close_timeout_usec, TIMER_ACCURACY,
					       on_close_timeout, c) < 0) {
			teardown(c);
			return;
		}
	}
	if (c->ws && !wslay_event_want_read(c->ws) && !wslay_event_want_write(c->ws)) {
		set_reason(c, "websocket closed");
		teardown(c);
		return;
	}
	update_io(c);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ag_mon_client *c = userdata;

	if (c->state == AG_MON_CLIENT_CONNECTING) {
		if (!c->req) {
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
				soerr = errno;
			if (soerr) {
				lost(c, "connect to vm-monitor: %s", strerror(soerr));
				goto out;
			}
			if (build_upgrade(c) < 0) {
				lost(c, "out of memory");
				goto out;
			}
		}
		if (c->req_off < c->req_len) {
			ssize_t n = send(fd, c->req + c->req_off, c->req_len - c->req_off, MSG_NOSIGNAL);

			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				lost(c, "write to vm-monitor during upgrade: %s", strerror(errno));
			else if (n > 0)
				c->req_off += (size_t)n;
		} else if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
			read_upgrade(c);
		}
	} else if (c->ws && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		ws_receive(c);
	}
out:
	process(c);
	return 0;
}

static int on_connect_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ag_mon_client *c = userdata;

	c->connect_timer = sd_event_source_disable_unref(c->connect_timer);
	if (c->state == AG_MON_CLIENT_CONNECTING || c->state == AG_MON_CLIENT_NEGOTIATING)
		fail(c, 1002, "timed out connecting to vm-monitor after %gs",
		     secs(c->cfg.connect_timeout_usec));
	process(c);
	return 0;
}

static int open_socket(struct ag_mon_client *c, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;

	if (c->unix_path) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if (strlen(c->unix_path) >= sizeof(sa.sun_path))
			return vmact_err_set(err, ENAMETOOLONG, "unix socket path too long: %s", c->unix_path);
		strcpy(sa.sun_path, c->unix_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return vmact_err_set(err, errno, "socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS &&
		    errno != EAGAIN)
			return vmact_err_set(err, errno, "connect to %s: %s", c->unix_path, strerror(errno));
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
		char port[8];
		int r, saved = 0;

		snprintf(port, sizeof(port), "%u", c->cfg.port);
		r = getaddrinfo(c->host, port, &hints, &ai);
		if (r != 0)
			return vmact_err_set(err, EHOSTUNREACH, "resolve %s: %s", c->host, gai_strerror(r));
		/* Addresses that fail at once (loopback refusals, no IPv6) make
		 * room for the next; one still in progress is this attempt's. */
		for (struct addrinfo *a = ai; a; a = a->ai_next) {
			closep(&fd);
			fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				saved = errno;
				continue;
			}
			if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
				saved = 0;
				break;
			}
			saved = errno;
		}
		freeaddrinfo(ai);
		if (saved || fd < 0)
			return vmact_err_set(err, saved ? saved : EHOSTUNREACH, "connect to %s:%s: %s",
					     c->host, port, strerror(saved ? saved : EHOSTUNREACH));
	}
	return TAKE_FD(fd);
}

static void begin_attempt(struct ag_mon_client *c)
{
	struct vmact_err err = { 0 };
	int fd;

	c->attempt_started = vmact_loop_now_usec(c->event);
	c->next_attempt = 0;
	c->stats.attempts++;
	c->reason[0] = '\0';
	c->lost = false;
	c->next_id = 0;
	c->state = AG_MON_CLIENT_CONNECTING;
	fd = open_socket(c, &err);
	if (fd < 0) {
		lost(c, "%s", err.msg);
	} else {
		c->fd = fd;
		if (sd_event_add_io(c->event, &c->io, fd, EPOLLOUT, on_io, c) < 0 ||
		    sd_event_add_time_relative(c->event, &c->connect_timer, CLOCK_MONOTONIC,
					       c->cfg.connect_timeout_usec, TIMER_ACCURACY,
					       on_connect_timeout, c) < 0)
			lost(c, "cannot register with the event loop");
	}
	process(c);
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
	if (sd_event_add_time(c->event, &c->retry_timer, CLOCK_MONOTONIC, now + delay, TIMER_ACCURACY,
			      on_retry, c) < 0)
		logf_(c, LOG_ERR, "cannot schedule a reconnect to the vm-monitor");
}

static int on_kick(sd_event_source *s, void *userdata)
{
	process(userdata);
	return 0;
}

/* ---- public ------------------------------------------------------------ */

int ag_mon_client_new(sd_event *event, const struct ag_mon_client_config *cfg,
		      const struct ag_mon_client_callbacks *cb, void *userdata,
		      struct ag_mon_client **out, struct vmact_err *err)
{
	_cleanup_(ag_mon_client_freep) struct ag_mon_client *c = NULL;
	int r;

	if (!event || !cfg || !out)
		return vmact_err_set(err, EINVAL, "monitor client: missing argument");
	if (!!cfg->host == !!cfg->unix_path)
		return vmact_err_set(err, EINVAL, "monitor client: exactly one of host and unix_path");
	if ((cfg->host && !*cfg->host) || (cfg->unix_path && !*cfg->unix_path))
		return vmact_err_set(err, EINVAL, "monitor client: empty host or unix_path");
	if (cfg->path && cfg->path[0] != '/')
		return vmact_err_set(err, EINVAL, "monitor client: path must start with '/'");
	c = calloc(1, sizeof(*c));
	if (!c)
		return vmact_err_set(err, ENOMEM, "out of memory");
	c->fd = -1;
	c->state = AG_MON_CLIENT_IDLE;
	c->event = sd_event_ref(event);
	c->cfg = *cfg;
	c->host = cfg->host ? strdup(cfg->host) : NULL;
	c->unix_path = cfg->unix_path ? strdup(cfg->unix_path) : NULL;
	c->path = strdup(cfg->path ? cfg->path : AG_MON_PATH);
	if ((cfg->host && !c->host) || (cfg->unix_path && !c->unix_path) || !c->path)
		return vmact_err_set(err, ENOMEM, "out of memory");
	c->cfg.host = c->host;
	c->cfg.unix_path = c->unix_path;
	c->cfg.path = c->path;
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
	r = sd_event_add_defer(event, &c->kick, on_kick, c);
	if (r < 0)
		return vmact_err_set(err, -r, "monitor client: event source: %s", strerror(-r));
	sd_event_source_set_enabled(c->kick, SD_EVENT_OFF);
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
	if (c->fd < 0 && !c->ws) {
		c->state = AG_MON_CLIENT_STOPPED;
		return;
	}
	if (c->ws && c->state != AG_MON_CLIENT_CLOSING &&
	    wslay_event_queue_close(c->ws, 1000, (const uint8_t *)"normal exit", 11) == 0) {
		c->stats.last_close_sent = 1000;
		c->goodbye = true;
	}
	lost(c, "client stopped");
	if (c->in_ws || c->in_teardown)
		kick(c);
	else
		process(c); /* says goodbye, then tears down */
}

void ag_mon_client_free(struct ag_mon_client *c)
{
	if (!c)
		return;
	ag_mon_client_stop(c);
	/* A stop requested from inside wslay is finished here. */
	if (c->fd >= 0 || c->ws)
		teardown(c);
	c->kick = sd_event_source_disable_unref(c->kick);
	c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
	sd_event_unref(c->event);
	free(c->host);
	free(c->unix_path);
	free(c->path);
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
