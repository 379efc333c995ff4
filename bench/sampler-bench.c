/* SPDX-License-Identifier: Apache-2.0 */
/* Cost of the load sampler.
 *
 * 1. Per scheduler event: vmact's hooks and libbpf-tools' runqlat (the
 *    baseline) attached at the same time under the same context-switch load
 *    (two threads of one process ping-ponging a byte over pipes; that process
 *    is registered as a VM, so vmact runs its full accounting path for those
 *    events), with BPF run-time statistics enabled (BPF_ENABLE_STATS, the
 *    same switch as kernel.bpf_stats_enabled). Per tool:
 *    sum(run_time_ns) / sum(run_cnt) of its scheduler programs, taken from
 *    `bpftool prog show --json` over the same window.
 *    Then the same load again with the process unregistered: the cost of
 *    events of processes that are not VMs (informational).
 * 2. Daemon side: CPU time of one readout of every registered VM for 1, 100
 *    and 1000 registered VMs (sleeping child processes).
 * 3. Daemon side at the reactive policy's rate (policy.tick_ms, 250 ms):
 *    1, 100 and 1000 registered busy "VMs", each a process with two threads
 *    named like QEMU's vCPU threads ("CPU n/TCG") that spin 50 us every
 *    300 ms, an I/O-like thread waking every 500 ms and the main thread
 *    asleep; every 250 ms each VM is read as its runner does (its reading
 *    and its vCPU threads' totals, smp_read_with_vcpus). Cost: CPU time of
 *    the reading thread itself (CLOCK_THREAD_CPUTIME_ID: its syscalls and
 *    the BPF programs they run included) per 250 ms round, in % of one
 *    core. Two ways in the same run, each with a sampler of its own: the
 *    one-call readout program (readvm.bpf.c, the default where the kernel
 *    loads it) and, as the baseline, the task iterators (config
 *    no_read_prog: a map lookup and two iterator passes per VM and tick).
 * 4. The watch (policy.events) against the 50 ms poll, 1000 VMs idle and
 *    with a tenth of them busy, and the decision's delay (watch_section).
 * Sections: `sampler-bench [SECONDS [events|readout|policy|watch]...]`, all by
 * default. With the events section the last line is `ratio: X` = vmact
 * ns/event / runqlat ns/event. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <jansson.h>

#include "base/macro.h"
#include "base/sched.h"
#include "bpf/sampler.h"

#define MAX_IDS 64

static int window_s = 10;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("sampler-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static int pp_a[2], pp_b[2];

static void *pong(void *arg)
{
	char c;

	while (read(pp_a[0], &c, 1) == 1)
		if (write(pp_b[1], &c, 1) != 1)
			break;
	return NULL;
}

/* Child process: two threads bouncing a byte, each bounce a wakeup and a
 * context switch on each side. */
static pid_t spawn_pingpong(void)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		pthread_t t;
		char c = 'x';

		if (pipe(pp_a) || pipe(pp_b) || pthread_create(&t, NULL, pong, NULL))
			_exit(1);
		for (;;) {
			if (write(pp_a[1], &c, 1) != 1 || read(pp_b[0], &c, 1) != 1)
				_exit(1);
		}
	}
	return pid;
}

static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static json_t *bpftool_progs(void)
{
	FILE *p = popen("bpftool prog show --json", "r");
	json_error_t jerr;
	json_t *j;

	if (!p)
		die("popen bpftool: %s", strerror(errno));
	j = json_loadf(p, 0, &jerr);
	if (pclose(p) != 0 || !j)
		die("bpftool prog show --json: %s", j ? "failed" : jerr.text);
	return j;
}

struct tool {
	const char *name;
	uint32_t ids[MAX_IDS];
	size_t n;
	uint64_t run_ns, run_cnt;
};

static bool has_id(const struct tool *t, uint32_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->ids[i] == id)
			return true;
	return false;
}

/* Sums run_time_ns and run_cnt of each tool's programs. */
static void snapshot(struct tool *tools, size_t ntools)
{
	json_t *progs = bpftool_progs(), *p;
	size_t i;

	for (size_t k = 0; k < ntools; k++)
		tools[k].run_ns = tools[k].run_cnt = 0;
	json_array_foreach(progs, i, p) {
		uint32_t id = (uint32_t)json_integer_value(json_object_get(p, "id"));

		for (size_t k = 0; k < ntools; k++) {
			if (!has_id(&tools[k], id))
				continue;
			tools[k].run_ns += (uint64_t)json_integer_value(
				json_object_get(p, "run_time_ns"));
			tools[k].run_cnt += (uint64_t)json_integer_value(
				json_object_get(p, "run_cnt"));
		}
	}
	json_decref(progs);
}

static bool is_sched_prog(const char *name)
{
	return name && strstr(name, "sched_") != NULL;
}

/* Starts runqlat in its default mode and finds its scheduler programs: the
 * ones that were not there before. */
static pid_t start_runqlat(struct tool *t)
{
	json_t *before = bpftool_progs(), *p;
	pid_t pid;
	size_t i;

	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		execl("/usr/sbin/runqlat", "runqlat", "3600", "1", (char *)NULL);
		_exit(127);
	}
	for (int tries = 0; tries < 100 && t->n < 3; tries++) {
		json_t *now;

		usleep(100000);
		now = bpftool_progs();
		t->n = 0;
		json_array_foreach(now, i, p) {
			uint32_t id = (uint32_t)json_integer_value(json_object_get(p, "id"));
			bool old = false;
			size_t j;
			json_t *q;

			if (!is_sched_prog(json_string_value(json_object_get(p, "name"))))
				continue;
			json_array_foreach(before, j, q)
				if ((uint32_t)json_integer_value(json_object_get(q, "id")) == id)
					old = true;
			if (!old && t->n < MAX_IDS)
				t->ids[t->n++] = id;
		}
		json_decref(now);
	}
	json_decref(before);
	if (t->n < 3)
		die("runqlat did not load its 3 scheduler programs (libbpf-tools installed?)");
	return pid;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void count_cb(const char *name, const struct smp_reading *r, void *data)
{
	(*(unsigned *)data)++;
}

static void readout_cost(enum smp_backend backend, const char *label, const unsigned *sizes,
			 size_t nsizes)
{
	struct smp_config cfg = { .backend = backend, .pin_root = NULL };
	char root[64];
	struct vmact_err err = { 0 };
	struct smp_sampler *s = NULL;
	pid_t kids[1000];
	unsigned have = 0;

	snprintf(root, sizeof(root), "/sys/fs/bpf/vmact-bench-%d", (int)getpid());
	cfg.pin_root = root;
	if (smp_open(&cfg, &s, &err) < 0)
		die("smp_open: %s", err.msg);
	for (size_t k = 0; k < nsizes; k++) {
		unsigned n = sizes[k], reps = n >= 1000 ? 50 : n >= 100 ? 200 : 2000, seen = 0;
		double t0, t1;

		while (have < n) {
			char name[32];

			kids[have] = spawn_sleeper();
			snprintf(name, sizeof(name), "bench-vm-%u", have);
			if (smp_register(s, name, kids[have], NULL, &err) < 0)
				die("smp_register: %s", err.msg);
			have++;
		}
		if (smp_read_all(s, count_cb, &seen, &err) < 0)
			die("smp_read_all: %s", err.msg);
		t0 = cpu_s();
		for (unsigned r = 0; r < reps; r++)
			if (smp_read_all(s, count_cb, &seen, &err) < 0)
				die("smp_read_all: %s", err.msg);
		t1 = cpu_s();
		if (seen != (reps + 1) * n)
			die("readout saw %u VMs, expected %u", seen, (reps + 1) * n);
		printf("readout %-9s %4u VMs: %10.1f us CPU per readout of all, %7.3f us per VM\n",
		       label, n, (t1 - t0) / reps * 1e6, (t1 - t0) / reps / n * 1e6);
	}
	smp_close(s);
	for (unsigned i = 0; i < have; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

/* A busy "VM": two vCPU threads spinning SPIN_US then sleeping SLEEP_MS,
 * an I/O-like thread waking every IO_MS and the main thread asleep. Light
 * on purpose: 1000 of them keep about a third of a CPU busy on a 2-CPU
 * host (2000 threads spinning 200 us per 50 ms overloaded it). */
#define SPIN_US    50
#define SLEEP_MS   300
#define IO_MS      500
#define VM_THREADS 4
#define VM_VCPUS   2

static void spin_us(long us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static void *vcpu_thread(void *arg)
{
	struct timespec nap = { 0, SLEEP_MS * 1000000L };
	char name[16];

	snprintf(name, sizeof(name), "CPU %d/TCG", (int)(intptr_t)arg);
	prctl(PR_SET_NAME, name);
	for (;;) {
		spin_us(SPIN_US);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static void *io_thread(void *arg)
{
	struct timespec nap = { 0, IO_MS * 1000000L };

	prctl(PR_SET_NAME, "worker");
	for (;;)
		nanosleep(&nap, NULL);
	return NULL;
}

/* A "VM": VM_VCPUS threads running vcpu(first + i), an I/O-like thread
 * and the main thread asleep; it dies with the bench. */
static pid_t spawn_vm(void *(*vcpu)(void *), int first)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		pthread_attr_t a;
		pthread_t t;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "qemu-bench");
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 64 * 1024);
		for (int i = 0; i < VM_VCPUS; i++)
			if (pthread_create(&t, &a, vcpu, (void *)(intptr_t)(first + i)))
				_exit(1);
		if (pthread_create(&t, &a, io_thread, NULL))
			_exit(1);
		for (;;)
			pause();
	}
	return pid;
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One VM's tick as runner/readings.c does it: the VM's reading and its
 * vCPU threads' totals. Returns how many vCPU threads were seen. */
static unsigned tick_vm(struct smp_sampler *s, const char *name)
{
	struct vmact_err err = { 0 }, verr = { 0 };
	struct smp_reading r;
	struct smp_vcpus v;
	int vrc;

	if (smp_read_with_vcpus(s, name, &r, &v, &vrc, &verr, &err) < 0)
		die("smp_read_with_vcpus %s: %s", name, err.msg);
	if (vrc < 0)
		die("smp_read_with_vcpus %s: vCPUs: %s", name, verr.msg);
	return v.vcpus;
}

/* Reads every VM every tick_ms for window seconds (at least 2 rounds);
 * returns the reading thread's CPU per round, in % of one core at that
 * rate (above 100 %: the rate cannot be kept). */
static double policy_rate_cost(struct smp_sampler *s, unsigned n, unsigned *vcpus_seen,
			       double *round_ms)
{
	const double tick = 0.25;
	double c0, c1, w0, next;
	unsigned rounds = 0, seen = 0;

	/* Untimed round: the iterators' per-VM links are made on first use. */
	for (unsigned i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "busy-vm-%u", i);
		tick_vm(s, name);
	}
	w0 = next = mono_s();
	c0 = thread_cpu_s();
	do {
		double now;

		seen = 0;
		for (unsigned i = 0; i < n; i++) {
			char name[32];

			snprintf(name, sizeof(name), "busy-vm-%u", i);
			seen += tick_vm(s, name);
		}
		rounds++;
		next += tick;
		now = mono_s();
		if (next > now)
			usleep((useconds_t)((next - now) * 1e6));
	} while (rounds < 2 || mono_s() - w0 < window_s);
	c1 = thread_cpu_s();
	*vcpus_seen = seen;
	*round_ms = (c1 - c0) / rounds * 1e3;
	return (c1 - c0) / rounds / tick * 100.0;
}

/* A sampler of one kind with the first n busy VMs registered. */
/* A BPF sampler of cfg's kind on the bench's own pin root. */
static struct smp_sampler *bench_sampler(struct smp_config *cfg)
{
	struct vmact_err err = { 0 };
	struct smp_sampler *s = NULL;
	char root[64];

	snprintf(root, sizeof(root), "/sys/fs/bpf/vmact-bench-%d", (int)getpid());
	cfg->backend = SMP_BACKEND_BPF;
	cfg->pin_root = root;
	if (smp_open(cfg, &s, &err) < 0)
		die("smp_open: %s", err.msg);
	return s;
}

static struct smp_sampler *policy_sampler(bool read_prog, const pid_t *kids, unsigned n)
{
	struct smp_config cfg = { .no_read_prog = !read_prog };
	struct smp_sampler *s = bench_sampler(&cfg);
	struct vmact_err err = { 0 };

	if (read_prog && !smp_read_prog(s))
		die("the readout program did not load on this kernel (kfuncs in syscall programs)");
	for (unsigned i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "busy-vm-%u", i);
		if (smp_register(s, name, kids[i], NULL, &err) < 0)
			die("smp_register: %s", err.msg);
	}
	usleep(500000); /* every vCPU thread has run since */
	return s;
}

static void policy_rate(const unsigned *sizes, size_t nsizes)
{
	static pid_t kids[1000];
	unsigned have = 0;

	printf("policy rate: every VM read every 250 ms (reading + vCPU totals, "
	       "smp_read_with_vcpus), %d s per figure; each VM a process of %d threads, %d named "
	       "\"CPU n/TCG\" spinning %d us per %d ms, one waking every %d ms; reader thread's "
	       "CPU in %% of one core\n",
	       window_s, VM_THREADS, VM_VCPUS, SPIN_US, SLEEP_MS, IO_MS);
	for (size_t k = 0; k < nsizes; k++) {
		unsigned n = sizes[k], v_new, v_old;
		double c_new, c_old, ms_new, ms_old;
		struct smp_sampler *s;

		while (have < n)
			kids[have++] = spawn_vm(vcpu_thread, 0);
		usleep(300000); /* the threads name themselves */
		s = policy_sampler(true, kids, n);
		c_new = policy_rate_cost(s, n, &v_new, &ms_new);
		smp_close(s);
		s = policy_sampler(false, kids, n);
		c_old = policy_rate_cost(s, n, &v_old, &ms_old);
		smp_close(s);
		if (v_new != n * VM_VCPUS || v_old != n * VM_VCPUS)
			die("%u VMs: saw %u and %u vCPU threads, expected %u", n, v_new, v_old,
			    n * VM_VCPUS);
		printf("policy rate %4u VMs: readout program %6.2f %% of a core (%7.3f ms CPU per "
		       "round, %5.1f us per VM); task iterators (baseline) %6.2f %% (%7.3f ms, "
		       "%5.1f us per VM); ratio %.3f\n",
		       n, c_new, ms_new, ms_new * 1e3 / n, c_old, ms_old, ms_old * 1e3 / n,
		       c_new / c_old);
	}
	for (unsigned i = 0; i < have; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

/* ---- section 4: the watch (policy.events) against the poll ----
 *
 * 1000 registered "VMs" as in section 3, as vmactd's runners read them
 * with the defaults: with the watch, each VM's reading (smp_read, for its
 * load averages) and, unless it is hot, its window (smp_watch_read) every
 * metrics interval (5 s), and the windows of hot VMs as the ring buffer
 * brings them; the baseline in the same run, the poll: every VM read every
 * policy tick (50 ms) with its vCPU totals (smp_read_with_vcpus). Each VM's
 * vCPUs are allowed 2 CPUs at the policy's target 0.9. Idle: the VMs of
 * section 3. Busy 10 %: a tenth of them run their two vCPUs flat out for
 * 1 s in every 3 s (phases spread), so that they go hot, are decided on
 * and go cool again, 33 times a second over the host. The cost is the
 * reading thread's CPU time (syscalls and the BPF programs they run
 * included) and, for the watch, the run time of its kernel timers, in % of
 * one core; and the decision's delay: from the instant a busy run covered
 * the up window (the end of the window the VM's timer closed there) to the
 * reader's handling of it, with the reader scheduled as vmactd's loop is
 * with the defaults (waiting and dispatching windows in SCHED_FIFO at
 * policy.events_priority 1, its slow rounds in SCHED_OTHER with a 0.1 ms
 * slice: base/sched.h) and, as its baseline, once more in SCHED_OTHER with
 * that slice all the time (policy.events_priority 0). */
#define WATCH_TICK_MS    50
#define WATCH_SLOW_MS    5000
#define WATCH_BUSY_ON_MS 1000
#define WATCH_BUSY_OF_MS 2000
#define WATCH_MAX_DELAYS 100000

static volatile int *busy_flags; /* shared with the VMs: 1 = spin now */

static void *cycling_vcpu(void *arg)
{
	int k = (int)(intptr_t)arg;
	struct timespec nap = { 0, SLEEP_MS * 1000000L };
	char name[16];

	struct sched_param sp = { 0 };
	bool busy = false;

	snprintf(name, sizeof(name), "CPU %d/TCG", k % VM_VCPUS);
	prctl(PR_SET_NAME, name);
	for (;;) {
		/* Runnable all the time it is busy, but at SCHED_IDLE, out of
		 * everybody's way: a hundred busy VMs on this small host would
		 * otherwise starve the reader (the poll would read less than
		 * it is asked to) and make every idle VM wait for a CPU. */
		if (busy != (busy_flags[k / VM_VCPUS] != 0)) {
			busy = !busy;
			sched_setscheduler(0, busy ? SCHED_IDLE : SCHED_OTHER, &sp);
		}
		if (busy)
			spin_us(1000);
		else {
			spin_us(SPIN_US);
			nanosleep(&nap, NULL);
		}
	}
	return NULL;
}

struct watch_run {
	unsigned n;
	bool busy;
	bool rt; /* the reader waits in SCHED_FIFO (sched) */
	struct vmact_sched sched;
	double *delays_ms, *woken_ms;
	double t_woken; /* when the reader's poll last returned */
	unsigned ndelays, windows, hot_now;
	bool *hot;
	unsigned rounds, rounds_due; /* the poll's rounds done, and due in the span */
	uint64_t deferred;           /* windows the ring had no room for, sent later */
	/* Where the tail is: decisions later than 5 ms, and those of them
	 * taken during a slow round (the reader reading every VM) or within
	 * 50 ms of its end. */
	bool in_slow;
	double slow_end;
	unsigned late, late_near_slow;
};

static void on_watch_window(void *owner, const char *name, const struct smp_window *w, void *data)
{
	struct watch_run *wr = data;
	unsigned i = (unsigned)(uintptr_t)owner;

	wr->windows++;
	if (w->kind == SMP_WINDOW_BEFORE || w->kind == SMP_WINDOW_HOT)
		wr->hot[i] = true;
	if (w->kind == SMP_WINDOW_COOL)
		wr->hot[i] = false;
	if (w->exact && wr->ndelays < WATCH_MAX_DELAYS) {
		double now = mono_s();

		wr->delays_ms[wr->ndelays] = (now - (double)w->at / 1e9) * 1e3;
		wr->woken_ms[wr->ndelays] = (wr->t_woken - (double)w->at / 1e9) * 1e3;
		if (wr->delays_ms[wr->ndelays] > 5.0) {
			wr->late++;
			wr->late_near_slow += wr->in_slow || now - wr->slow_end < 0.05;
		}
		wr->ndelays++;
	}
}

/* Flips the busy tenth's flags by the clock: on for 1 s in every 3 s. */
static void drive_busy(unsigned n, double t0)
{
	double now = mono_s() - t0;

	for (unsigned i = 0; i < n; i += 10) {
		double phase = (double)(i / 10) * 3.0 / ((n + 9) / 10);
		double at = now + phase;
		double in = at - 3.0 * (double)(long)(at / 3.0);

		busy_flags[i] = in < WATCH_BUSY_ON_MS / 1000.0;
	}
}

/* The hypervisor's steal over the whole machine (/proc/stat), in s: this
 * host may itself be a guest, and a reader whose CPU was taken away waits
 * whatever its slice. */
static double steal_s(void)
{
	unsigned long long st = 0;
	FILE *f = fopen("/proc/stat", "r");

	if (f) {
		if (fscanf(f, "cpu %*u %*u %*u %*u %*u %*u %*u %llu", &st) != 1)
			st = 0;
		fclose(f);
	}
	return (double)st / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct smp_sampler *watch_sampler(const pid_t *kids, unsigned n, bool watch)
{
	struct smp_config cfg = { .watch_tick_ms = watch ? WATCH_TICK_MS : 0 };
	struct smp_watch_params p = { .allowance_milli = VM_VCPUS * 1000,
				      .target_permille = 900,
				      .up_window_ns = 200 * 1000000ULL,
				      .cool_ns = 1000 * 1000000ULL };
	struct smp_sampler *s = bench_sampler(&cfg);
	struct vmact_err err = { 0 };

	if (watch && smp_watch_reason(s))
		die("the watch did not load: %s", smp_watch_reason(s));
	for (unsigned i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "busy-vm-%u", i);
		if (smp_register(s, name, kids[i], NULL, &err) < 0)
			die("smp_register: %s", err.msg);
		if (watch && smp_watch_vm(s, name, &p, (void *)(uintptr_t)i, &err) < 0)
			die("smp_watch_vm: %s", err.msg);
	}
	return s;
}

/* One figure: the reader's CPU in % of a core over window_s (at least two
 * slow rounds), the watch's kernel time in *kernel_pct. */
static double watch_cost(struct watch_run *wr, const pid_t *kids, bool watch, double *kernel_pct)
{
	struct smp_sampler *s = watch_sampler(kids, wr->n, watch);
	double span = window_s < 10 ? 10 : window_s;
	double t0 = mono_s(), c0, c1, next_slow, next_tick, end;
	uint64_t k0 = 0, k1 = 0, runs, lost;
	struct vmact_err err = { 0 };
	struct pollfd pfd = { .fd = smp_watch_fd(s), .events = POLLIN };

	memset(wr->hot, 0, wr->n * sizeof(*wr->hot));
	wr->ndelays = wr->windows = wr->rounds = 0;
	wr->late = wr->late_near_slow = 0;
	wr->in_slow = false;
	wr->slow_end = 0;
	wr->rounds_due = (unsigned)(span * 1000.0 / WATCH_TICK_MS);
	if (watch)
		smp_watch_cost(s, &k0, &runs, &lost);
	c0 = thread_cpu_s();
	next_slow = next_tick = mono_s();
	end = next_slow + span;
	while (mono_s() < end) {
		double now = mono_s(), wake;

		if (wr->busy)
			drive_busy(wr->n, t0);
		if (!watch && now >= next_tick) {
			for (unsigned i = 0; i < wr->n; i++) {
				char name[32];

				snprintf(name, sizeof(name), "busy-vm-%u", i);
				tick_vm(s, name);
			}
			wr->rounds++;
			next_tick += WATCH_TICK_MS / 1000.0;
			/* A round that came late is not made up for. */
			if (next_tick < mono_s())
				next_tick = mono_s();
		}
		if (watch && now >= next_slow) {
			wr->in_slow = true;
			for (unsigned i = 0; i < wr->n; i++) {
				struct smp_reading r;
				struct smp_window w;
				char name[32];
				bool hot;

				snprintf(name, sizeof(name), "busy-vm-%u", i);
				if (smp_read(s, name, &r, &err) < 0 ||
				    smp_watch_read(s, name, &w, &hot, &err) < 0)
					die("%s: %s", name, err.msg);
				/* vmactd's loop takes the ring buffer first
				 * between two VMs' readings (its priority). */
				if (i % 16 == 15) {
					wr->t_woken = mono_s();
					smp_watch_dispatch(s, on_watch_window, wr);
				}
			}
			next_slow += WATCH_SLOW_MS / 1000.0;
			wr->in_slow = false;
			wr->slow_end = mono_s();
		}
		wake = watch ? next_slow : next_tick;
		if (wr->busy && wake > mono_s() + 0.05)
			wake = mono_s() + 0.05; /* drive_busy's resolution */
		now = mono_s();
		if (watch) {
			int ms = wake > now ? (int)((wake - now) * 1e3) + 1 : 0;

			if (wr->rt && vmact_sched_wait(&wr->sched) < 0)
				die("SCHED_FIFO: %s", strerror(errno));
			if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
				die("poll: %s", strerror(errno));
			wr->t_woken = mono_s();
			smp_watch_dispatch(s, on_watch_window, wr);
			/* All else (the slow rounds' readings, the busy
			 * tenth's flags every 50 ms: vmactd's loop wakes
			 * about as often for its timers, libvirt and its
			 * clients) in SCHED_OTHER, as vmactd's loop. */
			if (wr->rt && vmact_sched_work(&wr->sched) < 0)
				die("SCHED_OTHER: %s", strerror(errno));
		} else if (wake > now) {
			usleep((useconds_t)((wake - now) * 1e6));
		}
	}
	c1 = thread_cpu_s();
	if (watch) {
		smp_watch_cost(s, &k1, &runs, &lost);
		wr->deferred = lost;
	}
	*kernel_pct = (double)(k1 - k0) / 1e9 / span * 100.0;
	smp_close(s);
	for (unsigned i = 0; i < wr->n; i++)
		busy_flags[i] = 0;
	return (c1 - c0) / span * 100.0;
}

/* The synthetic VMs' own CPU cgroup, as machine.slice holds QEMU on a
 * systemd host while vmactd sits in system.slice: the scheduler then
 * weighs the reader against the VMs as one group, not against each of
 * their 2000 threads. cgroup v2's root where it has the controllers, else
 * v1's cpu hierarchy. Empty when neither could be made (the figures are
 * then of one flat group, and the line says so). */
static char vm_slice[128];

static void vm_slice_make(const pid_t *kids, unsigned n)
{
	const char *root = "/sys/fs/cgroup";
	char procs[160];
	FILE *f;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
		f = fopen("/sys/fs/cgroup/cgroup.subtree_control", "w");
		if (f) {
			fputs("+cpu", f); /* systemd has it on already */
			fclose(f);
		}
	} else {
		root = "/sys/fs/cgroup/cpu";
	}
	snprintf(vm_slice, sizeof(vm_slice), "%s/vmact-bench-vms.%d", root, (int)getpid());
	if (mkdir(vm_slice, 0755) < 0) {
		fprintf(stderr, "sampler-bench: mkdir %s: %s\n", vm_slice, strerror(errno));
		vm_slice[0] = 0;
		return;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", vm_slice);
	for (unsigned i = 0; i < n; i++) {
		f = fopen(procs, "w");
		if (!f || fprintf(f, "%d\n", (int)kids[i]) < 0 || fclose(f) != 0) {
			fprintf(stderr, "sampler-bench: %s: %s\n", procs, strerror(errno));
			die("could not move VM %u into its cgroup", i);
		}
	}
}

/* After the VMs were reaped. */
static void vm_slice_remove(void)
{
	if (vm_slice[0] && rmdir(vm_slice) < 0)
		fprintf(stderr, "sampler-bench: rmdir %s: %s\n", vm_slice, strerror(errno));
	vm_slice[0] = 0;
}

static void watch_section(void)
{
	static pid_t kids[1000];
	const unsigned n = 1000;
	struct watch_run wr = { .n = n };
	double idle_w, idle_k, idle_p, busy_w, busy_k, busy_p, ign;
	unsigned windows, ndelays, late, late_near;
	uint64_t deferred;
	int64_t slice_us;
	double stolen;
	int sr;

	busy_flags = mmap(NULL, n * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);
	wr.delays_ms = calloc(WATCH_MAX_DELAYS, sizeof(double));
	wr.woken_ms = calloc(WATCH_MAX_DELAYS, sizeof(double));
	wr.hot = calloc(n, sizeof(bool));
	if (busy_flags == MAP_FAILED || !wr.delays_ms || !wr.hot)
		die("out of memory");
	for (unsigned i = 0; i < n; i++)
		kids[i] = spawn_vm(cycling_vcpu, (int)i * VM_VCPUS); /* busy_flags[i] */
	vm_slice_make(kids, n);
	usleep(500000); /* the threads name themselves */
	/* The reader scheduled as vmactd's loop is (the VMs, forked before,
	 * keep the defaults). */
	sr = vmact_sched_init(&wr.sched, 1, VMACT_SLICE_MIN_USEC);
	if (sr < 0)
		printf("watch: the reader cannot wait in SCHED_FIFO: %s\n", strerror(-sr));
	wr.rt = sr == 0;
	if (!wr.rt && (sr = vmact_slice_set(VMACT_SLICE_MIN_USEC)) < 0)
		printf("watch: the reader's slice could not be set: %s\n", strerror(-sr));
	slice_us = vmact_slice_get();
	printf("watch: VMs in %s\n", vm_slice[0] ? vm_slice : "the bench's own cgroup");
	printf("watch: %u VMs of 2 vCPUs (allowance 2 CPUs, target 0.9), at least %d s per "
	       "figure; reader's CPU and the watch's kernel timers, %% of one core\n",
	       n, window_s < 10 ? 10 : window_s);
	idle_w = watch_cost(&wr, kids, true, &idle_k);
	windows = wr.windows;
	idle_p = watch_cost(&wr, kids, false, &ign);
	printf("watch idle     %4u VMs: watch %6.3f %% (reader) + %6.3f %% (kernel) = %6.3f %%; "
	       "poll every %d ms (baseline) %6.2f %% in %u rounds of %u; windows sent %u; "
	       "ratio: %.3f\n",
	       n, idle_w, idle_k, idle_w + idle_k, WATCH_TICK_MS, idle_p, wr.rounds, wr.rounds_due,
	       windows, (idle_w + idle_k) / idle_p);
	/* What each idle VM costs at this count: make bench-footprint's
	 * figure past the guests a 2-CPU host can boot. */
	printf("cpu_per_idle_vm_pct_%uvm: %.5f\n", n, (idle_w + idle_k) / n);
	wr.busy = true;
	stolen = steal_s();
	busy_w = watch_cost(&wr, kids, true, &busy_k);
	stolen = steal_s() - stolen;
	windows = wr.windows;
	deferred = wr.deferred;
	ndelays = wr.ndelays;
	late = wr.late;
	late_near = wr.late_near_slow;
	busy_p = watch_cost(&wr, kids, false, &ign);
	wr.ndelays = ndelays;
	wr.late = late;
	wr.late_near_slow = late_near;
	printf("watch busy 10%% %4u VMs: watch %6.3f %% (reader) + %6.3f %% (kernel) = %6.3f %%; "
	       "poll every %d ms (baseline) %6.2f %% in %u rounds of %u; windows sent %u "
	       "(%" PRIu64 " deferred by a full ring); ratio: %.3f\n",
	       n, busy_w, busy_k, busy_w + busy_k, WATCH_TICK_MS, busy_p, wr.rounds, wr.rounds_due,
	       windows, deferred, (busy_w + busy_k) / busy_p);
	if (wr.ndelays) {
		double p99;

		qsort(wr.delays_ms, wr.ndelays, sizeof(double), cmp_double);
		qsort(wr.woken_ms, wr.ndelays, sizeof(double), cmp_double);
		printf("watch reader woken after the up window was covered: p50 %.3f ms, p99 %.3f "
		       "ms\n",
		       wr.woken_ms[wr.ndelays / 2], wr.woken_ms[wr.ndelays * 99 / 100]);
		printf("watch decision after the up window was covered (reader waiting in %s, "
		       "slice %lld us): %u decisions, p50 %.3f ms, p99 %.3f ms, max %.3f ms (%.2f s "
		       "stolen by the hypervisor meanwhile)\n",
		       wr.rt ? "SCHED_FIFO 1" : "SCHED_OTHER", (long long)slice_us, wr.ndelays,
		       wr.delays_ms[wr.ndelays / 2], wr.delays_ms[wr.ndelays * 99 / 100],
		       wr.delays_ms[wr.ndelays - 1], stolen);
		printf("watch decisions over 5 ms: %u, %u of them during a slow round (the reader "
		       "reading every VM) or within 50 ms of its end\n",
		       wr.late, wr.late_near_slow);
		p99 = wr.delays_ms[wr.ndelays * 99 / 100];
		/* The baseline: the reader in SCHED_OTHER all the time, with
		 * the same slice (policy.events_priority 0). */
		wr.rt = false;
		vmact_sched_work(&wr.sched);
		watch_cost(&wr, kids, true, &ign);
		if (wr.ndelays) {
			qsort(wr.delays_ms, wr.ndelays, sizeof(double), cmp_double);
			printf("watch decision with the reader in SCHED_OTHER (slice %lld us, "
			       "baseline): %u decisions, p50 %.3f ms, p99 %.3f ms, max %.3f ms; p99 "
			       "ratio: %.2f\n",
			       (long long)slice_us, wr.ndelays, wr.delays_ms[wr.ndelays / 2],
			       wr.delays_ms[wr.ndelays * 99 / 100], wr.delays_ms[wr.ndelays - 1],
			       p99 / wr.delays_ms[wr.ndelays * 99 / 100]);
		}
	} else {
		printf("watch decision: no busy run reached the up window inside a tick\n");
	}
	for (unsigned i = 0; i < n; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	vm_slice_remove();
	free(wr.delays_ms);
	free(wr.woken_ms);
	free(wr.hot);
}

static bool want(int argc, char **argv, const char *section)
{
	if (argc <= 2)
		return true;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], section))
			return true;
	return false;
}

/* Section 1; returns vmact ns/event / runqlat ns/event. */
static double events_cost(void)
{
	struct tool tools[2] = { { .name = "vmact" }, { .name = "runqlat" } };
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF };
	struct vmact_err err = { 0 };
	struct smp_sampler *s = NULL;
	uint64_t c0[2], n0[2];
	struct smp_reading r;
	uint32_t ids[MAX_IDS];
	char root[64];
	pid_t pp, rq;
	int stats_fd, n;
	double ns[2];

	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		die("cannot enable BPF run-time statistics: %s", strerror(errno));

	snprintf(root, sizeof(root), "/sys/fs/bpf/vmact-bench-%d", (int)getpid());
	cfg.pin_root = root;
	if (smp_open(&cfg, &s, &err) < 0)
		die("smp_open: %s", err.msg);
	n = smp_prog_ids(s, ids, MAX_IDS);
	json_t *progs = bpftool_progs(), *p;
	size_t i;
	json_array_foreach(progs, i, p) {
		uint32_t id = (uint32_t)json_integer_value(json_object_get(p, "id"));
		const char *name = json_string_value(json_object_get(p, "name"));

		/* The scheduler hooks only (wake-up and switch); the
		 * iterators run per registration and per readout, not per
		 * event. */
		for (int k = 0; k < n; k++)
			if (ids[k] == id && name &&
			    (strstr(name, "wake") || strstr(name, "switch")))
				tools[0].ids[tools[0].n++] = id;
	}
	json_decref(progs);

	pp = spawn_pingpong();
	usleep(200000);
	if (smp_register(s, "bench-pingpong", pp, NULL, &err) < 0)
		die("smp_register: %s", err.msg);
	rq = start_runqlat(&tools[1]);
	sleep(1);

	snapshot(tools, 2);
	for (int k = 0; k < 2; k++)
		c0[k] = tools[k].run_cnt, n0[k] = tools[k].run_ns;
	if (smp_read(s, "bench-pingpong", &r, &err) < 0)
		die("smp_read: %s", err.msg);
	sleep((unsigned)window_s);
	snapshot(tools, 2);
	if (smp_read(s, "bench-pingpong", &r, &err) < 0)
		die("smp_read: %s", err.msg);

	/* The same load from a process that is not a VM: what every other
	 * event on a host costs vmact (one hash lookup per task). */
	uint64_t b_cnt[2], b_ns[2];
	if (smp_unregister(s, "bench-pingpong", &err) < 0)
		die("smp_unregister: %s", err.msg);
	snapshot(tools, 2);
	for (int k = 0; k < 2; k++)
		b_cnt[k] = tools[k].run_cnt, b_ns[k] = tools[k].run_ns;
	sleep((unsigned)window_s);
	snapshot(tools, 2);
	for (int k = 0; k < 2; k++)
		b_cnt[k] = tools[k].run_cnt - b_cnt[k], b_ns[k] = tools[k].run_ns - b_ns[k];
	/* Back to the first window's totals for the report below. */
	for (int k = 0; k < 2; k++)
		tools[k].run_cnt -= b_cnt[k], tools[k].run_ns -= b_ns[k];

	kill(rq, SIGINT);
	waitpid(rq, NULL, 0);
	kill(pp, SIGKILL);
	waitpid(pp, NULL, 0);
	smp_close(s);
	close(stats_fd);

	printf("load: 2 threads ping-ponging over pipes (registered as a VM), %d s window\n",
	       window_s);
	printf("pingpong VM: %" PRIu64 " wakeups/s, %" PRIu64 " switches/s, load %.3f, cpu %.3f\n",
	       (uint64_t)(r.wakeups / r.interval_s), (uint64_t)(r.switches / r.interval_s), r.load,
	       r.cpu_util);
	for (int k = 0; k < 2; k++) {
		uint64_t cnt = tools[k].run_cnt - c0[k], tns = tools[k].run_ns - n0[k];

		if (cnt == 0)
			die("%s: no events counted", tools[k].name);
		ns[k] = (double)tns / (double)cnt;
		printf("%-8s %zu programs: %" PRIu64 " events (%.0f/s), %.1f ns/event\n",
		       tools[k].name, tools[k].n, cnt, (double)cnt / window_s, ns[k]);
	}
	for (int k = 0; k < 2; k++)
		if (b_cnt[k])
			printf("%-8s same load, not a registered VM: %.1f ns/event\n",
			       tools[k].name, (double)b_ns[k] / (double)b_cnt[k]);

	return ns[0] / ns[1];
}

int main(int argc, char **argv)
{
	static const unsigned sizes[] = { 1, 100, 1000 };
	static const unsigned ts_sizes[] = { 1, 100 };
	double ratio = 0;

	if (argc > 1)
		window_s = atoi(argv[1]);
	if (window_s < 1 || window_s > 600)
		die("window: 1..600 seconds");
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (want(argc, argv, "events"))
		ratio = events_cost();
	if (want(argc, argv, "readout")) {
		readout_cost(SMP_BACKEND_BPF, "bpf", sizes, ARRAY_SIZE(sizes));
		readout_cost(SMP_BACKEND_TASKSTATS, "taskstats", ts_sizes, ARRAY_SIZE(ts_sizes));
	}
	if (want(argc, argv, "policy"))
		policy_rate(sizes, ARRAY_SIZE(sizes));
	if (want(argc, argv, "watch"))
		watch_section();
	if (want(argc, argv, "events"))
		printf("ratio: %.3f\n", ratio);
	return 0;
}
