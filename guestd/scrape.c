/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-guestd's metrics mode (scrape.h, doc/privsep.md). */
#include "guestd/scrape.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/client/exporter-scrape.h"
#include "base/endpoint.h"
#include "base/macro.h"
#include "net/http-client.h"

_Static_assert(ACT_PRIVSEP_MAX_WINDOWS == AG_LFC_MAX_WINDOWS, "LFC window limits differ");

struct exporter {
	struct act_scrape *g;
	bool lfc;
	char url[600]; /* "" when the VM names none */
	struct ag_exporter_scrape *scrape;
	uint32_t seq;
};

struct act_scrape {
	struct net_http_client *http;
	const struct act_scrape_ops *ops;
	void *ud;
	struct exporter ex[2]; /* [1]: LFC */
};

/* vmactd opens the connection: the worker has no socket() or connect(). */
static int connect_via_vmactd(void *ud, const char *url, struct vmact_err *err)
{
	struct act_scrape *g = ud;

	return g->ops->dial(g->ud, g->ex[1].url[0] && !strcmp(url, g->ex[1].url), err);
}

/* curl would resolve a name on a thread (clone(), not allowed here), and
 * vmactd dials numeric addresses only. */
static int numeric_host(const char *url, struct vmact_err *err)
{
	struct vmact_endpoint ep;
	unsigned char a[16];

	if (vmact_endpoint_parse(url, VMACT_EP_HTTP | VMACT_EP_NEED_PORT, &ep, err) < 0)
		return -EINVAL;
	if (inet_pton(AF_INET, ep.host, a) != 1 && inet_pton(AF_INET6, ep.host, a) != 1)
		return vmact_err_set(err, EHOSTUNREACH,
				     "%s: not a numeric address (the guest "
				     "worker resolves no names: give an address)",
				     ep.host);
	return 0;
}

static void send_error(struct exporter *x, int code, long status, const char *text)
{
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_METRICS,
				     .seq = x->seq,
				     .flags = x->lfc ? ACT_PRIVSEP_F_LFC : 0 };

	m.code = code < 0 && code >= -4095 ? code : -EIO;
	m.spare[0] = status >= 100 && status <= 999 ? (uint64_t)status : 0;
	act_privsep_set_text(&m, text && text[0] ? text : strerror(-m.code));
	x->g->ops->send(x->g->ud, &m);
}

static bool in_range(double v, uint64_t max)
{
	return isfinite(v) && v >= 0 && v <= (double)max;
}

/* v in thousandths, when it is finite, >= 0 and at most max of them. */
static bool milli(double v, uint64_t max, uint64_t *out)
{
	if (!in_range(v * (double)ACT_PRIVSEP_MILLI, max))
		return false;
	*out = (uint64_t)llround(v * (double)ACT_PRIVSEP_MILLI);
	return *out <= max;
}

static void send_system(struct exporter *x, const struct ag_system_metrics *s)
{
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_METRICS, .seq = x->seq };
	char why[ACT_PRIVSEP_TEXT_MAX];

	if (!milli(s->load1, ACT_PRIVSEP_MAX_LOAD_MILLI, &m.spare[0]) ||
	    !milli(s->load5, ACT_PRIVSEP_MAX_LOAD_MILLI, &m.spare[1])) {
		snprintf(why, sizeof(why), "load %g/%g out of range (0 to %llu)", s->load1,
			 s->load5, ACT_PRIVSEP_MAX_LOAD_MILLI / ACT_PRIVSEP_MILLI);
		send_error(x, -ERANGE, 0, why);
		return;
	}
	if (!in_range(s->memory_usage_bytes, ACT_PRIVSEP_MAX_MEM_BYTES) ||
	    !in_range(s->memory_cached_bytes, ACT_PRIVSEP_MAX_MEM_BYTES)) {
		snprintf(why, sizeof(why),
			 "memory usage %g or cached %g bytes out of range (0 to "
			 "2^50)",
			 s->memory_usage_bytes, s->memory_cached_bytes);
		send_error(x, -ERANGE, 0, why);
		return;
	}
	m.mem_bytes = (uint64_t)llround(s->memory_usage_bytes);
	m.spare[2] = (uint64_t)llround(s->memory_cached_bytes);
	x->g->ops->send(x->g->ud, &m);
}

/* The windows, four a record, then the count: vmactd takes them only
 * with the count and all its records. */
static void send_lfc(struct exporter *x, const struct ag_lfc_metrics *l)
{
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_METRICS,
				     .seq = x->seq,
				     .flags = ACT_PRIVSEP_F_LFC };
	_cleanup_free_ uint64_t *w = calloc(l->n_windows ? l->n_windows : 1, sizeof(*w));
	char why[ACT_PRIVSEP_TEXT_MAX];

	if (!w) {
		send_error(x, -ENOMEM, 0, "out of memory");
		return;
	}
	for (size_t i = 0; i < l->n_windows; i++)
		if (!milli(l->wss_pages[i], ACT_PRIVSEP_MAX_PAGE_MILLI, &w[i])) {
			snprintf(why, sizeof(why), "LFC window %zu min: %g pages out of range",
				 i + 1, l->wss_pages[i]);
			send_error(x, -ERANGE, 0, why);
			return;
		}
	for (size_t i = 0; i < l->n_windows; i += ACT_PRIVSEP_WINDOWS_PER_MSG) {
		struct act_privsep_msg r = { .type = ACT_PRIVSEP_WINDOWS, .seq = x->seq };

		for (size_t j = 0; j < ACT_PRIVSEP_WINDOWS_PER_MSG && i + j < l->n_windows; j++)
			r.spare[j] = w[i + j];
		x->g->ops->send(x->g->ud, &r);
	}
	m.spare[0] = l->n_windows;
	x->g->ops->send(x->g->ud, &m);
}

static void on_result(void *ud, const struct ag_exporter_result *res)
{
	struct exporter *x = ud;

	if (res->error) {
		const char *why = res->message ? res->message : "";
		const char *at = strstr(why, x->url);

		/* vmactd names the endpoint itself: the cause only. */
		if (at && !strncmp(at + strlen(x->url), ": ", 2))
			why = at + strlen(x->url) + 2;
		send_error(x, res->error, res->status, why);
	} else if (x->lfc) {
		send_lfc(x, res->lfc);
	} else {
		send_system(x, res->system);
	}
	ag_exporter_scrape_free(x->scrape);
	x->scrape = NULL;
}

void act_scrape_run(struct act_scrape *g, const struct act_privsep_msg *req)
{
	struct exporter *x = &g->ex[(req->flags & ACT_PRIVSEP_F_LFC) ? 1 : 0];
	struct vmact_err err = { 0 };
	int r;

	ag_exporter_scrape_free(x->scrape);
	x->scrape = NULL;
	x->seq = req->seq;
	if (!x->url[0]) {
		send_error(x, -ENOENT, 0, "the VM names no such exporter");
		return;
	}
	r = numeric_host(x->url, &err);
	if (r >= 0)
		r = ag_exporter_scrape_start(g->http, x->url,
					     x->lfc ? AG_EXPORTER_LFC : AG_EXPORTER_SYSTEM, 0, 0,
					     on_result, x, &x->scrape, &err);
	if (r < 0)
		send_error(x, r, 0, err.msg);
}

int act_scrape_new(sd_event *event, const char *system, const char *lfc,
		   const struct act_scrape_ops *ops, void *ud, struct act_scrape **out,
		   struct vmact_err *err)
{
	struct act_scrape *g = calloc(1, sizeof(*g));
	const char *urls[2] = { system, lfc };
	int r;

	if (!g)
		return vmact_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < 2; i++) {
		g->ex[i].g = g;
		g->ex[i].lfc = i == 1;
		if (urls[i] && (size_t)snprintf(g->ex[i].url, sizeof(g->ex[i].url), "%s",
						urls[i]) >= sizeof(g->ex[i].url)) {
			free(g);
			return vmact_err_set(err, ENAMETOOLONG, "%s: URL too long", urls[i]);
		}
	}
	g->ops = ops;
	g->ud = ud;
	r = net_http_client_new(event, &g->http, err);
	if (r < 0) {
		free(g);
		return r;
	}
	net_http_client_set_connect(g->http, connect_via_vmactd, g);
	*out = g;
	return 0;
}
