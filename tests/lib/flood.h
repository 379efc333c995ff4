/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile clients for HTTP servers, as one local user can mount them:
 * floods of connections that each hold a partial request header
 * (slowloris), and well-formed requests that must still be answered
 * beside them. The server runs either on ev in this process (its loop is
 * driven while waiting) or in another process (ev NULL). Time limits are
 * TH_SAFETY_USEC safety nets, not assertions about speed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

struct th_flood {
	sd_event *ev;        /* the server's loop when it runs here, else NULL */
	unsigned port;       /* TCP on 127.0.0.x, or */
	char unix_path[108]; /* a unix socket ("" for TCP) */
	int *fds;            /* the flood's connections */
	unsigned nfds;
};

/* What every flood connection sends once connected, and then nothing. */
extern const char th_flood_partial_header[];

/* A non-blocking connection from src (a 127.0.0.0/8 address; NULL =
 * 127.0.0.1), or to the unix socket: the fd, -EAGAIN (a full unix
 * backlog: retry after the server ran) or -errno. */
int th_flood_open(struct th_flood *f, const char *src);

/* Sends all of a short text on fd once it has connected; false while it
 * has not (or the socket buffer is full): call again after the server ran. */
bool th_flood_send(int fd, const char *text);

/* Opens n connections, sources cycling through srcs (NULL: 127.0.0.1),
 * each sending the partial header once connected. 0, or -ETIMEDOUT with
 * *got the connections that got through (a server that stops accepting
 * leaves them in a full backlog). */
int th_flood(struct th_flood *f, unsigned n, const char *const *srcs, unsigned nsrcs,
	     unsigned *got);

/* Connects from src, sends req (raw bytes, may be long) and reads the
 * answer until the server closes; the answer (NUL-terminated, truncated
 * to cap) in buf. 0, or -errno / -ETIMEDOUT. */
int th_flood_request(struct th_flood *f, const char *src, const char *req, size_t req_len,
		     char *buf, size_t cap);

/* Bad input, each on its own connection: a request to `path` with an
 * oversized header line (256 KiB), garbage bytes, and a POST whose body
 * never completes (the client leaves). Each may be answered only with a
 * 4xx or a closed connection. 0, or -1 with what went wrong in msg. */
int th_flood_bad_input(struct th_flood *f, const char *path, char *msg, size_t msglen);

/* The descriptors process pid (serving with agent-glue's HTTP server)
 * holds under a flood, against `bound`: the server shuts down each
 * connection it evicts at once, but libmicrohttpd closes the descriptor
 * on its next pass, so the first reading may count up to
 * NET_HTTP_CUT_SLACK of those above bound; then the count must come down
 * to bound within TH_SAFETY_USEC. 0; -E2BIG when the first reading is
 * over bound + NET_HTTP_CUT_SLACK, -ETIMEDOUT when the count never came
 * down, -ESRCH when pid is gone. *first and *last: the readings. */
int th_flood_fds_within(pid_t pid, long bound, long *first, long *last);

/* Raises this process's soft limit of descriptors to n (room for this
 * side of every flood connection); false when the hard limit is below n. */
bool th_flood_raise_nofile(unsigned n);

/* Closes the flood's connections (the struct stays usable). */
void th_flood_close(struct th_flood *f);
