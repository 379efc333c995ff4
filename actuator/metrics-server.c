/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's Prometheus endpoint (metrics-server.h). */
#include "actuator/metrics-server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actuator/runner.h"
#include "net/http-server.h"
#include "base/macro.h"

/* A scraper sends no body: anything beyond a small one is refused. */
#define MAX_BODY 1024
/* Scrapers are few (a Prometheus server or two, an operator's curl). */
#define CONN_LIMIT 16

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct act_metrics_server {
	const struct act_metrics *m;
	struct act_registry *reg;
	struct net_http_server *http;
};

struct collect {
	struct act_vm_metrics *vms;
	size_t n, cap;
	bool oom;
};

static void collect_one(void *ud, struct act_runner *r)
{
	struct collect *c = ud;

	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		struct act_vm_metrics *nv = reallocarray(c->vms, ncap, sizeof(*nv));

		if (!nv) {
			c->oom = true;
			return;
		}
		c->vms = nv;
		c->cap = ncap;
	}
	act_runner_metrics(r, &c->vms[c->n++]);
}

DEFINE_PTR_CLEANUP(writer_freep, struct net_prom_writer, net_prom_w_free)

static void on_request(void *ud, const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	struct act_metrics_server *s = ud;
	_cleanup_(writer_freep) struct net_prom_writer *w = NULL;
	struct collect c = { 0 };
	struct vmact_err err = { 0 };
	const char *text;
	size_t len;

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
	act_registry_foreach(s->reg, collect_one, &c);
	if (!c.oom)
		act_metrics_write(s->m, act_registry_count(s->reg), c.vms, c.n, w);
	free(c.vms);
	if (c.oom || net_prom_w_finish(w, &text, &len, &err) < 0) {
		/* A bug, not the scraper's fault: say what, as a 500. */
		net_http_reply_text(reply, 500, NULL, c.oom ? "out of memory\n" : err.msg);
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
			   struct act_registry *reg, struct act_metrics_server **out,
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
	s->reg = reg;
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
