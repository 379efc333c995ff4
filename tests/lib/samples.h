/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark samples and their nearest-rank percentiles. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct th_samples {
	double v[256];
	size_t n;
};

/* Adds v; negative values (a run that failed) and values past the
 * capacity are dropped. */
void th_samples_add(struct th_samples *s, double v);

/* The nearest-rank percentile p (0..100); 0 when there is none. */
double th_samples_pct(struct th_samples *s, double p);

/* The same over the samples and `capped` more runs that count as longer
 * than any (capped without a result): false when the rank falls among
 * those. */
bool th_samples_pct_capped(struct th_samples *s, unsigned capped, double p, double *out);

/* Prints th_samples_pct_capped's percentile p of samples in seconds as
 * " %10.0f" milliseconds, or "never" when the rank falls among the capped
 * runs: one column of a bench's table. */
void th_samples_print_ms(FILE *f, struct th_samples *s, unsigned capped, double p);
