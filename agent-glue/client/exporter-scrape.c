/* SPDX-License-Identifier: Apache-2.0 */
/* The scraper of the guest's exporters: one bounded GET on the loop, the
 * page read by the codec (agent-glue/codec/exporter.h). */
#include "agent-glue/client/exporter-scrape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

struct ag_exporter_scrape {
	struct net_http_call *call; /* NULL once the callback ran */
	enum ag_exporter_kind kind;
	ag_exporter_scrape_fn *cb;
	void *userdata;
	char url[]; /* for messages */
};

static const char *kind_name(enum ag_exporter_kind kind)
{
	return kind == AG_EXPORTER_LFC ? "lfc metrics" : "system metrics";
}

/* The start of a non-200 body, for the message: the endpoint is untrusted,
 * so only printable ASCII of its first line is shown, and briefly. */
static void body_excerpt(const char *body, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		unsigned char c = (unsigned char)body[i];

		if (c == '\n' || c == '\r')
			break;
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[o] = '\0';
}

static void on_http_done(void *userdata, int result, const struct net_http_response *resp,
			 const struct vmact_err *herr)
{
	struct ag_exporter_scrape *s = userdata;
	struct ag_exporter_result res = { .kind = s->kind };
	struct vmact_err err = { 0 };
	struct ag_system_metrics sys;
	_cleanup_free_ struct ag_lfc_metrics *lfc = NULL;
	char msg[VMACT_ERR_MSG_MAX + 256];
	int r;

	s->call = NULL; /* the http client frees the call after this returns */
	if (result < 0) {
		res.error = result;
		snprintf(msg, sizeof(msg), "%s: %s", kind_name(s->kind),
			 herr && herr->msg[0] ? herr->msg : strerror(-result));
		res.message = msg;
		goto out;
	}
	res.status = resp->status;
	if (resp->status != 200) {
		char excerpt[81];

		body_excerpt(resp->body, resp->body_len, excerpt, sizeof(excerpt));
		res.error = -EREMOTEIO;
		snprintf(msg, sizeof(msg), "%s: %s: HTTP status %ld%s%s", kind_name(s->kind),
			 s->url, resp->status, excerpt[0] ? ": " : "", excerpt);
		res.message = msg;
		goto out;
	}
	if (s->kind == AG_EXPORTER_LFC) {
		lfc = malloc(sizeof(*lfc));
		r = lfc ? ag_lfc_metrics_parse(resp->body, resp->body_len, lfc, &err)
			: vmact_err_set(&err, ENOMEM, "out of memory");
		res.lfc = lfc;
	} else {
		r = ag_system_metrics_parse(resp->body, resp->body_len, &sys, &err);
		res.system = &sys;
	}
	if (r < 0) {
		res.error = r;
		res.system = NULL;
		res.lfc = NULL;
		snprintf(msg, sizeof(msg), "%s: %s: %s", kind_name(s->kind), s->url, err.msg);
		res.message = msg;
	}
out:
	/* Last use of s: the callback may free it. */
	s->cb(s->userdata, &res);
}

int ag_exporter_scrape_start(struct net_http_client *client, const char *url,
			     enum ag_exporter_kind kind, uint64_t timeout_usec, size_t max_bytes,
			     ag_exporter_scrape_fn *cb, void *userdata,
			     struct ag_exporter_scrape **out, struct vmact_err *err)
{
	_cleanup_free_ struct ag_exporter_scrape *s = NULL;
	struct net_http_request req = { .method = "GET" };
	size_t ulen;
	int r;

	if (!client || !url || !cb || !out)
		return vmact_err_set(err, EINVAL,
				     "guest metrics: client, url, callback and output required");
	if (kind != AG_EXPORTER_SYSTEM && kind != AG_EXPORTER_LFC)
		return vmact_err_set(err, EINVAL, "guest metrics: unknown kind %d", (int)kind);
	if (max_bytes > NET_PROM_MAX_TEXT)
		return vmact_err_set(err, EINVAL, "guest metrics: size limit %zu above %u",
				     max_bytes, NET_PROM_MAX_TEXT);
	ulen = strlen(url);
	s = calloc(1, sizeof(*s) + ulen + 1);
	if (!s)
		return vmact_err_set(err, ENOMEM, "guest metrics: out of memory");
	memcpy(s->url, url, ulen + 1);
	s->kind = kind;
	s->cb = cb;
	s->userdata = userdata;
	req.url = s->url;
	req.timeout_usec = timeout_usec              ? timeout_usec
			   : kind == AG_EXPORTER_LFC ? AG_EXPORTER_LFC_TIMEOUT_USEC
						     : AG_EXPORTER_SYSTEM_TIMEOUT_USEC;
	req.max_response = max_bytes ? max_bytes : AG_EXPORTER_DEFAULT_MAX_BYTES;
	r = net_http_client_start(client, &req, on_http_done, s, &s->call, err);
	if (r < 0)
		return r;
	*out = TAKE_PTR(s);
	return 0;
}

void ag_exporter_scrape_free(struct ag_exporter_scrape *s)
{
	if (!s)
		return;
	net_http_call_cancel(s->call);
	free(s);
}

bool ag_exporter_scrape_pending(const struct ag_exporter_scrape *s)
{
	return s && s->call;
}
