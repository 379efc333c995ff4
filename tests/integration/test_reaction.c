/* SPDX-License-Identifier: Apache-2.0 */
/* The reactive CPU policy (doc/policy.md) on a real TCG guest, with
 * vmactd's defaults: only the test's plumbing differs (libvirt.name_prefix,
 * sampler.pin_root, arbiter.listen on 127.0.0.1:0, the control socket).
 * The embedded arbiter therefore grants 1.8 CPUs on this 2-CPU host.
 *
 * One guest, issue 9's: 1 of 4 vCPUs, bounds 1..4 CPUs / 512Mi..1536Mi,
 * compute unit 250m/256Mi, a vm-monitor peer approving downscales
 * (tests/peers/vm-monitor.js, --no-cgroup). The tests share it and run in
 * order, each starting from where the one before left it:
 *
 *   reaction_bursts        busy for 100 ms (timed by the guest), then
 *                          idle, twenty times: no growth (quota stays
 *                          1000m);
 *   reaction_steady        `busy 1`: grows to what one thread needs (2
 *                          vCPUs, quota 1250m and up to 2000m: under TCG
 *                          the idle second vCPU costs host CPU too, and
 *                          each further step must be one the readings
 *                          called for: growth on saturated or throttled,
 *                          a step back on ok), never below 1250m, and
 *                          then does not resize for 120 s;
 *   reaction_contention    `busy 2` beside a host-side CPU hog (two busy
 *                          processes): the log classifies the VM
 *                          "contended", and it grows no further than
 *                          `busy 2` grows it without the hog (next test);
 *   reaction_quota_first   the VM has 2 vCPUs and less quota than they can
 *                          use; `busy 2`: the first resize raises only the
 *                          quota ("cpu throttled"), the vCPUs stay 2.
 *
 * vmactd runs with --verbose so that a classification that holds the goal
 * (contended) is in its log too. Conditions are awaited with generous
 * safety limits; nothing is timed. The 120 s of reaction_steady is an
 * observation window, not a deadline. VMACT_TEST_KEEP_LOG keeps the logs. */
#include <errno.h>
#include <inttypes.h>
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

#include "actuator/policy/cpu-demand.h"
#include "agent-glue/codec/quantity.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX        "vmactd-re"
#define LIMIT_BOOT_S  180.0
#define LIMIT_SCALE_S 300.0
/* How long a converged VM is watched for another resize (issue 9). */
#define STEADY_S 120.0
/* How long the busy VM is watched beside the hog once it was classified
 * contended: long enough for the policy's 0.2 s up window many times over. */
#define HOG_WATCH_S 10.0

struct fixture {
	virConnectPtr vc;
	struct tg_guest g;
	struct th_vmactd d;
	struct th_proc hog[2];
	/* Results handed from one test to the next. */
	long hog_max_quota; /* highest quota beside the hog (milli-CPU) */
	bool hog_done;
};

static struct fixture fx;

static bool daemon_died(void)
{
	return fx.d.proc.pid > 0 && th_proc_exited(&fx.d.proc);
}

static void dump_log(void)
{
	th_print_log_tail(fx.d.log, "vmactd log", 8000);
}

/* Waits until pred() or the limit; false at the limit, or at once if the
 * daemon exits meanwhile. */
static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_wait_daemon(&fx.d.proc, pred, arg, limit_s);
}

static size_t log_size(void)
{
	struct stat sb;

	return stat(fx.d.log, &sb) == 0 ? (size_t)sb.st_size : 0;
}

/* The log from byte off on (malloc'ed, never NULL). */
static char *log_since(size_t off)
{
	char *buf = th_read_file(fx.d.log), *r;

	assert_non_null(buf);
	r = strdup(strlen(buf) > off ? buf + off : "");
	free(buf);
	assert_non_null(r);
	return r;
}

/* This guest's lines containing what, from byte off on. */
static unsigned count_since(size_t off, const char *what)
{
	char *buf = log_since(off), needle[256], *p;
	unsigned n = 0;

	snprintf(needle, sizeof(needle), "%s: %s", fx.g.name, what);
	for (p = buf; (p = strstr(p, needle)); p++)
		n++;
	free(buf);
	return n;
}

/* The "resized to X CPU / Y" lines of this guest from off on: how many, and
 * the highest CPU among them (milli-CPU; 0 if none). */
static unsigned resizes_since(size_t off, uint64_t *max_milli)
{
	char *buf = log_since(off), needle[256], *p;
	unsigned n = 0;

	*max_milli = 0;
	snprintf(needle, sizeof(needle), "%s: resized to ", fx.g.name);
	for (p = buf; (p = strstr(p, needle)); p++) {
		char cpu[32];
		uint64_t milli;

		if (sscanf(p + strlen(needle), "%31s CPU", cpu) != 1 ||
		    vmact_quantity_parse_milli(cpu, &milli, NULL) != 0)
			fail_msg("unparsable line: %.80s", p);
		if (milli > *max_milli)
			*max_milli = milli;
		n++;
	}
	free(buf);
	return n;
}

/* The VM group's CFS quota in milli-CPUs (-1 unlimited). */
static long quota_milli(void)
{
	return TH_VMACTD_QUOTA_OR_FAIL(&fx.d);
}

/* The live vCPU count as libvirt has it. */
static int live_vcpus(void)
{
	return tg_live_vcpus(fx.g.name);
}

struct since {
	size_t off;
	const char *what;
	unsigned more_than;
};

static bool grew_since(void *arg)
{
	const struct since *s = arg;

	return count_since(s->off, s->what) > s->more_than;
}

static bool quota_at_min(void *unused)
{
	(void)unused;
	return quota_milli() == 1000;
}

static bool two_vcpus(void *unused)
{
	(void)unused;
	return live_vcpus() >= 2;
}

static void cmd(const char *line)
{
	assert_int_equal(tg_cmd(&fx.g, line), 0);
}

static int setup(void **state)
{
	char msg[512], meta[2048], text[256];
	static const char *const args[] = { "--verbose", NULL };

	(void)state;
	/* The guest's vm-monitor: the fixture's peer, stopped by its
	 * teardown. */
	if (th_vmactd_init(&fx.d, "vmactd-re", &fx.g) < 0 ||
	    th_vmactd_monitor(&fx.d, meta, sizeof(meta)) < 0)
		return -1;
	/* One status line a second (a faster reporter is load of its own on
	 * TCG). */
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	fx.vc = virConnectOpen("qemu:///system");
	if (!fx.vc)
		return -1;
	if (tg_start(fx.vc, PREFIX, meta, &fx.g, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		return -1;
	}
	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"listen\":\"127.0.0.1:0\"},\"control\":{\"state_dir\":\"%s\"}}",
		 fx.d.dir);
	if (th_vmactd_config(&fx.d, fx.g.name, text) < 0)
		return -1;
	if (th_vmactd_start(&fx.d, args, 1, LIMIT_BOOT_S, 120) < 0)
		return -1;
	/* The watch by default; the poll under make check-poll. */
	return th_vmactd_on_detection_path(&fx.d) ? 0 : -1;
}

static void stop_hog(void)
{
	for (int i = 0; i < 2; i++)
		th_proc_stop(&fx.hog[i], SIGKILL, 0);
}

static int teardown(void **state)
{
	int status;

	(void)state;
	stop_hog();
	status = th_vmactd_stop(&fx.d);
	if (status != 0)
		print_error("vmactd exited with status %d\n", status);
	if (getenv("VMACT_TEST_VERBOSE"))
		dump_log();
	th_vmactd_teardown(&fx.d);
	if (fx.vc)
		virConnectClose(fx.vc);
	return status == 0 ? 0 : -1;
}

/* This guest's lines from off on that name a CPU class or a resize, as
 * one message (the reason of a resize where a failure is reported: the
 * log's tail may be cut; malloc'ed, never NULL). */
static char *decisions_since(size_t off)
{
	char *buf = log_since(off), *out = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = strstr(line, fx.g.name);

		if (p && (strstr(p, ": cpu ") || strstr(p, ": resiz")))
			fprintf(f, "  %s\n", line);
	}
	fclose(f);
	free(buf);
	return out;
}

/* Short bursts: one busy loop for 100 ms, half the policy's 200 ms up
 * window, every two seconds, twenty times. The guest times each burst
 * itself (`burst 100`): a burst ended by a later `idle` lasts as long as
 * that command takes to arrive, and on a busy host it arrived late enough
 * to make a burst a saturation (CI, stop 44). The sleeps pace the commands,
 * they assert nothing. No burst is long enough for the up window: the VM
 * must not grow. */
static void reaction_bursts(void **state)
{
	size_t off = log_size();
	uint64_t max_milli;
	unsigned n;

	(void)state;
	assert_int_equal(quota_milli(), 1000);
	for (int i = 0; i < 20; i++) {
		cmd("burst 100");
		usleep(2000 * 1000);
	}
	/* The policy's last window covers the last burst by now. */
	usleep(2 * 1000 * 1000);
	n = resizes_since(off, &max_milli);
	if (n || quota_milli() != 1000 || daemon_died()) {
		char *why = decisions_since(off);

		dump_log();
		print_error("its decisions during the bursts:\n%s", why);
		free(why);
		fail_msg("bursts grew the VM: %u resizes (up to %" PRIu64 "m), quota %ldm", n,
			 max_milli, quota_milli());
	}
	print_message("bursts: no resize; classes seen: saturated %u, ok %u\n",
		      count_since(off, "cpu saturated"), count_since(off, "cpu ok"));
}

/* Steady `busy 1` in a VM allowed 4 vCPUs: it grows to what one busy
 * thread needs at the target 0.9 (1 / 0.9 CPUs in whole compute units:
 * 1250m; the second vCPU's own TCG overhead may take it one unit further)
 * with 2 vCPUs, below the arbiter's 1.8 CPUs, so it is the policy that
 * stopped there; then, for 120 s, it does not resize again.
 *
 * Growth is by steps: from 1 vCPU the demand cannot show more than the one
 * CPU it has, so the first step is one compute unit and the policy looks
 * again. Each later step must be one the readings called for: a growth on
 * saturated or throttled, a shrink on ok (a growth on a readout the host's
 * other work inflated settles back one unit once the demand is seen lower:
 * ci18 saw 1500m -> 1750m on "1.37 of 1.500 CPUs" beside the control
 * plane's build, then 1.01 CPUs and back to 1500m 18 s later), within
 * 1250m..2000m, at most MAX_STEADY_STEPS in all; after each the 120 s
 * start again. A growth back to the size a shrink left is a flap (a quiet
 * run at 19:00 the same day went 1500m <-> 1750m twice on demand peaks of
 * 1.35-1.46 CPUs a minute apart): the policy's flap memory keeps that
 * size from then on (doc/policy.md, "The reactive policy"), so no later shrink
 * goes below it. */
#define MAX_STEADY_STEPS 10
/* The last resize since off was one the policy decided on readings that
 * called for it: its last classification before the resize line says
 * saturated or throttled for a growth, ok for a shrink (doc/policy.md),
 * whatever the host was doing beside it. Prints that classification. */
static void step_justified(size_t off, bool growth)
{
	char *buf = log_since(off), resized[128], cls[128], *at = NULL, *c = NULL, *p;

	snprintf(resized, sizeof(resized), "%s: resized to ", fx.g.name);
	snprintf(cls, sizeof(cls), "%s: cpu ", fx.g.name);
	for (p = buf; (p = strstr(p, resized)); p++)
		at = p;
	for (p = buf; at && (p = strstr(p, cls)) && p < at; p++)
		c = p + strlen(cls);
	if (!at || !c ||
	    (growth ? strncmp(c, "saturated:", 10) && strncmp(c, "throttled:", 10)
		    : strncmp(c, "ok:", 3))) {
		dump_log();
		fail_msg("busy 1 resized again on readings that call for no %s: %.160s",
			 growth ? "growth" : "shrink", c ? c : "(no classification)");
	}
	print_message("busy 1: %s on %.*s\n", growth ? "grown again" : "settled back",
		      (int)strcspn(c, "\n"), c);
	free(buf);
}

static void reaction_steady(void **state)
{
	size_t off, off_conv;
	double t0, t_grow, end;
	uint64_t max_milli;

	off = log_size();
	t0 = th_now_s();
	unsigned steps = 1;
	long q, left = 0, flap_floor = 0; /* left: the size the last shrink left */
	int v;

	(void)state;
	cmd("busy 1");
	{
		struct since s = { .off = off, .what = "resized to ", .more_than = 0 };

		if (!wait_until(grew_since, &s, LIMIT_SCALE_S)) {
			dump_log();
			fail_msg("busy 1 never grew the VM");
		}
	}
	t_grow = th_now_s() - t0;
	q = quota_milli();
	v = live_vcpus();
	print_message("busy 1: grown to quota %ldm with %d vCPUs %.1f s after the command\n", q, v,
		      t_grow);
	off_conv = log_size();
	end = th_now_s() + STEADY_S;
	while (th_now_s() < end) {
		if (daemon_died())
			fail_msg("vmactd exited");
		if (resizes_since(off_conv, &max_milli) > 0) {
			long q2;

			/* Let the resize finish (its quota is written before the
			 * line; the vCPU plug before that). */
			q2 = quota_milli();
			if (q2 == q || q2 < 1250 || q2 > 2000 || live_vcpus() != 2 ||
			    steps >= MAX_STEADY_STEPS) {
				dump_log();
				fail_msg("busy 1 resized again %.0f s after the last step: %ldm -> "
					 "%ldm (%d vCPUs, step %u)",
					 STEADY_S - (end - th_now_s()), q, q2, live_vcpus(),
					 steps + 1);
			}
			step_justified(off_conv, q2 > q);
			if (q2 < q && flap_floor && q2 < flap_floor) {
				dump_log();
				fail_msg("busy 1 flapped: shrunk to %ldm after it had grown back to "
					 "%ldm, the size a shrink left",
					 q2, flap_floor);
			}
			if (q2 > q && left && q2 >= left)
				flap_floor = q2;
			left = q2 < q ? q : 0;
			print_message("busy 1: %s to %ldm %.1f s after the command\n",
				      q2 > q ? "grown" : "settled back", q2, th_now_s() - t0);
			q = q2;
			steps++;
			off_conv = log_size();
			end = th_now_s() + STEADY_S;
		}
		usleep(500 * 1000);
	}
	v = live_vcpus();
	if (q < 1250 || q > 2000 || v != 2) {
		dump_log();
		fail_msg("busy 1 grew to quota %ldm with %d vCPUs, not 1250m..2000m with 2", q, v);
	}
	assert_int_equal(quota_milli(), q);
	print_message("busy 1: %u step(s), then steady for %.0f s at %ldm with 2 vCPUs (classes "
		      "logged: saturated %u, contended %u, ok %u)\n",
		      steps, STEADY_S, q, count_since(off, "cpu saturated"),
		      count_since(off, "cpu contended"), count_since(off, "cpu ok"));
}

/* Host contention: two busy processes on the host (it has two CPUs)
 * beside the VM running `busy 2`. The VM's vCPUs now wait for host CPUs:
 * the log says "contended", and growing stops there. */
static void reaction_contention(void **state)
{
	static const char *const hog_argv[] = { "/bin/sh", "-c", "while :; do :; done", NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_NULL };
	size_t off = log_size();
	struct since s = { .off = off, .what = "cpu contended", .more_than = 0 };
	uint64_t max_milli;
	double t0;
	long q0 = quota_milli();

	(void)state;
	for (int i = 0; i < 2; i++)
		assert_int_equal(th_spawn(&fx.hog[i], hog_argv, &o), 0);
	cmd("busy 2");
	t0 = th_now_s();
	if (!wait_until(grew_since, &s, LIMIT_SCALE_S)) {
		stop_hog();
		dump_log();
		fail_msg("the busy VM beside the hog was never classified contended");
	}
	print_message("hog: contended %.1f s after busy 2\n", th_now_s() - t0);
	usleep((useconds_t)(HOG_WATCH_S * 1e6));
	/* The VM idles before the hog stops: a VM still busy would grow the
	 * moment the host's CPUs are free, and that growth is neither the
	 * hog's to count nor a state the next test may start from. */
	cmd("idle");
	resizes_since(off, &max_milli);
	fx.hog_max_quota = max_milli ? (long)max_milli : q0;
	if (quota_milli() > fx.hog_max_quota)
		fx.hog_max_quota = quota_milli();
	stop_hog();
	fx.hog_done = true;
	print_message("hog: quota %ldm before, at most %ldm beside the hog (%u resizes; classes: "
		      "contended %u, saturated %u, throttled %u)\n",
		      q0, fx.hog_max_quota, resizes_since(off, &max_milli),
		      count_since(off, "cpu contended"), count_since(off, "cpu saturated"),
		      count_since(off, "cpu throttled"));
}

/* The VM has 2 vCPUs and a quota below them: `busy 2` finds it throttled
 * by its own quota. The first resize raises the quota only; the vCPU count
 * stays 2. Where the host's other work keeps the vCPUs from reaching the
 * quota, the group is not throttled and the policy says so; then only
 * that its classification agrees with its own figures is checked. Without
 * the hog this is also how far `busy 2` grows the VM, which the hog's run
 * must not have passed. */
static void reaction_quota_first(void **state)
{
	size_t off;
	struct since s;
	char *buf, *p, needle[256];
	uint64_t max_milli, from, to;
	char a[32], b[32];
	double t0;
	long q;
	int v;

	(void)state;
	v = live_vcpus();
	/* Always from the minimum quota with two vCPUs, a state awaited: a VM
	 * the test before left busy may still be growing (a resize in flight
	 * when the quota was read), and from the arbiter's cap the quota has
	 * no room to rise. */
	if (v < 2) {
		/* With one vCPU (the steady test, which grows it, may be
		 * skipped), grow it to a second one first. */
		cmd("busy 2");
		if (!wait_until(two_vcpus, NULL, LIMIT_SCALE_S)) {
			dump_log();
			fail_msg("busy 2 never brought a second vCPU");
		}
	}
	/* Idle back to the minimum (the vCPUs stay plugged by default). */
	cmd("idle");
	if (!wait_until(quota_at_min, NULL, LIMIT_SCALE_S)) {
		dump_log();
		fail_msg("idle never brought the quota back to 1000m");
	}
	q = quota_milli();
	v = live_vcpus();
	print_message("quota first: from quota %ldm with %d vCPUs\n", q, v);
	assert_int_equal(v, 2);
	assert_true(q < 2000);

	off = log_size();
	cmd("busy 2");
	t0 = th_now_s();
	s = (struct since){ .off = off, .what = "resized to ", .more_than = 0 };
	if (!wait_until(grew_since, &s, LIMIT_SCALE_S)) {
		/* A VM whose vCPUs wait for host CPUs others hold is held
		 * (doc/policy.md, contended): on a host busy enough for that
		 * all along there is no first resize to look at. */
		unsigned held = count_since(off, "cpu contended");

		if (held && !count_since(off, "resizing from ")) {
			print_message("quota first: held as contended by the host's other work "
				      "(%u classifications) for %.0f s: nothing to check\n",
				      held, LIMIT_SCALE_S);
			cmd("idle");
			return;
		}
		dump_log();
		fail_msg("busy 2 never resized the quota-limited VM");
	}
	/* The vCPU count right after the first resize, before any other could
	 * start (a new decision needs a full up window after a resize). */
	v = live_vcpus();
	print_message("quota first: first resize %.1f s after busy 2, %d vCPUs\n", th_now_s() - t0,
		      v);
	buf = log_since(off);
	snprintf(needle, sizeof(needle), "%s: resizing from ", fx.g.name);
	p = strstr(buf, needle);
	if (!p || sscanf(p + strlen(needle), "%31s CPU / %*s to %31s CPU", a, b) != 2 ||
	    vmact_quantity_parse_milli(a, &from, NULL) ||
	    vmact_quantity_parse_milli(b, &to, NULL)) {
		free(buf);
		dump_log();
		fail_msg("no parsable resizing line");
	}
	/* The classification logged last before that resize, with the
	 * figures it was made on. The quota comes first only where the quota
	 * held the VM back: on a host whose CPUs others keep busy (a
	 * developer's builds beside the suite) the vCPUs wait for the host
	 * before they reach the quota, the group is hardly throttled, and
	 * the policy rightly calls it saturated or contended. What it
	 * promises for the figures it had is what is checked. */
	{
		char cls[32] = "", *at, *last = NULL;
		double thr_pct = -1, share = 0;
		struct act_cpu_policy pol;

		act_cpu_policy_defaults(&pol);
		snprintf(needle, sizeof(needle), "%s: cpu ", fx.g.name);
		for (at = strstr(buf, needle); at && at < p; at = strstr(at + 1, needle))
			last = at;
		if (last) {
			const char *t = strstr(last, "throttled ");

			sscanf(last + strlen(needle), "%31[a-z]", cls);
			/* "(…, throttled N %)" */
			for (; t && t < p && sscanf(t, "throttled %lf %%", &thr_pct) != 1;
			     t = strstr(t + 1, "throttled "))
				;
		}
		share = thr_pct / 100.0;
		if (!last || thr_pct < 0) {
			free(buf);
			dump_log();
			fail_msg("no classification with its figures before the first resize");
		}
		if (!strcmp(cls, "throttled")) {
			if (to <= from || v != 2) {
				free(buf);
				dump_log();
				fail_msg("throttled, yet the first resize %" PRIu64 "m -> %" PRIu64
					 "m left %d vCPUs",
					 from, to, v);
			}
		} else {
			/* The log rounds to whole percents. */
			if (share >= pol.throttled_share + 0.005) {
				free(buf);
				dump_log();
				fail_msg("classified %s with the group throttled %.0f %% of the time "
					 "under a quota below its vCPUs: the quota held it back",
					 cls, thr_pct);
			}
			print_message("quota first: the host's other work kept the vCPUs from the "
				      "quota (throttled %.0f %%): %s, the quota-first rule not "
				      "called for\n",
				      thr_pct, cls);
			if (to <= from) {
				free(buf);
				dump_log();
				fail_msg("first resize %" PRIu64 "m -> %" PRIu64 "m", from, to);
			}
		}
	}
	free(buf);
	/* Let it finish growing (the arbiter's cap on this host): the
	 * reference for the hog's test. */
	{
		double end = th_now_s() + LIMIT_SCALE_S;
		unsigned before;

		do {
			before = resizes_since(off, &max_milli);
			usleep(5 * 1000 * 1000);
		} while (resizes_since(off, &max_milli) != before && th_now_s() < end);
	}
	print_message("quota first: %" PRIu64 "m -> up to %" PRIu64 "m without the hog, %d vCPUs\n",
		      from, max_milli, live_vcpus());
	if (fx.hog_done && fx.hog_max_quota > (long)max_milli) {
		dump_log();
		fail_msg("beside the hog the VM grew to %ldm, without it only to %" PRIu64 "m",
			 fx.hog_max_quota, max_milli);
	}
	cmd("idle");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reaction_bursts),
		cmocka_unit_test(reaction_steady),
		cmocka_unit_test(reaction_contention),
		cmocka_unit_test(reaction_quota_first),
	};

	if (!th_root_test("test_reaction", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("reaction", tests, setup, teardown);
}
