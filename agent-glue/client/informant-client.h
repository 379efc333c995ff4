/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's side of the retired agent <-> VM informant protocol
 * (doc/protocols.md, "Informant protocol"), non-blocking on sd-event: a client for the
 * informant's endpoints (/register, /health-check, /downscale, /upscale,
 * /unregister) and the agent's own per-registration HTTP server (/id,
 * /suspend, /resume, /try-upscale).
 *
 * Lifecycle, as the v0.10 agent did it: every registration gets a fresh
 * server and a fresh random agent ID. The server starts *unconfirmed*,
 * becomes *suspended* when /register succeeds (after the informant called
 * GET /id back), and *running* when the informant POSTs /resume. Only a
 * running server may send /downscale and /upscale, and the agent makes at
 * most one request to the informant at a time. Any 4xx/5xx from the
 * informant on register, health-check, up- or downscale, a bad /register
 * answer, or a /suspend, /resume, /try-upscale in the wrong state makes the
 * server exit: it sends DELETE /unregister if the informant may have heard
 * of it, and a new server with a new ID registers after retry_wait.
 *
 * Implemented in informant-agent.c (the lifecycle), informant-server.c
 * (the agent's server), informant-calls.c (its requests to the informant)
 * and informant-events.c: one state machine (informant-priv.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "agent-glue/codec/informant.h"
#include "agent-glue/codec/quantity.h"
#include "base/error.h"
#include "net/http-client.h"

struct ag_inf_agent;

enum ag_inf_mode {
	AG_INF_NONE,        /* no server: waiting to (re)register, or stopped */
	AG_INF_UNCONFIRMED, /* server up, /register not (yet) answered */
	AG_INF_SUSPENDED,
	AG_INF_RUNNING,
};
const char *ag_inf_mode_name(enum ag_inf_mode m);

/* Defaults are those of the v0.10 agent's config map; 0 picks them. */
#define AG_INF_DEFAULT_PORT                   10301
#define AG_INF_DEFAULT_REGISTER_TIMEOUT_USEC  (2 * 1000000ULL)
#define AG_INF_DEFAULT_REQUEST_TIMEOUT_USEC   (1 * 1000000ULL)
#define AG_INF_DEFAULT_DOWNSCALE_TIMEOUT_USEC (2 * 1000000ULL)
#define AG_INF_DEFAULT_HEALTH_INTERVAL_USEC   (5 * 1000000ULL)
#define AG_INF_DEFAULT_RETRY_WAIT_USEC        (5 * 1000000ULL)

struct ag_inf_agent_config {
	/* Base URL of the informant, "http://10.0.3.9:10301" (no path). */
	const char *informant_url;
	/* Where the agent's server listens, "ADDR:PORT"; port 0 = ephemeral
	 * (the v0.10 agent's choice). */
	const char *listen;
	/* Host advertised in agentServeAddr ("<host>:<bound port>"); NULL =
	 * the host part of listen (which must then not be a wildcard). */
	const char *advertise_host;
	uint32_t min_version, max_version; /* 0 = AG_INF_VERSION_MIN / _MAX */
	uint64_t register_timeout_usec;    /* /register and /unregister */
	uint64_t request_timeout_usec;     /* /health-check */
	uint64_t downscale_timeout_usec;   /* /downscale and /upscale (sic) */
	uint64_t health_interval_usec;     /* between health checks while running (>= v1.2) */
	uint64_t retry_wait_usec;          /* after a server exit, before re-registering */
	/* A process that may not open sockets (the guest worker,
	 * doc/privsep.md) gets them from these, given hook_ud; NULL: the
	 * agent opens its own. listen_socket returns a socket bound (where
	 * `listen` says) and listening, for one registration's server;
	 * dial a connection to the informant (whose host must then be a
	 * numeric address). Both return a descriptor the agent owns, or a
	 * negative errno with err set. */
	int (*listen_socket)(void *hook_ud, struct vmact_err *err);
	net_http_connect_fn *dial;
	void *hook_ud;
};

/* Notifications; every member may be NULL. They run from the event loop
 * and must not free the agent. */
struct ag_inf_agent_events {
	/* Mode of the current server changed; agent_id is that server's. */
	void (*mode_changed)(void *ud, enum ag_inf_mode mode, const char *agent_id);
	/* /register succeeded (desc validated). */
	void (*registered)(void *ud, const char *agent_id, const struct ag_informant_desc *desc);
	/* The informant asked for more resources (POST /try-upscale, >= v1.1). */
	void (*try_upscale)(void *ud, bool cpu, bool memory);
	/* A server exited; err says why. A new registration follows after
	 * retry_wait unless the agent is stopping. */
	void (*server_exited)(void *ud, const char *agent_id, const struct vmact_err *err,
			      bool retry_should_fix);
	/* Something worth a log line that changed nothing (a bad request to
	 * the agent's server, a failed /unregister). */
	void (*notice)(void *ud, const struct vmact_err *err);
};

int ag_inf_agent_new(sd_event *ev, const struct ag_inf_agent_config *cfg,
		     const struct ag_inf_agent_events *events, void *ud, struct ag_inf_agent **out,
		     struct vmact_err *err);
/* Starts the first server and registers. */
int ag_inf_agent_start(struct ag_inf_agent *a, struct vmact_err *err);
/* Stops for good: the server exits and unregisters; done(ud) runs from the
 * event loop once no request is pending any more (bounded by
 * register_timeout). Pending up/downscale callbacks get -ECANCELED. */
int ag_inf_agent_stop(struct ag_inf_agent *a, void (*done)(void *ud), void *ud);
/* Wait before the next registration after a server exit (backoff): takes
 * effect for the retry armed after the next exit, so server_exited may
 * call it for the retry about to be scheduled. 0 = retry_wait. */
void ag_inf_agent_set_retry_wait(struct ag_inf_agent *a, uint64_t usec);
/* After a failed ag_inf_agent_start (e.g. the listen address in use):
 * tries again after the retry wait instead of giving up. */
void ag_inf_agent_retry_later(struct ag_inf_agent *a);
/* Releases everything at once; pending callbacks are not invoked. NULL ok. */
void ag_inf_agent_free(struct ag_inf_agent *a);

/* result: 0 with r filled (r->ok false = the informant denied), or a
 * negative errno with err: -ECANCELED (server exited or agent stopped
 * before an answer), -EPROTO (bad answer), -EREMOTEIO (4xx/5xx; the server
 * exits), transport errors (-ETIMEDOUT, -ECONNREFUSED, ...). */
typedef void ag_inf_downscale_fn(void *ud, int result, const struct ag_downscale_result *r,
				 const struct vmact_err *err);
typedef void ag_inf_upscale_fn(void *ud, int result, const struct vmact_err *err);

/* PUT /downscale, /upscale with RawResources (< v2.0) or a signed
 * AgentResourceMessage (v2.0). -EAGAIN when the server is not running,
 * -EBUSY while another up/downscale is pending. A health check in flight
 * only delays the request. The callback runs exactly once unless the agent
 * is freed. */
int ag_inf_agent_downscale(struct ag_inf_agent *a, const struct vmact_resources *to,
			   ag_inf_downscale_fn *cb, void *ud, struct vmact_err *err);
int ag_inf_agent_upscale(struct ag_inf_agent *a, const struct vmact_resources *to,
			 ag_inf_upscale_fn *cb, void *ud, struct vmact_err *err);

/* Introspection (for the daemon's state dump and tests). */
enum ag_inf_mode ag_inf_agent_mode(const struct ag_inf_agent *a);
/* Current server's agent ID, "" without a server. */
const char *ag_inf_agent_id(const struct ag_inf_agent *a);
/* agentServeAddr of the current server, "" without one. */
const char *ag_inf_agent_serve_addr(const struct ag_inf_agent *a);
/* Negotiated version of the current server; 0 until registered. */
uint32_t ag_inf_agent_version(const struct ag_inf_agent *a);
/* Last sequence number the current server sent (0 = none yet). */
uint64_t ag_inf_agent_seq(const struct ag_inf_agent *a);
/* How many servers were started so far (each with its own ID). */
unsigned ag_inf_agent_generation(const struct ag_inf_agent *a);
