/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-hook's datagram (hook/notify.c) against vmactd's listener
 * (actuator/daemon/hook-listener.c) on a unix socket under /tmp: a notice
 * arrives whole; with no vmactd the hook fails at once (ENOENT,
 * ECONNREFUSED); with a vmactd that does not read (hung) every send still
 * returns, the last ones with EAGAIN after the short wait; datagrams that
 * are not notices are dropped and reported once per distinct reason; a
 * second listener on the same path is refused, not allowed to take the
 * socket. Time limits are safety nets, far above what the code needs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "actuator/daemon/hook-listener.h"
#include "base/time.h"
#include "hook/hook.h"
#include "tests/lib/wait.h"

#define UUID "0b6d3b5e-4c1e-4a55-9c6e-1b2c3d4e5f60"

struct fx {
	sd_event *ev;
	char dir[64], path[128];
	struct act_hook_listener *l;
	unsigned notices, bads;
	struct vmact_hook_msg last;
	char last_bad[1024];
};

static void on_notice(void *ud, const struct vmact_hook_msg *m)
{
	struct fx *f = ud;

	f->notices++;
	f->last = *m;
}

static void on_bad(void *ud, const char *why)
{
	struct fx *f = ud;

	f->bads++;
	snprintf(f->last_bad, sizeof(f->last_bad), "%s", why);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const struct act_hook_listener_ops ops = { on_notice, on_bad, f };
	struct vmact_err err = { 0 };

	strcpy(f->dir, "/tmp/vmact-hook-XXXXXX");
	if (!mkdtemp(f->dir) || sd_event_new(&f->ev) < 0)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/run/hook.sock", f->dir);
	if (act_hook_listener_new(f->ev, f->path, &ops, &f->l, &err) < 0) {
		print_error("%s\n", err.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[192];

	act_hook_listener_free(f->l);
	sd_event_unref(f->ev);
	snprintf(p, sizeof(p), "%s.lock", f->path);
	unlink(p);
	snprintf(p, sizeof(p), "%s/run", f->dir);
	rmdir(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

static const struct vmact_hook_msg msg = {
	.op = VMACT_HOOK_STARTED, .subop = VMACT_HOOK_BEGIN, .uuid = UUID, .name = "vm one"
};

static void notice_arrives(void **state)
{
	struct fx *f = *state;
	struct vmact_err err = { 0 };
	struct stat sb;

	/* Root-only by its mode (and by the sender check). */
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(hk_notify(f->path, &msg, 100, &err), 0);
	TH_WAIT_OR_FAIL(f->ev, f->notices == 1, "the notice");
	assert_int_equal(f->last.op, VMACT_HOOK_STARTED);
	assert_int_equal(f->last.subop, VMACT_HOOK_BEGIN);
	assert_string_equal(f->last.uuid, UUID);
	assert_string_equal(f->last.name, "vm one");
	assert_int_equal(f->bads, 0);
}

static void no_vmactd(void **state)
{
	struct fx *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vmact_err err = { 0 };
	char p[160];
	uint64_t t0 = vmact_now_usec();
	int fd;

	snprintf(p, sizeof(p), "%s/absent.sock", f->dir);
	assert_int_equal(hk_notify(p, &msg, 100, &err), -ENOENT);
	/* A socket file nobody reads any more (a vmactd that was killed). */
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	strcpy(sa.sun_path, p);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	vmact_err_reset(&err);
	assert_int_equal(hk_notify(p, &msg, 100, &err), -ECONNREFUSED);
	assert_true(vmact_now_usec() - t0 < 5 * VMACT_USEC_PER_SEC);
	unlink(p);
}

static void hung_vmactd(void **state)
{
	struct fx *f = *state;
	unsigned sent = 0, again = 0;

	/* The loop is not run: vmactd does not read (as under SIGSTOP). */
	for (int i = 0; i < 2000 && again < 3; i++) {
		struct vmact_err err = { 0 };
		uint64_t t0 = vmact_now_usec();
		int r = hk_notify(f->path, &msg, 100, &err);

		if (vmact_now_usec() - t0 > 5 * VMACT_USEC_PER_SEC)
			fail_msg("a send took %.1f s", (double)(vmact_now_usec() - t0) / 1e6);
		if (r == 0) {
			sent++;
			continue;
		}
		assert_int_equal(r, -EAGAIN);
		assert_non_null(strstr(err.msg, "not reading"));
		again++;
	}
	printf("# %u notices queued before the queue was full\n", sent);
	assert_int_equal(again, 3);
	assert_true(sent >= 1);
	/* Once vmactd reads again, what was queued arrives. */
	TH_WAIT_OR_FAIL(f->ev, f->notices == sent, "the queued notices");
}

static void send_raw(const char *path, const void *buf, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	strcpy(sa.sun_path, path);
	assert_int_equal(sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa)), (ssize_t)len);
	close(fd);
}

static void not_notices(void **state)
{
	struct fx *f = *state;
	char big[4096];
	unsigned before = f->notices;

	send_raw(f->path, "hello", 5);
	TH_WAIT_OR_FAIL(f->ev, f->bads == 1, "the first report");
	assert_non_null(strstr(f->last_bad, "not a notice: magic"));
	/* The same reason again: dropped without a second report. */
	send_raw(f->path, "hello", 5);
	send_raw(f->path, "hello", 5);
	/* A notice behind them is still taken. */
	send_raw(f->path, "vmact-hook/1 stopped end " UUID " vm",
		 strlen("vmact-hook/1 stopped end " UUID " vm"));
	TH_WAIT_OR_FAIL(f->ev, f->notices == before + 1, "the notice after the garbage");
	assert_int_equal(f->bads, 1);
	assert_int_equal(f->last.op, VMACT_HOOK_STOPPED);
	/* Too big: dropped whole, a new reason. */
	memset(big, 'x', sizeof(big));
	send_raw(f->path, big, sizeof(big));
	TH_WAIT_OR_FAIL(f->ev, f->bads == 2, "the oversize report");
	assert_non_null(strstr(f->last_bad, "4096 bytes"));
	send_raw(f->path, "vmact-hook/1 bogus - " UUID " vm",
		 strlen("vmact-hook/1 bogus - " UUID " vm"));
	TH_WAIT_OR_FAIL(f->ev, f->bads == 3, "the unknown operation report");
	assert_non_null(strstr(f->last_bad, "operation: unknown 'bogus'"));
	assert_int_equal(f->notices, before + 1);
}

static void second_listener(void **state)
{
	struct fx *f = *state;
	const struct act_hook_listener_ops ops = { on_notice, on_bad, f };
	struct act_hook_listener *l2 = NULL;
	struct vmact_err err = { 0 };
	unsigned before = f->notices;

	assert_int_equal(act_hook_listener_new(f->ev, f->path, &ops, &l2, &err), -EADDRINUSE);
	assert_non_null(strstr(err.msg, "in use by another vmactd"));
	assert_null(l2);
	/* The first one still has its socket. */
	vmact_err_reset(&err);
	assert_int_equal(hk_notify(f->path, &msg, 100, &err), 0);
	TH_WAIT_OR_FAIL(f->ev, f->notices == before + 1, "the notice");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(notice_arrives, setup, teardown),
		cmocka_unit_test_setup_teardown(no_vmactd, setup, teardown),
		cmocka_unit_test_setup_teardown(hung_vmactd, setup, teardown),
		cmocka_unit_test_setup_teardown(not_notices, setup, teardown),
		cmocka_unit_test_setup_teardown(second_listener, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
