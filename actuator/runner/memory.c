/* SPDX-License-Identifier: Apache-2.0 */
/* The memory of a VM without a vm-monitor or informant (doc/policy.md,
 * "Without an agent"). Nobody in the guest says when it runs short, so the
 * host reads what the guest's virtio balloon driver reports
 * (virDomainMemoryStats) every second while no resize runs, feeds each new
 * sample (QEMU's last_update moved) to the memory policy
 * (actuator/policy/mem-demand.h), and its goal sizes the VM's memory
 * through the core; the guest's exporter (<vmact:metrics>) stands in where
 * the balloon has no figures. A VM without figures keeps its memory: the
 * goal is then its size, and why is said once, with the fix. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actuator/runner/runner-priv.h"
#include "agent-glue/codec/exporter.h"
#include "base/log.h"

#define MiB (1024ULL * 1024ULL)
/* No new sample for this long: the guest stopped sending statistics. */
#define STALE_NS ACT_SEC(60)
#define FIX                                                                                  \
	"add <memballoon model='virtio'><stats period='1'/></memballoon> to the domain and " \
	"load the guest's virtio_balloon driver"

void act_runner_mem_start(struct act_runner *r)
{
	act_mem_policy_defaults(&r->mem_policy);
	r->mem_policy.unit = r->st.cu.mem_bytes;
	act_mem_demand_init(&r->mem_demand);
	r->host_mem = !r->approver && !r->api_vm;
	/* Until the first sample, the memory stays as it is. */
	if (r->host_mem)
		act_state_update_mem_goal(&r->st, true, r->st.using_.mem_bytes);
}

void act_runner_mem_absent(struct act_runner *r, const char *why)
{
	char size[32];

	if (!why) {
		if (r->mem_absent[0])
			log_info("%s: guest memory statistics available again", r->name);
		r->mem_absent[0] = 0;
		return;
	}
	if (!r->mem_absent[0]) {
		vmact_quantity_format_bytes(r->st.using_.mem_bytes, size, sizeof(size));
		log_warning("%s: no guest memory statistics (%s): its memory stays at %s and does "
			    "not drive scaling; to scale it, " FIX,
			    r->name, why, size);
		act_event(r->env->events, r->name, ACT_EV_DECISION,
			  json_pack("{s:s,s:s,s:s}", "resource", "memory", "source", "none", "fix",
				    "<memballoon model='virtio'><stats period='1'/></memballoon>"),
			  "memory stays at %s: no guest memory statistics (%s)", size, why);
	}
	snprintf(r->mem_absent, sizeof(r->mem_absent), "%s", why);
}

/* No figures: the memory is kept where it is, and the Neon formula's
 * memory part (which the core would fall back to) is marked unknown at
 * once, so that no old figure shrinks it meanwhile. */
static bool no_figures(struct act_runner *r, const char *why)
{
	bool changed = !r->st.has_mem_goal || r->st.mem_goal_bytes != r->st.using_.mem_bytes;

	act_runner_mem_absent(r, why);
	r->has_mem_dec = false;
	act_state_update_mem_goal(&r->st, true, r->st.using_.mem_bytes);
	if (r->st.has_system && !r->st.system.memory_absent) {
		struct act_system_metrics m = r->st.system;

		m.memory_absent = true;
		act_state_update_system_metrics(&r->st, &m, NULL);
		changed = true;
	}
	return changed;
}

static uint64_t clamp_u64(uint64_t x, uint64_t lo, uint64_t hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/* A new sample: the policy's decision, and the core's memory goal when it
 * changed, logged with its figures. */
static bool feed(struct act_runner *r, const struct act_mem_sample *s)
{
	struct act_mem_decision dec;
	char why[320];
	uint64_t goal;

	act_mem_demand_feed(&r->mem_demand, &r->mem_policy, s);
	if (!act_mem_demand_decide(&r->mem_demand, &r->mem_policy, &dec))
		return false;
	r->mem_dec = dec;
	r->has_mem_dec = true;
	/* Within the bounds, so that a guest wanting more than its max asks
	 * once, not at every sample. */
	goal = clamp_u64(dec.goal, r->st.min.mem_bytes, r->st.max.mem_bytes);
	if (r->st.has_mem_goal && goal == r->st.mem_goal_bytes)
		return false;
	act_mem_decision_format(&dec, why, sizeof(why));
	log_info("%s: memory %s", r->name, why);
	act_mem_decision_reason(&dec,
				r->st.has_mem_goal ? r->st.mem_goal_bytes : r->st.using_.mem_bytes,
				r->last_mem_reason, sizeof(r->last_mem_reason));
	act_event(r->env->events, r->name, ACT_EV_DECISION,
		  json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:f}", "resource", "memory",
			    "class", act_mem_class_name(dec.cls), "source",
			    act_mem_source_name(dec.source), "goal_mem_bytes", (json_int_t)goal,
			    "used_bytes", (json_int_t)dec.used, "total_bytes",
			    (json_int_t)dec.total, "headroom_bytes", (json_int_t)dec.headroom,
			    "growth_bytes_per_s", dec.growth, "major_faults_per_s", dec.fault_rate,
			    "swap_in_bytes_per_s", dec.swap_in_rate),
		  "%s", r->last_mem_reason);
	act_state_update_mem_goal(&r->st, true, goal);
	return true;
}

bool act_runner_mem_read(struct act_runner *r)
{
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };
	act_time_t now = act_runner_now_ns(r);
	struct act_mem_sample s;

	if (hp_mem_stats_read(r->env->hp, r->uuid, &ms, &err) < 0 ||
	    ms.total_kib < ms.available_kib) {
		r->has_balloon = false;
		/* The exporter's figures carry on where the VM has one. */
		if (r->has_guest)
			return false;
		return no_figures(r, err.msg[0] ? err.msg : "MemAvailable above MemTotal");
	}
	r->balloon = ms;
	r->has_balloon = true;
	/* A sample is new when QEMU's last_update moved (whole seconds, so
	 * a stats period below 1 s is read once a second). */
	if (ms.last_update && ms.last_update == r->balloon_update) {
		if (now - r->balloon_update_at <= STALE_NS)
			return false;
		r->has_balloon = false;
		return no_figures(r, "the guest has sent no new balloon statistics for 60 s");
	}
	r->balloon_update = ms.last_update;
	r->balloon_update_at = now;
	/* Taken before the last resize ended: it describes the old size. */
	if (ms.last_update && ms.last_update <= r->balloon_fence)
		return false;
	act_runner_mem_absent(r, NULL);
	s = (struct act_mem_sample){
		.at = now,
		.source = ACT_MEM_SRC_BALLOON,
		.plugged = r->st.using_.mem_bytes,
		.total = ms.total_kib * 1024u,
		.used = (ms.total_kib - ms.available_kib) * 1024u,
		.has_paging = ms.has_faults,
		.major_faults = ms.major_faults,
		.swap_in_bytes = ms.swap_in_kib * 1024u,
	};
	return feed(r, &s);
}

bool act_runner_mem_guest(struct act_runner *r, const struct act_system_metrics *g)
{
	double used = g->memory_usage_bytes - AG_EXPORTER_MEMORY_SLACK_BYTES;
	struct act_mem_sample s = {
		.at = act_runner_now_ns(r),
		.source = ACT_MEM_SRC_GUEST,
		.plugged = r->st.using_.mem_bytes,
		.used = used > 0 ? (uint64_t)used : 0,
	};

	if (!r->host_mem || r->has_balloon || r->hp_busy)
		return false;
	act_runner_mem_absent(r, NULL);
	return feed(r, &s);
}

void act_runner_mem_resized(struct act_runner *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	r->balloon_fence = (uint64_t)ts.tv_sec;
	act_mem_demand_resized(&r->mem_demand);
	/* Kept memory follows the size the VM now has. */
	if (r->host_mem && r->mem_absent[0])
		act_state_update_mem_goal(&r->st, true, r->st.using_.mem_bytes);
}

bool act_runner_mem_stats(const struct act_runner *r, struct hp_mem_stats *out)
{
	if (!r->has_balloon)
		return false;
	*out = r->balloon;
	return true;
}
