/* SPDX-License-Identifier: Apache-2.0 */
/* Small HTTP server on the daemon's sd-event loop: libmicrohttpd in its
 * epoll mode, its epoll fd one sd-event io source and its timeout one
 * sd-event timer. Handlers are synchronous: they get the whole request
 * (body already read and size-checked) and fill a reply.
 *
 * Defences, all configurable: request body limit (oversized bodies are
 * answered with a configured status/body, the server keeps serving),
 * connection limits, idle timeout, and a whole-request deadline that closes
 * connections which trickle headers or bodies (slowloris).
 *
 * The server accepts every connection that arrives. At a limit it closes the
 * connection whose current request started earliest, never the new one: a
 * client over its share loses its own oldest, else (server full) the
 * server's oldest goes. A well-formed request is always the newest and is
 * read in the pass that accepts it, so connections holding partial requests
 * cannot crowd it out, and the server serves again as soon as they stop. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "base/error.h"

/* Evicted connections stay open until MHD next looks at them; MHD's own
 * limit is ours plus this many, and reaching it forces an MHD pass before
 * the next connection is handed over, so MHD never refuses one itself.
 * A server may so hold up to its limit plus this many descriptors for
 * the moment between an eviction and MHD's next pass. */
#define NET_HTTP_CUT_SLACK 64u

struct net_http_server;

struct net_http_server_config {
	/* "ADDR:PORT" ("127.0.0.1:0" picks a free port, "[::1]:10299"), or
	 * "unix:/path" (an existing socket file is replaced). */
	const char *listen;
	/* adopt_fd: serve on listen_fd, a socket already bound and listening
	 * (opened by someone else: a sandboxed process may not open one,
	 * doc/privsep.md), instead of opening `listen`, which then only names
	 * it in messages. The server takes the descriptor, on failure too. */
	bool adopt_fd;
	int listen_fd;
	size_t max_body;            /* 0 = 64 KiB */
	unsigned too_large_status;  /* reply to an oversized body; 0 = 413 */
	const char *too_large_body; /* text/plain; NULL = "request body too large" */
	unsigned conn_limit;        /* 0 = 256 */
	/* Connections one client may hold, a client being a source address
	 * (IPv4, or IPv6 /128) or, on a unix socket, a peer uid.
	 * 0 = conn_limit / 2 (at least 1); capped at conn_limit. Fairness
	 * between clients; against one client the eviction order is what
	 * protects (a local user has all of 127/8 to connect from). */
	unsigned per_client_limit;
	unsigned idle_timeout_sec;     /* 0 = 10 */
	uint64_t request_timeout_usec; /* whole request incl. headers; 0 = 10 s */
	/* Handlers may answer later (net_http_defer); a deferred request still
	 * counts against request_timeout_usec, so waits must stay below it. */
	bool allow_defer;
	/* On a unix socket: whether each peer is a member of this group (its
	 * primary group or one of its supplementary groups at connect time,
	 * SO_PEERCRED and SO_PEERGROUPS), in the request's peer_in_group.
	 * has_group false: not asked. */
	bool has_group;
	unsigned group_gid;
};

struct net_http_server_request {
	const char *method;
	const char *url;
	const char *content_type; /* "" when absent */
	const char *body;         /* NUL-terminated; may contain NULs */
	size_t body_len;
	/* On a unix socket the peer's uid (SO_PEERCRED) as the kernel gave it
	 * at connect time; -1 on TCP or when it could not be read. */
	long long peer_uid;
	/* The config's group_gid is one of the peer's groups (unix socket). */
	bool peer_in_group;
	void *internal_; /* the server's, for net_http_defer */
};

struct net_http_server_reply {
	unsigned status;          /* 0 = handler failed: 500 */
	const char *content_type; /* static string; NULL = text/plain */
	char *body;               /* malloc()ed, the server frees it; may be NULL */
	size_t body_len;
};

/* Called from the event loop; must not free the server. */
typedef void net_http_handler_fn(void *userdata, const struct net_http_server_request *req,
				 struct net_http_server_reply *reply);

/* Helper for handlers: reply with a copy of a text body. Returns -ENOMEM on
 * allocation failure (the reply then becomes a bodiless 500). */
int net_http_reply_text(struct net_http_server_reply *reply, unsigned status,
			const char *content_type, const char *text);

/* Deferred replies (long polls), for servers with allow_defer. A handler
 * that cannot answer yet calls net_http_defer(req) and leaves its reply
 * empty; the connection is suspended (no CPU, no timer of the server's)
 * until its owner calls net_http_pending_reply exactly once, from the loop,
 * which takes the reply's body. NULL when the server does not allow it or
 * out of memory: the handler then answers at once. The owner must answer
 * every pending request before freeing the server; net_http_server_free
 * answers those left with 503. */
struct net_http_pending;
/* The request's query argument `key` (?key=value, decoded), NULL when
 * absent; valid during the handler call. */
const char *net_http_request_arg(const struct net_http_server_request *req, const char *key);
struct net_http_pending *net_http_defer(const struct net_http_server_request *req);
void net_http_pending_reply(struct net_http_pending *p, struct net_http_server_reply *reply);

int net_http_server_new(sd_event *ev, const struct net_http_server_config *cfg,
			net_http_handler_fn *handler, void *userdata, struct net_http_server **out,
			struct vmact_err *err);
void net_http_server_free(struct net_http_server *s);

/* TCP port actually bound (useful with port 0); 0 for unix sockets. */
unsigned net_http_server_port(const struct net_http_server *s);
/* Connections currently open, counting those closed by a limit or the
 * deadline that libmicrohttpd has not yet released (for tests). */
unsigned net_http_server_connections(const struct net_http_server *s);
