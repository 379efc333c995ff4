/* SPDX-License-Identifier: Apache-2.0 */
/* One request to vmactd's control API over its unix socket (libcurl's
 * CURLOPT_UNIX_SOCKET_PATH); the answer is parsed JSON. (vmact-groupctl
 * speaks vmact-groupd's API through shared/group-api.h.) */
#pragma once

#include <jansson.h>
#include <signal.h>

#include "base/error.h"

/* path: "/v1/..." with its query; body NULL for GET. On a transport
 * failure -errno with "cannot reach vmactd at SOCKET: ..."; on an answer
 * other than 2xx -EPROTO with the API's {"error"} message (*status says
 * which). *out: the answer's JSON (2xx only). timeout_s bounds the whole
 * request. */
int ctl_call(const char *socket, const char *method, const char *path, const char *body,
	     long timeout_s, long *status, json_t **out, struct vmact_err *err);

/* A flag a signal handler sets: once it is non-zero, a request in
 * progress is abandoned at once (ctl_call returns -EINTR), so a long poll
 * does not outlive Ctrl-C. NULL: none. */
void ctl_set_cancel(volatile sig_atomic_t *flag);

/* The URL path segment for a VM name (percent-encoded), malloc'd. */
char *ctl_escape(const char *name);
