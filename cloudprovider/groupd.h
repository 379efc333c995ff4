/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's JSON API (doc/cluster-api.md) over its unix socket, one
 * request at a time per caller (libcurl; any thread). Every answer of
 * vmact-cloudprovider comes from here. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"

/* Call once before any thread calls cp_groupd_call. */
int cp_groupd_global_init(struct vmact_err *err);

/* method "GET" or "POST" (body: a JSON document, NULL for none); path
 * "/v1/..." with its query already escaped. On 2xx *out is the answer.
 * Otherwise a negative errno that says what groupd meant, with its
 * sentence in err:
 *   -ENOENT not-found, -EINVAL invalid, -ERANGE out-of-range,
 *   -EBUSY precondition, -EAGAIN unavailable (also: groupd cannot be
 *   reached), -ETIMEDOUT no answer within timeout_usec, -EIO internal or
 *   an answer that is not the API's. */
int cp_groupd_call(const char *socket, const char *method, const char *path, const json_t *body,
		   uint64_t timeout_usec, json_t **out, struct vmact_err *err);

/* A path segment (a group id) percent-encoded, malloc'd; NULL on ENOMEM. */
char *cp_groupd_escape(const char *s);
