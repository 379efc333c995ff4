/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's Prometheus endpoint (server.h). */
#include "actuator/metrics/server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "net/http-server.h"

/* A scraper sends no body: anything beyond a small one is refused. */
#define MAX_BODY 1024
/* Scrapers are few (a Prometheus server or two, an operator's curl). */
#define CONN_LIMIT 16

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct act_metrics_server {
	const struct act_metrics *m;
	struct act_metrics_source src;
	struct net_http_server *http;
};

DEFINE_PTR_CLEANUP(writer_freep, struct net_prom_writer, net_prom_w_free)

static void on_request(void *ud, const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	struct act_metrics_server *s = ud;
	_cleanup_(writer_freep) struct net_prom_writer *w = NULL;
	_cleanup_free_ struct act_vm_metrics *vms = NULL;
	struct vmact_err err = { 0 };
	const char *text;
	size_t len, n = 0;
	int oom;

	if (strcmp(req->url, "/metrics") != 0) {
		net_http_reply_text(reply, 404, NULL, "not found: the metrics are at /metrics\n");
		return;
	}
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		net_http_reply_text(reply, 405, NULL, "method not allowed: use GET\n");
		return;
	}
	if (net_prom_w_new(&w) < 0)
		return; /* status 0: the server answers 500 */
	oom = s->src.collect(s->src.ud, &vms, &n) < 0;
	if (!oom) {
		struct act_arbiter_metrics arb;
		bool has_arb = s->src.arbiter && s->src.arbiter(s->src.ud, &arb);

		act_metrics_write(s->m, n, has_arb ? &arb : NULL, vms, n, w);
	}
	if (oom || net_prom_w_finish(w, &text, &len, &err) < 0) {
		/* A bug, not the scraper's fault: say what, as a 500. */
		net_http_reply_text(reply, 500, NULL, oom ? "out of memory\n" : err.msg);
		return;
	}
	reply->body = malloc(len ? len : 1);
	if (!reply->body)
		return;
	memcpy(reply->body, text, len);
	reply->body_len = len;
	reply->status = 200;
	reply->content_type = CONTENT_TYPE;
}

int act_metrics_server_new(sd_event *ev, const char *listen, const struct act_metrics *m,
			   const struct act_metrics_source *src, struct act_metrics_server **out,
			   struct vmact_err *err)
{
	struct net_http_server_config hc = {
		.listen = listen,
		.max_body = MAX_BODY,
		.conn_limit = CONN_LIMIT,
	};
	struct act_metrics_server *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->m = m;
	s->src = *src;
	ret = net_http_server_new(ev, &hc, on_request, s, &s->http, err);
	if (ret < 0) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void act_metrics_server_free(struct act_metrics_server *s)
{
	if (!s)
		return;
	net_http_server_free(s->http);
	free(s);
}

unsigned act_metrics_server_port(const struct act_metrics_server *s)
{
	return net_http_server_port(s->http);
}
