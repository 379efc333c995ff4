/* SPDX-License-Identifier: Apache-2.0 */
/* What a runner API change may ask (actuator/runner/neonvm-api.h): within the
 * VM's CPU bounds and the vCPUs it can have, every refusal naming why. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/runner/neonvm-api.h"

static void within_bounds(void **state)
{
	const struct vmact_resources min = { .milli_cpu = 1000, .mem_bytes = 1 },
				     max = { .milli_cpu = 4000, .mem_bytes = 2 };
	static const uint32_t ok[] = { 1000, 1001, 1500, 2000, 3999, 4000 };
	static const struct {
		uint32_t milli;
		unsigned vcpus_max;
		const char *want;
	} bad[] = {
		{ 0, 4, "0 CPU is outside the VM's bounds [1, 4]" },
		{ 999, 4, "999m CPU is outside the VM's bounds [1, 4]" },
		{ 4001, 8, "4001m CPU is outside the VM's bounds [1, 4]" },
		{ UINT32_MAX, 8, "outside the VM's bounds" },
		/* Bounds above what the domain can plug. */
		{ 2500, 2, "2500m CPU needs 3 vCPUs, the VM can have 2" },
		{ 4000, 3, "4 CPU needs 4 vCPUs, the VM can have 3" },
	};
	struct vmact_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (act_runner_neonvm_api_check(ok[i], &min, &max, 4, &err) < 0)
			fail_msg("%u: %s", ok[i], err.msg);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		vmact_err_reset(&err);
		if (act_runner_neonvm_api_check(bad[i].milli, &min, &max, bad[i].vcpus_max, &err) !=
			    -ERANGE ||
		    !strstr(err.msg, bad[i].want))
			fail_msg("%u: '%s', want '%s'", bad[i].milli, err.msg, bad[i].want);
	}
	/* Exactly at a fractional bound. */
	{
		const struct vmact_resources lo = { .milli_cpu = 250 }, hi = { .milli_cpu = 1500 };

		assert_int_equal(act_runner_neonvm_api_check(250, &lo, &hi, 2, &err), 0);
		assert_int_equal(act_runner_neonvm_api_check(1500, &lo, &hi, 2, &err), 0);
		assert_int_equal(act_runner_neonvm_api_check(249, &lo, &hi, 2, &err), -ERANGE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(within_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
