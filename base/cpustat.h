/* SPDX-License-Identifier: Apache-2.0 */
/* The one reader of a cgroup's cpu.stat, for cgroup v1 (cpu controller:
 * nr_periods, nr_throttled, throttled_time and burst_time in ns) and v2
 * (usage_usec, ..., nr_periods, nr_throttled, throttled_usec, nr_bursts,
 * burst_usec). Times come out in ns whatever the version, so a v1 value
 * keeps its precision. The sampler reads the throttling counters of each
 * VM with it, the cgroup code its usage. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Longest cpu.stat accepted: the kernel writes a few hundred bytes; a file
 * that fills this is refused rather than parsed cut. */
#define VMACT_CPUSTAT_MAX 4096

struct vmact_cpustat {
	int version; /* 1: throttled_time seen, 2: throttled_usec seen */
	uint64_t nr_periods;
	uint64_t nr_throttled;
	uint64_t throttled_ns;
	uint64_t nr_bursts; /* 0 on kernels without CFS burst */
	uint64_t burst_ns;
	bool has_usage; /* v2 always; v1 only when the caller adds cpuacct.usage */
	uint64_t usage_ns;
};

/* Parses the text of a cpu.stat file. Unknown keys are skipped; a known key
 * seen twice, with a value that is not a plain decimal, or out of range, is
 * an error naming it, and so are a missing nr_periods, nr_throttled or
 * throttled time (the v2 file of a group whose cpu controller is not
 * enabled shows only the usage fields), both throttled_time and
 * throttled_usec, and a v2 file without usage_usec. Errors are -EPROTO,
 * or -ERANGE for a number beyond 64 bits. */
int vmact_cpustat_parse(const char *text, struct vmact_cpustat *out, struct vmact_err *err);

/* Reads and parses <dir>/cpu.stat; errors are prefixed with the path. */
int vmact_cpustat_read(const char *dir, struct vmact_cpustat *out, struct vmact_err *err);

/* Descriptors at or above this are not kept open: a host with many VMs
 * (sampler.max_vms is 1024) leaves the rest of a service's usual soft limit
 * of 1024 to vmactd's sockets, and those VMs' cpu.stat is opened for each
 * read, as vmact_cpustat_read does. */
#define VMACT_CPUSTAT_KEEP_FD_MAX 512

/* The same for a reader that comes back often (the sampler, every policy
 * tick): *fd is <dir>/cpu.stat kept open between calls (-1: opened here and
 * left open in *fd unless its number is VMACT_CPUSTAT_KEEP_FD_MAX or more),
 * re-read from its start. A read through a descriptor kept from before that
 * fails (the group was removed and made again) is retried once through a
 * fresh open, so the result is the one vmact_cpustat_read would give; on
 * failure *fd is -1. */
int vmact_cpustat_read_cached(const char *dir, int *fd, struct vmact_cpustat *out,
			      struct vmact_err *err);

/* Change from prev to cur, counter by counter (usage only when both have
 * it). Returns 1 when a counter went backwards: the group was recreated
 * (the VM restarted), and delta is then cur, counted from the new group's
 * start; 0 otherwise. */
int vmact_cpustat_delta(const struct vmact_cpustat *prev, const struct vmact_cpustat *cur,
			struct vmact_cpustat *delta);
