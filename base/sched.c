/* SPDX-License-Identifier: Apache-2.0 */
#include "base/sched.h"

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

#define FLAG_RESET_ON_FORK 0x01ULL /* SCHED_FLAG_RESET_ON_FORK */

static int attr_get(struct sched_attr *a)
{
	memset(a, 0, sizeof(*a));
	return syscall(SYS_sched_getattr, 0, a, sizeof(*a), 0) < 0 ? -errno : 0;
}

static int attr_set(struct sched_attr *a)
{
	a->size = sizeof(*a);
	return syscall(SYS_sched_setattr, 0, a, 0) < 0 ? -errno : 0;
}

static uint64_t slice_ns(uint32_t usec)
{
	if (usec && usec < VMACT_SLICE_MIN_USEC)
		usec = VMACT_SLICE_MIN_USEC;
	if (usec > VMACT_SLICE_MAX_USEC)
		usec = VMACT_SLICE_MAX_USEC;
	return (uint64_t)usec * 1000;
}

/* The calling thread's attributes, -EPERM unless it is a plain thread: a
 * real-time or idle one keeps its class. */
static int attr_get_other(struct sched_attr *a)
{
	int r = attr_get(a);

	return r < 0 ? r : a->sched_policy != SCHED_OTHER ? -EPERM : 0;
}

int vmact_slice_set(uint32_t usec)
{
	struct sched_attr a;
	int r = attr_get_other(&a);

	if (r < 0)
		return r;
	/* A thread without CAP_SYS_NICE may not clear reset-on-fork. */
	a.sched_flags &= FLAG_RESET_ON_FORK;
	a.sched_runtime = slice_ns(usec);
	a.sched_deadline = a.sched_period = 0;
	return attr_set(&a);
}

int64_t vmact_slice_get(void)
{
	struct sched_attr a;
	int r = attr_get(&a);

	return r < 0 ? r : (int64_t)(a.sched_runtime / 1000);
}

static int to_fifo(const struct vmact_sched *s)
{
	struct sched_attr a = { .sched_policy = SCHED_FIFO,
				.sched_flags = FLAG_RESET_ON_FORK,
				.sched_priority = s->rt_prio };

	return attr_set(&a);
}

static int to_other(const struct vmact_sched *s)
{
	struct sched_attr a = { .sched_policy = SCHED_OTHER,
				.sched_flags = FLAG_RESET_ON_FORK,
				.sched_nice = s->nice,
				.sched_runtime = slice_ns(s->slice_usec) };

	return attr_set(&a);
}

int vmact_sched_init(struct vmact_sched *s, uint32_t rt_prio, uint32_t slice_usec)
{
	struct sched_attr a;
	int r = attr_get_other(&a);

	*s = (struct vmact_sched){ .rt_prio = rt_prio, .slice_usec = slice_usec };
	if (r < 0)
		return r;
	if (rt_prio < 1 || rt_prio > 99)
		return -EINVAL;
	s->nice = a.sched_nice;
	r = to_fifo(s);
	if (r < 0)
		return r;
	/* Back at once: if this fails the thread would stay real-time for
	 * all it does, so the caller hears of it as a failure too. */
	return to_other(s);
}

int vmact_sched_wait(struct vmact_sched *s)
{
	int r;

	if (s->waiting)
		return 0;
	r = to_fifo(s);
	if (r == 0)
		s->waiting = true;
	return r;
}

int vmact_sched_work(struct vmact_sched *s)
{
	int r;

	if (!s->waiting)
		return 0;
	r = to_other(s);
	if (r == 0)
		s->waiting = false;
	return r;
}
