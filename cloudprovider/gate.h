/* SPDX-License-Identifier: Apache-2.0 */
/* The gate in front of the gRPC server (doc/cloudprovider.md, "Connection
 * limits"). gRPC core has no bound on connections, so vmact-cloudprovider
 * owns the listening socket: it accepts, counts, and relays each
 * connection's bytes unchanged to gRPC on a private unix socket (TLS and
 * HTTP/2 stay end to end, between the client and gRPC). Each relay
 * connects from its own abstract unix address, which is the peer name
 * gRPC gives its calls, so the server can tell the gate which connections
 * carried a well-formed call.
 *
 * At a limit the gate, like the project's HTTP server, never turns the
 * newcomer away first: a client over its share loses its own oldest
 * connection that never carried a call, else (gate full) the oldest such
 * connection of anyone goes. Connections that carried a call are kept:
 * cluster-autoscaler holds one long-lived connection, and a flood must not
 * cut it. Only when every candidate has carried a call is the newcomer
 * refused. Runs on an sd-event loop; cp_gate_mark_served and
 * cp_gate_client may be called from any thread. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "base/error.h"

struct cp_gate_config {
	const char *listen;        /* "ADDR:PORT", "[V6]:PORT" or "unix:PATH" */
	const char *backend;       /* gRPC's unix socket path */
	unsigned conn_limit;       /* 0: 64 */
	unsigned per_client_limit; /* 0: conn_limit / 4 (at least 1) */
};

struct cp_gate;

int cp_gate_new(sd_event *ev, const struct cp_gate_config *cfg, struct cp_gate **out,
		struct vmact_err *err);
/* Closes the listening socket and every relayed connection; the gate
 * still answers cp_gate_mark_served and cp_gate_client (as unknown peers)
 * until cp_gate_free, so that calls finishing on gRPC's threads may ask. */
void cp_gate_close(struct cp_gate *g);
void cp_gate_free(struct cp_gate *g);

/* The TCP port bound (useful with port 0); 0 on a unix socket. */
unsigned cp_gate_port(const struct cp_gate *g);
struct cp_gate_stats {
	unsigned connections;  /* relayed now */
	unsigned long refused; /* newcomers turned away since the start */
	unsigned long evicted; /* connections closed for a newcomer */
};

void cp_gate_stats(struct cp_gate *g, struct cp_gate_stats *st);

/* gRPC's peer name of a call ("unix-abstract:..."): its connection has
 * carried a well-formed call. Unknown names are ignored. */
void cp_gate_mark_served(struct cp_gate *g, const char *grpc_peer);
/* The client's address behind gRPC's peer name ("127.0.0.1:40000",
 * "uid 1000"), or the peer name itself when the gate does not know it. */
void cp_gate_client(struct cp_gate *g, const char *grpc_peer, char *buf, size_t len);
