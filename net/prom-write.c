/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text writer (prom-write.h). */
#include "net/prom-write.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A set of strings (family names; a family's label sets), open addressing. */
struct strset {
	char **slot;
	size_t cap, n;
};

struct net_prom_writer {
	char *buf;
	size_t len, cap;
	struct vmact_err err; /* sticky: err.code != 0 stops everything */
	struct strset families;
	struct strset series; /* of the current family */
	char family[128];
	enum net_prom_type type;
	bool in_family;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void strset_clear(struct strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	*s = (struct strset){ 0 };
}

/* 1: added, 0: already there, -ENOMEM. */
static int strset_add(struct strset *s, const char *str)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 32;
		char **ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->slot[j])
				continue;
			for (i = hash(s->slot[j]) & (ncap - 1); ns[i]; i = (i + 1) & (ncap - 1))
				;
			ns[i] = s->slot[j];
		}
		free(s->slot);
		s->slot = ns;
		s->cap = ncap;
	}
	for (i = hash(str) & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (!strcmp(s->slot[i], str))
			return 0;
	s->slot[i] = strdup(str);
	if (!s->slot[i])
		return -ENOMEM;
	s->n++;
	return 1;
}

static bool failed(struct net_prom_writer *w)
{
	return w->err.code != 0;
}

__attribute__((format(printf, 3, 4))) static void fail(struct net_prom_writer *w, int code,
						       const char *fmt, ...)
{
	va_list ap;

	if (failed(w))
		return;
	va_start(ap, fmt);
	vmact_err_setv(&w->err, code, fmt, ap);
	va_end(ap);
}

static void put(struct net_prom_writer *w, const char *s, size_t n)
{
	if (failed(w))
		return;
	if (w->len + n + 1 > w->cap) {
		size_t ncap = w->cap ? w->cap : 4096;
		char *nb;

		while (w->len + n + 1 > ncap)
			ncap *= 2;
		nb = realloc(w->buf, ncap);
		if (!nb) {
			fail(w, ENOMEM, "out of memory");
			return;
		}
		w->buf = nb;
		w->cap = ncap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = 0;
}

static void puts_(struct net_prom_writer *w, const char *s)
{
	put(w, s, strlen(s));
}

/* Escapes \\ and \n, and \" when quotes is set (label values). */
static void put_escaped(struct net_prom_writer *w, const char *s, bool quotes)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = *s == '\\'            ? "\\\\"
				  : *s == '\n'          ? "\\n"
				  : *s == '"' && quotes ? "\\\""
							: NULL;

		if (!esc)
			continue;
		put(w, run, (size_t)(s - run));
		puts_(w, esc);
		run = s + 1;
	}
	put(w, run, (size_t)(s - run));
}

static bool name_ok(const char *s, bool metric)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
			     (metric && *p == ':');

		if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
			return false;
	}
	return true;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points above
 * U+10FFFF): the format's texts are UTF-8 and scrapers refuse the rest. */
static bool utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned c = *p, n;
		uint32_t cp;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return false;
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

void net_prom_w_format_value(double v, char *buf, size_t len)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* The shortest of %.15g..%.17g that reads back as v. */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

int net_prom_w_new(struct net_prom_writer **out)
{
	struct net_prom_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	*out = w;
	return 0;
}

void net_prom_w_free(struct net_prom_writer *w)
{
	if (!w)
		return;
	strset_clear(&w->families);
	strset_clear(&w->series);
	free(w->buf);
	free(w);
}

static void add_family_name(struct net_prom_writer *w, const char *name)
{
	int r = strset_add(&w->families, name);

	if (r < 0)
		fail(w, ENOMEM, "out of memory");
	else if (r == 0)
		fail(w, EINVAL, "%s: family written twice", name);
}

void net_prom_w_family(struct net_prom_writer *w, const char *name, enum net_prom_type type,
		       const char *help)
{
	if (failed(w))
		return;
	if (!name_ok(name, true) || strlen(name) >= sizeof(w->family) - 8) {
		fail(w, EINVAL, "'%s': not a metric name", name);
		return;
	}
	if (type == NET_PROM_SUMMARY) {
		fail(w, EINVAL, "%s: summaries are not written", name);
		return;
	}
	if (type == NET_PROM_COUNTER && !ends_with(name, "_total")) {
		fail(w, EINVAL, "%s: a counter's name must end in _total", name);
		return;
	}
	if (help && !utf8_ok(help)) {
		fail(w, EINVAL, "%s: help text is not UTF-8", name);
		return;
	}
	add_family_name(w, name);
	/* A histogram's series names are taken too: a later family "x_count"
	 * would collide with histogram x's samples. */
	if (type == NET_PROM_HISTOGRAM) {
		static const char *const sfx[] = { "_bucket", "_sum", "_count" };

		for (size_t i = 0; i < 3; i++) {
			char n[160];

			snprintf(n, sizeof(n), "%s%s", name, sfx[i]);
			add_family_name(w, n);
		}
	}
	if (failed(w))
		return;
	strset_clear(&w->series);
	snprintf(w->family, sizeof(w->family), "%s", name);
	w->type = type;
	w->in_family = true;
	if (help) {
		puts_(w, "# HELP ");
		puts_(w, name);
		puts_(w, " ");
		put_escaped(w, help, false);
		puts_(w, "\n");
	}
	puts_(w, "# TYPE ");
	puts_(w, name);
	puts_(w, " ");
	puts_(w, net_prom_type_name(type));
	puts_(w, "\n");
}

/* Checks the label set and records it in the family's series; the text
 * `{a="x",b="y"}` (or "" without labels) is the key. */
static bool check_labels(struct net_prom_writer *w, const struct net_prom_wlabel *l, size_t n)
{
	struct net_prom_writer *key;
	int r;

	for (size_t i = 0; i < n; i++) {
		if (!l[i].name || !l[i].value || !name_ok(l[i].name, false) ||
		    !strncmp(l[i].name, "__", 2)) {
			fail(w, EINVAL, "%s: '%s': not a label name", w->family,
			     l[i].name ? l[i].name : "(null)");
			return false;
		}
		if (w->type == NET_PROM_HISTOGRAM && !strcmp(l[i].name, "le")) {
			fail(w, EINVAL, "%s: \"le\" is the writer's label", w->family);
			return false;
		}
		if (!utf8_ok(l[i].value)) {
			fail(w, EINVAL, "%s: label %s: value is not UTF-8", w->family, l[i].name);
			return false;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(l[i].name, l[j].name)) {
				fail(w, EINVAL, "%s: label %s given twice", w->family, l[i].name);
				return false;
			}
	}
	/* The key is the escaped label text, written by a scratch writer. */
	if (net_prom_w_new(&key) < 0) {
		fail(w, ENOMEM, "out of memory");
		return false;
	}
	puts_(key, "");
	for (size_t i = 0; i < n; i++) {
		puts_(key, l[i].name);
		puts_(key, "=\"");
		put_escaped(key, l[i].value, true);
		puts_(key, "\",");
	}
	r = failed(key) ? -ENOMEM : strset_add(&w->series, key->buf ? key->buf : "");
	net_prom_w_free(key);
	if (r < 0)
		fail(w, ENOMEM, "out of memory");
	else if (r == 0)
		fail(w, EINVAL, "%s: the same series written twice", w->family);
	return r > 0;
}

static void put_series(struct net_prom_writer *w, const char *suffix,
		       const struct net_prom_wlabel *l, size_t n, const char *le, double value)
{
	char v[40];

	puts_(w, w->family);
	puts_(w, suffix);
	if (n || le) {
		puts_(w, "{");
		for (size_t i = 0; i < n; i++) {
			if (i)
				puts_(w, ",");
			puts_(w, l[i].name);
			puts_(w, "=\"");
			put_escaped(w, l[i].value, true);
			puts_(w, "\"");
		}
		if (le) {
			puts_(w, n ? ",le=\"" : "le=\"");
			puts_(w, le);
			puts_(w, "\"");
		}
		puts_(w, "}");
	}
	net_prom_w_format_value(value, v, sizeof(v));
	puts_(w, " ");
	puts_(w, v);
	puts_(w, "\n");
}

void net_prom_w_sample(struct net_prom_writer *w, const struct net_prom_wlabel *labels,
		       size_t n_labels, double value)
{
	if (failed(w))
		return;
	if (!w->in_family) {
		fail(w, EINVAL, "a sample before any family");
		return;
	}
	if (w->type == NET_PROM_HISTOGRAM) {
		fail(w, EINVAL, "%s: a histogram's series are written whole", w->family);
		return;
	}
	if (w->type == NET_PROM_COUNTER && (isnan(value) || value < 0)) {
		fail(w, EINVAL, "%s: a counter cannot be negative or NaN", w->family);
		return;
	}
	if (!check_labels(w, labels, n_labels))
		return;
	put_series(w, "", labels, n_labels, NULL, value);
}

void net_prom_w_histogram(struct net_prom_writer *w, const struct net_prom_wlabel *labels,
			  size_t n_labels, const double *bounds, const uint64_t *counts,
			  size_t n_bounds, uint64_t above_max, double sum)
{
	uint64_t cum = 0;
	char le[40];

	if (failed(w))
		return;
	if (!w->in_family || w->type != NET_PROM_HISTOGRAM) {
		fail(w, EINVAL, "%s: not a histogram family", w->in_family ? w->family : "(none)");
		return;
	}
	for (size_t i = 0; i < n_bounds; i++)
		if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1])) {
			fail(w, EINVAL, "%s: bucket bounds must be finite and increasing",
			     w->family);
			return;
		}
	if (isnan(sum)) {
		fail(w, EINVAL, "%s: the sum is NaN", w->family);
		return;
	}
	if (!check_labels(w, labels, n_labels))
		return;
	for (size_t i = 0; i < n_bounds; i++) {
		cum += counts[i];
		net_prom_w_format_value(bounds[i], le, sizeof(le));
		put_series(w, "_bucket", labels, n_labels, le, (double)cum);
	}
	cum += above_max;
	put_series(w, "_bucket", labels, n_labels, "+Inf", (double)cum);
	put_series(w, "_sum", labels, n_labels, NULL, sum);
	put_series(w, "_count", labels, n_labels, NULL, (double)cum);
}

int net_prom_w_finish(struct net_prom_writer *w, const char **text, size_t *len,
		      struct vmact_err *err)
{
	if (failed(w))
		return vmact_err_set(err, w->err.code, "%s", w->err.msg);
	*text = w->buf ? w->buf : "";
	*len = w->len;
	return 0;
}
