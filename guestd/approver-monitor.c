/* SPDX-License-Identifier: Apache-2.0 */
/* The vm-monitor as a VM's approver (approver.h): downscale requests and
 * upscale notifications over agent-glue/monitor-client. It never holds a
 * resize; whether a request makes sense (the connection is up) is the
 * core's monitor state, set from connected/lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/client/monitor-client.h"
#include "base/endpoint.h"
#include "base/log.h"
#include "guestd/approver.h"

struct mon_approver {
	struct act_approver head;
	struct ag_mon_client *client;
	const struct act_approver_events *events;
	void *ud;
	char *name;
	/* The pending request. */
	struct act_approval_pending pending;
};

static void up_done(struct ag_mon_client *c, const struct ag_mon_result *res, void *ud)
{
	struct mon_approver *m = ud;

	if (res->outcome != AG_MON_OUTCOME_OK) {
		log_warning("%s: vm-monitor upscale notification failed: %s", m->name,
			    res->status ? res->status : "?");
		act_approval_complete(&m->pending, ACT_APPROVAL_FAILED);
		return;
	}
	act_approval_complete(&m->pending, ACT_APPROVAL_OK);
}

static void down_done(struct ag_mon_client *c, const struct ag_mon_result *res, void *ud)
{
	struct mon_approver *m = ud;

	switch (res->outcome) {
	case AG_MON_OUTCOME_OK:
		log_info("%s: vm-monitor approved the downscale (%s)", m->name,
			 res->status ? res->status : "");
		act_approval_complete(&m->pending, ACT_APPROVAL_OK);
		return;
	case AG_MON_OUTCOME_DENIED:
		log_info("%s: vm-monitor denied the downscale: %s", m->name,
			 res->status ? res->status : "");
		act_approval_complete(&m->pending, ACT_APPROVAL_DENIED);
		return;
	case AG_MON_OUTCOME_FAILED:
		break;
	}
	log_warning("%s: vm-monitor downscale request failed: %s", m->name,
		    res->status ? res->status : "?");
	act_approval_complete(&m->pending, ACT_APPROVAL_FAILED);
}

static int request(struct act_approver *a, bool up, const struct vmact_resources *target,
		   act_approval_fn *done, void *userdata, struct vmact_err *err)
{
	struct mon_approver *m = (struct mon_approver *)a;
	int ret;

	ret = act_approval_begin(&m->pending, done, userdata, "a vm-monitor", err);
	if (ret < 0)
		return ret;
	ret = up ? ag_mon_client_upscale(m->client, target, up_done, m, NULL, err)
		 : ag_mon_client_downscale(m->client, target, down_done, m, NULL, err);
	if (ret < 0) {
		act_approval_cancel(&m->pending);
		log_warning("%s: cannot send the vm-monitor %s: %s", m->name,
			    up ? "upscale notification" : "downscale request", err->msg);
	}
	return ret;
}

static bool always(const struct act_approver *a)
{
	return true;
}

static void mon_free(struct act_approver *a)
{
	struct mon_approver *m = (struct mon_approver *)a;

	/* Fails a pending request and reports the disconnection through the
	 * callbacks below: m stays valid until it returns. */
	ag_mon_client_free(m->client);
	free(m->name);
	free(m);
}

static const struct act_approver_ops monitor_ops = {
	.name = "vm-monitor",
	.request = request,
	.may_resize = always,
	.approves = always,
	.free = mon_free,
};

static void on_connected(struct ag_mon_client *c, uint64_t gen, void *ud)
{
	struct mon_approver *m = ud;

	log_info("%s: vm-monitor connected", m->name);
	m->events->connected(m->ud);
}

static void on_disconnected(struct ag_mon_client *c, uint64_t gen, const char *reason, void *ud)
{
	struct mon_approver *m = ud;

	log_info("%s: vm-monitor disconnected: %s", m->name, reason ? reason : "");
	m->events->lost(m->ud, true);
}

static void on_upscale_requested(struct ag_mon_client *c, uint64_t at, void *ud)
{
	struct mon_approver *m = ud;

	log_info("%s: vm-monitor asks for more memory", m->name);
	m->events->upscale_requested(m->ud, false, true);
}

static void on_log(struct ag_mon_client *c, int prio, const char *msg, void *ud)
{
	struct mon_approver *m = ud;

	vmact_log(prio, "%s: vm-monitor: %s", m->name, msg);
}

int act_approver_monitor_new(sd_event *event, const char *name, const char *endpoint,
			     const struct act_approver_events *events, void *userdata,
			     struct act_approver **out, struct vmact_err *err)
{
	return act_approver_monitor_new_dial(event, name, endpoint, NULL, NULL, events, userdata,
					     out, err);
}

int act_approver_monitor_new_dial(sd_event *event, const char *name, const char *endpoint,
				  int (*dial)(void *dial_ud, struct vmact_err *err), void *dial_ud,
				  const struct act_approver_events *events, void *userdata,
				  struct act_approver **out, struct vmact_err *err)
{
	static const struct ag_mon_client_callbacks cb = {
		.connected = on_connected,
		.disconnected = on_disconnected,
		.upscale_requested = on_upscale_requested,
		.log = on_log,
	};
	struct ag_mon_client_config mc = { .dial = dial, .dial_ud = dial_ud };
	struct vmact_endpoint ep;
	struct mon_approver *m;
	int ret;

	ret = vmact_endpoint_parse(endpoint, VMACT_EP_WS | VMACT_EP_HTTP | VMACT_EP_UNIX, &ep, err);
	if (ret < 0)
		return vmact_err_prefix(err, "<vmact:monitor> endpoint");
	if (ep.kind == VMACT_EP_UNIX) {
		mc.unix_path = ep.path;
	} else {
		mc.host = ep.host;
		mc.port = ep.port;
		mc.path = ep.path[0] ? ep.path : "/monitor";
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(name))) {
		free(m);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	m->head.ops = &monitor_ops;
	m->events = events;
	m->ud = userdata;
	ret = ag_mon_client_new(event, &mc, &cb, m, &m->client, err);
	if (ret >= 0)
		ret = ag_mon_client_start(m->client, err);
	if (ret < 0) {
		mon_free(&m->head);
		return ret;
	}
	*out = &m->head;
	return 0;
}
