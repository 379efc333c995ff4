/* SPDX-License-Identifier: Apache-2.0 */
/* What the control API shows of a runner (control-json.h), and the last
 * change it records for it. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actuator/control/control-json.h"
#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "base/log.h"

void act_runner_view_change(struct act_runner *r, const char *what)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	r->view.last_change_usec = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	if (r->last_reason[0])
		snprintf(r->view.last_change, sizeof(r->view.last_change), "to %.80s: %.230s", what, r->last_reason);
	else
		snprintf(r->view.last_change, sizeof(r->view.last_change), "to %s", what);
}

void act_runner_shrink_blocked(const struct act_runner *r, char *buf, size_t len)
{
	const char *kind = r->meta.informant[0] ? "informant" : "vm-monitor";
	char a[80];

	buf[0] = 0;
	if (!r->ex.has_desired || !vmact_res_any_lt(r->ex.desired, r->st.using_) ||
	    r->meta.paused || r->api_vm)
		return;
	if (!r->meta.monitor[0] && !r->meta.informant[0]) {
		snprintf(buf, len,
			 "no vm-monitor or informant in its metadata: vmactd shrinks a VM "
			 "only with its guest's approval");
	} else if (!r->st.monitor.active) {
		snprintf(buf, len, "its %s at %s is not connected: no approval to shrink", kind,
			 r->meta.informant[0] ? r->meta.informant : r->meta.monitor);
	} else if (r->st.monitor.has_denied) {
		act_runner_fmt_res(a, sizeof(a), r->st.monitor.denied.requested);
		snprintf(buf, len, "its %s denied the last downscale (to %s); asked again later",
			 kind, a);
	} else if (r->rs.mem_hold_until > act_runner_now_ns(r) &&
		   r->ex.desired.mem_bytes < r->st.using_.mem_bytes) {
		snprintf(buf, len,
			 "the guest kept its memory at the last shrink: memory held for "
			 "%u s",
			 r->rs.mem_hold_s);
	} else if (vmact_res_any_gt(r->st.monitor.approved, r->ex.desired)) {
		act_runner_fmt_res(a, sizeof(a), r->st.monitor.approved);
		snprintf(buf, len, "waiting for its %s's approval (approved down to %s)", kind, a);
	}
}

void act_runner_view_note_shrink(struct act_runner *r)
{
	char why[sizeof(r->view.shrink_blocked)];

	act_runner_shrink_blocked(r, why, sizeof(why));
	if (why[0] && strcmp(why, r->view.shrink_blocked) != 0) {
		log_info("%s: cannot shrink: %s", r->name, why);
		act_event(r->env->events, r->name, ACT_EV_HOLD,
			  json_pack("{s:s}", "cannot_shrink", why), "cannot shrink: %s", why);
	}
	snprintf(r->view.shrink_blocked, sizeof(r->view.shrink_blocked), "%s", why);
}

void act_runner_view(const struct act_runner *r, struct act_vm_view *v)
{
	enum act_cpu_policy_mode pol = act_runner_cpu_policy(r);

	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", r->name);
	snprintf(v->uuid, sizeof(v->uuid), "%s", r->uuid);
	v->state = r->meta.paused ? ACT_VM_PAUSED : ACT_VM_MANAGED;
	if (r->rs.have_state) {
		v->vcpus = hp_state_vcpus(&r->rs.state);
		v->mem_bytes = hp_state_mem_kib(&r->rs.state) * 1024u;
	}
	v->quota_milli = r->quota_milli;
	v->using_ = r->st.using_;
	v->min = r->st.min;
	v->max = r->st.max;
	v->cu = r->st.cu;
	v->has_load = r->st.has_system;
	v->load1 = r->st.system.load1;
	v->load5 = r->st.system.load5;
	v->has_demand = r->ex.has_dec && pol == ACT_CPU_POLICY_REACTIVE;
	v->demand_class = act_cpu_class_name(r->ex.dec.cls);
	v->demand_cpus = r->ex.dec.demand;
	v->busy = r->ex.dec.busy;
	v->has_goal = r->st.has_cpu_goal;
	v->goal_milli = r->st.cpu_goal_milli;
	v->has_permit = r->st.plugin.has_permit;
	v->permit = r->st.plugin.permit;
	v->has_desired = r->ex.has_desired;
	v->desired = r->ex.desired;
	snprintf(v->permit_short, sizeof(v->permit_short), "%s", r->plugin.short_why);
	act_runner_shrink_blocked(r, v->cannot_shrink, sizeof(v->cannot_shrink));
	v->last_change_usec = r->view.last_change_usec;
	snprintf(v->last_change, sizeof(v->last_change), "%s", r->view.last_change);

	v->policy_cpu = pol == ACT_CPU_POLICY_NEON ? "neon" : "reactive";
	v->policy_shrink = act_runner_cpu_shrink(r) == ACT_CPU_SHRINK_UNPLUG ? "unplug" : "quota";
	snprintf(v->policy_source, sizeof(v->policy_source), "%s",
		 r->meta.policy_cpu != HP_POLICY_CPU_HOST ||
				 r->meta.policy_shrink != HP_POLICY_SHRINK_HOST
			 ? "vm"
			 : "host");
	v->load_target = r->st.config.load_average_fraction_target;
	v->mem_usage_target = r->st.config.memory_usage_fraction_target;
	v->scheduler = r->env->plugin_url ? "plugin" : "arbiter";
	if (r->env->plugin_url)
		snprintf(v->scheduler_url, sizeof(v->scheduler_url), "%s", r->env->plugin_url);
	v->scheduler_busy = r->plugin.busy;
	v->monitor_kind = r->meta.informant[0] ? "informant" : r->meta.monitor[0] ? "vm-monitor"
										 : "none";
	snprintf(v->monitor_endpoint, sizeof(v->monitor_endpoint), "%s",
		 r->meta.informant[0] ? r->meta.informant : r->meta.monitor);
	v->monitor_connected = r->st.monitor.active;
	v->resizing = r->rs.busy;
}
