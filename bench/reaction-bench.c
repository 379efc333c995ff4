/* SPDX-License-Identifier: Apache-2.0 */
/* reaction-bench: how long a busy 1-vCPU guest waits for its second vCPU
 * (issue 9), for three contenders in the same run, interleaved per
 * iteration so that they share the host's noise:
 *
 *   operator  a bash loop as an operator would write it: every second
 *             `virsh domstats --vcpu DOM`; when the vCPUs were more than
 *             90 % busy over that second (vcpu.N.time deltas), `virsh
 *             setvcpus DOM <n+1> --live`;
 *   neon      vmactd with "policy":{"cpu":"neon"}, otherwise its defaults;
 *             capped at 120 s and counted as "never" past it;
 *   vmact     vmactd with its defaults (reactive policy, embedded arbiter);
 *             also timed back to its minimum after `idle` (the daemon logs
 *             "NAME: resized to 1 CPU / ..." and the CFS quota is 1000m),
 *             capped at 90 s: the 20 ms reporter keeps an idle TCG guest
 *             about one CPU busy, which the careful down of doc/policy.md
 *             rightly does not shrink.
 *
 * Every run gets a fresh guest (tests/guest, 1 of 4 vCPUs, bounds 1..4
 * CPUs / 512Mi..1536Mi, compute unit 250m/256Mi, the vm-monitor peer
 * tests/peers/vm-monitor.js approving downscales; with VMACT_BENCH_ONLY
 * "agentless" also vmactd with its defaults on a guest without it); boot
 * time and daemon start-up are not measured. The figure is taken on the
 * guest's own clock (issue 28): the guest's cpu-online helper stamps the
 * load's onset (as `busy 2` starts its loops) and the instant the write
 * that onlines the hot-plugged vCPU returned, both CLOCK_MONOTONIC in the
 * guest, and says them on its console (tests/guest/cpu-online.c); the
 * figure is online - onset, whatever the host's view of the serial log or
 * the guest's 200 ms report loop add. The host-side figure (busy sent ->
 * the status line showing 2 CPUs) is printed beside it, as before.
 *
 * For the vmactd runs the daemon's log (--verbose) is followed while
 * waiting and each phase is stamped when its line arrives, after the
 * guest's onset line arrived on the host: the policy's decision ("cpu
 * ..."), the scheduler's permit, the start of the resize, the daemon's
 * "resized to"; then, on the guest's clock after its onset, the vCPU's
 * uevent and its online instant.
 *
 * Usage: reaction-bench [ITERATIONS]  (default 10; root, make guest, node)
 * Ends with "ratio: X" = vmact upscale p50 / operator loop upscale p50,
 * both on the guest's clock. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/samples.h"
#include "tests/lib/wait.h"

#define PREFIX     "vmact-rb"
#define NEON_CAP_S 120.0
#define UP_LIMIT_S 120.0

/* VMACT_BENCH_UP_LIMIT=SECONDS: a shorter cap for a quick look on a busy
 * host, where a contended guest never grows (its runs count as "never"). */
static double up_limit(void)
{
	const char *v = getenv("VMACT_BENCH_UP_LIMIT");
	double s = v ? atof(v) : 0;

	return s > 0 ? s : UP_LIMIT_S;
}
#define DOWN_LIMIT_S 90.0
#define POLL_USEC    5000
/* issue 9's guest, as a new user writes it (as in test_daemon) */
#define META_BOUNDS                                                    \
	"<vmact:cpu min='1' max='4'/>"                                 \
	"<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>" \
	"<vmact:compute-unit cpu='250m' memory='256Mi'/>"

enum { C_OPERATOR, C_NEON, C_VMACT, C_AGENTLESS, N_CONT };
static const char *const cont_names[N_CONT] = { "operator loop (virsh)", "vmact neon policy",
						"vmact (defaults)", "vmact, no agent" };
/* The vmactd contenders' columns of the phase table. */
enum { P_NEON, P_VMACT, P_AGENTLESS, N_PCOL };

/* vmactd's phases, stamped when their log line arrives on the host (after
 * the guest's onset line arrived), then the guest's own (after its onset,
 * on its clock). */
enum { PH_DECIDE, PH_PERMIT, PH_RESIZING, PH_RESIZED, PH_UEVENT, PH_ONLINE, N_PH };
#define N_LOG_PH PH_UEVENT
static const char *const ph_names[N_PH] = {
	"decision (cpu ...)", "scheduler permits", "resizing from",
	"resized to",         "guest: cpu uevent", "guest: cpu online",
};
static const char *const ph_needles[N_LOG_PH] = { ": cpu ", ": scheduler permits ",
						  ": resizing from ", ": resized to " };

/* up: on the guest's clock; up_host: busy sent -> status line. */
static struct th_samples up[N_CONT], up_host[N_CONT], down, phase[N_PCOL][N_PH];
static unsigned never[N_CONT], down_runs;

static virConnectPtr vc;
static struct th_peer monitor;
static char vmactd_path[PATH_MAX], sock[108], peer_log[128], tpl[128], cfg[128], dlog[128],
	pins[128];

/* The operator's loop (bash): $1 = domain, $2 = libvirt URI. */
static const char operator_sh[] =
	"dom=$1 uri=$2 prev_t= prev_sum=\n"
	"while :; do\n"
	"  out=$(virsh -q -c \"$uri\" domstats --vcpu \"$dom\") || { sleep 1; continue; }\n"
	"  now=$(date +%s%N)\n"
	"  n=$(sed -n 's/.*vcpu\\.current=//p' <<<\"$out\")\n"
	"  max=$(sed -n 's/.*vcpu\\.maximum=//p' <<<\"$out\")\n"
	"  sum=0\n"
	"  for t in $(sed -n 's/.*vcpu\\.[0-9]*\\.time=//p' <<<\"$out\"); do sum=$((sum + t)); done\n"
	"  if [ -n \"$prev_t\" ] && [ \"$n\" -gt 0 ]; then\n"
	"    busy=$(( (sum - prev_sum) * 100 / ((now - prev_t) * n) ))\n"
	"    if [ \"$busy\" -gt 90 ] && [ \"$n\" -lt \"$max\" ]; then\n"
	"      virsh -q -c \"$uri\" setvcpus \"$dom\" $((n + 1)) --live\n"
	"    fi\n"
	"  fi\n"
	"  prev_t=$now prev_sum=$sum\n"
	"  sleep 1\n"
	"done\n";

/* Follows a growing log file: new complete lines since the last call. */
struct follow {
	const char *path;
	long off;
};

/* Calls fn(line) for each complete line appended since the last call. */
static void follow_lines(struct follow *f, void (*fn)(const char *line, void *), void *arg)
{
	char buf[8192];
	FILE *fp = fopen(f->path, "re");
	size_t n;

	if (!fp)
		return;
	if (fseek(fp, f->off, SEEK_SET) == 0) {
		while ((n = fread(buf, 1, sizeof(buf) - 1, fp)) > 0) {
			char *p = buf, *nl;

			buf[n] = 0;
			while ((nl = memchr(p, '\n', (size_t)(buf + n - p)))) {
				*nl = 0;
				fn(p, arg);
				f->off += nl + 1 - p;
				p = nl + 1;
			}
			if (p == buf)
				break; /* a line longer than the buffer: skip reading on */
			if (fseek(fp, f->off, SEEK_SET) != 0)
				break;
		}
	}
	fclose(fp);
}

struct phases {
	const char *name; /* the guest's name: lines about it */
	double at[N_PH];  /* host seconds (log phases), guest seconds after onset */
};

static void stamp_phase(const char *line, void *arg)
{
	struct phases *ph = arg;

	if (!strstr(line, ph->name))
		return;
	for (int i = 0; i < N_LOG_PH; i++)
		if (ph->at[i] < 0 && strstr(line, ph_needles[i]))
			ph->at[i] = th_now_s();
}

/* What the guest said on its console since the load was sent
 * (tests/guest/cpu-online.c): its onset, then the second vCPU online, on
 * its own monotonic clock; and its status line with 2 CPUs, on the
 * host's. */
struct guest_clock {
	long long onset, online, uevent; /* guest ns; 0: not yet */
	double onset_host;               /* host s when the onset line came */
	double two_host;                 /* host s of the first 2-CPU report */
};

static void guest_line(const char *line, void *arg)
{
	struct guest_clock *gc = arg;
	const char *p;
	long long mono, uev;
	unsigned cpus;

	if ((p = strstr(line, "VMACT onset mono_ns=")) && !gc->onset &&
	    sscanf(p, "VMACT onset mono_ns=%lld", &mono) == 1) {
		gc->onset = mono;
		gc->onset_host = th_now_s();
	} else if ((p = strstr(line, "VMACT online cpu=")) && gc->onset && !gc->online &&
		   sscanf(p,
			  "VMACT online cpu=%*u mono_ns=%lld real_ns=%*[0-9] uevent_mono_ns=%lld",
			  &mono, &uev) == 2 &&
		   mono >= gc->onset) {
		gc->online = mono;
		gc->uevent = uev;
	} else if ((p = strstr(line, "VMACT seq=")) && gc->two_host < 0 &&
		   sscanf(p, "VMACT seq=%*u cpus=%u", &cpus) == 1 && cpus >= 2) {
		gc->two_host = th_now_s();
	}
}

/* The end of the guest's log now: what comes after is this run's. */
static long log_end(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long)sb.st_size : 0;
}

/* Other users of this host may restart libvirtd: tg_boot_first reopens
 * the connection when it died. */
static int boot(const char *meta, struct tg_guest *g)
{
	struct tg_report r;
	char msg[512];

	if (tg_boot_first(&vc, PREFIX, meta, getenv("VMACT_GUEST_TEMPLATE"),
			  getenv("VMACT_GUEST_CMDLINE"), g, &r, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "reaction-bench: %s\n", msg);
		return -1;
	}
	/* Let the boot tail pass: two seconds of reports. */
	tg_wait(g, r.seq + 100, NULL, NULL, 30, &r);
	return 0;
}

/* Waits until the guest onlined its second vCPU (its own stamp, and its
 * status line showing it), reading its log from `from` (its end before
 * the load was sent); guest seconds from its onset to the online
 * instant, or -1 after limit_s (host seconds since t0, when the load was
 * sent). *host_s: busy sent -> the status line, -1 without it. While
 * waiting, the daemon's log is followed (f may be NULL). */
static double wait_two(const struct tg_guest *g, long from, double t0, double limit_s,
		       struct follow *f, struct phases *ph, double *host_s)
{
	struct follow gf = { .path = g->log, .off = from };
	struct guest_clock gc = { .two_host = -1 };

	*host_s = -1;
	for (;;) {
		double now;

		follow_lines(&gf, guest_line, &gc);
		if (f)
			follow_lines(f, stamp_phase, ph);
		now = th_now_s();
		/* The status line too, for the host-side figure: a report
		 * interval (200 ms) at most after the stamp. */
		if (gc.online && gc.two_host >= 0)
			break;
		if (now - t0 > limit_s) {
			if (!gc.onset)
				fprintf(stderr,
					"reaction-bench: %s said no onset: a guest built "
					"before its clock stamps? (make guest)\n",
					g->name);
			return -1;
		}
		usleep(POLL_USEC);
	}
	*host_s = gc.two_host - t0;
	if (ph) {
		for (int i = 0; i < N_LOG_PH; i++)
			if (ph->at[i] >= 0)
				ph->at[i] -= gc.onset_host;
		ph->at[PH_UEVENT] = (double)(gc.uevent - gc.onset) / 1e9;
		ph->at[PH_ONLINE] = (double)(gc.online - gc.onset) / 1e9;
	}
	return (double)(gc.online - gc.onset) / 1e9;
}

static double run_operator(const struct tg_guest *g, double *host_s)
{
	static const struct th_spawn_opts quiet = { .out = TH_OUT_NULL, .err = TH_OUT_NULL };
	const char *argv[] = { "bash",  "-c",           operator_sh, "operator-loop",
			       g->name, HP_URI_DEFAULT, NULL };
	struct th_proc loop = { 0 };
	double t0, dt;
	long from;

	if (th_spawn(&loop, argv, &quiet) < 0) {
		fprintf(stderr, "reaction-bench: cannot start bash\n");
		return -1;
	}
	/* Its first sample is the baseline; busy starts at a random phase
	 * of its one-second cycle, as load would. */
	usleep(2500000);
	from = log_end(g->log);
	t0 = th_now_s();
	if (tg_cmd(g, "busy 2") < 0) {
		th_proc_stop(&loop, SIGTERM, VMACT_USEC_PER_SEC);
		return -1;
	}
	dt = wait_two(g, from, t0, up_limit(), NULL, NULL, host_s);
	th_proc_stop(&loop, SIGTERM, 5 * VMACT_USEC_PER_SEC);
	return dt;
}

/* The VM group's CPU limit in milli-CPUs (-1: unlimited, -2: unknown),
 * from the cgroup vmactd logged for it. */
static long quota_milli(void)
{
	return th_vmactd_quota_milli(dlog);
}

/* One vmactd run on guest g for contender c. Returns the upscale time on
 * the guest's clock (-1: none within the cap); *host_s: the same on the
 * host's (wait_two); *down_s: the time back to the minimum after idle
 * (vmact with the monitor only). */
static double run_vmactd(const struct tg_guest *g, int c, double *host_s, double *down_s)
{
	bool neon = c == C_NEON;
	int col = c == C_NEON ? P_NEON : c == C_VMACT ? P_VMACT : P_AGENTLESS;
	double t0;
	long from;
	const char *argv[] = { vmactd_path, "--config", cfg, "--verbose", NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = dlog };
	struct th_proc d = { 0 };
	struct follow f = { .path = dlog };
	struct phases ph = { .name = g->name };
	char text[1024], needle[160];
	double dt = -1, end;
	struct stat sb;

	*down_s = -1;
	*host_s = -1;
	snprintf(text, sizeof(text),
		 "{\"libvirt\":{\"name_prefix\":\"%s\"},"
		 "\"arbiter\":{\"listen\":\"127.0.0.1:0\"},"
		 "\"sampler\":{\"pin_root\":\"%s\"}%s}",
		 g->name, pins, neon ? ",\"policy\":{\"cpu\":\"neon\"}" : "");
	if (th_write_file(cfg, text) < 0)
		return -1;
	unlink(dlog);
	if (th_spawn(&d, argv, &o) < 0) {
		fprintf(stderr, "reaction-bench: cannot start %s\n", vmactd_path);
		return -1;
	}
	end = th_now_s() + 120;
	while (th_count_in_file(dlog, "ready: managing 1 VM") == 0) {
		if (th_now_s() > end || th_proc_exited(&d)) {
			fprintf(stderr, "reaction-bench: vmactd did not become ready (log %s)\n",
				dlog);
			goto out;
		}
		usleep(50000);
	}
	/* Settled at its minimum, and a second of idle windows behind it. */
	end = th_now_s() + 60;
	while (quota_milli() != 1000 && th_now_s() < end)
		usleep(50000);
	sleep(1);
	follow_lines(&f, stamp_phase, &ph); /* skip what came before busy */
	for (int i = 0; i < N_PH; i++)
		ph.at[i] = -1;
	from = log_end(g->log);
	t0 = th_now_s();
	if (tg_cmd(g, "busy 2") < 0)
		goto out;
	dt = wait_two(g, from, t0, neon ? NEON_CAP_S : up_limit(), &f, &ph, host_s);
	if (dt >= 0)
		for (int i = 0; i < N_PH; i++)
			if (ph.at[i] >= 0)
				th_samples_add(&phase[col][i], ph.at[i]);
	if (c != C_VMACT || dt < 0)
		goto out;

	/* Back down: let the busy guest finish growing, then idle. */
	sleep(3);
	snprintf(needle, sizeof(needle), "%s: resized to 1 CPU / ", g->name);
	{
		unsigned before = th_count_in_file(dlog, needle);
		double t1 = th_now_s();

		if (tg_cmd(g, "idle") < 0)
			goto out;
		while (th_now_s() - t1 < DOWN_LIMIT_S) {
			if (th_count_in_file(dlog, needle) > before && quota_milli() == 1000) {
				*down_s = th_now_s() - t1;
				break;
			}
			usleep(20000);
		}
	}
out:
	if (th_proc_stop(&d, SIGTERM, 30 * VMACT_USEC_PER_SEC) != 0)
		fprintf(stderr, "reaction-bench: vmactd did not exit cleanly (log %s)\n", dlog);
	if (stat(pins, &sb) == 0)
		th_remove_pins(pins);
	return dt;
}

/* A run capped without the second vCPU counts as longer than any: "never"
 * when the rank falls among those. */
static void print_ms(struct th_samples *s, unsigned capped)
{
	th_samples_print_ms(stdout, s, capped, 50);
	th_samples_print_ms(stdout, s, capped, 99);
}

/* VMACT_BENCH_ONLY=vmact,operator,neon: a quick look at some contenders
 * (the table then has no figures for the others). */
static bool skip_contender(int c)
{
	static const char *const keys[N_CONT] = { "operator", "neon", "vmact", "agentless" };
	const char *only = getenv("VMACT_BENCH_ONLY");
	char list[128], *save = NULL;

	if (!only || !only[0])
		return false;
	snprintf(list, sizeof(list), "%s", only);
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (strcmp(t, keys[c]) == 0)
			return false;
	return true;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 10;
	const char *peer_args[] = { "--unix", sock, "--no-cgroup", NULL };
	char self[PATH_MAX], meta[1024], meta_bare[1024], msg[512];
	int pid = (int)getpid(), rc = 1;
	ssize_t n;

	if (iters < 1 || iters > 200) {
		fprintf(stderr, "usage: reaction-bench [ITERATIONS 1..200]\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "reaction-bench: needs root (libvirt, BPF, cgroups)\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	/* build/bench/reaction-bench -> build/vmactd */
	snprintf(vmactd_path, sizeof(vmactd_path), "%s/../vmactd", dirname(self));
	snprintf(sock, sizeof(sock), "/tmp/vmact-rb-%d.sock", pid);
	snprintf(peer_log, sizeof(peer_log), "/tmp/vmact-rb-%d.peer", pid);
	snprintf(tpl, sizeof(tpl), "/tmp/vmact-rb-%d.xml", pid);
	snprintf(cfg, sizeof(cfg), "/tmp/vmact-rb-%d.json", pid);
	snprintf(dlog, sizeof(dlog), "/tmp/vmact-rb-%d.log", pid);
	snprintf(pins, sizeof(pins), "/sys/fs/bpf/vmact-rb-%d", pid);

	/* The guest's own clock times the vCPU (cpu-online's stamps): its
	 * reporter keeps its default 200 ms, as in the integration tests. */
	/* A virtio balloon reporting memory statistics: vmactd's source of
	 * guest memory usage, as in test_daemon. */
	if (tg_balloon_template(tpl) < 0) {
		fprintf(stderr, "reaction-bench: cannot write %s from tests/guest/domain.xml.in\n",
			tpl);
		return 1;
	}
	setenv("VMACT_GUEST_TEMPLATE", tpl, 1);
	if (th_peer_start(&monitor, "vm-monitor.js", peer_args, peer_log, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "reaction-bench: vm-monitor peer: %s\n", msg);
		return 1;
	}
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" META_BOUNDS
		 "<vmact:monitor endpoint='unix:%s'/></vmact:autoscaling>",
		 sock);
	snprintf(meta_bare, sizeof(meta_bare),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" META_BOUNDS
		 "</vmact:autoscaling>");

	printf("reaction-bench: %d runs per contender, fresh TCG guest each, busy 2 in a 1-vCPU "
	       "guest: its onset -> its second vCPU online, on the guest's clock\n",
	       iters);
	fflush(stdout);
	for (int i = 0; i < iters; i++) {
		for (int k = 0; k < N_CONT; k++) {
			/* Rotate who goes first so drift hits all three. */
			int c = (k + i) % N_CONT;
			struct tg_guest g = { 0 };
			double dt, dn = -1, dh = -1;

			if (skip_contender(c))
				continue;
			if (boot(c == C_AGENTLESS ? meta_bare : meta, &g) < 0) {
				tg_destroy(&g);
				goto table;
			}
			if (c == C_OPERATOR)
				dt = run_operator(&g, &dh);
			else
				dt = run_vmactd(&g, c, &dh, &dn);
			if (dt < 0 && getenv("VMACT_BENCH_KEEP_LOG")) {
				char keep[400];

				snprintf(keep, sizeof(keep), "cp %s /tmp/vmact-rb-%d-%d.guest",
					 g.log, pid, c);
				if (system(keep) != 0)
					fprintf(stderr, "reaction-bench: cannot keep %s\n", g.log);
			}
			tg_destroy(&g);
			if (dt >= 0) {
				th_samples_add(&up[c], dt);
				th_samples_add(&up_host[c], dh);
			} else {
				never[c]++;
			}
			if (c == C_VMACT && dt >= 0)
				down_runs++;
			if (c == C_VMACT && dn >= 0)
				th_samples_add(&down, dn);
			fprintf(stderr, "  run %d/%d %-22s up %s%.3f s (host %.3f s)", i + 1, iters,
				cont_names[c], dt < 0 ? "never, " : "", dt, dh);
			if (c == C_VMACT)
				fprintf(stderr, ", down %.2f s", dn);
			fprintf(stderr, "\n");
		}
	}

table:
	printf("\n%-24s %6s %10s %10s %6s %10s %10s %10s %8s\n", "contender (ms)", "runs", "up p50",
	       "up p99", "never", "host p50", "down p50", "down p99", "down n");
	for (int c = 0; c < N_CONT; c++) {
		if (skip_contender(c))
			continue;
		printf("%-24s %6zu", cont_names[c], up[c].n + never[c]);
		print_ms(&up[c], never[c]);
		printf(" %6u", never[c]);
		th_samples_print_ms(stdout, &up_host[c], never[c], 50);
		if (c == C_VMACT && down.n)
			printf(" %10.0f %10.0f %4zu/%-3u", th_samples_pct(&down, 50) * 1000,
			       th_samples_pct(&down, 99) * 1000, down.n, down_runs);
		else if (c == C_VMACT)
			printf(" %10s %10s %4u/%-3u", ">90 s", ">90 s", 0, down_runs);
		else
			printf(" %10s %10s %8s", "-", "-", "-");
		printf("\n");
	}
	printf("\nphases, p50 ms after the guest's onset (vmactd's: its log line's arrival after the "
	       "onset line's; the guest's: on its clock):\n%-22s %12s %12s %12s\n",
	       "phase", "neon", "vmact", "no agent");
	for (int i = 0; i < N_PH; i++) {
		printf("%-22s", ph_names[i]);
		for (int p = 0; p < N_PCOL; p++)
			if (phase[p][i].n)
				printf(" %12.0f", th_samples_pct(&phase[p][i], 50) * 1000);
			else
				printf(" %12s", "-");
		printf("\n");
	}
	if (up[C_AGENTLESS].n && up[C_OPERATOR].n)
		printf("ratio_no_agent: %.2f\n",
		       th_samples_pct(&up[C_AGENTLESS], 50) / th_samples_pct(&up[C_OPERATOR], 50));
	if (up[C_VMACT].n && up[C_OPERATOR].n) {
		printf("ratio: %.2f\n",
		       th_samples_pct(&up[C_VMACT], 50) / th_samples_pct(&up[C_OPERATOR], 50));
		rc = 0;
	} else {
		printf("ratio: n/a\n");
	}
	th_peer_stop(&monitor);
	if (vc)
		virConnectClose(vc);
	unlink(sock);
	unlink(peer_log);
	unlink(tpl);
	unlink(cfg);
	if (!getenv("VMACT_BENCH_KEEP_LOG"))
		unlink(dlog);
	return rc;
}
