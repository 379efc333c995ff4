/* SPDX-License-Identifier: Apache-2.0 */
/* A writer of the Prometheus text exposition format 0.0.4 (doc/metrics.md,
 * "Format"), the counterpart of the parser in prom-text.h: what vmactd
 * serves on metrics.listen.
 *
 * It produces only what the format allows and refuses the rest, so a
 * caller's mistake is an error and never a page a scraper rejects:
 *   - metric and label names are checked ([a-zA-Z_:][a-zA-Z0-9_:]* and
 *     [a-zA-Z_][a-zA-Z0-9_]*, no "__" prefix on labels); a counter's
 *     family name must end in "_total" (the convention Prometheus and
 *     promtool hold counters to);
 *   - each family is written once, as one block: `# HELP`, `# TYPE`, then
 *     its samples; a family name seen before is refused, and so is a
 *     sample whose label set the family already has (duplicate series),
 *     or whose labels repeat a name;
 *   - label values are escaped (\\, \" and \n), help texts too (\\, \n);
 *   - a histogram is written whole: its `_bucket{le="..."}` series in
 *     increasing `le` with cumulative counts, the `+Inf` bucket equal to
 *     `_count`, then `_sum` and `_count`; "le" is the writer's label.
 *
 * Values are doubles printed with the fewest digits that read back the
 * same, `NaN`, `+Inf` and `-Inf`.
 *
 * Errors are sticky: the first one is kept, later calls do nothing, and
 * net_prom_w_finish returns it (-EINVAL for a misuse, -ENOMEM). So a
 * caller writes its families and checks once. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "net/prom-text.h"

struct net_prom_writer;

struct net_prom_wlabel {
	const char *name;
	const char *value; /* raw; the writer escapes it */
};

int net_prom_w_new(struct net_prom_writer **out);
void net_prom_w_free(struct net_prom_writer *w);

/* Starts a family; its samples follow. type: NET_PROM_COUNTER, GAUGE,
 * HISTOGRAM or UNTYPED (summaries are not written). help may be NULL
 * (no HELP line). */
void net_prom_w_family(struct net_prom_writer *w, const char *name, enum net_prom_type type,
		       const char *help);

/* One sample of the current counter, gauge or untyped family. A counter's
 * value must not be negative or NaN. */
void net_prom_w_sample(struct net_prom_writer *w, const struct net_prom_wlabel *labels,
		       size_t n_labels, double value);

/* One series of the current histogram family: n_bounds finite upper bounds
 * in increasing order, counts[i] the observations in (bounds[i-1],
 * bounds[i]] (per bucket, not cumulative), above_max those beyond the
 * last bound; the writer adds them up and writes the `+Inf` bucket. */
void net_prom_w_histogram(struct net_prom_writer *w, const struct net_prom_wlabel *labels,
			  size_t n_labels, const double *bounds, const uint64_t *counts,
			  size_t n_bounds, uint64_t above_max, double sum);

/* The text written so far (NUL-terminated, owned by the writer), or the
 * first error. */
int net_prom_w_finish(struct net_prom_writer *w, const char **text, size_t *len,
		      struct vmact_err *err);

/* Formats v as the writer does (for `le` values and tests); buf >= 32. */
void net_prom_w_format_value(double v, char *buf, size_t len);
