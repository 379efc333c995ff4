/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text writer (net/prom-write.h): its exact output
 * for escaping and histograms, read back through the project's strict
 * parser (prom-text.h), and every misuse it must refuse. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/macro.h"
#include "net/prom-text.h"
#include "net/prom-write.h"

DEFINE_PTR_CLEANUP(writer_freep, struct net_prom_writer, net_prom_w_free)
DEFINE_PTR_CLEANUP(text_freep, struct net_prom_text, net_prom_text_free)

static struct net_prom_writer *new_writer(void)
{
	struct net_prom_writer *w = NULL;

	assert_int_equal(net_prom_w_new(&w), 0);
	return w;
}

static const char *finish_ok(struct net_prom_writer *w)
{
	struct vmact_err err = { 0 };
	const char *text = NULL;
	size_t len = 0;

	if (net_prom_w_finish(w, &text, &len, &err) != 0)
		fail_msg("writer refused: %s", err.msg);
	assert_int_equal(strlen(text), len);
	return text;
}

static void finish_fails(struct net_prom_writer *w, const char *needle)
{
	struct vmact_err err = { 0 };
	const char *text = NULL;
	size_t len = 0;

	assert_int_equal(net_prom_w_finish(w, &text, &len, &err), -EINVAL);
	if (!strstr(err.msg, needle))
		fail_msg("error '%s' does not say '%s'", err.msg, needle);
}

static struct net_prom_text *parse_ok(const char *text)
{
	struct vmact_err err = { 0 };
	struct net_prom_text *t = NULL;

	if (net_prom_parse(text, strlen(text), &t, &err) != 0)
		fail_msg("parser refused the writer's text: %s\n---\n%s", err.msg, text);
	return t;
}

/* Backslash, quote and newline in a label value and in help; the parser
 * gives back the raw strings. */
static void escaping_round_trip(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();
	_cleanup_(text_freep) struct net_prom_text *t = NULL;
	static const char nasty[] = "a\\b\"c\nd \xc3\xa9 {x=\"y\"},";
	struct net_prom_wlabel l[] = { { "vm", nasty }, { "kind", "" } };
	const struct net_prom_family *f;
	const char *text;

	(void)state;
	net_prom_w_family(w, "vmact_x_total", NET_PROM_COUNTER, "help \\ with\nnewline \"q\"");
	net_prom_w_sample(w, l, 2, 3);
	text = finish_ok(w);
	assert_string_equal(
		text,
		"# HELP vmact_x_total help \\\\ with\\nnewline \"q\"\n"
		"# TYPE vmact_x_total counter\n"
		"vmact_x_total{vm=\"a\\\\b\\\"c\\nd \xc3\xa9 {x=\\\"y\\\"},\",kind=\"\"} 3\n");
	t = parse_ok(text);
	f = net_prom_find(t, "vmact_x_total");
	assert_non_null(f);
	assert_int_equal(f->type, NET_PROM_COUNTER);
	assert_string_equal(f->help, "help \\ with\nnewline \"q\"");
	assert_int_equal(f->n_samples, 1);
	assert_string_equal(net_prom_label(&f->samples[0], "vm"), nasty);
	assert_string_equal(net_prom_label(&f->samples[0], "kind"), "");
	assert_true(f->samples[0].value == 3);
}

/* Buckets cumulative in increasing le, +Inf = _count, then _sum, _count. */
static void histogram_shape(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();
	_cleanup_(text_freep) struct net_prom_text *t = NULL;
	static const double b[] = { 0.005, 0.1, 1, 2.5 };
	static const uint64_t c[] = { 1, 0, 3, 2 };
	struct net_prom_wlabel l[] = { { "direction", "inc" } };
	const struct net_prom_family *f;
	const char *text;
	double last = -1;

	(void)state;
	net_prom_w_family(w, "vmact_lat_seconds", NET_PROM_HISTOGRAM, "Latency");
	net_prom_w_histogram(w, l, 1, b, c, 4, 4, 20.25);
	net_prom_w_histogram(w, NULL, 0, b, (const uint64_t[]){ 0, 0, 0, 0 }, 4, 0, 0);
	text = finish_ok(w);
	assert_string_equal(text, "# HELP vmact_lat_seconds Latency\n"
				  "# TYPE vmact_lat_seconds histogram\n"
				  "vmact_lat_seconds_bucket{direction=\"inc\",le=\"0.005\"} 1\n"
				  "vmact_lat_seconds_bucket{direction=\"inc\",le=\"0.1\"} 1\n"
				  "vmact_lat_seconds_bucket{direction=\"inc\",le=\"1\"} 4\n"
				  "vmact_lat_seconds_bucket{direction=\"inc\",le=\"2.5\"} 6\n"
				  "vmact_lat_seconds_bucket{direction=\"inc\",le=\"+Inf\"} 10\n"
				  "vmact_lat_seconds_sum{direction=\"inc\"} 20.25\n"
				  "vmact_lat_seconds_count{direction=\"inc\"} 10\n"
				  "vmact_lat_seconds_bucket{le=\"0.005\"} 0\n"
				  "vmact_lat_seconds_bucket{le=\"0.1\"} 0\n"
				  "vmact_lat_seconds_bucket{le=\"1\"} 0\n"
				  "vmact_lat_seconds_bucket{le=\"2.5\"} 0\n"
				  "vmact_lat_seconds_bucket{le=\"+Inf\"} 0\n"
				  "vmact_lat_seconds_sum 0\n"
				  "vmact_lat_seconds_count 0\n");
	t = parse_ok(text);
	f = net_prom_find(t, "vmact_lat_seconds");
	assert_non_null(f);
	assert_int_equal(f->type, NET_PROM_HISTOGRAM);
	assert_int_equal(f->n_samples, 14);
	/* Cumulative and monotonic within the first series. */
	for (size_t i = 0; i < 5; i++) {
		assert_string_equal(f->samples[i].name, "vmact_lat_seconds_bucket");
		assert_true(f->samples[i].value >= last);
		last = f->samples[i].value;
	}
	assert_string_equal(net_prom_label(&f->samples[4], "le"), "+Inf");
	assert_true(f->samples[6].value == f->samples[4].value);
}

/* Gauges, untyped, several families, values: what the parser reads back. */
static void families_and_values(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();
	_cleanup_(text_freep) struct net_prom_text *t = NULL;
	static const double vals[] = { 0.1, 1e-9, 123456789.125, -2.5, 1e300, 0 };
	const struct net_prom_family *f;
	const char *text;
	char buf[40];

	(void)state;
	net_prom_w_family(w, "g", NET_PROM_GAUGE, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		char idx[8];
		struct net_prom_wlabel l = { "i", idx };

		snprintf(idx, sizeof(idx), "%zu", i);
		net_prom_w_sample(w, &l, 1, vals[i]);
	}
	net_prom_w_family(w, "special", NET_PROM_UNTYPED, "nan and infinities");
	net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "v", "nan" } }, 1, NAN);
	net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "v", "+inf" } }, 1, INFINITY);
	net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "v", "-inf" } }, 1, -INFINITY);
	text = finish_ok(w);
	t = parse_ok(text);
	assert_int_equal(t->n_families, 2);
	f = net_prom_find(t, "g");
	assert_int_equal(f->n_samples, ARRAY_SIZE(vals));
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++)
		assert_true(f->samples[i].value == vals[i]);
	f = net_prom_find(t, "special");
	assert_true(isnan(f->samples[0].value));
	assert_true(isinf(f->samples[1].value) && f->samples[1].value > 0);
	assert_true(isinf(f->samples[2].value) && f->samples[2].value < 0);
	/* The shortest text that reads back. */
	net_prom_w_format_value(0.1, buf, sizeof(buf));
	assert_string_equal(buf, "0.1");
	net_prom_w_format_value(1.0 / 3.0, buf, sizeof(buf));
	assert_true(strtod(buf, NULL) == 1.0 / 3.0);
	net_prom_w_format_value(42, buf, sizeof(buf));
	assert_string_equal(buf, "42");
}

static void refuses_duplicate_series(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();
	struct net_prom_wlabel a[] = { { "vm", "x" }, { "value", "min" } };

	(void)state;
	net_prom_w_family(w, "vmact_vm_cpu_cores", NET_PROM_GAUGE, "h");
	net_prom_w_sample(w, a, 2, 1);
	a[1].value = "max";
	net_prom_w_sample(w, a, 2, 2);
	a[1].value = "min";
	net_prom_w_sample(w, a, 2, 3);
	finish_fails(w, "same series written twice");
}

static void refuses_duplicate_unlabelled(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

	(void)state;
	net_prom_w_family(w, "up", NET_PROM_GAUGE, "h");
	net_prom_w_sample(w, NULL, 0, 1);
	net_prom_w_sample(w, NULL, 0, 1);
	finish_fails(w, "same series written twice");
}

static void refuses_family_twice(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

	(void)state;
	net_prom_w_family(w, "a", NET_PROM_GAUGE, "h");
	net_prom_w_sample(w, NULL, 0, 1);
	net_prom_w_family(w, "b", NET_PROM_GAUGE, "h");
	net_prom_w_family(w, "a", NET_PROM_GAUGE, "h");
	finish_fails(w, "a: family written twice");
}

/* A gauge named like a histogram's series collides with it. */
static void refuses_histogram_collision(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

	(void)state;
	net_prom_w_family(w, "lat_seconds_count", NET_PROM_GAUGE, "h");
	net_prom_w_family(w, "lat_seconds", NET_PROM_HISTOGRAM, "h");
	finish_fails(w, "family written twice");
}

static void refuses_bad_names(void **state)
{
	static const char *const metrics[] = { "", "1abc", "a-b", "a b", "é" };
	static const char *const labels[] = { "", "1a", "a:b", "__name__", "a-b" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(metrics); i++) {
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, metrics[i], NET_PROM_GAUGE, "h");
		finish_fails(w, "not a metric name");
	}
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();
		struct net_prom_wlabel l = { labels[i], "v" };

		net_prom_w_family(w, "ok:name_1", NET_PROM_GAUGE, "h");
		net_prom_w_sample(w, &l, 1, 1);
		finish_fails(w, "not a label name");
	}
}

static void refuses_misuse(void **state)
{
	struct net_prom_wlabel twice[] = { { "a", "1" }, { "a", "2" } };
	struct net_prom_wlabel le = { "le", "1" };
	static const double b[] = { 1, 1 };
	static const uint64_t c[] = { 0, 0 };

	(void)state;
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "vmact_resizes", NET_PROM_COUNTER, "h");
		finish_fails(w, "must end in _total");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "x_total", NET_PROM_COUNTER, "h");
		net_prom_w_sample(w, NULL, 0, -1);
		finish_fails(w, "cannot be negative");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_sample(w, NULL, 0, 1);
		finish_fails(w, "before any family");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "x", NET_PROM_GAUGE, "h");
		net_prom_w_sample(w, twice, 2, 1);
		finish_fails(w, "label a given twice");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "x", NET_PROM_HISTOGRAM, "h");
		net_prom_w_histogram(w, &le, 1, b, c, 1, 0, 0);
		finish_fails(w, "\"le\" is the writer's label");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "x", NET_PROM_HISTOGRAM, "h");
		net_prom_w_histogram(w, NULL, 0, b, c, 2, 0, 0);
		finish_fails(w, "increasing");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "x", NET_PROM_HISTOGRAM, "h");
		net_prom_w_sample(w, NULL, 0, 1);
		finish_fails(w, "written whole");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "x", NET_PROM_SUMMARY, "h");
		finish_fails(w, "summaries");
	}
	{
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();
		struct net_prom_wlabel bad = { "vm", "\xc3(" };

		net_prom_w_family(w, "x", NET_PROM_GAUGE, "h");
		net_prom_w_sample(w, &bad, 1, 1);
		finish_fails(w, "not UTF-8");
	}
	{
		/* Sticky: the first error stays, later good calls change nothing. */
		_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();

		net_prom_w_family(w, "bad name", NET_PROM_GAUGE, "h");
		net_prom_w_family(w, "good", NET_PROM_GAUGE, "h");
		net_prom_w_sample(w, NULL, 0, 1);
		finish_fails(w, "'bad name': not a metric name");
	}
}

/* Many series in one family: the duplicate check holds beyond its
 * table's growth. */
static void many_series(void **state)
{
	_cleanup_(writer_freep) struct net_prom_writer *w = new_writer();
	_cleanup_(text_freep) struct net_prom_text *t = NULL;
	char name[32];
	struct net_prom_wlabel l = { "vm", name };

	(void)state;
	net_prom_w_family(w, "g", NET_PROM_GAUGE, "h");
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "vm-%d", i);
		net_prom_w_sample(w, &l, 1, i);
	}
	t = parse_ok(finish_ok(w));
	assert_int_equal(t->n_samples, 3000);
	snprintf(name, sizeof(name), "vm-%d", 1234);
	net_prom_w_sample(w, &l, 1, 0);
	finish_fails(w, "same series written twice");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escaping_round_trip),
		cmocka_unit_test(histogram_shape),
		cmocka_unit_test(families_and_values),
		cmocka_unit_test(refuses_duplicate_series),
		cmocka_unit_test(refuses_duplicate_unlabelled),
		cmocka_unit_test(refuses_family_twice),
		cmocka_unit_test(refuses_histogram_collision),
		cmocka_unit_test(refuses_bad_names),
		cmocka_unit_test(refuses_misuse),
		cmocka_unit_test(many_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
