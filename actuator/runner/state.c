/* SPDX-License-Identifier: Apache-2.0 */
/* What every concern of a runner reads or does to its core state: the
 * loop's clock, the policies in effect for the VM, its CFS quota, how a
 * size is written in log lines, and how its texts are kept. Calls nothing
 * else of the runner. */
#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actuator/cgroup/cgroup.h"
#include "base/log.h"
#include "base/quantity.h"
#include "base/time.h"

void act_runner_text_set(char **dst, const char *text)
{
	if (*dst && strcmp(*dst, text) == 0)
		return;
	free(*dst);
	*dst = text[0] ? strdup(text) : NULL;
}

void act_runner_pod_key(const struct act_runner *r, const char **ns, const char **name)
{
	*ns = r->meta.pod_namespace[0] ? r->meta.pod_namespace : "default";
	*name = r->meta.pod_name[0] ? r->meta.pod_name : r->name;
}

void act_runner_freeze_set(struct act_runner *r, enum act_runner_freeze_source src, bool on,
			   const char *why)
{
	bool was = act_runner_frozen(r);
	struct timespec ts;

	r->frz.by = on ? r->frz.by | src : r->frz.by & ~(unsigned)src;
	if (was == act_runner_frozen(r))
		return;
	act_runner_text_set(&r->frz.why, on ? why : "");
	r->frz.reported = false;
	clock_gettime(CLOCK_REALTIME, &ts);
	r->frz.since_usec = on ? (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u : 0;
	log_info("%s: %s for migration: %s", r->name, on ? "frozen" : "unfrozen", why);
	act_event(r->env->events, r->name, ACT_EV_MIGRATION,
		  json_pack("{s:b,s:s}", "frozen", on, "source",
			    src == ACT_RUNNER_FREEZE_LEASE ? "arbiter" : "plugin"),
		  "%s for migration: %s", on ? "frozen" : "unfrozen", why);
}

act_time_t act_runner_now_ns(const struct act_runner *r)
{
	return (act_time_t)vmact_loop_now_usec(r->env->event) * 1000;
}

void act_runner_seen_set(struct act_runner *r, const struct hp_state *st)
{
	r->rs.seen.vcpus = hp_state_vcpus(st);
	r->rs.seen.mem_kib = hp_state_mem_kib(st);
	r->rs.seen.base_kib = st->base_kib;
	r->rs.have_state = true;
}

void act_runner_fmt_res(char *buf, size_t len, struct vmact_resources x)
{
	char c[32], m[32];

	vmact_quantity_format_milli(x.milli_cpu, c, sizeof(c));
	vmact_quantity_format_bytes(x.mem_bytes, m, sizeof(m));
	snprintf(buf, len, "%s CPU / %s", c, m);
}

int act_runner_write_quota(struct act_runner *r, uint32_t milli, struct vmact_err *err)
{
	struct act_cpu_bw bw;
	int ret;

	ret = act_cpu_bw_from_milli(milli, r->env->overcommit, ACT_CPU_PERIOD_DEFAULT_US, &bw, NULL,
				    err);
	if (ret >= 0)
		ret = act_cg_cpu_set(r->env->cg, r->group, &bw, err);
	if (ret < 0)
		return ret;
	r->quota_milli = milli;
	return 0;
}

enum act_cpu_policy_mode act_runner_cpu_policy(const struct act_runner *r)
{
	switch (r->meta.policy_cpu) {
	case HP_POLICY_CPU_REACTIVE:
		return ACT_CPU_POLICY_REACTIVE;
	case HP_POLICY_CPU_NEON:
		return ACT_CPU_POLICY_NEON;
	default:
		return r->env->cfg->cpu_policy;
	}
}

enum act_cpu_shrink_mode act_runner_cpu_shrink(const struct act_runner *r)
{
	switch (r->meta.policy_shrink) {
	case HP_POLICY_SHRINK_QUOTA:
		return ACT_CPU_SHRINK_QUOTA;
	case HP_POLICY_SHRINK_UNPLUG:
		return ACT_CPU_SHRINK_UNPLUG;
	default:
		/* An unplug loses the way back up on some hosts
		 * (doc/notes/vcpu-unplug.md): a VM whose shrinks nobody approves
		 * unplugs only when its own metadata asks. */
		if (!r->approver && !r->api_vm)
			return ACT_CPU_SHRINK_QUOTA;
		return r->env->cfg->cpu_shrink;
	}
}
