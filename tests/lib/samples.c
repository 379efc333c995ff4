/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/samples.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void th_samples_add(struct th_samples *s, double v)
{
	if (v >= 0 && s->n < sizeof(s->v) / sizeof(s->v[0]))
		s->v[s->n++] = v;
}

bool th_samples_pct_capped(struct th_samples *s, unsigned capped, double p, double *out)
{
	size_t n = s->n + capped, k = (size_t)(p / 100.0 * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	if (!n || k > s->n)
		return false;
	qsort(s->v, s->n, sizeof(s->v[0]), cmp_double);
	*out = s->v[k - 1];
	return true;
}

double th_samples_pct(struct th_samples *s, double p)
{
	double v = 0;

	th_samples_pct_capped(s, 0, p, &v);
	return v;
}

void th_samples_print_ms(FILE *f, struct th_samples *s, unsigned capped, double p)
{
	double v;

	if (th_samples_pct_capped(s, capped, p, &v))
		fprintf(f, " %10.0f", v * 1000);
	else
		fprintf(f, " %10s", "never");
}
