/* SPDX-License-Identifier: Apache-2.0 */
/* The calling thread's scheduler slice (EEVDF's custom slice for
 * SCHED_OTHER, Linux 6.12: sched_attr.sched_runtime). A shorter slice
 * gives a thread an earlier virtual deadline each time it wakes, so that
 * it runs before the tasks whose slice is the default, without a larger
 * share of the CPU: its lag and weight stay what they were. vmactd asks it
 * for the thread that reads the sampler's ring buffer (doc/policy.md,
 * "Saturation found in the kernel"): a window that closes is decided on while
 * a hundred busy VMs hold the CPUs. Kernels before 6.12 take the call and
 * ignore the figure. */
#pragma once

#include <stdint.h>

/* The kernel's bounds of a custom slice (0.1 ms to 100 ms). */
#define VMACT_SLICE_MIN_USEC 100
#define VMACT_SLICE_MAX_USEC 100000

/* Sets the calling thread's slice to usec (clamped to the bounds above;
 * 0: the kernel's default again) and keeps its policy SCHED_OTHER and its
 * nice value; 0 or -errno. */
int vmact_slice_set(uint32_t usec);
/* The calling thread's slice in µs as the kernel reports it (0: the
 * default or a kernel that does not say); -errno. */
int64_t vmact_slice_get(void);
