/* SPDX-License-Identifier: Apache-2.0 */
/* Guest metrics as the Neon agent reads them (doc/protocols.md, "Metrics
 * inputs"): which families, how they are checked, what is derived. */
#include "agent-glue/codec/exporter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

DEFINE_PTR_CLEANUP(prom_text_freep, struct net_prom_text, net_prom_text_free)

/* ---- readers ------------------------------------------------------- */

/* The one sample of a gauge family the reader requires. */
static int one_gauge(const struct net_prom_text *t, const char *name,
		     const struct net_prom_family **famp, struct vmact_err *err)
{
	const struct net_prom_family *f = net_prom_find(t, name);

	if (!f)
		return vmact_err_set(err, EBADMSG, "%s: metric missing", name);
	if (f->type != NET_PROM_GAUGE)
		return vmact_err_set(err, EBADMSG, "%s: typed %s (line %u), gauge expected", name,
				     f->typed ? net_prom_type_name(f->type)
					      : "untyped (no TYPE line)",
				     f->line);
	if (f->n_samples != 1)
		return vmact_err_set(err, EBADMSG, "%s: %zu samples, exactly 1 expected", name,
				     f->n_samples);
	*famp = f;
	return 0;
}

static int gauge_value(const struct net_prom_text *t, const char *name, double *out,
		       struct vmact_err *err)
{
	const struct net_prom_family *f = NULL;
	int r = one_gauge(t, name, &f, err);

	if (r < 0)
		return r;
	*out = f->samples[0].value;
	return 0;
}

int ag_system_metrics_read(const struct net_prom_text *t, struct ag_system_metrics *out,
			   struct vmact_err *err)
{
	double load1, load5, total, avail, cached;

	if (!t || !out)
		return vmact_err_set(err, EINVAL, "system metrics: text and output required");
	if (gauge_value(t, "host_load1", &load1, err) < 0 ||
	    gauge_value(t, "host_load5", &load5, err) < 0 ||
	    gauge_value(t, "host_memory_total_bytes", &total, err) < 0 ||
	    gauge_value(t, "host_memory_available_bytes", &avail, err) < 0 ||
	    gauge_value(t, "host_memory_cached_bytes", &cached, err) < 0)
		return -EBADMSG;
	*out = (struct ag_system_metrics){
		.load1 = load1,
		.load5 = load5,
		.memory_usage_bytes = total - avail + AG_EXPORTER_MEMORY_SLACK_BYTES,
		.memory_cached_bytes = cached,
	};
	return 0;
}

struct window {
	unsigned long seconds;
	double pages;
	unsigned line;
};

static int window_cmp(const void *a, const void *b)
{
	const struct window *x = a, *y = b;

	/* By line within a duration, so a duplicate is reported at its
	 * second appearance. */
	if (x->seconds != y->seconds)
		return x->seconds < y->seconds ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

#define WSS_FAMILY "lfc_approximate_working_set_size_windows"
#define WSS_LABEL  "duration_seconds"

/* A duration label: decimal digits only, small enough that the window
 * check below decides (anything past the last allowed window is refused
 * there). */
static bool parse_seconds(const char *s, unsigned long *out)
{
	unsigned long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 1000000000ul)
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	*out = v;
	return true;
}

int ag_lfc_metrics_read(const struct net_prom_text *t, struct ag_lfc_metrics *out,
			struct vmact_err *err)
{
	_cleanup_free_ struct window *w = NULL;
	const struct net_prom_family *f;
	double hits, misses, writes;
	size_t n;
	int r;

	if (!t || !out)
		return vmact_err_set(err, EINVAL, "lfc metrics: text and output required");
	if (gauge_value(t, "lfc_hits", &hits, err) < 0 ||
	    gauge_value(t, "lfc_misses", &misses, err) < 0 ||
	    gauge_value(t, "lfc_writes", &writes, err) < 0)
		return -EBADMSG;
	f = net_prom_find(t, WSS_FAMILY);
	if (!f)
		return vmact_err_set(err, EBADMSG, WSS_FAMILY ": metric missing");
	if (f->type != NET_PROM_GAUGE)
		return vmact_err_set(err, EBADMSG,
				     WSS_FAMILY ": typed %s (line %u), gauge expected",
				     f->typed ? net_prom_type_name(f->type)
					      : "untyped (no TYPE line)",
				     f->line);
	n = f->n_samples;
	if (n == 0)
		return vmact_err_set(err, EBADMSG, WSS_FAMILY ": no windows");
	if (n > AG_LFC_MAX_WINDOWS)
		return vmact_err_set(err, EBADMSG, WSS_FAMILY ": %zu windows, at most %u accepted",
				     n, AG_LFC_MAX_WINDOWS);
	w = calloc(n, sizeof(*w));
	if (!w)
		return vmact_err_set(err, ENOMEM, "lfc metrics: out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct net_prom_sample *s = &f->samples[i];
		const char *d = net_prom_label(s, WSS_LABEL);

		if (!d)
			return vmact_err_set(err, EBADMSG,
					     WSS_FAMILY ": line %u: no " WSS_LABEL " label",
					     s->line);
		if (!parse_seconds(d, &w[i].seconds))
			return vmact_err_set(err, EBADMSG,
					     WSS_FAMILY ": line %u: " WSS_LABEL
							" is not a whole number of seconds",
					     s->line);
		w[i].pages = s->value;
		w[i].line = s->line;
	}
	/* The text may list the windows in any order; their meaning is the
	 * sorted sequence of whole minutes. */
	qsort(w, n, sizeof(*w), window_cmp);
	for (size_t i = 0; i < n; i++) {
		unsigned long want = 60ul * (i + 1);

		if (w[i].seconds == want)
			continue;
		if (i > 0 && w[i].seconds == w[i - 1].seconds)
			r = vmact_err_set(err, EBADMSG,
					  WSS_FAMILY ": line %u: window of %lu s given twice",
					  w[i].line, w[i].seconds);
		else
			r = vmact_err_set(
				err, EBADMSG,
				WSS_FAMILY
				": window of %lu s missing (windows must be 60 s, 120 s, ... without gaps; line %u has %lu s)",
				want, w[i].line, w[i].seconds);
		return r;
	}
	out->hits = hits;
	out->misses = misses;
	out->writes = writes;
	out->n_windows = n;
	for (size_t i = 0; i < n; i++)
		out->wss_pages[i] = w[i].pages;
	return 0;
}

int ag_system_metrics_parse(const char *text, size_t len, struct ag_system_metrics *out,
			    struct vmact_err *err)
{
	_cleanup_(prom_text_freep) struct net_prom_text *t = NULL;
	int r = net_prom_parse(text, len, &t, err);

	return r < 0 ? r : ag_system_metrics_read(t, out, err);
}

int ag_lfc_metrics_parse(const char *text, size_t len, struct ag_lfc_metrics *out,
			 struct vmact_err *err)
{
	_cleanup_(prom_text_freep) struct net_prom_text *t = NULL;
	int r = net_prom_parse(text, len, &t, err);

	return r < 0 ? r : ag_lfc_metrics_read(t, out, err);
}

int ag_exporter_url(const char *host, unsigned port, enum ag_exporter_kind kind, char *buf,
		    size_t len)
{
	int n;

	if (!host || !*host || !buf)
		return -EINVAL;
	if (!port)
		port = kind == AG_EXPORTER_LFC ? AG_EXPORTER_LFC_PORT : AG_EXPORTER_SYSTEM_PORT;
	if (strchr(host, ':') && host[0] != '[')
		n = snprintf(buf, len, "http://[%s]:%u/metrics", host, port);
	else
		n = snprintf(buf, len, "http://%s:%u/metrics", host, port);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}
