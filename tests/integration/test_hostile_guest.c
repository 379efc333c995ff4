/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile guest-side peers against the real vmactd (doc/reliability.md
 * ), with two real TCG guests:
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
 * are safety nets, not assertions about speed.
 *
 * The host's resources full (group test_host_full, doc/reliability.md
 * ), with the real vmactd, real BPF and two more TCG guests,
 * F1 and F2, run beside the above in a child process (its own vmactd;
 * only the guests' boots and the waits overlap, each vmactd and its
 * checks are the scenario's own). The sampler's BPF maps full: the
 * default sizes (1024 VMs, 32768 threads of all VMs together) cannot be
 * filled by test guests, so it sets them with the documented keys
 * sampler.max_vms and sampler.max_threads:
 *
 *   - max_threads 2: the QEMU threads do not all fit, and vmactd says once
 *     per VM that the thread table is full and the load reads low; it
 *     keeps running and every size stays within the bounds;
 *   - max_vms 1 (a new vmactd on the same guests): one VM gets the slot
 *     and keeps being sampled (busy, it grows to 2 vCPUs); the other is
 *     managed, says "all 1 slots in use (max_vms)" and that it is not
 *     scaled on its load, and stays at 1 CPU while just as busy (the
 *     arbiter's capacity is declared with arbiter.overcommit_cpu, as the
 *     demo does: two guests at 1 CPU fill 90 % of this 2-CPU host).
 *
 * The directory of the control socket and of control.state_dir on a full
 * tmpfs (no inode, no block left), then remounted read-only: vmactd says
 * that vmactl cannot reach it and why, manages both VMs and scales the
 * busy one all the same (it keeps no file of its own there: a VM's state
 * is libvirt's and QEMU's); once the tmpfs is writable and has room again,
 * its retry creates the socket and the control API answers.
 *
 * One busy guest at a time on the host: guests whose vCPUs wait for the
 * host's 2 CPUs are held (contended), so F1 and F2 turn busy only once G
 * has grown (a byte on a pipe), and G idles then. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/quantity.h"
#include "hotplug/hotplug.h"
#include "net/http-server.h"
#include "tests/lib/file.h"
#include "tests/lib/flood.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"

#define PREFIX       "vmact-hg"
#define HF_PREFIX    "vmact-hfull"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S      120.0
/* The informant server's connection limit (net/http-server.h
 * default; README). */
#define INFORMANT_CONN_LIMIT 256
/* What the floods may leave in vmactd's resident memory once they are over
 * (doc/reliability.md). The sanitized daemon (make check)
 * keeps freed memory in ASan's quarantine (256 MiB by default): 1024
 * connections' buffers stay resident there, so its bound is wider. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_GROWTH_KIB (64 * 1024)
#else
#define RSS_GROWTH_KIB (16 * 1024)
#endif
/* The autoscaling element of every guest here, up to its approver: 1 to 2
 * CPUs, 512Mi to 1Gi. */
#define META_OPEN                                                        \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" \
	"<vmact:cpu min='1' max='2'/>"                                   \
	"<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/>"      \
	"<vmact:compute-unit cpu='250m' memory='256Mi'/>"
#define META_CLOSE "</vmact:autoscaling>"

static const char *const verbose[] = { "--verbose", NULL };

/* Starts guest g, destroyed by the scenario's fixture d. */
static int start_guest(struct th_vmactd *d, struct tg_guest *g, const char *prefix,
		       const char *meta)
{
	if (th_vmactd_add_guest(d, g) < 0)
		return -1;
	return tg_start_standalone(prefix, meta, NULL, NULL, g) < 0 ? -1 : 0;
}
/* The pipe that tells the host_full scenario that G has grown. */
static int turn[2] = { -1, -1 };

static struct {
	struct tg_guest h, g;
	struct th_peer mon, inf;
	struct th_vmactd d; /* vmactd, H and G; the peers' socket and logs in its directory */
	char mon_sock[96], mon_log[96], inf_log[96];
	unsigned inf_port;
	long idle_fds, idle_rss;
} fx;

/* What the informant sends (a JSON body, as the Go handlers require). */
static const char id_get[] = "GET /id HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			     "Content-Length: 2\r\nConnection: close\r\n\r\n{}";

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	if (th_vmactd_wait(&fx.d, pred, arg, limit_s))
		return true;
	th_print_log_tail(fx.mon_log, "hostile monitor", 3000);
	return false;
}

static bool mon_has(void *needle)
{
	return th_count_in_file(fx.mon_log, needle) > 0;
}

/* The agent's server address, from vmactd's "registered agent ID at
 * 127.0.0.1:PORT" line. */
static bool informant_registered(void *unused)
{
	char *buf = th_read_file(fx.d.log), *p;

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
	return th_proc_fds(fx.d.proc.pid) <= fx.idle_fds + 1;
}

static void expect_id(struct th_flood *f, const char *when)
{
	char buf[4096];
	int r = th_flood_request(f, NULL, id_get, strlen(id_get), buf, sizeof(buf));

	if (r < 0 || strncmp(buf, "HTTP/1.1 200", 12) != 0)
		fail_msg("informant server %s: GET /id not answered 200 (%s; \"%.100s\")", when,
			 r < 0 ? strerror(-r) : "answered", buf);
}

/* The flood of G's informant server; its worker's pid. Descriptors: at
 * most the limit (and a few of its own) above the worker's idle count,
 * once libmicrohttpd has closed the connections the server evicted
 * (th_flood_fds_within). */
static pid_t informant_server_flood(void)
{
	static const char *const srcs[] = { "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4" };
	struct th_flood f = { .port = fx.inf_port };
	pid_t worker = th_log_guest_worker(fx.d.log, fx.g.name);
	long worker_idle = th_proc_fds(worker), first, last;
	unsigned got = 0;
	long fds;
	int r;

	expect_id(&f, "before");
	r = th_flood(&f, 4 * INFORMANT_CONN_LIMIT, srcs, 4, &got);
	if (r < 0) {
		th_flood_close(&f);
		free(f.fds);
		fail_msg("flood: %s: %u of %u connections got through", strerror(-r), got,
			 4 * INFORMANT_CONN_LIMIT);
	}
	expect_id(&f, "under the flood");
	fds = th_proc_fds(fx.d.proc.pid);
	r = th_flood_fds_within(worker, worker_idle + INFORMANT_CONN_LIMIT + 4, &first, &last);
	print_message("informant server: %u partial headers held open; vmactd has %ld descriptors "
		      "(idle %ld), G's worker %d %ld (idle %ld; %ld at the first reading)\n",
		      4 * INFORMANT_CONN_LIMIT, fds, fx.idle_fds, (int)worker, last, worker_idle,
		      first);
	th_flood_close(&f);
	free(f.fds);
	if (fds > fx.idle_fds + 8)
		fail_msg("vmactd holds %ld descriptors under the flood of G's worker, idle %ld",
			 fds, fx.idle_fds);
	if (r == -E2BIG)
		fail_msg("G's worker holds %ld descriptors under the flood, idle %ld + limit %u + "
			 "%u evicted not yet closed",
			 first, worker_idle, INFORMANT_CONN_LIMIT, NET_HTTP_CUT_SLACK);
	if (r < 0)
		fail_msg(
			"G's worker holds %ld descriptors under the flood, idle %ld + limit %u (%s)",
			last, worker_idle, INFORMANT_CONN_LIMIT, strerror(-r));
	return worker;
}

/* Bad input for G's informant server after its flood; GET /id answered
 * after it, by the same worker. */
static void informant_server_bad_input(pid_t worker)
{
	struct th_flood f = { .port = fx.inf_port };
	char msg[256];

	if (th_flood_bad_input(&f, "/try-upscale", msg, sizeof(msg)) < 0)
		fail_msg("informant server: %s", msg);
	expect_id(&f, "after");
	/* The same worker served it all. */
	assert_int_equal(th_log_guest_worker(fx.d.log, fx.g.name), worker);
}

/* G has grown (or the scenario ended): F1 and F2 may turn busy. */
static void hf_give_turn(void)
{
	if (turn[1] >= 0) {
		if (write(turn[1], "g", 1) != 1)
			print_error("turn pipe: %s\n", strerror(errno));
		close(turn[1]);
		turn[1] = -1;
	}
}

static void hostile_peers(void **state)
{
	char prefix[64], text[512];
	pid_t worker;
	long rss;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	snprintf(text, sizeof(text),
		 "{\"informant\":{\"listen\":\"127.0.0.1:0\"},"
		 /* Two guests at 1 CPU fill the arbiter's 90 % of a 2-CPU
		  * host: declare room for G's growth, as the demo does. */
		 "\"arbiter\":{\"overcommit_cpu\":4},"
		 "\"control\":{\"state_dir\":\"%s\"}}",
		 fx.d.dir);
	assert_int_equal(th_vmactd_config(&fx.d, prefix, text), 0);
	if (th_vmactd_start(&fx.d, verbose, 2, LIMIT_BOOT_S, LIMIT_S) < 0 ||
	    !wait_until(informant_registered, NULL, LIMIT_S) ||
	    !wait_until(mon_has, "\"event\":\"version\"", LIMIT_S))
		fail_msg("vmactd did not come up with both VMs' peers");
	fx.idle_fds = th_proc_fds(fx.d.proc.pid);
	fx.idle_rss = th_proc_rss_kib(fx.d.proc.pid);

	/* G busy while H's monitor attacks and G's informant server is
	 * flooded. */
	/* One busy thread: 2 vCPUs at 1250m (README), little contention
	 * for the host's CPUs with the floods. */
	assert_int_equal(tg_cmd(&fx.g, "busy 1"), 0);
	worker = informant_server_flood();
	if (!wait_until(tg_two_cpus, &fx.g, LIMIT_S))
		fail_msg("guest G did not grow while the other VM's monitor attacked");
	/* The host's CPUs to the host_full scenario's busy guests. */
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);
	hf_give_turn();
	informant_server_bad_input(worker);

	/* Every attack ended by vmactd, which came back to a behaving
	 * monitor: health checks answered on the last connection. */
	if (!wait_until(mon_has, "\"mode\":\"good\"", 3 * LIMIT_S) ||
	    !wait_until(mon_has, "\"event\":\"health\"", LIMIT_S))
		fail_msg("vmactd never reconnected to the monitor after the attacks");
	assert_true(th_count_in_file(fx.d.log, "does not read what is sent to it") >= 2);
	assert_true(th_count_in_file(fx.d.log, "closed with 1002") >= 1);
	assert_true(th_count_in_file(fx.d.log, "closed with 1009") >= 1);
	/* The floods stopped because vmactd closed, not at the peer's cap. */
	assert_int_equal(th_count_in_file(fx.mon_log, "\"event\":\"flooded\""), 2);
	assert_int_equal(th_count_in_file(fx.mon_log, "\"why\":\"limit\""), 0);

	if (!wait_until(fds_back, NULL, LIMIT_S))
		fail_msg("vmactd holds %ld descriptors, %ld when idle", th_proc_fds(fx.d.proc.pid),
			 fx.idle_fds);
	rss = th_proc_rss_kib(fx.d.proc.pid);
	print_message("vmactd: %ld descriptors (idle %ld), RSS %ld KiB (idle %ld KiB)\n",
		      th_proc_fds(fx.d.proc.pid), fx.idle_fds, rss, fx.idle_rss);
	assert_true(rss - fx.idle_rss < RSS_GROWTH_KIB);
	assert_int_equal(th_vmactd_stop(&fx.d), 0);
}

static int hg_setup(void **state)
{
	char msg[512], meta_h[1024], meta_g[1024],
		modes[] = "ping-flood,text-flood,bad-opcode,huge-length";
	const char *mon_args[] = { "--unix", fx.mon_sock, "--modes", modes, NULL };
	/* The sanitized daemon on a shared host: stretch the informant's own
	 * 100-400 ms timeouts so that slowness is not taken for death. */
	const char *inf_args[] = { "--port", "0", "--timeout-factor", "10", NULL };

	(void)state;
	/* Room for this side of every flood connection. */
	th_flood_raise_nofile(4096);
	if (th_vmactd_init(&fx.d, PREFIX, NULL) < 0)
		return -1;
	snprintf(fx.mon_sock, sizeof(fx.mon_sock), "%s/monitor.sock", fx.d.dir);
	snprintf(fx.mon_log, sizeof(fx.mon_log), "%s/monitor.log", fx.d.dir);
	snprintf(fx.inf_log, sizeof(fx.inf_log), "%s/informant.log", fx.d.dir);
	if (th_peer_start(&fx.mon, "hostile-monitor.js", mon_args, fx.mon_log, msg, sizeof(msg)) <
		    0 ||
	    th_peer_start(&fx.inf, "informant.js", inf_args, fx.inf_log, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	snprintf(meta_h, sizeof(meta_h), META_OPEN "<vmact:monitor endpoint='unix:%s'/>" META_CLOSE,
		 fx.mon_sock);
	snprintf(meta_g, sizeof(meta_g),
		 META_OPEN "<vmact:informant endpoint='http://127.0.0.1:%u'/>" META_CLOSE,
		 fx.inf.port);
	if (start_guest(&fx.d, &fx.h, PREFIX, meta_h) < 0 ||
	    start_guest(&fx.d, &fx.g, PREFIX, meta_g) < 0)
		return -1;
	return 0;
}

static int hg_teardown(void **state)
{
	(void)state;
	/* The peers before the directory of their socket and logs. */
	th_vmactd_stop(&fx.d);
	th_peer_stop(&fx.mon);
	th_peer_stop(&fx.inf);
	th_vmactd_teardown(&fx.d);
	return 0;
}

/* ---- The host's resources full (group test_host_full) ---- */

static struct {
	struct tg_guest g[2];
	struct th_vmactd d; /* each vmactd in turn, F1 and F2 */
	char mnt[80];       /* dir_full's tmpfs, in d.dir */
	bool mounted;
} hf;

/* sampler_keys: more of the sampler's keys, "" for none. */
static void hf_start_vmactd(const char *ctl, const char *state_dir, const char *sampler_keys)
{
	char prefix[64], text[1024];

	snprintf(prefix, sizeof(prefix), "%s-%d-", HF_PREFIX, (int)getpid());
	snprintf(text, sizeof(text),
		 /* Two guests at 1 CPU fill the arbiter's 90 % of a 2-CPU
		  * host: declare room for growth, as the demo does. */
		 "{\"arbiter\":{\"overcommit_cpu\":4},"
		 /* Beside the other scenario's vmactd, which has the default
		  * port. */
		 "\"metrics\":{\"listen\":\"127.0.0.1:0\"},"
		 "\"control\":{\"socket\":\"%s\",\"state_dir\":\"%s\"},"
		 "\"sampler\":{%s}}",
		 ctl, state_dir, sampler_keys);
	assert_int_equal(th_vmactd_config(&hf.d, prefix, text), 0);
	if (th_vmactd_start(&hf.d, verbose, 2, LIMIT_BOOT_S, LIMIT_S) < 0)
		fail_msg("vmactd did not manage both guests");
}

/* Every "NAME: resized to" of the log within 1..2 CPUs (the bounds). */
static void hf_check_bounds(void)
{
	char *buf = th_read_file(hf.d.log), *p;

	assert_non_null(buf);
	for (p = buf; (p = strstr(p, "resized to ")); p++) {
		char cpu[32];
		uint64_t milli = 0;

		if (sscanf(p, "resized to %31s CPU", cpu) != 1 ||
		    vmact_quantity_parse_milli(cpu, &milli, NULL) < 0)
			fail_msg("unparsable line: %.60s", p);
		if (milli < 1000 || milli > 2000)
			fail_msg("vmactd resized outside the bounds: %.60s", p);
	}
	free(buf);
}

/* Fills the tmpfs at dir: files until no inode is left, then one file
 * until no block is. */
static void fill(const char *dir)
{
	char path[160], block[4096] = { 0 };
	int fd = -1, last = -1;

	for (unsigned i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "%s/fill-%u", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			break;
		if (last >= 0)
			close(last);
		last = fd;
	}
	assert_true(fd < 0 && errno == ENOSPC && last >= 0);
	while (write(last, block, sizeof(block)) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	close(last);
}

static void unfill(const char *dir)
{
	char path[160];

	for (unsigned i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "%s/fill-%u", dir, i);
		unlink(path);
	}
}

struct seen {
	struct tg_guest *g;
	unsigned long seq;
};

/* The guest has reported up to seen->seq. */
static bool reported_until(void *arg)
{
	struct seen *seen = arg;
	struct tg_report r;

	return tg_report(seen->g, &r) && r.seq >= seen->seq;
}

/* busy: the guest left busy (and not yet grown) by the first part. */
static void dir_full(struct tg_guest *busy)
{
	static const char get[] = "GET /v1/vms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char *mnt = hf.mnt, sock[100], state[100], needle[192], buf[4096];
	struct th_flood f = { 0 };

	snprintf(mnt, sizeof(hf.mnt), "%s/full", hf.d.dir);
	snprintf(sock, sizeof(sock), "%s/ctl.sock", mnt);
	snprintf(state, sizeof(state), "%s/state", mnt);
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("vmact-test-full", mnt, "tmpfs", 0, "size=64k,nr_inodes=8,mode=0700") < 0)
		fail_msg("mount tmpfs on %s: %s", mnt, strerror(errno));
	hf.mounted = true;
	fill(mnt);
	hf_start_vmactd(sock, state, "");
	snprintf(needle, sizeof(needle), "%s", "vmactl cannot reach this vmactd (retried every");
	assert_int_equal(th_count_in_file(hf.d.log, needle), 1);
	assert_true(th_count_in_file(hf.d.log, "No space left on device") >= 1);
	/* The busy VM, sampled now, is scaled all the same. */
	if (!th_vmactd_wait(&hf.d, tg_two_cpus, busy, LIMIT_S))
		fail_msg("the busy VM did not grow while the directory was full");
	/* Read-only: the retry says why, nothing else changes. */
	if (mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, "size=64k,nr_inodes=8,mode=0700") < 0)
		fail_msg("remount read-only: %s", strerror(errno));
	if (!th_vmactd_wait_log(&hf.d, "Read-only file system", LIMIT_S))
		fail_msg("vmactd's retry never met the read-only directory");
	/* Room again: the socket is created, and answers. */
	if (mount(NULL, mnt, NULL, MS_REMOUNT, "size=64k,nr_inodes=8,mode=0700") < 0)
		fail_msg("remount read-write: %s", strerror(errno));
	unfill(mnt);
	snprintf(needle, sizeof(needle), "control: serving vmactl on %s", sock);
	if (!th_vmactd_wait_log(&hf.d, needle, LIMIT_S))
		fail_msg("vmactd never created its control socket once there was room");
	snprintf(f.unix_path, sizeof(f.unix_path), "%s", sock);
	assert_int_equal(th_flood_request(&f, NULL, get, strlen(get), buf, sizeof(buf)), 0);
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
		fail_msg("control API: \"%.80s\"", buf);
	hf_check_bounds();
	assert_int_equal(th_vmactd_stop(&hf.d), 0);
}

/* Waits (a safety limit) until the hostile scenario's G has grown, or
 * that scenario has ended. */
static void hf_wait_turn(void)
{
	struct pollfd p = { .fd = turn[0], .events = POLLIN };
	char c;

	if (turn[0] < 0)
		return;
	if (poll(&p, 1, (int)(LIMIT_S * 1000)) == 1 && read(turn[0], &c, 1) < 0)
		print_error("turn pipe: %s\n", strerror(errno));
	close(turn[0]);
	turn[0] = -1;
}

static void host_full(void **state)
{
	char needle[160], *buf, *at;
	struct tg_report r;
	struct seen seen;
	int out = -1;

	(void)state;
	/* Two thread entries for every thread of both QEMUs (the guests
	 * idle: their QEMUs' threads run all the same). hf_start_vmactd
	 * waits for both guests' boot first. */
	hf_start_vmactd(hf.d.sock, hf.d.dir, "\"max_threads\":2");
	if (!th_vmactd_wait_log(&hf.d, "the BPF thread table is full (sampler.max_threads)",
				LIMIT_S))
		fail_msg("vmactd never said the thread table was full");
	hf_check_bounds();
	assert_true(th_count_in_file(hf.d.log, "the BPF thread table is full") <= 2);
	assert_int_equal(th_vmactd_stop(&hf.d), 0);

	/* Busy guests only once the other scenario's busy guest has grown:
	 * guests that wait for the host's 2 CPUs are held (contended). */
	hf_wait_turn();
	/* One slot for two VMs. */
	hf_start_vmactd(hf.d.sock, hf.d.dir, "\"max_vms\":1");
	assert_int_equal(th_count_in_file(hf.d.log, "all 1 slots in use (max_vms)"), 1);
	assert_int_equal(th_count_in_file(hf.d.log, "the VM is not scaled on its load"), 1);
	buf = th_read_file(hf.d.log);
	assert_non_null(buf);
	at = strstr(buf, "all 1 slots in use (max_vms)");
	for (int i = 0; i < 2; i++) {
		snprintf(needle, sizeof(needle), "%s: load sampling unavailable", hf.g[i].name);
		if (strstr(buf, needle))
			out = i;
	}
	free(buf);
	assert_non_null(at);
	if (out < 0)
		fail_msg("no VM named as the one without a slot");
	print_message("%s has the slot, %s is not sampled\n", hf.g[!out].name, hf.g[out].name);

	/* One busy thread (2 vCPUs at 1250m when scaled, README), one guest
	 * at a time: on a 2-CPU host a second busy guest would make the
	 * first wait for the host, which holds growth (contended). */
	assert_int_equal(tg_cmd(&hf.g[!out], "busy 1"), 0);
	if (!th_vmactd_wait(&hf.d, tg_two_cpus, &hf.g[!out], LIMIT_S))
		fail_msg("the sampled VM did not grow");
	/* The other, as busy, is held: 1 CPU and no resize of it while
	 * it reports ten times (one line a second). */
	assert_int_equal(tg_cmd(&hf.g[out], "busy 1"), 0);
	assert_true(tg_report(&hf.g[out], &r));
	seen.g = &hf.g[out];
	seen.seq = r.seq + 10;
	if (!th_vmactd_wait(&hf.d, reported_until, &seen, LIMIT_S))
		fail_msg("the unsampled guest stopped reporting");
	assert_true(tg_report(&hf.g[out], &r));
	assert_int_equal(r.cpus, 1);
	snprintf(needle, sizeof(needle), "%s: resizing", hf.g[out].name);
	assert_int_equal(th_count_in_file(hf.d.log, needle), 0);
	hf_check_bounds();
	assert_int_equal(th_vmactd_stop(&hf.d), 0);

	/* The first guest idle: the other is the busy one now. */
	assert_int_equal(tg_cmd(&hf.g[!out], "idle"), 0);
	dir_full(&hf.g[out]);
}

static int hf_setup(void **state)
{
	const char *meta = META_OPEN META_CLOSE;

	(void)state;
	if (th_vmactd_init(&hf.d, HF_PREFIX, NULL) < 0)
		return -1;
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	for (int i = 0; i < 2; i++)
		if (start_guest(&hf.d, &hf.g[i], HF_PREFIX, meta) < 0)
			return -1;
	return 0;
}

static int hf_teardown(void **state)
{
	(void)state;
	/* The tmpfs out of the way of the directory's removal. */
	th_vmactd_stop(&hf.d);
	if (hf.mounted) {
		umount2(hf.mnt, MNT_DETACH);
		rmdir(hf.mnt);
	}
	th_vmactd_teardown(&hf.d);
	return 0;
}

/* The host_full scenario in a child process, its output in a file that
 * is printed after ours; the exit status of both. */
int main(void)
{
	const struct CMUnitTest hostile[] = {
		cmocka_unit_test(hostile_peers),
	};
	const struct CMUnitTest full[] = {
		cmocka_unit_test(host_full),
	};
	char out[] = "/tmp/vmact-hfull-out-XXXXXX";
	int ofd, rc, status = 0;
	pid_t child;

	if (!th_root_test("test_hostile_guest", "libvirt guests, cgroups, BPF"))
		return 1;
	ofd = mkstemp(out);
	if (ofd < 0 || pipe2(turn, O_CLOEXEC) < 0) {
		perror("test_hostile_guest: mkstemp/pipe");
		return 1;
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		perror("test_hostile_guest: fork");
		return 1;
	}
	if (child == 0) {
		close(turn[1]);
		turn[1] = -1;
		if (dup2(ofd, STDOUT_FILENO) < 0 || dup2(ofd, STDERR_FILENO) < 0)
			_exit(1);
		close(ofd);
		return cmocka_run_group_tests_name("test_host_full", full, hf_setup, hf_teardown);
	}
	close(ofd);
	close(turn[0]);
	turn[0] = -1;
	rc = cmocka_run_group_tests_name("test_hostile_guest", hostile, hg_setup, hg_teardown);
	hf_give_turn();
	if (waitpid(child, &status, 0) < 0)
		status = -1;
	fflush(NULL);
	{
		char *text = th_read_file(out);

		fputs(text ? text : "test_host_full: no output\n", stdout);
		free(text);
	}
	unlink(out);
	if (status != 0)
		fprintf(stdout, "test_host_full: %s %d\n",
			WIFSIGNALED(status) ? "killed by signal" : "exit status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return rc || status != 0;
}
