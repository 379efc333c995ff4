/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's JSON API (doc/cluster-api.md) over its unix socket, one
 * request at a time per caller (libcurl; any thread), through the API's
 * codec (shared/group-api.h). Every answer of vmact-cloudprovider comes
 * from here. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"

/* Call once before any thread calls cp_groupd_call. */
int cp_groupd_global_init(struct vmact_err *err);

/* vmact_gapi_call (shared/group-api.h): method "GET" or "POST" (body: a
 * JSON document, NULL for none), path one of the codec's. On 2xx *out is
 * the answer. Otherwise a negative errno that says what groupd meant,
 * with its sentence in err:
 *   -ENOENT not-found, -EINVAL invalid, -ERANGE out-of-range,
 *   -EBUSY precondition, -EAGAIN unavailable (also: groupd cannot be
 *   reached), -ETIMEDOUT no answer within timeout_usec, -EIO internal or
 *   an answer that is not JSON. */
int cp_groupd_call(const char *socket, const char *method, const char *path, const json_t *body,
		   uint64_t timeout_usec, json_t **out, struct vmact_err *err);
