/* SPDX-License-Identifier: Apache-2.0 */
/* One blocking HTTP request to another vmact program (prefix
 * vmact_http_): vmactl and vmact-groupctl to their daemon's API,
 * vmact-cloudprovider to vmact-groupd's, vmact-groupd to a host's
 * arbiter, and to a Kubernetes API server. A unix socket (libcurl's
 * CURLOPT_UNIX_SOCKET_PATH) or an http:// URL, https:// only with a CA
 * file to verify the server by; no redirects, the answer collected up to a
 * bound. It says what happened on the wire and nothing more: each caller
 * words its own errors (whom it could not reach, what a status means).
 * Any thread; call curl_global_init first, as libcurl asks. */
#pragma once

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

struct vmact_http_req {
	/* The peer's unix socket, and url the path ("/v1/..." with its
	 * query); NULL: url is a whole http://HOST:PORT/... URL. */
	const char *unix_socket;
	const char *url;
	const char *method;
	const char *body;              /* sent as application/json; NULL: none */
	uint64_t timeout_usec;         /* the whole request (at least 1 ms) */
	uint64_t connect_timeout_usec; /* 0: 5 s */
	size_t answer_max;             /* the answer's bound, in bytes */
	/* Set by a signal handler: a request in progress is abandoned at once
	 * (-EINTR), so a long poll does not outlive Ctrl-C. NULL: none. */
	volatile sig_atomic_t *cancel;
	/* https: the CA the server's certificate must chain to (NULL: http
	 * only); a bearer token for the Authorization header (NULL: none). */
	const char *ca_file;
	const char *bearer;
};

struct vmact_http_answer {
	long status;
	struct vmact_buf body; /* NUL-terminated when not empty */
};

/* 0 when the peer answered, whatever the status (*a: status and body;
 * free it with vmact_http_answer_free, also after a failure). Otherwise,
 * with the cause alone in err (libcurl's sentence, or "answer too
 * large"): -ETIMEDOUT no answer in time, -EINTR cancelled,
 * -ECONNREFUSED could not connect, -EACCES the socket's mode refused
 * the connection, -EMSGSIZE an answer beyond
 * answer_max, -ENOMEM, -EIO any other failure. */
int vmact_http_call(const struct vmact_http_req *q, struct vmact_http_answer *a,
		    struct vmact_err *err);
void vmact_http_answer_free(struct vmact_http_answer *a);

/* A URL path segment percent-encoded, malloc'd; NULL on ENOMEM. */
char *vmact_http_escape(const char *s);
