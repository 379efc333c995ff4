/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text parser (net/prom-text.h): texts it must read
 * and what it must make of them, every malformation it must refuse with the
 * line and the cause, and its count limits. */
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

DEFINE_PTR_CLEANUP(prom_freep, struct net_prom_text, net_prom_text_free)

static struct net_prom_text *must_parse(const char *text)
{
	struct vmact_err err = { 0 };
	struct net_prom_text *t = NULL;

	if (net_prom_parse(text, strlen(text), &t, &err) != 0)
		fail_msg("refused: %s\n--- text:\n%s", err.msg, text);
	return t;
}

/* ---- good texts ---------------------------------------------------- */

/* A node exporter's page, abridged: every construct in one text. */
static const char node_page[] =
	"# HELP host_load1 1-minute load average\n"
	"# TYPE host_load1 gauge\n"
	"host_load1 0.53\n"
	"\n"
	"# A comment that is neither HELP nor TYPE\n"
	"#\n"
	"  # TYPE host_cpu_seconds_total counter\n"
	"host_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1.25e+04 1700000000000\n"
	"host_cpu_seconds_total{ cpu = \"1\" , mode=\"user\", } 17\n"
	"\thost_cpu_seconds_total{cpu=\"2\",mode=\"steal\"}  -0 \t\n"
	"# TYPE rpc_duration_seconds summary\n"
	"rpc_duration_seconds{quantile=\"0.5\"} 4773\n"
	"rpc_duration_seconds_sum 1.7560473e+07\n"
	"rpc_duration_seconds_count 2693\n"
	"# TYPE http_request_duration_seconds histogram\n"
	"http_request_duration_seconds_bucket{le=\"0.05\"} 24054\n"
	"http_request_duration_seconds_bucket{le=\"+Inf\"} 144320\n"
	"http_request_duration_seconds_sum 53423\n"
	"http_request_duration_seconds_count 144320\n"
	"# HELP escaped A \\\\ backslash and a\\nnewline \"quoted\"\n"
	"escaped{path=\"C:\\\\dir\",say=\"\\\"hi\\\"\",two=\"a\\nb\",utf=\"\xc3\xa9t\xc3\xa9\"} NaN\n"
	"inf_up +Inf\n"
	"# HELP inf_up a HELP line after the family's samples is fine\n"
	"inf_down -Inf -1\n"
	"empty_labels{} .5\n"
	"colon:name_1 5. \n"
	"no_newline_at_end 1E3";

static void test_good_text_structure(void **state)
{
	_cleanup_(prom_freep) struct net_prom_text *t = must_parse(node_page);
	const struct net_prom_family *f;
	const struct net_prom_sample *s;

	(void)state;
	assert_int_equal(t->n_families, 10);
	assert_int_equal(t->n_samples, 17);

	f = net_prom_find(t, "host_load1");
	assert_non_null(f);
	assert_int_equal(f->type, NET_PROM_GAUGE);
	assert_true(f->typed);
	assert_string_equal(f->help, "1-minute load average");
	assert_int_equal(f->n_samples, 1);
	assert_true(f->samples[0].value == 0.53);
	assert_int_equal(f->line, 1);

	f = net_prom_find(t, "host_cpu_seconds_total");
	assert_non_null(f);
	assert_int_equal(f->type, NET_PROM_COUNTER);
	assert_null(f->help);
	assert_int_equal(f->n_samples, 3);
	s = &f->samples[0];
	assert_int_equal(s->n_labels, 2);
	assert_string_equal(net_prom_label(s, "cpu"), "0");
	assert_string_equal(net_prom_label(s, "mode"), "idle");
	assert_null(net_prom_label(s, "nope"));
	assert_true(s->value == 12500);
	assert_true(s->has_timestamp);
	assert_true(s->timestamp_ms == 1700000000000LL);
	assert_int_equal(s->line, 8);
	s = &f->samples[1]; /* blanks everywhere, trailing comma */
	assert_int_equal(s->n_labels, 2);
	assert_string_equal(net_prom_label(s, "cpu"), "1");
	assert_false(s->has_timestamp);
	s = &f->samples[2];
	assert_true(s->value == 0 && signbit(s->value));

	f = net_prom_find(t, "rpc_duration_seconds");
	assert_int_equal(f->type, NET_PROM_SUMMARY);
	assert_int_equal(f->n_samples, 3);
	assert_string_equal(f->samples[1].name, "rpc_duration_seconds_sum");
	f = net_prom_find(t, "http_request_duration_seconds");
	assert_int_equal(f->type, NET_PROM_HISTOGRAM);
	assert_int_equal(f->n_samples, 4);
	assert_string_equal(f->samples[0].name, "http_request_duration_seconds_bucket");
	assert_string_equal(net_prom_label(&f->samples[1], "le"), "+Inf");
	assert_null(net_prom_find(t, "http_request_duration_seconds_bucket"));

	f = net_prom_find(t, "escaped");
	assert_int_equal(f->type, NET_PROM_UNTYPED);
	assert_false(f->typed);
	assert_string_equal(f->help, "A \\ backslash and a\nnewline \"quoted\"");
	s = &f->samples[0];
	assert_string_equal(net_prom_label(s, "path"), "C:\\dir");
	assert_string_equal(net_prom_label(s, "say"), "\"hi\"");
	assert_string_equal(net_prom_label(s, "two"), "a\nb");
	assert_string_equal(net_prom_label(s, "utf"), "\xc3\xa9t\xc3\xa9");
	assert_true(isnan(s->value));

	assert_true(isinf(net_prom_find(t, "inf_up")->samples[0].value));
	assert_true(net_prom_find(t, "inf_up")->samples[0].value > 0);
	s = &net_prom_find(t, "inf_down")->samples[0];
	assert_true(isinf(s->value) && s->value < 0);
	assert_true(s->has_timestamp && s->timestamp_ms == -1);
	s = &net_prom_find(t, "empty_labels")->samples[0];
	assert_int_equal(s->n_labels, 0);
	assert_true(s->value == 0.5);
	assert_true(net_prom_find(t, "colon:name_1")->samples[0].value == 5);
	assert_true(net_prom_find(t, "no_newline_at_end")->samples[0].value == 1000);
}

/* Small texts and the one value or property each must give. */
static void test_good_texts_table(void **state)
{
	static const struct {
		const char *text;
		size_t families, samples;
		double first_value; /* of the first sample, if any */
	} cases[] = {
		{ "", 0, 0, 0 },
		{ "\n\n   \n\t\n", 0, 0, 0 },
		{ "# just a comment\n", 0, 0, 0 },
		{ "#\tTYPEFACE x\n", 0, 0, 0 },
		{ "# HELPING hands\n", 0, 0, 0 },
		{ "# TYPE only_typed gauge\n", 1, 0, 0 },
		{ "# HELP only_help\n", 1, 0, 0 },
		{ "# TYPE x untyped\nx 1\n", 1, 1, 1 },
		{ "a 1\nb 2\nc 3\n", 3, 3, 1 },
		{ "a 1\na 2\n", 1, 2, 1 },
		{ "a{x=\"1\"} 1\na{x=\"1\"} 2\n", 1, 2, 1 }, /* duplicate sets: the readers judge */
		{ "a 1e-400\n", 1, 1, 0 },                   /* underflow is zero, as in Go */
		{ "a +.5e+1\n", 1, 1, 5 },
		{ "a 9007199254740993\n", 1, 1, 9007199254740992.0 },
		{ "a 1 +42\n", 1, 1, 1 },
		{ "a 1 9223372036854775807\n", 1, 1, 1 },
		{ "a 1 -9223372036854775808\n", 1, 1, 1 },
		{ "_a 1\n", 1, 1, 1 },
		{ ":a 1\n", 1, 1, 1 },
		{ "a {b=\"\"} 2\n", 1, 1, 2 },
		{ "a{b=\"}{,=\\\\\"} 3\n", 1, 1, 3 },
		{ "a\t7\n", 1, 1, 7 },
		{ "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\nh_sum 0.5\n", 1, 3, 1 },
		/* A summary has no _bucket series: that is a family of its own. */
		{ "# TYPE s summary\ns_bucket 1\n", 2, 1, 1 },
		/* A gauge named like a histogram series, with no histogram around. */
		{ "x_bucket 4\nx_sum 5\n", 2, 2, 4 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_(prom_freep) struct net_prom_text *t = must_parse(cases[i].text);
		const struct net_prom_sample *first = NULL;

		if (t->n_families != cases[i].families || t->n_samples != cases[i].samples)
			fail_msg("case %zu: %zu families, %zu samples; want %zu, %zu", i,
				 t->n_families, t->n_samples, cases[i].families, cases[i].samples);
		for (size_t k = 0; k < t->n_families && !first; k++)
			if (t->families[k].n_samples)
				first = &t->families[k].samples[0];
		if (first && first->value != cases[i].first_value)
			fail_msg("case %zu: value %.17g, want %.17g", i, first->value,
				 cases[i].first_value);
	}
}

/* ---- malformations -------------------------------------------------- */

static void test_malformed_table(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *msg; /* must appear in the message */
	} cases[] = {
		/* names */
		{ "1abc 1\n", EBADMSG, "line 1: expected a metric name, found '1'" },
		{ "a 1\n-x 2\n", EBADMSG, "line 2: expected a metric name, found '-'" },
		{ "\xc3\xa9 1\n", EBADMSG, "line 1: expected a metric name, found \\xc3" },
		{ "a-b 1\n", EBADMSG, "line 1: a: expected a blank before the value, found '-'" },
		{ "a\n", EBADMSG, "line 1: a: sample without a value" },
		{ "a   \n", EBADMSG, "line 1: a: sample without a value" },
		{ "a{b=\"c\"}\n", EBADMSG, "line 1: a: sample without a value" },
		{ "a{b=\"c\"}1\n", EBADMSG, "a: expected a blank before the value, found '1'" },
		/* values */
		{ "a one\n", EBADMSG, "line 1: a: invalid value \"one\"" },
		{ "a 1\r\n", EBADMSG, "line 1: a: invalid value" },
		{ "a Inf\n", EBADMSG, "invalid value \"Inf\"" },
		{ "a nan\n", EBADMSG, "invalid value \"nan\"" },
		{ "a +inf\n", EBADMSG, "invalid value \"+inf\"" },
		{ "a 0x10\n", EBADMSG, "invalid value \"0x10\"" },
		{ "a 1_000\n", EBADMSG, "invalid value \"1_000\"" },
		{ "a 1e\n", EBADMSG, "invalid value \"1e\"" },
		{ "a .\n", EBADMSG, "invalid value \".\"" },
		{ "a +\n", EBADMSG, "invalid value \"+\"" },
		{ "a 1.2.3\n", EBADMSG, "invalid value \"1.2.3\"" },
		{ "a 1e999\n", EBADMSG, "a: value 1e999 is out of range" },
		{ "a -1e999\n", EBADMSG, "out of range" },
		{ "a 1111111111111111111111111111111111111111111111111111111111111111111111\n",
		  EBADMSG, "value is longer than 64 characters" },
		/* timestamps */
		{ "a 1 x\n", EBADMSG, "line 1: invalid timestamp" },
		{ "a 1 1.5\n", EBADMSG, "invalid timestamp" },
		{ "a 1 9223372036854775808\n", EBADMSG, "timestamp out of range" },
		{ "a 1 -9223372036854775809\n", EBADMSG, "timestamp out of range" },
		{ "a 1 2 3\n", EBADMSG, "a: unexpected text after the timestamp" },
		/* labels */
		{ "a{", EBADMSG, "a: expected a label name, found end of line" },
		{ "a{1=\"x\"} 1\n", EBADMSG, "a: expected a label name, found '1'" },
		{ "a{b:c=\"x\"} 1\n", EBADMSG, "a: expected '=' after label b, found ':'" },
		{ "a{b} 1\n", EBADMSG, "expected '=' after label b, found '}'" },
		{ "a{b=x} 1\n", EBADMSG, "expected '\"' to open the value of label b, found 'x'" },
		{ "a{b=\"x} 1\n", EBADMSG, "a: value of label b is not terminated" },
		{ "a{b=\"x\\\"} 1\n", EBADMSG, "value of label b is not terminated" },
		{ "a{b=\"x\" c=\"y\"} 1\n", EBADMSG,
		  "expected ',' or '}' after the value of label b, found 'c'" },
		{ "a{b=\"x\",,} 1\n", EBADMSG, "expected a label name, found ','" },
		{ "a{b=\"x\",b=\"y\"} 1\n", EBADMSG, "a: duplicate label b" },
		{ "a{__name__=\"x\"} 1\n", EBADMSG, "label name __name__ is reserved" },
		{ "a{b=\"\\t\"} 1\n", EBADMSG, "value of label b: invalid escape sequence \\'t'" },
		{ "a{b=\"\xff\"} 1\n", EBADMSG, "a: value of label b is not valid UTF-8" },
		{ "a{b=\"\xc0\xaf\"} 1\n", EBADMSG, "not valid UTF-8" },         /* overlong */
		{ "a{b=\"\xed\xa0\x80\"} 1\n", EBADMSG, "not valid UTF-8" },     /* surrogate */
		{ "a{b=\"\xf4\x90\x80\x80\"} 1\n", EBADMSG, "not valid UTF-8" }, /* > U+10FFFF */
		{ "a{b=\"\xe2\x82\"} 1\n", EBADMSG, "not valid UTF-8" },         /* truncated */
		/* HELP and TYPE */
		{ "# HELP\t\n", EBADMSG,
		  "line 1: HELP line: expected a metric name, found end of line" },
		{ "# TYPE 9x gauge\n", EBADMSG, "TYPE line: expected a metric name, found '9'" },
		{ "# TYPE a-b gauge\n", EBADMSG,
		  "TYPE line: invalid character '-' in the metric name" },
		{ "# TYPE a\n", EBADMSG, "line 1: TYPE line without a type" },
		{ "# TYPE a gauges\n", EBADMSG, "unknown metric type" },
		{ "# TYPE a Gauge\n", EBADMSG, "unknown metric type" },
		{ "# TYPE a gauge extra\n", EBADMSG, "unexpected text after the type" },
		{ "# TYPE a gauge\n# TYPE a gauge\n", EBADMSG, "line 2: a: second TYPE line" },
		{ "# HELP a x\n# HELP a y\n", EBADMSG, "line 2: a: second HELP line" },
		{ "a 1\n# TYPE a gauge\n", EBADMSG,
		  "line 2: a: TYPE line after the family's samples" },
		{ "# HELP a x\\y\n", EBADMSG, "help text: invalid escape sequence \\'y'" },
		{ "# HELP a x\\\"y\n", EBADMSG, "help text: invalid escape sequence" },
		{ "# HELP a x\\", EBADMSG, "help text ends in a lone backslash" },
		{ "# HELP a \xfe\n", EBADMSG, "help text is not valid UTF-8" },
		/* grouping */
		{ "a 1\nb 1\na 2\n", EBADMSG,
		  "line 3: a: lines of this family are not together (it first appeared on line 1)" },
		{ "# TYPE a gauge\nb 1\n# HELP a late\n", EBADMSG,
		  "line 3: a: lines of this family are not together" },
		{ "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nx 1\nh_sum 1\n", EBADMSG,
		  "line 4: h_sum: sample of h after other families (it first appeared on line 1)" },
		/* bytes */
		{ "a 1\nb\0 1\n", EBADMSG, "line 2: NUL byte" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct vmact_err err = { 0 };
		struct net_prom_text *t = (struct net_prom_text *)&err; /* must be reset */
		size_t len = strlen(cases[i].text);
		int r;

		/* The NUL case carries its bytes past the terminator. */
		if (strstr(cases[i].msg, "NUL byte"))
			len = 9;
		r = net_prom_parse(cases[i].text, len, &t, &err);
		if (r != -cases[i].code || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu (%s): got %d \"%s\", want -%d containing \"%s\"", i,
				 cases[i].text, r, err.msg, cases[i].code, cases[i].msg);
		assert_null(t);
	}
}

/* Untrusted bytes never reach a message: anything unprintable is shown
 * escaped or not at all. */
static void test_messages_printable(void **state)
{
	static const char *const texts[] = {
		"a 1\x1b[31m\n", "a \"\n", "a 1\xc3\xa9\n", "\x7f 1\n", "a{b=\"\\\x01\"} 1\n",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		struct vmact_err err = { 0 };
		struct net_prom_text *t = NULL;

		assert_int_equal(net_prom_parse(texts[i], strlen(texts[i]), &t, &err), -EBADMSG);
		for (const char *p = err.msg; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				fail_msg("case %zu: unprintable byte 0x%02x in \"%s\"", i,
					 (unsigned char)*p, err.msg);
	}
}

/* ---- limits -------------------------------------------------------- */

/* n lines after head, for the limit tests: families f0 f1 ... or samples
 * of one family s{i="0"} s{i="1"} ... */
static char *repeat(size_t n, const char *head, bool families)
{
	size_t cap = strlen(head) + n * 64 + 1, len;
	char *s = malloc(cap);

	assert_non_null(s);
	len = (size_t)snprintf(s, cap, "%s", head);
	for (size_t i = 0; i < n; i++)
		len += families ? (size_t)snprintf(s + len, cap - len, "f%zu %zu\n", i, i)
				: (size_t)snprintf(s + len, cap - len, "s{i=\"%zu\"} %zu\n", i, i);
	return s;
}

static void expect_limit(const char *text, int code, const char *msg)
{
	struct vmact_err err = { 0 };
	struct net_prom_text *t = NULL;
	int r = net_prom_parse(text, strlen(text), &t, &err);

	if (r != -code || !strstr(err.msg, msg))
		fail_msg("got %d \"%s\", want -%d containing \"%s\"", r, err.msg, code, msg);
	assert_null(t);
}

static void test_limits(void **state)
{
	_cleanup_free_ char *fams_ok = repeat(NET_PROM_MAX_FAMILIES, "", true);
	_cleanup_free_ char *fams_over = repeat(NET_PROM_MAX_FAMILIES + 1, "", true);
	_cleanup_free_ char *samples_ok = repeat(NET_PROM_MAX_SAMPLES, "# TYPE s gauge\n", false);
	_cleanup_free_ char *samples_over = repeat(NET_PROM_MAX_SAMPLES + 1, "# TYPE s gauge\n",
						   false);
	char labels[NET_PROM_MAX_LABELS * 16 + 64];
	size_t len = 0;
	struct net_prom_text *t = NULL;
	struct vmact_err err = { 0 };

	(void)state;
	t = must_parse(fams_ok);
	assert_int_equal(t->n_families, NET_PROM_MAX_FAMILIES);
	assert_non_null(net_prom_find(t, "f2047"));
	assert_true(net_prom_find(t, "f2047")->samples[0].value == 2047);
	net_prom_text_free(t);
	expect_limit(fams_over, E2BIG, "line 2049: more than 2048 metric families");

	t = must_parse(samples_ok);
	assert_int_equal(t->n_samples, NET_PROM_MAX_SAMPLES);
	assert_string_equal(net_prom_label(&t->families[0].samples[16383], "i"), "16383");
	net_prom_text_free(t);
	expect_limit(samples_over, E2BIG, "line 16386: more than 16384 samples");

	len = (size_t)snprintf(labels, sizeof(labels), "a{");
	for (unsigned i = 0; i < NET_PROM_MAX_LABELS; i++)
		len += (size_t)snprintf(labels + len, sizeof(labels) - len, "l%u=\"%u\",", i, i);
	snprintf(labels + len, sizeof(labels) - len, "} 1\n");
	t = must_parse(labels);
	assert_int_equal(t->families[0].samples[0].n_labels, NET_PROM_MAX_LABELS);
	net_prom_text_free(t);
	snprintf(labels + len, sizeof(labels) - len, "x=\"y\"} 1\n");
	expect_limit(labels, E2BIG, "line 1: more than 32 labels on one sample");

	/* The size cap is checked before anything is read. */
	assert_int_equal(net_prom_parse("", (size_t)NET_PROM_MAX_TEXT + 1, &t, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "at most 16777216 accepted"));
	assert_int_equal(net_prom_parse(NULL, 1, &t, NULL), -EINVAL);
	assert_int_equal(net_prom_parse("", 0, NULL, NULL), -EINVAL);
}

/* Only the bytes given are read: a text cut anywhere is parsed as cut. */
static void test_length_bounds_reading(void **state)
{
	static const char text[] = "# TYPE g gauge\ng{a=\"b\"} 12 34\nz 1\n";
	struct net_prom_text *t = NULL;

	(void)state;
	for (size_t n = 0; n <= sizeof(text) - 1; n++) {
		char *copy = malloc(n ? n : 1); /* no terminator: ASan sees any overread */
		struct vmact_err err = { 0 };

		assert_non_null(copy);
		memcpy(copy, text, n);
		if (net_prom_parse(copy, n, &t, &err) == 0)
			net_prom_text_free(t);
		free(copy);
	}
	t = must_parse("g 12 34");
	assert_true(t->families[0].samples[0].timestamp_ms == 34);
	net_prom_text_free(t);
}

/* ---- callback walk ------------------------------------------------- */

struct walk {
	char seen[512];
	size_t n;
	size_t stop_at;
};

static int on_sample(void *ud, const struct net_prom_family *f, const struct net_prom_sample *s,
		     struct vmact_err *err)
{
	struct walk *w = ud;
	size_t len = strlen(w->seen);

	if (++w->n == w->stop_at)
		return vmact_err_set(err, ECANCELED, "stopped at %s", s->name);
	snprintf(w->seen + len, sizeof(w->seen) - len, "%s/%s=%g ", f->name,
		 net_prom_type_name(f->type), s->value);
	return 0;
}

static void test_parse_each(void **state)
{
	static const char text[] =
		"# TYPE g gauge\ng 1\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\n"
		"h_sum 3\nh_count 2\nu 4\n";
	struct walk w = { .stop_at = 0 };
	struct vmact_err err = { 0 };

	(void)state;
	assert_int_equal(net_prom_parse_each(text, strlen(text), on_sample, &w, &err), 0);
	assert_string_equal(w.seen,
			    "g/gauge=1 h/histogram=2 h/histogram=3 h/histogram=2 u/untyped=4 ");

	memset(&w, 0, sizeof(w));
	w.stop_at = 3;
	assert_int_equal(net_prom_parse_each(text, strlen(text), on_sample, &w, &err), -ECANCELED);
	assert_string_equal(err.msg, "stopped at h_sum");

	/* A malformed line further down: the callback sees nothing. */
	memset(&w, 0, sizeof(w));
	vmact_err_reset(&err);
	assert_int_equal(net_prom_parse_each("a 1\nb 2\nc x\n", 12, on_sample, &w, &err), -EBADMSG);
	assert_int_equal(w.n, 0);
	assert_non_null(strstr(err.msg, "line 3: c: invalid value"));
	assert_int_equal(net_prom_parse_each("a 1\n", 4, NULL, NULL, NULL), -EINVAL);
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(net_prom_type_name(NET_PROM_GAUGE), "gauge");
	assert_string_equal(net_prom_type_name(NET_PROM_COUNTER), "counter");
	assert_string_equal(net_prom_type_name(NET_PROM_HISTOGRAM), "histogram");
	assert_string_equal(net_prom_type_name(NET_PROM_SUMMARY), "summary");
	assert_string_equal(net_prom_type_name(NET_PROM_UNTYPED), "untyped");
	assert_null(net_prom_find(NULL, "x"));
	assert_null(net_prom_label(NULL, "x"));
	net_prom_text_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_text_structure),
		cmocka_unit_test(test_good_texts_table),
		cmocka_unit_test(test_malformed_table),
		cmocka_unit_test(test_messages_printable),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_length_bounds_reading),
		cmocka_unit_test(test_parse_each),
		cmocka_unit_test(test_type_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
