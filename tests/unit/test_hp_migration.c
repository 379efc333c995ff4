/* SPDX-License-Identifier: Apache-2.0 */
/* hotplug/: a live migration as vmact sees it, on records built here with
 * libvirt's own typed-parameter calls and its event constants: which end
 * of a move a domain's job says this host is (read.c), and what each
 * lifecycle event of a move means to vmact (conn.c). The move itself, two
 * real libvirt daemons and a guest, runs in
 * tests/integration/test_migrate_follow.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hotplug/conn.h"
#include "hotplug/read.h"

static enum hp_migration with_operation(int type, int op)
{
	virTypedParameterPtr p = NULL;
	int n = 0, max = 0;
	enum hp_migration m;

	assert_int_equal(virTypedParamsAddULLong(&p, &n, &max, VIR_DOMAIN_JOB_TIME_ELAPSED, 1200),
			 0);
	if (op >= 0)
		assert_int_equal(virTypedParamsAddInt(&p, &n, &max, VIR_DOMAIN_JOB_OPERATION, op),
				 0);
	m = hp_migration_from_job(type, p, n);
	virTypedParamsFree(p, n);
	return m;
}

static void job_says_which_end(void **state)
{
	(void)state;
	assert_int_equal(with_operation(VIR_DOMAIN_JOB_UNBOUNDED,
					VIR_DOMAIN_JOB_OPERATION_MIGRATION_IN),
			 HP_MIGRATION_ARRIVING);
	assert_int_equal(with_operation(VIR_DOMAIN_JOB_UNBOUNDED,
					VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT),
			 HP_MIGRATION_LEAVING);
	/* Other jobs (a dump, a snapshot) are not a move. */
	assert_int_equal(with_operation(VIR_DOMAIN_JOB_UNBOUNDED, VIR_DOMAIN_JOB_OPERATION_DUMP),
			 HP_MIGRATION_NONE);
	/* No job: whatever the record holds. */
	assert_int_equal(with_operation(VIR_DOMAIN_JOB_NONE, VIR_DOMAIN_JOB_OPERATION_MIGRATION_IN),
			 HP_MIGRATION_NONE);
	/* An older daemon's record without the operation. */
	assert_int_equal(with_operation(VIR_DOMAIN_JOB_UNBOUNDED, -1), HP_MIGRATION_NONE);
	assert_int_equal(hp_migration_from_job(VIR_DOMAIN_JOB_UNBOUNDED, NULL, 0),
			 HP_MIGRATION_NONE);
}

static void lifecycle_of_a_move(void **state)
{
	(void)state;
	/* The destination: its paused QEMU starts (not yet this host's),
	 * then libvirt resumes it (now it is). */
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_STARTED,
					   VIR_DOMAIN_EVENT_STARTED_MIGRATED),
			 -1);
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_RESUMED,
					   VIR_DOMAIN_EVENT_RESUMED_MIGRATED),
			 HP_EV_DOMAIN_STARTED);
	/* The source: paused for the switch-over, then gone. */
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_SUSPENDED,
					   VIR_DOMAIN_EVENT_SUSPENDED_MIGRATED),
			 -1);
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_STOPPED,
					   VIR_DOMAIN_EVENT_STOPPED_MIGRATED),
			 HP_EV_DOMAIN_STOPPED);
	/* Everything else as before. */
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_STARTED,
					   VIR_DOMAIN_EVENT_STARTED_BOOTED),
			 HP_EV_DOMAIN_STARTED);
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_STOPPED,
					   VIR_DOMAIN_EVENT_STOPPED_DESTROYED),
			 HP_EV_DOMAIN_STOPPED);
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_RESUMED,
					   VIR_DOMAIN_EVENT_RESUMED_UNPAUSED),
			 -1);
	assert_int_equal(hp_lifecycle_kind(VIR_DOMAIN_EVENT_DEFINED,
					   VIR_DOMAIN_EVENT_DEFINED_ADDED),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(job_says_which_end),
		cmocka_unit_test(lifecycle_of_a_move),
	};

	/* libvirt's thread-local error, which the typed-parameter calls
	 * reset, exists only once the library is initialised. */
	if (virInitialize() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
