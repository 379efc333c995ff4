/* SPDX-License-Identifier: Apache-2.0 */
/* The informant agent's state, shared by its files and private to them
 * (the rest of vmact uses informant-client.h). One state machine in four
 * files, which call each other one way (tests/checks/check-cycles.sh):
 *   informant-agent.c   the core: its lifecycle, one registration (server)
 *                       after the other, each with a fresh agent ID; the
 *                       retry wait after an exit, the health-check timer,
 *                       stopping; the public calls
 *     -> informant-server.c  the per-registration HTTP server: the
 *                       endpoints the informant calls (GET /id, POST
 *                       /suspend, /resume, /try-upscale) and the mode
 *                       changes they make
 *     -> informant-calls.c   the requests to the informant, one in flight
 *                       at a time: /register, /health-check, the caller's
 *                       /downscale and /upscale, and /unregister when a
 *                       server exits (those run beside the others)
 *   all -> informant-events.c  what the agent tells its owner (a mode
 *                       change, a notice) and the modes' names
 * The server and the calls change the core's state too: they end a
 * registration and wake a stop through a->core (struct ag_inf_core_ops),
 * never by calling informant-agent.c, as the runner's concerns report
 * through r->core (actuator/runner/runner-priv.h). */
#pragma once

/* Like libvirt's *priv.h: a file outside the informant agent's that
 * includes this has made a mistake the compiler should catch. */
#ifndef AG_INF_PRIV_ALLOW
#error "informant-priv.h is private to the informant agent: include agent-glue/client/informant-client.h"
#endif

#include "agent-glue/client/informant-client.h"
#include "base/list.h"
#include "net/http-client.h"
#include "net/http-server.h"

struct ag_inf_core_ops;

/* One registration: its own listener, agent ID and sequence counter. */
struct ag_inf_server {
	struct ag_inf_agent *a;
	VMACT_LIST_FIELDS(struct ag_inf_server, dead);
	struct net_http_server *http;
	struct ag_agent_desc desc;
	uint64_t seq;
	uint32_t version;
	enum ag_inf_mode mode;
	bool register_sent;
	bool received_id_check;
	bool made_contact;
	/* /resume arrived after the informant's /id call but before we saw
	 * its /register answer: the two travel on different connections, so
	 * the order is a race the protocol itself has (the Go agent has a
	 * FIXME about it). The informant only resumes registered agents, so
	 * the answer, once validated, leads straight to running. */
	bool resume_early;
	bool exited;
};

enum ag_inf_op {
	AG_INF_OP_NONE,
	AG_INF_OP_REGISTER,
	AG_INF_OP_HEALTH,
	AG_INF_OP_DOWNSCALE,
	AG_INF_OP_UPSCALE,
};

struct ag_inf_unreg {
	VMACT_LIST_FIELDS(struct ag_inf_unreg, unregs);
	struct ag_inf_agent *a;
	struct net_http_call *call;
	char agent_id[AG_INF_ID_MAX];
};

struct ag_inf_agent {
	const struct ag_inf_core_ops *core; /* informant-agent.c's, set at creation */
	sd_event *ev;
	struct ag_inf_agent_config cfg;
	char *informant_url, *listen, *advertise_host;
	struct ag_inf_agent_events events;
	void *ud;
	struct net_http_client *http;

	struct ag_inf_server *srv;  /* current, NULL between registrations */
	struct ag_inf_server *dead; /* exited, listener still to be closed */
	sd_event_source *reap, *retry_timer, *health_timer, *stop_defer;

	/* The one request to the informant in flight. */
	struct net_http_call *inflight;
	enum ag_inf_op inflight_kind;
	bool health_due;

	/* The one caller-requested up/downscale, queued or in flight. */
	struct {
		enum ag_inf_op kind;
		struct vmact_resources to;
		ag_inf_downscale_fn *down_cb;
		ag_inf_upscale_fn *up_cb;
		void *ud;
	} op;

	struct ag_inf_unreg *unregs;
	bool started, stopping;
	void (*stop_done)(void *ud);
	void *stop_ud;
	unsigned generation;
};

/* What the server and the calls ask of the core (informant-agent.c). */
struct ag_inf_core_ops {
	/* Ends the current server: cancels its call, unregisters it if the
	 * informant may know it, fails the pending up/downscale and schedules
	 * the next registration (unless stopping). */
	void (*server_exit)(struct ag_inf_agent *a, const struct vmact_err *why,
			    bool retry_should_fix);
	/* Calls the stop callback once nothing is left to wait for. */
	void (*stop_check)(struct ag_inf_agent *a);
};

/* The core's operations under the names every file calls them by. */
static inline void ag_inf_server_exit(struct ag_inf_agent *a, const struct vmact_err *why,
				      bool retry_should_fix)
{
	a->core->server_exit(a, why, retry_should_fix);
}

static inline void ag_inf_stop_check(struct ag_inf_agent *a)
{
	a->core->stop_check(a);
}

/* informant-events.c */
void ag_inf_notice(struct ag_inf_agent *a, const struct vmact_err *err);
/* Reports a mode change of the current server. */
void ag_inf_set_mode(struct ag_inf_agent *a, struct ag_inf_server *srv, enum ag_inf_mode m);

/* informant-server.c */
/* A server for a new registration, listening, with a fresh agent ID. */
int ag_inf_server_new(struct ag_inf_agent *a, struct ag_inf_server **out, struct vmact_err *err);
void ag_inf_server_free(struct ag_inf_server *srv);

/* informant-calls.c */
/* Sends what is due next (register, then the queued up/downscale, then a
 * health check) unless a request is in flight. */
void ag_inf_kick(struct ag_inf_agent *a);
/* Ends the caller's up/downscale with result. */
void ag_inf_complete_op(struct ag_inf_agent *a, int result, const struct ag_downscale_result *dr,
			const struct vmact_err *err);
void ag_inf_send_unregister(struct ag_inf_agent *a, const struct ag_agent_desc *desc);
