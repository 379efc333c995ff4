/* SPDX-License-Identifier: Apache-2.0 */
/* hotplug/domain.c: a domain's record of virDomainListGetStats (the state
 * and balloon groups) read as the guest's memory figures, on records built
 * here with libvirt's own typed-parameter calls. The call itself runs
 * against real libvirt in tests/integration/test_agentless.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hotplug/domain.h"

struct rec {
	virTypedParameterPtr p;
	int n, max;
};

static void add(struct rec *r, const char *name, unsigned long long v)
{
	assert_int_equal(virTypedParamsAddULLong(&r->p, &r->n, &r->max, name, v), 0);
}

static void add_state(struct rec *r, int state)
{
	assert_int_equal(virTypedParamsAddInt(&r->p, &r->n, &r->max, "state.state", state), 0);
}

/* What a running guest with a 1 s stats period sends (virsh domstats
 * --state --balloon). */
static void full(struct rec *r, int state)
{
	add_state(r, state);
	add(r, "balloon.current", 1048576);
	add(r, "balloon.maximum", 2097152);
	add(r, "balloon.swap_in", 12);
	add(r, "balloon.swap_out", 34);
	add(r, "balloon.major_fault", 5);
	add(r, "balloon.minor_fault", 6789);
	add(r, "balloon.unused", 700000);
	add(r, "balloon.available", 1000000);
	add(r, "balloon.usable", 800000);
	add(r, "balloon.last-update", 1764400000);
	add(r, "balloon.rss", 400000);
	add(r, "balloon.disk_caches", 50000);
}

static void figures(void **state)
{
	struct rec r = { 0 };
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	full(&r, VIR_DOMAIN_RUNNING);
	assert_int_equal(hp_mem_stats_from_params(r.p, r.n, &ms, &err), 0);
	assert_int_equal(ms.total_kib, 1000000);
	assert_int_equal(ms.available_kib, 800000);
	assert_true(ms.has_caches);
	assert_int_equal(ms.caches_kib, 50000);
	assert_true(ms.has_unused);
	assert_int_equal(ms.unused_kib, 700000);
	assert_true(ms.has_swap);
	assert_int_equal(ms.swap_in_kib, 12);
	assert_int_equal(ms.swap_out_kib, 34);
	assert_true(ms.has_faults);
	assert_int_equal(ms.major_faults, 5);
	assert_int_equal(ms.minor_faults, 6789);
	assert_int_equal(ms.last_update, 1764400000);
	virTypedParamsFree(r.p, r.n);
}

/* A paused guest's last figures are still its figures. */
static void paused(void **state)
{
	struct rec r = { 0 };
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	full(&r, VIR_DOMAIN_PAUSED);
	assert_int_equal(hp_mem_stats_from_params(r.p, r.n, &ms, &err), 0);
	assert_int_equal(ms.available_kib, 800000);
	virTypedParamsFree(r.p, r.n);
}

/* An older balloon driver: only the two required figures. */
static void only_required(void **state)
{
	struct rec r = { 0 };
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	add_state(&r, VIR_DOMAIN_RUNNING);
	add(&r, "balloon.current", 1048576);
	add(&r, "balloon.available", 1000000);
	add(&r, "balloon.usable", 900000);
	assert_int_equal(hp_mem_stats_from_params(r.p, r.n, &ms, &err), 0);
	assert_false(ms.has_caches);
	assert_false(ms.has_unused);
	assert_false(ms.has_swap);
	assert_false(ms.has_faults);
	assert_int_equal(ms.last_update, 0);
	virTypedParamsFree(r.p, r.n);
}

/* No stats period, or no driver: the balloon's size only. The message
 * names the figure and the fix's three places. */
static void no_figures(void **state)
{
	struct rec r = { 0 };
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	add_state(&r, VIR_DOMAIN_RUNNING);
	add(&r, "balloon.current", 1048576);
	add(&r, "balloon.maximum", 1048576);
	assert_int_equal(hp_mem_stats_from_params(r.p, r.n, &ms, &err), -ENODATA);
	assert_non_null(strstr(err.msg, "'available' (MemTotal)"));
	assert_non_null(strstr(err.msg, "stats period"));
	virTypedParamsFree(r.p, r.n);
}

static void no_usable(void **state)
{
	struct rec r = { 0 };
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	add_state(&r, VIR_DOMAIN_RUNNING);
	add(&r, "balloon.available", 1000000);
	assert_int_equal(hp_mem_stats_from_params(r.p, r.n, &ms, &err), -ENODATA);
	assert_non_null(strstr(err.msg, "'usable' (MemAvailable)"));
	virTypedParamsFree(r.p, r.n);
}

/* A domain that stopped between two readings: gone, whatever its record
 * still carries. */
static void stopped(void **state)
{
	static const int states[] = { VIR_DOMAIN_SHUTOFF, VIR_DOMAIN_CRASHED, VIR_DOMAIN_NOSTATE };

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		struct rec r = { 0 };
		struct hp_mem_stats ms;
		struct vmact_err err = { 0 };

		full(&r, states[i]);
		assert_int_equal(hp_mem_stats_from_params(r.p, r.n, &ms, &err), -ENODEV);
		assert_non_null(strstr(err.msg, "not running"));
		virTypedParamsFree(r.p, r.n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(figures),       cmocka_unit_test(paused),
		cmocka_unit_test(only_required), cmocka_unit_test(no_figures),
		cmocka_unit_test(no_usable),     cmocka_unit_test(stopped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
