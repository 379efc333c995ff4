/* SPDX-License-Identifier: Apache-2.0 */
/* The legacy VM informant as a VM's approver (approver.h), through
 * agent-glue/client/informant-client's agent: the agent registers with the
 * informant and serves its callbacks; its mode decides what the runner
 * may do (act_inf_gate_for). Run by the VM's informant worker
 * (vmact-guestd --informant), or by vmactd itself without guest workers;
 * vmactd lets it unregister before freeing it (actuator/runner/informant.c). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/client/informant-client.h"
#include "base/list.h"
#include "base/log.h"
#include "guestd/approver.h"

struct act_inf_approver {
	struct act_approver head;
	struct ag_inf_agent *agent;
	bool stopped; /* stopped by its owner: unregistering, quiet */
	const struct act_approver_events *events;
	void *ud;
	char *name;
	enum ag_inf_mode mode;
	unsigned failures;              /* server exits since the last time running */
	char reason[VMACT_ERR_MSG_MAX]; /* last reason logged */
	/* The pending request. */
	struct act_approval_pending pending;
};

struct act_inf_gate act_inf_gate_for(int mode)
{
	switch ((enum ag_inf_mode)mode) {
	case AG_INF_RUNNING:
		return (struct act_inf_gate){ .may_resize = true, .approves = true };
	case AG_INF_SUSPENDED:
		return (struct act_inf_gate){ .may_resize = false, .approves = false };
	case AG_INF_NONE:
	case AG_INF_UNCONFIRMED:
		break;
	}
	return (struct act_inf_gate){ .may_resize = true, .approves = false };
}

uint64_t act_inf_retry_usec(unsigned failures)
{
	uint64_t w = AG_INF_DEFAULT_RETRY_WAIT_USEC;

	for (unsigned i = 1; i < failures && w < 80 * 1000000ULL; i++)
		w *= 2;
	return w < 80 * 1000000ULL ? w : 80 * 1000000ULL;
}

/* One warning per new reason: an unreachable informant would otherwise
 * log on every retry. */
static void log_reason(struct act_inf_approver *i, const char *what, const char *msg)
{
	if (strcmp(i->reason, msg) == 0) {
		log_debug("%s: informant: %s: %s", i->name, what, msg);
		return;
	}
	log_warning("%s: informant: %s: %s", i->name, what, msg);
	snprintf(i->reason, sizeof(i->reason), "%s", msg);
}

static void up_done(void *ud, int result, const struct vmact_err *err)
{
	struct act_inf_approver *i = ud;

	if (result == 0) {
		act_approval_complete(&i->pending, ACT_APPROVAL_OK);
		return;
	}
	if (!i->stopped)
		log_reason(i, "upscale notification failed",
			   err && err->msg[0] ? err->msg : strerror(-result));
	act_approval_complete(&i->pending, ACT_APPROVAL_FAILED);
}

static void down_done(void *ud, int result, const struct ag_downscale_result *res,
		      const struct vmact_err *err)
{
	struct act_inf_approver *i = ud;

	if (result == 0 && res->ok) {
		log_info("%s: informant approved the downscale (%s)", i->name, res->status);
		act_approval_complete(&i->pending, ACT_APPROVAL_OK);
	} else if (result == 0) {
		log_info("%s: informant denied the downscale: %s", i->name, res->status);
		act_approval_complete(&i->pending, ACT_APPROVAL_DENIED);
	} else {
		if (!i->stopped)
			log_reason(i, "downscale request failed",
				   err && err->msg[0] ? err->msg : strerror(-result));
		act_approval_complete(&i->pending, ACT_APPROVAL_FAILED);
	}
}

static int request(struct act_approver *a, bool up, const struct vmact_resources *target,
		   act_approval_fn *done, void *userdata, struct vmact_err *err)
{
	struct act_inf_approver *i = (struct act_inf_approver *)a;
	int ret;

	ret = act_approval_begin(&i->pending, done, userdata, "an informant", err);
	if (ret < 0)
		return ret;
	ret = up ? ag_inf_agent_upscale(i->agent, target, up_done, i, err)
		 : ag_inf_agent_downscale(i->agent, target, down_done, i, err);
	if (ret < 0) {
		act_approval_cancel(&i->pending);
		log_reason(i,
			   up ? "cannot send the upscale notification"
			      : "cannot send the downscale request",
			   err->msg);
	}
	return ret;
}

static bool may_resize(const struct act_approver *a)
{
	const struct act_inf_approver *i = (const struct act_inf_approver *)a;

	return act_inf_gate_for(i->mode).may_resize;
}

static bool approves(const struct act_approver *a)
{
	const struct act_inf_approver *i = (const struct act_inf_approver *)a;

	return act_inf_gate_for(i->mode).approves;
}

/* Frees it at once; an owner that wants the agent to unregister first has
 * stopped it (act_approver_informant_stop). */
static void inf_free(struct act_approver *a)
{
	struct act_inf_approver *i = (struct act_inf_approver *)a;

	ag_inf_agent_free(i->agent);
	free(i->name);
	free(i);
}

static const struct act_approver_ops informant_ops = {
	.name = "informant",
	.request = request,
	.may_resize = may_resize,
	.approves = approves,
	.free = inf_free,
};

static void on_mode_changed(void *ud, enum ag_inf_mode mode, const char *agent_id)
{
	struct act_inf_approver *i = ud;
	enum ag_inf_mode old;

	if (i->stopped)
		return;
	old = i->mode;
	i->mode = mode;
	if (mode == old)
		return;
	if (mode == AG_INF_RUNNING) {
		log_info("%s: informant: agent %s running (protocol v%s)", i->name, agent_id,
			 ag_inf_version_name(ag_inf_agent_version(i->agent))
				 ? ag_inf_version_name(ag_inf_agent_version(i->agent))
				 : "?");
		i->failures = 0;
		i->reason[0] = 0;
		i->events->connected(i->ud);
		return;
	}
	if (mode == AG_INF_SUSPENDED && old == AG_INF_RUNNING)
		log_info("%s: informant: agent %s suspended by the informant: no resizing "
			 "until it is resumed",
			 i->name, agent_id);
	else
		log_debug("%s: informant: agent %s now %s", i->name, agent_id,
			  ag_inf_mode_name(mode));
	if (old == AG_INF_RUNNING)
		i->events->lost(i->ud, false);
	else
		i->events->changed(i->ud);
}

static void on_registered(void *ud, const char *agent_id, const struct ag_informant_desc *d)
{
	struct act_inf_approver *i = ud;

	if (!i->stopped)
		log_info("%s: informant: registered agent %s at %s (protocol v%s)", i->name,
			 agent_id, ag_inf_agent_serve_addr(i->agent),
			 ag_inf_version_name(d->version) ? ag_inf_version_name(d->version) : "?");
}

static void on_try_upscale(void *ud, bool cpu, bool memory)
{
	struct act_inf_approver *i = ud;

	if (i->stopped)
		return;
	log_info("%s: informant asks for more%s%s", i->name, cpu ? " CPU" : "",
		 memory ? (cpu ? " and memory" : " memory") : "");
	i->events->upscale_requested(i->ud, cpu, memory);
}

static void on_server_exited(void *ud, const char *agent_id, const struct vmact_err *why,
			     bool retry_should_fix)
{
	struct act_inf_approver *i = ud;
	uint64_t wait;

	if (i->stopped)
		return;
	i->failures++;
	wait = act_inf_retry_usec(i->failures);
	ag_inf_agent_set_retry_wait(i->agent, wait);
	log_reason(i, "not registered", why && why->msg[0] ? why->msg : "server exited");
	log_debug("%s: informant: registering again in %" PRIu64 " s (attempt %u)", i->name,
		  wait / 1000000u, i->failures + 1);
}

static void on_notice(void *ud, const struct vmact_err *e)
{
	struct act_inf_approver *i = ud;

	if (!i->stopped)
		log_reason(i, "notice", e->msg);
	else
		log_debug("informant: %s", e->msg);
}

int act_approver_informant_new(sd_event *event, const char *name, const char *endpoint,
			       const char *listen, const char *advertise_host,
			       const struct act_inf_sockets *sock,
			       const struct act_approver_events *events, void *userdata,
			       struct act_approver **out, struct vmact_err *err)
{
	static const struct ag_inf_agent_events ev = {
		.mode_changed = on_mode_changed,
		.registered = on_registered,
		.try_upscale = on_try_upscale,
		.server_exited = on_server_exited,
		.notice = on_notice,
	};
	struct ag_inf_agent_config ic = {
		.informant_url = endpoint,
		.listen = listen,
		.advertise_host = advertise_host,
		.retry_wait_usec = act_inf_retry_usec(1),
	};
	struct act_inf_approver *i;
	int ret;

	if (sock) {
		ic.listen_socket = sock->listen_socket;
		ic.dial = sock->dial;
		ic.hook_ud = sock->hook_ud;
	}
	i = calloc(1, sizeof(*i));
	if (!i || !(i->name = strdup(name))) {
		free(i);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	i->head.ops = &informant_ops;
	i->events = events;
	i->ud = userdata;
	ret = ag_inf_agent_new(event, &ic, &ev, i, &i->agent, err);
	if (ret < 0) {
		free(i->name);
		free(i);
		return vmact_err_prefix(err, "informant %s", endpoint);
	}
	/* A failure to start the first server (listen address in use) is
	 * retried like any other. */
	ret = ag_inf_agent_start(i->agent, err);
	if (ret < 0) {
		log_reason(i, "not registered", err->msg);
		vmact_err_reset(err);
		ag_inf_agent_retry_later(i->agent);
	}
	*out = &i->head;
	return 0;
}

int act_approver_informant_stop(struct act_approver *a, void (*done)(void *ud), void *ud)
{
	struct act_inf_approver *i = (struct act_inf_approver *)a;

	if (a->ops != &informant_ops || !i->agent)
		return -EINVAL;
	/* Quiet from now: no event for an owner that is going. */
	i->stopped = true;
	return ag_inf_agent_stop(i->agent, done, ud);
}
