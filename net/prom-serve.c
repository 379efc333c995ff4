/* SPDX-License-Identifier: Apache-2.0 */
/* The /metrics endpoint (prom-serve.h). */
#include "net/prom-serve.h"

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

struct net_prom_server {
	net_prom_page_fn *page;
	void *ud;
	struct net_http_server *http;
};

DEFINE_PTR_CLEANUP(writer_freep, struct net_prom_writer, net_prom_w_free)

static void on_request(void *ud, const struct net_http_server_request *req,
		       struct net_http_server_reply *reply)
{
	struct net_prom_server *s = ud;
	_cleanup_(writer_freep) struct net_prom_writer *w = NULL;
	struct vmact_err err = { 0 };
	const char *text;
	size_t len;
	int r;

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
	r = s->page(s->ud, w);
	if (r < 0 || net_prom_w_finish(w, &text, &len, &err) < 0) {
		/* A bug or no memory, not the scraper's fault: say what. */
		net_http_reply_text(reply, 500, NULL,
				    r < 0 ? (r == -ENOMEM ? "out of memory\n"
							  : "cannot write the page\n")
					  : err.msg);
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

int net_prom_server_new(sd_event *ev, const char *listen, net_prom_page_fn *page, void *ud,
			struct net_prom_server **out, struct vmact_err *err)
{
	struct net_http_server_config hc = {
		.listen = listen,
		.max_body = MAX_BODY,
		.conn_limit = CONN_LIMIT,
	};
	struct net_prom_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return vmact_err_set(err, ENOMEM, "out of memory");
	s->page = page;
	s->ud = ud;
	r = net_http_server_new(ev, &hc, on_request, s, &s->http, err);
	if (r < 0) {
		free(s);
		return r;
	}
	*out = s;
	return 0;
}

void net_prom_server_free(struct net_prom_server *s)
{
	if (!s)
		return;
	net_http_server_free(s->http);
	free(s);
}

unsigned net_prom_server_port(const struct net_prom_server *s)
{
	return net_http_server_port(s->http);
}
