/* SPDX-License-Identifier: Apache-2.0 */
/* Asynchronous HTTP client on the daemon's sd-event loop: libcurl's multi
 * interface, its sockets and timer driven by sd-event sources. Nothing here
 * blocks; every request ends in exactly one completion callback (unless it
 * is cancelled first). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "base/error.h"

struct net_http_client;
struct net_http_call;

/* Default cap on a response body: every protocol vmact speaks over HTTP has
 * small JSON or text bodies. */
#define NET_HTTP_DEFAULT_MAX_RESPONSE (64u * 1024u)

struct net_http_request {
	const char *method;       /* "GET", "POST", "PUT", "DELETE" */
	const char *url;          /* http://host:port/path */
	const char *content_type; /* of body; NULL = no Content-Type header */
	const void *body;         /* copied: the caller may free it after start */
	size_t body_len;
	uint64_t timeout_usec;   /* whole transfer; 0 = no limit (avoid) */
	size_t max_response;     /* 0 = NET_HTTP_DEFAULT_MAX_RESPONSE */
	const char *unix_socket; /* connect here instead of the url's host; NULL = TCP */
};

struct net_http_response {
	long status;              /* HTTP status */
	const char *content_type; /* "" when the peer sent none */
	const char *body;         /* NUL-terminated for convenience; may hold NULs */
	size_t body_len;
};

/* result is 0 with resp filled, or a negative errno with err describing the
 * transport failure (-ETIMEDOUT, -ECONNREFUSED, -EFBIG for an oversized
 * response, -EPROTO for a malformed one, -ECONNRESET, ...); resp is NULL
 * then. Both pointers are valid only during the call. The callback may start
 * new requests and cancel other calls, but must not free the client. */
typedef void net_http_done_fn(void *userdata, int result, const struct net_http_response *resp,
			      const struct vmact_err *err);

int net_http_client_new(sd_event *ev, struct net_http_client **out, struct vmact_err *err);

/* Opens the connection for a call to url instead of the client's own
 * socket() and connect(): a connected (or connecting) socket, or a
 * negative errno with err set, which then is the call's error. For a
 * process that may not open sockets (a guest worker, doc/privsep.md). */
typedef int net_http_connect_fn(void *userdata, const char *url, struct vmact_err *err);
/* Every later call of the client connects through fn (NULL: its own).
 * The host of the URLs must then be a numeric address: curl would start
 * a resolver thread for a name. */
void net_http_client_set_connect(struct net_http_client *c, net_http_connect_fn *fn,
				 void *userdata);
/* Cancels every pending call without invoking callbacks. NULL is fine. */
void net_http_client_free(struct net_http_client *c);

/* Starts a request; req->body is copied. *callp (may be NULL) receives a
 * handle valid until the callback has run or the call was cancelled. */
int net_http_client_start(struct net_http_client *c, const struct net_http_request *req,
			  net_http_done_fn *cb, void *userdata, struct net_http_call **callp,
			  struct vmact_err *err);
/* Aborts a pending call; its callback is not invoked. */
void net_http_call_cancel(struct net_http_call *call);

/* Number of calls in flight (for tests and shutdown). */
size_t net_http_client_pending(const struct net_http_client *c);
