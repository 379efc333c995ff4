/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's hotplug path: plans a resize (actuator/policy/plan.h) from the
 * VM's live state and carries its steps out one at a time (the CPU quota
 * through actuator/cgroup, vCPUs and memory through hotplug/), then feeds
 * what the VM has back to the core — or, for a change asked through the
 * runner API (runner/neonvm-api.c), records it and starts the next one. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "base/log.h"
#include "base/quantity.h"

/* How long a guest that kept its memory is left alone: doubling from a
 * minute to 16 minutes. */
#define MEM_HOLD_MIN_S 60u
#define MEM_HOLD_MAX_S 960u

unsigned act_runner_mem_hold_next(unsigned prev_s)
{
	if (!prev_s)
		return MEM_HOLD_MIN_S;
	return prev_s >= MEM_HOLD_MAX_S / 2 ? MEM_HOLD_MAX_S : prev_s * 2;
}

bool act_runner_mem_held(struct vmact_resources *target, const struct vmact_resources *using_,
			 act_time_t now, act_time_t until)
{
	if (target->mem_bytes >= using_->mem_bytes || now >= until)
		return false;
	target->mem_bytes = using_->mem_bytes;
	return true;
}

/* The last failure's text is kept as its hash (FNV-1a, 64 bits; 0: none),
 * not as another 512 bytes in every runner: it only tells a repeated
 * failure from a new one. */
static uint64_t error_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h ? h : 1;
}

static void hp_next(struct act_runner *r);
static int api_start(struct act_runner *r, struct vmact_err *err);

/* A runner API resize ended: what the VM has is its size; a change that
 * came meanwhile is next. The core is not involved (its loop is off). */
static void api_finished(struct act_runner *r, const struct vmact_resources *got)
{
	struct vmact_err err = { 0 };

	r->rs.busy = false;
	r->rs.api = false;
	r->st.using_ = *got;
	if (r->rs.api_pending && !act_runner_frozen(r)) {
		r->rs.api_pending = false;
		if (api_start(r, &err) < 0)
			log_warning("%s: runner API: cannot start the next change: %s", r->name,
				    err.msg);
	}
	/* Nothing decides for such a VM, but a freeze waits for this. */
	r->core->changed(r);
}

static void hp_finish(struct act_runner *r)
{
	struct vmact_err err = { 0 };
	struct vmact_resources got;
	char a[80], b[80];

	if (!r->rs.have_state || r->rs.failed) {
		struct hp_state st;

		if (hp_state_read(r->env->hp, r->uuid, &st, &err) == 0) {
			act_runner_seen_set(r, &st);
		}
	}
	if (r->rs.have_state)
		got = act_achieved(r->quota_milli, r->rs.seen.vcpus, r->rs.seen.mem_kib * 1024u);
	else
		got = r->st.using_; /* nothing known: keep the old belief */
	if (!r->rs.api) {
		r->rs.busy = false;
		act_cpu_demand_resized(&r->rd.demand);
		act_runner_watch_update(r);
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		r->rs.done_s = (uint64_t)ts.tv_sec;
	}
	act_runner_fmt_res(a, sizeof(a), r->rs.plan.target);
	act_runner_fmt_res(b, sizeof(b), got);
	if (r->rs.failed) {
		/* The same failure on every retry (a VM whose vCPUs libvirt
		 * refuses to touch) is logged once, then at debug level; a
		 * guest that kept its memory has its one line below. */
		const char *error = act_runner_text(r->rs.error);
		uint64_t h = error_hash(error);

		vmact_log(h != r->rs.last_error_hash && !r->rs.mem_refused ? LOG_WARNING
									   : LOG_DEBUG,
			  "%s: resize to %s failed: %s; the VM has %s", r->name, a, error, b);
		r->rs.last_error_hash = h;
		act_event(r->env->events, r->name, ACT_EV_ERROR,
			  json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)got.milli_cpu,
				    "mem_bytes", (json_int_t)got.mem_bytes),
			  "resize to %s failed: %s; the VM has %s", a, error, b);
	} else {
		log_info("%s: resized to %s", r->name, b);
		act_event(r->env->events, r->name, ACT_EV_RESIZE,
			  json_pack("{s:I,s:I,s:I}", "milli_cpu", (json_int_t)got.milli_cpu,
				    "mem_bytes", (json_int_t)got.mem_bytes, "vcpus",
				    (json_int_t)(r->rs.have_state ? r->rs.seen.vcpus : 0)),
			  "resized to %s", b);
		act_runner_view_change(r, &r->st.using_, &got, b);
		r->rs.last_error_hash = 0;
	}
	if (r->rs.mem_refused) {
		/* Asking again at once would find the guest as it is: wait,
		 * longer each time it refuses. The VM may still grow. Said
		 * once while it keeps refusing. */
		char want[32], kept[32];
		bool first = !r->rs.mem_hold_s;

		r->rs.mem_hold_s = act_runner_mem_hold_next(r->rs.mem_hold_s);
		r->rs.mem_hold_until = act_runner_now_ns(r) + ACT_SEC(r->rs.mem_hold_s);
		vmact_quantity_format_bytes(r->rs.plan.target.mem_bytes, want, sizeof(want));
		vmact_quantity_format_bytes(got.mem_bytes, kept, sizeof(kept));
		vmact_log(first ? LOG_WARNING : LOG_DEBUG,
			  "%s: the guest kept its memory (asked to go to %s; its driver could not "
			  "unplug it): left at %s, asked again in %u s, the wait doubling to %u s "
			  "while it keeps refusing",
			  r->name, want, kept, r->rs.mem_hold_s, MEM_HOLD_MAX_S);
	} else if (!r->rs.failed && r->rs.plan.target.mem_bytes < r->st.using_.mem_bytes) {
		r->rs.mem_hold_s = 0;
	}
	if (r->rs.api) {
		api_finished(r, &got);
		return;
	}
	vmact_err_reset(&err);
	act_runner_export_hotplug_done(r, &got, r->rs.failed);
	if (act_hotplug_finished(&r->st, act_runner_now_ns(r), &got, r->rs.failed, &err) < 0)
		log_error("%s: %s", r->name, err.msg);
	r->core->changed(r);
}

static void hp_fail(struct act_runner *r, const char *msg)
{
	r->rs.failed = true;
	act_runner_text_set(&r->rs.error, msg);
	hp_finish(r);
}

void act_runner_hp_done(struct hp_conn *c, const char *uuid, const struct hp_op_result *res,
			void *userdata)
{
	struct act_runner_env *env = userdata;
	struct act_runner *r = env->find ? env->find(env->find_ud, uuid) : NULL;

	/* The runner that started it is gone (VM stopped, metadata replaced):
	 * the next runner re-reads the state itself. */
	if (!r || !r->rs.busy)
		return;
	if (res->state_valid) {
		act_runner_seen_set(r, &res->state);
	}
	if (res->rc < 0) {
		r->rs.mem_refused = res->rc == -EBUSY &&
				    r->rs.plan.steps[r->rs.step].kind == ACT_STEP_MEM;
		hp_fail(r, res->err.msg[0] ? res->err.msg : strerror(-res->rc));
		return;
	}
	if (res->err.code) /* success with a warning (vCPU desync) */
		log_warning("%s: %s", r->name, res->err.msg);
	/* A DIMM step plugs or unplugs one DIMM per operation. */
	if (r->rs.plan.steps[r->rs.step].kind == ACT_STEP_MEM && r->meta.method == HP_METHOD_DIMM &&
	    res->state_valid) {
		uint64_t cur = hp_state_mem_kib(&res->state) * 1024u;
		uint64_t want = r->rs.plan.steps[r->rs.step].mem_bytes;

		if ((r->rs.dimm_attach && cur < want) || (!r->rs.dimm_attach && cur > want)) {
			hp_next(r);
			return;
		}
	}
	r->rs.step++;
	hp_next(r);
}

/* Whether a step takes a resource below what may be shrunk to now. The
 * plan was made within the approval of its start; an approval that went
 * since (its vm-monitor's or informant's connection dropped: the core's
 * monitor was reset; doc/policy.md, "The Neon policy, and memory with a
 * monitor") must not carry the plan's later steps below the VM's size. */
static bool step_unapproved(const struct act_runner *r, const struct act_step *s)
{
	struct vmact_resources lo = act_hotplug_lower(&r->st);

	switch (s->kind) {
	case ACT_STEP_QUOTA:
		return s->milli < lo.milli_cpu;
	case ACT_STEP_VCPUS:
		return (uint64_t)s->vcpus * 1000u < lo.milli_cpu;
	case ACT_STEP_MEM:
		return s->mem_bytes < lo.mem_bytes;
	}
	return false;
}

static void hp_next(struct act_runner *r)
{
	struct vmact_err err = { 0 };
	struct hp_op_req req = { 0 };
	const struct act_step *s;

	if (r->rs.step >= r->rs.plan.n) {
		hp_finish(r);
		return;
	}
	/* Frozen for a move (act_runner_freeze): the operation that was in
	 * flight has finished; the plan's next steps are not started, the VM
	 * moves away at the size it reached (the core plans again once
	 * thawed). */
	if (act_runner_frozen(r)) {
		log_info("%s: frozen for migration: the resize stops before its next step",
			 r->name);
		hp_finish(r);
		return;
	}
	s = &r->rs.plan.steps[r->rs.step];
	/* The runner API's changes answer to its caller, not to an approver.
	 * An operation in flight finishes in libvirt; the next one waits for
	 * an approval the core asks for again. */
	if (!r->rs.api && step_unapproved(r, s)) {
		log_info("%s: the shrink is no longer approved (its approver's connection "
			 "dropped): the resize stops before its next step",
			 r->name);
		hp_finish(r);
		return;
	}
	switch (s->kind) {
	case ACT_STEP_QUOTA:
		if (act_runner_write_quota(r, s->milli, &err) < 0) {
			hp_fail(r, err.msg);
			return;
		}
		r->rs.step++;
		hp_next(r);
		return;
	case ACT_STEP_VCPUS:
		req.kind = HP_OP_SET_VCPUS;
		req.vcpus = s->vcpus;
		break;
	case ACT_STEP_MEM:
		if (r->meta.method == HP_METHOD_VIRTIO_MEM) {
			uint64_t base = r->rs.have_state ? r->rs.seen.base_kib * 1024u : 0;

			req.kind = HP_OP_VIRTIO_MEM;
			req.requested_kib = (s->mem_bytes - base) / 1024u;
			snprintf(req.alias, sizeof(req.alias), "%s", r->meta.mem_alias);
		} else {
			uint64_t cur = r->rs.seen.mem_kib * 1024u;

			r->rs.dimm_attach = s->mem_bytes > cur;
			if (r->rs.dimm_attach) {
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

void act_runner_resize_start(struct act_runner *r, const struct act_actions *a)
{
	struct act_plan_limits lim = {
		.min = r->st.min,
		.max = r->st.max,
		.has_permit = r->st.plugin.has_permit,
		.permit = r->st.plugin.permit,
		/* The monitor's approval, or where the host approves, min. */
		.has_approved = r->st.monitor.active || r->st.host_approves.cpu ||
				r->st.host_approves.mem,
		.approved = act_hotplug_lower(&r->st),
	};
	struct vmact_resources target = a->hotplug.target;
	struct vmact_err err = { 0 };
	struct act_vm_layout l;
	struct hp_state st;
	char a1[80], a2[80];

	/* A guest that kept its memory keeps it until the hold ends. */
	if (act_runner_mem_held(&target, &r->st.using_, act_runner_now_ns(r),
				r->rs.mem_hold_until)) {
		/* Nothing else to do: asked again at the next decision, at
		 * no cost (no libvirt call yet), so that a growth meanwhile is
		 * not held back by a retry wait. */
		if (vmact_res_eq(target, r->st.using_))
			return;
	}
	if (hp_state_read(r->env->hp, r->uuid, &st, &err) < 0) {
		log_warning("%s: cannot read the VM's state before resizing: %s", r->name, err.msg);
		act_runner_export_failure(r, ACT_FAILURE_HOTPLUG);
		act_hotplug_failed(&r->st, act_runner_now_ns(r));
		return;
	}
	act_runner_seen_set(r, &st);
	act_vm_layout_from_state(&st, &r->meta, r->st.cu.mem_bytes, &l);
	l.keep_vcpus = act_runner_cpu_shrink(r) == ACT_CPU_SHRINK_QUOTA;
	if (act_plan_hotplug(&r->st.using_, &target, &lim, &l, &r->rs.plan, &err) < 0) {
		log_error("%s: refusing to resize: %s", r->name, err.msg);
		act_runner_export_failure(r, ACT_FAILURE_HOTPLUG);
		act_hotplug_failed(&r->st, act_runner_now_ns(r));
		return;
	}
	if (vmact_res_eq(r->rs.plan.target, r->st.using_)) {
		log_debug("%s: the VM's layout cannot get closer to the target", r->name);
		return;
	}
	if (act_hotplug_starting(&r->st, act_runner_now_ns(r), &r->rs.plan.target, &err) < 0) {
		log_error("%s: refusing to resize: %s", r->name, err.msg);
		return;
	}
	act_runner_fmt_res(a1, sizeof(a1), r->st.using_);
	act_runner_fmt_res(a2, sizeof(a2), r->rs.plan.target);
	log_info("%s: resizing from %s to %s", r->name, a1, a2);
	act_event(r->env->events, r->name, ACT_EV_RESIZE,
		  json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)r->rs.plan.target.milli_cpu,
			    "mem_bytes", (json_int_t)r->rs.plan.target.mem_bytes),
		  "resizing from %s to %s", a1, a2);
	r->rs.busy = true;
	r->rs.mem_refused = false;
	r->rs.failed = false;
	act_runner_text_set(&r->rs.error, "");
	r->rs.step = 0;
	act_runner_export_hotplug_start(r);
	hp_next(r);
}

/* Plans the API's change from the live state: the CPU to api_want within
 * the VM's bounds (no scheduler permit or monitor approval: the caller
 * decided), the memory where it is. */
static int api_start(struct act_runner *r, struct vmact_err *err)
{
	struct act_plan_limits lim = {
		.min = r->meta.min,
		.max = r->meta.max,
		.has_permit = true,
		.permit = r->meta.max,
		.has_approved = true,
		.approved = r->meta.min,
	};
	struct vmact_resources using_, want;
	struct act_vm_layout l;
	struct hp_state st;
	char a1[80], a2[80];
	int ret;

	ret = hp_state_read(r->env->hp, r->uuid, &st, err);
	if (ret < 0)
		return ret;
	act_runner_seen_set(r, &st);
	using_ = act_achieved(r->quota_milli, hp_state_vcpus(&st), hp_state_mem_kib(&st) * 1024u);
	r->st.using_ = using_;
	want = (struct vmact_resources){ .milli_cpu = r->rs.api_want,
					 .mem_bytes = using_.mem_bytes };
	act_vm_layout_from_state(&st, &r->meta, r->st.cu.mem_bytes, &l);
	l.keep_vcpus = act_runner_cpu_shrink(r) == ACT_CPU_SHRINK_QUOTA;
	ret = act_plan_hotplug(&using_, &want, &lim, &l, &r->rs.plan, err);
	if (ret < 0)
		return ret;
	if (vmact_res_eq(r->rs.plan.target, using_))
		return 0;
	act_runner_fmt_res(a1, sizeof(a1), using_);
	act_runner_fmt_res(a2, sizeof(a2), r->rs.plan.target);
	log_info("%s: resizing from %s to %s", r->name, a1, a2);
	r->rs.busy = true;
	r->rs.mem_refused = false;
	r->rs.api = true;
	r->rs.failed = false;
	act_runner_text_set(&r->rs.error, "");
	r->rs.step = 0;
	hp_next(r);
	return 0;
}

int act_runner_resize_cpu(struct act_runner *r, uint32_t milli, struct vmact_err *err)
{
	r->rs.api_want = milli;
	/* Frozen for a move: the change waits for the thaw, as it waits for
	 * a resize in flight. */
	if (r->rs.busy || act_runner_frozen(r)) {
		r->rs.api_pending = true;
		return 0;
	}
	return api_start(r, err);
}

void act_runner_resize_thaw(struct act_runner *r)
{
	struct vmact_err err = { 0 };

	if (!r->rs.api_pending || r->rs.busy || act_runner_frozen(r))
		return;
	r->rs.api_pending = false;
	if (api_start(r, &err) < 0)
		log_warning("%s: runner API: cannot start the change that waited for the thaw: %s",
			    r->name, err.msg);
}
