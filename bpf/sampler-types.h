/* SPDX-License-Identifier: Apache-2.0 */
/* Map layouts shared by sampler.bpf.c and its loader. Only __u32/__s64-style
 * types: the BPF side gets them from vmlinux.h, userspace from
 * <linux/types.h>. The field names are what `bpftool map dump` prints. */
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Value of vmact_stats (PERCPU_ARRAY indexed by VM slot).
 *
 * The gauges are kept as two sums per CPU so that userspace can integrate
 * them exactly without ever sampling them: every transition of a VM thread
 * (becomes runnable: +1, stops being runnable: -1) adds its delta d to
 * nr_runnable and d*t (t = bpf_ktime_get_ns()) to runnable_tsum on the CPU
 * that saw it. The number of runnable threads at time T is
 * N(T) = sum over CPUs of nr_runnable, and
 *
 *   integral_0^T N(t) dt = T * sum(nr_runnable) - sum(runnable_tsum)
 *
 * because each delta d applied at t_i contributes d*(T - t_i). Arithmetic is
 * modulo 2^64 on both sides: per-CPU values may drift without bound (a thread
 * woken on CPU0 and blocking on CPU1 moves +1/-1 between them) but the total
 * is small and comes out exact. A read racing an update on some CPU can see
 * the new count with the old sum (or the reverse); the error is d*(T - t_i)
 * for an event that just happened, i.e. nanoseconds. Same scheme for the
 * number of VM threads on a CPU (nr_oncpu / oncpu_tsum), which gives CPU time
 * including the still-open slice of a thread that has not switched out yet. */
struct smp_cpu_stats {
	__s64 nr_runnable;
	__u64 runnable_tsum;
	__s64 nr_oncpu;
	__u64 oncpu_tsum;
	__u64 wakeups;     /* not-runnable -> runnable transitions */
	__u64 switches;    /* context switches away from a VM thread */
	__u64 preemptions; /* ... of which the thread was still runnable */
	__u64 untracked;   /* events lost because vmact_tasks was full */
	/* On-CPU time the hooks did not see start: a thread was switched in
	 * without a sched_switch event reaching us (seen when the previous
	 * task belonged to PID 1 on Firecracker guest kernels; BPF recursion
	 * protection can drop events anywhere). Recovered from the kernel's
	 * se.sum_exec_runtime at the thread's next switch we do see, and
	 * already included in the oncpu integral. */
	__u64 recovered_ns;
	__u64 recoveries;
};

/* Value of vmact_readout (ARRAY indexed by slot, BPF_F_MMAPABLE). No program
 * touches it: the loader writes each VM's latest readout there so that
 * `bpftool map dump pinned .../vmact_readout` shows it in plain numbers.
 * Written without locking; a dump racing a readout may mix two. */
struct smp_readout {
	char name[64]; /* domain name, truncated */
	__u32 tgid;
	__u32 nr_runnable; /* at the readout */
	__u64 at_ns;       /* CLOCK_MONOTONIC of the readout */
	__u64 interval_ns;
	__u32 load_milli; /* mean runnable threads x 1000 */
	__u32 loadavg1_milli;
	__u32 loadavg5_milli;
	__u32 loadavg15_milli;
	__u32 cpu_milli;      /* CPUs used x 1000 */
	__u32 delay_permille; /* share of runnable time spent waiting */
	__u64 nr_throttled;   /* cgroup cpu.stat, cumulative */
	__u64 throttled_ns;
};

/* Below this a difference between the kernel's run time and the hooks' is
 * clock skew between rq_clock_task and bpf_ktime_get_ns, not a lost event. */
#define SMP_RECOVER_MIN_NS 50000

/* The tgid table in sampler.bpf.c's .bss (vmact_tgid_table): entries, and
 * the slot+1 value meaning "more than one VM here, ask vmact_vms". 8192
 * entries (64 KiB, mapped into vmactd for as long as it runs): with 1024
 * VMs, the sampler's most, about 6 % of them share an entry with another
 * (their events then cost a hash lookup, as without the table), and a
 * process of no VM meets a shared entry about as rarely. */
#define SMP_TGID_TABLE  8192
#define SMP_TGID_SHARED 0xffffffffu

/* Value of vmact_vms (HASH, QEMU tgid -> VM). */
struct smp_vm {
	__u32 slot;
};

/* Value of vmact_tasks (HASH, thread id -> state of one VM thread). */
struct smp_task {
	__u32 tgid;
	__u32 slot;
	__u8 runnable; /* counted in nr_runnable */
	__u8 oncpu;    /* counted in nr_oncpu */
	__u8 exec_ok;  /* exec_sync is a valid base for a recovery */
	/* A vCPU thread ("CPU <n>/<accel>"), counted in the VM's vmact_vgauge
	 * as well; QEMU names the thread once it runs, so a thread not yet
	 * known as one is looked at again at its first switch-outs. */
	__u8 vcpu;
	__u8 name_checks; /* switch-outs at which the name was looked at */
	__u8 pad[3];
	/* Per-thread split (knob per_thread): closed intervals plus the start
	 * of the open one. */
	__u64 runnable_since;
	__u64 oncpu_since; /* kept whatever the knob: recoveries need it */
	__u64 runnable_ns;
	__u64 oncpu_ns;
	/* se.sum_exec_runtime when the thread was last seen switch in or
	 * out: what the kernel says it ran since then is compared with what
	 * the hooks counted. */
	__u64 exec_sync;
};

/* Record written by the vmact_pending task iterator: a VM thread that the
 * hooks believe off a CPU but whose kernel run time moved since they last
 * saw it (a switch-in we were not told about; see smp_cpu_stats). It is
 * added to the readout until the thread's next seen switch recovers it into
 * the integrals. */
struct smp_pending {
	__u32 tid;
	__u32 slot;
	__u64 ns;      /* se.sum_exec_runtime beyond the last sync point */
	__u8 runnable; /* the hooks count the thread as runnable */
	__u8 on_cpu;   /* task_struct::on_cpu at the iteration */
	__u8 pad[6];
};

/* Record written by the vmact_threads task iterator: one tracked thread of
 * a VM, its vmact_tasks entry and name, with what vmact_pending would
 * report for it (pend.ns 0: nothing pending). One pass over a VM's threads
 * (pid filter) gives the per-thread split and the vCPU totals without
 * walking vmact_tasks, which holds the threads of every VM. */
struct smp_thread_rec {
	__u32 tid;
	__u32 pad;
	char comm[16];
	struct smp_task task;
	struct smp_pending pend;
};

/* Context of the vmact_read_vm syscall program (readvm.bpf.c), in and out:
 * one VM's readout in one bpf(BPF_PROG_TEST_RUN) call. */
struct smp_vm_read {
	__u32 slot; /* in */
	__u32 tgid; /* in */
	/* out: bpf_ktime_get_ns() (CLOCK_MONOTONIC) after the per-CPU sums
	 * were taken; the open intervals are closed at it */
	__u64 now;
	/* vmact_stats[slot] summed over the possible CPUs (modulo 2^64, as
	 * smp_totals_from_cpus sums them) */
	struct smp_cpu_stats sum;
	/* what vmact_pending would report, summed as readout.c adds it */
	__u64 pend_oncpu_ns;
	__u64 pend_runnable_ns;
	__u32 pend_nr_oncpu;
	__u32 threads; /* tracked threads of the VM seen */
	/* the vCPU threads' totals (named "CPU <n>/<accel>", per_thread
	 * knob), each thread as smp_thread_from_task + pending + finish */
	__u32 vcpus;
	__u32 gone; /* no such process: only sum and now are set */
	__u64 vcpu_runnable_ns;
	__u64 vcpu_oncpu_ns;
	__u64 vcpu_delay_ns;
	/* vCPU threads runnable (on a CPU or waiting for one) at `now`:
	 * none means the guest has halted them all, whatever the window's
	 * average says (the reactive policy's "the load has ended") */
	__u32 vcpus_runnable;
	__u32 reserved;
};

/* Value of vmact_vgauge (ARRAY indexed by slot): the VM's vCPU threads
 * alone, as the same two gauges as smp_cpu_stats (runnable; on a CPU) with
 * their time sums, but shared by all CPUs and updated atomically: the
 * watch (watch.bpf.c) integrates them from a BPF timer without summing
 * per-CPU copies, which would cost it one lookup per possible CPU and VM
 * at every tick. A VM's vCPUs rarely switch (a busy one never), so the
 * shared line is cheap. */
struct smp_vgauge {
	__s64 nr_run;
	__u64 run_tsum;
	__s64 nr_on;
	__u64 on_tsum;
};

/* The watch (watch.bpf.c): the reactive policy's readouts, closed in the
 * kernel. A BPF timer closes every watched VM's window each tick and sends
 * nothing while the VM is cool (its windows below the busy mark); from the
 * first busy window on it sends every window (the one before too, for the
 * policy's lead) until the VM has been below the mark for cool_ns, and a
 * second timer closes a window at the instant a busy run covers the up
 * window. vmactd sleeps meanwhile, and reads the windows of cool VMs on its
 * slow clock through vmact_watch_close. */

/* The settings of a watched VM (vmact_watch, ARRAY indexed by slot, is
 * the kernel's: vmactd changes it only through vmact_watch_set, which
 * holds the entry's lock). */
struct smp_watch_cfg {
	__u32 slot;
	__u32 on;              /* watched; 0 stops and forgets the VM's windows */
	__u64 gen;             /* the registration: events carry it */
	__u32 allowance_milli; /* min(vCPUs, quota) */
	__u32 target_permille; /* busy at target x allowance (policy.target) */
	__u64 up_window_ns;    /* policy.up_window */
	__u64 cool_ns;         /* below the mark this long: cool again */
};

/* A closed window, as the ring buffer carries it and vmact_watch_close
 * returns it: the policy's struct act_cpu_window, but for the quota and
 * the cgroup's throttled time, which vmactd adds. */
struct smp_watch_win {
	__u32 slot;
	__u32 kind; /* SMP_WATCH_* */
	__u64 gen;
	__u64 seq; /* per VM, in the order the windows were closed */
	__u64 at;  /* end (bpf_ktime_get_ns, CLOCK_MONOTONIC) */
	__u64 len;
	__u64 runnable_ns;  /* vCPU threads: on a CPU or waiting for one */
	__u64 delay_ns;     /* waiting */
	__u32 runnable_now; /* vCPU threads runnable at `at` */
	__u32 exact;        /* closed by the deadline timer, where the run met the up window */
};

/* A record of the ring buffer: one window, or two (the stretch before a
 * VM's first busy window, then that window). */
struct smp_watch_rec {
	__u32 n;
	__u32 pad;
	struct smp_watch_win w[2];
};

enum {
	SMP_WATCH_WINDOW = 1, /* a window of a hot VM */
	SMP_WATCH_BEFORE,     /* the window before the first busy one */
	SMP_WATCH_HOT,        /* the first busy window */
	SMP_WATCH_COOL,       /* a window after which the VM is cool */
	SMP_WATCH_SLOW,       /* closed by vmactd (vmact_watch_close) */
};

/* Context of vmact_watch_close (BPF_PROG_TEST_RUN): in slot and gen, out
 * the window since the last close (kind SMP_WATCH_SLOW), or hot 1 when the
 * VM is hot (then its windows come through the ring buffer and nothing is
 * closed). rc: 0, or -ENOENT when the slot is not watched under gen. */
struct smp_watch_close {
	__u32 slot;
	__s32 rc;
	__u64 gen;
	__u32 hot;
	__u32 pad;
	struct smp_watch_win win;
};

/* Context of vmact_watch_start: the tick's period and how many slots it
 * looks at (the sampler's max_vms); rc out. */
struct smp_watch_start {
	__u64 tick_ns;
	__u32 nr_slots;
	__s32 rc;
};
