/* SPDX-License-Identifier: Apache-2.0 */
/* The vm-monitor as a VM's approver (approver.h) through the VM's guest
 * worker (worker/worker.h, doc/privsep.md): vmactd never parses the
 * monitor's bytes; the worker, unprivileged and sandboxed, runs
 * approver-monitor.c and sends back fixed records. While no worker runs
 * (crashed, hung, restarting) the approver approves nothing: the core's
 * monitor is inactive, so the VM is not scaled down. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "actuator/worker/approver-proxy.h"
#include "actuator/worker/worker.h"
#include "base/endpoint.h"
#include "base/log.h"

struct proxy {
	struct act_approver head;
	struct act_worker *gw;
	const struct act_approver_events *events;
	void *ud;
	char *name;
	struct act_approval_pending pending;
	uint32_t req_seq; /* the last request sent */
	bool req_out;     /* req_seq awaits its DONE */
	bool connected;   /* the worker said CONNECTED, no LOST since */
	bool may_resize, approves;
	bool stopping;    /* act_approver_proxy_stop: the owner is gone */
	const char *what; /* "vm-monitor", "informant": log lines */
	bool informant;
};

/* The worker's pending request will not be answered. */
static void drop_request(struct proxy *p)
{
	p->req_out = false;
	act_approval_cancel(&p->pending);
}

static int request(struct act_approver *a, bool up, const struct vmact_resources *target,
		   act_approval_fn *done, void *userdata, struct vmact_err *err)
{
	struct proxy *p = (struct proxy *)a;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_REQUEST,
				     .flags = up ? ACT_PRIVSEP_F_UP : 0 };
	int ret;

	ret = act_approval_begin(&p->pending, done, userdata, p->what, err);
	if (ret < 0)
		return ret;
	m.seq = ++p->req_seq;
	m.milli_cpu = target->milli_cpu;
	m.mem_bytes = target->mem_bytes;
	ret = act_worker_send(p->gw, &m, err);
	if (ret < 0) {
		act_approval_cancel(&p->pending);
		log_warning("%s: cannot send the %s %s: %s", p->name, p->what,
			    up ? "upscale notification" : "downscale request", err->msg);
		return ret;
	}
	p->req_out = true;
	return 0;
}

static bool may_resize(const struct act_approver *a)
{
	return ((const struct proxy *)a)->may_resize;
}

static bool approves(const struct act_approver *a)
{
	const struct proxy *p = (const struct proxy *)a;

	return act_worker_running(p->gw) && p->approves;
}

static void proxy_free(struct act_approver *a)
{
	struct proxy *p = (struct proxy *)a;

	act_worker_free(p->gw);
	p->req_out = false;
	act_approval_complete(&p->pending, ACT_APPROVAL_FAILED);
	if (p->connected && !p->stopping)
		p->events->lost(p->ud, true);
	free(p->name);
	free(p);
}

static const struct act_approver_ops proxy_ops = {
	.name = "vm-monitor",
	.request = request,
	.may_resize = may_resize,
	.approves = approves,
	.free = proxy_free,
};

static const struct act_approver_ops proxy_inf_ops = {
	.name = "informant",
	.request = request,
	.may_resize = may_resize,
	.approves = approves,
	.free = proxy_free,
};

static void on_up(void *ud)
{
	struct proxy *p = ud;

	/* A new informant worker's agent is not running yet: grow only
	 * (act_inf_gate_for) until its CHANGED says otherwise. */
	p->may_resize = true;
	p->approves = !p->informant;
	p->events->changed(p->ud);
}

static void on_down(void *ud)
{
	struct proxy *p = ud;
	bool had = p->pending.done != NULL;

	/* Every approval is void until a new worker's monitor connects; the
	 * VM keeps its size (no downscale without approval). */
	drop_request(p);
	p->may_resize = true;
	p->approves = false;
	if (p->connected || had) {
		p->connected = false;
		p->events->lost(p->ud, true);
	} else {
		p->events->changed(p->ud);
	}
}

static int on_message(void *ud, const struct act_privsep_msg *m, struct vmact_err *err)
{
	struct proxy *p = ud;

	switch (m->type) {
	case ACT_PRIVSEP_DONE:
		if (m->seq > p->req_seq)
			return vmact_err_set(err, EPROTO, "done %" PRIu32 " to no request", m->seq);
		/* An answer to a request dropped since (LOST) is stale. */
		if (!p->req_out || m->seq != p->req_seq)
			return 0;
		p->req_out = false;
		act_approval_complete(&p->pending, (enum act_approval)m->code);
		return 0;
	case ACT_PRIVSEP_CONNECTED:
		p->connected = true;
		p->events->connected(p->ud);
		return 0;
	case ACT_PRIVSEP_LOST:
		if (m->flags & ACT_PRIVSEP_F_DROPPED)
			drop_request(p);
		p->connected = false;
		p->events->lost(p->ud, m->flags & ACT_PRIVSEP_F_DROPPED);
		return 0;
	case ACT_PRIVSEP_CHANGED:
		p->may_resize = m->flags & ACT_PRIVSEP_F_MAY_RESIZE;
		p->approves = m->flags & ACT_PRIVSEP_F_APPROVES;
		p->events->changed(p->ud);
		return 0;
	case ACT_PRIVSEP_UPSCALE:
		p->events->upscale_requested(p->ud, m->flags & ACT_PRIVSEP_F_CPU,
					     m->flags & ACT_PRIVSEP_F_MEMORY);
		return 0;
	default:
		return vmact_err_set(err, EPROTO, "unexpected %s message",
				     act_privsep_type_name(m->type));
	}
}

static int proxy_new(sd_event *event, struct act_worker_config *gc,
		     const struct act_approver_events *events, void *userdata,
		     struct act_approver **out, struct vmact_err *err)
{
	static const struct act_worker_ops ops = {
		.up = on_up,
		.down = on_down,
		.message = on_message,
	};
	const char *name = gc->name;
	struct proxy *p;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p || !(p->name = strdup(name))) {
		free(p);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	p->head.ops = gc->monitor ? &proxy_ops : &proxy_inf_ops;
	p->what = gc->monitor ? "a vm-monitor" : "an informant";
	p->informant = !gc->monitor;
	p->events = events;
	p->ud = userdata;
	p->may_resize = true;
	/* The vm-monitor approves from the start (the core's own rule until
	 * it connects); the informant only once its agent runs. */
	p->approves = gc->monitor != NULL;
	ret = act_worker_new(event, gc, &ops, p, &p->gw, err);
	if (ret < 0) {
		free(p->name);
		free(p);
		return ret;
	}
	*out = &p->head;
	return 0;
}

int act_approver_proxy_new(sd_event *event, const char *name, const char *endpoint,
			   const char *program, const char *user,
			   const struct act_approver_events *events, void *userdata,
			   struct act_approver **out, struct vmact_err *err)
{
	struct act_worker_config gc = {
		.program = program,
		.name = name,
		.monitor = endpoint,
		.user = user,
	};
	struct vmact_endpoint ep;

	if (vmact_endpoint_parse(endpoint, VMACT_EP_WS | VMACT_EP_HTTP | VMACT_EP_UNIX, &ep, err) <
	    0)
		return vmact_err_prefix(err, "<vmact:monitor> endpoint");
	return proxy_new(event, &gc, events, userdata, out, err);
}

int act_approver_proxy_new_informant(sd_event *event, const char *name, const char *endpoint,
				     const char *listen, const char *advertise_host,
				     const char *program, const char *user,
				     const struct act_approver_events *events, void *userdata,
				     struct act_approver **out, struct vmact_err *err)
{
	struct act_worker_config gc = {
		.program = program,
		.name = name,
		.informant = endpoint,
		.listen = listen,
		.advertise_host = advertise_host && advertise_host[0] ? advertise_host : NULL,
		.user = user,
	};
	struct vmact_endpoint ep;
	struct vmact_listen l;

	/* What the worker would refuse, refused here, once: vmactd dials
	 * numeric addresses only (its loop must not wait on DNS). */
	if (vmact_endpoint_parse(endpoint, VMACT_EP_HTTP | VMACT_EP_NEED_PORT, &ep, err) < 0)
		return vmact_err_prefix(err, "<vmact:informant> endpoint");
	if (vmact_listen_parse(listen, false, &l, err) < 0)
		return vmact_err_prefix(err, "informant_listen");
	if (l.wildcard && !gc.advertise_host)
		return vmact_err_set(err, EINVAL,
				     "informant_advertise_host: needed when "
				     "informant_listen is a wildcard address");
	return proxy_new(event, &gc, events, userdata, out, err);
}

/* The owner is gone: the worker finishes (the informant's goodbye), no
 * event reaches the owner any more; done(ud) once it has. */
int act_approver_proxy_stop(struct act_approver *a, uint64_t timeout_usec, void (*done)(void *ud),
			    void *ud)
{
	struct proxy *p = (struct proxy *)a;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_STOP };

	/* The pending request fails now, while its owner is still there. */
	p->req_out = false;
	act_approval_complete(&p->pending, ACT_APPROVAL_FAILED);
	p->stopping = true;
	return act_worker_stop(p->gw, &m, timeout_usec, done, ud);
}

pid_t act_approver_proxy_worker_pid(const struct act_approver *a)
{
	const struct proxy *p = (const struct proxy *)a;

	return a->ops == &proxy_ops || a->ops == &proxy_inf_ops ? act_worker_pid(p->gw) : 0;
}
