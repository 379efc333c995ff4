/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes through the Prometheus text parser and the two guest-metrics
 * readers. What parses must hold together (slices, counts, terminated
 * strings) and must survive a round trip: written back in the format and
 * parsed again, it gives the same families, samples, labels and values. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/codec/exporter.h"
#include "net/prom-text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_escaped(FILE *f, const char *s, int quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

static void put_value(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else
		fprintf(f, "%.17g", v);
}

/* The text form of t: the writer the parser's grammar implies. */
static void write_text(FILE *f, const struct net_prom_text *t)
{
	for (size_t i = 0; i < t->n_families; i++) {
		const struct net_prom_family *fam = &t->families[i];

		if (fam->help) {
			fprintf(f, "# HELP %s ", fam->name);
			put_escaped(f, fam->help, 0);
			fputc('\n', f);
		}
		if (fam->typed)
			fprintf(f, "# TYPE %s %s\n", fam->name, net_prom_type_name(fam->type));
		for (size_t k = 0; k < fam->n_samples; k++) {
			const struct net_prom_sample *s = &fam->samples[k];

			fputs(s->name, f);
			if (s->n_labels) {
				fputc('{', f);
				for (size_t l = 0; l < s->n_labels; l++) {
					fprintf(f, "%s%s=\"", l ? "," : "", s->labels[l].name);
					put_escaped(f, s->labels[l].value, 1);
					fputc('"', f);
				}
				fputc('}', f);
			}
			fputc(' ', f);
			put_value(f, s->value);
			if (s->has_timestamp)
				fprintf(f, " %lld", (long long)s->timestamp_ms);
			fputc('\n', f);
		}
	}
}

static int same_value(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static void check_same(const struct net_prom_text *a, const struct net_prom_text *b)
{
	if (a->n_families != b->n_families || a->n_samples != b->n_samples)
		abort();
	for (size_t i = 0; i < a->n_families; i++) {
		const struct net_prom_family *x = &a->families[i], *y = &b->families[i];

		if (strcmp(x->name, y->name) || x->type != y->type || x->typed != y->typed ||
		    !x->help != !y->help || (x->help && strcmp(x->help, y->help)) ||
		    x->n_samples != y->n_samples)
			abort();
		for (size_t k = 0; k < x->n_samples; k++) {
			const struct net_prom_sample *p = &x->samples[k], *q = &y->samples[k];

			if (strcmp(p->name, q->name) || p->n_labels != q->n_labels ||
			    !same_value(p->value, q->value) ||
			    p->has_timestamp != q->has_timestamp ||
			    (p->has_timestamp && p->timestamp_ms != q->timestamp_ms))
				abort();
			for (size_t l = 0; l < p->n_labels; l++)
				if (strcmp(p->labels[l].name, q->labels[l].name) ||
				    strcmp(p->labels[l].value, q->labels[l].value))
					abort();
		}
	}
}

/* The structure's own promises: slices in order and within the sample
 * count, lookups that find what is there. */
static void check_shape(const struct net_prom_text *t)
{
	const struct net_prom_sample *base = NULL;
	size_t total = 0;

	for (size_t i = 0; i < t->n_families; i++) {
		const struct net_prom_family *f = &t->families[i];

		if (net_prom_find(t, f->name) != f)
			abort();
		if (f->n_samples && !base)
			base = f->samples;
		/* family i's samples follow those of the families before it */
		if (f->n_samples && f->samples != base + total)
			abort();
		for (size_t k = 0; k < f->n_samples; k++) {
			const struct net_prom_sample *s = &f->samples[k];

			if (strncmp(s->name, f->name, strlen(f->name)) ||
			    s->n_labels > NET_PROM_MAX_LABELS)
				abort();
			for (size_t l = 0; l < s->n_labels; l++)
				if (net_prom_label(s, s->labels[l].name) != s->labels[l].value)
					abort();
		}
		total += f->n_samples;
	}
	if (total != t->n_samples || t->n_families > NET_PROM_MAX_FAMILIES ||
	    t->n_samples > NET_PROM_MAX_SAMPLES)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct net_prom_text *t = NULL, *t2 = NULL;
	struct ag_system_metrics sys;
	static struct ag_lfc_metrics lfc;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (net_prom_parse((const char *)data, size, &t, &err) < 0) {
		if (t || !err.msg[0])
			abort();
		return 0;
	}
	check_shape(t);
	if (ag_system_metrics_read(t, &sys, &err) == 0 && !t->n_samples)
		abort();
	if (ag_lfc_metrics_read(t, &lfc, &err) == 0 &&
	    (lfc.n_windows == 0 || lfc.n_windows > AG_LFC_MAX_WINDOWS))
		abort();

	f = open_memstream(&text, &len);
	if (!f)
		abort();
	write_text(f, t);
	fclose(f);
	if (net_prom_parse(text, len, &t2, &err) != 0) {
		fprintf(stderr, "round trip refused: %s\n%s", err.msg, text);
		abort();
	}
	check_same(t, t2);
	net_prom_text_free(t2);
	net_prom_text_free(t);
	free(text);
	return 0;
}
