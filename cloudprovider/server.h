/* SPDX-License-Identifier: Apache-2.0 */
/* The gRPC server on gRPC core's C API (doc/cloudprovider.md, "Inside"):
 * one completion queue, a few worker threads that each take the next
 * event, and a call state machine per unary call (request matched, message
 * received, answer sent). gRPC's own threads and C++ runtime live in this
 * process only, never in vmact-groupd's or vmactd's.
 *
 * Bounds: a request message larger than max_message is refused by gRPC
 * (RESOURCE_EXHAUSTED); a call whose message has not arrived within
 * request_timeout is ended DEADLINE_EXCEEDED; so is a connection whose
 * handshake (TLS, HTTP/2 preface) takes longer; idle connections close
 * after idle_timeout; at most max_streams calls per connection. */
#pragma once

#include <grpc/status.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cloudprovider/cache.h"
#include "cloudprovider/tls.h"

/* What the edge logs of a call once it ended (any worker thread). */
struct cp_server_call {
	const char *method; /* "NodeGroupIncreaseSize", or the path when unknown */
	const char *peer;   /* gRPC's name of the peer (the gate's side) */
	grpc_status_code code;
	const char *message; /* why, when code is not OK */
	uint64_t usec;       /* from the message to the answer */
	bool changes;        /* the method changes a group */
};

struct cp_server_config {
	const char *address; /* what gRPC listens on: "unix:/path" or "127.0.0.1:0" */
	struct cp_tls *tls;  /* NULL: plaintext */
	struct cp_cache *cache;
	const char *groupd;            /* vmact-groupd's socket */
	size_t max_message;            /* 0: 1 MiB */
	unsigned max_streams;          /* per connection; 0: 8 */
	unsigned max_calls;            /* calls in progress at once; 0: 512 */
	unsigned workers;              /* threads; 0: 4 */
	uint64_t request_timeout_usec; /* 0: 10 s */
	uint64_t idle_timeout_usec;    /* 0: 300 s */
	/* What one call may spend on groupd when the client set no (or a
	 * longer) deadline; 0: 10 s. */
	uint64_t call_timeout_usec;
	/* A call of a known method with a well-formed request arrived from
	 * peer: the connection has proven itself (cp_gate_mark_served). */
	void (*on_served)(void *ud, const char *peer);
	/* A call ended. */
	void (*on_call)(void *ud, const struct cp_server_call *call);
	void *ud;
};

struct cp_server;

/* Starts serving; the config's strings and objects must outlive it. */
int cp_server_start(const struct cp_server_config *cfg, struct cp_server **out,
		    struct vmact_err *err);
/* Ends every call, stops the threads, frees everything. */
void cp_server_stop(struct cp_server *s);
/* The TCP port bound (for "127.0.0.1:0"), 0 for unix. */
int cp_server_port(const struct cp_server *s);
