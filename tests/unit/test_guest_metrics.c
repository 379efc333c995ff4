/* SPDX-License-Identifier: Apache-2.0 */
/* The guest-metrics readers (agent-glue/codec/exporter.h) on texts: what
 * they derive from a good page, and each way a page can lack what the
 * agent needs (doc/protocols.md, "Metrics inputs"). */
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

#include "agent-glue/codec/exporter.h"
#include "base/macro.h"

#define MiB (1024.0 * 1024.0)

/* The five gauges, each line replaceable by the table below. */
#define SYS_LOAD1 "# TYPE host_load1 gauge\nhost_load1 3\n"
#define SYS_LOAD5 "# TYPE host_load5 gauge\nhost_load5 2.25\n"
#define SYS_TOTAL "# TYPE host_memory_total_bytes gauge\nhost_memory_total_bytes 4294967296\n"
#define SYS_AVAIL \
	"# TYPE host_memory_available_bytes gauge\nhost_memory_available_bytes 3221225472\n"
#define SYS_CACHED "# TYPE host_memory_cached_bytes gauge\nhost_memory_cached_bytes 536870912\n"
#define SYS_ALL    SYS_LOAD1 SYS_LOAD5 SYS_TOTAL SYS_AVAIL SYS_CACHED

static void test_system_good(void **state)
{
	static const char *const texts[] = {
		SYS_ALL,
		/* Order, other families, help, labels on the gauges, a timestamp. */
		"# HELP node_boot_time_seconds boot\n# TYPE node_boot_time_seconds gauge\n"
		"node_boot_time_seconds 1.7e9\n" SYS_CACHED SYS_AVAIL
		"# TYPE host_load5 gauge\nhost_load5{host=\"vm\"} 2.25 1700000000000\n" SYS_TOTAL
		"# HELP host_load1 load\n" SYS_LOAD1 "# TYPE x_total counter\nx_total 5\n",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		struct ag_system_metrics m;
		struct vmact_err err = { 0 };

		if (ag_system_metrics_parse(texts[i], strlen(texts[i]), &m, &err) != 0)
			fail_msg("case %zu: %s", i, err.msg);
		assert_true(m.load1 == 3);
		assert_true(m.load5 == 2.25);
		/* 4 GiB total - 3 GiB available + 100 MiB */
		assert_true(m.memory_usage_bytes == 1024 * MiB + 100 * MiB);
		assert_true(m.memory_cached_bytes == 512 * MiB);
	}
}

static void test_system_refused(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *msg;
	} cases[] = {
		{ "", EBADMSG, "host_load1: metric missing" },
		{ SYS_LOAD1 SYS_LOAD5 SYS_TOTAL SYS_AVAIL, EBADMSG,
		  "host_memory_cached_bytes: metric missing" },
		{ SYS_LOAD1 SYS_TOTAL SYS_AVAIL SYS_CACHED, EBADMSG, "host_load5: metric missing" },
		/* untyped, counter */
		{ "host_load1 3\n" SYS_LOAD5 SYS_TOTAL SYS_AVAIL SYS_CACHED, EBADMSG,
		  "host_load1: typed untyped (no TYPE line) (line 1), gauge expected" },
		{ SYS_LOAD1 SYS_LOAD5
		  "# TYPE host_memory_total_bytes counter\nhost_memory_total_bytes 1\n" SYS_AVAIL
			  SYS_CACHED,
		  EBADMSG, "host_memory_total_bytes: typed counter (line 5), gauge expected" },
		{ "# TYPE host_load1 untyped\nhost_load1 3\n" SYS_LOAD5 SYS_TOTAL SYS_AVAIL
			  SYS_CACHED,
		  EBADMSG, "host_load1: typed untyped (line 1), gauge expected" },
		/* duplicated, none */
		{ SYS_LOAD1 "host_load1 4\n" SYS_LOAD5 SYS_TOTAL SYS_AVAIL SYS_CACHED, EBADMSG,
		  "host_load1: 2 samples, exactly 1 expected" },
		{ SYS_LOAD1
		  "# TYPE host_load5 gauge\nhost_load5{a=\"1\"} 1\nhost_load5{a=\"2\"} 1\n" SYS_TOTAL
			  SYS_AVAIL SYS_CACHED,
		  EBADMSG, "host_load5: 2 samples, exactly 1 expected" },
		{ SYS_LOAD1 SYS_LOAD5 SYS_TOTAL
		  "# TYPE host_memory_available_bytes gauge\n" SYS_CACHED,
		  EBADMSG, "host_memory_available_bytes: 0 samples, exactly 1 expected" },
		/* a family given twice, apart: the parser's grouping rule */
		{ SYS_ALL "host_load1 4\n", EBADMSG,
		  "line 11: host_load1: lines of this family are not together" },
		/* not a text at all */
		{ "<html><body>It works!</body></html>\n", EBADMSG,
		  "line 1: expected a metric name, found '<'" },
		{ SYS_LOAD1 "host_load5 = 3\n", EBADMSG,
		  "line 3: host_load5: invalid value \"=\"" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ag_system_metrics m = { .load1 = -7 };
		struct vmact_err err = { 0 };
		int r = ag_system_metrics_parse(cases[i].text, strlen(cases[i].text), &m, &err);

		if (r != -cases[i].code || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: got %d \"%s\", want -%d containing \"%s\"", i, r,
				 err.msg, cases[i].code, cases[i].msg);
		assert_true(m.load1 == -7); /* untouched on failure */
	}
}

/* NaN and the like pass through: the scaling core judges values. */
static void test_system_values_as_given(void **state)
{
	static const char text[] =
		"# TYPE host_load1 gauge\nhost_load1 NaN\n" SYS_LOAD5
		"# TYPE host_memory_total_bytes gauge\nhost_memory_total_bytes 1048576\n"
		"# TYPE host_memory_available_bytes gauge\nhost_memory_available_bytes 2097152\n"
		"# TYPE host_memory_cached_bytes gauge\nhost_memory_cached_bytes -Inf\n";
	struct ag_system_metrics m;
	struct vmact_err err = { 0 };

	(void)state;
	assert_int_equal(ag_system_metrics_parse(text, strlen(text), &m, &err), 0);
	assert_true(isnan(m.load1));
	assert_true(m.memory_usage_bytes == 99 * MiB);
	assert_true(isinf(m.memory_cached_bytes));
	assert_int_equal(ag_system_metrics_read(NULL, &m, &err), -EINVAL);
}

/* ---- LFC ----------------------------------------------------------- */

#define LFC_COUNTERS                                                                     \
	"# TYPE lfc_hits gauge\nlfc_hits 1000\n# TYPE lfc_misses gauge\nlfc_misses 10\n" \
	"# TYPE lfc_writes gauge\nlfc_writes 5\n"
#define WSS      "lfc_approximate_working_set_size_windows"
#define WSS_TYPE "# TYPE " WSS " gauge\n"

static char *lfc_text(size_t n, bool reversed)
{
	size_t cap = 256 + n * 96, len;
	char *s = malloc(cap);

	assert_non_null(s);
	len = (size_t)snprintf(s, cap, LFC_COUNTERS WSS_TYPE);
	for (size_t k = 0; k < n; k++) {
		size_t i = reversed ? n - 1 - k : k;

		len += (size_t)snprintf(s + len, cap - len, WSS "{duration_seconds=\"%zu\"} %zu\n",
					60 * (i + 1), 100 * (i + 1));
	}
	return s;
}

static void test_lfc_good(void **state)
{
	static const char text[] = "# HELP lfc_hits hits\n" LFC_COUNTERS WSS_TYPE WSS
				   "{duration_seconds=\"180\"} 1500\n" WSS
				   "{duration_seconds=\"60\",db=\"main\"} 1200\n" WSS
				   "{duration_seconds=\"120\"} 1400.5\n";
	_cleanup_free_ struct ag_lfc_metrics *m = calloc(1, sizeof(*m));
	struct vmact_err err = { 0 };

	(void)state;
	assert_non_null(m);
	if (ag_lfc_metrics_parse(text, strlen(text), m, &err) != 0)
		fail_msg("%s", err.msg);
	assert_true(m->hits == 1000 && m->misses == 10 && m->writes == 5);
	assert_int_equal(m->n_windows, 3);
	assert_true(m->wss_pages[0] == 1200);
	assert_true(m->wss_pages[1] == 1400.5);
	assert_true(m->wss_pages[2] == 1500);

	/* The largest set the agent keeps, given in reverse. */
	for (int rev = 0; rev < 2; rev++) {
		_cleanup_free_ char *big = lfc_text(AG_LFC_MAX_WINDOWS, rev);

		if (ag_lfc_metrics_parse(big, strlen(big), m, &err) != 0)
			fail_msg("%s", err.msg);
		assert_int_equal(m->n_windows, AG_LFC_MAX_WINDOWS);
		for (size_t i = 0; i < AG_LFC_MAX_WINDOWS; i++)
			assert_true(m->wss_pages[i] == 100.0 * (double)(i + 1));
	}
}

static void test_lfc_refused(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ "", "lfc_hits: metric missing" },
		{ LFC_COUNTERS, WSS ": metric missing" },
		{ "# TYPE lfc_hits counter\nlfc_hits 1\n",
		  "lfc_hits: typed counter (line 1), gauge expected" },
		{ LFC_COUNTERS "lfc_hits 1\n", "lfc_hits: lines of this family are not together" },
		{ "# TYPE lfc_hits gauge\nlfc_hits 1\nlfc_hits{x=\"y\"} 2\n",
		  "lfc_hits: 2 samples, exactly 1 expected" },
		{ LFC_COUNTERS WSS "{duration_seconds=\"60\"} 1\n",
		  WSS ": typed untyped (no TYPE line) (line 7), gauge expected" },
		{ LFC_COUNTERS WSS_TYPE, WSS ": no windows" },
		{ LFC_COUNTERS WSS_TYPE WSS " 1\n", WSS ": line 8: no duration_seconds label" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration=\"60\"} 1\n",
		  "line 8: no duration_seconds label" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"1m\"} 1\n",
		  "line 8: duration_seconds is not a whole number of seconds" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"-60\"} 1\n",
		  "not a whole number of seconds" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"60.0\"} 1\n",
		  "not a whole number of seconds" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"\"} 1\n",
		  "not a whole number of seconds" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"99999999999999999999\"} 1\n",
		  "not a whole number of seconds" },
		/* gaps, wrong start, off-grid, duplicates */
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"120\"} 1\n",
		  "window of 60 s missing (windows must be 60 s, 120 s, ... without gaps; line 8 has 120 s)" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"60\"} 1\n" WSS
					    "{duration_seconds=\"180\"} 1\n",
		  "window of 120 s missing" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"60\"} 1\n" WSS
					    "{duration_seconds=\"90\"} 1\n",
		  "window of 120 s missing (windows must be 60 s, 120 s, ... without gaps; line 9 has 90 s)" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"0\"} 1\n",
		  "window of 60 s missing" },
		{ LFC_COUNTERS WSS_TYPE WSS "{duration_seconds=\"60\"} 1\n" WSS
					    "{duration_seconds=\"60\",x=\"y\"} 2\n",
		  "line 9: window of 60 s given twice" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ struct ag_lfc_metrics *m = calloc(1, sizeof(*m));
		struct vmact_err err = { 0 };
		int r;

		assert_non_null(m);
		m->n_windows = 77;
		r = ag_lfc_metrics_parse(cases[i].text, strlen(cases[i].text), m, &err);
		if (r != -EBADMSG || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: got %d \"%s\", want -EBADMSG containing \"%s\"", i, r,
				 err.msg, cases[i].msg);
		assert_int_equal(m->n_windows, 77); /* untouched on failure */
	}
}

static void test_lfc_too_many_windows(void **state)
{
	_cleanup_free_ char *text = lfc_text(AG_LFC_MAX_WINDOWS + 1, false);
	_cleanup_free_ struct ag_lfc_metrics *m = calloc(1, sizeof(*m));
	struct vmact_err err = { 0 };

	(void)state;
	assert_int_equal(ag_lfc_metrics_parse(text, strlen(text), m, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, WSS ": 1441 windows, at most 1440 accepted"));
}

static void test_url(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(ag_exporter_url("10.0.0.5", 0, AG_EXPORTER_SYSTEM, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "http://10.0.0.5:9100/metrics");
	assert_int_equal(ag_exporter_url("10.0.0.5", 0, AG_EXPORTER_LFC, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "http://10.0.0.5:9499/metrics");
	assert_int_equal(ag_exporter_url("fe80::1", 8080, AG_EXPORTER_SYSTEM, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "http://[fe80::1]:8080/metrics");
	assert_int_equal(ag_exporter_url("[::1]", 0, AG_EXPORTER_LFC, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "http://[::1]:9499/metrics");
	assert_int_equal(ag_exporter_url("10.0.0.5", 0, AG_EXPORTER_SYSTEM, buf, 20), -ENOSPC);
	assert_int_equal(ag_exporter_url("", 0, AG_EXPORTER_SYSTEM, buf, sizeof(buf)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_good),
		cmocka_unit_test(test_system_refused),
		cmocka_unit_test(test_system_values_as_given),
		cmocka_unit_test(test_lfc_good),
		cmocka_unit_test(test_lfc_refused),
		cmocka_unit_test(test_lfc_too_many_windows),
		cmocka_unit_test(test_url),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
