/* SPDX-License-Identifier: Apache-2.0 */
/* Per-VM load sampler.
 *
 * Tracks the threads of each registered QEMU process (by tgid, so cgroup v1
 * and v2 hosts behave the same) with eBPF programs on the scheduler
 * tracepoints, or, when BPF cannot be loaded, by polling taskstats over
 * generic netlink. Each readout of a VM covers the time since its previous
 * readout and reports:
 *  - load: the time-average number of its threads that were runnable
 *    (running or waiting for a CPU, including waiting because the cgroup
 *    quota throttled them), computed from the exact integral;
 *  - loadavg[3]: the kernel's 1/5/15-minute exponential averages of that
 *    count, advanced by the exact interval average (see loadavg.h);
 *  - CPU utilisation, run delay, wakeups, context switches;
 *  - the cgroup's cpu.stat throttling counters when a cgroup was given.
 * Library code: never prints; errors come back through struct vmact_err.
 * Not thread-safe: one sampler is used from one thread (the daemon's event
 * loop). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

enum smp_backend {
	SMP_BACKEND_AUTO = 0, /* BPF, else taskstats (reason recorded) */
	SMP_BACKEND_BPF,      /* BPF or fail */
	SMP_BACKEND_TASKSTATS,
};

struct smp_config {
	enum smp_backend backend;
	/* Directory on bpffs for the pinned maps; NULL: /sys/fs/bpf/vmact. */
	const char *pin_root;
	/* Leave the maps pinned after smp_close() (for post-mortem bpftool). */
	bool keep_pins;
	unsigned max_vms;     /* 0: 1024 */
	unsigned max_threads; /* 0: 32768, threads of all VMs together */
	bool no_per_thread;   /* BPF: skip the per-thread split */
	unsigned poll_ms;     /* taskstats poll period; 0: 1000 */
	bool force_raw_tp;    /* BPF: raw_tp hooks even where tp_btf works */
	/* BPF: read through the task iterators even where the one-call
	 * readout program loads (tests and the bench compare the two). */
	bool no_read_prog;
	/* BPF: the watch's tick in ms (policy.tick_ms; 0: no watch), see
	 * smp_watch_vm(). */
	unsigned watch_tick_ms;
	/* BPF, tests only: the tgid table's entries (a power of two, at most
	 * SMP_TGID_TABLE; 0: all of them). 1 puts every VM in one shared
	 * entry, the path a real host takes for the few VMs whose QEMU pids
	 * meet in the table. */
	unsigned tgid_table_entries;
};

struct smp_sampler;

/* Totals of one VM over one readout interval. */
struct smp_reading {
	double interval_s;
	double load;          /* mean runnable threads over the interval */
	double loadavg[3];    /* 1, 5, 15 min */
	int64_t nr_runnable;  /* runnable threads now */
	int64_t nr_oncpu;     /* threads on a CPU now; -1 with taskstats */
	double cpu_util;      /* CPUs used, mean over the interval */
	double delay_frac;    /* share of runnable time spent waiting */
	uint64_t runnable_ns; /* integral of the runnable count */
	uint64_t oncpu_ns;
	uint64_t delay_ns; /* runnable but not running */
	uint64_t wakeups, switches, preemptions;
	/* Scheduler events of VM threads not accounted because vmact_tasks
	 * (max_threads) was full; nonzero means the figures above are low. */
	uint64_t untracked;
	/* BPF: on-CPU time of switch-ins no event reported, recovered from
	 * the kernel's run time when the thread switched out (already in
	 * oncpu_ns), and how many times. Such time can belong to the interval
	 * before; oncpu_ns is capped at runnable_ns. */
	uint64_t recovered_ns, recoveries;
	/* Cumulative counters from the cgroup's cpu.stat, if one was given. */
	bool has_cpu_stat;
	uint64_t nr_periods, nr_throttled, throttled_ns;
	/* Their change over this interval (from the group's start if it was
	 * recreated, e.g. the VM restarted). */
	uint64_t periods_delta, throttled_delta, throttled_ns_delta;
};

/* Per-thread totals since registration (BPF backend with the per-thread
 * split, or taskstats). */
struct smp_thread {
	pid_t tid;
	char comm[16];
	int vcpu; /* N from a "CPU N/KVM" or "CPU N/TCG" name, else -1 */
	bool runnable;
	uint64_t runnable_ns; /* oncpu_ns + delay_ns */
	uint64_t oncpu_ns;
	uint64_t delay_ns;
};

int smp_open(const struct smp_config *cfg, struct smp_sampler **out, struct vmact_err *err);
void smp_close(struct smp_sampler *s);
enum smp_backend smp_backend_used(const struct smp_sampler *s);
/* Why the taskstats fallback was chosen, or NULL when BPF is in use. For
 * the caller to log. */
const char *smp_fallback_reason(const struct smp_sampler *s);
const char *smp_pin_root(const struct smp_sampler *s);

/* IDs of the loaded BPF programs (as `bpftool prog show` lists them);
 * returns how many, 0 with taskstats. */
int smp_prog_ids(const struct smp_sampler *s, uint32_t *ids, size_t max);

/* Registers a VM; cpu_cgroup is the directory holding its cpu.stat (v1 cpu
 * controller or v2), or NULL. Returns the slot (>= 0). The first readout
 * covers the time since registration. */
int smp_register(struct smp_sampler *s, const char *name, pid_t tgid, const char *cpu_cgroup,
		 struct vmact_err *err);
int smp_unregister(struct smp_sampler *s, const char *name, struct vmact_err *err);
int smp_find(const struct smp_sampler *s, const char *name); /* slot or -ENOENT */
unsigned smp_count(const struct smp_sampler *s);

int smp_read(struct smp_sampler *s, const char *name, struct smp_reading *out,
	     struct vmact_err *err);
int smp_read_slot(struct smp_sampler *s, int slot, struct smp_reading *out, struct vmact_err *err);
/* Reads every registered VM; cb gets the name and reading of each. */
int smp_read_all(struct smp_sampler *s,
		 void (*cb)(const char *name, const struct smp_reading *r, void *data), void *data,
		 struct vmact_err *err);

/* Per-thread split: fills up to max entries, returns how many. */
int smp_read_threads(struct smp_sampler *s, const char *name, struct smp_thread *out, size_t max,
		     struct vmact_err *err);

/* Totals since registration of a VM's vCPU threads (the threads named
 * "CPU N/..."), summed over the ones alive now: what the reactive policy
 * takes each tick. A vCPU thread that ends takes its share with it, so a
 * total can go down. */
struct smp_vcpus {
	unsigned vcpus;       /* vCPU threads seen */
	uint64_t runnable_ns; /* each thread's smp_thread figures, summed */
	uint64_t oncpu_ns;
	uint64_t delay_ns;
	/* vCPU threads runnable at the reading (running or waiting for a
	 * CPU): 0 when the guest has halted every vCPU. */
	unsigned runnable_now;
};

/* The VM's vCPU totals. With BPF one pass over the VM's threads only (the
 * readout program, else a task iterator; no /proc reads); otherwise the sum
 * of smp_read_threads(). */
int smp_read_vcpus(struct smp_sampler *s, const char *name, struct smp_vcpus *out,
		   struct vmact_err *err);

/* smp_read() and smp_read_vcpus() of one VM, what the reactive policy
 * takes each tick: with BPF on kernels that run the readout program
 * (smp_read_prog()) both at one instant in one syscall, else one after the
 * other. Returns smp_read()'s result; the vCPU totals' own result goes to
 * *vcpus_rc (0, or a negative errno with its message in vcpus_err). */
int smp_read_with_vcpus(struct smp_sampler *s, const char *name, struct smp_reading *out,
			struct smp_vcpus *vcpus, int *vcpus_rc, struct vmact_err *vcpus_err,
			struct vmact_err *err);
/* Whether readouts take one syscall per VM (the readout program loaded). */
bool smp_read_prog(const struct smp_sampler *s);

/* taskstats backend: polls every VM's threads (the daemon calls this every
 * smp_poll_ms(), e.g. from an sd-event timer). No-op with BPF. */
int smp_poll(struct smp_sampler *s, struct vmact_err *err);
unsigned smp_poll_ms(const struct smp_sampler *s);

/* Runs smp_poll() every poll_ms on the daemon's sd-event loop (taskstats
 * backend; BPF needs no polling), and puts the watch's ring buffer on it
 * (smp_watch_handler()). A failed poll does not
 * stop the timer: its message is kept for smp_poll_error(). The timer goes
 * away with smp_close(). */
typedef struct sd_event sd_event;
int smp_attach_event(struct smp_sampler *s, sd_event *e, struct vmact_err *err);
const char *smp_poll_error(const struct smp_sampler *s); /* NULL: last poll fine */
uint64_t smp_polls(const struct smp_sampler *s);         /* polls done so far */

/* The watch: the reactive policy's readouts of a VM's vCPU threads closed
 * in the kernel (watch.bpf.c), so that nobody polls an idle VM. The
 * kernel's tick (watch_tick_ms) judges each watched VM's window; a cool VM
 * sends nothing and its window runs on until smp_watch_read() (the
 * caller's slow clock) closes it; from its first busy window on (runnable
 * at least target x allowance) a VM is hot and every window it closes,
 * the stretch before the first one included, comes through smp_watch_fd()
 * until it has been below the mark for cool_ns; and a window closes the
 * instant the busy run reaches the up window. */
struct smp_watch_params {
	uint32_t allowance_milli; /* min(vCPUs, quota), milli-CPUs */
	uint32_t target_permille; /* the policy's target x 1000 */
	uint64_t up_window_ns;
	uint64_t cool_ns;
};

enum smp_window_kind {
	SMP_WINDOW_HOT_WINDOW = 1, /* a window of a hot VM */
	SMP_WINDOW_BEFORE,         /* the stretch before the first busy window */
	SMP_WINDOW_HOT,            /* the first busy window */
	SMP_WINDOW_COOL,           /* the window after which the VM is cool */
	SMP_WINDOW_SLOW,           /* closed by smp_watch_read() */
};

/* One window of a VM's vCPU threads: what struct act_cpu_window takes
 * from the sampler. */
struct smp_window {
	enum smp_window_kind kind;
	uint64_t seq;          /* the VM's windows in the order closed */
	uint64_t at;           /* end, CLOCK_MONOTONIC ns */
	uint64_t len;          /* ns */
	uint64_t runnable_ns;  /* vCPU threads on a CPU or waiting for one */
	uint64_t delay_ns;     /* of which waiting */
	unsigned runnable_now; /* vCPU threads runnable at `at` */
	/* Closed the instant the busy run met the up window (not by the
	 * tick): the window the policy can grow on. */
	bool exact;
};

/* NULL when the watch runs; else why not ("not asked for", the kernel's
 * refusal, the taskstats backend): the caller polls then. */
const char *smp_watch_reason(const struct smp_sampler *s);
/* Watches a registered VM by p, or changes p; from the first call its
 * windows start, handed over with owner (the caller's pointer for the VM,
 * valid until it unregisters the VM). -EOPNOTSUPP without the watch. */
int smp_watch_vm(struct smp_sampler *s, const char *name, const struct smp_watch_params *p,
		 void *owner, struct vmact_err *err);
/* A cool VM's window since its last one; *hot true instead when the VM is
 * hot (its windows come through smp_watch_fd()). */
int smp_watch_read(struct smp_sampler *s, const char *name, struct smp_window *out, bool *hot,
		   struct vmact_err *err);
/* The fd to wait on (readable: windows to dispatch), -1 without the
 * watch; smp_watch_dispatch() hands each window to cb with its VM's name,
 * in the order they were closed for each VM. The number dispatched. */
int smp_watch_fd(const struct smp_sampler *s);
typedef void smp_window_fn(void *owner, const char *name, const struct smp_window *w, void *data);
int smp_watch_dispatch(struct smp_sampler *s, smp_window_fn *cb, void *data);
/* Who gets the windows once smp_attach_event() has put the watch's fd on
 * the loop (cb NULL: they are dropped). */
void smp_watch_handler(struct smp_sampler *s, smp_window_fn *cb, void *data);
/* Whether the loop has windows of the watch to dispatch now (its source is
 * pending): a loop that waits in another class than it works in looks at
 * this before each dispatch (actuator/daemon/vmactd.c). */
bool smp_watch_pending(const struct smp_sampler *s);
/* What the kernel's side of the watch has cost since it was loaded: run
 * time of its timers in ns, their runs, and the windows a full ring buffer
 * deferred (they went out later, longer: none is lost). */
int smp_watch_cost(const struct smp_sampler *s, uint64_t *ns, uint64_t *runs, uint64_t *deferred);
/* The VM's cgroup's throttled time so far (cpu.stat, cumulative ns): what
 * a window of the watch adds to its vCPU figures. -ENOENT without a cgroup
 * given at registration. */
int smp_read_throttled(struct smp_sampler *s, const char *name, uint64_t *throttled_ns,
		       struct vmact_err *err);
