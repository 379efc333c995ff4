/* SPDX-License-Identifier: Apache-2.0 */
/* Measured CPU use for the cgroup integration tests: utime+stime of a
 * process or thread from /proc, over monotonic wall time. Ratios, not
 * timings: a test compares them with a quota or a control run. Time comes
 * from th_now_s() (tests/lib/wait.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* CPU seconds from a /proc/<pid>[/task/<tid>]/stat file; false if it is
 * gone or unreadable. */
bool cpu_use_read(const char *stat_path, double *secs);

/* Waits out a measuring window (not a synchronisation sleep). */
void cpu_use_window(double secs);

/* Judges a limited run of an always-busy workload against quota q (CPUs),
 * with the same workload's unlimited control run and the group's cpu.stat
 * deltas over the limited window. Never above q + 10 %: asserted always
 * (contention cannot cause excess). Not below q - 10 %: asserted only when
 * observable — the control got clearly more than the band (> 1.1 q) and
 * the group was throttled in at least 90 % of the periods (a busy group
 * not throttled in a period did not get its quota there: the box was busy
 * elsewhere). Otherwise the numbers are reported and the case skipped
 * (cmocka). */
void cpu_use_judge(const char *what, double q, double control, double limited, uint64_t throttled,
		   uint64_t periods);
