/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's decision loop and lifecycle: asks the core (actions.h) for
 * the next actions and hands them to the scheduler path (runner/plugin.c),
 * the hotplug path (runner/resize.c) and the VM's approver (approver.h);
 * their results come back here. */
#include "actuator/runner/runner.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "actuator/cgroup/cgroup-domain.h"
#include "actuator/worker/approver-proxy.h"
#include "actuator/worker/worker.h"
#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "agent-glue/arbiter/arbiter.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/time.h"
#include "bpf/sampler.h"
#include "hotplug/domain.h"
#include "net/http-server.h"

/* Issue 28's budget, and issue 36's: vmactd's private memory grows by at
 * most 16 KiB per VM it manages (doc/actuation.md, "vmactd's own
 * footprint"). The runner, zeroed whole by calloc and so all resident, is
 * a third of what a VM costs now (11-13 KiB measured); the rest is its
 * registry entry, its timers, libvirt's domain object, its sampler slot,
 * its JSON and texts. What only some VMs use (the LFC windows, guest
 * metrics URLs, the runner API's texts) is allocated when a VM uses it,
 * and its texts to their length (act_runner_text_set, the metadata's
 * hp_meta text): a member that breaks this belongs there too, not in
 * every runner. */
#define ACT_RUNNER_SIZE_BUDGET (6 * 1024)
_Static_assert(sizeof(struct act_runner) <= ACT_RUNNER_SIZE_BUDGET,
	       "struct act_runner over its 6 KiB budget: allocate rarely used parts on first use");

/* ---- the VM's config ---- */

int act_meta_scaling_config(const struct ag_scaling_config *defaults, const struct hp_meta *meta,
			    struct ag_scaling_config *out, struct vmact_err *err)
{
	const struct hp_scaling *s = &meta->scaling;
	struct ag_scaling_overrides o = { 0 };
	int ret;

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
	ret = ag_scaling_config_effective(defaults, &o, out, err);
	if (ret < 0)
		return ret;
	/* The LFC figures come only from the guest's LFC exporter: without
	 * one the setting would do nothing, which an operator must hear. */
	if (out->enable_lfc_metrics && !meta->metrics_lfc[0])
		return vmact_err_set(
			err, EINVAL,
			"enableLFCMetrics%s: needs <vmact:metrics lfc='http://HOST:9499'>",
			s->has_enable_lfc ? " (<vmact:scaling>)" : " (the host's \"scaling\")");
	return 0;
}

static void evaluate(struct act_runner *r);

static int on_wake(sd_event_source *s, uint64_t usec, void *ud)
{
	evaluate(ud);
	return 0;
}

/* A wait of a second or more is the core's periodic business (the
 * scheduler's request every 5 s, its permit's expiry): sd-event may put it
 * up to this late, on the same instant for every VM, so idle VMs share one
 * wake-up of the loop instead of each taking its own. A shorter wait (a
 * retry, a decision to carry out) keeps a millisecond. */
#define WAKE_SLACK_USEC (250 * 1000)

static void arm_wake(struct act_runner *r, int64_t wait_ns)
{
	uint64_t at, slack = wait_ns >= 1000000000LL ? WAKE_SLACK_USEC : 1000;

	at = vmact_loop_now_usec(r->env->event) + (uint64_t)(wait_ns > 0 ? wait_ns / 1000 : 0) + 1;
	if (!r->wake) {
		if (sd_event_add_time(r->env->event, &r->wake, CLOCK_MONOTONIC, at, slack, on_wake,
				      r) < 0)
			log_error("%s: cannot arm a timer", r->name);
		return;
	}
	sd_event_source_set_time(r->wake, at);
	sd_event_source_set_time_accuracy(r->wake, slack);
	sd_event_source_set_enabled(r->wake, SD_EVENT_ONESHOT);
}

/* ---- the approver (vm-monitor or informant) ---- */

static void upscale_done(void *ud, enum act_approval outcome)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };

	r->approver_busy = false;
	act_runner_export_approver_done(r, outcome != ACT_APPROVAL_OK);
	act_event(r->env->events, r->name, ACT_EV_MONITOR,
		  json_pack("{s:s}", "outcome", act_approval_name(outcome)),
		  "upscale notification: %s", act_approval_name(outcome));
	if (outcome == ACT_APPROVAL_OK) {
		if (act_monitor_upscale_ok(&r->st, act_runner_now_ns(r), &err) < 0)
			log_debug("%s: %s", r->name, err.msg);
	} else {
		act_monitor_upscale_failed(&r->st, act_runner_now_ns(r));
	}
	evaluate(r);
}

static void downscale_done(void *ud, enum act_approval outcome)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };
	int ret = 0;

	r->approver_busy = false;
	act_runner_export_approver_done(r, outcome == ACT_APPROVAL_FAILED);
	act_event(r->env->events, r->name, ACT_EV_MONITOR,
		  json_pack("{s:s}", "outcome", act_approval_name(outcome)),
		  "downscale request: %s", act_approval_name(outcome));
	switch (outcome) {
	case ACT_APPROVAL_OK:
		ret = act_monitor_downscale_ok(&r->st, act_runner_now_ns(r), &err);
		break;
	case ACT_APPROVAL_DENIED:
		ret = act_monitor_downscale_denied(&r->st, act_runner_now_ns(r), &err);
		break;
	case ACT_APPROVAL_FAILED:
		act_monitor_downscale_failed(&r->st, act_runner_now_ns(r));
		break;
	}
	if (ret < 0)
		log_debug("%s: %s", r->name, err.msg);
	evaluate(r);
}

static void start_approval(struct act_runner *r, bool up, const struct act_res_change *ch)
{
	struct vmact_err err = { 0 };
	int ret;

	ret = up ? act_monitor_upscale_starting(&r->st, act_runner_now_ns(r), &ch->target, &err)
		 : act_monitor_downscale_starting(&r->st, act_runner_now_ns(r), &ch->target, &err);
	if (ret < 0) {
		log_debug("%s: %s", r->name, err.msg);
		return;
	}
	/* Busy before the call: an implementation may complete early. */
	r->approver_busy = true;
	act_runner_export_approver_start(r, up);
	ret = up ? act_approver_request_upscale(r->approver, &ch->target, upscale_done, r, &err)
		 : act_approver_request_downscale(r->approver, &ch->target, downscale_done, r,
						  &err);
	if (ret < 0) {
		/* The approver said why. */
		r->approver_busy = false;
		act_runner_export_failure(r, ACT_FAILURE_MONITOR);
		if (up)
			act_monitor_upscale_failed(&r->st, act_runner_now_ns(r));
		else
			act_monitor_downscale_failed(&r->st, act_runner_now_ns(r));
	}
}

static void approver_connected(void *ud)
{
	struct act_runner *r = ud;

	r->held_logged = false;
	act_event(r->env->events, r->name, ACT_EV_MONITOR, NULL, "%s connected",
		  act_approver_name(r->approver));
	act_monitor_connected(&r->st);
	evaluate(r);
}

static void approver_lost(void *ud, bool requests_dropped)
{
	struct act_runner *r = ud;

	r->held_logged = false;
	act_event(r->env->events, r->name, ACT_EV_MONITOR, NULL, "%s connection lost",
		  act_approver_name(r->approver));
	act_monitor_reset(&r->st);
	if (requests_dropped)
		r->approver_busy = false;
	evaluate(r);
}

static void approver_changed(void *ud)
{
	struct act_runner *r = ud;

	r->held_logged = false;
	evaluate(r);
}

static void approver_upscale_requested(void *ud, bool cpu, bool memory)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };

	if (act_monitor_upscale_requested(&r->st, act_runner_now_ns(r), cpu, memory, &err) < 0)
		log_debug("%s: %s", r->name, err.msg);
	evaluate(r);
}

static int start_approver(struct act_runner *r, struct vmact_err *err)
{
	static const struct act_approver_events events = {
		.connected = approver_connected,
		.lost = approver_lost,
		.changed = approver_changed,
		.upscale_requested = approver_upscale_requested,
	};

	if (r->meta.informant[0])
		return act_runner_informant_new(r->env, r->name, r->meta.informant, &events, r,
						&r->approver, err);
	/* The vm-monitor is spoken to by the VM's guest worker, never by
	 * vmactd (doc/privsep.md). */
	if (r->meta.monitor[0]) {
		char prog[PATH_MAX];
		const char *p = r->env->cfg->guest_worker_program;

		if (!p[0]) {
			if (act_worker_default_program(prog, sizeof(prog), err) < 0)
				return vmact_err_prefix(err, "guest worker");
			p = prog;
		}
		return act_approver_proxy_new(r->env->event, r->name, r->meta.monitor, p,
					      r->env->cfg->guest_worker_user, &events, r,
					      &r->approver, err);
	}
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

/* Frozen for a move: once no resize is in flight (one that was has
 * finished and reported here through the core), the mover may go on:
 * the embedded arbiter's entry says "frozen" (doc/cluster.md, "Capacity
 * leases"). A remote plugin is told nothing: it asks nothing of it. */
static void note_frozen(struct act_runner *r)
{
	const char *ns, *pod;

	if (!act_runner_frozen(r) || r->frz.reported || r->rs.busy || r->approver_busy)
		return;
	r->frz.reported = true;
	if (!(r->frz.by & ACT_RUNNER_FREEZE_LEASE) || !r->env->arbiter)
		return;
	act_runner_pod_key(r, &ns, &pod);
	if (ag_arbiter_pod_frozen(r->env->arbiter, ns, pod, true) < 0)
		log_debug("%s: the arbiter no longer knows pod %s/%s", r->name, ns, pod);
	else
		log_debug("%s: frozen with no resize in flight: told the arbiter", r->name);
}

/* While frozen the scheduler is still asked, at its usual pace only (the
 * core asks at once for a size other than its permit, which a frozen VM
 * never reaches) and for the permit it holds: a moving pod's plugin
 * refuses any change once it said "migrate" (doc/protocols.md, "Legacy
 * plugins"), and keeps answering whether it still does. */
static bool frozen_plugin_request(struct act_runner *r, struct act_actions *a)
{
	act_time_t now = act_runner_now_ns(r);

	if (r->st.plugin.has_last_request &&
	    now - r->st.plugin.last_request_at < r->st.timing.plugin_request_tick) {
		if (!a->has_wait || a->wait > r->st.timing.plugin_request_tick -
						      (now - r->st.plugin.last_request_at)) {
			a->has_wait = true;
			a->wait = r->st.timing.plugin_request_tick -
				  (now - r->st.plugin.last_request_at);
		}
		return false;
	}
	a->plugin.target = r->st.plugin.has_permit ? r->st.plugin.permit : r->st.using_;
	return true;
}

static void evaluate(struct act_runner *r)
{
	struct act_actions a;
	struct vmact_err err = { 0 };
	unsigned h;

	if (r->freeing)
		return;
	note_frozen(r);
	/* A runner API VM is sized by the API's caller only. */
	if (r->api_vm)
		return;
	if (act_next_actions(&r->st, act_runner_now_ns(r), &a, &err) < 0) {
		log_error("%s: scaling decision failed: %s", r->name, err.msg);
		act_event(r->env->events, r->name, ACT_EV_ERROR, NULL,
			  "scaling decision failed: %s", err.msg);
		return;
	}
	act_runner_export_desired(r, &a.desired);
	/* A VM that cannot shrink, and why: once per new reason. */
	act_runner_view_note_shrink(r);
	/* Paused by its operator (vmactl pause): the VM keeps its size. */
	if (r->meta.paused)
		return;
	/* Recommend mode: decided as usual, reported, never applied: no
	 * resize, no approval, and no permit beyond the size the VM has,
	 * which the scheduler is asked for as any VM's (its reservation in
	 * the host's ledger; doc/control-api.md). */
	if (r->meta.recommend) {
		act_runner_view_note_recommend(r, &a.desired);
		if (a.has_plugin && !r->plugin.busy &&
		    !vmact_res_any_gt(a.plugin.target, r->st.using_) &&
		    (!act_runner_frozen(r) || frozen_plugin_request(r, &a)))
			act_runner_plugin_start(r, &a);
		return;
	}
	h = warn_hash(&a.warnings);
	if (h != r->last_warn_hash)
		for (unsigned i = 0; i < a.warnings.n; i++)
			log_debug("%s: %s", r->name, a.warnings.msg[i]);
	r->last_warn_hash = h;

	if (a.has_plugin && !r->plugin.busy &&
	    (!act_runner_frozen(r) || frozen_plugin_request(r, &a)))
		act_runner_plugin_start(r, &a);
	/* Frozen for a move: nothing resizes the VM, nothing asks its guest
	 * to (the one place every resize and approval starts from). */
	if (act_runner_frozen(r)) {
		if (a.has_wait)
			arm_wake(r, a.wait);
		return;
	}
	if (a.has_hotplug && !r->rs.busy) {
		if (!r->approver || act_approver_may_resize(r->approver)) {
			act_runner_resize_start(r, &a);
		} else if (!r->held_logged) {
			/* Only the informant holds resizes: while its agent is
			 * suspended. */
			log_info("%s: %s: holding a resize while the agent is suspended", r->name,
				 act_approver_name(r->approver));
			r->held_logged = true;
		}
	}
	/* No approver: the host approves its shrinks (the core's monitor
	 * stays inactive). */
	if (r->approver && act_approver_approves(r->approver) && !r->approver_busy) {
		if (a.has_monitor_upscale)
			start_approval(r, true, &a.monitor_upscale);
		else if (a.has_monitor_downscale)
			start_approval(r, false, &a.monitor_downscale);
	}
	if (a.has_wait)
		arm_wake(r, a.wait);
}

/* ---- lifecycle ---- */

void act_runner_freeze(struct act_runner *r, bool on, const char *why)
{
	act_runner_freeze_set(r, ACT_RUNNER_FREEZE_LEASE, on, why);
	/* Decided again from the loop: the caller may be inside the
	 * arbiter, which the scheduler request would re-enter. */
	arm_wake(r, 0);
	if (!act_runner_frozen(r))
		act_runner_resize_thaw(r);
}

void act_runner_room_freed(struct act_runner *r)
{
	const struct act_state *s = &r->st;

	if (s->plugin.ongoing || !s->plugin.has_last_request || !s->plugin.has_permit ||
	    !vmact_res_any_gt(s->plugin.last_request, s->plugin.permit))
		return;
	r->st.plugin.room_at = act_runner_now_ns(r);
	arm_wake(r, 0);
}

/* How the concerns reach the core (runner-priv.h). */
static const struct act_runner_core_ops core_ops = {
	.changed = evaluate,
};

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
		return vmact_err_set(err, ENODEV,
				     "no cgroup with the cpu controller: fractional "
				     "CPU limits cannot be enforced");
	ret = act_meta_scaling_config(&env->cfg->scaling, meta, &sc, err);
	if (ret < 0)
		return ret;
	cu = meta->has_compute_unit ? meta->compute_unit : env->cfg->compute_unit;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->env = env;
	r->core = &core_ops;
	if ((ret = hp_meta_copy(&r->meta, meta, err)) < 0) {
		free(r);
		return ret;
	}
	snprintf(r->name, sizeof(r->name), "%s", st->name);
	snprintf(r->uuid, sizeof(r->uuid), "%s", st->uuid);
	act_runner_seen_set(r, st);

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

		act_runner_fmt_res(a, sizeof(a), using_);
		act_runner_fmt_res(b, sizeof(b), meta->min);
		act_runner_fmt_res(c, sizeof(c), meta->max);
		log_warning("%s: runs with %s, outside its bounds [%s, %s]; it is brought inside "
			    "as the scheduler and vm-monitor allow",
			    r->name, a, b, c);
	}
	/* From now on the quota is what the VM is granted; in recommend mode
	 * vmactd changes nothing, not even that (written when it becomes
	 * active). */
	ret = meta->recommend ? 0 : act_runner_write_quota(r, using_.milli_cpu, err);
	if (ret < 0)
		goto fail;

	if (env->sampler) {
		char dir[PATH_MAX + 512];

		snprintf(dir, sizeof(dir), "%s%s", env->cg->cpu_mount, r->group);
		if (smp_register(env->sampler, r->uuid, r->pid, dir, err) < 0) {
			/* E.g. every slot in use (sampler.max_vms): the VM
			 * is managed but not scaled on its load (README,
			 * "Reliability and security"). */
			log_warning(
				"%s: load sampling unavailable: %s; the VM is not scaled on its load",
				r->name, err->msg);
			vmact_err_reset(err);
		} else {
			r->rd.sampler_registered = true;
		}
	}
	r->api_vm = meta->runner_listen[0] != 0;
	if (r->api_vm) {
		/* Only the hardware side (doc/runner-api.md): no scheduler,
		 * approver, readings or CPU policy. */
		r->rs.api_want = using_.milli_cpu;
		ret = act_runner_neonvm_api_start(r, err);
		if (ret < 0)
			goto fail;
		{
			char a[80], b[80], c[80];

			act_runner_fmt_res(a, sizeof(a), using_);
			act_runner_fmt_res(b, sizeof(b), meta->min);
			act_runner_fmt_res(c, sizeof(c), meta->max);
			log_info("%s: managing (%s, bounds [%s, %s], cgroup %s, runner API on %s "
				 "port %u: sized by its caller)",
				 r->name, a, b, c, r->group, r->meta.runner_listen,
				 net_http_server_port(r->api.server));
		}
		*out = r;
		return 0;
	}
	ret = act_runner_plugin_setup(r, err);
	if (ret >= 0)
		ret = start_approver(r, err);
	if (ret < 0)
		goto fail;
	/* Nobody in the guest to ask (doc/policy.md, "Without an agent"):
	 * the host's own evidence shrinks the CPU by its quota and, through
	 * virtio-mem (the guest's driver refuses what it cannot give back),
	 * the memory. A DIMM unplug has crashed QEMU: those stay. */
	act_state_set_host_approval(&r->st, !r->approver,
				    !r->approver && r->meta.method == HP_METHOD_VIRTIO_MEM);
	if (!r->approver)
		log_info("%s: no vm-monitor or informant: scaled both ways on the host's own "
			 "evidence (CPU by its quota from BPF, memory%s from the balloon's "
			 "statistics)",
			 r->name, r->meta.method == HP_METHOD_VIRTIO_MEM ? "" : " growth only");
	ret = act_runner_memory_start(r, err);
	if (ret >= 0)
		ret = act_runner_readings_start(r, err);
	if (ret < 0)
		goto fail;
	{
		char a[80], b[80], c[80];

		act_runner_fmt_res(a, sizeof(a), using_);
		act_runner_fmt_res(b, sizeof(b), meta->min);
		act_runner_fmt_res(c, sizeof(c), meta->max);
		log_info("%s: managing (%s, bounds [%s, %s], cgroup %s, %s %s)", r->name, a, b, c,
			 r->group, r->meta.informant[0] ? "informant" : "monitor",
			 r->meta.informant[0] ? r->meta.informant
			 : r->meta.monitor[0] ? r->meta.monitor
					      : "none");
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
	/* Stopping the approver fails its pending request and reports the
	 * disconnection through our callbacks: they must not start anything. */
	r->freeing = true;
	act_approver_free(r->approver);
	r->approver = NULL;
	act_runner_neonvm_api_free(r);
	sd_event_source_disable_unref(r->wake);
	sd_event_source_disable_unref(r->rd.timer);
	act_runner_readings_free(r);
	act_runner_memory_free(r);
	act_runner_plugin_free(r);
	if (r->rd.sampler_registered)
		smp_unregister(r->env->sampler, r->uuid, NULL);
	act_state_free(&r->st);
	if (r->dom)
		virDomainFree(r->dom);
	free(r->group);
	free(r->last_reason);
	free(r->plugin.short_why);
	free(r->rs.error);
	free(r->mem.absent);
	free(r->mem.last_reason);
	free(r->view.last_change);
	free(r->view.shrink_blocked);
	free(r->frz.why);
	hp_meta_done(&r->meta);
	free(r);
}

int act_runner_release(struct act_runner *r, struct vmact_err *err)
{
	struct act_cpu_bw bw = act_cpu_bw_unlimited(ACT_CPU_PERIOD_DEFAULT_US);
	int ret;

	/* A VM vmactd only recommended for keeps the quota it has. */
	if (!r->quota_milli && r->meta.recommend)
		return 0;
	ret = act_cg_cpu_set(r->env->cg, r->group, &bw, err);
	if (ret == 0)
		r->quota_milli = 0;
	return ret;
}

int act_runner_update(struct act_runner *r, const struct hp_meta *meta, struct vmact_err *err)
{
	_cleanup_(hp_meta_done) struct hp_meta copy = { 0 };
	struct ag_scaling_config sc;
	struct vmact_resources cu = meta->has_compute_unit ? meta->compute_unit
							   : r->env->cfg->compute_unit;
	int ret;

	if (!vmact_res_eq(cu, r->st.cu) || meta->method != r->meta.method ||
	    strcmp(meta->mem_alias, r->meta.mem_alias) || strcmp(meta->monitor, r->meta.monitor) ||
	    strcmp(meta->informant, r->meta.informant) || strcmp(meta->metrics, r->meta.metrics) ||
	    strcmp(meta->metrics_lfc, r->meta.metrics_lfc) ||
	    meta->policy_cpu != r->meta.policy_cpu ||
	    meta->policy_shrink != r->meta.policy_shrink ||
	    strcmp(meta->runner_listen, r->meta.runner_listen))
		return 1;
	ret = act_meta_scaling_config(&r->env->cfg->scaling, meta, &sc, err);
	if (ret >= 0)
		ret = hp_meta_copy(&copy, meta, err);
	if (ret >= 0)
		ret = act_state_update_vm(&r->st, &meta->min, &meta->max, &sc, err);
	if (ret < 0)
		return ret;
	/* Recommend to active: the quota becomes what the VM is granted,
	 * then the current recommendation goes the normal way (permit,
	 * bounds, resize). */
	if (r->meta.recommend && !meta->recommend && !r->api_vm &&
	    (ret = act_runner_write_quota(r, r->st.using_.milli_cpu, err)) < 0)
		return ret;
	if (meta->recommend != r->meta.recommend) {
		log_info("%s: mode %s", r->name,
			 meta->recommend ? "recommend: decisions are reported, not applied"
					 : "active: decisions are applied");
		r->view.has_recommended = false;
	}
	{
		/* The old texts go with copy. */
		struct hp_meta old = r->meta;

		r->meta = copy;
		copy = old;
	}
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
