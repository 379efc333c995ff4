/* SPDX-License-Identifier: Apache-2.0 */
#include "base/slice.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct sched_attr (its first version, 48 bytes): glibc
 * 2.36 has neither the calls nor the type, and linux/sched/types.h
 * cannot be included beside sched.h. */
struct sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

static int attr_get(struct sched_attr *a)
{
	memset(a, 0, sizeof(*a));
	return syscall(SYS_sched_getattr, 0, a, sizeof(*a), 0) < 0 ? -errno : 0;
}

int vmact_slice_set(uint32_t usec)
{
	struct sched_attr a;
	int r = attr_get(&a);

	if (r < 0)
		return r;
	/* Only a plain thread: a real-time or idle one keeps its class. */
	if (a.sched_policy != SCHED_OTHER)
		return -EPERM;
	if (usec && usec < VMACT_SLICE_MIN_USEC)
		usec = VMACT_SLICE_MIN_USEC;
	if (usec > VMACT_SLICE_MAX_USEC)
		usec = VMACT_SLICE_MAX_USEC;
	a.size = sizeof(a);
	a.sched_flags = 0;
	a.sched_runtime = (uint64_t)usec * 1000;
	a.sched_deadline = a.sched_period = 0;
	return syscall(SYS_sched_setattr, 0, &a, 0) < 0 ? -errno : 0;
}

int64_t vmact_slice_get(void)
{
	struct sched_attr a;
	int r = attr_get(&a);

	return r < 0 ? r : (int64_t)(a.sched_runtime / 1000);
}
