/* SPDX-License-Identifier: Apache-2.0 */
/* memory-bench: memory pressure onset -> more memory visible in the guest
 * (issue 17), for two contenders in the same run, interleaved per
 * iteration so that they share the host's noise:
 *
 *   host     vmactd with its defaults and a guest without any agent: its
 *            memory follows the balloon's statistics (every second) through
 *            the host's own policy (doc/policy.md, "Memory without an
 *            agent");
 *   monitor  Neon's path as vmact speaks it: the guest has a vm-monitor
 *            (tests/peers/vm-monitor.js) and no balloon, so only the
 *            monitor's UpscaleRequest grows its memory (one compute unit per
 *            request, as the Neon agent). The peer asks as the real monitor
 *            does: when the guest's memory use reaches its threshold,
 *            (granted - 100 MiB) x 0.85, re-armed by each upscale, at most
 *            once a second. It cannot see into the guest, so this bench
 *            tells it the guest's use (MemTotal - MemAvailable) from each
 *            status line, every 100 ms (the real monitor samples its cgroup
 *            every 100 ms).
 *
 * Every run gets a fresh guest (tests/guest: 512Mi, bounds 1..4 CPUs /
 * 512Mi..1536Mi, compute unit 250m/256Mi) and a fresh vmactd; boot and
 * start-up are not measured. The clock starts when "alloc 600 100" (600 MiB
 * at 100 MiB/s, more than the 380 MiB the guest has free) is sent into the
 * guest and stops at the first status line (every 100 ms) whose MemTotal is
 * above the one before. Each run then follows the allocation to its end
 * (or 60 s) for the OOM killer and the guest's major faults.
 *
 * Usage: memory-bench [ITERATIONS]  (default 10; root, make guest, node)
 * Ends with "ratio: X" = host p50 / monitor p50. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/samples.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX     "vmact-mb"
#define ALLOC      "alloc 600 100"
#define ALLOC_MIB  600
#define UP_LIMIT_S 60.0
#define POLL_USEC  10000
/* the real monitor's threshold for the 512Mi the guest boots with */
#define THRESHOLD_MIB "350"
#define META_BOUNDS                                                    \
	"<vmact:cpu min='1' max='4'/>"                                 \
	"<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>" \
	"<vmact:compute-unit cpu='250m' memory='256Mi'/>"

enum { C_HOST, C_MONITOR, N_CONT };
static const char *const cont_names[N_CONT] = { "vmact, no agent (balloon stats)",
						"vm-monitor's upscale request" };

static struct th_samples up[N_CONT], faults[N_CONT];
static unsigned never[N_CONT], ooms[N_CONT];
static unsigned long least_avail_kb[N_CONT];

static virConnectPtr vc;
static char sock[108], peer_log[128], tpl_host[128], tpl_mon[128];

static char base[64];

static void name(char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, "%s%s", base, suffix);
}

/* Tells the monitor peer the guest's use (MiB), when it changed. */
static void tell_usage(struct th_peer *p, const struct tg_report *r, unsigned long *told)
{
	unsigned long used = r->memtotal_kb > r->avail_kb ? (r->memtotal_kb - r->avail_kb) / 1024
							  : 0;
	char line[64];
	int n;

	if (used == *told)
		return;
	n = snprintf(line, sizeof(line), "usage %lu\n", used);
	if (write(p->proc.in_fd, line, (size_t)n) == n)
		*told = used;
}

/* One run: the time to more memory (-1: none within the limit). */
static double run(int c, const char *meta_host, const char *meta_mon)
{
	/* Downscales answered on the usage it is told, as Neon's monitor. */
	const char *peer_args[] = { "--unix", sock, "--threshold-mib", THRESHOLD_MIB, NULL };
	struct th_vmactd d = { 0 };
	struct th_peer peer = { 0 };
	struct tg_guest g = { 0 };
	struct tg_report r0, r;
	unsigned long told = 0, majflt0 = 0, least = 0, oom = 0, majflt_end = 0;
	bool have_flt = false;
	char msg[512];
	double t0, dt = -1;

	if (th_vmactd_init(&d, PREFIX, &g) < 0) {
		fprintf(stderr, "memory-bench: cannot make vmactd's scratch directory\n");
		goto out;
	}
	if (c == C_MONITOR &&
	    th_peer_start(&peer, "vm-monitor.js", peer_args, peer_log, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "memory-bench: vm-monitor peer: %s\n", msg);
		goto out;
	}
	if (tg_boot(&vc, PREFIX, c == C_HOST ? meta_host : meta_mon,
		    c == C_HOST ? tpl_host : tpl_mon, "vmact.report=0.1", &g, msg,
		    sizeof(msg)) < 0) {
		fprintf(stderr, "memory-bench: %s\n", msg);
		goto out;
	}
	/* Safety limits: vmactd ready within 120 s, its vm-monitor connected
	 * within 120 s more. */
	if (th_vmactd_config(&d, g.name, "{\"metrics\":{\"listen\":\"\"}}") < 0 ||
	    th_vmactd_start(&d, NULL, 1, 120, 120) < 0 ||
	    (c == C_MONITOR && !th_vmactd_wait_log(&d, "vm-monitor connected", 120))) {
		fprintf(stderr, "memory-bench: vmactd did not become ready\n");
		goto out;
	}
	/* A few seconds of the idle guest: the policy has its samples. */
	sleep(3);
	if (!tg_report(&g, &r0))
		goto out;
	t0 = th_now_s();
	if (tg_cmd(&g, ALLOC) < 0)
		goto out;
	for (;;) {
		double now = th_now_s();

		if (tg_report(&g, &r) && r.has_mem) {
			if (c == C_MONITOR)
				tell_usage(&peer, &r, &told);
			if (!have_flt) {
				majflt0 = r.majflt;
				have_flt = true;
			}
			majflt_end = r.majflt;
			if (!least || r.avail_kb < least)
				least = r.avail_kb;
			if (r.oom > oom)
				oom = r.oom;
			if (dt < 0 && r.memtotal_kb > r0.memtotal_kb)
				dt = now - t0;
			if (dt >= 0 && r.alloc_mb >= ALLOC_MIB)
				break;
		}
		if (now - t0 > UP_LIMIT_S)
			break;
		usleep(POLL_USEC);
	}
	if (dt >= 0)
		th_samples_add(&up[c], dt);
	else
		never[c]++;
	th_samples_add(&faults[c], (double)(majflt_end - majflt0));
	ooms[c] += (unsigned)oom;
	if (least && (!least_avail_kb[c] || least < least_avail_kb[c]))
		least_avail_kb[c] = least;
	printf("  %-34s %8.0f ms  least MemAvailable %4lu MiB  major faults %lu  OOM kills %lu\n",
	       cont_names[c], dt * 1000, least / 1024, majflt_end - majflt0, oom);
	fflush(stdout);
out:
	if (th_vmactd_stop(&d) != 0) {
		th_print_log_tail(d.log, "vmactd log", 3000);
		fprintf(stderr, "memory-bench: vmactd did not exit cleanly\n");
	}
	th_vmactd_teardown(&d);
	if (c == C_MONITOR)
		th_peer_stop(&peer);
	return dt;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 10;
	char meta_host[1024], meta_mon[1024];
	int pid = (int)getpid();
	double p_host = 0, p_mon = 0;

	if (iters < 1 || iters > 200) {
		fprintf(stderr, "usage: memory-bench [ITERATIONS 1..200]\n");
		return 2;
	}
	if (!th_root_test("memory-bench", "libvirt, BPF, cgroups"))
		return 1;
	/* Everything of this run is /tmp/vmact-mb-PID.*, and vmactd's is in
	 * a scratch directory /tmp/vmact-mb-XXXXXX per run. */
	snprintf(base, sizeof(base), "/tmp/vmact-mb-%d", pid);
	name(sock, sizeof(sock), ".sock");
	name(peer_log, sizeof(peer_log), ".peer");
	name(tpl_host, sizeof(tpl_host), "-host.xml");
	/* host: the balloon with statistics every second; monitor: the
	 * template as it is, without a balloon */
	snprintf(tpl_mon, sizeof(tpl_mon), "tests/guest/domain.xml.in");
	if (tg_balloon_template(tpl_host) < 0) {
		fprintf(stderr, "memory-bench: cannot write %s from tests/guest/domain.xml.in\n",
			tpl_host);
		return 1;
	}
	snprintf(meta_host, sizeof(meta_host),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" META_BOUNDS
		 "</vmact:autoscaling>");
	snprintf(meta_mon, sizeof(meta_mon),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" META_BOUNDS
		 "<vmact:monitor endpoint='unix:%s'/></vmact:autoscaling>",
		 sock);

	printf("memory-bench: %d runs per contender, fresh TCG guest each (512Mi, 380 MiB free), "
	       "\"%s\" -> the guest's MemTotal grows\n",
	       iters, ALLOC);
	fflush(stdout);
	for (int i = 0; i < iters; i++) {
		printf("run %d\n", i + 1);
		for (int c = 0; c < N_CONT; c++)
			run(c, meta_host, meta_mon);
	}

	printf("\n%-34s %10s %10s %6s %8s %12s %14s\n", "contender", "p50 ms", "p99 ms", "runs",
	       "never", "OOM kills", "major faults");
	for (int c = 0; c < N_CONT; c++) {
		printf("%-34s", cont_names[c]);
		th_samples_print_ms(stdout, &up[c], never[c], 50);
		th_samples_print_ms(stdout, &up[c], never[c], 99);
		printf(" %6zu %8u %12u %8.0f/%-5.0f\n", up[c].n + never[c], never[c], ooms[c],
		       th_samples_pct(&faults[c], 50), th_samples_pct(&faults[c], 100));
	}
	printf("(major faults: the guest's pgmajfault from the allocation to its end, p50/max; "
	       "least MemAvailable seen: host %lu MiB, monitor %lu MiB)\n",
	       least_avail_kb[C_HOST] / 1024, least_avail_kb[C_MONITOR] / 1024);
	unlink(tpl_host);
	unlink(peer_log);
	unlink(sock); /* the last vm-monitor peer's */
	if (vc)
		virConnectClose(vc);
	if (!th_samples_pct_capped(&up[C_HOST], never[C_HOST], 50, &p_host) ||
	    !th_samples_pct_capped(&up[C_MONITOR], never[C_MONITOR], 50, &p_mon) || p_mon <= 0) {
		printf("ratio: n/a (a contender's median run never grew)\n");
		return 1;
	}
	printf("ratio: %.2f\n", p_host / p_mon);
	return 0;
}
