/* SPDX-License-Identifier: Apache-2.0 */
/* The memory policy of a VM without an agent (actuator/policy/mem-demand.h)
 * on constructed samples, shaped like the test guest's (512 MiB plugged,
 * MemTotal 404 MiB, 256 MiB units): idle, allocating at a steady rate,
 * paging, freed, and what the decisions say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include "actuator/policy/mem-demand.h"

#define SEC 1000000000LL
#define MiB (1024ULL * 1024ULL)
/* The test guest: 512 MiB plugged shows as 404 MiB of MemTotal. */
#define OVERHEAD (108 * MiB)

struct fx {
	struct act_mem_policy p;
	struct act_mem_demand d;
	struct act_mem_decision dec;
	int64_t now;
};

static void init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	act_mem_policy_defaults(&f->p);
	act_mem_demand_init(&f->d);
	f->now = 100 * SEC;
}

/* One balloon sample a second later: plugged, used (MiB); MemTotal from
 * the overhead; paging counters. */
static void sample(struct fx *f, uint64_t plugged_mib, uint64_t used_mib, uint64_t faults,
		   uint64_t swap_in_mib)
{
	struct act_mem_sample s = {
		.source = ACT_MEM_SRC_BALLOON,
		.plugged = plugged_mib * MiB,
		.total = plugged_mib * MiB - OVERHEAD,
		.used = used_mib * MiB,
		.has_paging = true,
		.major_faults = faults,
		.swap_in_bytes = swap_in_mib * MiB,
	};

	f->now += SEC;
	s.at = f->now;
	act_mem_demand_feed(&f->d, &f->p, &s);
}

static void decide(struct fx *f)
{
	assert_true(act_mem_demand_decide(&f->d, &f->p, &f->dec));
}

static void test_nothing_yet(void **state)
{
	struct fx f;

	init(&f);
	assert_false(act_mem_demand_decide(&f.d, &f.p, &f.dec));
}

/* The idle test guest at its 512 MiB: 26 MiB used, enough; stays. */
static void test_idle_stays(void **state)
{
	struct fx f;

	init(&f);
	for (int i = 0; i < 30; i++)
		sample(&f, 512, 26, 10, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_OK);
	assert_int_equal(f.dec.goal, 512 * MiB);
	assert_int_equal(f.dec.headroom, 128 * MiB);
}

/* Allocating 64 MiB a second: memory is added ahead of the allocation —
 * as much of it as was seen (2 s) plus headroom — while the guest still
 * has 176 MiB free. */
static void test_filling_grows_ahead(void **state)
{
	struct fx f;

	init(&f);
	sample(&f, 512, 100, 0, 0);
	sample(&f, 512, 164, 0, 0);
	sample(&f, 512, 228, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_FILLING);
	assert_true(f.dec.growth > 63.0 * MiB && f.dec.growth < 65.0 * MiB);
	assert_int_equal(f.dec.span, 2 * SEC);
	/* 228 + 2 x 64 = 356 MiB projected, headroom 128, overhead 108: 592
	 * MiB, in 256 MiB units */
	assert_int_equal(f.dec.projected, 356 * MiB);
	assert_int_equal(f.dec.goal, 768 * MiB);
}

/* Still allocating across a resize: the first sample after it already
 * has the rate (its use does not depend on the size), and the next growth
 * comes at once, not after two new samples. */
static void test_growth_across_resize(void **state)
{
	struct fx f;

	init(&f);
	sample(&f, 512, 26, 0, 0);
	sample(&f, 512, 126, 0, 0);
	sample(&f, 512, 226, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_FILLING);
	assert_int_equal(f.dec.goal, 768 * MiB);
	act_mem_demand_resized(&f.d);
	/* the sample of the resize's second is not fed; the next one is */
	f.now += SEC;
	sample(&f, 768, 426, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_FILLING);
	assert_true(f.dec.growth > 99.0 * MiB && f.dec.growth < 101.0 * MiB);
	/* seen for 4 s: 426 + 4 x 100 = 826, headroom 206, overhead 108:
	 * 1140 MiB (enough until the sample after this plug, and the next) */
	assert_int_equal(f.dec.projected, 826 * MiB);
	assert_int_equal(f.dec.goal, 1280 * MiB);
}

/* A burst: 300 MiB within one sample interval. Projected one interval on
 * (the growth was seen for no longer), not 4 s: the VM is not grown to
 * five times what the guest asked for. */
static void test_burst_projected_as_seen(void **state)
{
	struct fx f;

	init(&f);
	sample(&f, 512, 26, 0, 0);
	sample(&f, 512, 326, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_FILLING);
	assert_int_equal(f.dec.span, SEC);
	/* 326 + 300 = 626 MiB, headroom 156, overhead 108: 890 MiB */
	assert_int_equal(f.dec.projected, 626 * MiB);
	assert_int_equal(f.dec.goal, 1024 * MiB);
}

/* Without a trend (one sample), use close to the size is enough to grow. */
static void test_full_without_trend(void **state)
{
	struct fx f;

	init(&f);
	sample(&f, 512, 350, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_FILLING);
	assert_int_equal(f.dec.span, 0);
	/* 350 + 128 + 108 = 586 MiB */
	assert_int_equal(f.dec.goal, 768 * MiB);
	/* and it never asks past what use plus headroom needs */
	sample(&f, 768, 350, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_OK);
	assert_int_equal(f.dec.goal, 768 * MiB);
}

/* Paging: MemAvailable looks fine (its cache counts as free), but 500
 * major faults a second say the guest is short: a unit more at once. */
static void test_paging_is_short(void **state)
{
	struct fx f;

	init(&f);
	sample(&f, 768, 200, 1000, 0);
	sample(&f, 768, 200, 1500, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_SHORT);
	assert_true(f.dec.fault_rate >= 499 && f.dec.fault_rate <= 501);
	assert_int_equal(f.dec.goal, 1024 * MiB);

	/* swap-in alone, 4 MiB/s */
	init(&f);
	sample(&f, 768, 200, 0, 10);
	sample(&f, 768, 200, 0, 14);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_SHORT);
	assert_int_equal(f.dec.goal, 1024 * MiB);

	/* a few faults a second are a guest reading its files: not short */
	init(&f);
	sample(&f, 768, 200, 0, 0);
	sample(&f, 768, 200, 20, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_OK);

	/* counters that went down (the guest rebooted) are no rate */
	init(&f);
	sample(&f, 768, 200, 100000, 500);
	sample(&f, 768, 200, 10, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_OK);
	assert_true(f.dec.fault_rate == 0 && f.dec.swap_in_rate == 0);
}

/* Freed: the shrink waits for the hold, then goes to the slow average of
 * use plus headroom, and step by step down to use plus headroom. */
static void test_freed_shrinks_after_hold(void **state)
{
	struct fx f;
	uint64_t size = 1536;
	int64_t freed_at;

	init(&f);
	for (int i = 0; i < 120; i++)
		sample(&f, size, 1100, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_OK);
	assert_int_equal(f.dec.goal, 1536 * MiB);

	freed_at = f.now;
	for (int i = 0; i < 14; i++) {
		sample(&f, size, 26, 0, 0);
		decide(&f);
		assert_int_equal(f.dec.goal, 1536 * MiB);
	}
	/* down to the units of the slow average plus headroom, never to what
	 * it uses this very second */
	for (;;) {
		sample(&f, size, 26, 0, 0);
		decide(&f);
		if (f.dec.goal < size * MiB)
			break;
		assert_true(f.now - freed_at < 120 * SEC);
	}
	assert_true(f.now - freed_at >= 15 * SEC);
	assert_true(f.dec.goal > 512 * MiB);
	size = f.dec.goal / MiB;
	act_mem_demand_resized(&f.d);
	/* after the resize, a new hold (the samples and their rates stay) */
	sample(&f, size, 26, 0, 0);
	decide(&f);
	assert_true(f.dec.span > 0);
	assert_int_equal(f.dec.goal, size * MiB);
	for (int i = 0; i < 300 && f.dec.goal == size * MiB; i++) {
		sample(&f, size, 26, 0, 0);
		decide(&f);
	}
	/* 26 MiB used + 128 headroom + 108 overhead = 262 MiB: two units */
	assert_int_equal(f.dec.goal, 512 * MiB);
}

/* A guest whose use rises again during the hold is not shrunk. */
static void test_hold_restarts(void **state)
{
	struct fx f;

	init(&f);
	for (int i = 0; i < 10; i++)
		sample(&f, 1024, 26, 0, 0);
	sample(&f, 1024, 700, 0, 0);
	decide(&f);
	assert_int_equal(f.dec.cls, ACT_MEM_FILLING);
	for (int i = 0; i < 10; i++) {
		sample(&f, 1024, 26, 0, 0);
		decide(&f);
		assert_int_equal(f.dec.goal, 1024 * MiB);
	}
}

/* The guest's exporter has no MemTotal: the overhead is the policy's. */
static void test_guest_metrics_source(void **state)
{
	struct fx f;
	struct act_mem_sample s = {
		.source = ACT_MEM_SRC_GUEST,
		.plugged = 512 * MiB,
		.used = 300 * MiB,
	};
	char buf[256];

	init(&f);
	s.at = f.now;
	act_mem_demand_feed(&f.d, &f.p, &s);
	decide(&f);
	/* 300 + 128 + 100 = 528 MiB > 512 */
	assert_int_equal(f.dec.cls, ACT_MEM_FILLING);
	assert_int_equal(f.dec.goal, 768 * MiB);
	assert_int_equal(act_mem_decision_reason(&f.dec, 512 * MiB, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "grow memory to 768 MiB: uses 300 MiB (of 512 MiB plugged) "
				 "(guest metrics)");
	/* a sample not newer than the last is ignored */
	s.used = 10 * MiB;
	act_mem_demand_feed(&f.d, &f.p, &s);
	decide(&f);
	assert_int_equal(f.dec.used, 300 * MiB);
}

static void test_texts(void **state)
{
	struct fx f;
	char buf[256];

	init(&f);
	sample(&f, 512, 100, 0, 0);
	sample(&f, 512, 164, 0, 0);
	sample(&f, 512, 228, 0, 0);
	decide(&f);
	assert_int_equal(act_mem_decision_format(&f.dec, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "filling: uses 228 MiB of 404 MiB, growing 64 MiB/s over 2.0 s "
				 "(balloon stats), headroom 128 MiB, goal 768 MiB");
	assert_int_equal(act_mem_decision_reason(&f.dec, 512 * MiB, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "grow memory to 768 MiB: uses 228 MiB of 404 MiB, growing 64 "
				 "MiB/s over 2.0 s (balloon stats)");
	/* too small a buffer: -1, never a cut line taken for whole */
	assert_int_equal(act_mem_decision_reason(&f.dec, 512 * MiB, buf, 20), -1);

	init(&f);
	sample(&f, 768, 200, 1000, 0);
	sample(&f, 768, 200, 1500, 0);
	decide(&f);
	assert_int_equal(act_mem_decision_reason(&f.dec, 768 * MiB, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "grow memory to 1024 MiB: uses 200 MiB of 660 MiB, 500 major "
				 "faults/s, swap-in 0.0 MiB/s (balloon stats)");
	assert_string_equal(act_mem_class_name(ACT_MEM_SHORT), "short");
	assert_string_equal(act_mem_source_name(ACT_MEM_SRC_BALLOON), "balloon stats");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_yet),
		cmocka_unit_test(test_idle_stays),
		cmocka_unit_test(test_filling_grows_ahead),
		cmocka_unit_test(test_burst_projected_as_seen),
		cmocka_unit_test(test_growth_across_resize),
		cmocka_unit_test(test_full_without_trend),
		cmocka_unit_test(test_paging_is_short),
		cmocka_unit_test(test_freed_shrinks_after_hold),
		cmocka_unit_test(test_hold_restarts),
		cmocka_unit_test(test_guest_metrics_source),
		cmocka_unit_test(test_texts),
	};

	return cmocka_run_group_tests_name("mem_demand", tests, NULL, NULL);
}
