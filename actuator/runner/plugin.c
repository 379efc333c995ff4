/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's scheduler path: the plugin requests the core asks for
 * (agent-glue/plugin-client, to the embedded arbiter or plugin.url), their
 * permits fed back to the core. */
#include <stdio.h>
#include <string.h>

#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "agent-glue/arbiter/arbiter.h"
#include "agent-glue/client/plugin-client.h"
#include "base/log.h"
#include "net/http-client.h"

int act_runner_plugin_setup(struct act_runner *r, struct vmact_err *err)
{
	struct ag_plugin_client_config pc = {
		.url = r->env->plugin_url,
		.timeout_usec = (uint64_t)r->env->cfg->plugin_timeout_ms * 1000u,
	};
	int ret;

	ret = ag_plugin_version_parse(r->env->cfg->plugin_version, &pc.version, err);
	if (ret < 0)
		return ret;
	if (r->env->arbiter)
		return ag_plugin_client_new_local(r->env->event, ag_arbiter_local, r->env->arbiter,
						  &pc, &r->plugin.client, err);
	ret = net_http_client_new(r->env->event, &r->http, err);
	if (ret >= 0)
		ret = ag_plugin_client_new(r->http, &pc, &r->plugin.client, err);
	return ret;
}

/* Why a permit is below what was asked ("" when it is not): the embedded
 * arbiter's own figures (its growth stops at the watermark of its
 * declared capacity, doc/protocols.md "Permit computation"); a remote
 * plugin gives no reason on the wire. */
static void partial_reason(const struct act_runner *r, const struct vmact_resources *permit,
			   char *buf, size_t len)
{
	struct ag_arbiter_totals t;
	char wm[48], held[48], total[48];

	buf[0] = 0;
	if (!vmact_res_any_lt(*permit, r->plugin.asked))
		return;
	if (!r->env->arbiter) {
		snprintf(buf, len, "the scheduler plugin at %s granted less (it gives no reason)",
			 r->env->plugin_url ? r->env->plugin_url : "?");
		return;
	}
	ag_arbiter_totals(r->env->arbiter, &t);
	act_runner_fmt_res(wm, sizeof(wm), t.watermark);
	act_runner_fmt_res(held, sizeof(held), t.reserved);
	act_runner_fmt_res(total, sizeof(total), t.total);
	snprintf(buf, len,
		 "the arbiter's reservations (%s, %u VM%s) reached its watermark %s "
		 "(arbiter.watermark of its capacity %s)",
		 held, t.pods, t.pods == 1 ? "" : "s", wm, total);
}

/* A permit: an event when it changed, or when it falls short of what was
 * asked for a new reason (with the reason). */
static void permit_news(struct act_runner *r, const struct vmact_resources *was,
			const struct vmact_resources *permit)
{
	char why[320], a[80], asked[80];
	bool news;

	act_runner_fmt_res(a, sizeof(a), *permit);
	act_runner_fmt_res(asked, sizeof(asked), r->plugin.asked);
	log_debug("%s: scheduler permits %s", r->name, a);
	partial_reason(r, permit, why, sizeof(why));
	/* Renewals are not news; a new reason for the same permit is. */
	news = !vmact_res_eq(*was, *permit) ||
	       strcmp(why, act_runner_text(r->plugin.short_why)) != 0;
	act_runner_text_set(&r->plugin.short_why, why);
	if (!news)
		return;
	if (!why[0]) {
		act_event(r->env->events, r->name, ACT_EV_PERMIT,
			  json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)permit->milli_cpu,
				    "mem_bytes", (json_int_t)permit->mem_bytes),
			  "scheduler permits %s", a);
		return;
	}
	log_info("%s: scheduler permits %s of %s asked: %s", r->name, a, asked, why);
	act_event(r->env->events, r->name, ACT_EV_PERMIT,
		  json_pack("{s:I,s:I,s:b,s:I,s:I,s:s}", "milli_cpu", (json_int_t)permit->milli_cpu,
			    "mem_bytes", (json_int_t)permit->mem_bytes, "partial", 1,
			    "asked_milli_cpu", (json_int_t)r->plugin.asked.milli_cpu,
			    "asked_mem_bytes", (json_int_t)r->plugin.asked.mem_bytes, "reason",
			    why),
		  "scheduler permits %s of %s asked: %s", a, asked, why);
}

static void plugin_done(void *ud, const struct ag_plugin_result *res)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };
	struct vmact_resources was = r->st.plugin.has_permit ? r->st.plugin.permit
							     : (struct vmact_resources){ 0 };

	r->plugin.busy = false;
	if (res->error) {
		log_warning("%s: scheduler request failed: %s", r->name,
			    res->message ? res->message : strerror(-res->error));
		act_event(r->env->events, r->name, ACT_EV_ERROR, NULL,
			  "scheduler request failed: %s",
			  res->message ? res->message : strerror(-res->error));
		act_plugin_failed(&r->st, act_runner_now_ns(r));
		act_runner_export_plugin_done(r, true);
	} else if (act_plugin_response(&r->st, act_runner_now_ns(r), &res->response.permit, &err) <
		   0) {
		act_runner_export_plugin_done(r, true);
		log_warning("%s: scheduler permit refused: %s", r->name, err.msg);
		act_event(r->env->events, r->name, ACT_EV_ERROR, NULL,
			  "scheduler permit refused: %s", err.msg);
	} else {
		act_runner_export_plugin_done(r, false);
		permit_news(r, &was, &res->response.permit);
	}
	/* A remote plugin moves the VM away itself (Neon's legacy plugins,
	 * doc/protocols.md "Legacy plugins"): from its "migrate" on, nothing
	 * resizes the VM, until an answer without it. The embedded arbiter's
	 * mark reaches the runner at once through vmactd instead
	 * (act_runner_freeze). */
	if (!res->error && !r->env->arbiter &&
	    res->response.migrate != !!(r->frz.by & ACT_RUNNER_FREEZE_PLUGIN)) {
		char why[600];

		snprintf(why, sizeof(why), "the scheduler plugin at %s %s", r->env->plugin_url,
			 res->response.migrate ? "answered \"migrate\": the VM is moving away"
					       : "no longer answers \"migrate\"");
		act_runner_freeze_set(r, ACT_RUNNER_FREEZE_PLUGIN, res->response.migrate, why);
	}
	r->core->changed(r);
}

void act_runner_plugin_start(struct act_runner *r, const struct act_actions *a)
{
	struct ag_agent_request req = { 0 };
	struct vmact_err err = { 0 };
	const char *ns, *pod;

	act_runner_pod_key(r, &ns, &pod);
	snprintf(req.pod_namespace, sizeof(req.pod_namespace), "%s", ns);
	snprintf(req.pod_name, sizeof(req.pod_name), "%s", pod);
	req.has_compute_unit = true;
	req.compute_unit = r->st.cu;
	req.resources = a->plugin.target;
	req.has_last_permit = a->plugin.has_last_permit;
	req.last_permit = a->plugin.last_permit;
	req.has_metrics = a->plugin.has_metrics;
	req.metrics.load_avg_1m = (float)a->plugin.load_avg_1m;
	if (r->st.has_system) {
		req.metrics.load_avg_5m = (float)r->st.system.load5;
		req.metrics.memory_usage_bytes = (float)r->st.system.memory_usage_bytes;
	}
	if (act_plugin_starting(&r->st, act_runner_now_ns(r), &a->plugin.target, &err) < 0) {
		log_error("%s: %s", r->name, err.msg);
		return;
	}
	act_runner_export_plugin_start(r, &a->plugin.target);
	r->plugin.asked = a->plugin.target;
	if (ag_plugin_client_request(r->plugin.client, &req, &r->st.using_, plugin_done, r, &err) <
	    0) {
		log_warning("%s: cannot send the scheduler request: %s", r->name, err.msg);
		act_runner_export_failure(r, ACT_FAILURE_PLUGIN);
		act_plugin_failed(&r->st, act_runner_now_ns(r));
		return;
	}
	r->plugin.busy = true;
}

void act_runner_plugin_free(struct act_runner *r)
{
	ag_plugin_client_free(r->plugin.client);
	net_http_client_free(r->http);
}
