/* SPDX-License-Identifier: Apache-2.0 */
/* Throttling counters of a cgroup's cpu.stat, v1 (cpu controller:
 * nr_periods, nr_throttled, throttled_time in ns) or v2 (nr_periods,
 * nr_throttled, throttled_usec). A small local reader: the cgroup component
 * owns cgroups, the sampler only needs these three numbers. */
#pragma once

#include <stdint.h>

#include "base/error.h"

struct smp_cpu_stat {
	uint64_t nr_periods;
	uint64_t nr_throttled;
	uint64_t throttled_ns;
};

/* Parses the text of a cpu.stat file. Unknown keys are skipped; a known key
 * with a malformed value, or a missing one, is an error naming it. */
int smp_cpu_stat_parse(const char *text, struct smp_cpu_stat *out, struct vmact_err *err);
/* Reads <dir>/cpu.stat. */
int smp_cpu_stat_read(const char *dir, struct smp_cpu_stat *out, struct vmact_err *err);
