/* SPDX-License-Identifier: Apache-2.0 */
/* The calling thread's scheduling: its slice, and the class it waits in.
 *
 * The slice is EEVDF's custom slice for SCHED_OTHER (Linux 6.12:
 * sched_attr.sched_runtime). A shorter slice gives a thread an earlier
 * virtual deadline each time it wakes, so that it runs before the tasks
 * whose slice is the default, without a larger share of the CPU: its lag
 * and weight stay what they were. Kernels before 6.12 take the call and
 * ignore the figure.
 *
 * A thread that must answer an event at once (vmactd's loop when the
 * sampler's watch sends a hot VM's window: doc/policy.md, "Saturation found
 * in the kernel") can wait in SCHED_FIFO and go back to SCHED_OTHER for
 * everything else it does (struct vmact_sched): it then runs the moment it
 * is woken, ahead of every SCHED_OTHER thread, and only for as long as it
 * handles that event. Both classes are set with SCHED_FLAG_RESET_ON_FORK,
 * so that a thread or process it starts begins in SCHED_OTHER with the
 * default slice. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The kernel's bounds of a custom slice (0.1 ms to 100 ms). */
#define VMACT_SLICE_MIN_USEC 100
#define VMACT_SLICE_MAX_USEC 100000

/* Sets the calling thread's slice to usec (clamped to the bounds above;
 * 0: the kernel's default again) and keeps its policy SCHED_OTHER and its
 * nice value; 0 or -errno (-EPERM for a thread in another class). */
int vmact_slice_set(uint32_t usec);
/* The calling thread's slice in µs as the kernel reports it (the kernel's
 * default for a thread that set none, or 0 where the kernel does not
 * say); -errno. */
int64_t vmact_slice_get(void);

/* A thread that waits in SCHED_FIFO and works in SCHED_OTHER. */
struct vmact_sched {
	uint32_t rt_prio;    /* SCHED_FIFO priority while it waits (1-99) */
	uint32_t slice_usec; /* its SCHED_OTHER slice (0: the kernel's) */
	int nice;            /* its nice value, as it was */
	bool waiting;        /* in SCHED_FIFO now */
};

/* Prepares the calling thread: it must be SCHED_OTHER (-EPERM otherwise:
 * whoever chose another class keeps it); its nice value is kept; it is
 * put in SCHED_FIFO at rt_prio once to learn whether the kernel allows
 * it (-EPERM: no CAP_SYS_NICE and RLIMIT_RTPRIO below rt_prio, a seccomp
 * filter such as systemd's RestrictRealtime=, or a cgroup without
 * real-time time under CONFIG_RT_GROUP_SCHED) and left in SCHED_OTHER with
 * its slice. 0 or -errno; on an error the thread keeps its class. */
int vmact_sched_init(struct vmact_sched *s, uint32_t rt_prio, uint32_t slice_usec);
/* Before the thread waits: SCHED_FIFO (no call if it is already). */
int vmact_sched_wait(struct vmact_sched *s);
/* Before it works on anything else: SCHED_OTHER with its slice and nice
 * value (no call if it is already). */
int vmact_sched_work(struct vmact_sched *s);
