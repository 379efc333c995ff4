/* SPDX-License-Identifier: Apache-2.0 */
/* `make demo` (demo/vmact-demo.sh) in its short mode (VMACT_DEMO_SHORT=1),
 * with this build's vmactd and vmactl (build[/san]/, next to this binary's
 * directory), a real TCG guest and libvirtd:
 *
 *   demo_to_the_end:   it runs its phases and ends by itself with exit
 *                      status 0, having shown vmactd's events (a resize
 *                      among them) and a summary with at least one resize,
 *                      the load -> first resize time and the way back down
 *                      to 1 CPU; the guest has no vm-monitor (none runs,
 *                      none is named), so the shrink was the host's own
 *                      decision, on the figures BPF saw;
 *   demo_interrupted:  SIGINT to its process group (what Ctrl-C in a
 *                      terminal sends) once vmactd has started resizing
 *                      the busy guest: it ends with status 130.
 *
 *                      It ends with the path of its plot: a PNG (its
 *                      chunks whole, IHDR to IEND, written during this
 *                      run) drawn from the data beside it, where the
 *                      guest's busy loops and vmactd's grown size show,
 *                      and its way back to the minimum;
 *
 * After each: no process of the demo is left (vmactd, vmactl: none has
 * the demo's temporary directory on its command
 * line), libvirt knows no domain of the demo (virsh list --all), its BPF
 * pin directory and its temporary directory are gone, and vmactd had
 * stopped with status 0 (under ASan: no leak). Everything the demo creates
 * carries its PID (demo/vmact-demo.sh).
 *
 * Waits have generous safety limits; nothing is timed. The demo's output
 * goes to a scratch directory /tmp/test-demo-XXXXXX, kept with
 * VMACT_TEST_KEEP_LOG=1 (a failing run's tail is printed); a demo a failed
 * test left running is stopped by the test's teardown. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libvirt/libvirt.h>

#include "base/time.h"
#include "tests/lib/file.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

/* Safety limits: the short demo takes about a minute here (the guest's
 * boot under TCG, a 12 s load phase, the way back to the minimum). */
#define LIMIT_RUN_S  600.0
#define LIMIT_LOAD_S 400.0
#define LIMIT_EXIT_S 90.0

struct demo {
	pid_t pid;
	int status; /* exit code, or 128 + signal */
	bool exited;
	char out[128];
};

static struct {
	char build[PATH_MAX]; /* build[/san]: this build's vmactd and vmactl */
	char dir[64];         /* the scratch directory of the demo's output */
	struct demo demo;     /* the test's demo, stopped by its teardown */
} fx;

/* Starts the demo in its own process group (as a shell starts a
 * foreground job), output to d->out. It dies with the test (SIGTERM: its
 * trap cleans up). */
static void demo_start(struct demo *d)
{
	static unsigned runs;
	const char *top = getenv("VMACT_TOP");
	char script[PATH_MAX];
	pid_t pid;
	int fd;

	memset(d, 0, sizeof(*d));
	/* A file per run, created here: what the test reads is this run's. */
	snprintf(d->out, sizeof(d->out), "%s/run-%u.out", fx.dir, ++runs);
	fd = open(d->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	snprintf(script, sizeof(script), "%s/demo/vmact-demo.sh", top && top[0] ? top : ".");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* The test ignores SIGPIPE (th_root_test); the demo's pipelines
		 * expect the default, as from a terminal. */
		signal(SIGPIPE, SIG_DFL);
		if (fd < 0 || in < 0 || dup2(in, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		close_range(3, ~0U, 0);
		setenv("VMACT_DEMO_SHORT", "1", 1);
		setenv("VMACT_DEMO_BUILD", fx.build, 1);
		execl(script, script, (char *)NULL);
		_exit(127);
	}
	close(fd);
	setpgid(pid, pid);
	d->pid = pid;
}

static bool demo_exited(struct demo *d)
{
	int st;

	if (d->exited)
		return true;
	if (waitpid(d->pid, &st, WNOHANG) != d->pid)
		return false;
	d->exited = true;
	d->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return true;
}

static void dump_out(const struct demo *d)
{
	char *buf = th_read_file(d->out);

	if (buf) {
		size_t len = strlen(buf);

		print_error("---- demo output (tail) ----\n%s\n",
			    len > 8000 ? buf + len - 8000 : buf);
		free(buf);
	}
}

/* Stops a demo still running: SIGTERM to its group (its trap cleans up),
 * SIGKILL a minute later. */
static void demo_stop(struct demo *d)
{
	if (!d->pid || demo_exited(d))
		return;
	kill(-d->pid, SIGTERM);
	if (!TH_WAIT(NULL, demo_exited(d), 60 * VMACT_USEC_PER_SEC)) {
		kill(-d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->exited = true;
		d->status = 128 + SIGKILL;
	}
}

/* Waits for the demo's end; a demo that does not end in time is stopped
 * and the test fails. */
static void demo_wait(struct demo *d, double limit_s)
{
	if (TH_WAIT(NULL, demo_exited(d), (uint64_t)(limit_s * VMACT_USEC_PER_SEC)))
		return;
	demo_stop(d);
	dump_out(d);
	fail_msg("the demo did not end within %.0f s", limit_s);
}

/* A process (other than the demo's own, already reaped) whose command line
 * mentions the demo's temporary directory /tmp/vmact-demo-PID.*: vmactd
 * (--config), vmactl (--socket). */
static pid_t leftover_process(pid_t demo)
{
	char needle[64];

	snprintf(needle, sizeof(needle), "/tmp/vmact-demo-%d.", (int)demo);
	return th_proc_find(needle, NULL);
}

/* Nothing of the demo is left: processes, domain, pins, temporary files. */
static void assert_nothing_left(const struct demo *d)
{
	char name[64], path[128], pattern[128];
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr *doms = NULL;
	glob_t g;
	pid_t p;
	int n;

	snprintf(name, sizeof(name), "vmact-demo-%d", (int)d->pid);
	/* A process the demo stopped may take a moment to be reaped by its
	 * parent (init, for vmactd in its own session). */
	if (!TH_WAIT(NULL, (p = leftover_process(d->pid)) == 0, 10 * VMACT_USEC_PER_SEC))
		fail_msg("process %d of the demo is still running", (int)p);
	assert_non_null(vc);
	n = virConnectListAllDomains(vc, &doms, 0);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		const char *dn = virDomainGetName(doms[i]);

		if (dn && strcmp(dn, name) == 0)
			fail_msg("libvirt still has the demo's domain %s", name);
		virDomainFree(doms[i]);
	}
	free(doms);
	virConnectClose(vc);

	snprintf(path, sizeof(path), "/sys/fs/bpf/%s", name);
	if (access(path, F_OK) == 0)
		fail_msg("the demo's pin directory %s is still there", path);
	snprintf(pattern, sizeof(pattern), "/tmp/%s.*", name);
	if (glob(pattern, 0, NULL, &g) == 0) {
		print_error("left behind: %s\n", g.gl_pathv[0]);
		globfree(&g);
		fail_msg("the demo's temporary directory is still there");
	}
	snprintf(path, sizeof(path), "/var/log/libvirt/qemu/%s.log", name);
	if (access(path, F_OK) == 0)
		fail_msg("libvirt's log of the demo's domain %s is still there", path);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The plot the demo printed the path of ("plot: PATH"): this run's PNG,
 * whole, and its data from this run: samples of the busy guest at more
 * than its minimum. */
static void assert_plot(const struct demo *d, const char *out, time_t started)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	const char *at = strstr(out, "\nplot: ");
	char path[PATH_MAX], want[PATH_MAX + 64], data[PATH_MAX];
	unsigned char *png;
	size_t len = 0, off, rows = 0;
	uint32_t width, height;
	double most_cpu = 0, last_quota = NAN;
	bool busy_seen = false, iend = false;
	struct stat st;
	FILE *f;

	if (!at || sscanf(at, "\nplot: %4095s", path) != 1)
		fail_msg("the demo printed no plot path");
	snprintf(want, sizeof(want), "vmact-demo-%d.png", (int)d->pid);
	assert_non_null(strstr(path, want));
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_mtime >= started);
	f = fopen(path, "rb");
	assert_non_null(f);
	png = malloc((size_t)st.st_size);
	assert_non_null(png);
	len = fread(png, 1, (size_t)st.st_size, f);
	fclose(f);
	assert_true(len == (size_t)st.st_size && len > 33);
	assert_memory_equal(png, sig, sizeof(sig));
	/* IHDR first, the image's size in it; then chunk after chunk to IEND,
	 * which ends the file. */
	assert_memory_equal(png + 12, "IHDR", 4);
	width = be32(png + 16);
	height = be32(png + 20);
	assert_true(width >= 640 && height >= 400);
	for (off = 8; off + 12 <= len && !iend; off += 12 + be32(png + off))
		iend = !memcmp(png + off + 4, "IEND", 4);
	assert_true(iend && off == len);
	free(png);
	print_message("plot: %s (%zu bytes, %ux%u)\n", path, len, width, height);

	/* Its data: seconds, vCPUs, quota, MiB, load1, demand, busy loops. */
	snprintf(data, sizeof(data), "%.*s.tsv", (int)(strlen(path) - 4), path);
	f = fopen(data, "r");
	assert_non_null(f);
	{
		char line[512];

		while (fgets(line, sizeof(line), f)) {
			double t, vcpus, quota, mib, busy;
			char l1[32], dem[32];

			if (sscanf(line, "%lf %lf %lf %lf %31s %31s %lf", &t, &vcpus, &quota, &mib,
				   l1, dem, &busy) < 4)
				continue;
			rows++;
			if (!isnan(quota) && quota > most_cpu)
				most_cpu = quota;
			last_quota = quota;
			busy_seen |= busy >= 2;
		}
	}
	fclose(f);
	/* Up with the load, and back at the minimum at the end (the demo
	 * waited for it). */
	if (rows < 5 || most_cpu <= 1 || !busy_seen || last_quota != 1)
		fail_msg("the plot's data %s: %zu samples, at most %g CPUs of quota, %g at the end, "
			 "busy 2 %sseen",
			 data, rows, most_cpu, last_quota, busy_seen ? "" : "not ");
	print_message("its data: %zu samples, up to %g CPUs of quota\n", rows, most_cpu);
}

/* The number after `label` in the demo's output, or -1. */
static double number_after(const char *buf, const char *label)
{
	const char *p = strstr(buf, label);
	double v;

	return p && sscanf(p + strlen(label), " %lf", &v) == 1 ? v : -1;
}

static void demo_to_the_end(void **state)
{
	struct demo *d = &fx.demo;
	time_t started = time(NULL);
	char *out;

	(void)state;
	demo_start(d);
	demo_wait(d, LIMIT_RUN_S);
	out = th_read_file(d->out);
	assert_non_null(out);
	if (d->status != 0 || !strstr(out, "==== vmact demo summary") ||
	    number_after(out, "resizes completed:") < 1 ||
	    number_after(out, "busy 2 -> first resize:") < 0 ||
	    !strstr(out, "resize: resized to") || !strstr(out, "vmactd stopped (exit status 0)")) {
		dump_out(d);
		fail_msg("the demo (exit status %d) did not end with a summary showing a resize, "
			 "or vmactd did not stop cleanly",
			 d->status);
	}
	/* The way down without an agent: back at the minimum, a shrink
	 * decided on BPF's figures and approved by nobody but the host. */
	if (number_after(out, "idle -> back at 1 CPU:") < 0 || !strstr(out, "shrink to 1 vCPU") ||
	    !strstr(out, "(BPF)") || strstr(out, "vm-monitor connected") ||
	    strstr(out, "downscale request")) {
		dump_out(d);
		fail_msg("the demo did not show the guest shrunk back to 1 CPU on the host's own "
			 "evidence");
	}
	/* The declared capacity is said on screen (this host is smaller than
	 * the guest's max, or it is not). */
	assert_true(strstr(out, "DECLARES a larger capacity") ||
		    strstr(out, "The arbiter's capacity is this host's"));
	/* What it measured, for the log of make check. */
	{
		const char *sum = strstr(out, "==== vmact demo summary"), *end;

		end = sum ? strstr(sum, "\n\n") : NULL;
		if (sum)
			print_message("%.*s\n", end ? (int)(end - sum) : (int)strlen(sum), sum);
	}
	assert_plot(d, out, started);
	free(out);
	assert_nothing_left(d);
}

static bool resizing(void *path)
{
	return th_count_in_file(path, "resize: resizing from") > 0;
}

static void demo_interrupted(void **state)
{
	struct demo *d = &fx.demo;
	char *out;

	(void)state;
	demo_start(d);
	if (!TH_WAIT(NULL, resizing(d->out) || demo_exited(d),
		     (uint64_t)(LIMIT_LOAD_S * VMACT_USEC_PER_SEC)) ||
	    d->exited) {
		if (!d->exited)
			kill(-d->pid, SIGTERM);
		demo_wait(d, LIMIT_EXIT_S);
		dump_out(d);
		fail_msg("the demo never got to resizing the busy guest");
	}
	/* Ctrl-C: the terminal signals the foreground process group. */
	assert_int_equal(kill(-d->pid, SIGINT), 0);
	demo_wait(d, LIMIT_EXIT_S);
	out = th_read_file(d->out);
	assert_non_null(out);
	if (d->status != 130 || !strstr(out, "interrupted") ||
	    strstr(out, "==== vmact demo summary") ||
	    !strstr(out, "vmactd stopped (exit status 0)")) {
		dump_out(d);
		fail_msg("after SIGINT the demo exited with status %d (130 expected) or did not "
			 "stop vmactd cleanly",
			 d->status);
	}
	free(out);
	assert_nothing_left(d);
}

/* Also after a failed test: no demo left running. */
static int demo_teardown(void **state)
{
	(void)state;
	demo_stop(&fx.demo);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return th_scratch_dir("test-demo", fx.dir, sizeof(fx.dir)) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	if (fx.dir[0] && !getenv("VMACT_TEST_KEEP_LOG"))
		th_rm_rf(fx.dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(demo_to_the_end, demo_teardown),
		cmocka_unit_test_teardown(demo_interrupted, demo_teardown),
	};

	if (!th_root_test("test_demo", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	/* build[/san]/tests/integration/test_demo -> build[/san] */
	if (th_build_prog(".", fx.build, sizeof(fx.build)) < 0)
		return 1;
	return cmocka_run_group_tests_name("demo", tests, setup, teardown);
}
