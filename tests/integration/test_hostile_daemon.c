/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's own servers — the control API (unix socket, root only) and the
 * Prometheus endpoint (loopback TCP) — against hostile local clients: a
 * slowloris flood of several times each server's connection limit, an
 * oversized header, a body that never completes, garbage bytes. A
 * well-formed request must be answered during and after each, and the
 * daemon's descriptors and memory stay within the documented bounds
 * (doc/reliability.md): at most the servers' connection
 * limits above its idle count while attacked, back to it afterwards, and
 * less than 16 MiB more resident memory. Root: the control API answers
 * uid 0 only. Time limits are safety nets, not assertions about speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/time.h"
#include "net/http-server.h"
#include "tests/lib/file.h"
#include "tests/lib/flood.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

/* The servers' connection limits (actuator/control/control.c, metrics/server.c;
 * README). */
#define CONTROL_CONN_LIMIT 64
#define METRICS_CONN_LIMIT 16
#define RSS_GROWTH_KIB     (16 * 1024)

static struct {
	struct th_vmactd d; /* no guest: the servers alone */
	unsigned metrics_port;
	unsigned idle_fds;
	long idle_rss_kib;
	struct th_flood flood;
} fx;

static const char metrics_get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
static const char control_get[] = "GET /v1/vms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/* f aimed at the control socket. */
static void at_control(struct th_flood *f)
{
	/* The fixture's socket path fits a sockaddr_un (vmactd binds it). */
	snprintf(f->unix_path, sizeof(f->unix_path), "%.*s", (int)sizeof(f->unix_path) - 1,
		 fx.d.sock);
}

static unsigned daemon_fds(void)
{
	long n = th_proc_fds(fx.d.proc.pid);

	if (n < 0)
		fail_msg("vmactd is gone");
	return (unsigned)n;
}

static long daemon_rss_kib(void)
{
	long kib = th_proc_rss_kib(fx.d.proc.pid);

	if (kib < 0)
		fail_msg("no VmRSS for vmactd");
	return kib;
}

static void assert_alive(void)
{
	if (kill(fx.d.proc.pid, 0) < 0)
		fail_msg("vmactd died");
}

/* The request must be answered with want in the status line. */
static void expect(struct th_flood *f, const char *req, const char *want)
{
	char buf[8192];
	int r = th_flood_request(f, NULL, req, strlen(req), buf, sizeof(buf));

	if (r < 0 || strncmp(buf, want, strlen(want)) != 0)
		fail_msg("%s: no \"%s\" answer (%s; got \"%.120s\")",
			 f->unix_path[0] ? f->unix_path : "metrics", want,
			 r < 0 ? strerror(-r) : "answered", buf);
}

static bool fds_back(void)
{
	return daemon_fds() <= fx.idle_fds;
}

/* A flood of 4x the server's limit holding partial headers; a good
 * request is served meanwhile; after they close it is served again.
 * Descriptors: at most the limit plus the good request's own connection
 * and one being accepted, once libmicrohttpd has closed the connections
 * the server evicted (th_flood_fds_within). Each attack starts from the
 * idle count, so the previous one's closing connections do not count
 * against it. */
static void attack(struct th_flood *f, unsigned limit, const char *good, const char *want)
{
	static const char *const srcs[] = { "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4" };
	unsigned got = 0;
	long first, last;
	int r;

	if (!TH_WAIT(NULL, fds_back(), TH_SAFETY_USEC))
		fail_msg("before the attack: vmactd holds %u descriptors, %u when idle",
			 daemon_fds(), fx.idle_fds);
	r = th_flood(f, 4 * limit, f->unix_path[0] ? NULL : srcs, f->unix_path[0] ? 0 : 4, &got);
	if (r < 0)
		fail_msg("flood: %s: %u of %u connections got through", strerror(-r), got,
			 4 * limit);
	expect(f, good, want);
	r = th_flood_fds_within(fx.d.proc.pid, fx.idle_fds + limit + 2, &first, &last);
	if (r == -E2BIG)
		fail_msg("vmactd holds %ld descriptors under the flood, idle %u + limit %u + "
			 "%u evicted not yet closed",
			 first, fx.idle_fds, limit, NET_HTTP_CUT_SLACK);
	if (r < 0)
		fail_msg("vmactd holds %ld descriptors under the flood, idle %u + limit %u (%s)",
			 last, fx.idle_fds, limit, strerror(-r));
	print_message("%s: %u partial headers held open; vmactd has %ld descriptors "
		      "(idle %u; %ld at the first reading)\n",
		      f->unix_path[0] ? "control" : "metrics", 4 * limit, last, fx.idle_fds, first);
	th_flood_close(f);
	expect(f, good, want);
	assert_alive();
}

static void test_control_hostile(void **state)
{
	struct th_flood *f = &fx.flood;

	(void)state;
	at_control(f);
	expect(f, control_get, "HTTP/1.1 200");
	attack(f, CONTROL_CONN_LIMIT, control_get, "HTTP/1.1 200");
}

static void test_metrics_hostile(void **state)
{
	struct th_flood *f = &fx.flood;

	(void)state;
	f->port = fx.metrics_port;
	expect(f, metrics_get, "HTTP/1.1 200");
	attack(f, METRICS_CONN_LIMIT, metrics_get, "HTTP/1.1 200");
}

struct bad_input {
	struct th_flood f;
	const char *path;
	char msg[256];
	int r;
};

static void *bad_input_run(void *arg)
{
	struct bad_input *b = arg;

	b->r = th_flood_bad_input(&b->f, b->path, b->msg, sizeof(b->msg));
	return NULL;
}

/* Each server's bad input (an oversized header, garbage, a body that never
 * completes) once both floods are over, both servers at once (a thread
 * each): each bad client may take up to a server's request deadline
 * (10 s) if it regressed, and waiting for one server after the other
 * proves nothing more.
 * The descriptor bounds are the floods' (above), one server at a time;
 * test_after checks that these connections too are closed. A well-formed
 * request is answered by both beside the bad input, and after it. */
static void test_bad_input(void **state)
{
	struct bad_input b[2] = { { .path = "/v1/vms/x/bounds" }, { .path = "/metrics" } };
	struct th_flood good[2] = { { .port = 0 }, { .port = fx.metrics_port } };
	const char *reqs[2] = { control_get, metrics_get }, *names[2] = { "control", "metrics" };
	int during[2] = { 0, 0 };
	pthread_t t[2];
	bool started[2];

	(void)state;
	at_control(&good[0]);
	at_control(&b[0].f);
	b[1].f.port = fx.metrics_port;
	for (int i = 0; i < 2; i++)
		started[i] = pthread_create(&t[i], NULL, bad_input_run, &b[i]) == 0;
	for (int i = 0; i < 2; i++) {
		char buf[8192];

		if (!started[0] || !started[1])
			break;
		during[i] = th_flood_request(&good[i], NULL, reqs[i], strlen(reqs[i]), buf,
					     sizeof(buf));
		if (!during[i] && strncmp(buf, "HTTP/1.1 200", 12) != 0)
			during[i] = -EPROTO;
	}
	/* The threads run to their end before a failure is reported. */
	for (int i = 0; i < 2; i++)
		if (started[i])
			pthread_join(t[i], NULL);
	if (!started[0] || !started[1])
		fail_msg("pthread_create failed");
	for (int i = 0; i < 2; i++) {
		if (b[i].r < 0)
			fail_msg("%s: %s", names[i], b[i].msg);
		if (during[i] < 0)
			fail_msg("%s: no 200 answer beside the bad input (%s)", names[i],
				 strerror(-during[i]));
		expect(&good[i], reqs[i], "HTTP/1.1 200");
	}
	assert_alive();
}

/* Also on a failed test: its connections closed, its memory freed. */
static int flood_done(void **state)
{
	(void)state;
	th_flood_close(&fx.flood);
	free(fx.flood.fds);
	fx.flood = (struct th_flood){ 0 };
	return 0;
}

/* After both attacks: descriptors back to the idle count, resident
 * memory within its bound. */
static void test_after(void **state)
{
	long rss;

	(void)state;
	if (!TH_WAIT(NULL, fds_back(), TH_SAFETY_USEC))
		fail_msg("vmactd still holds %u descriptors, %u when idle", daemon_fds(),
			 fx.idle_fds);
	rss = daemon_rss_kib();
	print_message("vmactd: %u descriptors (idle %u), RSS %ld KiB (idle %ld KiB)\n",
		      daemon_fds(), fx.idle_fds, rss, fx.idle_rss_kib);
	assert_true(rss - fx.idle_rss_kib < RSS_GROWTH_KIB);
	assert_alive();
}

static int setup(void **state)
{
	char prefix[64], text[256];

	(void)state;
	/* Room for this side of every flood connection. */
	th_flood_raise_nofile(4096);
	if (th_vmactd_init(&fx.d, "vmactd-hostile", NULL) < 0)
		return -1;
	snprintf(prefix, sizeof(prefix), "vmactd-hostile-%d-none-", (int)getpid());
	snprintf(text, sizeof(text),
		 "{\"control\":{\"state_dir\":\"%s\"},\"metrics\":{\"listen\":\"127.0.0.1:0\"}}",
		 fx.d.dir);
	if (th_vmactd_config(&fx.d, prefix, text) < 0 || th_vmactd_spawn(&fx.d, NULL) < 0 ||
	    !th_vmactd_wait_log(&fx.d, "vmactd: started", TH_SAFETY_USEC / VMACT_USEC_PER_SEC))
		return -1;
	fx.metrics_port = th_log_port(fx.d.log, "metrics: serving");
	if (!fx.metrics_port) {
		th_print_log_tail(fx.d.log, "vmactd log", 6000);
		fprintf(stderr, "vmactd started without a metrics port\n");
		return -1;
	}
	{
		struct th_flood f = { .port = fx.metrics_port };
		char buf[256];

		/* Warm: the first answer allocates what later ones reuse. */
		th_flood_request(&f, NULL, metrics_get, strlen(metrics_get), buf, sizeof(buf));
	}
	fx.idle_fds = daemon_fds();
	fx.idle_rss_kib = daemon_rss_kib();
	return 0;
}

static int teardown(void **state)
{
	int status = th_vmactd_stop(&fx.d);

	(void)state;
	if (status != 0)
		fprintf(stderr, "vmactd exited with %d\n", status);
	th_vmactd_teardown(&fx.d);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_control_hostile, flood_done),
		cmocka_unit_test_teardown(test_metrics_hostile, flood_done),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_after),
	};

	if (!th_root_test("test_hostile_daemon", "the control API answers uid 0"))
		return 1;
	return cmocka_run_group_tests_name("test_hostile_daemon", tests, setup, teardown);
}
