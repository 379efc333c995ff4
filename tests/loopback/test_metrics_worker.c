/* SPDX-License-Identifier: Apache-2.0 */
/* The guest metrics through their guest worker (doc/privsep.md) without
 * libvirt: vmactd's side (actuator/worker/scrape-proxy.c) on a loop here, the
 * real vmact-guestd --metrics of this build, and the independent exporter
 * peer (tests/peers/guest-metrics.js, Node's HTTP stack) on loopback,
 * which the worker cannot connect to itself (vmactd dials it).
 *
 *   hostile:  garbage, a body over the limit, a body that never ends, an
 *             error status, a half answer, silence and a load the records
 *             cannot carry: each a clean error naming the cause, from the
 *             same worker (it is not killed), then good figures again;
 *   figures:  the system page's load and memory, and the LFC windows
 *             (3, then 1440: 360 records) arrive as the in-process
 *             scraper gives them; the worker runs with no_new_privs and
 *             seccomp mode 2 (as root: the workers' user, no capability);
 *   killed:   SIGKILL with a scrape pending -> that scrape fails, scrapes
 *             fail while no worker runs, a new worker answers;
 *   lying:    a "worker" that answers a scrape never asked for is killed
 *             and restarted.
 *
 * The silent exporter's scrape waits out the worker's 5 s timeout (the
 * agent's): `hostile` leaves it pending on its worker, `figures`, `killed`
 * and `lying` run meanwhile with workers and an exporter of their own
 * (the second peer), and `silent` then takes its answer and goes on with
 * the same worker. Waits have generous safety limits; nothing is timed. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "actuator/worker/scrape-proxy.h"
#include "guestd/privsep.h"
#include "tests/lib/file.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"
#include "tests/lib/worker.h"

#define LIMIT_USEC (60ULL * 1000000ULL)
#define MiB        (1024.0 * 1024.0)

struct outcome {
	unsigned calls;
	int error;
	long status;
	char message[1024];
	struct ag_system_metrics system;
	size_t n_windows;
	double wss_pages[AG_LFC_MAX_WINDOWS];
};

/* One proxy (vmactd's side of one metrics worker) and its last outcome. */
struct side {
	struct act_scrape_proxy *p;
	struct outcome o;
};

struct tctx {
	sd_event *e;
	/* peer: the hostile modes (and the 3 LFC windows); peer1440: the
	 * other cases' system page and the 1440 windows. */
	struct th_peer peer, peer1440;
	char peer_log[128], peer1440_log[128], program[PATH_MAX], name[64];
	char sys_url[128], lfc_url[128], sys1440_url[128], lfc1440_url[128];
	/* held: hostile's worker, its silent scrape pending across cases */
	struct side cur, held;
	unsigned held_calls;
};

static void on_result(void *ud, const struct ag_exporter_result *res)
{
	struct outcome *o = ud;

	o->calls++;
	o->error = res->error;
	o->status = res->status;
	snprintf(o->message, sizeof(o->message), "%s", res->message ? res->message : "");
	if (res->system)
		o->system = *res->system;
	o->n_windows = res->lfc ? res->lfc->n_windows : 0;
	if (res->lfc)
		memcpy(o->wss_pages, res->lfc->wss_pages, res->lfc->n_windows * sizeof(double));
}

/* One scrape of kind through the proxy; its outcome in s->o. */
static void scrape(struct tctx *t, struct side *s, enum ag_exporter_kind kind)
{
	unsigned calls = s->o.calls;

	assert_false(act_scrape_proxy_pending(s->p, kind));
	act_scrape_proxy_scrape(s->p, kind, on_result, &s->o);
	if (!TH_WAIT(t->e, s->o.calls > calls, LIMIT_USEC))
		fail_msg("no answer to the scrape");
	assert_int_equal(s->o.calls, calls + 1);
	assert_false(act_scrape_proxy_pending(s->p, kind));
}

static void start(struct tctx *t, struct side *s, const char *program, const char *sys,
		  const char *lfc)
{
	struct vmact_err err = { 0 };

	act_scrape_proxy_free(s->p);
	s->p = NULL;
	memset(&s->o, 0, sizeof(s->o));
	if (act_scrape_proxy_new(t->e, t->name, sys, lfc, program, "vmact", &s->p, &err) < 0)
		fail_msg("proxy: %s", err.msg);
	if (!TH_WAIT(t->e, act_scrape_proxy_worker_pid(s->p) > 0, LIMIT_USEC))
		fail_msg("no metrics worker runs");
}

static int setup(void **state)
{
	struct tctx *t = calloc(1, sizeof(*t));
	const char *a1440[] = { "--windows", "1440", NULL };
	char msg[512];

	if (!t)
		return -1;
	snprintf(t->peer_log, sizeof(t->peer_log), "/tmp/vmact-mw-%d.peer", (int)getpid());
	snprintf(t->peer1440_log, sizeof(t->peer1440_log), "/tmp/vmact-mw-%d.peer1440",
		 (int)getpid());
	snprintf(t->name, sizeof(t->name), "mw-test-%d", (int)getpid());
	if (th_build_prog("vmact-guestd", t->program, sizeof(t->program)) < 0 ||
	    sd_event_new(&t->e) < 0)
		return -1;
	if (th_peer_start(&t->peer, "guest-metrics.js", NULL, t->peer_log, msg, sizeof(msg)) < 0 ||
	    th_peer_start(&t->peer1440, "guest-metrics.js", a1440, t->peer1440_log, msg,
			  sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	/* /metrics: the mode the test sets; /lfc/metrics: the LFC page. */
	snprintf(t->sys_url, sizeof(t->sys_url), "http://127.0.0.1:%u/metrics", t->peer.port);
	snprintf(t->lfc_url, sizeof(t->lfc_url), "http://127.0.0.1:%u/lfc/metrics", t->peer.port);
	snprintf(t->sys1440_url, sizeof(t->sys1440_url), "http://127.0.0.1:%u/metrics",
		 t->peer1440.port);
	snprintf(t->lfc1440_url, sizeof(t->lfc1440_url), "http://127.0.0.1:%u/lfc/metrics",
		 t->peer1440.port);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tctx *t = *state;

	if (!t)
		return 0;
	act_scrape_proxy_free(t->cur.p);
	act_scrape_proxy_free(t->held.p);
	th_peer_stop(&t->peer);
	th_peer_stop(&t->peer1440);
	unlink(t->peer_log);
	unlink(t->peer1440_log);
	sd_event_unref(t->e);
	free(t);
	return 0;
}

struct peer_ack {
	const char *log;
	char needle[96];
	unsigned before;
};

static bool peer_acked(void *arg)
{
	const struct peer_ack *a = arg;

	return th_count_in_file(a->log, a->needle) > a->before;
}

/* The exporter's /metrics now serves `mode` ("mode M" or "load N"). */
static void peer_command(struct tctx *t, struct th_peer *peer, const char *log, const char *cmd)
{
	struct peer_ack a = { .log = log };
	char line[64];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);

	snprintf(a.needle, sizeof(a.needle), "\"command\":\"%s\"", cmd);
	a.before = th_count_in_file(a.log, a.needle);
	assert_true(write(peer->proc.in_fd, line, (size_t)n) == n);
	if (!th_wait_until(t->e, peer_acked, &a, LIMIT_USEC))
		fail_msg("the exporter did not take '%s'", cmd);
}

static void system_ok(struct tctx *t, struct side *s)
{
	scrape(t, s, AG_EXPORTER_SYSTEM);
	if (s->o.error)
		fail_msg("system scrape: %s", s->o.message);
	assert_true(s->o.system.load1 == 3.0);
	assert_true(s->o.system.load5 == 1.5);
	/* 4 GiB total - 3 GiB available + 100 MiB, as the agent computes. */
	assert_true(s->o.system.memory_usage_bytes == 1024.0 * MiB + 100.0 * MiB);
	assert_true(s->o.system.memory_cached_bytes == 512.0 * MiB);
}

/* The exporter in `mode`: the scrape fails with `code`, its message
 * naming the URL and saying `cause`; the worker lives on. */
static void fails(struct tctx *t, const char *cmd, int code, const char *cause)
{
	struct side *s = &t->held;
	pid_t pid = act_scrape_proxy_worker_pid(s->p);

	peer_command(t, &t->peer, t->peer_log, cmd);
	scrape(t, s, AG_EXPORTER_SYSTEM);
	if (s->o.error != code || !strstr(s->o.message, t->sys_url) || !strstr(s->o.message, cause))
		fail_msg("%s: error %d '%s', not %d with '%s'", cmd, s->o.error, s->o.message, code,
			 cause);
	assert_int_equal(act_scrape_proxy_worker_pid(s->p), pid);
}

static void hostile(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->held;

	peer_command(t, &t->peer, t->peer_log, "mode system");
	start(t, s, t->program, t->sys_url, NULL);
	system_ok(t, s);
	fails(t, "mode garbage", -EBADMSG, "expected a metric name");
	fails(t, "mode big", -EFBIG, "exceeds");
	fails(t, "mode endless", -EFBIG, "exceeds");
	fails(t, "mode status", -EREMOTEIO, "HTTP status 503");
	assert_int_equal(s->o.status, 503);
	fails(t, "mode hangup", -ECONNRESET, "");
	/* Silence: the answer comes at the worker's timeout, in `silent`;
	 * the peer stays silent till then (nothing else uses its /metrics). */
	peer_command(t, &t->peer, t->peer_log, "mode silent");
	assert_false(act_scrape_proxy_pending(s->p, AG_EXPORTER_SYSTEM));
	t->held_calls = s->o.calls;
	act_scrape_proxy_scrape(s->p, AG_EXPORTER_SYSTEM, on_result, &s->o);
}

static void figures(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->cur;
	pid_t pid;

	start(t, s, t->program, t->sys1440_url, t->lfc_url);
	system_ok(t, s);
	pid = act_scrape_proxy_worker_pid(s->p);
	assert_true(pid > 0);
	{
		/* 0-3, the event loop's, libcurl's wake-up pair, the exporter's
		 * connection kept for the next scrape. */
		long n = th_proc_fds(pid);

		print_message("metrics worker %d: %ld descriptors\n", (int)pid, n);
		assert_true(n >= 4 && n <= 12);
	}
	th_check_worker_sandbox(pid);
	/* The peer lists window i (60 i seconds) with 1000 i pages, last first. */
	scrape(t, s, AG_EXPORTER_LFC);
	if (s->o.error)
		fail_msg("LFC scrape: %s", s->o.message);
	assert_int_equal(s->o.n_windows, 3);
	for (size_t i = 0; i < 3; i++)
		assert_true(s->o.wss_pages[i] == 1000.0 * (double)(i + 1));
	/* Every window the core keeps: 360 records in a row. */
	start(t, s, t->program, t->sys1440_url, t->lfc1440_url);
	scrape(t, s, AG_EXPORTER_LFC);
	if (s->o.error)
		fail_msg("LFC scrape of 1440 windows: %s", s->o.message);
	assert_int_equal(s->o.n_windows, AG_LFC_MAX_WINDOWS);
	for (size_t i = 0; i < AG_LFC_MAX_WINDOWS; i++)
		assert_true(s->o.wss_pages[i] == 1000.0 * (double)(i + 1));
	system_ok(t, s);
	assert_int_equal(act_scrape_proxy_worker_pid(s->p) > 0, 1);
}

/* Another worker than pid runs. */
static bool replaced(struct side *s, pid_t pid)
{
	pid_t now = act_scrape_proxy_worker_pid(s->p);

	return now > 0 && now != pid;
}

static void killed(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->cur;
	unsigned calls;
	pid_t pid;

	peer_command(t, &t->peer1440, t->peer1440_log, "mode silent");
	start(t, s, t->program, t->sys1440_url, NULL);
	pid = act_scrape_proxy_worker_pid(s->p);
	calls = s->o.calls;
	act_scrape_proxy_scrape(s->p, AG_EXPORTER_SYSTEM, on_result, &s->o);
	assert_int_equal(kill(pid, SIGKILL), 0);
	if (!TH_WAIT(t->e, s->o.calls > calls, LIMIT_USEC))
		fail_msg("the scrape pending in the killed worker never failed");
	if (s->o.error != -ECONNRESET || !strstr(s->o.message, "guest worker stopped"))
		fail_msg("the killed worker's scrape: %d '%s'", s->o.error, s->o.message);
	/* No worker until the backoff's end: a scrape fails at once. */
	if (act_scrape_proxy_worker_pid(s->p) == 0) {
		calls = s->o.calls;
		act_scrape_proxy_scrape(s->p, AG_EXPORTER_SYSTEM, on_result, &s->o);
		assert_int_equal(s->o.calls, calls + 1);
		assert_int_equal(s->o.error, -ENOTCONN);
	}
	if (!TH_WAIT(t->e, replaced(s, pid), LIMIT_USEC))
		fail_msg("no new worker");
	peer_command(t, &t->peer1440, t->peer1440_log, "mode system");
	system_ok(t, s);
}

static void lying(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->cur;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_METRICS, .seq = 1 };
	char script[128], rec[128], text[512];
	pid_t first;

	/* A METRICS record before any SCRAPE, then it waits to be killed. */
	snprintf(rec, sizeof(rec), "/tmp/vmact-mw-%d.rec", (int)getpid());
	snprintf(script, sizeof(script), "/tmp/vmact-mw-%d.sh", (int)getpid());
	{
		FILE *f = fopen(rec, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(&m, sizeof(m), 1, f), 1);
		assert_int_equal(fclose(f), 0);
	}
	snprintf(text, sizeof(text), "#!/bin/sh\ncat %s >&3\nexec sleep 60\n", rec);
	assert_int_equal(th_write_file(script, text), 0);
	assert_int_equal(chmod(script, 0755), 0);
	assert_int_equal(chmod(rec, 0644), 0);
	start(t, s, script, t->sys_url, NULL);
	first = act_scrape_proxy_worker_pid(s->p);
	if (!TH_WAIT(t->e, replaced(s, first), LIMIT_USEC))
		fail_msg("the lying worker was never replaced");
	assert_true(kill(first, 0) < 0 && errno == ESRCH);
	act_scrape_proxy_free(s->p);
	s->p = NULL;
	unlink(script);
	unlink(rec);
}

/* hostile's worker, on: the silent exporter's scrape times out, then a
 * load the records cannot carry, then good figures again. */
static void silent(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->held;
	pid_t pid = act_scrape_proxy_worker_pid(s->p);

	assert_non_null(s->p);
	if (!TH_WAIT(t->e, s->o.calls > t->held_calls, LIMIT_USEC))
		fail_msg("no answer to the scrape of the silent exporter");
	assert_int_equal(s->o.calls, t->held_calls + 1);
	if (s->o.error != -ETIMEDOUT || !strstr(s->o.message, t->sys_url))
		fail_msg("mode silent: error %d '%s', not %d", s->o.error, s->o.message,
			 -ETIMEDOUT);
	assert_int_equal(act_scrape_proxy_worker_pid(s->p), pid);
	/* A load beyond what the records carry: refused by the worker. */
	peer_command(t, &t->peer, t->peer_log, "mode system");
	fails(t, "load 1e12", -ERANGE, "out of range");
	peer_command(t, &t->peer, t->peer_log, "load 3");
	system_ok(t, s);
	/* No LFC exporter named: no scrape of one. */
	scrape(t, s, AG_EXPORTER_LFC);
	assert_int_equal(s->o.error, -ENOENT);
	act_scrape_proxy_free(s->p);
	s->p = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hostile), cmocka_unit_test(figures), cmocka_unit_test(killed),
		cmocka_unit_test(lying),   cmocka_unit_test(silent),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("metrics worker", tests, setup, teardown);
}
