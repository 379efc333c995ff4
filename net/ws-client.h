/* SPDX-License-Identifier: Apache-2.0 */
/* A websocket client (RFC 6455, framed by wslay) on the sd-event loop: dial
 * over TCP or a unix stream socket, the HTTP/1.1 upgrade, text messages,
 * ping/pong (answered by wslay), the close handshake bounded by a timeout.
 * It knows nothing of what the messages mean: the vm-monitor protocol
 * (monitor-client.c) is built on top of it.
 *
 * One object carries one connection at a time and may be reconnected after
 * it closed. Whatever ends a connection (a failed dial or upgrade, the
 * close handshake, a timeout, a read error, a protocol violation answered
 * by wslay, net_ws_client_drop) is reported once through on_close, with the
 * first cause as the reason.
 *
 * Callbacks run from the event loop, also from inside wslay or from inside
 * a call of this module; calls made from a callback take effect once it
 * returns. They may call anything here except net_ws_client_free(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "base/error.h"
#include "base/macro.h"

struct net_ws_client;

struct net_ws_client_config {
	/* Exactly one of unix_path or host. A host name is resolved with a
	 * blocking getaddrinfo() at each connection. */
	const char *host;
	uint16_t port;
	const char *unix_path;
	const char *path;            /* HTTP path of the upgrade, starts with '/' */
	const char *peer;            /* names the peer in reasons, "vm-monitor" */
	uint64_t close_timeout_usec; /* wait for the peer's close frame */
	size_t max_message;          /* longest message accepted (wslay answers 1009) */
	/* Optional: opens the connection instead of socket()+connect() here
	 * (host and unix_path then only name the peer): returns a
	 * non-blocking stream socket, connected or still connecting, or a
	 * negative errno with err set. vmact-guestd dials through vmactd this
	 * way (doc/privsep.md). */
	int (*dial)(void *dial_ud, struct vmact_err *err);
	void *dial_ud;
};

enum net_ws_client_state {
	NET_WS_CLOSED,     /* no connection (before the first, or after on_close) */
	NET_WS_CONNECTING, /* dial and HTTP upgrade */
	NET_WS_OPEN,
	NET_WS_CLOSING, /* close frame sent, waiting for the peer's */
};

struct net_ws_client_callbacks {
	/* The upgrade succeeded: messages may be sent. */
	void (*on_open)(struct net_ws_client *ws, void *userdata);
	/* A complete text / binary message (not NUL-terminated). */
	void (*on_text)(struct net_ws_client *ws, const uint8_t *buf, size_t len, void *userdata);
	void (*on_binary)(struct net_ws_client *ws, const uint8_t *buf, size_t len, void *userdata);
	/* The close handshake started (net_ws_client_close, or wslay answering
	 * a framing violation of the peer): nothing can be sent any more. */
	void (*on_closing)(struct net_ws_client *ws, void *userdata);
	/* A close frame with this status code was sent (sent true) or
	 * received. Only for bookkeeping: it runs at the moment it happens,
	 * and must not call back into the client. */
	void (*close_frame)(struct net_ws_client *ws, bool sent, uint16_t code, void *userdata);
	/* The connection (or the attempt) ended; the client is CLOSED again. */
	void (*on_close)(struct net_ws_client *ws, const char *reason, void *userdata);
	/* Debug notes; the library itself never prints. */
	void (*log)(struct net_ws_client *ws, int priority, const char *msg, void *userdata);
};

/* Checks and copies cfg. Errors name the field ("exactly one of host and
 * unix_path", ...) for the caller to prefix. */
int net_ws_client_new(sd_event *event, const struct net_ws_client_config *cfg,
		      const struct net_ws_client_callbacks *cb, void *userdata,
		      struct net_ws_client **out, struct vmact_err *err);
/* Tears down a connection still up (on_close runs), then frees. Not from
 * a callback. NULL is fine. */
void net_ws_client_free(struct net_ws_client *ws);

/* Starts a connection; -EBUSY unless CLOSED. A failure to even start (no
 * socket, no route, resolution) is reported through on_close like any
 * other, possibly before this returns. */
int net_ws_client_connect(struct net_ws_client *ws);
/* Queues one text message (copied). -ENOTCONN unless OPEN. */
int net_ws_client_send_text(struct net_ws_client *ws, const char *text, size_t len);
/* Starts the close handshake with code, after the messages already
 * queued; reason is the connection's end reason (unless one is set) and,
 * cut to what a close frame holds, the frame's text. The peer's close frame
 * or close_timeout ends the connection. While CONNECTING, the attempt ends
 * at once. No-op when CLOSED. */
void net_ws_client_close(struct net_ws_client *ws, uint16_t code, const char *reason);
/* Ends the connection now, without waiting for the peer. With code != 0
 * and an OPEN connection, a close frame (code, text) goes out first, best
 * effort. No-op when CLOSED. */
void net_ws_client_drop(struct net_ws_client *ws, uint16_t code, const char *text,
			const char *reason);

enum net_ws_client_state net_ws_client_state(const struct net_ws_client *ws);

/* RFC 6455 handshake pieces, exposed for tests and fuzzing. */
#define NET_WS_ACCEPT_LEN 28
/* Sec-WebSocket-Accept for a Sec-WebSocket-Key. */
void net_ws_accept(const char *key, char out[NET_WS_ACCEPT_LEN + 1]);
/* Validates an upgrade response head (NUL-terminated, without the blank
 * line; modified in place): 101, Upgrade: websocket, Connection: Upgrade,
 * the expected accept value, no extension or subprotocol. -EPROTO names
 * what is wrong. */
int net_ws_check_upgrade(char *head, const char *accept, struct vmact_err *err);

DEFINE_PTR_CLEANUP(net_ws_client_freep, struct net_ws_client, net_ws_client_free)
