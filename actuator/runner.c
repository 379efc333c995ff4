/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/runner.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "actuator/cgroup-domain.h"
#include "base/log.h"
#include "base/macro.h"
#include "agent-glue/http-client.h"
#include "agent-glue/informant-client.h"
#include "agent-glue/monitor-client.h"
#include "agent-glue/plugin-client.h"
#include "bpf/sampler.h"
#include "hotplug/domain.h"
#include "base/time.h"

#define MiB (1024ULL * 1024ULL)
/* §5.2: MemoryUsageBytes = total - available + 100 MiB. */
#define MEM_USAGE_PAD (100ULL * MiB)

/* ---- pure planning ---------------------------------------------------- */

static uint64_t round_down(uint64_t x, uint64_t unit)
{
	return unit ? x / unit * unit : x;
}

static uint64_t round_up(uint64_t x, uint64_t unit)
{
	return unit ? (x + unit - 1) / unit * unit : x;
}

static unsigned vcpus_for(uint32_t milli)
{
	return (unsigned)((milli + 999u) / 1000u);
}

/* The memory the layout can give closest to want without passing it
 * (from cur's side). */
static uint64_t mem_representable(uint64_t cur, uint64_t want, const struct act_vm_layout *l)
{
	uint64_t extra, unit, cap;

	if (want == cur)
		return cur;
	if (l->method == HP_METHOD_VIRTIO_MEM) {
		unit = l->vmem_block_bytes;
		cap = l->vmem_size_bytes;
	} else {
		unit = l->dimm_bytes;
		cap = (uint64_t)l->dimm_slots * l->dimm_bytes;
	}
	if (want <= l->base_bytes)
		extra = 0;
	else
		extra = want - l->base_bytes;
	extra = want > cur ? round_down(extra, unit) : round_up(extra, unit);
	if (extra > round_down(cap, unit))
		extra = round_down(cap, unit);
	want = l->base_bytes + extra;
	/* Never past cur in the other direction: a rounding that would turn
	 * a growth into a shrink (or back) means "nothing possible". */
	return want;
}

static int check_field(const char *what, uint64_t cur, uint64_t want, uint64_t min, uint64_t max,
		       bool has_permit, uint64_t permit, bool has_approved, uint64_t approved,
		       struct vmact_err *err)
{
	if (want > cur) {
		if (want > max)
			return vmact_err_set(err, ERANGE, "%s %" PRIu64 " above the VM's max %" PRIu64,
					     what, want, max);
		if (!has_permit)
			return vmact_err_set(err, ERANGE, "%s growth to %" PRIu64
					     " without a permit from the scheduler", what, want);
		if (want > permit)
			return vmact_err_set(err, ERANGE, "%s %" PRIu64 " above the permit %" PRIu64,
					     what, want, permit);
	} else if (want < cur) {
		if (want < min)
			return vmact_err_set(err, ERANGE, "%s %" PRIu64 " below the VM's min %" PRIu64,
					     what, want, min);
		if (!has_approved)
			return vmact_err_set(err, ERANGE, "%s shrink to %" PRIu64
					     " without the vm-monitor's approval", what, want);
		if (want < approved)
			return vmact_err_set(err, ERANGE, "%s %" PRIu64
					     " below what the vm-monitor approved (%" PRIu64 ")",
					     what, want, approved);
	}
	return 0;
}

int act_plan_hotplug(const struct vmact_resources *using_, const struct vmact_resources *want,
		     const struct act_plan_limits *lim, const struct act_vm_layout *l,
		     struct act_plan *out, struct vmact_err *err)
{
	struct vmact_resources t;
	uint64_t cpu;
	int r;

	memset(out, 0, sizeof(*out));
	r = check_field("cpu (milli-CPUs)", using_->milli_cpu, want->milli_cpu, lim->min.milli_cpu,
			lim->max.milli_cpu, lim->has_permit, lim->permit.milli_cpu, lim->has_approved,
			lim->approved.milli_cpu, err);
	if (r >= 0)
		r = check_field("memory (bytes)", using_->mem_bytes, want->mem_bytes,
				lim->min.mem_bytes, lim->max.mem_bytes, lim->has_permit,
				lim->permit.mem_bytes, lim->has_approved, lim->approved.mem_bytes,
				err);
	if (r < 0)
		return r;

	/* CPU: any milli-CPU count is a quota; the vCPUs are capped by the
	 * domain's maximum (a growth then stops at whole maximum vCPUs). */
	cpu = want->milli_cpu;
	{
		unsigned top = l->vcpus_locked ? l->vcpus_now : l->vcpus_max;

		if (cpu > using_->milli_cpu && vcpus_for((uint32_t)cpu) > top)
			cpu = (uint64_t)top * 1000u;
	}
	if ((want->milli_cpu > using_->milli_cpu && cpu < using_->milli_cpu) || cpu == 0)
		cpu = using_->milli_cpu;
	t.milli_cpu = (uint32_t)cpu;

	t.mem_bytes = mem_representable(using_->mem_bytes, want->mem_bytes, l);
	if ((want->mem_bytes > using_->mem_bytes && t.mem_bytes < using_->mem_bytes) ||
	    (want->mem_bytes < using_->mem_bytes && t.mem_bytes > using_->mem_bytes) ||
	    want->mem_bytes == using_->mem_bytes)
		t.mem_bytes = using_->mem_bytes;
	out->target = t;

	if (t.milli_cpu < using_->milli_cpu) {
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_QUOTA,
							  .milli = t.milli_cpu };
		if (!l->vcpus_locked && vcpus_for(t.milli_cpu) < l->vcpus_now)
			out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_VCPUS,
								  .vcpus = vcpus_for(t.milli_cpu) };
	} else if (t.milli_cpu > using_->milli_cpu && !l->vcpus_locked &&
		   vcpus_for(t.milli_cpu) > l->vcpus_now) {
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_VCPUS,
							  .vcpus = vcpus_for(t.milli_cpu) };
	}
	if (t.mem_bytes != using_->mem_bytes)
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_MEM,
							  .mem_bytes = t.mem_bytes };
	if (t.milli_cpu > using_->milli_cpu)
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_QUOTA,
							  .milli = t.milli_cpu };
	return 0;
}

struct vmact_resources act_achieved(uint32_t quota_milli, unsigned vcpus, uint64_t mem_bytes)
{
	uint64_t cpu = (uint64_t)vcpus * 1000u;

	if (quota_milli && quota_milli < cpu)
		cpu = quota_milli;
	return (struct vmact_resources){ .milli_cpu = cpu > UINT32_MAX ? UINT32_MAX : (uint32_t)cpu,
				      .mem_bytes = mem_bytes };
}

void act_vm_layout_from_state(const struct hp_state *st, const struct hp_meta *meta,
			      uint64_t dimm_bytes, struct act_vm_layout *out)
{
	const struct hp_memdev *d;

	memset(out, 0, sizeof(*out));
	out->vcpus_max = st->vcpus_max;
	out->vcpus_now = hp_state_vcpus(st);
	out->vcpus_locked = st->vcpus_refused;
	out->base_bytes = st->base_kib * 1024u;
	out->method = meta->method;
	d = hp_state_memdev(st, meta->mem_alias, HP_MEM_VIRTIO_MEM);
	if (d) {
		out->vmem_size_bytes = d->size_kib * 1024u;
		out->vmem_block_bytes = d->block_kib * 1024u;
	}
	out->dimm_bytes = dimm_bytes;
	out->dimm_slots = st->slots;
	out->dimms_now = hp_state_dimms(st);
	if (meta->method == HP_METHOD_DIMM && st->max_memory_kib) {
		uint64_t room = st->max_memory_kib * 1024u - out->base_bytes;
		uint64_t fit = dimm_bytes ? room / dimm_bytes : 0;

		if (fit < out->dimm_slots)
			out->dimm_slots = (unsigned)fit;
	}
	if (meta->method == HP_METHOD_VIRTIO_MEM && !d)
		out->vmem_size_bytes = 0; /* nothing to resize: memory stays */
}

int act_meta_scaling_config(const struct ag_scaling_config *defaults, const struct hp_meta *meta,
			    struct ag_scaling_config *out, struct vmact_err *err)
{
	const struct hp_scaling *s = &meta->scaling;
	struct ag_scaling_overrides o = { 0 };

	if (s->has_load_avg_target) {
		o.set |= AG_SC_LOAD_AVERAGE_FRACTION_TARGET;
		o.v.load_average_fraction_target = s->load_avg_target;
	}
	if (s->has_mem_usage_target) {
		o.set |= AG_SC_MEMORY_USAGE_FRACTION_TARGET;
		o.v.memory_usage_fraction_target = s->mem_usage_target;
	}
	if (s->has_mem_total_target) {
		o.set |= AG_SC_MEMORY_TOTAL_FRACTION_TARGET;
		o.v.memory_total_fraction_target = s->mem_total_target;
	}
	if (s->has_enable_lfc) {
		o.set |= AG_SC_ENABLE_LFC_METRICS;
		o.v.enable_lfc_metrics = s->enable_lfc;
	}
	if (s->has_cpu_stable_zone) {
		o.set |= AG_SC_CPU_STABLE_ZONE_RATIO;
		o.v.cpu_stable_zone_ratio = s->cpu_stable_zone;
	}
	if (s->has_cpu_mixed_zone) {
		o.set |= AG_SC_CPU_MIXED_ZONE_RATIO;
		o.v.cpu_mixed_zone_ratio = s->cpu_mixed_zone;
	}
	return ag_scaling_config_effective(defaults, &o, out, err);
}

/* ---- the executor ------------------------------------------------------ */

struct act_runner {
	struct act_runner_env *env;
	char name[HP_NAME_MAX];
	char uuid[HP_UUID_LEN];
	struct hp_meta meta;
	struct act_state st;

	char *group;            /* cpu cgroup of the whole VM */
	pid_t pid;
	uint32_t quota_milli;   /* last quota written (0 = none yet) */
	bool sampler_registered;
	bool mem_absent_logged, load_error_logged;

	sd_event_source *wake, *metrics;

	struct ag_http_client *http;
	struct ag_plugin_client *plugin;
	bool plugin_busy;

	struct ag_mon_client *mon;
	bool mon_busy; /* a monitor or informant up/downscale is pending */

	/* Legacy informant (instead of mon). */
	struct act_inf_link *inf;
	enum ag_inf_mode inf_mode;
	unsigned inf_failures;   /* server exits since the last time running */
	bool inf_held_logged;    /* "holding a resize" said for this suspension */
	char inf_reason[VMACT_ERR_MSG_MAX]; /* last reason logged */

	/* The hotplug in progress: its plan, the step being done. */
	bool hp_busy;
	struct act_plan plan;
	unsigned step;
	bool dimm_attach; /* the DIMM step grows */
	bool hp_failed;
	bool have_state;
	struct hp_state hp_state; /* re-read after the last operation */
	char hp_error[VMACT_ERR_MSG_MAX];
	char last_hp_error[VMACT_ERR_MSG_MAX];

	unsigned last_warn_hash;
	bool freeing;
};

static act_time_t now_ns(struct act_runner *r)
{
	return (act_time_t)vmact_loop_now_usec(r->env->event) * 1000;
}

static void fmt_res(char *buf, size_t len, struct vmact_resources x)
{
	char c[32], m[32];

	vmact_quantity_format_milli(x.milli_cpu, c, sizeof(c));
	vmact_quantity_format_bytes(x.mem_bytes, m, sizeof(m));
	snprintf(buf, len, "%s CPU / %s", c, m);
}

static void evaluate(struct act_runner *r);

static int on_wake(sd_event_source *s, uint64_t usec, void *ud)
{
	evaluate(ud);
	return 0;
}

static void arm_wake(struct act_runner *r, int64_t wait_ns)
{
	uint64_t now = 0, at;

	sd_event_now(r->env->event, CLOCK_MONOTONIC, &now);
	at = now + (uint64_t)(wait_ns > 0 ? wait_ns / 1000 : 0) + 1;
	if (!r->wake) {
		if (sd_event_add_time(r->env->event, &r->wake, CLOCK_MONOTONIC, at, 1000, on_wake,
				      r) < 0)
			log_error("%s: cannot arm a timer", r->name);
		return;
	}
	sd_event_source_set_time(r->wake, at);
	sd_event_source_set_enabled(r->wake, SD_EVENT_ONESHOT);
}

static int write_quota(struct act_runner *r, uint32_t milli, struct vmact_err *err)
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

/* ---- plugin ---- */

static void plugin_done(void *ud, const struct ag_plugin_result *res)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };
	char a[80];

	r->plugin_busy = false;
	if (res->error) {
		log_warning("%s: scheduler request failed: %s", r->name,
			    res->message ? res->message : strerror(-res->error));
		act_plugin_failed(&r->st, now_ns(r));
	} else if (act_plugin_response(&r->st, now_ns(r), &res->response.permit, &err) < 0) {
		log_warning("%s: scheduler permit refused: %s", r->name, err.msg);
	} else {
		fmt_res(a, sizeof(a), res->response.permit);
		log_debug("%s: scheduler permits %s", r->name, a);
	}
	evaluate(r);
}

static void start_plugin(struct act_runner *r, const struct act_actions *a)
{
	struct ag_agent_request req = { 0 };
	struct vmact_err err = { 0 };
	const char *ns = r->meta.pod_namespace[0] ? r->meta.pod_namespace : "default";
	const char *pod = r->meta.pod_name[0] ? r->meta.pod_name : r->name;

	snprintf(req.pod_namespace, sizeof(req.pod_namespace), "%s", ns);
	snprintf(req.pod_name, sizeof(req.pod_name), "%s", pod);
	req.has_compute_unit = true;
	req.compute_unit = r->st.cu;
	req.resources = a->plugin.target;
	req.has_last_permit = a->plugin.has_last_permit;
	req.last_permit = a->plugin.last_permit;
	req.has_metrics = a->plugin.has_metrics;
	req.metrics.load_avg_1m = (float)a->plugin.load_avg_1m;
	if (r->st.has_system) {
		req.metrics.load_avg_5m = (float)r->st.system.load5;
		req.metrics.memory_usage_bytes = (float)r->st.system.memory_usage_bytes;
	}
	if (act_plugin_starting(&r->st, now_ns(r), &a->plugin.target, &err) < 0) {
		log_error("%s: %s", r->name, err.msg);
		return;
	}
	if (ag_plugin_client_request(r->plugin, &req, &r->st.using_, plugin_done, r, &err) < 0) {
		log_warning("%s: cannot send the scheduler request: %s", r->name, err.msg);
		act_plugin_failed(&r->st, now_ns(r));
		return;
	}
	r->plugin_busy = true;
}

/* ---- hotplug ---- */

static void hp_next(struct act_runner *r);

static void hp_finish(struct act_runner *r)
{
	struct vmact_err err = { 0 };
	struct vmact_resources got;
	char a[80], b[80];

	if (!r->have_state || r->hp_failed) {
		struct hp_state st;

		if (hp_state_read(r->env->hp, r->uuid, &st, &err) == 0) {
			r->hp_state = st;
			r->have_state = true;
		}
	}
	if (r->have_state)
		got = act_achieved(r->quota_milli, hp_state_vcpus(&r->hp_state),
				   hp_state_mem_kib(&r->hp_state) * 1024u);
	else
		got = r->st.using_; /* nothing known: keep the old belief */
	r->hp_busy = false;
	fmt_res(a, sizeof(a), r->plan.target);
	fmt_res(b, sizeof(b), got);
	if (r->hp_failed) {
		/* The same failure on every retry (a VM whose vCPUs libvirt
		 * refuses to touch) is logged once, then at debug level. */
		vmact_log(strcmp(r->hp_error, r->last_hp_error) ? LOG_WARNING : LOG_DEBUG,
			"%s: resize to %s failed: %s; the VM has %s", r->name, a, r->hp_error, b);
		snprintf(r->last_hp_error, sizeof(r->last_hp_error), "%s", r->hp_error);
	} else {
		log_info("%s: resized to %s", r->name, b);
		r->last_hp_error[0] = 0;
	}
	vmact_err_reset(&err);
	if (act_hotplug_finished(&r->st, now_ns(r), &got, r->hp_failed, &err) < 0)
		log_error("%s: %s", r->name, err.msg);
	evaluate(r);
}

static void hp_fail(struct act_runner *r, const char *msg)
{
	r->hp_failed = true;
	snprintf(r->hp_error, sizeof(r->hp_error), "%s", msg);
	hp_finish(r);
}

void act_runner_hp_done(struct hp_conn *c, const char *uuid, const struct hp_op_result *res,
			void *userdata)
{
	struct act_runner_env *env = userdata;
	struct act_runner *r = env->find ? env->find(env->find_ud, uuid) : NULL;

	/* The runner that started it is gone (VM stopped, metadata replaced):
	 * the next runner re-reads the state itself. */
	if (!r || !r->hp_busy)
		return;
	if (res->state_valid) {
		r->hp_state = res->state;
		r->have_state = true;
	}
	if (res->rc < 0) {
		hp_fail(r, res->err.msg[0] ? res->err.msg : strerror(-res->rc));
		return;
	}
	if (res->err.code) /* success with a warning (vCPU desync) */
		log_warning("%s: %s", r->name, res->err.msg);
	/* A DIMM step plugs or unplugs one DIMM per operation. */
	if (r->plan.steps[r->step].kind == ACT_STEP_MEM && r->meta.method == HP_METHOD_DIMM &&
	    res->state_valid) {
		uint64_t cur = hp_state_mem_kib(&res->state) * 1024u;
		uint64_t want = r->plan.steps[r->step].mem_bytes;

		if ((r->dimm_attach && cur < want) || (!r->dimm_attach && cur > want)) {
			hp_next(r);
			return;
		}
	}
	r->step++;
	hp_next(r);
}

static void hp_next(struct act_runner *r)
{
	struct vmact_err err = { 0 };
	struct hp_op_req req = { 0 };
	const struct act_step *s;

	if (r->step >= r->plan.n) {
		hp_finish(r);
		return;
	}
	s = &r->plan.steps[r->step];
	switch (s->kind) {
	case ACT_STEP_QUOTA:
		if (write_quota(r, s->milli, &err) < 0) {
			hp_fail(r, err.msg);
			return;
		}
		r->step++;
		hp_next(r);
		return;
	case ACT_STEP_VCPUS:
		req.kind = HP_OP_SET_VCPUS;
		req.vcpus = s->vcpus;
		break;
	case ACT_STEP_MEM:
		if (r->meta.method == HP_METHOD_VIRTIO_MEM) {
			uint64_t base = r->have_state ? r->hp_state.base_kib * 1024u : 0;

			req.kind = HP_OP_VIRTIO_MEM;
			req.requested_kib = (s->mem_bytes - base) / 1024u;
			snprintf(req.alias, sizeof(req.alias), "%s", r->meta.mem_alias);
		} else {
			uint64_t cur = hp_state_mem_kib(&r->hp_state) * 1024u;

			r->dimm_attach = s->mem_bytes > cur;
			if (r->dimm_attach) {
				req.kind = HP_OP_DIMM_ATTACH;
				req.dimm_kib = r->st.cu.mem_bytes / 1024u;
			} else {
				req.kind = HP_OP_DIMM_DETACH;
			}
		}
		break;
	}
	if (hp_op_start(r->env->hp, r->uuid, &req, act_runner_hp_done, r->env, &err) < 0)
		hp_fail(r, err.msg);
}

static void start_hotplug(struct act_runner *r, const struct act_actions *a)
{
	struct act_plan_limits lim = {
		.min = r->st.min,
		.max = r->st.max,
		.has_permit = r->st.plugin.has_permit,
		.permit = r->st.plugin.permit,
		.has_approved = r->st.monitor.active,
		.approved = r->st.monitor.approved,
	};
	struct vmact_err err = { 0 };
	struct act_vm_layout l;
	struct hp_state st;
	char a1[80], a2[80];

	if (hp_state_read(r->env->hp, r->uuid, &st, &err) < 0) {
		log_warning("%s: cannot read the VM's state before resizing: %s", r->name, err.msg);
		act_hotplug_failed(&r->st, now_ns(r));
		return;
	}
	r->hp_state = st;
	r->have_state = true;
	act_vm_layout_from_state(&st, &r->meta, r->st.cu.mem_bytes, &l);
	if (act_plan_hotplug(&r->st.using_, &a->hotplug.target, &lim, &l, &r->plan, &err) < 0) {
		log_error("%s: refusing to resize: %s", r->name, err.msg);
		act_hotplug_failed(&r->st, now_ns(r));
		return;
	}
	if (vmact_res_eq(r->plan.target, r->st.using_)) {
		log_debug("%s: the VM's layout cannot get closer to the target", r->name);
		return;
	}
	if (act_hotplug_starting(&r->st, now_ns(r), &r->plan.target, &err) < 0) {
		log_error("%s: refusing to resize: %s", r->name, err.msg);
		return;
	}
	fmt_res(a1, sizeof(a1), r->st.using_);
	fmt_res(a2, sizeof(a2), r->plan.target);
	log_info("%s: resizing from %s to %s", r->name, a1, a2);
	r->hp_busy = true;
	r->hp_failed = false;
	r->hp_error[0] = 0;
	r->step = 0;
	hp_next(r);
}

/* ---- monitor ---- */

static void log_inf_reason(struct act_runner *r, const char *what, const char *msg);
static void start_inf(struct act_runner *r, bool up, const struct act_res_change *ch);

static void mon_up_done(struct ag_mon_client *c, const struct ag_mon_result *res, void *ud)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };

	r->mon_busy = false;
	if (res->outcome == AG_MON_OUTCOME_OK) {
		if (act_monitor_upscale_ok(&r->st, now_ns(r), &err) < 0)
			log_debug("%s: %s", r->name, err.msg);
	} else {
		log_warning("%s: vm-monitor upscale notification failed: %s", r->name,
			    res->status ? res->status : "?");
		act_monitor_upscale_failed(&r->st, now_ns(r));
	}
	evaluate(r);
}

static void mon_down_done(struct ag_mon_client *c, const struct ag_mon_result *res, void *ud)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };
	int ret = 0;

	r->mon_busy = false;
	switch (res->outcome) {
	case AG_MON_OUTCOME_OK:
		log_info("%s: vm-monitor approved the downscale (%s)", r->name,
			 res->status ? res->status : "");
		ret = act_monitor_downscale_ok(&r->st, now_ns(r), &err);
		break;
	case AG_MON_OUTCOME_DENIED:
		log_info("%s: vm-monitor denied the downscale: %s", r->name,
			 res->status ? res->status : "");
		ret = act_monitor_downscale_denied(&r->st, now_ns(r), &err);
		break;
	case AG_MON_OUTCOME_FAILED:
		log_warning("%s: vm-monitor downscale request failed: %s", r->name,
			    res->status ? res->status : "?");
		act_monitor_downscale_failed(&r->st, now_ns(r));
		break;
	}
	if (ret < 0)
		log_debug("%s: %s", r->name, err.msg);
	evaluate(r);
}

static void start_mon(struct act_runner *r, bool up, const struct act_res_change *ch)
{
	struct vmact_err err = { 0 };
	int ret;

	if (r->inf) {
		start_inf(r, up, ch);
		return;
	}
	ret = up ? act_monitor_upscale_starting(&r->st, now_ns(r), &ch->target, &err)
		 : act_monitor_downscale_starting(&r->st, now_ns(r), &ch->target, &err);
	if (ret < 0) {
		log_debug("%s: %s", r->name, err.msg);
		return;
	}
	ret = up ? ag_mon_client_upscale(r->mon, &ch->target, mon_up_done, r, NULL, &err)
		 : ag_mon_client_downscale(r->mon, &ch->target, mon_down_done, r, NULL, &err);
	if (ret < 0) {
		log_warning("%s: cannot send the vm-monitor %s: %s", r->name,
			    up ? "upscale notification" : "downscale request", err.msg);
		if (up)
			act_monitor_upscale_failed(&r->st, now_ns(r));
		else
			act_monitor_downscale_failed(&r->st, now_ns(r));
		return;
	}
	r->mon_busy = true;
}

static void mon_connected(struct ag_mon_client *c, uint64_t gen, void *ud)
{
	struct act_runner *r = ud;

	log_info("%s: vm-monitor connected", r->name);
	act_monitor_connected(&r->st);
	evaluate(r);
}

static void mon_disconnected(struct ag_mon_client *c, uint64_t gen, const char *reason, void *ud)
{
	struct act_runner *r = ud;

	log_info("%s: vm-monitor disconnected: %s", r->name, reason ? reason : "");
	act_monitor_reset(&r->st);
	r->mon_busy = false;
	evaluate(r);
}

static void mon_upscale_requested(struct ag_mon_client *c, uint64_t at, void *ud)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };

	log_info("%s: vm-monitor asks for more memory", r->name);
	if (act_monitor_upscale_requested(&r->st, now_ns(r), false, true, &err) < 0)
		log_debug("%s: %s", r->name, err.msg);
	evaluate(r);
}

static void mon_log(struct ag_mon_client *c, int prio, const char *msg, void *ud)
{
	struct act_runner *r = ud;

	vmact_log(prio, "%s: vm-monitor: %s", r->name, msg);
}

/* ws://HOST[:PORT][/PATH], http://... likewise, unix:PATH. */
static int start_monitor(struct act_runner *r, struct vmact_err *err)
{
	static const struct ag_mon_client_callbacks cb = {
		.connected = mon_connected,
		.disconnected = mon_disconnected,
		.upscale_requested = mon_upscale_requested,
		.log = mon_log,
	};
	struct ag_mon_client_config mc = { 0 };
	char host[256] = "", path[256] = "";
	const char *ep = r->meta.monitor, *p, *slash, *colon;
	int ret;

	if (!ep[0])
		return 0;
	if (strncmp(ep, "unix:", 5) == 0) {
		mc.unix_path = ep + 5;
	} else if (strncmp(ep, "ws://", 5) == 0 || strncmp(ep, "http://", 7) == 0) {
		p = strstr(ep, "://") + 3;
		slash = strchr(p, '/');
		if (!slash)
			slash = p + strlen(p);
		colon = memchr(p, ':', (size_t)(slash - p));
		if ((size_t)((colon ? colon : slash) - p) >= sizeof(host) || (colon ? colon : slash) == p)
			return vmact_err_set(err, EINVAL, "<vmact:monitor> endpoint '%s': bad host", ep);
		memcpy(host, p, (size_t)((colon ? colon : slash) - p));
		if (colon) {
			char *end;
			unsigned long port = strtoul(colon + 1, &end, 10);

			if (end != slash || port == 0 || port > 65535)
				return vmact_err_set(err, EINVAL, "<vmact:monitor> endpoint '%s': bad port",
						     ep);
			mc.port = (uint16_t)port;
		}
		snprintf(path, sizeof(path), "%s", *slash ? slash : "/monitor");
		mc.host = host;
		mc.path = path;
	} else {
		return vmact_err_set(err, EOPNOTSUPP,
				     "<vmact:monitor> endpoint '%s': only ws://, http:// and unix: "
				     "are supported (no TLS)", ep);
	}
	ret = ag_mon_client_new(r->env->event, &mc, &cb, r, &r->mon, err);
	if (ret >= 0)
		ret = ag_mon_client_start(r->mon, err);
	return ret;
}

/* ---- legacy informant ---- */

struct act_inf_link {
	struct act_runner *r; /* NULL once the runner is gone */
	struct ag_inf_agent *agent;
	struct act_runner_env *env;
	struct act_inf_link *next; /* in env->inf_draining */
};

struct act_inf_gate act_inf_gate_for(int mode)
{
	switch ((enum ag_inf_mode)mode) {
	case AG_INF_RUNNING:
		return (struct act_inf_gate){ .may_resize = true, .approves = true };
	case AG_INF_SUSPENDED:
		return (struct act_inf_gate){ .may_resize = false, .approves = false };
	case AG_INF_NONE:
	case AG_INF_UNCONFIRMED:
		break;
	}
	return (struct act_inf_gate){ .may_resize = true, .approves = false };
}

uint64_t act_inf_retry_usec(unsigned failures)
{
	uint64_t w = AG_INF_DEFAULT_RETRY_WAIT_USEC;

	for (unsigned i = 1; i < failures && w < 80 * 1000000ULL; i++)
		w *= 2;
	return w < 80 * 1000000ULL ? w : 80 * 1000000ULL;
}

/* One warning per new reason: an unreachable informant would otherwise
 * log on every retry. */
static void log_inf_reason(struct act_runner *r, const char *what, const char *msg)
{
	if (strcmp(r->inf_reason, msg) == 0) {
		log_debug("%s: informant: %s: %s", r->name, what, msg);
		return;
	}
	log_warning("%s: informant: %s: %s", r->name, what, msg);
	snprintf(r->inf_reason, sizeof(r->inf_reason), "%s", msg);
}

static void inf_up_done(void *ud, int result, const struct vmact_err *err)
{
	struct act_runner *r = ud;
	struct vmact_err e = { 0 };

	r->mon_busy = false;
	if (result == 0) {
		if (act_monitor_upscale_ok(&r->st, now_ns(r), &e) < 0)
			log_debug("%s: %s", r->name, e.msg);
	} else {
		if (!r->freeing)
			log_inf_reason(r, "upscale notification failed",
				       err && err->msg[0] ? err->msg : strerror(-result));
		act_monitor_upscale_failed(&r->st, now_ns(r));
	}
	evaluate(r);
}

static void inf_down_done(void *ud, int result, const struct ag_downscale_result *res,
			  const struct vmact_err *err)
{
	struct act_runner *r = ud;
	struct vmact_err e = { 0 };
	int ret = 0;

	r->mon_busy = false;
	if (result == 0 && res->ok) {
		log_info("%s: informant approved the downscale (%s)", r->name, res->status);
		ret = act_monitor_downscale_ok(&r->st, now_ns(r), &e);
	} else if (result == 0) {
		log_info("%s: informant denied the downscale: %s", r->name, res->status);
		ret = act_monitor_downscale_denied(&r->st, now_ns(r), &e);
	} else {
		if (!r->freeing)
			log_inf_reason(r, "downscale request failed",
				       err && err->msg[0] ? err->msg : strerror(-result));
		act_monitor_downscale_failed(&r->st, now_ns(r));
	}
	if (ret < 0)
		log_debug("%s: %s", r->name, e.msg);
	evaluate(r);
}

static void start_inf(struct act_runner *r, bool up, const struct act_res_change *ch)
{
	struct vmact_err err = { 0 };
	int ret;

	ret = up ? act_monitor_upscale_starting(&r->st, now_ns(r), &ch->target, &err)
		 : act_monitor_downscale_starting(&r->st, now_ns(r), &ch->target, &err);
	if (ret < 0) {
		log_debug("%s: %s", r->name, err.msg);
		return;
	}
	/* mon_busy before the call: a synchronous failure path may complete
	 * through the callback. */
	r->mon_busy = true;
	ret = up ? ag_inf_agent_upscale(r->inf->agent, &ch->target, inf_up_done, r, &err)
		 : ag_inf_agent_downscale(r->inf->agent, &ch->target, inf_down_done, r, &err);
	if (ret < 0) {
		r->mon_busy = false;
		log_inf_reason(r, up ? "cannot send the upscale notification"
				     : "cannot send the downscale request", err.msg);
		if (up)
			act_monitor_upscale_failed(&r->st, now_ns(r));
		else
			act_monitor_downscale_failed(&r->st, now_ns(r));
	}
}

static void inf_mode_changed(void *ud, enum ag_inf_mode mode, const char *agent_id)
{
	struct act_inf_link *l = ud;
	struct act_runner *r = l->r;
	enum ag_inf_mode old;

	if (!r)
		return;
	old = r->inf_mode;
	r->inf_mode = mode;
	if (mode == old)
		return;
	r->inf_held_logged = false;
	if (mode == AG_INF_RUNNING) {
		log_info("%s: informant: agent %s running (protocol v%s)", r->name, agent_id,
			 ag_inf_version_name(ag_inf_agent_version(l->agent))
				 ? ag_inf_version_name(ag_inf_agent_version(l->agent)) : "?");
		r->inf_failures = 0;
		r->inf_reason[0] = 0;
		act_monitor_connected(&r->st);
	} else {
		if (mode == AG_INF_SUSPENDED && old == AG_INF_RUNNING)
			log_info("%s: informant: agent %s suspended by the informant: no resizing "
				 "until it is resumed", r->name, agent_id);
		else
			log_debug("%s: informant: agent %s now %s", r->name, agent_id,
				  ag_inf_mode_name(mode));
		if (old == AG_INF_RUNNING)
			act_monitor_reset(&r->st);
	}
	evaluate(r);
}

static void inf_registered(void *ud, const char *agent_id, const struct ag_informant_desc *d)
{
	struct act_inf_link *l = ud;

	if (l->r)
		log_info("%s: informant: registered agent %s at %s (protocol v%s)", l->r->name,
			 agent_id, ag_inf_agent_serve_addr(l->agent),
			 ag_inf_version_name(d->version) ? ag_inf_version_name(d->version) : "?");
}

static void inf_try_upscale(void *ud, bool cpu, bool memory)
{
	struct act_inf_link *l = ud;
	struct act_runner *r = l->r;
	struct vmact_err err = { 0 };

	if (!r)
		return;
	log_info("%s: informant asks for more%s%s", r->name, cpu ? " CPU" : "",
		 memory ? (cpu ? " and memory" : " memory") : "");
	if (act_monitor_upscale_requested(&r->st, now_ns(r), cpu, memory, &err) < 0)
		log_debug("%s: %s", r->name, err.msg);
	evaluate(r);
}

static void inf_server_exited(void *ud, const char *agent_id, const struct vmact_err *why,
			      bool retry_should_fix)
{
	struct act_inf_link *l = ud;
	struct act_runner *r = l->r;
	uint64_t wait;

	if (!r || r->freeing)
		return;
	r->inf_failures++;
	wait = act_inf_retry_usec(r->inf_failures);
	ag_inf_agent_set_retry_wait(l->agent, wait);
	log_inf_reason(r, "not registered", why && why->msg[0] ? why->msg : "server exited");
	log_debug("%s: informant: registering again in %" PRIu64 " s (attempt %u)", r->name,
		  wait / 1000000u, r->inf_failures + 1);
}

static void inf_notice(void *ud, const struct vmact_err *e)
{
	struct act_inf_link *l = ud;

	if (l->r && !l->r->freeing)
		log_inf_reason(l->r, "notice", e->msg);
	else
		log_debug("informant: %s", e->msg);
}

static int start_informant(struct act_runner *r, struct vmact_err *err)
{
	static const struct ag_inf_agent_events ev = {
		.mode_changed = inf_mode_changed,
		.registered = inf_registered,
		.try_upscale = inf_try_upscale,
		.server_exited = inf_server_exited,
		.notice = inf_notice,
	};
	struct ag_inf_agent_config ic = {
		.informant_url = r->meta.informant,
		.listen = r->env->cfg->informant_listen,
		.advertise_host = r->env->cfg->informant_advertise_host,
		.retry_wait_usec = act_inf_retry_usec(1),
	};
	struct act_inf_link *l;
	int ret;

	if (!r->meta.informant[0])
		return 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return vmact_err_set(err, ENOMEM, "out of memory");
	l->r = r;
	l->env = r->env;
	ret = ag_inf_agent_new(r->env->event, &ic, &ev, l, &l->agent, err);
	if (ret < 0) {
		free(l);
		return vmact_err_prefix(err, "informant %s", r->meta.informant);
	}
	r->inf = l;
	/* A failure to start the first server (listen address in use) is
	 * retried like any other. */
	ret = ag_inf_agent_start(l->agent, err);
	if (ret < 0) {
		log_inf_reason(r, "not registered", err->msg);
		vmact_err_reset(err);
		ag_inf_agent_retry_later(l->agent);
	}
	return 0;
}

static void inf_drained(void *ud)
{
	struct act_inf_link *l = ud, **pp;
	struct act_runner_env *env = l->env;

	for (pp = &env->inf_draining; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	ag_inf_agent_free(l->agent);
	free(l);
	if (!env->inf_draining && env->inf_drained)
		env->inf_drained(env->inf_drained_ud);
}

/* The runner goes: the agent unregisters on its own, from the env. */
static void stop_informant(struct act_runner *r)
{
	struct act_inf_link *l = r->inf;

	if (!l)
		return;
	r->inf = NULL;
	l->r = NULL;
	l->next = r->env->inf_draining;
	r->env->inf_draining = l;
	/* A pending up/downscale completes now (-ECANCELED) through its own
	 * callback, with the runner still there (r->freeing keeps it quiet). */
	if (ag_inf_agent_stop(l->agent, inf_drained, l) < 0)
		inf_drained(l);
}

void act_runner_env_drain_free(struct act_runner_env *env)
{
	while (env->inf_draining) {
		struct act_inf_link *l = env->inf_draining;

		env->inf_draining = l->next;
		ag_inf_agent_free(l->agent);
		free(l);
	}
}

/* ---- metrics ---- */

static int on_metrics(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_runner *r = ud;
	struct act_system_metrics m = { 0 };
	struct smp_reading rd;
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	sd_event_source_set_time(s, usec + r->env->metrics_interval_usec);
	if (!r->sampler_registered ||
	    smp_read(r->env->sampler, r->uuid, &rd, &err) < 0) {
		if (!r->load_error_logged && r->sampler_registered)
			log_warning("%s: cannot read the VM's load: %s", r->name, err.msg);
		r->load_error_logged = true;
		return 0;
	}
	m.load1 = rd.loadavg[0];
	m.load5 = rd.loadavg[1];
	vmact_err_reset(&err);
	if (hp_mem_stats_read(r->env->hp, r->uuid, &ms, &err) == 0 &&
	    ms.total_kib >= ms.available_kib) {
		m.memory_usage_bytes = (double)(ms.total_kib - ms.available_kib) * 1024.0 +
				       (double)MEM_USAGE_PAD;
		m.memory_cached_bytes = ms.has_caches ? (double)ms.caches_kib * 1024.0 : 0.0;
		if (r->mem_absent_logged)
			log_info("%s: guest memory statistics available again", r->name);
		r->mem_absent_logged = false;
	} else {
		m.memory_absent = true;
		if (!r->mem_absent_logged)
			log_warning("%s: no guest memory statistics (%s): memory does not drive "
				    "scaling and the VM is never scaled down",
				    r->name, err.msg[0] ? err.msg : "implausible figures");
		r->mem_absent_logged = true;
	}
	vmact_err_reset(&err);
	if (act_state_update_system_metrics(&r->st, &m, &err) < 0) {
		log_warning("%s: %s", r->name, err.msg);
		return 0;
	}
	log_debug("%s: load1 %.2f load5 %.2f memory %s", r->name, m.load1, m.load5,
		  m.memory_absent ? "unknown" : "known");
	evaluate(r);
	return 0;
}

/* ---- decision loop ---- */

static unsigned warn_hash(const struct act_warnings *w)
{
	unsigned h = w->n;

	for (unsigned i = 0; i < w->n; i++)
		h = h * 31u + (unsigned)(uintptr_t)w->msg[i];
	return h;
}

static void evaluate(struct act_runner *r)
{
	struct act_actions a;
	struct vmact_err err = { 0 };
	unsigned h;

	if (r->freeing)
		return;
	if (act_next_actions(&r->st, now_ns(r), &a, &err) < 0) {
		log_error("%s: scaling decision failed: %s", r->name, err.msg);
		return;
	}
	h = warn_hash(&a.warnings);
	if (h != r->last_warn_hash)
		for (unsigned i = 0; i < a.warnings.n; i++)
			log_debug("%s: %s", r->name, a.warnings.msg[i]);
	r->last_warn_hash = h;

	if (a.has_plugin && !r->plugin_busy)
		start_plugin(r, &a);
	if (a.has_hotplug && !r->hp_busy) {
		if (!r->inf || act_inf_gate_for(r->inf_mode).may_resize) {
			start_hotplug(r, &a);
		} else if (!r->inf_held_logged) {
			log_info("%s: informant: holding a resize while the agent is suspended",
				 r->name);
			r->inf_held_logged = true;
		}
	}
	if ((r->mon || (r->inf && act_inf_gate_for(r->inf_mode).approves)) && !r->mon_busy) {
		if (a.has_monitor_upscale)
			start_mon(r, true, &a.monitor_upscale);
		else if (a.has_monitor_downscale)
			start_mon(r, false, &a.monitor_downscale);
	}
	if (a.has_wait)
		arm_wake(r, a.wait);
}

/* ---- lifecycle ---- */

static int plugin_setup(struct act_runner *r, struct vmact_err *err)
{
	struct ag_plugin_client_config pc = {
		.url = r->env->plugin_url,
		.timeout_usec = (uint64_t)r->env->cfg->plugin_timeout_ms * 1000u,
	};
	int ret;

	ret = ag_plugin_version_parse(r->env->cfg->plugin_version, &pc.version, err);
	if (ret >= 0)
		ret = ag_http_client_new(r->env->event, &r->http, err);
	if (ret >= 0)
		ret = ag_plugin_client_new(r->http, &pc, &r->plugin, err);
	return ret;
}

int act_runner_new(struct act_runner_env *env, const struct hp_state *st,
		   const struct hp_meta *meta, struct act_runner **out, struct vmact_err *err)
{
	struct act_runner *r;
	struct ag_scaling_config sc;
	struct vmact_resources cu, using_;
	struct act_timing timing;
	struct act_cpu_bw bw;
	virDomainPtr dom;
	uint32_t rnd = 0;
	int ret;

	if (!env->cg)
		return vmact_err_set(err, ENODEV, "no cgroup with the cpu controller: fractional "
				     "CPU limits cannot be enforced");
	ret = act_meta_scaling_config(&env->cfg->scaling, meta, &sc, err);
	if (ret < 0)
		return ret;
	cu = meta->has_compute_unit ? meta->compute_unit : env->cfg->compute_unit;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->env = env;
	r->meta = *meta;
	snprintf(r->name, sizeof(r->name), "%s", st->name);
	snprintf(r->uuid, sizeof(r->uuid), "%s", st->uuid);
	r->hp_state = *st;
	r->have_state = true;

	dom = hp_domain_lookup(env->hp, st->uuid, err);
	if (!dom) {
		ret = -(err->code ? err->code : ENODEV);
		goto fail;
	}
	ret = act_cg_domain_group(env->cg, dom, NULL, &r->group, &r->pid, err);
	virDomainFree(dom);
	if (ret < 0)
		goto fail;

	/* Size now: the vCPUs, held to the group's quota if it has one (a
	 * previous vmactd's, or the operator's). */
	using_ = act_achieved(0, hp_state_vcpus(st), hp_state_mem_kib(st) * 1024u);
	if (act_cg_cpu_get(env->cg, r->group, &bw, err) == 0 &&
	    bw.quota_us != ACT_CPU_QUOTA_UNLIMITED) {
		uint32_t q = act_cpu_bw_to_milli(&bw, env->overcommit);

		if (q && q < using_.milli_cpu)
			using_.milli_cpu = q;
	}
	vmact_err_reset(err);

	act_timing_defaults(&timing);
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	timing.plugin_tick_jitter = act_plugin_jitter(rnd);
	ret = act_state_init(&r->st, &timing, &cu, &sc, &using_, &meta->min, &meta->max, err);
	if (ret < 0)
		goto fail;
	if (vmact_res_any_gt(using_, meta->max) || vmact_res_any_lt(using_, meta->min)) {
		char a[80], b[80], c[80];

		fmt_res(a, sizeof(a), using_);
		fmt_res(b, sizeof(b), meta->min);
		fmt_res(c, sizeof(c), meta->max);
		log_warning("%s: runs with %s, outside its bounds [%s, %s]; it is brought inside "
			    "as the scheduler and vm-monitor allow", r->name, a, b, c);
	}
	/* From now on the quota is what the VM is granted. */
	ret = write_quota(r, using_.milli_cpu, err);
	if (ret < 0)
		goto fail;

	if (env->sampler) {
		char dir[PATH_MAX + 512];

		snprintf(dir, sizeof(dir), "%s%s", env->cg->cpu_mount, r->group);
		if (smp_register(env->sampler, r->uuid, r->pid, dir, err) < 0) {
			log_warning("%s: load sampling unavailable: %s", r->name, err->msg);
			vmact_err_reset(err);
		} else {
			r->sampler_registered = true;
		}
	}
	ret = plugin_setup(r, err);
	if (ret < 0)
		goto fail;
	ret = start_monitor(r, err);
	if (ret >= 0)
		ret = start_informant(r, err);
	if (ret < 0)
		goto fail;
	if (!r->mon && !r->inf)
		log_info("%s: no vm-monitor endpoint: the VM is scaled up only", r->name);
	ret = sd_event_add_time_relative(env->event, &r->metrics, CLOCK_MONOTONIC,
					 env->metrics_interval_usec, 10000, on_metrics, r);
	if (ret >= 0)
		ret = sd_event_source_set_enabled(r->metrics, SD_EVENT_ON);
	if (ret < 0) {
		vmact_err_set(err, -ret, "cannot add the metrics timer: %s", strerror(-ret));
		goto fail;
	}
	{
		char a[80], b[80], c[80];

		fmt_res(a, sizeof(a), using_);
		fmt_res(b, sizeof(b), meta->min);
		fmt_res(c, sizeof(c), meta->max);
		log_info("%s: managing (%s, bounds [%s, %s], cgroup %s, %s %s)", r->name, a, b,
			 c, r->group, r->meta.informant[0] ? "informant" : "monitor",
			 r->meta.informant[0] ? r->meta.informant
					      : r->meta.monitor[0] ? r->meta.monitor : "none");
	}
	evaluate(r);
	*out = r;
	return 0;
fail:
	act_runner_free(r);
	return ret;
}

void act_runner_free(struct act_runner *r)
{
	if (!r)
		return;
	/* Stopping the monitor client fails its requests and reports the
	 * disconnection through our callbacks: they must not start anything. */
	r->freeing = true;
	ag_mon_client_free(r->mon);
	stop_informant(r);
	sd_event_source_disable_unref(r->wake);
	sd_event_source_disable_unref(r->metrics);
	ag_plugin_client_free(r->plugin);
	ag_http_client_free(r->http);
	if (r->sampler_registered)
		smp_unregister(r->env->sampler, r->uuid, NULL);
	free(r->group);
	free(r);
}

int act_runner_release(struct act_runner *r, struct vmact_err *err)
{
	struct act_cpu_bw bw = act_cpu_bw_unlimited(ACT_CPU_PERIOD_DEFAULT_US);
	int ret = act_cg_cpu_set(r->env->cg, r->group, &bw, err);

	if (ret == 0)
		r->quota_milli = 0;
	return ret;
}

int act_runner_update(struct act_runner *r, const struct hp_meta *meta, struct vmact_err *err)
{
	struct ag_scaling_config sc;
	struct vmact_resources cu = meta->has_compute_unit ? meta->compute_unit
							: r->env->cfg->compute_unit;
	int ret;

	if (!vmact_res_eq(cu, r->st.cu) || meta->method != r->meta.method ||
	    strcmp(meta->mem_alias, r->meta.mem_alias) || strcmp(meta->monitor, r->meta.monitor) ||
	    strcmp(meta->informant, r->meta.informant))
		return 1;
	ret = act_meta_scaling_config(&r->env->cfg->scaling, meta, &sc, err);
	if (ret >= 0)
		ret = act_state_update_vm(&r->st, &meta->min, &meta->max, &sc, err);
	if (ret < 0)
		return ret;
	r->meta = *meta;
	evaluate(r);
	return 0;
}

const char *act_runner_name(const struct act_runner *r)
{
	return r->name;
}

const char *act_runner_uuid(const struct act_runner *r)
{
	return r->uuid;
}

const struct act_state *act_runner_state(const struct act_runner *r)
{
	return &r->st;
}
