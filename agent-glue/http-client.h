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

struct ag_http_client;
struct ag_http_call;

/* Default cap on a response body: every protocol vmact speaks over HTTP has
 * small JSON or text bodies. */
#define AG_HTTP_DEFAULT_MAX_RESPONSE (64u * 1024u)

struct ag_http_request {
	const char *method;       /* "GET", "POST", "PUT", "DELETE" */
	const char *url;          /* http://host:port/path */
	const char *content_type; /* of body; NULL = no Content-Type header */
	const void *body;         /* copied: the caller may free it after start */
	size_t body_len;
	uint64_t timeout_usec;    /* whole transfer; 0 = no limit (avoid) */
	size_t max_response;      /* 0 = AG_HTTP_DEFAULT_MAX_RESPONSE */
	const char *unix_socket;  /* connect here instead of the url's host; NULL = TCP */
};

struct ag_http_response {
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
typedef void ag_http_done_fn(void *userdata, int result, const struct ag_http_response *resp,
			     const struct vmact_err *err);

int ag_http_client_new(sd_event *ev, struct ag_http_client **out, struct vmact_err *err);
/* Cancels every pending call without invoking callbacks. NULL is fine. */
void ag_http_client_free(struct ag_http_client *c);

/* Every connection of the client's later requests is opened by
 * dial(dial_ud), which returns a connected (or connecting) stream socket
 * or a negative errno with err set; curl then neither creates nor
 * connects a socket (a sandboxed process may not, doc/privsep.md). The
 * host of the URLs must then be a numeric address: resolving a name
 * would start a thread. NULL dial: curl opens its own. */
void ag_http_client_set_dial(struct ag_http_client *c,
			     int (*dial)(void *dial_ud, struct vmact_err *err), void *dial_ud);

/* Starts a request; req->body is copied. *callp (may be NULL) receives a
 * handle valid until the callback has run or the call was cancelled. */
int ag_http_client_start(struct ag_http_client *c, const struct ag_http_request *req,
			 ag_http_done_fn *cb, void *userdata, struct ag_http_call **callp,
			 struct vmact_err *err);
/* Aborts a pending call; its callback is not invoked. */
void ag_http_call_cancel(struct ag_http_call *call);

/* Number of calls in flight (for tests and shutdown). */
size_t ag_http_client_pending(const struct ag_http_client *c);
