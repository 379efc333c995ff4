/* SPDX-License-Identifier: Apache-2.0 */
/* The approver: what stands for the guest in a VM's scaling. It approves
 * (or denies) downscales, is notified of upscales, may ask for more, and
 * may hold resizing altogether. The runner talks to it only through this
 * interface; a VM without one has its shrinks approved by the host's own
 * evidence (doc/policy.md, "Without an agent").
 *
 * Two implementations, chosen by the VM's metadata:
 *   approver-monitor.c    the vm-monitor (<vmact:monitor>, websocket,
 *                         agent-glue/client/monitor-client.h); in vmactd through
 *                         approver-proxy.c, which runs it in the VM's
 *                         unprivileged guest worker (doc/privsep.md)
 *   approver-informant.c  the legacy VM informant (<vmact:informant>,
 *                         HTTP, agent-glue/client/informant-client.h)
 *
 * Every request is asynchronous: it returns at once and its outcome comes
 * through the completion callback given with it, so an implementation may
 * later live in another process. At most one request is pending at a time
 * (the runner waits for its completion); a request refused at once returns
 * a negative errno and its callback is never called. On free, a pending
 * request completes with ACT_APPROVAL_FAILED. Implementations log their
 * own protocol's events (they are the daemon's edge); the owner logs
 * nothing about them. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "base/error.h"
#include "base/resources.h"

struct act_approver;

enum act_approval {
	ACT_APPROVAL_OK,     /* notified (upscale) or approved (downscale) */
	ACT_APPROVAL_DENIED, /* downscale only: the guest cannot give it up */
	ACT_APPROVAL_FAILED, /* no answer: transport error, timeout, stopped */
};

/* "ok", "denied", "failed": events and the control API. */
static inline const char *act_approval_name(enum act_approval a)
{
	return a == ACT_APPROVAL_OK ? "ok" : a == ACT_APPROVAL_DENIED ? "denied" : "failed";
}

/* Completion of one request; userdata is the request's. */
typedef void act_approval_fn(void *userdata, enum act_approval outcome);

/* What an approver reports to its owner (userdata given at creation). */
struct act_approver_events {
	/* Approvals start: from now the guest has approved what the VM
	 * uses (the core's monitor becomes active). */
	void (*connected)(void *userdata);
	/* Every approval so far is void (disconnection, suspension).
	 * requests_dropped: a pending request will not complete. */
	void (*lost)(void *userdata, bool requests_dropped);
	/* may_resize or approves changed otherwise: decide again. */
	void (*changed)(void *userdata);
	/* The guest asks for more CPU and/or memory. */
	void (*upscale_requested)(void *userdata, bool cpu, bool memory);
};

struct act_approver_ops {
	const char *name; /* "vm-monitor", "informant": for the owner's logs */
	/* up: notifies the guest that the VM has grown to `target`; else asks
	 * it whether the VM may shrink to `target`. Both implementations send
	 * either the same way and differ only in the message. */
	int (*request)(struct act_approver *a, bool up, const struct vmact_resources *target,
		       act_approval_fn *done, void *userdata, struct vmact_err *err);
	/* Resizing is allowed at all (false: hold every resize). */
	bool (*may_resize)(const struct act_approver *a);
	/* Requests can be made now (downscales become possible). */
	bool (*approves)(const struct act_approver *a);
	/* Stops it; a pending request completes with ACT_APPROVAL_FAILED. */
	void (*free)(struct act_approver *a);
};

/* The common head of every implementation. */
struct act_approver {
	const struct act_approver_ops *ops;
};

static inline int act_approver_request_upscale(struct act_approver *a,
					       const struct vmact_resources *target,
					       act_approval_fn *done, void *userdata,
					       struct vmact_err *err)
{
	return a->ops->request(a, true, target, done, userdata, err);
}

static inline int act_approver_request_downscale(struct act_approver *a,
						 const struct vmact_resources *target,
						 act_approval_fn *done, void *userdata,
						 struct vmact_err *err)
{
	return a->ops->request(a, false, target, done, userdata, err);
}

/* The one pending request of an implementation, with the rules above:
 * a second one is refused, and completing it forgets it before calling
 * back (the callback may make the next request). */
struct act_approval_pending {
	act_approval_fn *done;
	void *userdata;
};

/* Records a request about to be sent; -EBUSY if one is pending. `who`
 * names the approver in the message. */
static inline int act_approval_begin(struct act_approval_pending *p, act_approval_fn *done,
				     void *userdata, const char *who, struct vmact_err *err)
{
	if (p->done)
		return vmact_err_set(err, EBUSY, "%s request is pending", who);
	*p = (struct act_approval_pending){ .done = done, .userdata = userdata };
	return 0;
}

/* The request could not be sent: it is refused at once, with no callback. */
static inline void act_approval_cancel(struct act_approval_pending *p)
{
	p->done = NULL;
}

/* Calls the pending request's callback with `outcome`, if one is pending. */
static inline void act_approval_complete(struct act_approval_pending *p, enum act_approval outcome)
{
	act_approval_fn *done = p->done;

	p->done = NULL;
	if (done)
		done(p->userdata, outcome);
}

static inline bool act_approver_may_resize(const struct act_approver *a)
{
	return a->ops->may_resize(a);
}

static inline bool act_approver_approves(const struct act_approver *a)
{
	return a->ops->approves(a);
}

static inline const char *act_approver_name(const struct act_approver *a)
{
	return a->ops->name;
}

static inline void act_approver_free(struct act_approver *a)
{
	if (a)
		a->ops->free(a);
}

/* ---- the vm-monitor ---------------------------------------------------- */

/* Connects to the vm-monitor at `endpoint` (ws://HOST[:PORT][/PATH],
 * http://... likewise, unix:PATH); `name` prefixes its log lines. */
int act_approver_monitor_new(sd_event *event, const char *name, const char *endpoint,
			     const struct act_approver_events *events, void *userdata,
			     struct act_approver **out, struct vmact_err *err);

/* The same, opening each connection with dial(dial_ud) (vmact-guestd:
 * through vmactd, doc/privsep.md). */
int act_approver_monitor_new_dial(sd_event *event, const char *name, const char *endpoint,
				  int (*dial)(void *dial_ud, struct vmact_err *err), void *dial_ud,
				  const struct act_approver_events *events, void *userdata,
				  struct act_approver **out, struct vmact_err *err);

/* ---- the legacy informant ---------------------------------------------- */

/* Registers with the informant at `endpoint` (http://HOST:PORT), serving
 * at `listen`, advertised as `advertise_host` ("" or NULL: listen's
 * host); in vmact-guestd, sockets come from the hooks in `sock`
 * (listen_socket, dial, hook_ud of struct ag_inf_agent_config; NULL: the
 * agent opens its own). Freeing it frees the agent at once: an owner
 * that wants it to unregister first stops it (below). */
struct act_inf_sockets {
	int (*listen_socket)(void *hook_ud, struct vmact_err *err);
	int (*dial)(void *hook_ud, const char *url, struct vmact_err *err);
	void *hook_ud;
};
int act_approver_informant_new(sd_event *event, const char *name, const char *endpoint,
			       const char *listen, const char *advertise_host,
			       const struct act_inf_sockets *sock,
			       const struct act_approver_events *events, void *userdata,
			       struct act_approver **out, struct vmact_err *err);
/* Stops an approver of act_approver_informant_new: its agent
 * unregisters; done(ud) runs from the loop once it has (bounded by the
 * register timeout). Free it after. */
int act_approver_informant_stop(struct act_approver *a, void (*done)(void *ud), void *ud);

/* What an informant agent in mode `mode` (enum ag_inf_mode) lets the
 * runner do. Running: everything, downscales with the informant's
 * approval. Suspended (another agent is current): nothing at all until
 * /resume. No server or unconfirmed (unreachable, unregistered): grow
 * only, like a VM without a vm-monitor. */
struct act_inf_gate {
	bool may_resize; /* start hotplugs */
	bool approves;   /* the core's monitor is active (downscales possible) */
};
struct act_inf_gate act_inf_gate_for(int mode);

/* Registration retry wait after `failures` consecutive server exits
 * without reaching running: 5 s (the Neon agent's retryServer wait)
 * doubling up to 80 s. */
uint64_t act_inf_retry_usec(unsigned failures);
