/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-cloudprovider as cluster-autoscaler's gRPC client sees it, against
 * tests/peers/fake-groupd.js (groups in memory, no VMs): every RPC and its
 * status codes, the answers kept between Refresh calls, groupd's failures,
 * bad input, stalled and silent clients, connection floods beside a
 * well-behaved client, mTLS, and the start-up refusals. The client is
 * tests/peers/ca-client.js on @grpc/grpc-js and protobufjs. The same
 * provider against the real vmact-groupd and libvirt:
 * tests/integration/test_cloudprovider. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/macro.h"
#include "base/time.h"
#include "tests/lib/cloudprov.h"
#include "tests/lib/file.h"
#include "tests/lib/flood.h"
#include "tests/lib/net.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

struct fixture {
	char dir[64];
	char sock[128];
	struct th_peer groupd;
	struct th_cp cp;
};

static void path_in(const struct fixture *f, char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", f->dir, name);
}

/* The provider may run as nobody: the directory is open to it, the files
 * in it readable. */
static int setup_dir(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/vmact-cp-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(chmod(f->dir, 0755), 0);
	path_in(f, f->sock, sizeof(f->sock), "groupd.sock");
	*state = f;
	return 0;
}

static void start_groupd(struct fixture *f)
{
	const char *args[] = { f->sock, NULL };
	char msg[256], log[160];

	path_in(f, log, sizeof(log), "groupd.log");
	if (th_peer_start(&f->groupd, "fake-groupd.js", args, log, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
}

/* The provider with extra args (NULL: the defaults). */
static void start_cp(struct fixture *f, const char *const *extra)
{
	const char *args[24] = { "--groupd-socket", f->sock };
	char msg[256];
	size_t n = 2;

	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	if (th_cp_start(&f->cp, f->dir, NULL, args, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
}

static int setup(void **state)
{
	struct fixture *f;

	setup_dir(state);
	f = *state;
	start_groupd(f);
	start_cp(f, NULL);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int status = f->cp.proc.spawned ? th_cp_stop(&f->cp) : 0;

	th_peer_stop(&f->groupd);
	if (status != 0)
		th_cp_print_log(&f->cp);
	th_rm_rf(f->dir);
	free(f);
	/* a clean shutdown on SIGTERM, no sanitizer report */
	assert_int_equal(status, 0);
	return 0;
}

static void client(struct fixture *f, const char *scenario, const char *const *extra)
{
	const char *args[24] = { "--groupd", f->sock };
	char log[160];
	size_t n = 2;
	int r;

	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	snprintf(log, sizeof(log), "%s/client-%s.log", f->dir, scenario);
	r = th_cp_client(f->cp.port, scenario, args, log);
	if (r != 0) {
		th_cp_print_log(&f->cp);
		fail_msg("ca-client.js %s: exit %d", scenario, r);
	}
}

static void test_contract(void **state)
{
	client(*state, "contract", NULL);
}

static void test_cache(void **state)
{
	client(*state, "cache", NULL);
}

static void test_errors(void **state)
{
	client(*state, "errors", NULL);
}

static void test_bad_input(void **state)
{
	struct fixture *f = *state;

	client(f, "bad-input", NULL);
	assert_false(th_proc_exited(&f->cp.proc));
}

/* 1: the server closed fd (EOF or reset) before end_usec. */
static bool closed_by(int fd, uint64_t end_usec)
{
	char buf[256];

	while (vmact_now_usec() < end_usec) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
		usleep(20 * 1000);
	}
	return false;
}

/* A call whose message stops halfway, a connection that says nothing and
 * one that stops inside the HTTP/2 preface: each ends at the request
 * timeout (2 s here, to keep the test short; 10 s by default). */
static void test_slow_clients(void **state)
{
	struct fixture *f = *state;
	const char *const extra[] = { "--request-timeout", "2", NULL };
	const char *const cargs[] = { "--expect-ms", "8000", NULL };
	struct th_flood fl = { 0 };
	int silent, partial;
	uint64_t end;

	th_cp_stop(&f->cp);
	start_cp(f, extra);
	fl.port = f->cp.port;
	silent = th_flood_open(&fl, NULL);
	partial = th_flood_open(&fl, NULL);
	assert_true(silent >= 0 && partial >= 0);
	assert_true(TH_WAIT(NULL, th_flood_send(partial, "PRI * HTTP/2.0\r\n"), TH_SAFETY_USEC));
	client(f, "stall", cargs);
	/* generous: a safety net, the client above measured the bound */
	end = vmact_now_usec() + TH_SAFETY_USEC;
	assert_true(closed_by(silent, end));
	assert_true(closed_by(partial, end));
	close(silent);
	close(partial);
}

static unsigned calls_in(const char *log)
{
	return th_count_in_file(log, "\"event\":\"call\"");
}

/* A well-behaved client keeps its connection and its answers through
 * floods of connections that each hold a partial HTTP/2 preface, from one
 * address and from eight; a new client is served in the middle of the
 * flood; the provider's descriptors stay bounded. Defaults: 64
 * connections, 16 per address. */
static void test_flood(void **state)
{
	struct fixture *f = *state;
	static const char *const srcs[] = { "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5",
					    "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9" };
	struct th_flood fl = { .port = f->cp.port };
	struct th_proc watch = { 0 };
	char wlog[160], slog[160];
	long base, during;
	int fds[512];
	unsigned n = 0, before;
	int status;

	snprintf(wlog, sizeof(wlog), "%s/client-watch.log", f->dir);
	snprintf(slog, sizeof(slog), "%s/client-served.log", f->dir);
	assert_int_equal(th_cp_client_start(&watch, f->cp.port, "watch", NULL, wlog), 0);
	TH_WAIT_OR_FAIL(NULL, calls_in(wlog) >= 3, "the watching client's first calls");
	base = th_proc_fds(f->cp.proc.pid);
	for (unsigned i = 0; i < 512; i++) {
		int fd = th_flood_open(&fl, i < 256 ? NULL : srcs[i % ARRAY_SIZE(srcs)]);

		if (fd >= 0)
			fds[n++] = fd;
	}
	assert_true(n >= 500);
	for (unsigned i = 0; i < n; i++)
		TH_WAIT(NULL, th_flood_send(fds[i], "PRI * HTTP/2.0\r\n\r\nSM"),
			VMACT_USEC_PER_SEC);
	before = calls_in(wlog);
	/* the flood is in: the watcher goes on, and a newcomer is served */
	TH_WAIT_OR_FAIL(NULL, calls_in(wlog) >= before + 5,
			"the watching client's calls during the flood");
	assert_int_equal(th_cp_client(f->cp.port, "served", NULL, slog), 0);
	/* Three per relayed connection (client, relay, gRPC's end) at the
	 * 64-connection limit, over what it held before. gRPC closes its end
	 * of an evicted relay when it next reads it: the count may be over
	 * for a moment, never for long. */
	during = th_proc_fds(f->cp.proc.pid);
	if (!TH_WAIT(NULL, (during = th_proc_fds(f->cp.proc.pid)) <= base + 3 * 64, TH_SAFETY_USEC))
		fail_msg("%ld descriptors under the flood, bound %ld", during, base + 3 * 64);
	print_message("provider descriptors: %ld before the flood, %ld during (%u connections)\n",
		      base, during, n);
	/* garbage instead of HTTP/2 on 32 more */
	for (unsigned i = 0; i < 32; i++) {
		int fd = th_flood_open(&fl, srcs[i % ARRAY_SIZE(srcs)]);

		if (fd < 0)
			continue;
		TH_WAIT(NULL,
			th_flood_send(fd, "\x16\x03\x01garbage\xff\xfe\r\n\r\nxxxxxxxxxxxxxx"),
			VMACT_USEC_PER_SEC);
		fds[i] = (close(fds[i]), fd);
	}
	before = calls_in(wlog);
	TH_WAIT_OR_FAIL(NULL, calls_in(wlog) >= before + 3,
			"the watching client's calls after garbage");
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	assert_int_equal(th_cp_client(f->cp.port, "served", NULL, slog), 0);
	status = th_proc_stop(&watch, 0, 10 * VMACT_USEC_PER_SEC);
	if (status != 0)
		th_print_log_tail(wlog, "watch", 40);
	assert_int_equal(status, 0);
	assert_int_equal(th_count_in_file(wlog, "FAIL"), 0);
}

/* sh -c script in dir; its exit status. */
static int sh(const char *dir, const char *script)
{
	char cmd[4096];
	const char *argv[] = { "sh", "-c", cmd, NULL };
	static const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_NULL };
	struct th_proc p = { 0 };

	snprintf(cmd, sizeof(cmd), "set -e; cd '%s'; %s", dir, script);
	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	return th_proc_wait(&p);
}

/* mTLS: a client with a certificate from the CA is served; one without a
 * certificate, one with a certificate from another CA and a plaintext one
 * are refused in the handshake. */
static void test_mtls(void **state)
{
	struct fixture *f = *state;
	char key[160], cert[160], ca[160], ckey[160], ccert[160], rkey[160], rcert[160], log[160];

	path_in(f, key, sizeof(key), "server.key");
	path_in(f, cert, sizeof(cert), "server.crt");
	path_in(f, ca, sizeof(ca), "ca.crt");
	path_in(f, ckey, sizeof(ckey), "client.key");
	path_in(f, ccert, sizeof(ccert), "client.crt");
	path_in(f, rkey, sizeof(rkey), "rogue.key");
	path_in(f, rcert, sizeof(rcert), "rogue.crt");
	assert_int_equal(th_cp_make_certs(f->dir), 0);
	th_cp_stop(&f->cp);
	{
		const char *const extra[] = { "--key", key, "--cert", cert, "--cacert", ca, NULL };

		start_cp(f, extra);
	}
	path_in(f, log, sizeof(log), "client-mtls.log");
	{
		const char *const good[] = { "--cacert", ca, "--cert", ccert, "--key", ckey, NULL };
		const char *const none[] = { "--cacert", ca, NULL };
		const char *const rogue[] = { "--cacert", ca, "--cert", rcert, "--key", rkey, NULL };

		assert_int_equal(th_cp_client(f->cp.port, "served", good, log), 0);
		assert_int_equal(th_cp_client(f->cp.port, "refused", none, log), 0);
		assert_int_equal(th_cp_client(f->cp.port, "refused", rogue, log), 0);
		assert_int_equal(th_cp_client(f->cp.port, "refused", NULL, log), 0);
		/* and the certificate-holding client still, after those */
		assert_int_equal(th_cp_client(f->cp.port, "served", good, log), 0);
	}
}

/* Runs the provider with args and returns its exit status; its output in
 * out (NUL-terminated). as_root: as the test's user even when root. */
static int run_cp(struct fixture *f, bool as_root, const char *const *args, char *out, size_t cap)
{
	char prog[PATH_MAX], log[160];
	const char *argv[16];
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };
	struct th_proc p = { 0 };
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	int status;

	path_in(f, log, sizeof(log), "run.log");
	assert_int_equal(th_build_prog("vmact-cloudprovider", prog, sizeof(prog)), 0);
	if (geteuid() == 0 && !as_root) {
		argv[n++] = "setpriv";
		argv[n++] = "--reuid=65534";
		argv[n++] = "--regid=65534";
		argv[n++] = "--clear-groups";
	}
	argv[n++] = prog;
	for (; *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	status = th_proc_wait(&p);
	text = th_read_file(log);
	snprintf(out, cap, "%s", text ? text : "");
	return status;
}

static void test_refusals(void **state)
{
	struct fixture *f = *state;
	const char *const wide[] = { "--listen", "0.0.0.0:0", "--groupd-socket", f->sock, NULL };
	const char *const v6[] = { "--listen", "[::]:0", NULL };
	const char *const half[] = { "--key", "k", "--cert", "c", NULL };
	const char *const plain[] = { "--listen", "127.0.0.1:0", NULL };
	const char *const nofile[] = { "--listen",       "127.0.0.1:0",    "--key",
				       "/nonexistent/k", "--cert",         "/nonexistent/c",
				       "--cacert",       "/nonexistent/a", NULL };
	char out[4096];

	assert_int_equal(run_cp(f, false, wide, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "plaintext only on a loopback address"));
	assert_int_equal(run_cp(f, false, v6, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "--key, --cert and --cacert"));
	assert_int_equal(run_cp(f, false, half, out, sizeof(out)), 2);
	assert_non_null(strstr(out, "all three"));
	assert_int_equal(run_cp(f, false, nofile, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "/nonexistent/k"));
	if (geteuid() == 0) {
		assert_int_equal(run_cp(f, true, plain, out, sizeof(out)), 1);
		assert_non_null(strstr(out, "refusing to run as root"));
	}
}

/* vmact-cloudprovider.service's system-call filter, address families,
 * namespace, personality and W^X rules, loaded by tests/sandbox/seccomp-exec
 * as systemd would load them (stricter: a call outside the list kills the
 * process, where the unit answers EPERM), with no_new_privs: the whole
 * contract still works and it stops cleanly. Without leak detection here:
 * LeakSanitizer's tracer at exit needs ptrace, which the filter forbids
 * (the other cases check for leaks). */
static void test_sandboxed(void **state)
{
	struct fixture *f = *state;
	char launcher[PATH_MAX], list[160], cmd[512];
	/* clang-format off */
	const char *wrap[] = { "env", "ASAN_OPTIONS=detect_leaks=0", "setpriv", "--no-new-privs",
			       launcher, "--syscalls", list,
			       "--families", "AF_UNIX AF_INET AF_INET6", "--restrict-namespaces",
			       "--lock-personality", "--mdwe", "--", NULL };
	/* clang-format on */
	const char *args[] = { "--groupd-socket", f->sock, NULL };
	char msg[256];

	path_in(f, list, sizeof(list), "syscalls");
	snprintf(cmd, sizeof(cmd),
		 "tests/sandbox/unit-syscalls.sh "
		 "cloudprovider/vmact-cloudprovider.service > %s",
		 list);
	assert_int_equal(sh(".", cmd), 0);
	assert_true(th_count_in_file(list, "\n") > 100);
	assert_int_equal(th_build_prog("tests/sandbox/seccomp-exec", launcher, sizeof(launcher)),
			 0);
	th_cp_stop(&f->cp);
	if (th_cp_start_wrapped(&f->cp, f->dir, NULL, wrap, args, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	client(f, "contract", NULL);
	client(f, "bad-input", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_contract, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sandboxed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup_dir, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
