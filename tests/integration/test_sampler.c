/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests of the load sampler against real BPF, taskstats and
 * cgroups (run as root). Ground truth: a process with K threads that spin
 * without ever blocking has exactly K runnable threads at every instant,
 * whatever else the machine runs, so its sampled load must be K. CPU
 * utilisation depends on the neighbours (other jobs share this machine), so
 * it is only checked against hard bounds: never above the CPUs or the
 * quota, and never above the load. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <systemd/sd-event.h>

#include <bpf/bpf.h>

#include "base/macro.h"
#include "base/time.h"
#include "bpf/sampler-types.h"
#include "bpf/sampler.h"

#define MEASURE_S    10
#define MAX_PROCS    4
#define MAX_SPINNERS 8

struct fixture {
	pid_t procs[MAX_PROCS];
	int nprocs;
	char cgroup[128];
	char pin_root[128];
	struct smp_sampler *s, *s2;
};

static volatile unsigned spin_sink;

/* Shared with the forked workload: each spinner records its tid once it is
 * inside its loop, so the parent knows which threads must be runnable. */
struct spin_board {
	int started;
	pid_t tids[MAX_SPINNERS];
};

static struct spin_board *board;
/* Thread names for the next workload (NULL: inherited). */
static const char *spin_names[MAX_SPINNERS], *nap_name;

static void *spin(void *arg)
{
	int i;

	/* One pass first: the first touches of the page (and under ASan its
	 * shadow) may fault and wait for the mm lock. */
	spin_sink++;
	i = __atomic_fetch_add(&board->started, 1, __ATOMIC_SEQ_CST);
	if (spin_names[i])
		prctl(PR_SET_NAME, spin_names[i]);
	__atomic_store_n(&board->tids[i], (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	for (;;)
		spin_sink++;
	return NULL;
}

static void *nap(void *arg)
{
	const struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };

	if (nap_name)
		prctl(PR_SET_NAME, nap_name);
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

static int nappers;

/* State letter of /proc/<pid>/task/<tid>/stat, or 0. */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *rp = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		rp = strrchr(buf, ')');
	fclose(f);
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* Whether the workload's main thread sleeps in pause() itself (not in some
 * start-up wait that ends in a wake-up later). */
static bool main_paused(pid_t pid)
{
#ifdef SYS_pause
	char path[64];
	int nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%d", &nr) != 1)
		nr = -1;
	fclose(f);
	if (nr != SYS_pause)
		return false;
#endif
	return thread_state(pid, pid) == 'S';
}

/* Forks a process with k spinning threads (its main thread sleeps) and
 * returns once the kernel shows exactly that: every spinner R, the main
 * thread S. Until then the ground truth is not K (a spinner still starting
 * up can wait for the mm lock in D, and the sampler rightly counts that as
 * not runnable). */
static pid_t spawn_busy(int k)
{
	int p[2];
	pid_t pid;
	char c;
	int i;

	assert_true(k <= MAX_SPINNERS);
	if (!board) {
		board = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(board != MAP_FAILED);
	}
	memset(board, 0, sizeof(*board));
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		for (i = 0; i < k; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, spin, NULL))
				_exit(1);
		}
		for (i = 0; i < nappers; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, nap, NULL))
				_exit(1);
		}
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	for (i = 0; i < 5000; i++) {
		bool ready = main_paused(pid) &&
			     __atomic_load_n(&board->started, __ATOMIC_SEQ_CST) == k;

		for (int j = 0; ready && j < k; j++) {
			pid_t tid = __atomic_load_n(&board->tids[j], __ATOMIC_SEQ_CST);

			ready = tid > 0 && thread_state(pid, tid) == 'R';
		}
		if (ready)
			break;
		usleep(1000);
	}
	if (i == 5000)
		fail_msg("workload %d: %d spinners did not all reach R within 5 s", (int)pid, k);
	return pid;
}

static void add_proc(struct fixture *f, pid_t pid)
{
	assert_true(f->nprocs < MAX_PROCS);
	f->procs[f->nprocs++] = pid;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->pin_root, sizeof(f->pin_root), "/sys/fs/bpf/vmact-smp-%d", (int)getpid());
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < f->nprocs; i++) {
		kill(f->procs[i], SIGKILL);
		waitpid(f->procs[i], NULL, 0);
	}
	smp_close(f->s);
	smp_close(f->s2);
	if (f->cgroup[0])
		rmdir(f->cgroup);
	free(f);
	return 0;
}

static struct smp_sampler *open_sampler(struct fixture *f, enum smp_backend b, bool raw)
{
	struct smp_config cfg = { .backend = b, .pin_root = f->pin_root, .force_raw_tp = raw };
	struct vmact_err err = { 0 };
	struct smp_sampler *s = NULL;
	int r = smp_open(&cfg, &s, &err);

	if (r < 0)
		fail_msg("smp_open: %s", err.msg);
	assert_int_equal(smp_backend_used(s), b);
	return s;
}

static int reg(struct smp_sampler *s, const char *name, pid_t pid, const char *cg)
{
	struct vmact_err err = { 0 };
	int r = smp_register(s, name, pid, cg, &err);

	if (r < 0)
		fail_msg("smp_register %s: %s", name, err.msg);
	return r;
}

static void rd(struct smp_sampler *s, const char *name, struct smp_reading *out)
{
	struct vmact_err err = { 0 };

	if (smp_read(s, name, out, &err) < 0)
		fail_msg("smp_read %s: %s", name, err.msg);
}

static void print_reading(const char *tag, const struct smp_reading *r)
{
	printf("  %-10s %.2fs load %.4f loadavg %.3f/%.3f/%.3f now %" PRId64 " oncpu %" PRId64
	       " util %.3f delay %.3f wakeups %" PRIu64 " switches %" PRIu64 " preempt %" PRIu64,
	       tag, r->interval_s, r->load, r->loadavg[0], r->loadavg[1], r->loadavg[2],
	       r->nr_runnable, r->nr_oncpu, r->cpu_util, r->delay_frac, r->wakeups, r->switches,
	       r->preemptions);
	if (r->recoveries)
		printf(" recovered %.3fs/%" PRIu64, r->recovered_ns / 1e9, r->recoveries);
	if (r->has_cpu_stat)
		printf(" periods %" PRIu64 " throttled %" PRIu64 " throttled_ns %" PRIu64,
		       r->nr_periods, r->nr_throttled, r->throttled_ns);
	printf("\n");
}

static void check_busy(const struct smp_reading *r, int k, double max_util)
{
	assert_true(r->interval_s >= MEASURE_S * 0.99);
	if (fabs(r->load - k) > 0.05 * k)
		fail_msg("load %.4f is not within 5%% of %d", r->load, k);
	if (fabs(r->loadavg[0] - k) > 0.05 * k)
		fail_msg("1-min loadavg %.4f is not within 5%% of %d", r->loadavg[0], k);
	assert_int_equal(r->nr_runnable, k);
	/* Hard bounds only: the neighbours decide the rest. */
	assert_true(r->cpu_util > 0.0);
	if (r->cpu_util > max_util)
		fail_msg("cpu_util %.3f above the bound %.3f", r->cpu_util, max_util);
	assert_true(r->oncpu_ns <= r->runnable_ns);
	assert_int_equal(r->delay_ns, r->runnable_ns - r->oncpu_ns);
}

static long ncpus(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

struct collect {
	struct smp_reading *r;
	int seen;
};

static void collect_cb(const char *name, const struct smp_reading *r, void *data)
{
	struct collect *c = data;
	int k;

	assert_int_equal(sscanf(name, "smp-k%d", &k), 1);
	assert_true(k >= 1 && k <= 3);
	c->r[k - 1] = *r;
	c->seen++;
}

/* K = 1, 2, 3 at once, as three VMs of one sampler. */
static void test_bpf_ground_truth(void **state, bool raw)
{
	struct fixture *f = *state;
	struct smp_reading r[3];
	char name[16];

	f->s = open_sampler(f, SMP_BACKEND_BPF, raw);
	for (int k = 1; k <= 3; k++) {
		add_proc(f, spawn_busy(k));
		snprintf(name, sizeof(name), "smp-k%d", k);
		reg(f->s, name, f->procs[k - 1], NULL);
	}
	sleep(MEASURE_S);
	if (raw) {
		for (int k = 1; k <= 3; k++) {
			snprintf(name, sizeof(name), "smp-k%d", k);
			rd(f->s, name, &r[k - 1]);
		}
	} else {
		/* One batched read of every VM, as the daemon does it. */
		struct vmact_err err = { 0 };
		struct collect c = { .r = r };

		if (smp_read_all(f->s, collect_cb, &c, &err) < 0)
			fail_msg("smp_read_all: %s", err.msg);
		assert_int_equal(c.seen, 3);
	}
	for (int k = 1; k <= 3; k++) {
		snprintf(name, sizeof(name), "smp-k%d", k);
		print_reading(name, &r[k - 1]);
	}
	for (int k = 1; k <= 3; k++)
		check_busy(&r[k - 1], k, fmin(k, (double)ncpus()) * 1.01);
}

static void test_bpf_busy_threads(void **state)
{
	test_bpf_ground_truth(state, false);
}

static void test_bpf_raw_tp_busy_threads(void **state)
{
	test_bpf_ground_truth(state, true);
}

/* Every VM in one shared entry of the tgid table (a table of one entry),
 * beside a busy process of no VM whose events meet that entry too: each
 * VM's load is still exactly its K (vmact_vms answers for the entry), the
 * neighbour's threads count for none of them, and a VM that leaves the
 * entry leaves the others counted. On a real host only the VMs whose QEMU
 * pids meet in the table take this path (bpf/sampler-types.h). */
static void test_bpf_shared_entry(void **state)
{
	struct fixture *f = *state;
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF,
				  .pin_root = f->pin_root,
				  .tgid_table_entries = 1 };
	struct vmact_err err = { 0 };
	struct smp_reading r1, r2;

	if (smp_open(&cfg, &f->s, &err) < 0)
		fail_msg("smp_open: %s", err.msg);
	add_proc(f, spawn_busy(1)); /* the neighbour, never registered */
	add_proc(f, spawn_busy(1));
	add_proc(f, spawn_busy(2));
	reg(f->s, "shared-k1", f->procs[1], NULL);
	reg(f->s, "shared-k2", f->procs[2], NULL);
	sleep(MEASURE_S);
	rd(f->s, "shared-k1", &r1);
	rd(f->s, "shared-k2", &r2);
	print_reading("shared-k1", &r1);
	print_reading("shared-k2", &r2);
	check_busy(&r1, 1, 1.01);
	check_busy(&r2, 2, fmin(2, (double)ncpus()) * 1.01);
	assert_int_equal(smp_unregister(f->s, "shared-k1", &err), 0);
	sleep(MEASURE_S);
	rd(f->s, "shared-k2", &r2);
	print_reading("shared-k2", &r2);
	check_busy(&r2, 2, fmin(2, (double)ncpus()) * 1.01);
	/* Not a power of two: refused, naming the rule. */
	cfg.tgid_table_entries = 3;
	cfg.pin_root = "/sys/fs/bpf/vmact-smp-refused";
	assert_int_equal(smp_open(&cfg, &f->s2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "power of two"));
}

static void write_file(const char *dir, const char *file, const char *fmt, ...)
{
	char path[256], buf[64];
	va_list ap;
	int fd, n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	if (write(fd, buf, (size_t)n) != n)
		fail_msg("write %s: %s", path, strerror(errno));
	close(fd);
}

/* The host's stolen time so far, in seconds (/proc/stat's cpu line): this
 * machine is itself a guest. */
static double steal_s(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7])
		  : 0;

	if (f)
		fclose(f);
	if (n != 8)
		fail_msg("/proc/stat: no steal column");
	return (double)v[7] / (double)sysconf(_SC_CLK_TCK);
}

/* The same process under a 500m CFS quota: it still has K runnable threads
 * (demand), gets at most half a CPU, and the rest shows as run delay.
 * The quota is charged in the scheduler's task clock, which leaves out
 * the time a hypervisor stole from the CPU; the sampler's on-CPU time is
 * the time between switches, stolen time included. So the bound is the
 * quota's share (with 5 % for the windows' edges) plus what was stolen
 * meanwhile: a busy neighbour of this machine's own host made the
 * reading pass a bound of 0.525 on quiet runs (0.532, 0.536). */
static void test_bpf_quota(void **state)
{
	struct fixture *f = *state;
	struct smp_reading r0, r;
	const int k = 2;
	double st0, stolen, bound;

	snprintf(f->cgroup, sizeof(f->cgroup), "/sys/fs/cgroup/cpu/vmact-smp-%d", (int)getpid());
	if (mkdir(f->cgroup, 0755) < 0)
		fail_msg("mkdir %s: %s", f->cgroup, strerror(errno));
	write_file(f->cgroup, "cpu.cfs_period_us", "100000");
	write_file(f->cgroup, "cpu.cfs_quota_us", "50000");

	f->s = open_sampler(f, SMP_BACKEND_BPF, false);
	add_proc(f, spawn_busy(k));
	write_file(f->cgroup, "cgroup.procs", "%d", (int)f->procs[0]);
	reg(f->s, "smp-quota", f->procs[0], f->cgroup);
	st0 = steal_s();
	rd(f->s, "smp-quota", &r0);
	sleep(MEASURE_S);
	rd(f->s, "smp-quota", &r);
	stolen = steal_s() - st0;
	bound = 0.5 * 1.05 + stolen / r.interval_s;
	print_reading("smp-quota", &r);
	print_message("  bound %.3f (stolen %.3f s)\n", bound, stolen);

	check_busy(&r, k, bound);
	/* Throttled demand is run delay: at least the part above the quota. */
	if (r.delay_frac < (k - bound) / k)
		fail_msg("delay fraction %.3f below %.3f", r.delay_frac, (k - bound) / k);
	assert_true(r.has_cpu_stat);
	assert_true(r.nr_throttled > r0.nr_throttled);
	assert_true(r.throttled_ns > r0.throttled_ns);
	assert_true(r.nr_periods - r0.nr_periods >= MEASURE_S * 10 * 9 / 10);
	assert_int_equal(r.periods_delta, r.nr_periods - r0.nr_periods);
	assert_int_equal(r.throttled_delta, r.nr_throttled - r0.nr_throttled);
	assert_int_equal(r.throttled_ns_delta, r.throttled_ns - r0.throttled_ns);
	/* v1 sums throttled time over the CPUs' runqueues. */
	assert_true(r.throttled_ns_delta <= (uint64_t)(ncpus() * (r.interval_s + 0.2) * 1e9));
}

/* BPF and taskstats on the same workload at the same time. */
static void test_bpf_taskstats_agree(void **state)
{
	struct fixture *f = *state;
	struct smp_reading rb, rt;
	const int k = 2;

	f->s = open_sampler(f, SMP_BACKEND_BPF, false);
	f->s2 = open_sampler(f, SMP_BACKEND_TASKSTATS, false);
	assert_string_equal(smp_fallback_reason(f->s2), "taskstats forced by configuration");
	assert_null(smp_fallback_reason(f->s));
	add_proc(f, spawn_busy(k));
	reg(f->s, "smp-agree", f->procs[0], NULL);
	reg(f->s2, "smp-agree", f->procs[0], NULL);
	for (int i = 0; i < MEASURE_S; i++) {
		struct vmact_err err = { 0 };

		sleep(1);
		if (smp_poll(f->s2, &err) < 0)
			fail_msg("smp_poll: %s", err.msg);
	}
	rd(f->s, "smp-agree", &rb);
	rd(f->s2, "smp-agree", &rt);
	print_reading("bpf", &rb);
	print_reading("taskstats", &rt);
	/* Both registered with exactly K runnable threads (spawn_busy), so
	 * the averages start there and the exact load holds on both. */
	for (int b = 0; b < 2; b++) {
		const struct smp_reading *r = b ? &rt : &rb;
		const char *tag = b ? "taskstats" : "BPF";

		if (fabs(r->load - k) > 0.05 * k)
			fail_msg("%s load %.4f is not within 5%% of %d", tag, r->load, k);
		if (fabs(r->loadavg[0] - k) > 0.05 * k)
			fail_msg("%s 1-min loadavg %.4f is not within 5%% of %d", tag,
				 r->loadavg[0], k);
	}
	/* On-CPU time: a spinner alone on its CPU may not be switched for
	 * the whole interval, so this is only right if BPF knew it was on a
	 * CPU from the first event it saw (a seed, or a wake-up that found it
	 * still running). */
	if (fabs(rt.cpu_util - rb.cpu_util) > 0.10 * rt.cpu_util)
		fail_msg("taskstats util %.4f vs BPF %.4f: more than 10%% apart", rt.cpu_util,
			 rb.cpu_util);
	assert_int_equal(rt.nr_runnable, k);
	assert_int_equal(rt.nr_oncpu, -1);
}

/* Threads that block and wake: one spinner and two threads sleeping 20 ms
 * at a time. Only the spinner is known exactly; the sleepers add their
 * wake-to-run latency, so compare with the kernel's own accounting
 * (taskstats) of the same threads over the same interval. */
static void test_bpf_sleepers(void **state)
{
	struct fixture *f = *state;
	struct smp_reading rb, rt;

	f->s = open_sampler(f, SMP_BACKEND_BPF, false);
	f->s2 = open_sampler(f, SMP_BACKEND_TASKSTATS, false);
	nappers = 2;
	add_proc(f, spawn_busy(1));
	nappers = 0;
	reg(f->s, "smp-nap", f->procs[0], NULL);
	reg(f->s2, "smp-nap", f->procs[0], NULL);
	sleep(MEASURE_S);
	rd(f->s, "smp-nap", &rb);
	rd(f->s2, "smp-nap", &rt);
	print_reading("bpf", &rb);
	print_reading("taskstats", &rt);
	/* The spinner is always runnable; each sleeper adds its wait for a
	 * CPU after each wake-up, little on an idle host, much on a busy one
	 * (1.39 beside other work): what it adds is checked against the
	 * kernel's own accounting below, not against an idle host's. */
	if (rb.load < 0.95 || rb.load > 3.0)
		fail_msg("load %.4f outside [0.95, 3] for 1 spinner + 2 sleepers", rb.load);
	if (fabs(rt.load - rb.load) > 0.10 * rb.load)
		fail_msg("taskstats load %.4f vs BPF %.4f: more than 10%% apart", rt.load, rb.load);
	/* Each sleep ends in a wakeup; taskstats counts the voluntary
	 * switches that began them. */
	assert_true(rb.wakeups >= 2 * MEASURE_S * 1000 / 25);
	if (fabs((double)rt.wakeups - (double)rb.wakeups) > 0.10 * (double)rb.wakeups)
		fail_msg("wakeups: BPF %lu, taskstats %lu", (unsigned long)rb.wakeups,
			 (unsigned long)rt.wakeups);
	assert_true(rb.nr_runnable >= 1 && rb.nr_runnable <= 3);
}

/* A full thread table loses events, and says so instead of going quiet. */
static void test_bpf_task_map_full(void **state)
{
	struct fixture *f = *state;
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF,
				  .pin_root = f->pin_root,
				  .max_threads = 2 };
	struct vmact_err err = { 0 };
	struct smp_reading r;

	if (smp_open(&cfg, &f->s, &err) < 0)
		fail_msg("smp_open: %s", err.msg);
	add_proc(f, spawn_busy(4));
	reg(f->s, "smp-full", f->procs[0], NULL);
	sleep(1);
	rd(f->s, "smp-full", &r);
	print_reading("smp-full", &r);
	assert_true(r.untracked > 0);
	assert_true(r.nr_runnable <= 2);
	assert_true(r.load <= 2.0 + 1e-6);
}

static void *short_spin(void *arg)
{
	uint64_t t0 = vmact_now_usec();

	do
		spin_sink++;
	while (vmact_now_usec() - t0 < 300000);
	return NULL;
}

/* Threads of a process, from /proc (0: gone). */
static unsigned proc_threads(pid_t pid)
{
	char path[64];
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0;
	for (struct dirent *de; (de = readdir(d));)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* taskstats on the daemon's event loop: polls at poll_ms, and a thread that
 * exited between two polls keeps what it was seen doing. */
static void test_taskstats_event_loop(void **state)
{
	struct fixture *f = *state;
	struct smp_config cfg = { .backend = SMP_BACKEND_TASKSTATS, .poll_ms = 50 };
	struct vmact_err err = { 0 };
	sd_event *e = NULL;
	struct smp_reading r;
	uint64_t t0;
	int p[2];
	pid_t pid;
	char c;

	assert_int_equal(smp_open(&cfg, &f->s, &err), 0);
	assert_int_equal(sd_event_new(&e), 0);
	assert_int_equal(smp_attach_event(f->s, e, &err), 0);
	assert_int_equal(smp_attach_event(f->s, e, &err), -EBUSY);
	vmact_err_reset(&err);

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t th;

		close(p[1]);
		/* Wait for the go, then one thread spins 300 ms and exits. */
		if (read(p[0], &c, 1) != 1 || pthread_create(&th, NULL, short_spin, NULL) ||
		    pthread_join(th, NULL))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[0]);
	add_proc(f, pid);
	reg(f->s, "smp-loop", pid, NULL);
	assert_int_equal(write(p[1], "x", 1), 1);
	close(p[1]);

	/* The loop runs until the spinning thread has exited and three more
	 * polls came after that (60 s is only a safety limit). */
	{
		uint64_t polls0 = smp_polls(f->s), after = 0;
		bool started = false, gone = false;

		t0 = vmact_now_usec();
		while (vmact_now_usec() - t0 < 60000000ULL) {
			assert_true(sd_event_run(e, 100000) >= 0);
			if (!started)
				started = proc_threads(pid) == 2;
			else if (!gone && proc_threads(pid) == 1) {
				gone = true;
				after = smp_polls(f->s);
			}
			if (gone && smp_polls(f->s) >= after + 3)
				break;
		}
		assert_true(gone);
		assert_null(smp_poll_error(f->s));
		printf("  %lu polls in %.2f s at poll_ms 50\n",
		       (unsigned long)(smp_polls(f->s) - polls0), (vmact_now_usec() - t0) / 1e6);
		assert_true(smp_polls(f->s) >= after + 3);
		/* The timer paces the polls: never more often than poll_ms (a
		 * busy host can only make them rarer). */
		assert_true(vmact_now_usec() - t0 >= (smp_polls(f->s) - polls0 - 1) * 50000ULL);
	}

	rd(f->s, "smp-loop", &r);
	print_reading("smp-loop", &r);
	/* The thread is gone; its 300 ms of runnable time are not. */
	assert_int_equal(r.nr_runnable, 0);
	assert_true(r.runnable_ns >= 250000000ULL);
	smp_close(f->s);
	f->s = NULL;
	sd_event_unref(e);
}

static char *run_cmd(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!p)
		fail_msg("popen %s: %s", cmd, strerror(errno));
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, cap - len - 1, p);
		len += n;
	} while (n > 0);
	buf[len] = '\0';
	if (pclose(p) != 0)
		fail_msg("%s failed:\n%s", cmd, buf);
	return buf;
}

/* What an operator sees: bpftool prints the maps with their field names, and
 * the values add up to what the library reports. */
static void test_bpftool_inspect(void **state)
{
	struct fixture *f = *state;
	static const char *const fields[] = { "nr_runnable", "runnable_tsum", "nr_oncpu",
					      "oncpu_tsum",  "wakeups",       "switches",
					      "preemptions" };
	json_auto_t *stats = NULL, *vms = NULL, *progs = NULL;
	_cleanup_free_ char *out = NULL, *plain = NULL, *vmsout = NULL, *progout = NULL;
	char cmd[512];
	json_error_t jerr;
	json_t *e, *v;
	size_t i, j;
	int slot, seen_progs = 0;
	int64_t nr = 0;

	f->s = open_sampler(f, SMP_BACKEND_BPF, false);
	add_proc(f, spawn_busy(2));
	slot = reg(f->s, "smp-bpftool", f->procs[0], NULL);

	snprintf(cmd, sizeof(cmd), "bpftool map dump pinned %s/vmact_stats", f->pin_root);
	plain = run_cmd(cmd);
	for (i = 0; i < ARRAY_SIZE(fields); i++)
		if (!strstr(plain, fields[i]))
			fail_msg("field %s missing from `%s`:\n%.2000s", fields[i], cmd, plain);

	snprintf(cmd, sizeof(cmd), "bpftool -j map dump pinned %s/vmact_stats", f->pin_root);
	out = run_cmd(cmd);
	/* The *_tsum fields are u64 that wrap: beyond jansson's integers. */
	stats = json_loads(out, JSON_DECODE_INT_AS_REAL, &jerr);
	if (!stats)
		fail_msg("bpftool JSON: %s", jerr.text);
	json_array_foreach(stats, i, e) {
		json_t *fmt = json_object_get(e, "formatted");

		if (!fmt || json_number_value(json_object_get(fmt, "key")) != slot)
			continue;
		json_array_foreach(json_object_get(fmt, "values"), j, v) {
			json_t *val = json_object_get(v, "value");

			for (size_t k = 0; k < ARRAY_SIZE(fields); k++)
				if (!json_object_get(val, fields[k]))
					fail_msg("formatted value lacks %s", fields[k]);
			nr += (int64_t)json_number_value(json_object_get(val, "nr_runnable"));
		}
	}
	/* Two spinning threads are runnable right now. */
	assert_int_equal(nr, 2);

	snprintf(cmd, sizeof(cmd), "bpftool -j map dump pinned %s/vmact_vms", f->pin_root);
	vmsout = run_cmd(cmd);
	vms = json_loads(vmsout, 0, &jerr);
	assert_non_null(vms);
	assert_int_equal(json_array_size(vms), 1);
	e = json_object_get(json_array_get(vms, 0), "formatted");
	assert_int_equal(json_integer_value(json_object_get(e, "key")), f->procs[0]);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "value"), "slot")),
			 slot);

	/* The plain-number view of the last readout. */
	{
		struct smp_reading rr;
		_cleanup_free_ char *ro = NULL;
		json_auto_t *roj = NULL;
		json_t *val;

		usleep(500000);
		rd(f->s, "smp-bpftool", &rr);
		snprintf(cmd, sizeof(cmd),
			 "bpftool -j map lookup pinned %s/vmact_readout key %d 0 0 0", f->pin_root,
			 slot);
		ro = run_cmd(cmd);
		roj = json_loads(ro, 0, &jerr);
		if (!roj)
			fail_msg("bpftool JSON: %s\n%s", jerr.text, ro);
		val = json_object_get(json_object_get(roj, "formatted"), "value");
		if (!val)
			fail_msg("no formatted value in:\n%s", ro);
		assert_string_equal(json_string_value(json_object_get(val, "name")), "smp-bpftool");
		assert_int_equal(json_integer_value(json_object_get(val, "tgid")), f->procs[0]);
		assert_int_equal(json_integer_value(json_object_get(val, "nr_runnable")), 2);
		assert_int_equal(json_integer_value(json_object_get(val, "load_milli")),
				 (json_int_t)(rr.load * 1000 + 0.5));
		assert_true(labs((long)json_integer_value(json_object_get(val, "load_milli")) -
				 2000) <= 100);
		assert_non_null(json_object_get(val, "loadavg15_milli"));
	}

	progout = run_cmd("bpftool -j prog show");
	progs = json_loads(progout, 0, &jerr);
	assert_non_null(progs);
	json_array_foreach(progs, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));

		if (name && (!strcmp(name, "vmact_switch") || !strcmp(name, "vmact_wakeup") ||
			     !strcmp(name, "vmact_wake_new") || !strcmp(name, "vmact_seed")))
			seen_progs++;
	}
	/* Ours, at least (another sampler may be loaded too). */
	assert_true(seen_progs >= 4);
}

/* The readout of a VM past the first page of vmact_readout: the sampler maps
 * the map only as far as the slots in use (bpf/sampler-bpf.c, readout_map()),
 * so the fortieth VM's reading grows the mapping; bpftool reads it back
 * from the kernel's map, and it is zeroed when the VM goes. */
static json_t *readout_of(const struct fixture *f, int slot)
{
	char cmd[512];
	_cleanup_free_ char *out = NULL;
	json_error_t jerr;
	json_t *j, *val;

	snprintf(cmd, sizeof(cmd), "bpftool -j map lookup pinned %s/vmact_readout key %d 0 0 0",
		 f->pin_root, slot);
	out = run_cmd(cmd);
	j = json_loads(out, 0, &jerr);
	if (!j)
		fail_msg("bpftool JSON: %s\n%s", jerr.text, out);
	val = json_incref(json_object_get(json_object_get(j, "formatted"), "value"));
	json_decref(j);
	if (!val)
		fail_msg("no formatted value in:\n%s", out);
	return val;
}

static void test_readout_grows(void **state)
{
	struct fixture *f = *state;
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF,
				  .pin_root = f->pin_root,
				  .max_vms = 64 };
	enum { N = 40 };
	struct vmact_err err = { 0 };
	struct smp_reading r;
	pid_t kids[N];
	int slot = -1;
	json_t *val;

	assert_int_equal(smp_open(&cfg, &f->s, &err), 0);
	for (int i = 0; i < N; i++) {
		char name[32];

		kids[i] = fork();
		if (kids[i] == 0) {
			pause();
			_exit(0);
		}
		assert_true(kids[i] > 0);
		snprintf(name, sizeof(name), "ro-%d", i);
		slot = smp_register(f->s, name, kids[i], NULL, &err);
		if (slot < 0)
			fail_msg("smp_register %s: %s", name, err.msg);
	}
	/* 128-byte records: 32 to a page. */
	assert_true(slot >= 32);
	rd(f->s, "ro-0", &r);
	rd(f->s, "ro-39", &r);
	val = readout_of(f, slot);
	assert_string_equal(json_string_value(json_object_get(val, "name")), "ro-39");
	assert_int_equal(json_integer_value(json_object_get(val, "tgid")), kids[N - 1]);
	json_decref(val);
	assert_int_equal(smp_unregister(f->s, "ro-39", &err), 0);
	val = readout_of(f, slot);
	assert_string_equal(json_string_value(json_object_get(val, "name")), "");
	assert_int_equal(json_integer_value(json_object_get(val, "tgid")), 0);
	json_decref(val);
	/* The first page's VM is still there. */
	val = readout_of(f, 0);
	assert_string_equal(json_string_value(json_object_get(val, "name")), "ro-0");
	json_decref(val);
	for (int i = 0; i < N; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

/* Registration errors name the field; slots come back; pins go away on
 * close unless kept. */
static void test_registry(void **state)
{
	struct fixture *f = *state;
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF,
				  .pin_root = f->pin_root,
				  .max_vms = 2 };
	struct vmact_err err = { 0 };
	struct smp_reading r;
	char path[256];
	int r1;

	assert_int_equal(smp_open(&(struct smp_config){ .pin_root = "relative" }, &f->s, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "pin_root"));
	vmact_err_reset(&err);
	assert_int_equal(smp_open(&(struct smp_config){ .poll_ms = 1 }, &f->s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "poll_ms"));
	vmact_err_reset(&err);

	/* Pins must live on a bpffs: forced BPF fails naming it, AUTO falls
	 * back and says why. */
	assert_int_equal(smp_open(&(struct smp_config){ .backend = SMP_BACKEND_BPF,
							.pin_root = "/tmp/vmact-smp-nobpffs" },
				  &f->s, &err),
			 -ENOTDIR);
	assert_non_null(strstr(err.msg, "not on a bpffs"));
	vmact_err_reset(&err);
	assert_int_equal(smp_open(&(struct smp_config){ .pin_root = "/tmp/vmact-smp-nobpffs" },
				  &f->s, &err),
			 0);
	assert_int_equal(smp_backend_used(f->s), SMP_BACKEND_TASKSTATS);
	assert_non_null(strstr(smp_fallback_reason(f->s), "not on a bpffs"));
	smp_close(f->s);
	f->s = NULL;

	assert_int_equal(smp_open(&cfg, &f->s, &err), 0);
	add_proc(f, spawn_busy(1));
	add_proc(f, spawn_busy(1));
	add_proc(f, spawn_busy(1));

	assert_int_equal(smp_register(f->s, "", f->procs[0], NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "name"));
	vmact_err_reset(&err);
	assert_int_equal(smp_register(f->s, "a", 0, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "tgid"));
	vmact_err_reset(&err);
	assert_int_equal(smp_register(f->s, "a", 0x7ffffff0, NULL, &err), -ESRCH);
	vmact_err_reset(&err);
	{
		/* A thread id is not a process. */
		char taskdir[64];
		DIR *d;
		struct dirent *de;
		pid_t tid = 0;

		snprintf(taskdir, sizeof(taskdir), "/proc/%d/task", (int)f->procs[0]);
		d = opendir(taskdir);
		assert_non_null(d);
		while ((de = readdir(d)))
			if (atoi(de->d_name) > 0 && atoi(de->d_name) != f->procs[0])
				tid = atoi(de->d_name);
		closedir(d);
		assert_true(tid > 0);
		assert_int_equal(smp_register(f->s, "a", tid, NULL, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "is a thread of process"));
		vmact_err_reset(&err);
	}

	r1 = smp_register(f->s, "a", f->procs[0], NULL, &err);
	assert_true(r1 >= 0);
	assert_int_equal(smp_register(f->s, "a", f->procs[1], NULL, &err), -EEXIST);
	vmact_err_reset(&err);
	assert_int_equal(smp_register(f->s, "b", f->procs[0], NULL, &err), -EEXIST);
	vmact_err_reset(&err);
	assert_true(smp_register(f->s, "b", f->procs[1], NULL, &err) >= 0);
	assert_int_equal(smp_register(f->s, "c", f->procs[2], NULL, &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "max_vms"));
	vmact_err_reset(&err);
	assert_int_equal(smp_count(f->s), 2);

	/* A cgroup that does not exist is reported at readout, naming it. */
	assert_int_equal(smp_unregister(f->s, "a", &err), 0);
	assert_int_equal(smp_read(f->s, "a", &r, &err), -ENOENT);
	vmact_err_reset(&err);
	assert_true(smp_register(f->s, "c", f->procs[2], "/nonexistent/vmact-smp", &err) >= 0);
	assert_true(smp_read(f->s, "c", &r, &err) < 0);
	assert_non_null(strstr(err.msg, "/nonexistent/vmact-smp/cpu.stat"));
	vmact_err_reset(&err);
	assert_int_equal(smp_unregister(f->s, "c", &err), 0);
	assert_int_equal(smp_unregister(f->s, "c", &err), -ENOENT);
	vmact_err_reset(&err);

	/* The readout of "b" is unaffected by the churn around it. */
	usleep(300000);
	rd(f->s, "b", &r);
	assert_int_equal(r.nr_runnable, 1);
	assert_true(fabs(r.load - 1.0) < 0.05);

	/* The same process again under another name: its threads start from
	 * a clean state, not from what the first registration left. */
	assert_int_equal(smp_unregister(f->s, "b", &err), 0);
	assert_true(smp_register(f->s, "b-again", f->procs[1], NULL, &err) >= 0);
	usleep(300000);
	rd(f->s, "b-again", &r);
	assert_int_equal(r.nr_runnable, 1);
	assert_true(fabs(r.load - 1.0) < 0.05);

	snprintf(path, sizeof(path), "%s/vmact_stats", f->pin_root);
	assert_int_equal(access(path, F_OK), 0);
	smp_close(f->s);
	f->s = NULL;
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(f->pin_root, F_OK), -1);

	cfg.keep_pins = true;
	assert_int_equal(smp_open(&cfg, &f->s, &err), 0);
	smp_close(f->s);
	f->s = NULL;
	assert_int_equal(access(path, F_OK), 0);
	/* The next open starts from fresh maps and cleans up after itself. */
	cfg.keep_pins = false;
	assert_int_equal(smp_open(&cfg, &f->s, &err), 0);
	smp_close(f->s);
	f->s = NULL;
	assert_int_equal(access(path, F_OK), -1);
}

/* Per-thread split: each spinning thread is runnable the whole time. */
/* The kernel's own run time of a thread (/proc/<pid>/task/<tid>/schedstat,
 * first field, ns). */
static uint64_t kernel_run_ns(pid_t pid, pid_t tid)
{
	char path[96];
	unsigned long long run = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	fp = fopen(path, "re");
	if (!fp)
		fail_msg("open %s: %s", path, strerror(errno));
	if (fscanf(fp, "%llu", &run) != 1)
		fail_msg("parse %s", path);
	fclose(fp);
	return run;
}

/* The kernel's own figure of a process's runnable time: its threads' time
 * on a CPU and waiting for one (schedstat), summed. What a sampler's load
 * is the average of, from counters the sampler does not touch. */
static uint64_t kernel_runnable_ns(pid_t pid)
{
	char path[96];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	uint64_t sum = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		fail_msg("open %s: %s", path, strerror(errno));
	while ((e = readdir(d))) {
		unsigned long long run = 0, wait = 0;
		char stat[400];
		FILE *fp;

		if (e->d_name[0] == '.')
			continue;
		snprintf(stat, sizeof(stat), "%s/%s/schedstat", path, e->d_name);
		fp = fopen(stat, "re");
		if (!fp)
			continue; /* a thread that just ended */
		if (fscanf(fp, "%llu %llu", &run, &wait) == 2)
			sum += run + wait;
		fclose(fp);
	}
	return sum;
}

static void test_bpf_per_thread(void **state)
{
	struct fixture *f = *state;
	struct smp_thread th[16];
	struct vmact_err err = { 0 };
	uint64_t run0[MAX_SPINNERS];
	int n, spinning = 0;

	f->s = open_sampler(f, SMP_BACKEND_BPF, false);
	add_proc(f, spawn_busy(2));
	for (int i = 0; i < 2; i++)
		run0[i] = kernel_run_ns(f->procs[0], board->tids[i]);
	reg(f->s, "smp-threads", f->procs[0], NULL);
	sleep(2);
	n = smp_read_threads(f->s, "smp-threads", th, ARRAY_SIZE(th), &err);
	if (n < 0)
		fail_msg("smp_read_threads: %s", err.msg);
	for (int i = 0; i < n; i++) {
		printf("  tid %d %s runnable %d runnable %.3fs oncpu %.3fs delay %.3fs\n",
		       (int)th[i].tid, th[i].comm, th[i].runnable, th[i].runnable_ns / 1e9,
		       th[i].oncpu_ns / 1e9, th[i].delay_ns / 1e9);
		assert_int_equal(th[i].vcpu, -1);
		if (th[i].runnable) {
			int j = th[i].tid == board->tids[0] ? 0 : 1;
			double kern = (double)(kernel_run_ns(f->procs[0], th[i].tid) - run0[j]);

			assert_int_equal(th[i].tid, board->tids[j]);
			spinning++;
			assert_true(th[i].runnable_ns >= 1900000000ULL);
			assert_true(th[i].oncpu_ns <= th[i].runnable_ns);
			/* The kernel's figure also holds the moments between
			 * the two reads of it and registration/readout. */
			if (fabs((double)th[i].oncpu_ns - kern) > 0.03 * kern + 20e6)
				fail_msg("tid %d: BPF on-CPU %.3fs, kernel %.3fs", (int)th[i].tid,
					 th[i].oncpu_ns / 1e9, kern / 1e9);
		}
	}
	assert_int_equal(spinning, 2);
	/* No thread named like a vCPU: the vCPU totals are empty. */
	struct smp_vcpus v;
	if (smp_read_vcpus(f->s, "smp-threads", &v, &err) < 0)
		fail_msg("smp_read_vcpus: %s", err.msg);
	assert_int_equal(v.vcpus, 0);
	assert_int_equal(v.runnable_ns, 0);
}

/* A switch-in that never reached the hooks, staged: with the workload
 * stopped (no scheduler event touches its threads then), a spinner's sync
 * point is moved back by LOST_NS in the pinned vmact_tasks, exactly what a
 * thread that ran LOST_NS unseen looks like. The readout's task iterator must
 * report that time at once (per VM and per thread) and only once; when the
 * thread runs again its next switch recovers it into the integrals, and the
 * readouts must still not count it twice. */
#define LOST_NS 300000000ULL

static void lost_cb(const char *name, const struct smp_reading *r, void *data)
{
	if (!strcmp(name, "smp-lost"))
		*(struct smp_reading *)data = *r;
}

static void test_bpf_lost_switch(void **state)
{
	struct fixture *f = *state;
	struct smp_reading r0, r1, r2, r3;
	struct smp_thread th[16];
	struct vmact_err err = { 0 };
	char path[160];
	struct smp_task v;
	_cleanup_close_ int fd = -1;
	pid_t tid;
	bool found = false;
	int n, tries;

	f->s = open_sampler(f, SMP_BACKEND_BPF, false);
	/* Two VMs, so that smp_read_all takes its batched path, which runs
	 * the iterator once for all of them. */
	add_proc(f, spawn_busy(0));
	reg(f->s, "smp-idle", f->procs[0], NULL);
	add_proc(f, spawn_busy(1));
	tid = board->tids[0];
	reg(f->s, "smp-lost", f->procs[1], NULL);
	usleep(200000);
	assert_int_equal(kill(f->procs[1], SIGSTOP), 0);
	snprintf(path, sizeof(path), "%s/vmact_tasks", f->pin_root);
	fd = bpf_obj_get(path);
	assert_true(fd >= 0);
	for (tries = 0; tries < 500; tries++) {
		if (thread_state(f->procs[1], tid) == 'T' &&
		    bpf_map_lookup_elem(fd, &tid, &v) == 0 && !v.oncpu && !v.runnable)
			break;
		usleep(10000);
	}
	assert_true(tries < 500);
	assert_true(v.exec_ok);
	rd(f->s, "smp-lost", &r0);
	print_reading("stopped", &r0);

	v.exec_sync -= LOST_NS;
	assert_int_equal(bpf_map_update_elem(fd, &tid, &v, BPF_EXIST), 0);
	r1.interval_s = -1;
	if (smp_read_all(f->s, lost_cb, &r1, &err) < 0)
		fail_msg("smp_read_all: %s", err.msg);
	assert_true(r1.interval_s >= 0);
	print_reading("lost", &r1);
	assert_true(r1.oncpu_ns >= LOST_NS && r1.oncpu_ns < LOST_NS + 5000000);
	assert_true(r1.runnable_ns >= r1.oncpu_ns);
	n = smp_read_threads(f->s, "smp-lost", th, ARRAY_SIZE(th), &err);
	if (n < 0)
		fail_msg("smp_read_threads: %s", err.msg);
	for (int i = 0; i < n; i++) {
		if (th[i].tid != tid)
			continue;
		found = true;
		assert_true(th[i].oncpu_ns >= LOST_NS);
	}
	assert_true(found);
	rd(f->s, "smp-lost", &r2);
	print_reading("again", &r2);
	assert_true(r2.oncpu_ns < 5000000);

	/* The per-thread readout must not have consumed it either. */
	found = false;
	n = smp_read_threads(f->s, "smp-lost", th, ARRAY_SIZE(th), &err);
	for (int i = 0; i < n; i++)
		if (th[i].tid == tid) {
			found = true;
			assert_true(th[i].oncpu_ns >= LOST_NS);
		}
	assert_true(found);

	/* The wake-up recovers it into the integrals (as not runnable at
	 * the time, like the readouts said), so the load stays one thread's. */
	assert_int_equal(kill(f->procs[1], SIGCONT), 0);
	sleep(1);
	rd(f->s, "smp-lost", &r3);
	print_reading("resumed", &r3);
	assert_true(r3.recoveries >= 1);
	assert_true(r3.recovered_ns >= LOST_NS);
	assert_true(fabs(r3.load - 1.0) < 0.05);
	/* One spinner: at most one CPU's worth; LOST_NS again would be 1.3. */
	assert_true(r3.cpu_util <= 1.05);
	assert_true(r3.cpu_util >= 0.3);
}

static void read_both(struct smp_sampler *s, const char *name, struct smp_reading *r,
		      struct smp_vcpus *v)
{
	struct vmact_err err = { 0 }, verr = { 0 };
	int vrc = -1;

	if (smp_read_with_vcpus(s, name, r, v, &vrc, &verr, &err) < 0)
		fail_msg("smp_read_with_vcpus %s: %s", name, err.msg);
	if (vrc < 0)
		fail_msg("smp_read_with_vcpus %s: vCPUs: %s", name, verr.msg);
}

/* The one-call readout (readvm.bpf.c) against the task iterators, on the
 * same process at the same time: a sampler of each kind, a spinner named
 * like a QEMU vCPU thread, a sleeper named like another, a spinner that is
 * not a vCPU. Then a lost switch-in staged as in test_bpf_lost_switch:
 * the one-call readout must report it at once, in the VM's figures and in
 * the vCPU totals, and count it once. */
static void test_bpf_read_prog(void **state)
{
	struct fixture *f = *state;
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF, .no_read_prog = true };
	struct smp_reading r[2], r0, r1, r2;
	struct smp_vcpus v[2], v0, v1, v2;
	struct vmact_err err = { 0 };
	char root2[160], path[192];
	_cleanup_close_ int fd = -1;
	struct smp_task t;
	uint64_t k0, t0;
	double kload;
	pid_t tid;
	int tries;

	f->s = open_sampler(f, SMP_BACKEND_BPF, false);
	if (!smp_read_prog(f->s))
		skip(); /* a kernel without kfuncs in syscall programs */
	snprintf(root2, sizeof(root2), "%s-2", f->pin_root);
	cfg.pin_root = root2;
	if (smp_open(&cfg, &f->s2, &err) < 0)
		fail_msg("smp_open: %s", err.msg);
	assert_false(smp_read_prog(f->s2));

	nappers = 1;
	spin_names[0] = "CPU 0/TCG";
	nap_name = "CPU 1/TCG";
	add_proc(f, spawn_busy(2));
	nappers = 0;
	spin_names[0] = nap_name = NULL;
	tid = board->tids[0];

	k0 = kernel_runnable_ns(f->procs[0]);
	t0 = vmact_now_usec();
	reg(f->s, "prog", f->procs[0], NULL);
	reg(f->s2, "iter", f->procs[0], NULL);
	sleep(2);
	read_both(f->s, "prog", &r[0], &v[0]);
	read_both(f->s2, "iter", &r[1], &v[1]);
	/* The sleeper's wake-ups wait for a CPU on a busy host: the load is
	 * 2 on an idle one, more on a busy one, as much as the kernel's own
	 * counters say it was. */
	kload = (double)(kernel_runnable_ns(f->procs[0]) - k0) /
		((double)(vmact_now_usec() - t0) * 1000.0);
	printf("  kernel's schedstat: load %.3f\n", kload);
	for (int i = 0; i < 2; i++)
		printf("  %s: load %.3f cpu %.3f; vcpus %u runnable %.3fs oncpu %.3fs delay %.3fs\n",
		       i ? "iterators" : "one call ", r[i].load, r[i].cpu_util, v[i].vcpus,
		       v[i].runnable_ns / 1e9, v[i].oncpu_ns / 1e9, v[i].delay_ns / 1e9);
	for (int i = 0; i < 2; i++) {
		/* Two spinners and a sleeper: a load of at least 2 (the
		 * spinners), and what the kernel counted. */
		assert_true(r[i].load > 1.9);
		if (fabs(r[i].load - kload) > 0.1)
			fail_msg("%s: load %.3f, the kernel's schedstat %.3f",
				 i ? "iterators" : "one call", r[i].load, kload);
		assert_int_equal(v[i].vcpus, 2);
		assert_true(v[i].oncpu_ns <= v[i].runnable_ns);
		assert_int_equal(v[i].delay_ns, v[i].runnable_ns - v[i].oncpu_ns);
		/* The vCPU spinner was runnable all along, the other not. */
		assert_true(v[i].runnable_ns >= 1900000000ULL && v[i].runnable_ns < 3000000000ULL);
		/* At the reading the vCPU spinner wants a CPU: the load
		 * has not ended (the reactive policy's "ended"). */
		assert_true(v[i].runnable_now >= 1 && v[i].runnable_now <= 2);
	}
	/* Registered a moment apart and read a moment apart. */
	if (fabs((double)v[0].runnable_ns - (double)v[1].runnable_ns) >
	    0.02 * v[1].runnable_ns + 50e6)
		fail_msg("vCPU runnable: one call %.3fs, iterators %.3fs", v[0].runnable_ns / 1e9,
			 v[1].runnable_ns / 1e9);
	assert_true(fabs(r[0].load - r[1].load) < 0.05);

	/* The staged lost switch-in, in the one-call sampler's map. */
	assert_int_equal(kill(f->procs[0], SIGSTOP), 0);
	snprintf(path, sizeof(path), "%s/vmact_tasks", f->pin_root);
	fd = bpf_obj_get(path);
	assert_true(fd >= 0);
	for (tries = 0; tries < 500; tries++) {
		if (thread_state(f->procs[0], tid) == 'T' &&
		    bpf_map_lookup_elem(fd, &tid, &t) == 0 && !t.oncpu && !t.runnable)
			break;
		usleep(10000);
	}
	assert_true(tries < 500);
	assert_true(t.exec_ok);
	read_both(f->s, "prog", &r0, &v0);
	/* Every thread stopped: no vCPU runnable, whatever the window's
	 * average still shows. */
	assert_int_equal(v0.runnable_now, 0);
	t.exec_sync -= LOST_NS;
	assert_int_equal(bpf_map_update_elem(fd, &tid, &t, BPF_EXIST), 0);
	read_both(f->s, "prog", &r1, &v1);
	print_reading("lost", &r1);
	assert_true(r1.oncpu_ns >= LOST_NS && r1.oncpu_ns < LOST_NS + 5000000);
	assert_true(r1.runnable_ns >= r1.oncpu_ns);
	assert_true(v1.oncpu_ns >= v0.oncpu_ns + LOST_NS);
	assert_true(v1.runnable_ns >= v0.runnable_ns + LOST_NS);
	read_both(f->s, "prog", &r2, &v2);
	print_reading("again", &r2);
	assert_true(r2.oncpu_ns < 5000000);
	assert_true(v2.oncpu_ns >= v1.oncpu_ns && v2.oncpu_ns < v1.oncpu_ns + 5000000);
	assert_int_equal(kill(f->procs[0], SIGCONT), 0);
}

/* Without the capabilities BPF needs, AUTO falls back to taskstats and
 * says why; forcing BPF fails with the reason instead. */
static void test_auto_fallback(void **state)
{
	struct fixture *f = *state;
	int p[2];
	pid_t pid;
	char buf[600] = { 0 };
	int status;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct d[2];
		struct smp_config cfg = { .pin_root = f->pin_root };
		struct vmact_err err = { 0 };
		struct smp_sampler *s = NULL;
		const uint64_t drop = (1ULL << CAP_SYS_ADMIN) | (1ULL << CAP_BPF) |
				      (1ULL << CAP_PERFMON);
		int n;

		close(p[0]);
		if (syscall(SYS_capget, &h, d))
			_exit(2);
		for (int i = 0; i < 2; i++) {
			d[i].effective &= ~(uint32_t)(drop >> (32 * i));
			d[i].permitted &= ~(uint32_t)(drop >> (32 * i));
		}
		if (syscall(SYS_capset, &h, d))
			_exit(3);
		if (smp_open(&cfg, &s, &err) < 0) {
			n = snprintf(buf, sizeof(buf), "open failed: %s", err.msg);
		} else {
			n = snprintf(buf, sizeof(buf), "%d|%s", (int)smp_backend_used(s),
				     smp_fallback_reason(s) ? smp_fallback_reason(s) : "(null)");
			smp_close(s);
		}
		vmact_err_reset(&err);
		cfg.backend = SMP_BACKEND_BPF;
		if (smp_open(&cfg, &s, &err) == 0)
			_exit(4);
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "|%s", err.msg);
		if (write(p[1], buf, (size_t)n) != n)
			_exit(5);
		_exit(0);
	}
	close(p[1]);
	assert_true(read(p[0], buf, sizeof(buf) - 1) > 0);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	printf("  child: %s\n", buf);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(buf[0] == '0' + SMP_BACKEND_TASKSTATS);
	/* The reason is libbpf's, not a generic one. */
	assert_non_null(strstr(buf, "BPF"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_registry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpftool_inspect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readout_grows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auto_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_per_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_lost_switch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_read_prog, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_busy_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_raw_tp_busy_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_shared_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_quota, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_taskstats_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_sleepers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bpf_task_map_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_taskstats_event_loop, setup, teardown),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* VMACT_TEST_ONLY=NAME runs one test (cmocka's filter). */
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
