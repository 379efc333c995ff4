/* SPDX-License-Identifier: Apache-2.0 */
/* The guest metrics through their guest worker (doc/privsep.md) without
 * libvirt: vmactd's side (actuator/metrics-proxy.c) on a loop here, the
 * real vmact-guestd --metrics of this build, and the independent exporter
 * peer (tests/peers/guest-metrics.js, Node's HTTP stack) on loopback,
 * which the worker cannot connect to itself (vmactd dials it).
 *
 *   figures:  the system page's load and memory, and the LFC windows
 *             (3, then 1440: 360 records) arrive as the in-process
 *             scraper gives them; the worker runs with no_new_privs and
 *             seccomp mode 2 (as root: the workers' user, no capability);
 *   hostile:  garbage, a body over the limit, a body that never ends, an
 *             error status, a half answer, silence and a load the records
 *             cannot carry: each a clean error naming the cause, from the
 *             same worker (it is not killed), then good figures again;
 *   killed:   SIGKILL with a scrape pending -> that scrape fails, scrapes
 *             fail while no worker runs, a new worker answers;
 *   lying:    a "worker" that answers a scrape never asked for is killed
 *             and restarted.
 *
 * Waits have generous safety limits; nothing is timed. */
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

#include "actuator/metrics-proxy.h"
#include "actuator/privsep-msg.h"
#include "tests/lib/file.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"
#include "tests/lib/worker.h"

#define LIMIT_USEC (60ULL * 1000000ULL)
#define MiB (1024.0 * 1024.0)

struct outcome {
	unsigned calls;
	int error;
	long status;
	char message[1024];
	struct ag_system_metrics system;
	size_t n_windows;
	double wss_pages[AG_LFC_MAX_WINDOWS];
};

struct tctx {
	sd_event *e;
	struct th_peer peer, peer1440;
	char peer_log[128], peer1440_log[128], program[PATH_MAX], name[64];
	char sys_url[128], lfc_url[128];
	struct act_gm_proxy *p;
	struct outcome o;
};

static void on_result(void *ud, const struct ag_guest_metrics_result *res)
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

/* One scrape of kind through the proxy; its outcome in t->o. */
static void scrape(struct tctx *t, enum ag_guest_metrics_kind kind)
{
	unsigned calls = t->o.calls;

	assert_false(act_gm_proxy_pending(t->p, kind));
	act_gm_proxy_scrape(t->p, kind, on_result, &t->o);
	if (!TH_WAIT(t->e, t->o.calls > calls, LIMIT_USEC))
		fail_msg("no answer to the scrape");
	assert_int_equal(t->o.calls, calls + 1);
	assert_false(act_gm_proxy_pending(t->p, kind));
}

static void start(struct tctx *t, const char *program, const char *sys, const char *lfc)
{
	struct vmact_err err = { 0 };

	act_gm_proxy_free(t->p);
	t->p = NULL;
	memset(&t->o, 0, sizeof(t->o));
	if (act_gm_proxy_new(t->e, t->name, sys, lfc, program, "vmact", &t->p, &err) < 0)
		fail_msg("proxy: %s", err.msg);
	if (!TH_WAIT(t->e, act_gm_proxy_worker_pid(t->p) > 0, LIMIT_USEC))
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
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tctx *t = *state;

	if (!t)
		return 0;
	act_gm_proxy_free(t->p);
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
static void peer_command(struct tctx *t, const char *cmd)
{
	struct peer_ack a = { .log = t->peer_log };
	char line[64];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);

	snprintf(a.needle, sizeof(a.needle), "\"command\":\"%s\"", cmd);
	a.before = th_count_in_file(a.log, a.needle);
	assert_true(write(t->peer.proc.in_fd, line, (size_t)n) == n);
	if (!th_wait_until(t->e, peer_acked, &a, LIMIT_USEC))
		fail_msg("the exporter did not take '%s'", cmd);
}

static void system_ok(struct tctx *t)
{
	scrape(t, AG_GUEST_METRICS_SYSTEM);
	if (t->o.error)
		fail_msg("system scrape: %s", t->o.message);
	assert_true(t->o.system.load1 == 3.0);
	assert_true(t->o.system.load5 == 1.5);
	/* 4 GiB total - 3 GiB available + 100 MiB, as the agent computes. */
	assert_true(t->o.system.memory_usage_bytes == 1024.0 * MiB + 100.0 * MiB);
	assert_true(t->o.system.memory_cached_bytes == 512.0 * MiB);
}

static void figures(void **state)
{
	struct tctx *t = *state;
	char lfc1440[128];
	pid_t pid;

	peer_command(t, "mode system");
	start(t, t->program, t->sys_url, t->lfc_url);
	system_ok(t);
	pid = act_gm_proxy_worker_pid(t->p);
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
	scrape(t, AG_GUEST_METRICS_LFC);
	if (t->o.error)
		fail_msg("LFC scrape: %s", t->o.message);
	assert_int_equal(t->o.n_windows, 3);
	for (size_t i = 0; i < 3; i++)
		assert_true(t->o.wss_pages[i] == 1000.0 * (double)(i + 1));
	/* Every window the core keeps: 360 records in a row. */
	snprintf(lfc1440, sizeof(lfc1440), "http://127.0.0.1:%u/lfc/metrics", t->peer1440.port);
	start(t, t->program, t->sys_url, lfc1440);
	scrape(t, AG_GUEST_METRICS_LFC);
	if (t->o.error)
		fail_msg("LFC scrape of 1440 windows: %s", t->o.message);
	assert_int_equal(t->o.n_windows, AG_LFC_MAX_WINDOWS);
	for (size_t i = 0; i < AG_LFC_MAX_WINDOWS; i++)
		assert_true(t->o.wss_pages[i] == 1000.0 * (double)(i + 1));
	system_ok(t);
	assert_int_equal(act_gm_proxy_worker_pid(t->p) > 0, 1);
}

/* The exporter in `mode`: the scrape fails with `code`, its message
 * naming the URL and saying `cause`; the worker lives on. */
static void fails(struct tctx *t, const char *cmd, int code, const char *cause)
{
	pid_t pid = act_gm_proxy_worker_pid(t->p);

	peer_command(t, cmd);
	scrape(t, AG_GUEST_METRICS_SYSTEM);
	if (t->o.error != code || !strstr(t->o.message, t->sys_url) ||
	    !strstr(t->o.message, cause))
		fail_msg("%s: error %d '%s', not %d with '%s'", cmd, t->o.error, t->o.message, code,
			 cause);
	assert_int_equal(act_gm_proxy_worker_pid(t->p), pid);
}

static void hostile(void **state)
{
	struct tctx *t = *state;

	peer_command(t, "mode system");
	start(t, t->program, t->sys_url, NULL);
	system_ok(t);
	fails(t, "mode garbage", -EBADMSG, "expected a metric name");
	fails(t, "mode big", -EFBIG, "exceeds");
	fails(t, "mode endless", -EFBIG, "exceeds");
	fails(t, "mode status", -EREMOTEIO, "HTTP status 503");
	assert_int_equal(t->o.status, 503);
	fails(t, "mode hangup", -ECONNRESET, "");
	fails(t, "mode silent", -ETIMEDOUT, "");
	/* A load beyond what the records carry: refused by the worker. */
	peer_command(t, "mode system");
	fails(t, "load 1e12", -ERANGE, "out of range");
	peer_command(t, "load 3");
	system_ok(t);
	/* No LFC exporter named: no scrape of one. */
	scrape(t, AG_GUEST_METRICS_LFC);
	assert_int_equal(t->o.error, -ENOENT);
}

/* Another worker than pid runs. */
static bool replaced(struct tctx *t, pid_t pid)
{
	pid_t now = act_gm_proxy_worker_pid(t->p);

	return now > 0 && now != pid;
}

static void killed(void **state)
{
	struct tctx *t = *state;
	unsigned calls;
	pid_t pid;

	peer_command(t, "mode silent");
	start(t, t->program, t->sys_url, NULL);
	pid = act_gm_proxy_worker_pid(t->p);
	calls = t->o.calls;
	act_gm_proxy_scrape(t->p, AG_GUEST_METRICS_SYSTEM, on_result, &t->o);
	assert_int_equal(kill(pid, SIGKILL), 0);
	if (!TH_WAIT(t->e, t->o.calls > calls, LIMIT_USEC))
		fail_msg("the scrape pending in the killed worker never failed");
	if (t->o.error != -ECONNRESET || !strstr(t->o.message, "guest worker stopped"))
		fail_msg("the killed worker's scrape: %d '%s'", t->o.error, t->o.message);
	/* No worker until the backoff's end: a scrape fails at once. */
	if (act_gm_proxy_worker_pid(t->p) == 0) {
		calls = t->o.calls;
		act_gm_proxy_scrape(t->p, AG_GUEST_METRICS_SYSTEM, on_result, &t->o);
		assert_int_equal(t->o.calls, calls + 1);
		assert_int_equal(t->o.error, -ENOTCONN);
	}
	if (!TH_WAIT(t->e, replaced(t, pid), LIMIT_USEC))
		fail_msg("no new worker");
	peer_command(t, "mode system");
	system_ok(t);
}

static void lying(void **state)
{
	struct tctx *t = *state;
	struct act_ps_msg m = { .type = ACT_PS_METRICS, .seq = 1 };
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
	start(t, script, t->sys_url, NULL);
	first = act_gm_proxy_worker_pid(t->p);
	if (!TH_WAIT(t->e, replaced(t, first), LIMIT_USEC))
		fail_msg("the lying worker was never replaced");
	assert_true(kill(first, 0) < 0 && errno == ESRCH);
	act_gm_proxy_free(t->p);
	t->p = NULL;
	unlink(script);
	unlink(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(figures),
		cmocka_unit_test(hostile),
		cmocka_unit_test(killed),
		cmocka_unit_test(lying),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("metrics worker", tests, setup, teardown);
}
