/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the three parts of the informant agent (informant-client.h):
 *   informant-agent.c   lifecycle: registrations one after the other, the
 *                       retry and health timers, stopping;
 *   informant-server.c  the agent's per-registration HTTP server (/id,
 *                       /suspend, /resume, /try-upscale);
 *   informant-calls.c   the requests to the informant (/register,
 *                       /health-check, /downscale, /upscale, /unregister),
 *                       one at a time.
 * Not for use outside these files. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/list.h"
#include "net/http-client.h"
#include "net/http-server.h"
#include "agent-glue/client/informant-client.h"

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
	sd_event *ev;
	struct ag_inf_agent_config cfg;
	char *informant_url, *listen, *advertise_host;
	struct ag_inf_agent_events events;
	void *ud;
	struct net_http_client *http;

	struct ag_inf_server *srv;   /* current, NULL between registrations */
	struct ag_inf_server *dead;  /* exited, listener still to be closed */
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

/* informant-agent.c */
void ag_inf_notice(struct ag_inf_agent *a, const struct vmact_err *err);
/* Reports a mode change of the current server. */
void ag_inf_set_mode(struct ag_inf_agent *a, struct ag_inf_server *srv, enum ag_inf_mode m);
/* Ends the current server: cancels its call, unregisters it if the
 * informant may know it, fails the pending up/downscale and schedules the
 * next registration (unless stopping). */
void ag_inf_server_exit(struct ag_inf_agent *a, const struct vmact_err *why, bool retry_should_fix);
/* Calls the stop callback once nothing is left to wait for. */
void ag_inf_stop_check(struct ag_inf_agent *a);

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
