/* SPDX-License-Identifier: Apache-2.0 */
/* The CloudProvider service's methods: each turns one decoded request into
 * its answer from vmact-groupd and the cache (doc/cloudprovider.md, "The
 * RPCs"). Called on the server's worker threads, one call each. */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "cloudprovider/arena.h"
#include "cloudprovider/cache.h"

struct cp_rpc_ctx {
	struct cp_cache *cache;
	const char *groupd;     /* vmact-groupd's socket */
	uint64_t deadline_usec; /* vmact_now_usec() time by which to answer */
	struct cp_arena *arena; /* the request's and the answer's memory */
};

/* 0 with *resp (arena memory or static), or a negative errno that
 * cp_status_from_errno maps to the call's status, err saying why. */
typedef int cp_rpc_fn(struct cp_rpc_ctx *ctx, const ProtobufCMessage *req, ProtobufCMessage **resp,
		      struct vmact_err *err);

struct cp_rpc_method {
	const ProtobufCMethodDescriptor *desc; /* name, input and output types */
	cp_rpc_fn *fn;
	bool changes; /* changes a group: the server logs every such call */
};

/* The method a call's path names ("/<package>.CloudProvider/<name>"),
 * NULL for any other path. */
const struct cp_rpc_method *cp_rpc_find(const char *path, size_t len);

/* The service's full name, for the README and tests. */
const char *cp_rpc_service_name(void);
