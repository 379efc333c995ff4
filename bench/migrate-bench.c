/* SPDX-License-Identifier: Apache-2.0 */
/* migrate-bench (make bench-migrate): issue 34's benchmark, a full host's
 * way out (doc/cluster.md, "Live migration"). Two libvirt daemons on this
 * machine (tests/host/host2.sh), a vmactd on each with its arbiter (A: CPU
 * overcommitted 1.25 times, 2.25 CPUs under its watermark, so that X fits
 * back beside an idle Y; B: twice), vmact-groupd over both, and two test
 * guests on A: X, opted in and idle, and Y, not opted in, 1 CPU each.
 *
 * A round: `busy 2` in Y; A's arbiter refuses Y's growth (its entry's
 * pressure, polled every 10 ms, is the clock's start); vmact-groupd's
 * relief moves X to B; Y grows (its entry at A above what it held when
 * refused, the clock's end). Printed per round and as p50/p90: refusal -> growth, the move
 * (vmact-groupd's decision -> X running on B), resume (the move's end ->
 * Y's growth; goal 2 s) and X's downtime as libvirt measured it. Between
 * rounds, untimed: Y idle until vmactd shrank it back to 1 CPU, X moved
 * back to A by command.
 *
 * Beside it, the same move as an operator makes it: `virsh migrate --live
 * --persistent --undefinesource --auto-converge` of X between A and B,
 * timed from the command to its exit, as many times. Ends with "ratio:
 * X" = vmact-groupd's move p50 / virsh's p50 (goal <= 1.2).
 *
 * vmact-groupd runs with migration.min_residence_s 0: X moves every
 * round, where the default (300 s) would hold it for five minutes after
 * each move; nothing else differs from the defaults.
 *
 * Usage: migrate-bench [ROUNDS]  (default 10; root, make guest, the shared
 * lock: it starts host B). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/time.h"
#include "hotplug/hotplug.h"
#include "shared/group-api.h"
#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/host2.h"
#include "tests/lib/proc.h"
#include "tests/lib/samples.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX    "vmact-mb"
#define LIMIT_S   300.0
#define POLL_USEC 10000

#define META_X                                                                          \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS \
	"<vmact:migration enabled='true'/></vmact:autoscaling>"
#define META_Y                                                                          \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS \
	"</vmact:autoscaling>"

static struct {
	struct th_cluster_stack s;
	struct th_vmactd a, b;
	struct tg_guest x, y;
	unsigned port_a, port_b;
	char b_pid[16], cfg[160];
	virConnectPtr vca, vcb;
} b;

static void cleanup(void)
{
	virConnectPtr c[2] = { b.vca, b.vcb };

	th_cluster_stack_teardown(&b.s);
	th_vmactd_teardown(&b.a);
	th_vmactd_teardown(&b.b);
	th_host2_guest_remove(c, 2, &b.x);
	th_host2_guest_remove(c, 2, &b.y);
	if (b.vca)
		virConnectClose(b.vca);
	if (b.vcb)
		virConnectClose(b.vcb);
	th_host2_down();
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("migrate-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (b.s.glog[0])
		th_print_log_tail(b.s.glog, "vmact-groupd log", 4000);
	cleanup();
	exit(1);
}

static double now_s(void)
{
	return (double)vmact_now_usec() / 1e6;
}

/* Y's entry at A: its reservation and pressure (milli-CPU); false when
 * unread. */
static bool y_at_a(uint32_t *cpu, uint32_t *pressure)
{
	struct vmact_lease_pod pod;

	if (th_host2_arbiter_pod(b.s.key, b.port_a, "default", b.y.name, &pod) != 200)
		return false;
	*cpu = pod.size.milli_cpu;
	*pressure = pod.pressure.milli_cpu;
	return true;
}

static struct th_host2_move wait_x_move(uint64_t after)
{
	struct th_host2_move m = { .vm = b.x.name, .after_id = after };

	if (!th_wait_until(NULL, th_host2_move_ended, &m, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		die("no move of %s ended", b.x.name);
	if (strcmp(m.result, "success"))
		die("the move of %s failed: %s", b.x.name, m.error);
	return m;
}

static bool y_back_to_one(void *arg)
{
	uint32_t cpu, p;

	(void)arg;
	return y_at_a(&cpu, &p) && cpu <= 1000 && !p;
}

static void setup(void)
{
	char meta[1024], msg[512], prefix[64];
	struct tg_guest *g[2] = { &b.x, &b.y };
	const char *metas[2] = { META_X, META_Y };

	tg_quiet_libvirt();
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (th_host2_up(b.b_pid, sizeof(b.b_pid)) < 0)
		die("the second libvirtd (tests/host/host2.sh up) did not start");
	b.vca = virConnectOpen("qemu:///system");
	b.vcb = virConnectOpen(TH_HOST2_URI);
	if (!b.vca || !b.vcb || th_cluster_stack_init(&b.s, PREFIX) < 0 ||
	    th_vmactd_init(&b.a, PREFIX "a", NULL) < 0 ||
	    th_vmactd_init(&b.b, PREFIX "b", NULL) < 0)
		die("set-up: libvirt, the cluster user or vmactd's fixture");
	for (int i = 0; i < 2; i++) {
		snprintf(meta, sizeof(meta), "%s", metas[i]);
		if (th_host2_guest(b.vca, PREFIX, meta, b.a.dir, true, g[i], msg, sizeof(msg)) < 0)
			die("guest: %s", msg);
	}
	for (int i = 0; i < 2; i++)
		if (!th_wait_until(NULL, tg_booted, g[i], (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
			die("%s did not boot", g[i]->name);
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	if (th_host2_vmactd(&b.a, prefix, b.s.key, NULL, 1.25, &b.port_a) < 0 ||
	    th_host2_vmactd(&b.b, prefix, b.s.key, b.b_pid, 2, &b.port_b) < 0)
		die("the vmactds did not start");
	snprintf(b.cfg, sizeof(b.cfg), "%s/groupd.json", b.s.dir);
	if (th_host2_groupd_cfg(b.cfg, b.s.sock, b.s.key, b.port_a, b.port_b, 0,
				",\"migration\":{\"min_residence_s\":0}") < 0 ||
	    th_cluster_stack_own(&b.s, b.cfg, false, 0644) < 0)
		die("vmact-groupd's configuration");
	if (th_cluster_stack_start_groupd(&b.s, b.cfg, LIMIT_S) < 0)
		die("vmact-groupd did not start");
	th_host2_move_socket(b.s.sock);
}

/* virsh migrate of X from one daemon to the other, timed: seconds, or -1. */
static double virsh_move(bool to_b)
{
	const char *argv[] = { "virsh",
			       "-q",
			       "-c",
			       to_b ? "qemu:///system" : TH_HOST2_URI,
			       "migrate",
			       "--live",
			       "--persistent",
			       "--undefinesource",
			       "--auto-converge",
			       "--migrateuri",
			       "tcp://127.0.0.1",
			       "--listen-address",
			       "127.0.0.1",
			       b.x.name,
			       to_b ? TH_HOST2_URI : "qemu:///system",
			       NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_INHERIT, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };
	double t0 = now_s();
	int rc;

	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	rc = th_proc_wait(&p);
	return rc == 0 ? now_s() - t0 : -1;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
	struct th_samples grow = { 0 }, move = { 0 }, resume = { 0 }, down = { 0 }, virsh = { 0 };
	uint64_t last = 0;
	char path[256];

	if (geteuid() != 0) {
		fprintf(stderr, "migrate-bench: run as root\n");
		return 77;
	}
	if (!rounds || rounds > 100)
		rounds = 10;
	setup();
	snprintf(path, sizeof(path), "/v1/vms/%s/migrate", b.x.name);
	printf("round  refusal->growth  move   resume  downtime\n");
	for (unsigned r = 0; r < rounds; r++) {
		double t_refused = 0, t_grow = 0, deadline, end;
		uint32_t cpu = 0, p = 0, held = 0;
		struct th_host2_move m;
		long status = 0;
		json_t *doc;

		if (tg_cmd(&b.y, "busy 2") < 0)
			die("cannot tell %s", b.y.name);
		deadline = now_s() + LIMIT_S;
		while (now_s() < deadline && (!t_refused || !t_grow)) {
			if (y_at_a(&cpu, &p)) {
				/* Refused: what it holds then; grown: more than
				 * that (the room A had left is granted first). */
				if (!t_refused && p) {
					t_refused = now_s();
					held = cpu;
				}
				if (t_refused && cpu > held)
					t_grow = now_s();
			}
			usleep(POLL_USEC);
		}
		if (!t_grow)
			die("round %u: %s never grew (refused %s)", r + 1, b.y.name,
			    t_refused ? "yes" : "no");
		m = wait_x_move(last);
		last = m.id;
		if (!th_host2_runs_on(b.vcb, b.x.name))
			die("round %u: %s does not run on B", r + 1, b.x.name);
		end = m.started + m.duration_s; /* Unix s */
		{
			struct timespec rt;
			double skew;

			/* The growth's moment on the realtime clock. */
			clock_gettime(CLOCK_REALTIME, &rt);
			skew = (double)rt.tv_sec + (double)rt.tv_nsec / 1e9 - now_s();
			th_samples_add(&resume, t_grow + skew - end);
			printf("%5u  %13.0f ms  %5.0f ms  %5.0f ms  %5lld ms\n", r + 1,
			       (t_grow - t_refused) * 1000, m.duration_s * 1000,
			       (t_grow + skew - end) * 1000, (long long)m.downtime_ms);
		}
		th_samples_add(&grow, t_grow - t_refused);
		th_samples_add(&move, m.duration_s);
		if (m.downtime_ms >= 0)
			th_samples_add(&down, (double)m.downtime_ms / 1000);
		fflush(stdout);
		/* Untimed: Y back to 1 CPU, X back to A. */
		if (tg_cmd(&b.y, "idle") < 0)
			die("cannot tell %s", b.y.name);
		if (!th_wait_until(NULL, y_back_to_one, NULL,
				   (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
			die("%s never shrank back to 1 CPU", b.y.name);
		doc = th_cluster_stack_api(&b.s, "POST", path, "{\"to\":\"a\"}", &status);
		json_decref(doc);
		if (status != 202)
			die("moving %s back to A: %ld", b.x.name, status);
		m = wait_x_move(last);
		last = m.id;
	}
	/* The operator's move, X between the two daemons. */
	for (unsigned r = 0; r < rounds; r++) {
		double t = virsh_move(r % 2 == 0);

		if (t < 0)
			die("virsh migrate failed");
		th_samples_add(&virsh, t);
	}
	if (!th_host2_runs_on(b.vca, b.x.name) && virsh_move(false) < 0)
		die("virsh migrate back failed");
	printf("\n%-28s %8s %8s\n", "", "p50", "p90");
	printf("%-28s %6.0fms %6.0fms\n", "refusal -> growth", th_samples_pct(&grow, 50) * 1000,
	       th_samples_pct(&grow, 90) * 1000);
	printf("%-28s %6.0fms %6.0fms\n", "move (vmact-groupd)", th_samples_pct(&move, 50) * 1000,
	       th_samples_pct(&move, 90) * 1000);
	printf("%-28s %6.0fms %6.0fms\n", "move (virsh migrate)", th_samples_pct(&virsh, 50) * 1000,
	       th_samples_pct(&virsh, 90) * 1000);
	printf("%-28s %6.0fms %6.0fms\n", "resume (move end -> growth)",
	       th_samples_pct(&resume, 50) * 1000, th_samples_pct(&resume, 90) * 1000);
	printf("%-28s %6.0fms %6.0fms (max %.0f ms)\n", "downtime (libvirt)",
	       th_samples_pct(&down, 50) * 1000, th_samples_pct(&down, 90) * 1000,
	       th_samples_pct(&down, 100) * 1000);
	printf("ratio: %.3f\n", th_samples_pct(&move, 50) / th_samples_pct(&virsh, 50));
	cleanup();
	return 0;
}
