/* SPDX-License-Identifier: Apache-2.0 */
/* The neonvm-runner's CPU API on a VM's <vmact:runner listen=...>
 * (doc/runner-api.md): an HTTP server on the daemon's loop serving
 * POST /cpu_change, GET /cpu_current and /ready with the runner's status
 * codes. A change within the VM's bounds is handed to the hotplug path
 * (runner/resize.c: vCPUs plugged as needed, then the CFS quota); the
 * answer to /cpu_current is what the VM has. */
#include "actuator/runner/neonvm-api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "agent-glue/codec/neonvm-runner.h"
#include "base/log.h"
#include "base/quantity.h"
#include "base/time.h"
#include "net/http-server.h"

int act_runner_neonvm_api_check(uint32_t milli, const struct vmact_resources *min,
				const struct vmact_resources *max, unsigned vcpus_max,
				struct vmact_err *err)
{
	char a[32], lo[32], hi[32];
	uint64_t vcpus = ((uint64_t)milli + 999) / 1000;

	vmact_quantity_format_milli(milli, a, sizeof(a));
	vmact_quantity_format_milli(min->milli_cpu, lo, sizeof(lo));
	vmact_quantity_format_milli(max->milli_cpu, hi, sizeof(hi));
	if (milli < min->milli_cpu || milli > max->milli_cpu)
		return vmact_err_set(err, ERANGE, "%s CPU is outside the VM's bounds [%s, %s]", a,
				     lo, hi);
	if (vcpus > vcpus_max)
		return vmact_err_set(err, ERANGE, "%s CPU needs %llu vCPUs, the VM can have %u", a,
				     (unsigned long long)vcpus, vcpus_max);
	return 0;
}

/* The body of a refusal: the runner sends none; one line saying why helps
 * an operator with curl and costs its controller nothing (it only looks at
 * the status). */
static void refuse(struct act_runner *r, struct net_http_server_reply *reply, unsigned status,
		   const char *what, const char *why)
{
	char text[VMACT_ERR_MSG_MAX + 64];

	/* Anyone who reaches the port can send these: the same refusal again
	 * is logged at debug level only. */
	snprintf(text, sizeof(text), "%s (%u): %s", what, status, why);
	vmact_log(!r->api.last_refusal || strcmp(text, r->api.last_refusal) ? LOG_INFO : LOG_DEBUG,
		  "%s: runner API: %s refused (%u): %s", r->name, what, status, why);
	if (!r->api.last_refusal || strcmp(text, r->api.last_refusal)) {
		/* Out of memory: the next refusal is logged at info again. */
		free(r->api.last_refusal);
		r->api.last_refusal = strdup(text);
	}
	snprintf(text, sizeof(text), "%s\n", why);
	net_http_reply_text(reply, status, NULL, text);
}

static void cpu_change(struct act_runner *r, const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	struct vmact_err err = { 0 };
	struct hp_state st;
	unsigned vcpus_max;
	uint32_t milli;
	char a[32];

	if (ag_neonvm_runner_change_parse(req->body, req->body_len, &milli, &err) < 0) {
		refuse(r, reply, AG_RUNNER_STATUS_BAD_REQUEST, "/cpu_change", err.msg);
		return;
	}
	/* The domain's live maximum, fresh: a short local RPC. */
	if (hp_state_read(r->env->hp, r->uuid, &st, &err) < 0) {
		refuse(r, reply, AG_RUNNER_STATUS_FAILED, "/cpu_change", err.msg);
		return;
	}
	vcpus_max = st.vcpus_refused ? hp_state_vcpus(&st) : st.vcpus_max;
	if (act_runner_neonvm_api_check(milli, &r->meta.min, &r->meta.max, vcpus_max, &err) < 0) {
		refuse(r, reply, AG_RUNNER_STATUS_FAILED, "/cpu_change", err.msg);
		return;
	}
	vmact_quantity_format_milli(milli, a, sizeof(a));
	log_info("%s: runner API: CPU change to %s", r->name, a);
	if (act_runner_resize_cpu(r, milli, &err) < 0) {
		refuse(r, reply, AG_RUNNER_STATUS_FAILED, "/cpu_change", err.msg);
		return;
	}
	reply->status = 200;
}

static void cpu_current(struct act_runner *r, struct net_http_server_reply *reply)
{
	struct vmact_err err = { 0 };
	struct hp_state st;
	size_t len = 0;
	char *body;

	if (hp_state_read(r->env->hp, r->uuid, &st, &err) < 0) {
		refuse(r, reply, AG_RUNNER_STATUS_FAILED, "/cpu_current", err.msg);
		return;
	}
	body = ag_neonvm_runner_cgroup_dump(
		act_achieved(r->quota_milli, hp_state_vcpus(&st), 0).milli_cpu, &len);
	if (!body) {
		reply->status = AG_RUNNER_STATUS_FAILED;
		return;
	}
	reply->status = 200;
	reply->content_type = "application/json";
	reply->body = body;
	reply->body_len = len;
}

static void handle(void *ud, const struct net_http_server_request *req,
		   struct net_http_server_reply *reply)
{
	struct act_runner *r = ud;

	switch (ag_neonvm_runner_route(req->method, req->url)) {
	case AG_RUNNER_CPU_CHANGE:
		cpu_change(r, req, reply);
		return;
	case AG_RUNNER_CPU_CURRENT:
		cpu_current(r, reply);
		return;
	case AG_RUNNER_READY:
		/* Managed means ready: vmact has the VM's cgroup and libvirt. */
		reply->status = 200;
		return;
	case AG_RUNNER_BAD_METHOD:
		refuse(r, reply, AG_RUNNER_STATUS_BAD_REQUEST, req->url, "unexpected method");
		return;
	case AG_RUNNER_NOT_FOUND:
		net_http_reply_text(reply, AG_RUNNER_STATUS_NOT_FOUND, NULL,
				    AG_RUNNER_NOT_FOUND_BODY);
		return;
	}
}

int act_runner_neonvm_api_start(struct act_runner *r, struct vmact_err *err)
{
	const struct net_http_server_config hc = {
		.listen = r->meta.runner_listen,
		/* {"VCPUs":"1500m"} and then some; a longer body is one the
		 * runner could not have parsed either. */
		.max_body = 1024,
		.too_large_status = AG_RUNNER_STATUS_BAD_REQUEST,
		.too_large_body = "request body too large",
		/* One controller calls it; the limits only bound what anyone
		 * else on the network can hold open. */
		.conn_limit = 32,
		/* The runner's read and write timeouts. */
		.idle_timeout_sec = 5,
		.request_timeout_usec = 5 * VMACT_USEC_PER_SEC,
	};
	int ret = net_http_server_new(r->env->event, &hc, handle, r, &r->api.server, err);

	if (ret < 0)
		return vmact_err_prefix(err, "runner API on %s", r->meta.runner_listen);
	return 0;
}

void act_runner_neonvm_api_free(struct act_runner *r)
{
	net_http_server_free(r->api.server);
	r->api.server = NULL;
	free(r->api.last_refusal);
	r->api.last_refusal = NULL;
}
