/* SPDX-License-Identifier: Apache-2.0 */
/* The guest workers (doc/privsep.md) end to end: a real vmactd with its
 * defaults, two TCG guests (tests/guest) each with a vm-monitor endpoint
 * on the independent vm-monitor peer (tests/peers/vm-monitor.js,
 * approving every downscale with --no-cgroup).
 *
 *   - each VM's monitor is spoken to by its own vmact-guestd, which runs
 *     as the unprivileged user (guest_worker.user, or nobody), with no
 *     capabilities, no_new_privs, a seccomp filter, fds 0-3 only and an
 *     empty environment (/proc/PID/status, fd, environ);
 *   - A scales down, approved by its monitor through its worker (one
 *     peer per VM: a monitor serves one agent), and up under load;
 *   - meanwhile, B's worker stopped (SIGSTOP) while B is idle and large
 *     (its first size, twice its minimum): vmactd finds it hung, kills
 *     and restarts it, and B is not shrunk before the new worker's
 *     monitor approves it;
 *   - A's worker killed (SIGKILL) three times: restarted each time, while
 *     B, busy meanwhile, scales up;
 *   - B's guest metrics (<vmact:metrics>, the exporter peer
 *     tests/peers/guest-metrics.js: load 0.3, 356 MiB used) are scraped by
 *     a worker of their own, sandboxed as the monitor's; its figures reach
 *     B's policy (the system metrics fed and the CPU decisions say the
 *     guest's load); killed (beside A's kills), it is restarted and the
 *     figures flow again.
 *
 * What waits overlaps where it proves the same: the guests boot side by
 * side, the two shrinks wait out their 15 s hold together (B's hang found
 * and its worker restarted within it), the restarts' backoffs of A's
 * monitor worker and B's metrics worker run side by side.
 *
 * The daemon is the plain build's when VMACT_PLAIN_BUILD is set (make
 * check): the worker's seccomp filter is then tested without the
 * sanitizers too. VMACT_TEST_KEEP_LOG keeps the logs.
 *
 * Conditions are awaited with generous safety limits; nothing is timed. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-ps"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S      240.0
/* Half a CPU each at the least: both grow within the embedded arbiter's
 * 1.8 CPUs on a 2-CPU host. */
#define META                                                             \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" \
	"<vmact:cpu min='0.5' max='2'/>"                                 \
	"<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/>"      \
	"<vmact:compute-unit cpu='250m' memory='256Mi'/>"                \
	"<vmact:monitor endpoint='unix:%s'/>%s</vmact:autoscaling>"
/* B's exporter: the guest's load 0.3 (a floor of 0.333 CPUs, so B's minimum,
 * 500m, holds), 1 GiB total, 768 MiB available. */
#define GM_LOAD "0.3"
#define GM_FED  "load1 0.30 load5 0.15 memory known (guest)"
/* Its new load once its metrics worker was killed, while A and B grow side
 * by side: a floor of 0.667 CPUs (750m), so B's floor alone never takes
 * the room A grows into (the two share 1.8 CPUs). */
#define GM_LOAD2 "0.6"
#define GM_FED2  "load1 0.60 load5 0.30 memory known (guest)"

static struct {
	/* vmactd, its scratch directory (the peers' sockets and logs too),
	 * and the two guests. */
	struct th_vmactd d;
	struct tg_guest a, b;
	/* One vm-monitor per VM: a monitor serves one agent at a time. */
	struct th_peer peer[2];
	char sock[2][108], peer_log[2][128];
	/* B's guest metrics exporter */
	struct th_peer gm;
	char gm_log[128], gm_elem[160];
} fx;

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_vmactd_wait(&fx.d, pred, arg, limit_s);
}

static bool log_has(void *needle)
{
	return th_vmactd_log_has(&fx.d, needle);
}

static bool gm_peer_has(void *needle)
{
	return th_count_in_file(fx.gm_log, needle) > 0;
}

/* Waits for pred(arg); fails naming what did not happen. */
static void need(bool (*pred)(void *), void *arg, const char *what)
{
	if (!wait_until(pred, arg, LIMIT_S))
		fail_msg("never: %s", what);
}

/* Waits for one more "<name>: <what>" than at the mark. */
static void await(const struct th_vmactd_mark *m, const char *what)
{
	if (!th_vmactd_wait_mark(&fx.d, m, LIMIT_S))
		fail_msg("never: %s", what);
}

static pid_t worker_pid(const struct tg_guest *g)
{
	return th_log_guest_worker(fx.d.log, g->name);
}

/* The VM's metrics worker: its log lines say "VM/metrics: guest worker". */
static pid_t metrics_worker_pid(const struct tg_guest *g)
{
	char name[160];

	snprintf(name, sizeof(name), "%s/metrics", g->name);
	return th_log_guest_worker(fx.d.log, name);
}

/* The VM's CPU limit in milli-CPUs, from the cgroup vmactd logged. */
static long quota(const struct tg_guest *g)
{
	long q = th_vmactd_vm_quota(&fx.d, g->name);

	if (q == TH_CG_UNKNOWN)
		fail_msg("no CPU limit for %s", g->name);
	return q;
}

static bool grown(void *g)
{
	return quota(g) > 500;
}

static bool at_min(void *g)
{
	return quota(g) == 500;
}

/* The worker's sandbox, as the kernel reports it. */
static void check_sandbox(pid_t pid, const char *label, unsigned max_fds)
{
	struct passwd *pw = getpwnam("vmact");
	char v[128], expect[64], path[64];
	unsigned nfd = 0;
	DIR *d;
	struct dirent *e;
	char *env;

	if (!pw)
		pw = getpwnam("nobody");
	assert_non_null(pw);
	for (int i = 0; i < 2; i++) {
		unsigned id = i ? (unsigned)pw->pw_gid : (unsigned)pw->pw_uid;

		snprintf(expect, sizeof(expect), "%u\t%u\t%u\t%u", id, id, id, id);
		assert_true(th_proc_status(pid, i ? "Gid" : "Uid", v, sizeof(v)));
		if (strcmp(v, expect))
			fail_msg("%s worker %d: %s %s, not %s (%s)", label, (int)pid,
				 i ? "Gid" : "Uid", v, expect, pw->pw_name);
	}
	{
		static const char *const want[][2] = {
			{ "Groups", "" },
			{ "CapEff", "0000000000000000" },
			{ "CapPrm", "0000000000000000" },
			{ "CapAmb", "0000000000000000" },
			{ "NoNewPrivs", "1" },
			{ "Seccomp", "2" },
		};

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			assert_true(th_proc_status(pid, want[i][0], v, sizeof(v)));
			if (strcmp(v, want[i][1]))
				fail_msg("%s worker %d: %s %s, not %s", label, (int)pid, want[i][0],
					 v, want[i][1]);
		}
	}
	/* Descriptors: stdin/stdout (/dev/null), stderr (the log), the
	 * socket to vmactd; a monitor connection when it is up (a metrics
	 * worker: libcurl's wake-up pair and the exporter's connection). */
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	assert_non_null(d);
	while ((e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]))
			nfd++;
	closedir(d);
	if (nfd < 4 || nfd > max_fds)
		fail_msg("%s worker %d has %u descriptors", label, (int)pid, nfd);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	env = th_read_file(path);
	assert_non_null(env);
	assert_true(env[0] == 0 || !strncmp(env, "JOURNAL_STREAM=", 15));
	free(env);
	assert_true(th_proc_status(pid, "VmRSS", v, sizeof(v)));
	printf("%s worker %d: uid %s, CapEff 0, NoNewPrivs 1, Seccomp 2, %u fds, RSS %s\n", label,
	       (int)pid, pw->pw_name, nfd, v);
}

static int setup(void **state)
{
	char msg[512], meta[2][1024], prefix[64];
	const char *plain = getenv("VMACT_PLAIN_BUILD");
	const char *gm_args[] = { "--load",          GM_LOAD,     "--mem-total", "1073741824",
				  "--mem-available", "805306368", NULL };
	virConnectPtr vc;

	(void)state;
	if (th_vmactd_init(&fx.d, PREFIX, &fx.a) < 0 || th_vmactd_add_guest(&fx.d, &fx.b) < 0)
		return -1;
	if (plain && plain[0])
		snprintf(fx.d.prog, sizeof(fx.d.prog), "%s/vmactd", plain);
	for (int i = 0; i < 2; i++) {
		const char *peer_args[] = { "--unix", fx.sock[i], "--no-cgroup", NULL };

		snprintf(fx.sock[i], sizeof(fx.sock[i]), "%s/monitor-%d.sock", fx.d.dir, i);
		snprintf(fx.peer_log[i], sizeof(fx.peer_log[i]), "%s/monitor-%d.log", fx.d.dir, i);
		if (th_peer_start(&fx.peer[i], "vm-monitor.js", peer_args, fx.peer_log[i], msg,
				  sizeof(msg)) < 0) {
			print_error("%s\n", msg);
			return -1;
		}
	}
	snprintf(fx.gm_log, sizeof(fx.gm_log), "%s/metrics.log", fx.d.dir);
	if (th_peer_start(&fx.gm, "guest-metrics.js", gm_args, fx.gm_log, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	snprintf(fx.gm_elem, sizeof(fx.gm_elem), "<vmact:metrics endpoint='http://127.0.0.1:%u'/>",
		 fx.gm.port);
	snprintf(meta[0], sizeof(meta[0]), META, fx.sock[0], "");
	snprintf(meta[1], sizeof(meta[1]), META, fx.sock[1], fx.gm_elem);
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	vc = virConnectOpen("qemu:///system");
	if (!vc)
		return -1;
	if (tg_start(vc, PREFIX, meta[0], &fx.a, msg, sizeof(msg)) < 0 ||
	    tg_start(vc, PREFIX, meta[1], &fx.b, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		virConnectClose(vc);
		return -1;
	}
	virConnectClose(vc);
	/* Defaults but what isolates the test. */
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	return th_vmactd_config(&fx.d, prefix, NULL);
}

static int teardown(void **state)
{
	(void)state;
	th_vmactd_stop(&fx.d);
	for (int i = 0; i < 2; i++)
		th_peer_stop(&fx.peer[i]);
	th_peer_stop(&fx.gm);
	th_vmactd_teardown(&fx.d);
	return 0;
}

static bool pid_gone(void *p)
{
	return kill(*(pid_t *)p, 0) < 0 && errno == ESRCH;
}

static void privsep(void **state)
{
	const char *args[] = { "--verbose", NULL };
	struct th_vmactd_mark c, conn, down, bdown, fed;
	pid_t wa, wb, wm, old;
	char *buf, needle[256];
	const char *killed, *resized;
	int status;

	(void)state;
	/* Both guests boot side by side (setup started them). */
	if (th_vmactd_start(&fx.d, args, 2, LIMIT_BOOT_S, 120) < 0)
		fail_msg("vmactd did not become ready managing both guests");
	th_vmactd_mark(&fx.d, &conn, "%s: vm-monitor connected", fx.a.name);
	if (conn.before == 0)
		await(&conn, "A's vm-monitor connected through its worker");
	snprintf(needle, sizeof(needle), "%s: vm-monitor connected", fx.b.name);
	need(log_has, needle, "B's vm-monitor never connected");
	wa = worker_pid(&fx.a);
	wb = worker_pid(&fx.b);
	assert_true(wa > 0 && wb > 0 && wa != wb);
	check_sandbox(wa, "A", 8);
	check_sandbox(wb, "B", 8);

	/* Both idle at their first size, one vCPU, twice their minimum: A
	 * comes down to half a CPU as its monitor approves through its
	 * worker, while B's worker is stopped (the two at once: one VM's
	 * hung worker does not hold the other's scaling). vmactd finds B's
	 * worker hung, kills and restarts it, and B is not shrunk before the
	 * new worker's monitor approves it. A shrink waits for its goal to
	 * hold 15 s (README), so B's worker is stopped long before any
	 * downscale is asked, as the two shrinks wait out that hold side by
	 * side. */
	old = wb;
	th_vmactd_mark(&fx.d, &c, "%s: guest worker %d killed: hung", fx.b.name, (int)old);
	th_vmactd_mark(&fx.d, &conn, "%s: vm-monitor connected", fx.b.name);
	th_vmactd_mark(&fx.d, &bdown, "%s: vm-monitor approved the downscale", fx.b.name);
	th_vmactd_mark(&fx.d, &down, "%s: vm-monitor approved the downscale", fx.a.name);
	assert_int_equal(kill(old, SIGSTOP), 0);
	assert_int_equal(tg_cmd(&fx.a, "idle"), 0);
	assert_int_equal(tg_cmd(&fx.b, "idle"), 0);

	/* Meanwhile B's guest metrics: their own worker, sandboxed as the
	 * monitor's; the guest's figures fed to B's policy through it. */
	th_vmactd_mark(&fx.d, &fed, "%s: " GM_FED, fx.b.name);
	if (fed.before == 0)
		await(&fed, "B's guest figures fed through its metrics worker");
	wm = metrics_worker_pid(&fx.b);
	assert_true(wm > 0 && wm != wb && wm != wa);
	check_sandbox(wm, "B metrics", 10);

	await(&c, "the stopped worker found hung");
	assert_true(wait_until(pid_gone, &old, 30));
	await(&conn, "B's monitor connected again after the hang");
	wb = worker_pid(&fx.b);
	assert_true(wb != old);

	await(&down, "A's downscale approved");
	need(at_min, &fx.a, "A never went down to half a CPU");
	await(&bdown, "B's downscale approved by the new worker");
	need(at_min, &fx.b, "B never went down to half a CPU after the restart");
	/* Nothing shrank B between the hang and the new approval. */
	buf = th_read_file(fx.d.log);
	assert_non_null(buf);
	snprintf(needle, sizeof(needle), "%s: guest worker %d killed: hung", fx.b.name, (int)old);
	killed = strstr(buf, needle);
	assert_non_null(killed);
	snprintf(needle, sizeof(needle), "%s: resized to 500m CPU", fx.b.name);
	resized = strstr(killed, needle);
	assert_non_null(resized);
	snprintf(needle, sizeof(needle), "%s: vm-monitor approved the downscale", fx.b.name);
	{
		const char *approved = strstr(killed, needle);

		if (!approved || approved > resized)
			fail_msg("B was resized down after its worker hung, before any approval");
	}
	free(buf);
	check_sandbox(wb, "B (restarted)", 8);
	/* B's CPU decisions took the guest's load (the floor of its goal:
	 * its shrink's decision says so). */
	need(log_has, "(guest load1 " GM_LOAD "0: at least",
	     "B's CPU decisions never took the guest's load");

	/* Both busy: A up under load, as B, while A's worker is killed three
	 * times and B's metrics worker once (independent workers: the
	 * restarts' backoffs run side by side). */
	assert_int_equal(tg_cmd(&fx.a, "busy 2"), 0);
	assert_int_equal(tg_cmd(&fx.b, "busy 2"), 0);
	/* B's metrics worker killed: restarted, and the guest's new load
	 * comes through the new worker. */
	assert_int_equal(metrics_worker_pid(&fx.b), wm);
	assert_int_equal(kill(wm, SIGKILL), 0);
	snprintf(needle, sizeof(needle), "%s/metrics: guest worker %d died: Killed", fx.b.name,
		 (int)wm);
	need(log_has, needle, "B's killed metrics worker reported");
	th_vmactd_mark(&fx.d, &fed, "%s: " GM_FED2, fx.b.name);
	assert_int_equal(write(fx.gm.proc.in_fd, "load " GM_LOAD2 "\n", 9), 9);
	need(gm_peer_has, "\"command\":\"load " GM_LOAD2 "\"", "the exporter took the new load");
	for (int i = 0; i < 3; i++) {
		old = worker_pid(&fx.a);
		th_vmactd_mark(&fx.d, &conn, "%s: vm-monitor connected", fx.a.name);
		assert_int_equal(kill(old, SIGKILL), 0);
		snprintf(needle, sizeof(needle), "%s: guest worker %d died: Killed", fx.a.name,
			 (int)old);
		if (!wait_until(log_has, needle, LIMIT_S))
			fail_msg("the killed worker %d was not reported", (int)old);
		await(&conn, "A's monitor connected again after the kill");
		assert_true(worker_pid(&fx.a) != old);
	}
	need(grown, &fx.a, "A never grew under load");
	need(grown, &fx.b, "B did not grow while A's worker was being killed");
	assert_int_equal(tg_cmd(&fx.a, "idle"), 0);
	assert_int_equal(tg_cmd(&fx.b, "idle"), 0);
	/* The new workers are sandboxed as the first. */
	check_sandbox(worker_pid(&fx.a), "A (restarted)", 8);
	assert_int_equal(worker_pid(&fx.b), wb);

	await(&fed, "B's new guest load fed through its restarted metrics worker");
	assert_true(metrics_worker_pid(&fx.b) > 0 && metrics_worker_pid(&fx.b) != wm);
	check_sandbox(metrics_worker_pid(&fx.b), "B metrics (restarted)", 10);

	status = th_proc_stop(&fx.d.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC);
	if (status != 0) {
		th_print_log_tail(fx.d.log, "vmactd log", 8000);
		fail_msg("vmactd exited with status %d", status);
	}
	/* Its workers went with it. */
	wb = worker_pid(&fx.b);
	assert_true(wait_until(pid_gone, &wb, 30) || pid_gone(&wb));
	wm = metrics_worker_pid(&fx.b);
	assert_true(wait_until(pid_gone, &wm, 30) || pid_gone(&wm));
	if (getenv("VMACT_TEST_VERBOSE"))
		th_print_log_tail(fx.d.log, "vmactd log", 8000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(privsep),
	};

	if (!th_root_test("test_privsep", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	return cmocka_run_group_tests_name("privsep", tests, setup, teardown);
}
