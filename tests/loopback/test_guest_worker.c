/* SPDX-License-Identifier: Apache-2.0 */
/* The guest worker (doc/privsep.md) without libvirt: vmactd's proxy
 * approver (actuator/worker/approver-proxy.c) on a loop here, the real
 * vmact-guestd of this build, and the independent vm-monitor peer
 * (tests/peers/vm-monitor.js, approving every downscale) on a unix socket
 * the worker cannot open itself (vmactd dials it).
 *
 *   approves:  connected; a downscale approved, an upscale notified; the
 *              worker's /proc status shows no_new_privs and seccomp mode 2
 *              (and, run as root, the unprivileged user, no capability);
 *   killed:    SIGKILL -> lost, no approval meanwhile, restarted, connected
 *              again, approving again;
 *   hung:      SIGSTOP with a request pending -> found hung by the
 *              heartbeat, the request dropped (lost), killed, restarted;
 *   hostile:   a "worker" that sends garbage is killed and restarted, and
 *              never counts as connected;
 *   approval_then_close: the monitor approves a downscale and closes at
 *              once (a peer of its own, --close-after-downscale): the
 *              approval is heard before the loss or not at all, never
 *              after (the runner voids it at the loss: test_runner_resize),
 *              and the monitor approves again once back.
 *
 * The hung worker's heartbeat deadline (5 s, vmactd's default) is waited
 * out beside the rest: `hung` stops its worker with a request pending
 * and leaves it, on a vm-monitor peer of its own (a monitor serves one
 * agent); `approves`, `killed` and `hostile` run meanwhile; `hung_found`
 * then sees it found hung, killed and restarted.
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

#include "actuator/worker/approver-proxy.h"
#include "tests/lib/file.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"
#include "tests/lib/worker.h"

#define LIMIT_USEC (60ULL * 1000000ULL)

/* One proxy approver (vmactd's side of one worker) and what it reported. */
struct side {
	struct act_approver *ap;
	unsigned connected, lost, changed, done;
	enum act_approval outcome;
	/* The order of the last answer and the first loss (0: none yet). */
	unsigned done_at, lost_at;
};

/* Numbers the callbacks in the order they ran. */
static unsigned callbacks;

struct tctx {
	sd_event *e;
	/* peer[0]: approves, killed; peer[1]: hung's, its worker stopped;
	 * peer[2]: approval_then_close's, closing behind its first approval. */
	struct th_peer peer[3];
	char sock[3][108], peer_log[3][128], program[PATH_MAX], name[64];
	struct side cur, held, drop;
	pid_t held_pid;
};

static void ev_connected(void *ud)
{
	((struct side *)ud)->connected++;
}

static void ev_lost(void *ud, bool dropped)
{
	struct side *s = ud;

	if (!s->lost++)
		s->lost_at = ++callbacks;
}

static void ev_changed(void *ud)
{
	((struct side *)ud)->changed++;
}

static void ev_upscale(void *ud, bool cpu, bool memory)
{
}

static const struct act_approver_events events = {
	.connected = ev_connected,
	.lost = ev_lost,
	.changed = ev_changed,
	.upscale_requested = ev_upscale,
};

static void on_done(void *ud, enum act_approval outcome)
{
	struct side *s = ud;

	s->done++;
	s->outcome = outcome;
	s->done_at = ++callbacks;
}

struct above {
	const unsigned *v;
	unsigned n;
};

static bool is_above(void *arg)
{
	const struct above *a = arg;

	return *a->v > a->n;
}

/* Runs the loop until *v > n. */
static void wait_above(struct tctx *t, const unsigned *v, unsigned n, const char *what)
{
	struct above a = { v, n };

	if (!th_wait_until(t->e, is_above, &a, LIMIT_USEC))
		fail_msg("never: %s", what);
}

static int setup(void **state)
{
	struct tctx *t = calloc(1, sizeof(*t));
	char msg[512];

	if (!t)
		return -1;
	snprintf(t->name, sizeof(t->name), "gw-test-%d", (int)getpid());
	if (th_build_prog("vmact-guestd", t->program, sizeof(t->program)) < 0 ||
	    sd_event_new(&t->e) < 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		const char *a[] = { "--unix",      t->sock[i],
				    "--no-cgroup", i == 2 ? "--close-after-downscale" : NULL,
				    "1000",        NULL };

		snprintf(t->sock[i], sizeof(t->sock[i]), "/tmp/vmact-gw-%d-%d.sock", (int)getpid(),
			 i);
		snprintf(t->peer_log[i], sizeof(t->peer_log[i]), "/tmp/vmact-gw-%d-%d.peer",
			 (int)getpid(), i);
		if (th_peer_start(&t->peer[i], "vm-monitor.js", a, t->peer_log[i], msg,
				  sizeof(msg)) < 0) {
			print_error("%s\n", msg);
			return -1;
		}
		/* Only root's: the worker, once not root, cannot open it itself. */
		chmod(t->sock[i], 0600);
	}
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tctx *t = *state;

	if (!t)
		return 0;
	act_approver_free(t->cur.ap);
	act_approver_free(t->held.ap);
	act_approver_free(t->drop.ap);
	for (int i = 0; i < 3; i++) {
		th_peer_stop(&t->peer[i]);
		unlink(t->sock[i]);
		unlink(t->peer_log[i]);
	}
	sd_event_unref(t->e);
	free(t);
	return 0;
}

/* A new proxy on s, its worker `program` speaking to peer[peer]. */
static void start(struct tctx *t, struct side *s, const char *program, int peer)
{
	char endpoint[160];
	struct vmact_err err = { 0 };

	act_approver_free(s->ap);
	memset(s, 0, sizeof(*s));
	snprintf(endpoint, sizeof(endpoint), "unix:%s", t->sock[peer]);
	if (act_approver_proxy_new(t->e, t->name, endpoint, program, "vmact", &events, s, &s->ap,
				   &err) < 0)
		fail_msg("proxy: %s", err.msg);
}

/* Asks s's approver for a downscale to 1 CPU / 512 MiB. */
static void ask_downscale(struct side *s)
{
	struct vmact_resources target = { .milli_cpu = 1000, .mem_bytes = 512ULL << 20 };
	struct vmact_err err = { 0 };

	if (act_approver_request_downscale(s->ap, &target, on_done, s, &err) < 0)
		fail_msg("downscale request: %s", err.msg);
}

static void downscale_ok(struct tctx *t, struct side *s)
{
	unsigned done = s->done;

	assert_true(act_approver_approves(s->ap));
	ask_downscale(s);
	wait_above(t, &s->done, done, "the downscale's answer");
	assert_int_equal(s->outcome, ACT_APPROVAL_OK);
}

static void approves(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->cur;
	struct vmact_resources target = { .milli_cpu = 2000, .mem_bytes = 1ULL << 30 };
	struct vmact_err err = { 0 };
	pid_t pid;

	start(t, s, t->program, 0);
	wait_above(t, &s->connected, 0, "connected through the worker");
	pid = act_approver_proxy_worker_pid(s->ap);
	assert_true(pid > 0);
	th_check_worker_sandbox(pid);
	downscale_ok(t, s);
	assert_int_equal(act_approver_request_upscale(s->ap, &target, on_done, s, &err), 0);
	wait_above(t, &s->done, 1, "the upscale's answer");
	assert_int_equal(s->outcome, ACT_APPROVAL_OK);
}

static void killed(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->cur;
	pid_t pid;

	start(t, s, t->program, 0);
	wait_above(t, &s->connected, 0, "connected through the worker");
	pid = act_approver_proxy_worker_pid(s->ap);
	assert_int_equal(kill(pid, SIGKILL), 0);
	wait_above(t, &s->lost, 0, "the killed worker reported lost");
	/* Nothing approves until a new worker's monitor connects. */
	assert_false(act_approver_approves(s->ap));
	wait_above(t, &s->connected, 1, "connected again through a new worker");
	assert_true(act_approver_proxy_worker_pid(s->ap) != pid);
	downscale_ok(t, s);
}

/* A worker stopped with a request pending; hung_found sees the rest. */
static void hung(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->held;

	start(t, s, t->program, 1);
	wait_above(t, &s->connected, 0, "connected through the worker");
	t->held_pid = act_approver_proxy_worker_pid(s->ap);
	assert_int_equal(kill(t->held_pid, SIGSTOP), 0);
	ask_downscale(s);
}

static void hung_found(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->held;
	pid_t pid = t->held_pid;

	assert_non_null(s->ap);
	wait_above(t, &s->lost, 0, "the stopped worker found hung");
	/* The pending request was dropped with the worker, never approved. */
	assert_int_equal(s->done, 0);
	assert_true(act_approver_proxy_worker_pid(s->ap) != pid);
	assert_true(kill(pid, 0) < 0 && errno == ESRCH);
	wait_above(t, &s->connected, 1, "connected again after the hang");
	downscale_ok(t, s);
}

static void hostile(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->cur;
	char script[128], buf_script[256];
	pid_t first;
	int changed;

	snprintf(script, sizeof(script), "/tmp/vmact-gw-%d.sh", (int)getpid());
	/* Garbage on its socket, then it waits to be killed. */
	assert_int_equal(th_write_file(script,
				       "#!/bin/sh\nprintf 'not a record' >&3\nexec sleep 60\n"),
			 0);
	assert_int_equal(chmod(script, 0755), 0);
	start(t, s, script, 0);
	first = act_approver_proxy_worker_pid(s->ap);
	assert_true(first > 0);
	/* Killed (down: changed), restarted (up: changed again), killed... */
	changed = (int)s->changed;
	wait_above(t, &s->changed, (unsigned)changed + 1, "the lying worker killed and restarted");
	assert_true(kill(first, 0) < 0 && errno == ESRCH);
	assert_int_equal(s->connected, 0);
	assert_false(act_approver_approves(s->ap) && act_approver_proxy_worker_pid(s->ap) == first);
	act_approver_free(s->ap);
	s->ap = NULL;
	/* A vm-monitor's worker asking for a listening socket (an informant
	 * worker's record, doc/privsep.md) lies: killed, no socket opened. */
	{
		char rec[128];
		unsigned char buf[192] = { 25 }; /* LISTEN */
		FILE *f;

		snprintf(rec, sizeof(rec), "/tmp/vmact-gw-%d.rec", (int)getpid());
		f = fopen(rec, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
		fclose(f);
		snprintf(buf_script, sizeof(buf_script), "#!/bin/sh\ncat %s >&3\nexec sleep 60\n",
			 rec);
		assert_int_equal(th_write_file(script, buf_script), 0);
		assert_int_equal(chmod(script, 0755), 0);
		start(t, s, script, 0);
		first = act_approver_proxy_worker_pid(s->ap);
		changed = (int)s->changed;
		wait_above(t, &s->changed, (unsigned)changed + 1,
			   "the worker asking for a listening socket killed");
		assert_true(kill(first, 0) < 0 && errno == ESRCH);
		act_approver_free(s->ap);
		s->ap = NULL;
		unlink(rec);
	}
	unlink(script);
}

static void approval_then_close(void **state)
{
	struct tctx *t = *state;
	struct side *s = &t->drop;

	start(t, s, t->program, 2);
	wait_above(t, &s->connected, 0, "connected through the worker");
	ask_downscale(s);
	wait_above(t, &s->lost, 0, "the monitor's close reported lost");
	/* The answer, if it came through, came first; none came after. */
	if (s->done)
		assert_true(s->done_at < s->lost_at);
	print_message("the approval %s\n", s->done ? "came before the loss" : "went with the loss");
	/* The request either got its answer or was dropped with the loss. */
	assert_true(s->done <= 1);
	/* Back: it approves again (the peer closes only once). */
	wait_above(t, &s->connected, 1, "connected again after the close");
	downscale_ok(t, s);
	assert_true(s->done_at > s->lost_at);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hung),
		cmocka_unit_test(approves),
		cmocka_unit_test(killed),
		cmocka_unit_test(hostile),
		cmocka_unit_test(approval_then_close),
		cmocka_unit_test(hung_found),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("guest worker", tests, setup, teardown);
}
