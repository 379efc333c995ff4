/* SPDX-License-Identifier: Apache-2.0 */
/* Desired resources (doc/protocols.md, "Desired resources"): goal compute units plus the
 * vm-monitor's requested-upscale and denied-downscale floors, bounded by the
 * VM's min/max. Pure; the clock is the caller's monotonic `now`. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "actuator/policy/goalcu.h"

/* Monotonic time and durations in nanoseconds. */
typedef int64_t act_time_t;
#define ACT_MS(x)  ((int64_t)(x)*1000000LL)
#define ACT_SEC(x) ((int64_t)(x)*1000000000LL)

/* UpscaleRequest from the vm-monitor; base = monitor-approved at receipt. */
struct act_requested_upscale {
	act_time_t at;
	struct vmact_resources base;
	bool cpu, mem;
};

/* DownscaleResult{Ok:false}: current = approved when asked, requested = the
 * target that was denied. */
struct act_denied_downscale {
	act_time_t at;
	struct vmact_resources current, requested;
};

#define ACT_WARN_DENIED_ABOVE_MAX                                                                 \
	"Can't decrease desired resources to within VM maximum because of vm-monitor previously " \
	"denied downscale request"

struct act_desired_input {
	const struct ag_scaling_config *cfg;
	struct vmact_resources cu;
	struct vmact_resources using_, min, max;
	const struct act_system_metrics *sys;                  /* NULL: not scraped */
	const struct act_lfc_metrics *lfc;                     /* NULL: not scraped */
	const struct act_requested_upscale *requested_upscale; /* NULL: none */
	int64_t requested_upscale_valid;           /* monitor.requestedUpscaleValidSeconds */
	const struct act_denied_downscale *denied; /* NULL: none */
	int64_t denied_cooldown;                   /* monitor.retryDeniedDownscaleSeconds */
	/* The reactive policy's CPU goal (milli-CPU), which then sizes the CPU
	 * instead of the goal CUs; the CUs size memory alone. NULL: the Neon
	 * goal-CU policy sizes both, as the Go agent does. */
	const uint32_t *cpu_goal_milli;
	/* The memory the host's evidence asks for (bytes), which then sizes
	 * memory instead of the goal CUs (a VM without a monitor). NULL: the
	 * goal CUs. */
	const uint64_t *mem_goal_bytes;
};

struct act_desired {
	struct vmact_resources res;
	struct act_goal goal;
	bool requested_upscale_affected;
	int64_t requested_upscale_expires_in;
	bool denied_affected;
	int64_t denied_expires_in;
};

/* -EINVAL (with a message) on unusable input: zero compute unit, min > max,
 * invalid config. Never produces a field below min, nor above max unless a
 * denied downscale keeps it at the level the VM already had. */
int act_desired_resources(const struct act_desired_input *in, act_time_t now,
			  struct act_desired *out, struct act_warnings *w, struct vmact_err *err);

/* The extra wake-up the desired value needs: when the requested upscale that
 * raised it expires, and when the denial that raised it expires if no
 * monitor downscale is planned or any monitor request ongoing. Returns false
 * when there is nothing to wait for. */
bool act_desired_wait(const struct act_desired *d, bool monitor_downscale_planned,
		      bool monitor_request_ongoing, int64_t *wait);
