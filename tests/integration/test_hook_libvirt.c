/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-hook run by the real libvirtd (doc/hook.md). The test installs
 * this build's hook as /etc/libvirt/hooks/qemu.d/vmact and restarts
 * libvirtd (it reads its hooks when it starts; started as
 * tests/host/setup-host.sh does), and at the end removes it and restarts
 * libvirtd again. With a real vmactd (build[/san]/vmactd, its defaults but
 * for the name prefix and pins) and real TCG guests:
 *
 *   vmactd up:    a guest starts; vmactd logs the hook's prepare, started,
 *                 stopped and release notices and manages the guest;
 *   vmactd down:  (SIGKILLed: its socket file stays, nobody reads it) a
 *                 guest starts; the hook run by hand returns 0 at once;
 *   vmactd hung:  (SIGSTOP, its queue filled by the hook run by hand, each
 *                 run returning 0) a guest starts; after SIGCONT vmactd
 *                 manages it;
 *   reload:       SIGHUP with a good and a bad configuration file, the
 *                 guests staying managed throughout;
 *   refusal:      invalid metadata with refuse-invalid="true" refuses the
 *                 start with the hook's message in libvirt's error; the
 *                 same metadata without it starts.
 *
 * Time limits are safety nets; the figures printed are not asserted. */
#include <errno.h>
#include <libgen.h>
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

#include "hotplug/hotplug.h"
#include "shared/hook-msg.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/libvirtd.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "hook-it"
#define HOOK_DIR     "/etc/libvirt/hooks/qemu.d"
#define HOOK_PATH    HOOK_DIR "/vmact"
#define HOOK_SAVED   "/etc/libvirt/hooks/vmact.saved-by-test"
#define LIMIT_BOOT_S 180.0
/* A start waits for the hook; with vmactd hung the hook waits at most
 * 100 ms. 60 s only catches a hook that hangs. */
#define LIMIT_START_S 60.0
#define LIMIT_HOOK_S  5.0

#define META_OK(extra)                                                            \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'" extra ">" \
	"<vmact:cpu min='1' max='2'/>"                                            \
	"<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/></vmact:autoscaling>"
#define META_BAD(extra)                                                           \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'" extra ">" \
	"<vmact:cpu min='2' max='1'/>"                                            \
	"<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/></vmact:autoscaling>"

static double t_begin;

static void elapsed(const char *what)
{
	printf("# %s: %.1f s since setup began\n", what, th_now_s() - t_begin);
}

static struct {
	virConnectPtr vc;
	struct th_vmactd d; /* manages the guests below; the test destroys them */
	struct tg_guest g[5];
	unsigned n;
	bool installed, saved;
} fx;

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char cmd[PATH_MAX * 2 + 64];

	snprintf(cmd, sizeof(cmd), "install -m %o '%s' '%s'", (unsigned)mode, from, to);
	return system(cmd) == 0 ? 0 : -1;
}

static bool log_has(const char *needle)
{
	return th_count_in_file(fx.d.log, needle) > 0;
}

static void dump_log(void)
{
	th_print_log_tail(fx.d.log, "vmactd log", 5000);
}

static void wait_log(const char *needle)
{
	if (!TH_WAIT(NULL, log_has(needle) || th_proc_exited(&fx.d.proc),
		     (uint64_t)(60 * VMACT_USEC_PER_SEC)) ||
	    !log_has(needle)) {
		dump_log();
		fail_msg("vmactd did not log '%s'", needle);
	}
}

/* Starts vmactd and waits until it listens on the hook's socket: another
 * vmactd on the host (a loopback test's) may hold it for a while. */
static void start_vmactd(void)
{
	for (int attempt = 0;; attempt++) {
		assert_int_equal(th_vmactd_spawn(&fx.d, NULL), 0);
		if (!TH_WAIT(NULL,
			     log_has("hook: receiving notices on") ||
				     log_has("hook: not receiving") || th_proc_exited(&fx.d.proc),
			     (uint64_t)(60 * VMACT_USEC_PER_SEC)) ||
		    th_proc_exited(&fx.d.proc)) {
			dump_log();
			fail_msg("vmactd did not start");
		}
		if (log_has("hook: receiving notices on " VMACT_HOOK_SOCKET))
			break;
		if (attempt == 20) {
			dump_log();
			fail_msg("vmactd could not listen on " VMACT_HOOK_SOCKET);
		}
		th_vmactd_stop(&fx.d);
		sleep(2);
	}
	wait_log("ready: managing");
}

static int setup(void **state)
{
	char hook[PATH_MAX + 16], text[256], prefix[64];
	struct stat sb;

	(void)state;
	t_begin = th_now_s();
	if (th_vmactd_init(&fx.d, "hook-it", NULL) < 0)
		return -1;
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	snprintf(text, sizeof(text), "{\"control\":{\"state_dir\":\"%s\"}}", fx.d.dir);
	if (th_vmactd_config(&fx.d, prefix, text) < 0)
		return -1;
	/* An installed vmact hook (or one a killed run left) is put back at
	 * the end. */
	if (lstat(HOOK_PATH, &sb) == 0) {
		if (rename(HOOK_PATH, HOOK_SAVED) < 0)
			return -1;
		fx.saved = true;
	}
	snprintf(hook, sizeof(hook), "%s/vmact-hook", dirname(strdupa(fx.d.prog)));
	fx.installed = true;
	if (system("mkdir -p " HOOK_DIR) != 0 || copy_file(hook, HOOK_PATH, 0755) < 0)
		return -1;
	if (th_restart_libvirtd() < 0)
		fail_msg("libvirtd did not restart");
	fx.vc = virConnectOpen("qemu:///system");
	elapsed("libvirtd restarted with the hook");
	return fx.vc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (fx.d.proc.pid > 0)
		kill(fx.d.proc.pid, SIGCONT);
	th_vmactd_stop(&fx.d);
	for (unsigned i = 0; i < fx.n; i++)
		tg_destroy_by_name(&fx.g[i]);
	th_vmactd_teardown(&fx.d);
	if (fx.vc)
		virConnectClose(fx.vc);
	if (fx.installed) {
		unlink(HOOK_PATH);
		if (fx.saved)
			rename(HOOK_SAVED, HOOK_PATH);
		rmdir(HOOK_DIR);
		if (th_restart_libvirtd() < 0)
			fail_msg("libvirtd did not restart");
		elapsed("libvirtd restarted without the hook");
	}
	return 0;
}

/* Starts a guest through libvirt (which runs the hook); the seconds the
 * start took, or -1 with libvirt's message in msg. */
static double start_guest(const char *meta, struct tg_guest **out, char *msg, size_t len)
{
	struct tg_guest *g = &fx.g[fx.n];
	double t0 = th_now_s();

	assert_true(fx.n < sizeof(fx.g) / sizeof(fx.g[0]));
	if (tg_start(fx.vc, PREFIX, meta, g, msg, len) < 0)
		return -1;
	fx.n++;
	*out = g;
	return th_now_s() - t0;
}

static bool reports(const struct tg_guest *g)
{
	struct tg_report r;

	return tg_report(g, &r);
}

static void boots(const struct tg_guest *g)
{
	if (!TH_WAIT(NULL, reports(g), (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
		fail_msg("guest %s did not boot", g->name);
}

/* Runs the installed hook by hand as libvirtd does (domain XML on stdin);
 * its exit status. Fails the test if it takes longer than LIMIT_HOOK_S. */
static int run_hook(const struct tg_guest *g, const char *op, const char *sub, double *took)
{
	const char *argv[] = { HOOK_PATH, g->name, op, sub, "-", NULL };
	const struct th_spawn_opts o = { .stdin_pipe = true,
					 .out = TH_OUT_PIPE,
					 .err = TH_OUT_PIPE };
	char *xml = virDomainGetXMLDesc(g->dom, 0), out[4096];
	static char last[4096];
	struct th_proc p;
	double t0 = th_now_s();
	size_t n;
	int st;

	assert_non_null(xml);
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	assert_int_equal(write(p.in_fd, xml, strlen(xml)), (ssize_t)strlen(xml));
	free(xml);
	close(p.in_fd);
	p.in_fd = -1;
	n = th_read_fd_all(p.out_fd, out, sizeof(out));
	st = th_proc_wait(&p);
	*took = th_now_s() - t0;
	if (*took > LIMIT_HOOK_S)
		fail_msg("the hook took %.1f s", *took);
	if (n && strcmp(out, last) != 0) {
		printf("# hook said: %s", out);
		snprintf(last, sizeof(last), "%s", out);
	}
	return st;
}

static void hook_vmactd_up(void **state)
{
	struct tg_guest *g;
	char msg[1024], needle[256];
	double t;

	(void)state;
	start_vmactd();
	t = start_guest(META_OK(" refuse-invalid='true'"), &g, msg, sizeof(msg));
	if (t < 0)
		fail_msg("start: %s", msg);
	printf("# vmactd up: domain start took %.2f s\n", t);
	assert_true(t < LIMIT_START_S);
	boots(g);
	snprintf(needle, sizeof(needle), "hook: %s: prepare begin: noted", g->name);
	wait_log(needle);
	snprintf(needle, sizeof(needle), "hook: %s: started begin: ", g->name);
	wait_log(needle);
	snprintf(needle, sizeof(needle), "%s: managing", g->name);
	wait_log(needle);
	assert_int_equal(virDomainDestroy(g->dom), 0);
	snprintf(needle, sizeof(needle), "hook: %s: stopped end: ", g->name);
	wait_log(needle);
	snprintf(needle, sizeof(needle), "hook: %s: release end: ", g->name);
	wait_log(needle);
	snprintf(needle, sizeof(needle), "%s: no longer managed", g->name);
	wait_log(needle);
	elapsed("vmactd up");
}

static void hook_vmactd_down(void **state)
{
	struct tg_guest *g;
	struct stat sb;
	char msg[1024];
	double t, took;

	(void)state;
	if (!fx.d.proc.pid)
		start_vmactd();
	/* Killed: the socket file stays, with nobody behind it. */
	th_proc_stop(&fx.d.proc, SIGKILL, 0);
	assert_int_equal(stat(VMACT_HOOK_SOCKET, &sb), 0);
	t = start_guest(META_OK(""), &g, msg, sizeof(msg));
	if (t < 0)
		fail_msg("start with vmactd down: %s", msg);
	printf("# vmactd down: domain start took %.2f s\n", t);
	assert_true(t < LIMIT_START_S);
	boots(g);
	assert_int_equal(run_hook(g, "started", "begin", &took), 0);
	printf("# vmactd down: the hook by hand took %.3f s\n", took);
	/* And with no socket file at all. */
	unlink(VMACT_HOOK_SOCKET);
	assert_int_equal(run_hook(g, "started", "begin", &took), 0);
	printf("# no socket: the hook by hand took %.3f s\n", took);
	elapsed("vmactd down");
}

static void hook_vmactd_hung(void **state)
{
	struct tg_guest *g, *h;
	char msg[1024], needle[256];
	double t, took, worst = 0;

	(void)state;
	th_proc_stop(&fx.d.proc, SIGKILL, 0);
	start_vmactd();
	t = start_guest(META_OK(""), &g, msg, sizeof(msg));
	if (t < 0)
		fail_msg("start: %s", msg);
	boots(g);
	snprintf(needle, sizeof(needle), "%s: managing", g->name);
	wait_log(needle);
	assert_int_equal(kill(fx.d.proc.pid, SIGSTOP), 0);
	/* Fill its queue (net.unix.max_dgram_qlen notices) and more. */
	for (int i = 0; i < 40; i++) {
		assert_int_equal(run_hook(g, "reconnect", "begin", &took), 0);
		if (took > worst)
			worst = took;
	}
	printf("# vmactd hung: 40 hook runs by hand, the slowest %.3f s\n", worst);
	t = start_guest(META_OK(""), &h, msg, sizeof(msg));
	if (t < 0)
		fail_msg("start with vmactd hung: %s", msg);
	printf("# vmactd hung: domain start took %.2f s\n", t);
	assert_true(t < LIMIT_START_S);
	boots(h);
	assert_int_equal(kill(fx.d.proc.pid, SIGCONT), 0);
	/* libvirt's events reach it even if the hook's notices did not. */
	snprintf(needle, sizeof(needle), "%s: managing", h->name);
	wait_log(needle);
	assert_false(th_proc_exited(&fx.d.proc));
	elapsed("vmactd hung");
}

static unsigned log_count(const char *name, const char *what)
{
	char needle[256];

	snprintf(needle, sizeof(needle), "%s: %s", name, what);
	return th_count_in_file(fx.d.log, needle);
}

/* SIGHUP with the two guests of hook_vmactd_hung managed: a good file is
 * applied and they stay managed by the same runners (no new "managing",
 * no "no longer managed"); a bad one is refused naming the key. */
static void reload_keeps_vms(void **state)
{
	struct tg_guest *g = &fx.g[2], *h = &fx.g[3];
	char text[512], prefix[64];
	unsigned syncs;

	(void)state;
	assert_true(fx.n >= 4 && fx.d.proc.pid > 0);
	assert_int_equal(log_count(g->name, "managing"), 1);
	assert_int_equal(log_count(h->name, "managing"), 1);
	/* The same configuration but for these two. */
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	snprintf(text, sizeof(text),
		 "{\"control\":{\"state_dir\":\"%s\"},"
		 "\"policy\":{\"cpu_shrink\":\"unplug\"},\"arbiter\":{\"watermark\":0.5}}",
		 fx.d.dir);
	assert_int_equal(th_vmactd_config(&fx.d, prefix, text), 0);
	syncs = th_count_in_file(fx.d.log, " running domain");
	assert_int_equal(kill(fx.d.proc.pid, SIGHUP), 0);
	wait_log(": 1 change applied");
	assert_true(log_has("reload: policy.cpu_shrink changed: applied"));
	assert_true(log_has("reload: arbiter.watermark changed: needs a restart"));
	/* The resync after it finds both as they were. */
	if (!TH_WAIT(NULL, th_count_in_file(fx.d.log, " running domain") > syncs,
		     (uint64_t)(60 * VMACT_USEC_PER_SEC)))
		fail_msg("no resync after the reload");
	assert_int_equal(log_count(g->name, "managing"), 1);
	assert_int_equal(log_count(h->name, "managing"), 1);
	assert_int_equal(log_count(g->name, "no longer managed"), 0);
	assert_int_equal(log_count(h->name, "no longer managed"), 0);

	assert_int_equal(th_write_file(fx.d.cfg, "{\"policy\":{\"cpu\":\"fast\"}}"), 0);
	assert_int_equal(kill(fx.d.proc.pid, SIGHUP), 0);
	wait_log("the running configuration is kept");
	assert_true(log_has("policy.cpu: expected one of"));
	assert_false(th_proc_exited(&fx.d.proc));
	assert_int_equal(log_count(h->name, "no longer managed"), 0);
	elapsed("reload");
}

static void hook_refuses(void **state)
{
	struct tg_guest *g;
	char msg[1024];
	double t;

	(void)state;
	t = start_guest(META_BAD(" refuse-invalid='true'"), &g, msg, sizeof(msg));
	if (t >= 0)
		fail_msg("a domain with invalid metadata and refuse-invalid started");
	printf("# refused: %s\n", msg);
	assert_non_null(strstr(msg, "start refused"));
	assert_non_null(strstr(msg, "<vmact:cpu>"));
	/* The same metadata without the attribute: reported, started. */
	t = start_guest(META_BAD(""), &g, msg, sizeof(msg));
	if (t < 0)
		fail_msg("start without refuse-invalid: %s", msg);
	boots(g);
	/* The daemon that took all the notices and reloads stops cleanly (its
	 * sanitizers' leak check included). */
	if (fx.d.proc.pid > 0 && !th_proc_exited(&fx.d.proc))
		assert_int_equal(th_proc_stop(&fx.d.proc, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);
	elapsed("refusal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hook_vmactd_up),   cmocka_unit_test(hook_vmactd_down),
		cmocka_unit_test(hook_vmactd_hung), cmocka_unit_test(reload_keeps_vms),
		cmocka_unit_test(hook_refuses),
	};

	if (!th_root_test("test_hook_libvirt", "installs a libvirt hook, restarts libvirtd"))
		return 1;
	return cmocka_run_group_tests_name("vmact-hook", tests, setup, teardown);
}
