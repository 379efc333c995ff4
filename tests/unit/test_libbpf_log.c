/* SPDX-License-Identifier: Apache-2.0 */
/* bpf/libbpf-log.c: a refused program's load log, as libbpf's print
 * callback gets it, gives the program's name and the verifier's reason
 * (its last line, not the totals after it); other messages are left to
 * the caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bpf/libbpf-log.h"

/* As libbpf 1.1 formats it: "prog '%s': -- BEGIN PROG LOAD LOG --\n%s--
 * END PROG LOAD LOG --\n" around the kernel's log. */
#define LOG(name, body) \
	"prog '" name "': -- BEGIN PROG LOAD LOG --\n" body "-- END PROG LOAD LOG --\n"

static void test_reason(void **state)
{
	char out[256] = "untouched";

	(void)state;
	assert_true(
		smp_libbpf_log_reason(LOG("vmact_watch_start",
					  "0: R1=ctx() R10=fp0\n"
					  "; t->tick_ns = ctx->tick_ns;\n"
					  "5: (85) call bpf_timer_init#169\n"
					  "unknown func bpf_timer_init#169\n"
					  "processed 6 insns (limit 1000000) max_states_per_insn 0 "
					  "total_states 0 peak_states 0 mark_read 0\n"),
				      out, sizeof(out)));
	assert_string_equal(
		out, "prog 'vmact_watch_start': the verifier: unknown func bpf_timer_init#169");
	/* Newer kernels add lines of totals; trailing blanks. */
	assert_true(smp_libbpf_log_reason(LOG("tick_cb", "12: (b7) r0 = 0\n"
							 "R2 min value is negative  \n"
							 "verification time 21 usec\n"
							 "stack depth 16\n"
							 "processed 13 insns (limit 1000000)\n\n"),
					  out, sizeof(out)));
	assert_string_equal(out, "prog 'tick_cb': the verifier: R2 min value is negative");
	/* Cut to the buffer it is given. */
	assert_true(smp_libbpf_log_reason(LOG("p", "a long reason\n"), out, 12));
	assert_string_equal(out, "prog 'p': t");
}

static void test_not_a_log(void **state)
{
	char out[64] = "untouched";

	(void)state;
	assert_false(smp_libbpf_log_reason("libbpf: prog 'x': BPF program load failed: Invalid "
					   "argument\n",
					   out, sizeof(out)));
	/* A log cut before its end, an empty one, one of totals only. */
	assert_false(smp_libbpf_log_reason("prog 'x': -- BEGIN PROG LOAD LOG --\n0: R1=ctx()\n",
					   out, sizeof(out)));
	assert_false(smp_libbpf_log_reason(LOG("x", ""), out, sizeof(out)));
	assert_false(smp_libbpf_log_reason(LOG("x", "processed 1 insns\n"), out, sizeof(out)));
	assert_string_equal(out, "untouched");
	/* No program's name: the reason alone. */
	assert_true(smp_libbpf_log_reason("-- BEGIN PROG LOAD LOG --\ninvalid mem access "
					  "'scalar'\n-- END PROG LOAD LOG --\n",
					  out, sizeof(out)));
	assert_string_equal(out, "the verifier: invalid mem access 'scalar'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason),
		cmocka_unit_test(test_not_a_log),
	};

	return cmocka_run_group_tests_name("libbpf_log", tests, NULL, NULL);
}
