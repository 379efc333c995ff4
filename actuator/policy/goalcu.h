/* SPDX-License-Identifier: Apache-2.0 */
/* Goal compute units (doc/protocols.md, "Goal compute units"): how many compute units the
 * metrics ask for. Pure arithmetic; warnings are collected as static
 * strings the caller may log. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-glue/codec/quantity.h"
#include "agent-glue/codec/scaling.h"
#include "base/error.h"

/* Warnings one decision may produce; messages are static strings spelled as
 * the Go agent logs them. */
#define ACT_WARN_MAX 8
struct act_warnings {
	unsigned n;
	const char *msg[ACT_WARN_MAX];
};
void act_warn(struct act_warnings *w, const char *msg);

#define ACT_WARN_MISSING_METRICS "Making scaling decision without all required metrics available"
#define ACT_WARN_NOT_ENOUGH_WSS  "not enough working set size values to make scaling determination"

/* host metrics as derived in doc/protocols.md, "Metrics inputs" (memory
 * usage already includes the 100 MiB). */
struct act_system_metrics {
	double load1, load5;
	double memory_usage_bytes;
	double memory_cached_bytes;
	/* The host could not read the guest's memory (vmactd: no balloon
	 * statistics). The two memory fields are then ignored, the goal has
	 * no memory part and the metrics count as incomplete, so desired
	 * resources never go below usage (doc/protocols.md,
	 * "Desired resources", step 5): CPU still scales up, nothing scales
	 * down. */
	bool memory_absent;
};

/* lfc_approximate_working_set_size_windows: pages[i] is the window of
 * (i+1) minutes, in 8 KiB pages. */
struct act_lfc_metrics {
	const double *wss_pages;
	size_t n;
};

struct act_goal {
	bool has_all_metrics;
	bool has_cpu, has_mem, has_lfc;
	double cpu, mem, lfc; /* the parts, in compute units */
	bool has_wss;
	uint64_t wss_bytes; /* projected working set, when has_wss */
	uint32_t goal_cu;
};

/* sys and lfc may be NULL (not scraped yet). cfg must pass
 * ag_scaling_config_validate (-EINVAL otherwise); cu must be non-zero. */
int act_goal_cu(const struct ag_scaling_config *cfg, const struct vmact_resources *cu,
		const struct act_system_metrics *sys, const struct act_lfc_metrics *lfc,
		struct act_goal *out, struct act_warnings *w, struct vmact_err *err);

/* max(parts) rounded up to whole CUs (the CPU part rounded half away, as
 * the Go agent does), without the CPU part when a CPU policy of vmact's own
 * sizes the CPU (doc/policy.md). */
uint32_t act_goal_from_parts(const struct act_goal *g, bool with_cpu);

/* The CPU part alone (load blend of the stable/mixed zones / target / cu). */
double act_goal_cpu_part(const struct ag_scaling_config *cfg, const struct vmact_resources *cu,
			 const struct act_system_metrics *sys);

/* EstimateTrueWorkingSetSize: -EINVAL if window < 2, initial_offset <
 * window - 1 or n == 0 (where Go panics). */
int act_wss_estimate(const double *series, size_t n, double factor, size_t initial_offset,
		     size_t window, double *out, struct vmact_err *err);

/* ProjectNextHighest: -EINVAL if n < 2 (where Go panics). */
int act_project_next_highest(const double *series, size_t n, double project_len, double *out,
			     struct vmact_err *err);

/* Go's math.Round: half away from zero. */
double act_round_half_away(double x);
