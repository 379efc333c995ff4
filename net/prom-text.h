/* SPDX-License-Identifier: Apache-2.0 */
/* A strict, bounded parser of the Prometheus text exposition format 0.0.4,
 * for the guest endpoints the Neon agent scrapes (doc/protocols.md,
 * "Metrics inputs"). It reads what such an endpoint serves: `# HELP`,
 * `# TYPE`, other comments, blank lines and samples
 * `name{label="value",...} value [timestamp]`.
 *
 * Strict: anything the format does not allow is refused with the line
 * number and what is wrong, never skipped. Beyond the syntax it enforces
 * the format's grouping rules: one TYPE and one HELP per family, TYPE before
 * the family's first sample, all lines of a family together (so a family's
 * samples are one contiguous slice), no duplicate label names, `__name__`
 * reserved, label values and help texts valid UTF-8, no NUL bytes. A
 * histogram's `_bucket`/`_sum`/`_count` and a summary's `_sum`/`_count`
 * samples belong to the family their TYPE line names. What the parser does
 * not judge: a histogram's or summary's semantics, duplicate label sets
 * (the readers that care check what they read).
 *
 * Bounded: the caller bounds the input (at most NET_PROM_MAX_TEXT bytes);
 * families, samples and labels are capped by the fixed limits below, and
 * memory is linear in the input. Values are doubles: decimal numbers (as Go
 * parses them, without hex or underscores), `NaN`, `+Inf`, `-Inf`; a
 * finite number too large for a double is refused. Timestamps are optional
 * integers (milliseconds).
 *
 * Errors: -EBADMSG for malformed text, -E2BIG when a count limit is
 * exceeded, -EFBIG for input above NET_PROM_MAX_TEXT, -ENOMEM. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Limits, all fixed: a node exporter on a large guest serves a few thousand
 * samples in some hundred families, and the LFC endpoint up to 1440
 * working-set windows plus a few gauges. */
#define NET_PROM_MAX_TEXT     (16u * 1024u * 1024u) /* bytes of input */
#define NET_PROM_MAX_FAMILIES 2048u
#define NET_PROM_MAX_SAMPLES  16384u
#define NET_PROM_MAX_LABELS   32u /* per sample */

enum net_prom_type {
	NET_PROM_UNTYPED, /* no TYPE line, or `untyped` */
	NET_PROM_COUNTER,
	NET_PROM_GAUGE,
	NET_PROM_HISTOGRAM,
	NET_PROM_SUMMARY,
};

struct net_prom_label {
	const char *name;
	const char *value; /* unescaped */
};

struct net_prom_sample {
	const char *name; /* as written: a histogram's "x_bucket" has family "x" */
	const struct net_prom_label *labels;
	size_t n_labels;
	double value;
	bool has_timestamp;
	int64_t timestamp_ms;
	unsigned line; /* 1-based, for the readers' messages */
};

struct net_prom_family {
	const char *name;
	const char *help; /* unescaped; NULL without a HELP line */
	enum net_prom_type type;
	bool typed; /* a TYPE line was given */
	const struct net_prom_sample *samples;
	size_t n_samples; /* 0 when only HELP/TYPE lines named it */
	unsigned line;    /* where the family first appeared */
};

struct net_prom_text {
	const struct net_prom_family *families; /* in the order of the text */
	size_t n_families;
	size_t n_samples; /* over all families */
};

/* Parses len bytes of text (no NUL terminator needed). On success *out owns
 * every string it points to; free it with net_prom_text_free. */
int net_prom_parse(const char *text, size_t len, struct net_prom_text **out, struct vmact_err *err);
void net_prom_text_free(struct net_prom_text *t);

/* Called for each sample in text order with its family; a negative return
 * stops the walk and is returned (the callback fills err). */
typedef int net_prom_sample_fn(void *userdata, const struct net_prom_family *family,
			       const struct net_prom_sample *sample, struct vmact_err *err);
/* Parses the whole text first, so the callback sees nothing of a text that
 * turns out malformed further down. */
int net_prom_parse_each(const char *text, size_t len, net_prom_sample_fn *cb, void *userdata,
			struct vmact_err *err);

/* The family named name, or NULL. */
const struct net_prom_family *net_prom_find(const struct net_prom_text *t, const char *name);
/* The value of label name on s, or NULL when s has no such label. */
const char *net_prom_label(const struct net_prom_sample *s, const char *name);
/* Inline: the writer (prom-write.c) names types too, and a program that
 * writes pages (vmactd) must not link the reader of the guests' pages
 * (tests/checks/check-daemon-link.sh). */
static inline const char *net_prom_type_name(enum net_prom_type type)
{
	switch (type) {
	case NET_PROM_UNTYPED:
		return "untyped";
	case NET_PROM_COUNTER:
		return "counter";
	case NET_PROM_GAUGE:
		return "gauge";
	case NET_PROM_HISTOGRAM:
		return "histogram";
	case NET_PROM_SUMMARY:
		return "summary";
	}
	return "unknown";
}
