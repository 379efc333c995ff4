/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's side of the vm-monitor connection (doc/protocols.md,
 * "Monitor calls" and "Monitor health and reconnect"), on the daemon's sd-event loop.
 *
 * Transport: a websocket (net/ws-client.h) either over TCP to
 * ws://HOST:PORT/monitor, or over a unix stream socket, typically the host
 * side of a libvirt virtio-serial channel (<channel type='unix'>) whose
 * guest end is bridged to the vm-monitor; the HTTP upgrade and the frames
 * are the same bytes in both cases.
 *
 * Behaviour follows the Go agent: version range {"min":1,"max":1} within
 * the connection timeout; requests get even ids and a response timeout;
 * late or unknown replies and unknown types are answered InvalidMessage;
 * a reply whose payload cannot be decoded is answered InvalidMessage and
 * the connection closed with 1011; health checks every interval, and the
 * connection is closed (1011) when they have failed for longer than the
 * allowed window; reconnects are spaced by the minimum wait measured from
 * the start of the previous attempt. Every (re)connection gets a new
 * generation number and a fresh state; requests of a lost connection fail.
 *
 * Callbacks run from the event loop (possibly from inside another client
 * call's processing). They may call any function here except
 * ag_mon_client_free(). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "agent-glue/codec/quantity.h"
#include "base/error.h"
#include "base/macro.h"

struct ag_mon_client;

struct ag_mon_client_config {
	/* Exactly one of unix_path or host. */
	/* TCP: address of the monitor. A name is resolved with a blocking
	 * getaddrinfo() at each attempt: give an address in the daemon. */
	const char *host;
	uint16_t port;         /* 0 = AG_MON_DEFAULT_PORT (10301) */
	const char *unix_path; /* unix stream socket to connect to */
	const char *path;      /* HTTP path, NULL = "/monitor" */
	/* 0 = the Go agent's default (doc/protocols.md, "Agent timing defaults"). */
	uint64_t connect_timeout_usec;    /* 4 s: dial + upgrade + version */
	uint64_t response_timeout_usec;   /* 5 s: per request */
	uint64_t health_interval_usec;    /* 5 s */
	uint64_t health_max_failing_usec; /* 30 s of sequential failures */
	uint64_t retry_min_wait_usec;     /* 5 s between connection attempts */
	uint64_t close_timeout_usec;      /* 5 s to wait for the peer's close */
	/* Optional: opens each connection (ws-client.h, net_ws_client_config). */
	int (*dial)(void *dial_ud, struct vmact_err *err);
	void *dial_ud;
};

enum ag_mon_client_state {
	AG_MON_CLIENT_IDLE,        /* created, not started */
	AG_MON_CLIENT_CONNECTING,  /* dial and HTTP upgrade */
	AG_MON_CLIENT_NEGOTIATING, /* version range sent, waiting for the answer */
	AG_MON_CLIENT_CONNECTED,
	AG_MON_CLIENT_CLOSING, /* close frame sent, waiting for the peer's */
	AG_MON_CLIENT_WAITING, /* between attempts */
	AG_MON_CLIENT_STOPPED,
};

enum ag_mon_outcome {
	AG_MON_OUTCOME_OK,     /* confirmed / downscale approved */
	AG_MON_OUTCOME_DENIED, /* DownscaleResult Ok:false; status has the monitor's reason */
	AG_MON_OUTCOME_FAILED, /* InternalError, timeout, lost connection, stop */
};

struct ag_mon_result {
	enum ag_mon_outcome outcome;
	const char *status;  /* monitor status (OK/DENIED) or error text (FAILED) */
	uint64_t generation; /* connection the request was sent on */
	uint64_t id;
};

typedef void ag_mon_done_fn(struct ag_mon_client *c, const struct ag_mon_result *res,
			    void *userdata);

struct ag_mon_client_callbacks {
	/* A connection finished its version negotiation. The owner resets its
	 * monitor state (approved := current usage). */
	void (*connected)(struct ag_mon_client *c, uint64_t generation, void *userdata);
	/* The connection `generation` ended (after its requests failed). */
	void (*disconnected)(struct ag_mon_client *c, uint64_t generation, const char *reason,
			     void *userdata);
	/* UpscaleRequest received at monotonic time at_usec (memory only). */
	void (*upscale_requested)(struct ag_mon_client *c, uint64_t at_usec, void *userdata);
	/* Things the Go agent logs (InvalidMessage from the monitor, failed
	 * attempts); the library itself never prints. */
	void (*log)(struct ag_mon_client *c, int priority, const char *msg, void *userdata);
};

struct ag_mon_client_stats {
	uint64_t attempts, connections;
	uint64_t upscale_requests;
	uint64_t invalid_sent, invalid_received;
	uint64_t health_ok, health_failed;
	uint64_t timeouts;
	uint16_t last_close_sent, last_close_received; /* 0 = none */
	char last_disconnect[256];
};

int ag_mon_client_new(sd_event *event, const struct ag_mon_client_config *cfg,
		      const struct ag_mon_client_callbacks *cb, void *userdata,
		      struct ag_mon_client **out, struct vmact_err *err);
/* Starts connecting (and reconnecting until stopped). */
int ag_mon_client_start(struct ag_mon_client *c, struct vmact_err *err);
/* Closes the connection with 1000 and fails pending requests; no
 * reconnect. Idempotent. */
void ag_mon_client_stop(struct ag_mon_client *c);
/* Stops and frees; not from a callback. NULL is fine. */
void ag_mon_client_free(struct ag_mon_client *c);

/* Requests; -ENOTCONN unless CONNECTED. On 0, done is called exactly once
 * later (never from inside this call). *id (optional) gets the id used. */
int ag_mon_client_upscale(struct ag_mon_client *c, const struct vmact_resources *granted,
			  ag_mon_done_fn *done, void *userdata, uint64_t *id,
			  struct vmact_err *err);
int ag_mon_client_downscale(struct ag_mon_client *c, const struct vmact_resources *target,
			    ag_mon_done_fn *done, void *userdata, uint64_t *id,
			    struct vmact_err *err);

/* Diagnostics and tests: queues one text frame exactly as given, outside
 * the request bookkeeping. -ENOTCONN unless CONNECTED. */
int ag_mon_client_send_raw(struct ag_mon_client *c, const char *text, struct vmact_err *err);

enum ag_mon_client_state ag_mon_client_state(const struct ag_mon_client *c);
const char *ag_mon_client_state_name(enum ag_mon_client_state s);
/* Generation of the current (or last) connection; 0 before the first. */
uint64_t ag_mon_client_generation(const struct ag_mon_client *c);
/* Requests waiting for a reply (including health checks). */
unsigned ag_mon_client_pending(const struct ag_mon_client *c);
/* Monotonic usec of the last UpscaleRequest / successful reply; 0 = never. */
uint64_t ag_mon_client_last_upscale_request(const struct ag_mon_client *c);
uint64_t ag_mon_client_last_success(const struct ag_mon_client *c);
const struct ag_mon_client_stats *ag_mon_client_stats(const struct ag_mon_client *c);
/* Monotonic usec when the current/last connection attempt started, and
 * when the next one is due (0 unless WAITING). */
uint64_t ag_mon_client_attempt_started(const struct ag_mon_client *c);
uint64_t ag_mon_client_next_attempt(const struct ag_mon_client *c);

DEFINE_PTR_CLEANUP(ag_mon_client_freep, struct ag_mon_client, ag_mon_client_free)
