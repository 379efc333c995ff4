/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler's slots, its table of VMs (bpf/slots.c): lookups by name through its
 * hash chains stay right while slots are taken, freed from every position
 * of a chain and reused. The 40 names are picked so that they fall in 4 of
 * the 64 buckets (FNV-1a, as slots.c hashes): chains of about 10. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bpf/slots.h"

#define MAX 40

static char names[MAX][32];

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* "vm-<n>" names in buckets 0-3 of 64. */
static void pick_names(void)
{
	int k = 0;

	for (int i = 0; k < MAX; i++) {
		snprintf(names[k], sizeof(names[k]), "vm-%d", i);
		if ((fnv1a(names[k]) & 63) < 4)
			k++;
	}
}

static void add(struct smp_slots *reg, const char *name, pid_t tgid)
{
	struct vmact_err err = { 0 };
	int slot = smp_slots_reserve(reg, name, tgid, NULL, &err);

	if (slot < 0)
		fail_msg("reserve %s: %s", name, err.msg);
	/* Reserved but not committed: not found yet. */
	assert_int_equal(smp_slots_find(reg, name), -ENOENT);
	smp_slots_commit(reg, (unsigned)slot);
	assert_int_equal(smp_slots_find(reg, name), slot);
}

static void test_find(void **state)
{
	struct smp_slots reg;
	struct vmact_err err = { 0 };
	bool present[MAX] = { 0 };
	char name[32];

	(void)state;
	pick_names();
	assert_int_equal(smp_slots_init(&reg, MAX, &err), 0);
	assert_int_equal(reg.nbuckets, 64);
	assert_int_equal(smp_slots_find(&reg, names[0]), -ENOENT);
	for (int i = 0; i < MAX; i++) {
		memcpy(name, names[i], sizeof(name));
		add(&reg, name, 100 + i);
		present[i] = true;
	}
	assert_int_equal(reg.count, MAX);
	/* Free every third, then every other of the rest: heads, middles
	 * and tails of the chains. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = pass; i < MAX; i += pass ? 2 : 3) {
			int slot;

			if (!present[i])
				continue;
			memcpy(name, names[i], sizeof(name));
			slot = smp_slots_find(&reg, name);
			assert_true(slot >= 0);
			assert_int_equal(reg.e[slot].tgid, 100 + i);
			smp_slots_release(&reg, (unsigned)slot);
			present[i] = false;
		}
		for (int i = 0; i < MAX; i++) {
			int slot;

			memcpy(name, names[i], sizeof(name));
			slot = smp_slots_find(&reg, name);
			if (!present[i]) {
				assert_int_equal(slot, -ENOENT);
				continue;
			}
			assert_true(slot >= 0);
			assert_string_equal(reg.e[slot].name, name);
			assert_int_equal(reg.e[slot].tgid, 100 + i);
		}
	}
	/* The freed slots come back under other names. */
	for (int i = 0; i < MAX; i++) {
		if (present[i])
			continue;
		snprintf(name, sizeof(name), "again-%d", i);
		add(&reg, name, 1000 + i);
	}
	assert_int_equal(reg.count, MAX);
	for (int i = 0; i < MAX; i++) {
		int slot;

		if (present[i])
			memcpy(name, names[i], sizeof(name));
		else
			snprintf(name, sizeof(name), "again-%d", i);
		slot = smp_slots_find(&reg, name);
		assert_true(slot >= 0);
		assert_int_equal(reg.e[slot].tgid, (present[i] ? 100 : 1000) + i);
	}
	smp_slots_done(&reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests_name("smp_slots", tests, NULL, NULL);
}
