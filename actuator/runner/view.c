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
#include "base/time.h"

void act_runner_view_change(struct act_runner *r, const struct vmact_resources *from,
			    const struct vmact_resources *to, const char *what)
{
	bool cpu = from->milli_cpu != to->milli_cpu && r->last_reason;
	bool mem = from->mem_bytes != to->mem_bytes && r->mem.last_reason;
	char text[ACT_EVENT_TEXT_MAX];
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	r->view.last_change_usec = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	/* The decision behind each part that moved. */
	if (cpu && mem)
		snprintf(text, sizeof(text), "to %.60s: %.125s; %.125s", what, r->last_reason,
			 r->mem.last_reason);
	else if (cpu || mem)
		snprintf(text, sizeof(text), "to %.80s: %.230s", what,
			 cpu ? r->last_reason : r->mem.last_reason);
	else if (r->last_reason)
		snprintf(text, sizeof(text), "to %.80s: %.230s", what, r->last_reason);
	else
		snprintf(text, sizeof(text), "to %s", what);
	act_runner_text_set(&r->view.last_change, text);
}

/* Where the CPU and memory figures come from, and the memory's. */
static void view_evidence(const struct act_runner *r, struct act_vm_view *v)
{
	const struct hp_mem_stats *b = r->mem.host ? &r->mem.balloon : &r->rd.balloon;
	const char *absent = r->mem.host ? act_runner_text(r->mem.absent) : "";
	act_time_t now = (act_time_t)vmact_loop_now_usec(r->env->event) * 1000;

	v->approval = r->approver ? act_approver_name(r->approver) : "host";
	if (r->rd.sampler_registered)
		v->cpu_source = r->ex.dec.has_guest_load ? "BPF, guest metrics" : "BPF";
	v->mem_policy = r->mem.host ? "host" : "neon";
	v->has_balloon = r->mem.host ? r->mem.has_balloon : r->rd.has_balloon;
	v->mem_source = r->rd.has_guest  ? "guest metrics"
			: v->has_balloon ? "balloon stats"
					 : "none";
	if (!strcmp(v->mem_source, "none"))
		snprintf(v->mem_why, sizeof(v->mem_why), "%.300s",
			 absent[0]                 ? absent
			 : r->rd.mem_absent_logged ? "no balloon statistics"
						   : "not read yet");
	if (v->has_balloon) {
		v->balloon.total = b->total_kib * 1024u;
		v->balloon.available = b->available_kib * 1024u;
		v->balloon.unused = b->unused_kib * 1024u;
		v->balloon.caches = b->caches_kib * 1024u;
		v->balloon.swap_in = b->swap_in_kib * 1024u;
		v->balloon.swap_out = b->swap_out_kib * 1024u;
		v->balloon.major_faults = b->major_faults;
		v->balloon.last_update = b->last_update;
		v->balloon.has_unused = b->has_unused;
		v->balloon.has_caches = b->has_caches;
		v->balloon.has_swap = b->has_swap;
		v->balloon.has_faults = b->has_faults;
	}
	v->has_mem_dec = r->mem.has_dec;
	if (r->mem.has_dec) {
		v->mem_class = act_mem_class_name(r->mem.dec.cls);
		v->mem_goal = r->st.has_mem_goal ? r->st.mem_goal_bytes : r->mem.dec.goal;
		v->mem_used = r->mem.dec.used;
		v->mem_headroom = r->mem.dec.headroom;
		v->mem_growth = r->mem.dec.growth;
		v->mem_fault_rate = r->mem.dec.fault_rate;
		v->mem_swap_in_rate = r->mem.dec.swap_in_rate;
	}
	if (r->rs.mem_hold_s && r->rs.mem_hold_until > now)
		v->mem_kept_s = (uint64_t)((r->rs.mem_hold_until - now) / ACT_SEC(1)) + 1;
}

void act_runner_shrink_blocked(const struct act_runner *r, char *buf, size_t len)
{
	const char *kind = r->meta.informant[0] ? "informant" : "vm-monitor";
	char a[80];

	buf[0] = 0;
	if (!r->ex.has_desired || !vmact_res_any_lt(r->ex.desired, r->st.using_) ||
	    r->meta.paused || r->meta.recommend || r->api_vm)
		return;
	if (!r->meta.monitor[0] && !r->meta.informant[0]) {
		/* The host approves its shrinks (doc/policy.md, "Without an
		 * agent"): only what it keeps out of that. */
		if (r->rs.mem_hold_until > act_runner_now_ns(r) &&
		    r->ex.desired.mem_bytes < r->st.using_.mem_bytes)
			snprintf(buf, len,
				 "the guest kept its memory at the last shrink: memory held for "
				 "%u s",
				 r->rs.mem_hold_s);
		else if (!r->st.host_approves.mem &&
			 r->ex.desired.mem_bytes < r->st.using_.mem_bytes)
			snprintf(buf, len,
				 "its memory is in DIMMs, which vmactd unplugs only with a "
				 "vm-monitor's approval (a DIMM unplug has crashed QEMU)");
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

void act_runner_decision_event(struct act_runner *r, json_t *fields, const char *text)
{
	if (!r->meta.recommend) {
		act_event(r->env->events, r->name, ACT_EV_DECISION, fields, "%s", text);
		return;
	}
	if (fields)
		json_object_set_new(fields, "recommendation", json_true());
	act_event(r->env->events, r->name, ACT_EV_DECISION, fields, "recommendation: %s", text);
}

void act_runner_view_note_recommend(struct act_runner *r, const struct vmact_resources *want)
{
	char a[80], b[80];

	if (r->view.has_recommended && vmact_res_eq(r->view.recommended, *want))
		return;
	r->view.has_recommended = true;
	r->view.recommended = *want;
	act_runner_fmt_res(a, sizeof(a), *want);
	act_runner_fmt_res(b, sizeof(b), r->st.using_);
	log_info("%s: recommends %s (runs with %s; mode recommend: not applied)", r->name, a, b);
	act_event(r->env->events, r->name, ACT_EV_RECOMMEND,
		  json_pack("{s:I,s:I,s:I,s:I}", "milli_cpu", (json_int_t)want->milli_cpu,
			    "mem_bytes", (json_int_t)want->mem_bytes, "using_milli_cpu",
			    (json_int_t)r->st.using_.milli_cpu, "using_mem_bytes",
			    (json_int_t)r->st.using_.mem_bytes),
		  "recommends %s (runs with %s; not applied: mode recommend)", a, b);
}

void act_runner_view_note_shrink(struct act_runner *r)
{
	char why[320];

	act_runner_shrink_blocked(r, why, sizeof(why));
	if (why[0] && strcmp(why, act_runner_text(r->view.shrink_blocked)) != 0) {
		log_info("%s: cannot shrink: %s", r->name, why);
		act_event(r->env->events, r->name, ACT_EV_HOLD,
			  json_pack("{s:s}", "cannot_shrink", why), "cannot shrink: %s", why);
	}
	act_runner_text_set(&r->view.shrink_blocked, why);
}

void act_runner_view(const struct act_runner *r, struct act_vm_view *v)
{
	enum act_cpu_policy_mode pol = act_runner_cpu_policy(r);

	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", r->name);
	snprintf(v->uuid, sizeof(v->uuid), "%s", r->uuid);
	v->state = act_runner_frozen(r) ? ACT_VM_FROZEN
		   : r->meta.paused     ? ACT_VM_PAUSED
					: ACT_VM_MANAGED;
	if (act_runner_frozen(r)) {
		snprintf(v->frozen_why, sizeof(v->frozen_why), "%s", act_runner_text(r->frz.why));
		v->frozen_since_usec = r->frz.since_usec;
		v->frozen_idle = !r->rs.busy && !r->approver_busy;
	}
	if (r->rs.have_state) {
		v->vcpus = r->rs.seen.vcpus;
		v->mem_bytes = r->rs.seen.mem_kib * 1024u;
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
	v->recommend = r->meta.recommend;
	v->migration = r->meta.migration;
	snprintf(v->permit_short, sizeof(v->permit_short), "%s",
		 act_runner_text(r->plugin.short_why));
	act_runner_shrink_blocked(r, v->cannot_shrink, sizeof(v->cannot_shrink));
	v->last_change_usec = r->view.last_change_usec;
	snprintf(v->last_change, sizeof(v->last_change), "%s",
		 act_runner_text(r->view.last_change));

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
	v->monitor_kind = r->meta.informant[0] ? "informant"
			  : r->meta.monitor[0] ? "vm-monitor"
					       : "none";
	snprintf(v->monitor_endpoint, sizeof(v->monitor_endpoint), "%s",
		 r->meta.informant[0] ? r->meta.informant : r->meta.monitor);
	v->monitor_connected = r->st.monitor.active;
	v->resizing = r->rs.busy;
	view_evidence(r, v);
}
