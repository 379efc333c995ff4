/* SPDX-License-Identifier: Apache-2.0 */
#include "net/ws-client.h"

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
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <wslay/wslay.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* Bounds on what a peer can make us buffer. */
#define MAX_UPGRADE_RESPONSE 8192
/* What the peer has not read yet, beyond the socket buffer. A peer that
 * makes us answer (pings, invalid messages) and never reads would grow the
 * queue without end; past these it is dropped (README, "Reliability and
 * security"). The vm-monitor protocol has a handful of messages in flight. */
#define MAX_QUEUED_MSGS  1024
#define MAX_QUEUED_BYTES (1024 * 1024)
/* Timer slack: the tests run with intervals of tens of milliseconds. */
#define TIMER_ACCURACY 1000

struct net_ws_client {
	sd_event *event;
	struct net_ws_client_config cfg;
	char *host, *unix_path, *path, *peer;
	struct net_ws_client_callbacks cb;
	void *userdata;

	enum net_ws_client_state state;
	int fd;
	sd_event_source *io, *close_timer, *kick;
	wslay_event_context_ptr ws;
	/* Nesting depth of wslay_event_recv and of our callbacks: the context
	 * must not be freed from inside them, so calls made there only kick. */
	unsigned busy;
	bool in_teardown, lost;
	/* drop() queued a close frame that process() still has to push out. */
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
	char accept[NET_WS_ACCEPT_LEN + 1];
	/* Bytes that arrived behind the 101 response: the first frames. */
	uint8_t *early;
	size_t early_len, early_off;
};

static void process(struct net_ws_client *ws);

static void logf_(struct net_ws_client *ws, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void logf_(struct net_ws_client *ws, int prio, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!ws->cb.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ws->cb.log(ws, prio, buf, ws->userdata);
}

/* The first cause of a connection's end is the one worth reporting. */
static void set_reason(struct net_ws_client *ws, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_reason(struct net_ws_client *ws, const char *fmt, ...)
{
	va_list ap;

	if (ws->reason[0])
		return;
	va_start(ap, fmt);
	vsnprintf(ws->reason, sizeof(ws->reason), fmt, ap);
	va_end(ap);
}

#define lost(ws, ...)                          \
	do {                                   \
		set_reason((ws), __VA_ARGS__); \
		(ws)->lost = true;             \
	} while (0)

static void close_frame(struct net_ws_client *ws, bool sent, uint16_t code)
{
	if (ws->cb.close_frame)
		ws->cb.close_frame(ws, sent, code, ws->userdata);
}

static void kick(struct net_ws_client *ws)
{
	if (ws->kick)
		sd_event_source_set_enabled(ws->kick, SD_EVENT_ONESHOT);
}

/* After a call from outside: act now unless inside wslay or a callback. */
static void settle(struct net_ws_client *ws)
{
	if (ws->busy || ws->in_teardown)
		kick(ws);
	else
		process(ws);
}

/* ---- closing ----------------------------------------------------------- */

static int on_close_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct net_ws_client *ws = userdata;

	lost(ws, "%s did not complete the close handshake", ws->peer);
	process(ws);
	return 0;
}

/* OPEN -> CLOSING: the peer's close frame is waited for, within bounds. */
static int begin_closing(struct net_ws_client *ws)
{
	ws->state = NET_WS_CLOSING;
	if (ws->cb.on_closing) {
		ws->busy++;
		ws->cb.on_closing(ws, ws->userdata);
		ws->busy--;
	}
	return sd_event_add_time_relative(ws->event, &ws->close_timer, CLOCK_MONOTONIC,
					  ws->cfg.close_timeout_usec, TIMER_ACCURACY,
					  on_close_timeout, ws);
}

void net_ws_client_close(struct net_ws_client *ws, uint16_t code, const char *reason)
{
	size_t n;

	if (ws->state == NET_WS_CLOSED)
		return;
	set_reason(ws, "%s", reason);
	if (!ws->ws || ws->state == NET_WS_CLOSING) {
		if (!ws->ws)
			ws->lost = true;
		settle(ws);
		return;
	}
	/* A close reason must fit 123 bytes; cut on a UTF-8 boundary. */
	n = strlen(reason);
	if (n > 120) {
		n = 120;
		while (n > 0 && ((unsigned char)reason[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(ws->close_msg, reason, n);
	ws->close_msg[n] = '\0';
	ws->close_code = code;
	ws->close_deferred = true;
	if (begin_closing(ws) < 0)
		ws->lost = true;
	settle(ws);
}

void net_ws_client_drop(struct net_ws_client *ws, uint16_t code, const char *text,
			const char *reason)
{
	if (ws->state == NET_WS_CLOSED)
		return;
	if (code && ws->ws && ws->state == NET_WS_OPEN &&
	    wslay_event_queue_close(ws->ws, code, (const uint8_t *)text, text ? strlen(text) : 0) ==
		    0) {
		close_frame(ws, true, code);
		ws->goodbye = true;
	}
	lost(ws, "%s", reason);
	settle(ws); /* says goodbye, then tears down */
}

/* ---- wslay I/O --------------------------------------------------------- */

/* True (and the reason set) when the peer lets our queue grow past the
 * bounds. */
static bool queue_over(struct net_ws_client *ws)
{
	size_t n = wslay_event_get_queued_msg_count(ws->ws);
	size_t len = wslay_event_get_queued_msg_length(ws->ws);

	if (n <= MAX_QUEUED_MSGS && len <= MAX_QUEUED_BYTES)
		return false;
	set_reason(ws, "the %s does not read what is sent to it (%zu messages, %zu bytes queued)",
		   ws->peer, n, len);
	return true;
}

static void on_ws_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
		      void *userdata)
{
	struct net_ws_client *ws = userdata;

	switch (arg->opcode) {
	case WSLAY_CONNECTION_CLOSE:
		close_frame(ws, false, arg->status_code);
		set_reason(ws, "%s closed the connection (status %u%s%.*s)", ws->peer,
			   arg->status_code, arg->msg_length > 2 ? ": " : "",
			   arg->msg_length > 2 ? (int)(arg->msg_length - 2) : 0,
			   arg->msg_length > 2 ? (const char *)arg->msg + 2 : "");
		return;
	case WSLAY_PING:
	case WSLAY_PONG:
		return; /* wslay answers pings itself */
	default:
		break;
	}
	/* CLOSING: whatever still arrives is dropped. */
	if (ws->state != NET_WS_OPEN)
		return;
	if (arg->opcode == WSLAY_TEXT_FRAME) {
		if (ws->cb.on_text)
			ws->cb.on_text(ws, arg->msg, arg->msg_length, ws->userdata);
	} else if (ws->cb.on_binary) {
		ws->cb.on_binary(ws, arg->msg, arg->msg_length, ws->userdata);
	}
}

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
		       void *userdata)
{
	struct net_ws_client *ws = userdata;
	ssize_t n;

	/* Stop reading what we would have to answer. */
	if (queue_over(ws)) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	if (ws->early_off < ws->early_len) {
		size_t k = ws->early_len - ws->early_off;

		if (k > len)
			k = len;
		memcpy(buf, ws->early + ws->early_off, k);
		ws->early_off += k;
		return (ssize_t)k;
	}
	n = read(ws->fd, buf, len);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (n == 0)
		set_reason(ws, "%s connection closed without a close frame", ws->peer);
	else
		set_reason(ws, "read from %s: %s", ws->peer, strerror(errno));
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *userdata)
{
	struct net_ws_client *ws = userdata;
	ssize_t n = send(ws->fd, data, len, MSG_NOSIGNAL);

	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	set_reason(ws, "write to %s: %s", ws->peer, strerror(errno));
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

static void ws_receive(struct net_ws_client *ws)
{
	int r;

	ws->busy++;
	r = wslay_event_recv(ws->ws);
	ws->busy--;
	if (r < 0)
		lost(ws, "websocket receive failed");
}

int net_ws_client_send_text(struct net_ws_client *ws, const char *text, size_t len)
{
	struct wslay_event_msg wm = {
		.opcode = WSLAY_TEXT_FRAME,
		.msg = (const uint8_t *)text,
		.msg_length = len,
	};

	/* wslay copies the message. */
	if (ws->state != NET_WS_OPEN || !ws->ws || wslay_event_queue_msg(ws->ws, &wm) < 0)
		return -ENOTCONN;
	kick(ws);
	return 0;
}

/* ---- HTTP/1.1 upgrade -------------------------------------------------- */

_Static_assert(BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) == NET_WS_ACCEPT_LEN, "accept length");

void net_ws_accept(const char *key, char out[NET_WS_ACCEPT_LEN + 1])
{
	uint8_t digest[SHA1_DIGEST_SIZE];
	struct sha1_ctx sha;

	sha1_init(&sha);
	sha1_update(&sha, strlen(key), (const uint8_t *)key);
	sha1_update(&sha, strlen(WS_GUID), (const uint8_t *)WS_GUID);
	sha1_digest(&sha, sizeof(digest), digest);
	base64_encode_raw(out, sizeof(digest), digest);
	out[NET_WS_ACCEPT_LEN] = '\0';
}

static int build_upgrade(struct net_ws_client *ws)
{
	uint8_t nonce[16];
	char key[BASE64_ENCODE_RAW_LENGTH(sizeof(nonce)) + 1], hostbuf[300];
	int n;

	if (getrandom(nonce, sizeof(nonce), GRND_NONBLOCK) != (ssize_t)sizeof(nonce))
		for (size_t i = 0; i < sizeof(nonce); i++)
			nonce[i] = (uint8_t)rand();
	base64_encode_raw(key, sizeof(nonce), nonce);
	key[sizeof(key) - 1] = '\0';
	net_ws_accept(key, ws->accept);

	if (ws->unix_path)
		snprintf(hostbuf, sizeof(hostbuf), "localhost");
	else if (strchr(ws->host, ':'))
		snprintf(hostbuf, sizeof(hostbuf), "[%s]:%u", ws->host, ws->cfg.port);
	else
		snprintf(hostbuf, sizeof(hostbuf), "%s:%u", ws->host, ws->cfg.port);
	n = asprintf(&ws->req,
		     "GET %s HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Upgrade: websocket\r\n"
		     "Connection: Upgrade\r\n"
		     "Sec-WebSocket-Key: %s\r\n"
		     "Sec-WebSocket-Version: 13\r\n"
		     "\r\n",
		     ws->path, hostbuf, key);
	if (n < 0) {
		ws->req = NULL;
		return -ENOMEM;
	}
	ws->req_len = (size_t)n;
	ws->req_off = 0;
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

int net_ws_check_upgrade(char *head, const char *accept_want, struct vmact_err *err)
{
	char *save = NULL, *line;
	bool upgrade = false, connection = false, accept = false;

	line = strtok_r(head, "\r\n", &save);
	if (!line || strncmp(line, "HTTP/1.1 101", 12) != 0 ||
	    (line[12] != ' ' && line[12] != '\0'))
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
			return vmact_err_set(
				err, EPROTO,
				"websocket upgrade: server chose %.64s we did not offer", line);
	}
	if (!upgrade || !connection || !accept)
		return vmact_err_set(err, EPROTO, "websocket upgrade: %s header missing or wrong",
				     !upgrade      ? "Upgrade"
				     : !connection ? "Connection"
						   : "Sec-WebSocket-Accept");
	return 0;
}

static void start_websocket(struct net_ws_client *ws)
{
	if (wslay_event_context_client_init(&ws->ws, &ws_callbacks, ws) != 0) {
		ws->ws = NULL;
		lost(ws, "out of memory");
		return;
	}
	if (ws->cfg.max_message)
		wslay_event_config_set_max_recv_msg_length(ws->ws, ws->cfg.max_message);
	ws->state = NET_WS_OPEN;
	if (ws->cb.on_open) {
		ws->busy++;
		ws->cb.on_open(ws, ws->userdata);
		ws->busy--;
	}
	if (ws->early_len && !ws->lost && ws->state == NET_WS_OPEN)
		ws_receive(ws);
}

static void read_upgrade(struct net_ws_client *ws)
{
	struct vmact_err err = { 0 };
	char *end;
	ssize_t n;
	size_t head_len;

	n = read(ws->fd, ws->resp + ws->resp_len, MAX_UPGRADE_RESPONSE - ws->resp_len);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			lost(ws, "read from %s during upgrade: %s", ws->peer, strerror(errno));
		return;
	}
	if (n == 0) {
		lost(ws, "%s closed the connection during the websocket upgrade", ws->peer);
		return;
	}
	ws->resp_len += (size_t)n;
	ws->resp[ws->resp_len] = '\0';
	end = memmem(ws->resp, ws->resp_len, "\r\n\r\n", 4);
	if (!end) {
		if (ws->resp_len == MAX_UPGRADE_RESPONSE)
			lost(ws, "websocket upgrade response longer than %d bytes",
			     MAX_UPGRADE_RESPONSE);
		return;
	}
	head_len = (size_t)(end - ws->resp);
	if (ws->resp_len > head_len + 4) {
		ws->early_len = ws->resp_len - head_len - 4;
		ws->early = malloc(ws->early_len);
		if (!ws->early) {
			lost(ws, "out of memory");
			return;
		}
		memcpy(ws->early, end + 4, ws->early_len);
		ws->early_off = 0;
		logf_(ws, LOG_DEBUG, "%zu bytes of frames arrived with the upgrade response",
		      ws->early_len);
	}
	*end = '\0';
	if (net_ws_check_upgrade(ws->resp, ws->accept, &err) < 0) {
		lost(ws, "%s", err.msg);
		return;
	}
	start_websocket(ws);
}

/* ---- connection lifecycle ---------------------------------------------- */

static void update_io(struct net_ws_client *ws)
{
	uint32_t ev = 0;

	if (!ws->io)
		return;
	if (ws->state == NET_WS_CONNECTING) {
		ev = (!ws->req || ws->req_off < ws->req_len) ? EPOLLOUT : EPOLLIN;
	} else if (ws->ws) {
		if (wslay_event_want_read(ws->ws))
			ev |= EPOLLIN;
		if (wslay_event_want_write(ws->ws))
			ev |= EPOLLOUT;
	}
	sd_event_source_set_io_events(ws->io, ev);
}

static void teardown(struct net_ws_client *ws)
{
	char reason[sizeof(ws->reason)];

	ws->in_teardown = true;
	snprintf(reason, sizeof(reason), "%s", ws->reason[0] ? ws->reason : "connection closed");
	ws->io = sd_event_source_disable_unref(ws->io);
	ws->close_timer = sd_event_source_disable_unref(ws->close_timer);
	if (ws->ws)
		wslay_event_context_free(ws->ws);
	ws->ws = NULL;
	if (ws->fd >= 0)
		close(ws->fd);
	ws->fd = -1;
	free(ws->req);
	ws->req = NULL;
	free(ws->early);
	ws->early = NULL;
	ws->early_len = ws->early_off = ws->resp_len = 0;
	ws->lost = false;
	ws->close_deferred = false;
	ws->goodbye = false;
	ws->state = NET_WS_CLOSED;
	if (ws->cb.on_close)
		ws->cb.on_close(ws, reason, ws->userdata);
	ws->in_teardown = false;
}

/* After any event: flush queued frames, then tear down what is finished. */
static void process(struct net_ws_client *ws)
{
	if (ws->busy || ws->in_teardown || ws->state == NET_WS_CLOSED)
		return;
	if (ws->ws && !ws->lost && queue_over(ws))
		ws->lost = true;
	if (ws->ws && !ws->lost && wslay_event_want_write(ws->ws) && wslay_event_send(ws->ws) < 0)
		lost(ws, "websocket send failed");
	if (ws->ws && !ws->lost && ws->close_deferred &&
	    wslay_event_get_queued_msg_count(ws->ws) == 0) {
		ws->close_deferred = false;
		if (wslay_event_queue_close(ws->ws, ws->close_code, (const uint8_t *)ws->close_msg,
					    strlen(ws->close_msg)) < 0) {
			ws->lost = true;
		} else {
			close_frame(ws, true, ws->close_code);
			if (wslay_event_send(ws->ws) < 0)
				lost(ws, "websocket send failed");
		}
	}
	if (ws->lost) {
		if (ws->goodbye && ws->ws && wslay_event_want_write(ws->ws))
			wslay_event_send(ws->ws); /* best effort, non-blocking */
		teardown(ws);
		return;
	}
	/* A close we did not ask for: wslay's answer to a framing violation
	 * (1002, 1007, 1009). It stops reading at once; if it still waits for
	 * the peer, bound that wait like any close. */
	if (ws->ws && ws->state != NET_WS_CLOSING && wslay_event_get_close_sent(ws->ws) &&
	    !wslay_event_get_close_received(ws->ws)) {
		uint16_t code = wslay_event_get_status_code_sent(ws->ws);

		close_frame(ws, true, code);
		set_reason(ws, "websocket protocol violation by the %s (closed with %u)", ws->peer,
			   code);
		if (begin_closing(ws) < 0) {
			teardown(ws);
			return;
		}
	}
	if (ws->ws && !wslay_event_want_read(ws->ws) && !wslay_event_want_write(ws->ws)) {
		set_reason(ws, "websocket closed");
		teardown(ws);
		return;
	}
	update_io(ws);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct net_ws_client *ws = userdata;

	if (ws->state == NET_WS_CONNECTING) {
		if (!ws->req) {
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
				soerr = errno;
			if (soerr) {
				lost(ws, "connect to %s: %s", ws->peer, strerror(soerr));
				goto out;
			}
			if (build_upgrade(ws) < 0) {
				lost(ws, "out of memory");
				goto out;
			}
		}
		if (ws->req_off < ws->req_len) {
			ssize_t n = send(fd, ws->req + ws->req_off, ws->req_len - ws->req_off,
					 MSG_NOSIGNAL);

			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				lost(ws, "write to %s during upgrade: %s", ws->peer,
				     strerror(errno));
			else if (n > 0)
				ws->req_off += (size_t)n;
		} else if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
			read_upgrade(ws);
		}
	} else if (ws->ws && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		ws_receive(ws);
	}
out:
	process(ws);
	return 0;
}

static int open_socket(struct net_ws_client *ws, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;

	if (ws->cfg.dial) {
		int r = ws->cfg.dial(ws->cfg.dial_ud, err);

		if (r < 0 && !err->msg[0])
			vmact_err_set(err, -r, "connect to %s: %s", ws->peer, strerror(-r));
		return r;
	}
	if (ws->unix_path) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if (strlen(ws->unix_path) >= sizeof(sa.sun_path))
			return vmact_err_set(err, ENAMETOOLONG, "unix socket path too long: %s",
					     ws->unix_path);
		strcpy(sa.sun_path, ws->unix_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return vmact_err_set(err, errno, "socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS &&
		    errno != EAGAIN)
			return vmact_err_set(err, errno, "connect to %s: %s", ws->unix_path,
					     strerror(errno));
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
		char port[8];
		int r, saved = 0;

		snprintf(port, sizeof(port), "%u", ws->cfg.port);
		r = getaddrinfo(ws->host, port, &hints, &ai);
		if (r != 0)
			return vmact_err_set(err, EHOSTUNREACH, "resolve %s: %s", ws->host,
					     gai_strerror(r));
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
			return vmact_err_set(err, saved ? saved : EHOSTUNREACH,
					     "connect to %s:%s: %s", ws->host, port,
					     strerror(saved ? saved : EHOSTUNREACH));
	}
	return TAKE_FD(fd);
}

int net_ws_client_connect(struct net_ws_client *ws)
{
	struct vmact_err err = { 0 };
	int fd;

	if (ws->state != NET_WS_CLOSED || ws->in_teardown)
		return -EBUSY;
	ws->reason[0] = '\0';
	ws->lost = false;
	ws->state = NET_WS_CONNECTING;
	fd = open_socket(ws, &err);
	if (fd < 0) {
		lost(ws, "%s", err.msg);
	} else {
		ws->fd = fd;
		if (sd_event_add_io(ws->event, &ws->io, fd, EPOLLOUT, on_io, ws) < 0)
			lost(ws, "cannot register with the event loop");
	}
	settle(ws);
	return 0;
}

static int on_kick(sd_event_source *s, void *userdata)
{
	process(userdata);
	return 0;
}

/* ---- object -------------------------------------------------------------- */

int net_ws_client_new(sd_event *event, const struct net_ws_client_config *cfg,
		      const struct net_ws_client_callbacks *cb, void *userdata,
		      struct net_ws_client **out, struct vmact_err *err)
{
	_cleanup_(net_ws_client_freep) struct net_ws_client *ws = NULL;
	int r;

	if (!event || !cfg || !out)
		return vmact_err_set(err, EINVAL, "missing argument");
	if (!!cfg->host == !!cfg->unix_path)
		return vmact_err_set(err, EINVAL, "exactly one of host and unix_path");
	if ((cfg->host && !*cfg->host) || (cfg->unix_path && !*cfg->unix_path))
		return vmact_err_set(err, EINVAL, "empty host or unix_path");
	if (!cfg->path || cfg->path[0] != '/')
		return vmact_err_set(err, EINVAL, "path must start with '/'");
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return vmact_err_set(err, ENOMEM, "out of memory");
	ws->fd = -1;
	ws->state = NET_WS_CLOSED;
	ws->event = sd_event_ref(event);
	ws->cfg = *cfg;
	ws->host = cfg->host ? strdup(cfg->host) : NULL;
	ws->unix_path = cfg->unix_path ? strdup(cfg->unix_path) : NULL;
	ws->path = strdup(cfg->path);
	ws->peer = strdup(cfg->peer ? cfg->peer : "websocket peer");
	if ((cfg->host && !ws->host) || (cfg->unix_path && !ws->unix_path) || !ws->path ||
	    !ws->peer)
		return vmact_err_set(err, ENOMEM, "out of memory");
	ws->cfg.host = ws->host;
	ws->cfg.unix_path = ws->unix_path;
	ws->cfg.path = ws->path;
	ws->cfg.peer = ws->peer;
	if (cb)
		ws->cb = *cb;
	ws->userdata = userdata;
	r = sd_event_add_defer(event, &ws->kick, on_kick, ws);
	if (r < 0)
		return vmact_err_set(err, -r, "event source: %s", strerror(-r));
	sd_event_source_set_enabled(ws->kick, SD_EVENT_OFF);
	*out = TAKE_PTR(ws);
	return 0;
}

void net_ws_client_free(struct net_ws_client *ws)
{
	if (!ws)
		return;
	if (ws->state != NET_WS_CLOSED)
		teardown(ws);
	ws->kick = sd_event_source_disable_unref(ws->kick);
	sd_event_unref(ws->event);
	free(ws->host);
	free(ws->unix_path);
	free(ws->path);
	free(ws->peer);
	free(ws);
}

enum net_ws_client_state net_ws_client_state(const struct net_ws_client *ws)
{
	return ws->state;
}
