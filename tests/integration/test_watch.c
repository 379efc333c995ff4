/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests of the watch (sampler.h, "The watch"; watch.bpf.c)
 * against real BPF, as root: a process whose threads are named as QEMU
 * names vCPU threads ("CPU <n>/TCG") stands for a VM, and the test makes
 * its vCPUs spin or sleep. What is checked is what the kernel side
 * promises, whatever else the machine runs: a spinning thread is runnable
 * at every instant, on a CPU or not, so its windows are busy on a busy host
 * too; a sleeping one is not.
 *  - an idle VM sends nothing; its window is read on the caller's clock;
 *  - the first busy window sends the stretch before it and itself, the
 *    busy run is closed the moment it reaches the up window (by the
 *    deadline timer, not the tick), windows
 *    follow while it is busy, and it goes cool, with one window that says
 *    so, once below the mark for cool_ns;
 *  - threads that are not vCPUs never make a VM hot;
 *  - a VM unregistered (its slot reused) sends nothing more under its name;
 *  - many VMs are watched at once, and only the busy one sends (or one
 *    whose vCPUs waited for a CPU: contended);
 *  - a full ring buffer defers windows, never loses one;
 *  - a VM's watch held (its lock word taken, as by vmactd's set or close
 *    while a timer's pass comes): the pass leaves the VM for a later one,
 *    vmactd's set and close answer busy, and all goes on once it is free;
 *  - without the watch the sampler says why (the fallback's reason). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>

#include "base/time.h"
#include "bpf/sampler.h"

#define TICK_MS   50
#define UP_NS     (200 * 1000000ULL)
#define COOL_NS   (500 * 1000000ULL)
#define MAX_VCPUS 4
#define MAX_WINS  65536

/* Shared with the forked "VM": what each of its threads does. */
struct vm_board {
	volatile int spin[MAX_VCPUS]; /* 1: spin, 0: sleep 20 ms at a time */
	volatile int named;           /* threads named */
};

struct vm {
	pid_t pid;
	struct vm_board *b;
};

struct rec {
	char name[32];
	struct smp_window w;
};

struct fixture {
	char pin_root[128];
	struct smp_sampler *s;
	struct vm vms[2];
	struct rec recs[MAX_WINS];
	unsigned n;
};

static void *vcpu_thread(void *arg)
{
	struct vm_board *b = *(struct vm_board **)arg;
	int i = (int)(intptr_t)((void **)arg)[1];
	const struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
	char name[32];
	volatile unsigned sink = 0;

	if (i >= 0)
		snprintf(name, sizeof(name), "CPU %d/TCG", i % MAX_VCPUS);
	else
		snprintf(name, sizeof(name), "worker");
	prctl(PR_SET_NAME, name);
	__atomic_add_fetch(&b->named, 1, __ATOMIC_SEQ_CST);
	if (i < 0)
		i = MAX_VCPUS - 1;
	for (;;) {
		if (b->spin[i])
			sink++;
		else
			nanosleep(&ts, NULL);
	}
	return NULL;
}

/* A process with vcpus threads named "CPU n/TCG" (and, with io, one more
 * named "worker" driven by the last spin flag), all asleep. */
static void spawn_vm(struct vm *vm, int vcpus, bool io)
{
	static void *args[MAX_VCPUS + 1][2];
	int n = vcpus + (io ? 1 : 0);

	vm->b = mmap(NULL, sizeof(*vm->b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	assert_true(vm->b != MAP_FAILED);
	memset((void *)vm->b, 0, sizeof(*vm->b));
	vm->pid = fork();
	assert_true(vm->pid >= 0);
	if (vm->pid == 0) {
		/* Never outlives a test that failed half-way. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < n; i++) {
			pthread_t t;

			args[i][0] = vm->b;
			args[i][1] = (void *)(intptr_t)(i < vcpus ? i : -1);
			if (pthread_create(&t, NULL, vcpu_thread, args[i]))
				_exit(1);
		}
		for (;;)
			pause();
	}
	while (__atomic_load_n(&vm->b->named, __ATOMIC_SEQ_CST) < n)
		usleep(1000);
}

static void kill_vm(struct vm *vm)
{
	if (vm->pid > 0) {
		kill(vm->pid, SIGKILL);
		waitpid(vm->pid, NULL, 0);
	}
	vm->pid = 0;
	if (vm->b)
		munmap(vm->b, sizeof(*vm->b));
	vm->b = NULL;
}

static struct smp_sampler *open_sampler(struct fixture *f, unsigned tick_ms)
{
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF,
				  .pin_root = f->pin_root,
				  .watch_tick_ms = tick_ms };
	struct vmact_err err = { 0 };
	struct smp_sampler *s = NULL;

	if (smp_open(&cfg, &s, &err) < 0)
		fail_msg("smp_open: %s", err.msg);
	return s;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->pin_root, sizeof(f->pin_root), "/sys/fs/bpf/vmact-watch-%d", (int)getpid());
	f->s = open_sampler(f, TICK_MS);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(f->vms) / sizeof(f->vms[0]); i++)
		kill_vm(&f->vms[i]);
	smp_close(f->s);
	free(f);
	return 0;
}

static void watch(struct fixture *f, const char *name, struct vm *vm, uint32_t allowance)
{
	struct smp_watch_params p = { .allowance_milli = allowance,
				      .target_permille = 900,
				      .up_window_ns = UP_NS,
				      .cool_ns = COOL_NS };
	struct vmact_err err = { 0 };

	if (smp_register(f->s, name, vm->pid, NULL, &err) < 0)
		fail_msg("smp_register: %s", err.msg);
	if (smp_watch_vm(f->s, name, &p, vm, &err) < 0)
		fail_msg("smp_watch_vm: %s", err.msg);
}

static void collect(void *owner, const char *name, const struct smp_window *w, void *data)
{
	struct fixture *f = data;

	if (f->n >= MAX_WINS)
		fail_msg("more than %d windows", MAX_WINS);
	snprintf(f->recs[f->n].name, sizeof(f->recs[f->n].name), "%s", name);
	f->recs[f->n].w = *w;
	assert_non_null(owner);
	f->n++;
}

/* Waits on the watch's fd for up to limit_s and dispatches what comes,
 * until stop(f) (NULL: the whole time). */
static void pump(struct fixture *f, double limit_s, bool (*stop)(struct fixture *))
{
	uint64_t end = vmact_now_usec() + (uint64_t)(limit_s * 1e6);
	struct pollfd pfd = { .fd = smp_watch_fd(f->s), .events = POLLIN };

	assert_true(pfd.fd >= 0);
	while (vmact_now_usec() < end) {
		int r = poll(&pfd, 1, 20);

		assert_true(r >= 0 || errno == EINTR);
		assert_true(smp_watch_dispatch(f->s, collect, f) >= 0);
		if (stop && stop(f))
			return;
	}
}

static bool got_cool(struct fixture *f)
{
	return f->n && f->recs[f->n - 1].w.kind == SMP_WINDOW_COOL;
}

static bool got_cool_or_none(struct fixture *f)
{
	return !f->n || got_cool(f);
}

static bool got_hot(struct fixture *f)
{
	for (unsigned i = 0; i < f->n; i++)
		if (f->recs[i].w.kind == SMP_WINDOW_HOT)
			return true;
	return false;
}

static unsigned count_for(const struct fixture *f, const char *name)
{
	unsigned n = 0;

	for (unsigned i = 0; i < f->n; i++)
		n += !strcmp(f->recs[i].name, name);
	return n;
}

/* name's windows, if any, came only because its vCPUs waited for CPUs
 * others held (a busy host: a 20 ms nap's wake-up can wait most of a
 * tick), never from its own load: each first busy window is mostly
 * waiting. */
static void assert_only_contended(const struct fixture *f, const char *name)
{
	for (unsigned i = 0; i < f->n; i++) {
		const struct smp_window *x = &f->recs[i].w;

		if (strcmp(f->recs[i].name, name) || x->kind != SMP_WINDOW_HOT)
			continue;
		if (x->delay_ns * 4 < x->runnable_ns)
			fail_msg("%s went hot on its own load (%.1f ms, runnable %.1f ms, waiting "
				 "%.1f ms)",
				 name, x->len / 1e6, x->runnable_ns / 1e6, x->delay_ns / 1e6);
	}
}

static void test_idle_sends_nothing(void **state)
{
	struct fixture *f = *state;
	struct smp_window w;
	struct vmact_err err = { 0 };
	uint64_t ns0, runs0, lost, ns1, runs1;
	bool hot = true;

	spawn_vm(&f->vms[0], 2, false);
	watch(f, "idle", &f->vms[0], 2000);
	assert_int_equal(smp_watch_cost(f->s, &ns0, &runs0, &lost), 0);
	/* Its threads wake every 20 ms: scheduler events, none of them
	 * busy. */
	pump(f, 2.0, NULL);
	assert_only_contended(f, "idle");
	/* Cool again (if it was hot at all). */
	pump(f, 5.0, got_cool_or_none);
	f->n = 0;
	if (smp_watch_read(f->s, "idle", &w, &hot, &err) < 0)
		fail_msg("smp_watch_read: %s", err.msg);
	assert_false(hot);
	assert_int_equal(w.kind, SMP_WINDOW_SLOW);
	assert_true(w.runnable_ns < w.len / 2);
	/* The whole stretch since its last window, in one. */
	pump(f, 2.0, NULL);
	if (smp_watch_read(f->s, "idle", &w, &hot, &err) < 0)
		fail_msg("smp_watch_read: %s", err.msg);
	if (!hot && !f->n)
		assert_true(w.len >= 2000000000ULL);
	assert_true(w.delay_ns <= w.runnable_ns);
	/* The kernel's tick ran meanwhile. */
	assert_int_equal(smp_watch_cost(f->s, &ns1, &runs1, &lost), 0);
	assert_true(runs1 > runs0);
	assert_int_equal(lost, 0);
}

static void test_busy_hot_then_cool(void **state)
{
	struct fixture *f = *state;
	struct vmact_err err = { 0 };
	struct smp_window w;
	uint64_t run = 0, lead = 0;
	unsigned first = 0, windows = 0, i;
	bool hot = false, reached = false;

	spawn_vm(&f->vms[0], 1, false);
	watch(f, "busy", &f->vms[0], 1000);
	pump(f, 0.3, NULL);
	assert_int_equal(f->n, 0);
	f->vms[0].b->spin[0] = 1;
	pump(f, 3.0, NULL);
	/* Hot: the stretch before, then the first busy window. */
	assert_true(f->n >= 3);
	for (first = 0; first < f->n && f->recs[first].w.kind != SMP_WINDOW_BEFORE; first++)
		;
	assert_true(first + 1 < f->n);
	assert_int_equal(f->recs[first + 1].w.kind, SMP_WINDOW_HOT);
	/* Nothing but this VM's windows, in order, each starting where the
	 * one before ended. */
	for (i = first; i < f->n; i++) {
		const struct smp_window *x = &f->recs[i].w;

		assert_string_equal(f->recs[i].name, "busy");
		if (i > first) {
			assert_int_equal(x->seq, f->recs[i - 1].w.seq + 1);
			assert_int_equal(x->at - x->len, f->recs[i - 1].w.at);
		}
		assert_true(x->delay_ns <= x->runnable_ns);
	}
	/* The busy part of the stretch before, as the policy's lead. */
	w = f->recs[first].w;
	lead = w.runnable_ns < w.len ? w.runnable_ns : w.len;
	/* The run reaches the up window at the end of a window, never
	 * inside one: the watch closed a window there. */
	for (i = first + 1; i < f->n && !reached; i++) {
		const struct smp_window *x = &f->recs[i].w;

		windows++;
		/* A spinning thread is runnable throughout. */
		assert_true(x->runnable_ns * 10 >= x->len * 9);
		assert_true(x->runnable_now >= 1);
		run += x->len;
		if (run + lead >= UP_NS) {
			reached = true;
			/* Where the run would have passed the up window
			 * inside a tick, the deadline timer closed the
			 * window at the mark; only a first busy window
			 * that covers it with its lead is the tick's. */
			if (x->kind != SMP_WINDOW_HOT && !x->exact)
				fail_msg("window %u (seq %" PRIu64 ") covered the up window "
					 "%.1f ms late, closed by the tick",
					 i, x->seq, (double)(run + lead - UP_NS) / 1e6);
		}
	}
	assert_true(reached);
	printf("# busy: up window covered after %u window(s), %.1f ms past the mark\n", windows,
	       (double)(run + lead - UP_NS) / 1e6);
	/* Still hot: no slow window. */
	if (smp_watch_read(f->s, "busy", &w, &hot, &err) < 0)
		fail_msg("smp_watch_read: %s", err.msg);
	assert_true(hot);

	/* Stopped: cool after cool_ns below the mark, then nothing. */
	f->vms[0].b->spin[0] = 0;
	pump(f, 5.0, got_cool);
	assert_true(got_cool(f));
	assert_int_equal(f->recs[f->n - 1].w.runnable_now, 0);
	i = f->n;
	pump(f, 1.0, NULL);
	assert_int_equal(f->n, i);
	if (smp_watch_read(f->s, "busy", &w, &hot, &err) < 0)
		fail_msg("smp_watch_read: %s", err.msg);
	assert_false(hot);
	/* The slow window starts where the cool one ended. */
	assert_int_equal(w.at - w.len, f->recs[i - 1].w.at);
}

static void test_not_vcpus(void **state)
{
	struct fixture *f = *state;

	/* One vCPU asleep, and a "worker" thread spinning. */
	spawn_vm(&f->vms[0], 1, true);
	watch(f, "io", &f->vms[0], 1000);
	f->vms[0].b->spin[MAX_VCPUS - 1] = 1;
	pump(f, 1.5, NULL);
	assert_only_contended(f, "io");
}

static void test_unregistered(void **state)
{
	struct fixture *f = *state;
	struct vmact_err err = { 0 };
	unsigned n;

	spawn_vm(&f->vms[0], 1, false);
	watch(f, "gone", &f->vms[0], 1000);
	f->vms[0].b->spin[0] = 1;
	pump(f, 2.0, NULL);
	assert_true(count_for(f, "gone") >= 2);
	assert_int_equal(smp_unregister(f->s, "gone", &err), 0);
	n = f->n;
	pump(f, 1.0, NULL);
	assert_int_equal(f->n, n);
	/* Another VM in its slot is judged afresh: idle, silent. */
	spawn_vm(&f->vms[1], 1, false);
	watch(f, "next", &f->vms[1], 1000);
	pump(f, 1.0, NULL);
	assert_only_contended(f, "next");
	assert_int_equal(f->n, n + count_for(f, "next"));
}

/* Many VMs watched at once, one of them busy: every one is taken (the
 * kernel sets up nothing per VM that can run out), and the others send
 * only while their vCPUs wait for a CPU. */
#define MANY 200

static void test_many(void **state)
{
	struct fixture *f = *state;
	struct vm *vms = calloc(MANY, sizeof(*vms));
	char name[32];

	assert_non_null(vms);
	for (int i = 0; i < MANY; i++) {
		spawn_vm(&vms[i], 1, false);
		snprintf(name, sizeof(name), "many-%d", i);
		watch(f, name, &vms[i], 1000);
	}
	vms[MANY - 7].b->spin[0] = 1;
	pump(f, 2.0, NULL);
	snprintf(name, sizeof(name), "many-%d", MANY - 7);
	assert_true(count_for(f, name) >= 2);
	for (int i = 0; i < MANY; i++) {
		char other[32];

		snprintf(other, sizeof(other), "many-%d", i);
		if (i != MANY - 7)
			assert_only_contended(f, other);
	}
	for (int i = 0; i < MANY; i++)
		kill_vm(&vms[i]);
	free(vms);
}

/* A ring buffer vmactd has not read for a while fills: what does not fit
 * stays open in the kernel and goes out at a later tick, longer. No window
 * is lost: every VM's windows still follow each other end to start. */
#define FLOOD 100

static void test_full_ring_defers(void **state)
{
	struct fixture *f = *state;
	struct vm *vms = calloc(FLOOD, sizeof(*vms));
	uint64_t ns, runs, deferred = 0;
	char name[32];

	assert_non_null(vms);
	for (int i = 0; i < FLOOD; i++) {
		spawn_vm(&vms[i], 1, false);
		snprintf(name, sizeof(name), "flood-%d", i);
		watch(f, name, &vms[i], 1000);
	}
	for (int i = 0; i < FLOOD; i++)
		vms[i].b->spin[0] = 1;
	/* Nobody reads until the ring has had to defer. */
	for (int i = 0; i < 600 && !deferred; i++) {
		usleep(50000);
		assert_int_equal(smp_watch_cost(f->s, &ns, &runs, &deferred), 0);
	}
	assert_true(deferred > 0);
	pump(f, 1.0, NULL);
	for (int i = 0; i < FLOOD; i++)
		vms[i].b->spin[0] = 0;
	pump(f, 1.0, NULL);
	for (int v = 0; v < FLOOD; v++) {
		const struct smp_window *prev = NULL;

		snprintf(name, sizeof(name), "flood-%d", v);
		for (unsigned i = 0; i < f->n; i++) {
			const struct smp_window *x = &f->recs[i].w;

			if (strcmp(f->recs[i].name, name))
				continue;
			if (prev) {
				assert_int_equal(x->seq, prev->seq + 1);
				assert_int_equal(x->at - x->len, prev->at);
			}
			prev = x;
		}
		assert_non_null(prev);
	}
	printf("# full ring: %" PRIu64 " windows deferred, %u received, none lost\n", deferred,
	       f->n);
	for (int i = 0; i < FLOOD; i++)
		kill_vm(&vms[i]);
	free(vms);
}

/* The fd of this process's map named name (the sampler's own: the test
 * opens one), -1 when there is none. */
static int own_map(const char *name)
{
	char path[64], link[64];

	for (int fd = 3; fd < 1024; fd++) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (strcmp(link, "anon_inode:bpf-map") ||
		    bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
			continue;
		if (!strcmp(info.name, name))
			return fd;
	}
	return -1;
}

/* Sets every slot's lock word (the first 32 bits of watch.bpf.c's struct
 * watch) to v. */
static void hold_all(int map, uint32_t v)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	unsigned char *val;

	assert_int_equal(bpf_obj_get_info_by_fd(map, &info, &len), 0);
	val = malloc(info.value_size);
	assert_non_null(val);
	for (uint32_t k = 0; k < info.max_entries; k++) {
		assert_int_equal(bpf_map_lookup_elem(map, &k, val), 0);
		memcpy(val, &v, sizeof(v));
		assert_int_equal(bpf_map_update_elem(map, &k, val, BPF_ANY), 0);
	}
	free(val);
}

static void test_held_watch(void **state)
{
	struct fixture *f = *state;
	struct smp_watch_params p = { .allowance_milli = 1000,
				      .target_permille = 900,
				      .up_window_ns = UP_NS,
				      .cool_ns = COOL_NS };
	struct vmact_err err = { 0 };
	uint64_t ns, runs0, runs1, d0, d1;
	struct smp_window w;
	int map = own_map("vmact_watch");
	bool hot;

	assert_true(map >= 0);
	spawn_vm(&f->vms[0], 1, false);
	if (smp_register(f->s, "held", f->vms[0].pid, NULL, &err) < 0)
		fail_msg("smp_register: %s", err.msg);
	/* Held before it is watched: the set answers busy, in time. */
	hold_all(map, 1);
	assert_int_equal(smp_watch_vm(f->s, "held", &p, &f->vms[0], &err), -EBUSY);
	printf("# held: %s\n", err.msg);
	hold_all(map, 0);
	vmact_err_reset(&err);
	if (smp_watch_vm(f->s, "held", &p, &f->vms[0], &err) < 0)
		fail_msg("smp_watch_vm: %s", err.msg);
	/* Watched and held: each pass leaves it (counted as deferred), and
	 * the slow clock's read answers busy. */
	assert_int_equal(smp_watch_cost(f->s, &ns, &runs0, &d0), 0);
	hold_all(map, 1);
	do {
		usleep(TICK_MS * 1000);
		assert_int_equal(smp_watch_cost(f->s, &ns, &runs1, &d1), 0);
	} while (runs1 < runs0 + 3);
	assert_true(d1 >= d0 + 2);
	assert_int_equal(smp_watch_read(f->s, "held", &w, &hot, &err), -EBUSY);
	/* Free again: its windows come as before. */
	hold_all(map, 0);
	vmact_err_reset(&err);
	if (smp_watch_read(f->s, "held", &w, &hot, &err) < 0)
		fail_msg("smp_watch_read: %s", err.msg);
	if (!hot) {
		assert_int_equal(w.kind, SMP_WINDOW_SLOW);
		assert_true(w.delay_ns <= w.runnable_ns);
	}
	f->vms[0].b->spin[0] = 1;
	pump(f, 5.0, got_hot);
	assert_true(count_for(f, "held") > 0);
}

static void test_fallback_reason(void **state)
{
	struct fixture *f = *state;
	struct smp_sampler *s;
	struct smp_config cfg = { .backend = SMP_BACKEND_TASKSTATS };
	struct smp_watch_params p = { .allowance_milli = 1000, .target_permille = 900 };
	struct vmact_err err = { 0 };

	/* The daemon's own sampler has it. */
	assert_null(smp_watch_reason(f->s));
	/* Not asked for. */
	snprintf(f->pin_root, sizeof(f->pin_root), "/sys/fs/bpf/vmact-watch2-%d", (int)getpid());
	s = open_sampler(f, 0);
	assert_non_null(smp_watch_reason(s));
	assert_int_equal(smp_watch_fd(s), -1);
	spawn_vm(&f->vms[0], 1, false);
	assert_true(smp_register(s, "x", f->vms[0].pid, NULL, &err) >= 0);
	assert_int_equal(smp_watch_vm(s, "x", &p, NULL, &err), -EOPNOTSUPP);
	printf("# without the watch: %s\n", err.msg);
	smp_close(s);
	/* taskstats */
	if (smp_open(&cfg, &s, &err) < 0)
		fail_msg("smp_open: %s", err.msg);
	assert_non_null(smp_watch_reason(s));
	printf("# taskstats: %s\n", smp_watch_reason(s));
	smp_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_idle_sends_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_hot_then_cool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_vcpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unregistered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_ring_defers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallback_reason, setup, teardown),
	};

	if (geteuid() != 0) {
		printf("test_watch: needs root (BPF)\n");
		return 77;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
