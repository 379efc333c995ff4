/* SPDX-License-Identifier: Apache-2.0 */
/* base/sched.c on this kernel, as root: a thread that waits in SCHED_FIFO
 * and works in SCHED_OTHER (vmactd's loop, doc/policy.md "Saturation found
 * in the kernel"). Each case runs in a child process of its own, so that
 * the classes it sets never touch the test runner; what the kernel reports
 * (sched_getattr through vmact_slice_get, sched_getscheduler, getpriority)
 * is what is checked. */
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/sched.h"

/* Runs fn in a child; its exit status (0: every check held). */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: %s does not hold\n", __FILE__, __LINE__, #cond); \
			return 1;                                                                \
		}                                                                                \
	} while (0)

/* Waits in FIFO, works in OTHER with its slice and its nice value, and
 * neither switch is made twice. */
static int wait_and_work(void)
{
	struct vmact_sched s;

	CHECK(setpriority(PRIO_PROCESS, 0, 5) == 0);
	CHECK(vmact_sched_init(&s, 1, 100) == 0);
	/* Left as it works. */
	CHECK((sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_OTHER);
	CHECK(vmact_slice_get() == 100);
	CHECK(getpriority(PRIO_PROCESS, 0) == 5);
	CHECK(!s.waiting);

	CHECK(vmact_sched_wait(&s) == 0);
	CHECK((sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_FIFO);
	CHECK(sched_getscheduler(0) & SCHED_RESET_ON_FORK);
	{
		struct sched_param p;

		CHECK(sched_getparam(0, &p) == 0 && p.sched_priority == 1);
	}
	CHECK(vmact_sched_wait(&s) == 0 && s.waiting);

	CHECK(vmact_sched_work(&s) == 0);
	CHECK((sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_OTHER);
	CHECK(vmact_slice_get() == 100);
	CHECK(getpriority(PRIO_PROCESS, 0) == 5);
	CHECK(vmact_sched_work(&s) == 0 && !s.waiting);
	return 0;
}

static void waits_in_fifo_works_in_other(void **state)
{
	(void)state;
	assert_int_equal(in_child(wait_and_work), 0);
}

/* A process started while the thread waits begins in SCHED_OTHER with the
 * kernel's slice (a hot-plug thread, a guest worker). */
static int child_of_fifo(void)
{
	int64_t dflt = vmact_slice_get(); /* the kernel's, as this process has it */
	struct vmact_sched s;
	int status;
	pid_t pid;

	CHECK(dflt != 100);
	CHECK(vmact_sched_init(&s, 1, 100) == 0);
	CHECK(vmact_sched_wait(&s) == 0);
	pid = fork();
	if (pid == 0) {
		int policy = sched_getscheduler(0);
		int64_t slice = vmact_slice_get();

		if (policy == SCHED_OTHER && slice == dflt)
			_exit(0);
		fprintf(stderr, "the child's policy %#x, slice %lld us\n", (unsigned)policy,
			(long long)slice);
		_exit(1);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return 0;
}

static void children_start_in_other(void **state)
{
	(void)state;
	assert_int_equal(in_child(child_of_fifo), 0);
}

/* Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 (no LimitRTPRIO=): -EPERM,
 * and the thread keeps its class and slice. (LimitRTPRIO=1 itself cannot
 * be shown here where root may lack CAP_SYS_RESOURCE to raise the limit:
 * make check-host shows it under systemd.) */
static int unprivileged(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	struct rlimit rl = { 0, 0 };
	struct vmact_sched s;

	CHECK(setrlimit(RLIMIT_RTPRIO, &rl) == 0);
	CHECK(syscall(SYS_capget, &hdr, data) == 0);
	data[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
	data[CAP_TO_INDEX(CAP_SYS_NICE)].permitted &= ~CAP_TO_MASK(CAP_SYS_NICE);
	CHECK(syscall(SYS_capset, &hdr, data) == 0);
	CHECK(vmact_slice_set(100) == 0);
	CHECK(vmact_sched_init(&s, 1, 100) == -EPERM);
	CHECK(sched_getscheduler(0) == SCHED_OTHER);
	CHECK(vmact_slice_get() == 100);
	return 0;
}

static void refused_without_rlimit(void **state)
{
	(void)state;
	assert_int_equal(in_child(unprivileged), 0);
}

/* Another class chosen by whoever started the thread is left alone. */
static int already_fifo(void)
{
	struct sched_param p = { .sched_priority = 10 };
	struct vmact_sched s;

	CHECK(sched_setscheduler(0, SCHED_FIFO, &p) == 0);
	CHECK(vmact_sched_init(&s, 1, 100) == -EPERM);
	CHECK(sched_getparam(0, &p) == 0 && p.sched_priority == 10);
	CHECK(vmact_slice_set(100) == -EPERM);
	return 0;
}

static void another_class_is_kept(void **state)
{
	(void)state;
	assert_int_equal(in_child(already_fifo), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(waits_in_fifo_works_in_other),
		cmocka_unit_test(children_start_in_other),
		cmocka_unit_test(refused_without_rlimit),
		cmocka_unit_test(another_class_is_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
