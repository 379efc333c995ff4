/* SPDX-License-Identifier: Apache-2.0 */
/* The guest-metrics scraper end to end on loopback, against a Node.js
 * endpoint (tests/peers/guest-metrics.js: an HTTP stack vmact did not
 * write) that serves good pages and fails in the ways a guest's exporter
 * can: garbage, a body over the limit, an error status, silence, a
 * half-sent answer, and no listener at all. Each outcome must arrive
 * through the callback, from the loop, with the cause named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-glue/client/exporter-scrape.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/peer.h"
#include "tests/lib/wait.h"

#define MiB (1024.0 * 1024.0)

struct fx {
	sd_event *ev;
	struct net_http_client *http;
	struct th_peer peer;
};

struct outcome {
	bool done;
	unsigned calls;
	int error;
	long status;
	char message[1024];
	bool has_system, has_lfc;
	struct ag_system_metrics system;
	struct ag_lfc_metrics lfc;
	/* set: the callback frees this handle (freeing from the callback) */
	struct ag_exporter_scrape *free_me;
};

static void on_result(void *ud, const struct ag_exporter_result *res)
{
	struct outcome *o = ud;

	o->done = true;
	o->calls++;
	o->error = res->error;
	o->status = res->status;
	snprintf(o->message, sizeof(o->message), "%s", res->message ? res->message : "");
	o->has_system = res->system != NULL;
	o->has_lfc = res->lfc != NULL;
	if (res->system)
		o->system = *res->system;
	if (res->lfc)
		o->lfc = *res->lfc;
	if (o->free_me) {
		ag_exporter_scrape_free(o->free_me);
		o->free_me = NULL;
	}
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char msg[512];

	assert_non_null(f);
	assert_int_equal(sd_event_new(&f->ev), 0);
	assert_int_equal(net_http_client_new(f->ev, &f->http, NULL), 0);
	if (th_peer_start(&f->peer, "guest-metrics.js", NULL, NULL, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	th_peer_stop(&f->peer);
	net_http_client_free(f->http);
	sd_event_unref(f->ev);
	free(f);
	return 0;
}

static void url(const struct fx *f, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "http://127.0.0.1:%u%s", f->peer.port, path);
}

/* Starts a scrape of path and runs the loop until its callback ran. */
static void scrape(struct fx *f, const char *path, enum ag_exporter_kind kind, uint64_t timeout,
		   size_t max, struct outcome *o)
{
	struct ag_exporter_scrape *s = NULL;
	struct vmact_err err = { 0 };
	char u[128];

	url(f, path, u, sizeof(u));
	if (ag_exporter_scrape_start(f->http, u, kind, timeout, max, on_result, o, &s, &err) < 0)
		fail_msg("fetch %s: %s", u, err.msg);
	assert_true(ag_exporter_scrape_pending(s));
	if (!TH_WAIT(f->ev, o->done, TH_SAFETY_USEC))
		fail_msg("%s: no outcome within the safety limit", u);
	assert_int_equal(o->calls, 1);
	assert_false(ag_exporter_scrape_pending(s));
	ag_exporter_scrape_free(s);
}

static void test_system_good(void **state)
{
	struct fx *f = *state;
	struct outcome o = { 0 };

	scrape(f, "/system/metrics", AG_EXPORTER_SYSTEM, 0, 0, &o);
	if (o.error)
		fail_msg("%s", o.message);
	assert_int_equal(o.status, 200);
	assert_true(o.has_system && !o.has_lfc);
	assert_true(o.system.load1 == 3);
	assert_true(o.system.load5 == 1.5);
	assert_true(o.system.memory_usage_bytes == 1024 * MiB + 100 * MiB);
	assert_true(o.system.memory_cached_bytes == 512 * MiB);
}

static void test_lfc_good(void **state)
{
	struct fx *f = *state;
	struct outcome *o = calloc(1, sizeof(*o));

	assert_non_null(o);
	scrape(f, "/lfc/metrics", AG_EXPORTER_LFC, 0, 0, o);
	if (o->error)
		fail_msg("%s", o->message);
	assert_true(o->has_lfc && !o->has_system);
	assert_true(o->lfc.hits == 1000 && o->lfc.misses == 10 && o->lfc.writes == 5);
	assert_int_equal(o->lfc.n_windows, 3);
	for (size_t i = 0; i < 3; i++)
		assert_true(o->lfc.wss_pages[i] == 1000.0 * (double)(i + 1));
	free(o);
}

/* Each way the endpoint can fail, and what the caller is told. */
static void test_failures(void **state)
{
	static const struct {
		const char *path;
		enum ag_exporter_kind kind;
		uint64_t timeout;
		size_t max;
		int error;
		long status;
		const char *msg;
	} cases[] = {
		{ "/garbage/metrics", AG_EXPORTER_SYSTEM, 0, 0, -EBADMSG, 200,
		  "/garbage/metrics: line 1: expected a metric name, found '<'" },
		/* The wrong page for the kind: a good text without what is needed. */
		{ "/system/metrics", AG_EXPORTER_LFC, 0, 0, -EBADMSG, 200,
		  "lfc metrics: http://127.0.0.1:" },
		{ "/system/metrics", AG_EXPORTER_LFC, 0, 0, -EBADMSG, 200,
		  "lfc_hits: metric missing" },
		{ "/lfc/metrics", AG_EXPORTER_SYSTEM, 0, 0, -EBADMSG, 200,
		  "host_load1: metric missing" },
		/* Over the default 256 KiB, and over a caller's smaller limit. */
		{ "/big/metrics", AG_EXPORTER_SYSTEM, 0, 0, -EFBIG, 0,
		  "response body exceeds 262144 bytes" },
		{ "/system/metrics", AG_EXPORTER_SYSTEM, 0, 100, -EFBIG, 0,
		  "response body exceeds 100 bytes" },
		{ "/status/metrics", AG_EXPORTER_SYSTEM, 0, 0, -EREMOTEIO, 503,
		  "/status/metrics: HTTP status 503: exporter not ready" },
		{ "/nothing/metrics", AG_EXPORTER_SYSTEM, 0, 0, -EREMOTEIO, 404,
		  "HTTP status 404" },
		{ "/silent/metrics", AG_EXPORTER_SYSTEM, 300 * 1000, 0, -ETIMEDOUT, 0,
		  "system metrics: http://127.0.0.1:" },
		{ "/hangup/metrics", AG_EXPORTER_SYSTEM, 0, 0, -ECONNRESET, 0, "/hangup/metrics" },
	};
	struct fx *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome *o = calloc(1, sizeof(*o));

		assert_non_null(o);
		scrape(f, cases[i].path, cases[i].kind, cases[i].timeout, cases[i].max, o);
		if (o->error != cases[i].error || o->status != cases[i].status ||
		    !strstr(o->message, cases[i].msg))
			fail_msg(
				"case %zu (%s): got %d, status %ld, \"%s\"; want %d, status %ld, containing \"%s\"",
				i, cases[i].path, o->error, o->status, o->message, cases[i].error,
				cases[i].status, cases[i].msg);
		assert_false(o->has_system || o->has_lfc);
		free(o);
	}
	/* A larger limit lets the big page through: it is a valid page. */
	{
		struct outcome o = { 0 };

		scrape(f, "/big/metrics", AG_EXPORTER_SYSTEM, 0, 1024 * 1024, &o);
		if (o.error)
			fail_msg("%s", o.message);
		assert_true(o.system.load1 == 3);
	}
}

/* The agent's 2 s default applies when the caller gives none. */
static void test_default_timeout(void **state)
{
	struct fx *f = *state;
	struct outcome o = { 0 };

	scrape(f, "/silent/metrics", AG_EXPORTER_SYSTEM, 0, 0, &o);
	assert_int_equal(o.error, -ETIMEDOUT);
}

static void test_gone(void **state)
{
	struct fx *f = *state;
	struct ag_exporter_scrape *s = NULL;
	struct outcome o = { 0 };
	char u[64];

	snprintf(u, sizeof(u), "http://127.0.0.1:%u/metrics", th_dead_port());
	assert_int_equal(ag_exporter_scrape_start(f->http, u, AG_EXPORTER_SYSTEM, 0, 0, on_result,
						  &o, &s, NULL),
			 0);
	assert_true(TH_WAIT(f->ev, o.done, TH_SAFETY_USEC));
	assert_int_equal(o.error, -ECONNREFUSED);
	assert_non_null(strstr(o.message, u));
	ag_exporter_scrape_free(s);
}

/* A silent endpoint holds nothing else up: scrapes run side by side. */
static void test_never_blocks(void **state)
{
	struct fx *f = *state;
	struct ag_exporter_scrape *slow = NULL, *fast = NULL;
	struct outcome so = { 0 }, fo = { 0 };
	char u1[128], u2[128];

	url(f, "/silent/metrics", u1, sizeof(u1));
	url(f, "/system/metrics", u2, sizeof(u2));
	assert_int_equal(ag_exporter_scrape_start(f->http, u1, AG_EXPORTER_SYSTEM,
						  TH_SAFETY_USEC / 2, 0, on_result, &so, &slow,
						  NULL),
			 0);
	assert_int_equal(ag_exporter_scrape_start(f->http, u2, AG_EXPORTER_SYSTEM, 0, 0, on_result,
						  &fo, &fast, NULL),
			 0);
	assert_true(TH_WAIT(f->ev, fo.done, TH_SAFETY_USEC));
	assert_int_equal(fo.error, 0);
	assert_false(so.done);
	assert_true(ag_exporter_scrape_pending(slow));
	/* Cancel on free: the callback never runs, the request is gone. */
	ag_exporter_scrape_free(slow);
	ag_exporter_scrape_free(fast);
	assert_int_equal(net_http_client_pending(f->http), 0);
	th_run_for(f->ev, 200 * 1000);
	assert_false(so.done);
}

/* The callback may free its own handle. */
static void test_free_in_callback(void **state)
{
	struct fx *f = *state;
	struct outcome o = { 0 };
	struct ag_exporter_scrape *s = NULL;
	char u[128];

	url(f, "/system/metrics", u, sizeof(u));
	assert_int_equal(ag_exporter_scrape_start(f->http, u, AG_EXPORTER_SYSTEM, 0, 0, on_result,
						  &o, &s, NULL),
			 0);
	o.free_me = s;
	assert_true(TH_WAIT(f->ev, o.done, TH_SAFETY_USEC));
	assert_null(o.free_me);
	assert_int_equal(o.error, 0);
}

/* Sends a command to the peer and waits for its acknowledgement. */
static void command(struct fx *f, const char *cmd)
{
	char line[128], want[160], buf[4096] = "";
	size_t len = 0;
	int n = snprintf(line, sizeof(line), "%s\n", cmd);

	assert_int_equal(write(f->peer.proc.in_fd, line, (size_t)n), n);
	snprintf(want, sizeof(want), "{\"event\":\"ack\",\"command\":\"%s\"}", cmd);
	if (!TH_WAIT(NULL,
		     (th_read_some(f->peer.proc.out_fd, buf, sizeof(buf), &len), strstr(buf, want)),
		     TH_SAFETY_USEC))
		fail_msg("no acknowledgement of \"%s\"; the peer said \"%s\"", cmd, buf);
}

/* The endpoint changes under the scraper: what a daemon would see when a
 * guest's exporter breaks and comes back. */
static void test_endpoint_changes(void **state)
{
	struct fx *f = *state;
	struct outcome o1 = { 0 }, o2 = { 0 }, o3 = { 0 };

	command(f, "mode garbage");
	scrape(f, "/metrics", AG_EXPORTER_SYSTEM, 0, 0, &o1);
	assert_int_equal(o1.error, -EBADMSG);

	command(f, "mode system");
	command(f, "load 0.75");
	scrape(f, "/metrics", AG_EXPORTER_SYSTEM, 0, 0, &o2);
	assert_int_equal(o2.error, 0);
	assert_true(o2.system.load1 == 0.75);

	/* The exporter goes away. */
	th_peer_stop(&f->peer);
	{
		char u[64];
		struct ag_exporter_scrape *s = NULL;

		snprintf(u, sizeof(u), "http://127.0.0.1:%u/metrics", f->peer.port);
		assert_int_equal(ag_exporter_scrape_start(f->http, u, AG_EXPORTER_SYSTEM, 0, 0,
							  on_result, &o3, &s, NULL),
				 0);
		assert_true(TH_WAIT(f->ev, o3.done, TH_SAFETY_USEC));
		assert_true(o3.error == -ECONNREFUSED || o3.error == -ECONNRESET);
		ag_exporter_scrape_free(s);
	}
}

static void test_bad_arguments(void **state)
{
	struct fx *f = *state;
	struct ag_exporter_scrape *s = NULL;
	struct vmact_err err = { 0 };
	struct outcome o = { 0 };

	assert_int_equal(ag_exporter_scrape_start(f->http, NULL, AG_EXPORTER_SYSTEM, 0, 0,
						  on_result, &o, &s, &err),
			 -EINVAL);
	vmact_err_reset(&err);
	assert_int_equal(ag_exporter_scrape_start(f->http, "http://127.0.0.1:1/metrics",
						  AG_EXPORTER_SYSTEM, 0,
						  (size_t)NET_PROM_MAX_TEXT + 1, on_result, &o, &s,
						  &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "size limit"));
	vmact_err_reset(&err);
	assert_int_equal(ag_exporter_scrape_start(f->http, "ftp://127.0.0.1/metrics",
						  AG_EXPORTER_SYSTEM, 0, 0, on_result, &o, &s,
						  &err),
			 -EINVAL);
	assert_int_equal(ag_exporter_scrape_start(f->http, "http://127.0.0.1:1/metrics",
						  (enum ag_exporter_kind)7, 0, 0, on_result, &o, &s,
						  &err),
			 -EINVAL);
	assert_null(s);
	th_run_for(f->ev, 100 * 1000);
	assert_false(o.done);
	assert_int_equal(net_http_client_pending(f->http), 0);
	ag_exporter_scrape_free(NULL);
	assert_false(ag_exporter_scrape_pending(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_system_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lfc_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_in_callback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_endpoint_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
