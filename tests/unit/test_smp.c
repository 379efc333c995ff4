/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the sampler's pure parts: the load-average filter against
 * the kernel's fixed-point recurrence and vCPU thread names (the cpu.stat
 * reader is tested in test_cpustat.c, the readout in test_readout.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bpf/loadavg.h"
#include "bpf/proc.h"

static const unsigned long kexp[3] = { SMP_EXP_1, SMP_EXP_5, SMP_EXP_15 };

/* With 5-second steps our filter is the kernel's recurrence in floating
 * point: the same inputs give the same averages up to the kernel's 11-bit
 * rounding. The kernel rounds up by less than 1/2048 per step while rising;
 * through the filter that accumulates to at most (1/2048) / (1 - e), i.e.
 * 1/164, 1/34 and 1/11 for the 1, 5 and 15 minute averages. */
static void test_loadavg_matches_kernel(void **state)
{
	struct smp_loadavg la = { .seeded = true };
	unsigned long k[3] = { 0, 0, 0 };
	/* A run queue that ramps up, holds, and drains. */
	static const unsigned inputs[] = { 0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4,
					   4, 4, 4, 4, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0 };

	for (int rep = 0; rep < 4; rep++) {
		for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
			smp_loadavg_update(&la, inputs[i], 5.0);
			for (int j = 0; j < 3; j++) {
				k[j] = smp_loadavg_kernel_step(k[j], kexp[j],
							       inputs[i] * SMP_FIXED_1);
				double kv = (double)k[j] / SMP_FIXED_1;

				double tol = 1.0 / (double)(SMP_FIXED_1 - kexp[j]) + 1e-9;

				if (fabs(la.avg[j] - kv) > tol)
					fail_msg("step %zu avg%d: ours %.5f kernel %.5f", i, j,
						 la.avg[j], kv);
			}
		}
	}
}

/* The decay depends only on elapsed time: many short readouts with the
 * same mean give what one long readout gives. */
static void test_loadavg_interval_invariance(void **state)
{
	struct smp_loadavg a = { .avg = { 1, 2, 3 }, .seeded = true }, b = a;

	smp_loadavg_update(&a, 2.5, 10.0);
	for (int i = 0; i < 40; i++)
		smp_loadavg_update(&b, 2.5, 0.25);
	for (int j = 0; j < 3; j++)
		assert_true(fabs(a.avg[j] - b.avg[j]) < 1e-12);
}

/* Step response: from 0 under a constant load of 1 for 60 s the 1-min
 * average reaches 1 - e^12 with the kernel's e = 1884/2048. */
static void test_loadavg_step_response(void **state)
{
	struct smp_loadavg la = { .seeded = true };
	double want[3];

	smp_loadavg_update(&la, 1.0, 60.0);
	for (int j = 0; j < 3; j++)
		want[j] = 1.0 - pow((double)kexp[j] / SMP_FIXED_1, 12);
	for (int j = 0; j < 3; j++)
		assert_true(fabs(la.avg[j] - want[j]) < 1e-12);
	assert_true(la.avg[0] > 0.63 && la.avg[0] < 0.64);
}

static void test_loadavg_edges(void **state)
{
	struct smp_loadavg la = { 0 };

	smp_loadavg_update(&la, 3.0, 0.0); /* empty interval: nothing */
	assert_false(la.seeded);
	smp_loadavg_update(&la, 3.0, -1.0);
	assert_false(la.seeded);
	smp_loadavg_update(&la, 3.0, 0.5); /* first mean seeds all three */
	assert_true(la.seeded);
	for (int j = 0; j < 3; j++)
		assert_true(la.avg[j] == 3.0);
	smp_loadavg_update(&la, 3.0, NAN);
	assert_true(la.avg[0] == 3.0);
}

static void test_vcpu_names(void **state)
{
	assert_int_equal(smp_thread_vcpu("CPU 0/KVM"), 0);
	assert_int_equal(smp_thread_vcpu("CPU 13/TCG"), 13);
	assert_int_equal(smp_thread_vcpu("qemu-system-x86"), -1);
	assert_int_equal(smp_thread_vcpu("CPU x/KVM"), -1);
	assert_int_equal(smp_thread_vcpu("CPU 1"), -1);
	assert_int_equal(smp_thread_vcpu(""), -1);
	/* Found by make fuzz-long: sscanf's %u took these. */
	assert_int_equal(smp_thread_vcpu("CPU -3/G"), -1);
	assert_int_equal(smp_thread_vcpu("CPU -4294967295/KVM"), -1);
	assert_int_equal(smp_thread_vcpu("CPU  2/KVM"), -1);
	assert_int_equal(smp_thread_vcpu("CPU +2/KVM"), -1);
	assert_int_equal(smp_thread_vcpu("CPU 3000000000/KVM"), -1);
	assert_int_equal(smp_thread_vcpu("CPU 2/ KVM"), -1);
	assert_int_equal(smp_thread_vcpu("CPU 2/"), -1);
	assert_int_equal(smp_thread_vcpu("CPU 2147483647/K"), 2147483647);
}

/* A thread's name is QEMU's to choose: parentheses and spaces in it must
 * not move the state field. */
static void test_stat_line(void **state)
{
	char comm[16], st = 0;

	(void)state;
	assert_int_equal(smp_stat_parse("42 (CPU 1/KVM) R 1 2 3", &st, comm), 0);
	assert_int_equal(st, 'R');
	assert_string_equal(comm, "CPU 1/KVM");
	assert_int_equal(smp_stat_parse("42 (a) b) S 1", &st, comm), 0);
	assert_int_equal(st, 'S');
	assert_string_equal(comm, "a) b");
	assert_int_equal(smp_stat_parse("42 (0123456789abcdefgh) D 1", &st, comm), 0);
	assert_string_equal(comm, "0123456789abcde");
	assert_int_equal(smp_stat_parse("42 (x) ", &st, comm), -EPROTO);
	assert_int_equal(smp_stat_parse("42 )x( R", &st, comm), -EPROTO);
	assert_int_equal(smp_stat_parse("", &st, NULL), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loadavg_matches_kernel),
		cmocka_unit_test(test_loadavg_interval_invariance),
		cmocka_unit_test(test_loadavg_step_response),
		cmocka_unit_test(test_loadavg_edges),
		cmocka_unit_test(test_vcpu_names),
		cmocka_unit_test(test_stat_line),
	};

	return cmocka_run_group_tests_name("smp", tests, NULL, NULL);
}
