/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile guest-side peers against the real vmactd (README, "Reliability
 * and security"), with two real TCG guests:
 *
 *   - guest H names a vm-monitor (tests/peers/hostile-monitor.js, raw
 *     sockets) that, one connection after the other: floods pings and
 *     never reads; floods messages of an unknown type and never reads;
 *     sends a reserved opcode; announces a 2^62-byte frame; and at last
 *     behaves. vmactd must drop each with a clear log line ("does not
 *     read", closed with 1002 / 1009), never let its queue for the peer
 *     grow (the floods end because vmactd closed, not at the peer's
 *     256 MiB cap), and reconnect: the last connection passes health
 *     checks. (A frame that never finishes, answered by the 30 s health
 *     check window, is test_monitor_client's, with a short window);
 *   - guest G uses the legacy informant (tests/peers/informant.js): the
 *     agent's HTTP server (the one the informant calls), in G's own guest
 *     worker (doc/privsep.md) on a socket vmactd bound, gets a slowloris
 *     flood of 4x its connection limit from four source addresses, an
 *     oversized header, garbage and a body that never completes, while and
 *     after which GET /id is answered;
 *   - meanwhile G runs busy and vmactd grows it to 2 vCPUs: one hostile
 *     guest does not stop the scaling of the others.
 *
 * The flood lands on G's worker, whose descriptors stay below its idle
 * count plus the server's connection limit; vmactd's stay at its idle
 * count (a few for the monitor's reconnections) and return to it; its
 * resident memory grows by less than 16 MiB over all of it. Time limits
 * are safety nets, not assertions about speed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hotplug/hotplug.h"
#include "tests/lib/file.h"
#include "tests/lib/flood.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define PREFIX "vmact-hg"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S 120.0
/* The informant server's connection limit (agent-glue/http-server.h
 * default; README). */
#define INFORMANT_CONN_LIMIT 256
/* What the floods may leave in vmactd's resident memory once they are over
 * (README "Reliability and security"). The sanitized daemon (make check)
 * keeps freed memory in ASan's quarantine (256 MiB by default): 1024
 * connections' buffers stay resident there, so its bound is wider. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_GROWTH_KIB (64 * 1024)
#else
#define RSS_GROWTH_KIB (16 * 1024)
#endif

static char vmactd_path[PATH_MAX + 16];

static struct {
	struct tg_guest h, g;
	struct th_peer mon, inf;
	struct th_proc daemon;
	char dir[64], cfg[96], log[96], sock[96], ctl[96], mon_log[96], inf_log[96];
	char pins[96];
	unsigned inf_port;
	long idle_fds, idle_rss;
} fx;

/* What the informant sends (a JSON body, as the Go handlers require). */
static const char id_get[] = "GET /id HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			     "Content-Length: 2\r\nConnection: close\r\n\r\n{}";

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	if (th_wait_daemon(&fx.daemon, pred, arg, limit_s))
		return true;
	th_print_log_tail(fx.log, "vmactd log", 6000);
	th_print_log_tail(fx.mon_log, "hostile monitor", 3000);
	return false;
}

static bool log_has(void *needle)
{
	return th_count_in_file(fx.log, needle) > 0;
}

static bool mon_has(void *needle)
{
	return th_count_in_file(fx.mon_log, needle) > 0;
}

/* The agent's server address, from vmactd's "registered agent ID at
 * 127.0.0.1:PORT" line. */
static bool informant_registered(void *unused)
{
	char *buf = th_read_file(fx.log), *p;

	(void)unused;
	if (buf && (p = strstr(buf, "informant: registered agent ")) &&
	    (p = strstr(p, " at 127.0.0.1:")))
		sscanf(p, " at 127.0.0.1:%u", &fx.inf_port);
	free(buf);
	return fx.inf_port != 0;
}

static bool fds_back(void *unused)
{
	(void)unused;
	return th_proc_fds(fx.daemon.pid) <= fx.idle_fds + 1;
}

static void expect_id(struct th_flood *f, const char *when)
{
	char buf[4096];
	int r = th_flood_request(f, NULL, id_get, strlen(id_get), buf, sizeof(buf));

	if (r < 0 || strncmp(buf, "HTTP/1.1 200", 12) != 0)
		fail_msg("informant server %s: GET /id not answered 200 (%s; \"%.100s\")", when,
			 r < 0 ? strerror(-r) : "answered", buf);
}

static void informant_server_flood(void)
{
	static const char *const srcs[] = { "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4" };
	struct th_flood f = { .port = fx.inf_port };
	pid_t worker = th_log_guest_worker(fx.log, fx.g.name);
	long worker_idle = th_proc_fds(worker), wfds;
	unsigned got = 0;
	long fds;
	char msg[256];
	int r;

	expect_id(&f, "before");
	r = th_flood(&f, 4 * INFORMANT_CONN_LIMIT, srcs, 4, &got);
	if (r < 0)
		fail_msg("flood: %s: %u of %u connections got through", strerror(-r), got,
			 4 * INFORMANT_CONN_LIMIT);
	expect_id(&f, "under the flood");
	fds = th_proc_fds(fx.daemon.pid);
	wfds = th_proc_fds(worker);
	print_message("informant server: %u partial headers held open; vmactd has %ld descriptors "
		      "(idle %ld), G's worker %d %ld (idle %ld)\n",
		      4 * INFORMANT_CONN_LIMIT, fds, fx.idle_fds, (int)worker, wfds, worker_idle);
	if (fds > fx.idle_fds + 8)
		fail_msg("vmactd holds %ld descriptors under the flood of G's worker, idle %ld", fds,
			 fx.idle_fds);
	if (wfds < 0 || wfds > worker_idle + INFORMANT_CONN_LIMIT + 4)
		fail_msg("G's worker holds %ld descriptors under the flood, idle %ld + limit %u",
			 wfds, worker_idle, INFORMANT_CONN_LIMIT);
	th_flood_close(&f);
	if (th_flood_bad_input(&f, "/try-upscale", msg, sizeof(msg)) < 0)
		fail_msg("informant server: %s", msg);
	expect_id(&f, "after");
	/* The same worker served it all. */
	assert_int_equal(th_log_guest_worker(fx.log, fx.g.name), worker);
	free(f.fds);
}

static void hostile_peers(void **state)
{
	const char *argv[] = { vmactd_path, "--config", fx.cfg, "--verbose", NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE,
					 .out_path = fx.log };
	char text[1024];
	long rss;

	(void)state;
	if (!wait_until(tg_booted, &fx.h, LIMIT_BOOT_S) ||
	    !wait_until(tg_booted, &fx.g, LIMIT_BOOT_S))
		fail_msg("the guests did not boot");
	snprintf(text, sizeof(text),
		 "{\"libvirt\":{\"name_prefix\":\"%s-%d-\"},"
		 "\"informant\":{\"listen\":\"127.0.0.1:0\"},"
		 /* Two guests at 1 CPU fill the arbiter's 90 % of a 2-CPU
		  * host: declare room for G's growth, as the demo does. */
		 "\"arbiter\":{\"overcommit_cpu\":4},"
		 "\"control\":{\"socket\":\"%s\",\"state_dir\":\"%s\"},"
		 "\"sampler\":{\"pin_root\":\"%s\"}}",
		 PREFIX, (int)getpid(), fx.ctl, fx.dir, fx.pins);
	assert_int_equal(th_write_file(fx.cfg, text), 0);
	assert_int_equal(th_spawn(&fx.daemon, argv, &o), 0);
	if (!wait_until(log_has, "ready: managing 2 VMs", LIMIT_S) ||
	    !wait_until(informant_registered, NULL, LIMIT_S) ||
	    !wait_until(mon_has, "\"event\":\"version\"", LIMIT_S))
		fail_msg("vmactd did not come up with both VMs' peers");
	fx.idle_fds = th_proc_fds(fx.daemon.pid);
	fx.idle_rss = th_proc_rss_kib(fx.daemon.pid);

	/* G busy while H's monitor attacks and G's informant server is
	 * flooded. */
	/* One busy thread: 2 vCPUs at 1250m (README), little contention
	 * for the host's CPUs with the floods. */
	assert_int_equal(tg_cmd(&fx.g, "busy 1"), 0);
	informant_server_flood();
	if (!wait_until(tg_two_cpus, &fx.g, LIMIT_S))
		fail_msg("guest G did not grow while the other VM's monitor attacked");

	/* Every attack ended by vmactd, which came back to a behaving
	 * monitor: health checks answered on the last connection. */
	if (!wait_until(mon_has, "\"mode\":\"good\"", 3 * LIMIT_S) ||
	    !wait_until(mon_has, "\"event\":\"health\"", LIMIT_S))
		fail_msg("vmactd never reconnected to the monitor after the attacks");
	assert_true(th_count_in_file(fx.log, "does not read what is sent to it") >= 2);
	assert_true(th_count_in_file(fx.log, "closed with 1002") >= 1);
	assert_true(th_count_in_file(fx.log, "closed with 1009") >= 1);
	/* The floods stopped because vmactd closed, not at the peer's cap. */
	assert_int_equal(th_count_in_file(fx.mon_log, "\"event\":\"flooded\""), 2);
	assert_int_equal(th_count_in_file(fx.mon_log, "\"why\":\"limit\""), 0);

	if (!wait_until(fds_back, NULL, LIMIT_S))
		fail_msg("vmactd holds %ld descriptors, %ld when idle", th_proc_fds(fx.daemon.pid),
			 fx.idle_fds);
	rss = th_proc_rss_kib(fx.daemon.pid);
	print_message("vmactd: %ld descriptors (idle %ld), RSS %ld KiB (idle %ld KiB)\n",
		      th_proc_fds(fx.daemon.pid), fx.idle_fds, rss, fx.idle_rss);
	assert_true(rss - fx.idle_rss < RSS_GROWTH_KIB);
	assert_int_equal(th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);
}

static int setup(void **state)
{
	char msg[512], meta_h[1024], meta_g[1024], modes[] =
		"ping-flood,text-flood,bad-opcode,huge-length";
	const char *mon_args[] = { "--unix", fx.sock, "--modes", modes, NULL };
	/* The sanitized daemon on a shared host: stretch the informant's own
	 * 100-400 ms timeouts so that slowness is not taken for death. */
	const char *inf_args[] = { "--port", "0", "--timeout-factor", "10", NULL };
	struct rlimit rl;
	virConnectPtr vc;
	int pid = (int)getpid();

	(void)state;
	/* Room for this side of every flood connection. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 &&
	    (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= 4096)) {
		rl.rlim_cur = 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/vmact-hg-XXXXXX");
	if (!mkdtemp(fx.dir))
		return -1;
	snprintf(fx.cfg, sizeof(fx.cfg), "%s/vmactd.json", fx.dir);
	snprintf(fx.log, sizeof(fx.log), "%s/vmactd.log", fx.dir);
	snprintf(fx.sock, sizeof(fx.sock), "%s/monitor.sock", fx.dir);
	snprintf(fx.ctl, sizeof(fx.ctl), "%s/ctl.sock", fx.dir);
	snprintf(fx.mon_log, sizeof(fx.mon_log), "%s/monitor.log", fx.dir);
	snprintf(fx.inf_log, sizeof(fx.inf_log), "%s/informant.log", fx.dir);
	snprintf(fx.pins, sizeof(fx.pins), "/sys/fs/bpf/vmact-hg-%d", pid);
	if (th_peer_start(&fx.mon, "hostile-monitor.js", mon_args, fx.mon_log, msg, sizeof(msg)) < 0 ||
	    th_peer_start(&fx.inf, "informant.js", inf_args, fx.inf_log, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	snprintf(meta_h, sizeof(meta_h),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		 "<vmact:cpu min='1' max='2'/>"
		 "<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/>"
		 "<vmact:compute-unit cpu='250m' memory='256Mi'/>"
		 "<vmact:monitor endpoint='unix:%s'/>"
		 "</vmact:autoscaling>",
		 fx.sock);
	snprintf(meta_g, sizeof(meta_g),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		 "<vmact:cpu min='1' max='2'/>"
		 "<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/>"
		 "<vmact:compute-unit cpu='250m' memory='256Mi'/>"
		 "<vmact:informant endpoint='http://127.0.0.1:%u'/>"
		 "</vmact:autoscaling>",
		 fx.inf.port);
	vc = virConnectOpen("qemu:///system");
	if (!vc)
		return -1;
	if (tg_start(vc, PREFIX, meta_h, &fx.h, msg, sizeof(msg)) < 0 ||
	    tg_start(vc, PREFIX, meta_g, &fx.g, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		virConnectClose(vc);
		return -1;
	}
	virConnectClose(vc);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	th_peer_stop(&fx.mon);
	th_peer_stop(&fx.inf);
	tg_destroy_by_name(&fx.h);
	tg_destroy_by_name(&fx.g);
	th_remove_pins(fx.pins);
	if (!getenv("VMACT_TEST_KEEP_LOG")) {
		static const char *const files[] = { fx.cfg, fx.log, fx.sock, fx.ctl, fx.mon_log,
						     fx.inf_log };

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			unlink(files[i]);
		rmdir(fx.dir);
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hostile_peers),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_hostile_guest: needs root (libvirt guests, cgroups, BPF)\n");
		return 1;
	}
	if (th_build_prog("vmactd", vmactd_path, sizeof(vmactd_path)) < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("test_hostile_guest", tests, setup, teardown);
}
