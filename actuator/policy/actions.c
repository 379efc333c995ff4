/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/policy/actions.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W_PLUGIN   "Wanted to make a request to the scheduler plugin, but "
#define W_HOTPLUG  "Wanted to hotplug resources, but "
#define W_MON_UP   "Wanted to send vm-monitor upscale request, but "
#define W_MON_DOWN "Wanted to send vm-monitor downscale request"

void act_timing_defaults(struct act_timing *t)
{
	*t = (struct act_timing){
		.plugin_request_tick = ACT_SEC(15),
		.plugin_tick_jitter = 0,
		.plugin_retry_wait = ACT_SEC(3),
		.plugin_denied_retry_wait = ACT_SEC(2),
		.hotplug_retry_wait = ACT_SEC(5),
		.monitor_denied_downscale_cooldown = ACT_SEC(5),
		.monitor_requested_upscale_valid = ACT_SEC(10),
		.monitor_retry_wait = ACT_SEC(3),
	};
}

int64_t act_plugin_jitter(uint32_t random_value)
{
	return ACT_MS(random_value % 100);
}

static void fmt_res(char *buf, size_t len, struct vmact_resources r)
{
	snprintf(buf, len, "{cpu %um, mem %llu B}", r.milli_cpu, (unsigned long long)r.mem_bytes);
}

static int check_bounds(const struct vmact_resources *cu, const struct vmact_resources *min,
			const struct vmact_resources *max, const struct ag_scaling_config *config,
			struct vmact_err *err)
{
	char a[64], b[64];

	if (cu->milli_cpu == 0 || cu->mem_bytes == 0)
		return vmact_err_set(err, EINVAL, "compute unit: cpu and mem must be non-zero");
	if (vmact_res_any_gt(*min, *max)) {
		fmt_res(a, sizeof(a), *min);
		fmt_res(b, sizeof(b), *max);
		return vmact_err_set(err, EINVAL, "bounds: min %s has a field above max %s", a, b);
	}
	if (ag_scaling_config_validate(config, err) < 0)
		return vmact_err_prefix(err, "scaling config");
	return 0;
}

int act_state_init(struct act_state *s, const struct act_timing *timing,
		   const struct vmact_resources *cu, const struct ag_scaling_config *config,
		   const struct vmact_resources *using_, const struct vmact_resources *min,
		   const struct vmact_resources *max, struct vmact_err *err)
{
	int r = check_bounds(cu, min, max, config, err);

	if (r < 0)
		return r;
	memset(s, 0, sizeof(*s));
	s->timing = *timing;
	s->cu = *cu;
	s->config = *config;
	s->using_ = *using_;
	s->min = *min;
	s->max = *max;
	return 0;
}

int act_state_update_vm(struct act_state *s, const struct vmact_resources *min,
			const struct vmact_resources *max, const struct ag_scaling_config *config,
			struct vmact_err *err)
{
	int r = check_bounds(&s->cu, min, max, config, err);

	if (r < 0)
		return r;
	s->min = *min;
	s->max = *max;
	s->config = *config;
	/* Re-enabling LFC later must not decide on stale windows. */
	if (!config->enable_lfc_metrics) {
		s->has_lfc = false;
		s->lfc_n = 0;
		free(s->lfc_pages);
		s->lfc_pages = NULL;
		s->lfc_cap = 0;
	}
	return 0;
}

void act_state_free(struct act_state *s)
{
	free(s->lfc_pages);
	s->lfc_pages = NULL;
	s->lfc_cap = 0;
	s->lfc_n = 0;
	s->has_lfc = false;
}

static int check_metric(const char *name, double v, struct vmact_err *err)
{
	if (!isfinite(v) || v < 0)
		return vmact_err_set(err, EINVAL, "system metrics: %s must be a finite number >= 0",
				     name);
	return 0;
}

void act_state_update_cpu_goal(struct act_state *s, bool has, uint32_t milli)
{
	s->has_cpu_goal = has;
	s->cpu_goal_milli = has ? milli : 0;
}

void act_state_update_mem_goal(struct act_state *s, bool has, uint64_t bytes)
{
	s->has_mem_goal = has;
	s->mem_goal_bytes = has ? bytes : 0;
}

void act_state_set_host_approval(struct act_state *s, bool cpu, bool mem)
{
	s->host_approves.cpu = cpu;
	s->host_approves.mem = mem;
}

int act_state_update_system_metrics(struct act_state *s, const struct act_system_metrics *m,
				    struct vmact_err *err)
{
	if (check_metric("load1", m->load1, err) < 0 || check_metric("load5", m->load5, err) < 0)
		return -EINVAL;
	if (!m->memory_absent && (check_metric("memory usage", m->memory_usage_bytes, err) < 0 ||
				  check_metric("memory cached", m->memory_cached_bytes, err) < 0))
		return -EINVAL;
	s->system = *m;
	s->has_system = true;
	return 0;
}

int act_state_update_lfc_metrics(struct act_state *s, const double *pages, size_t n,
				 struct vmact_err *err)
{
	if (n > ACT_LFC_MAX_WINDOWS)
		return vmact_err_set(err, E2BIG, "lfc metrics: %zu windows, at most %d supported",
				     n, ACT_LFC_MAX_WINDOWS);
	for (size_t i = 0; i < n; i++)
		if (!isfinite(pages[i]) || pages[i] < 0)
			return vmact_err_set(
				err, EINVAL,
				"lfc metrics: window %zu min must be a finite number >= 0", i + 1);
	if (n > s->lfc_cap) {
		/* The exporter's count of windows is steady: one allocation
		 * per VM, at its first reading. */
		double *p = realloc(s->lfc_pages, n * sizeof(*p));

		if (!p)
			return vmact_err_set(err, ENOMEM, "lfc metrics: %zu windows: out of memory",
					     n);
		s->lfc_pages = p;
		s->lfc_cap = n;
	}
	if (n)
		memcpy(s->lfc_pages, pages, n * sizeof(*pages));
	s->lfc_n = n;
	s->has_lfc = true;
	return 0;
}

/* ---- decision ------------------------------------------------------ */

/* Go's clampResources, per field: a decrease is held at the lower bound, an
 * increase at the upper one. Bounds on the wrong side of current are pulled
 * to current (Go panics instead), so a bound never turns into a move in the
 * opposite direction. */
static uint64_t clamp_field(uint64_t cur, uint64_t want, const uint64_t *lo, const uint64_t *hi)
{
	if (want < cur && lo) {
		uint64_t l = *lo < cur ? *lo : cur;

		return want > l ? want : l;
	}
	if (want > cur && hi) {
		uint64_t h = *hi > cur ? *hi : cur;

		return want < h ? want : h;
	}
	return want;
}

static struct vmact_resources clamp(struct vmact_resources cur, struct vmact_resources want,
				    const struct vmact_resources *lo,
				    const struct vmact_resources *hi)
{
	uint64_t lc, lm, hc, hm;

	if (lo) {
		lc = lo->milli_cpu;
		lm = lo->mem_bytes;
	}
	if (hi) {
		hc = hi->milli_cpu;
		hm = hi->mem_bytes;
	}
	return (struct vmact_resources){
		.milli_cpu = (uint32_t)clamp_field(cur.milli_cpu, want.milli_cpu, lo ? &lc : NULL,
						   hi ? &hc : NULL),
		.mem_bytes = clamp_field(cur.mem_bytes, want.mem_bytes, lo ? &lm : NULL,
					 hi ? &hm : NULL),
	};
}

static struct vmact_resources sat_sub(struct vmact_resources a, struct vmact_resources b)
{
	return (struct vmact_resources){
		.milli_cpu = a.milli_cpu > b.milli_cpu ? a.milli_cpu - b.milli_cpu : 0,
		.mem_bytes = a.mem_bytes > b.mem_bytes ? a.mem_bytes - b.mem_bytes : 0,
	};
}

struct waits {
	bool has;
	int64_t min;
};

static void wait_add(struct waits *w, int64_t d)
{
	if (!w->has || d < w->min)
		w->min = d;
	w->has = true;
}

static void plugin_action(const struct act_state *s, act_time_t now, struct vmact_resources desired,
			  struct act_actions *out, struct waits *waits)
{
	const struct vmact_resources using_ = s->using_;
	struct vmact_resources req, current, target;
	int64_t until_tick = 0, until_backoff = 0;
	bool time_for_request, denied, waiting_backoff, want_new, should_new;

	/* Decreases reach the plugin only after they happened, and never
	 * below a resize still in flight: a permit for less than its target
	 * would leave the VM above its permit once it completes (README
	 * "Reliability and security", make soak). */
	current = using_;
	if (s->hotplug.ongoing)
		current = vmact_res_max(current, s->hotplug.ongoing_target);
	req = clamp(current, desired, &current, NULL);

	if (s->plugin.has_last_request)
		until_tick = s->timing.plugin_request_tick - s->timing.plugin_tick_jitter -
			     (now - s->plugin.last_request_at);
	time_for_request = until_tick <= 0;

	denied = !s->plugin.ongoing && s->plugin.has_last_request && s->plugin.has_permit &&
		 vmact_res_any_gt(s->plugin.last_request, s->plugin.permit);
	if (denied)
		until_backoff = s->plugin.last_request_at + s->timing.plugin_denied_retry_wait -
				now;
	/* Room freed since the denial (a VM left the host): no backoff. */
	if (denied && s->plugin.room_at > s->plugin.last_request_at)
		until_backoff = 0;
	waiting_backoff = until_backoff > 0;

	want_new = s->plugin.has_last_request && s->plugin.has_permit &&
		   !vmact_res_eq(req, s->plugin.permit);
	should_new = want_new && !waiting_backoff;
	target = should_new ? req : current;

	if (s->plugin.ongoing) {
		if (!vmact_res_eq(s->plugin.last_request, target))
			act_warn(&out->warnings, W_PLUGIN
				 "there's already an ongoing request for different resources");
		return;
	}
	if (s->plugin.has_failure) {
		int64_t left = s->plugin.failure_at + s->timing.plugin_retry_wait - now;

		if (left > 0) {
			act_warn(&out->warnings, W_PLUGIN "previous request failed too recently");
			wait_add(waits, left);
			return;
		}
	}
	if (time_for_request || should_new) {
		out->has_plugin = true;
		out->plugin.has_last_permit = s->plugin.has_permit;
		out->plugin.last_permit = s->plugin.permit;
		out->plugin.target = target;
		out->plugin.has_metrics = s->has_system;
		out->plugin.load_avg_1m = s->has_system ? s->system.load1 : 0.0;
		return;
	}
	if (want_new && waiting_backoff)
		act_warn(&out->warnings,
			 W_PLUGIN "previous request for more resources was denied too recently");
	wait_add(waits, waiting_backoff && until_backoff < until_tick ? until_backoff : until_tick);
}

/* Defence in depth on top of the clamp: an increase never passes
 * min(max, permit), a decrease never passes max(min, approved). */
static uint64_t enforce_field(uint64_t cur, uint64_t t, uint64_t min, uint64_t max, uint64_t up,
			      uint64_t down)
{
	if (t > cur) {
		uint64_t cap = max < up ? max : up;

		if (t > cap)
			t = cap > cur ? cap : cur;
	} else if (t < cur) {
		uint64_t floor_ = min > down ? min : down;

		if (t < floor_)
			t = floor_ < cur ? floor_ : cur;
	}
	return t;
}

struct vmact_resources act_hotplug_lower(const struct act_state *s)
{
	struct vmact_resources lo = s->using_;

	if (s->monitor.active)
		return s->monitor.approved;
	/* Nobody to ask: the host's evidence decides, within min. */
	if (s->host_approves.cpu && s->min.milli_cpu < lo.milli_cpu)
		lo.milli_cpu = s->min.milli_cpu;
	if (s->host_approves.mem && s->min.mem_bytes < lo.mem_bytes)
		lo.mem_bytes = s->min.mem_bytes;
	return lo;
}

static struct vmact_resources hotplug_upper(const struct act_state *s)
{
	return s->plugin.has_permit ? s->plugin.permit : s->using_;
}

static void hotplug_action(const struct act_state *s, act_time_t now,
			   struct vmact_resources desired,
			   const struct vmact_resources *plugin_requested, struct act_actions *out,
			   struct waits *waits)
{
	const struct vmact_resources using_ = s->using_;
	struct vmact_resources lo = act_hotplug_lower(s), hi = hotplug_upper(s), target;
	bool conflicting;

	/* No downscale without the monitor's approval, no upscale beyond the
	 * plugin's permit. */
	target = clamp(using_, desired, &lo, &hi);
	target.milli_cpu = (uint32_t)enforce_field(using_.milli_cpu, target.milli_cpu,
						   s->min.milli_cpu, s->max.milli_cpu, hi.milli_cpu,
						   lo.milli_cpu);
	target.mem_bytes = enforce_field(using_.mem_bytes, target.mem_bytes, s->min.mem_bytes,
					 s->max.mem_bytes, hi.mem_bytes, lo.mem_bytes);
	if (vmact_res_eq(target, using_))
		return;

	/* The plugin must have heard of (or be hearing of) at least this much
	 * before it is plugged. */
	conflicting = plugin_requested && vmact_res_any_lt(*plugin_requested, target);
	if (!s->hotplug.ongoing && !conflicting) {
		if (s->hotplug.has_failure) {
			int64_t left = s->hotplug.failure_at + s->timing.hotplug_retry_wait - now;

			if (left > 0) {
				act_warn(&out->warnings,
					 W_HOTPLUG "the previous hotplug failed too recently");
				wait_add(waits, left);
				return;
			}
		}
		out->has_hotplug = true;
		out->hotplug.current = using_;
		out->hotplug.target = target;
		return;
	}

	bool plugin_ongoing = s->plugin.ongoing;
	bool other_hotplug = s->hotplug.ongoing && !vmact_res_eq(s->hotplug.ongoing_target, target);

	if (plugin_ongoing && other_hotplug)
		act_warn(&out->warnings,
			 W_HOTPLUG "there's already plugin request ongoing and hotplug "
				   "(for different resources) ongoing");
	else if (plugin_ongoing)
		act_warn(&out->warnings, W_HOTPLUG "there's already plugin request ongoing");
	else if (other_hotplug)
		act_warn(&out->warnings,
			 W_HOTPLUG "there's already hotplug (for different resources) ongoing");
}

static void monitor_upscale_action(const struct act_state *s, act_time_t now,
				   struct vmact_resources desired, struct act_actions *out,
				   struct waits *waits)
{
	struct vmact_resources approved = s->monitor.approved, hi, req;

	if (!s->monitor.active)
		return;
	/* Tell the monitor about what is plugged, up to what is desired. Go
	 * then clamps to +1 CU relative to this very target, which is a no-op:
	 * notifications jump straight to the new size. */
	hi = vmact_res_max(desired, approved);
	req = clamp(approved, s->using_, &approved, &hi);
	if (vmact_res_eq(req, approved))
		return;

	if (s->monitor.ongoing != ACT_MONITOR_NONE) {
		if (s->monitor.ongoing == ACT_MONITOR_UPSCALE &&
		    !vmact_res_eq(s->monitor.ongoing_target, req))
			act_warn(&out->warnings, W_MON_UP
				 "waiting on ongoing upscale request (for different resources)");
		else if (s->monitor.ongoing == ACT_MONITOR_DOWNSCALE)
			act_warn(&out->warnings, W_MON_UP "waiting on ongoing downscale request");
		return;
	}
	if (s->monitor.has_upscale_failure) {
		int64_t left = s->monitor.upscale_failure_at + s->timing.monitor_retry_wait - now;

		if (left > 0) {
			act_warn(&out->warnings, W_MON_UP "failed too recently");
			wait_add(waits, left);
			return;
		}
	}
	out->has_monitor_upscale = true;
	out->monitor_upscale.current = approved;
	out->monitor_upscale.target = req;
}

static void monitor_downscale_action(const struct act_state *s, act_time_t now,
				     struct vmact_resources desired, bool planned_upscale,
				     struct act_actions *out, struct waits *waits)
{
	struct vmact_resources approved = s->monitor.approved, lo, req;

	if (!s->monitor.active) {
		struct vmact_resources floor_ = act_hotplug_lower(s);

		/* What the host approves is the hotplug's to do. */
		if ((desired.milli_cpu < s->using_.milli_cpu &&
		     floor_.milli_cpu == s->using_.milli_cpu) ||
		    (desired.mem_bytes < s->using_.mem_bytes &&
		     floor_.mem_bytes == s->using_.mem_bytes))
			act_warn(&out->warnings, W_MON_DOWN ", but there's no active connection");
		return;
	}
	req = clamp(approved, desired, NULL, &approved);
	/* At most one compute unit per request. */
	lo = sat_sub(approved, s->cu);
	req = clamp(approved, req, &lo, NULL);
	if (vmact_res_eq(req, approved))
		return;

	if (planned_upscale) {
		act_warn(&out->warnings,
			 W_MON_DOWN ", but waiting on other planned upscale request");
		return;
	}
	if (s->monitor.ongoing != ACT_MONITOR_NONE) {
		if (s->monitor.ongoing == ACT_MONITOR_DOWNSCALE &&
		    !vmact_res_eq(s->monitor.ongoing_target, req))
			act_warn(&out->warnings,
				 W_MON_DOWN ", but waiting on other ongoing downscale "
					    "request (for different resources)");
		else if (s->monitor.ongoing == ACT_MONITOR_UPSCALE)
			act_warn(&out->warnings,
				 W_MON_DOWN ", but waiting on other ongoing upscale request");
		return;
	}
	if (s->monitor.has_downscale_failure) {
		int64_t left = s->monitor.downscale_failure_at + s->timing.monitor_retry_wait - now;

		if (left > 0) {
			act_warn(&out->warnings, W_MON_DOWN " but failed too recently");
			wait_add(waits, left);
			return;
		}
	}
	/* The desired-resources floor already keeps a denied target out; Go
	 * panics if it did not. Not asking again is the safe side. */
	if (s->monitor.has_denied &&
	    s->monitor.denied.at + s->timing.monitor_denied_downscale_cooldown - now > 0 &&
	    !vmact_res_any_lt(s->monitor.denied.requested, req)) {
		act_warn(&out->warnings,
			 W_MON_DOWN ", but too soon after previously denied downscaling");
		return;
	}
	out->has_monitor_downscale = true;
	out->monitor_downscale.current = approved;
	out->monitor_downscale.target = req;
}

int act_next_actions(const struct act_state *s, act_time_t now, struct act_actions *out,
		     struct vmact_err *err)
{
	struct act_lfc_metrics lfc = { .wss_pages = s->lfc_pages, .n = s->lfc_n };
	struct act_desired_input in = {
		.cfg = &s->config,
		.cu = s->cu,
		.using_ = s->using_,
		.min = s->min,
		.max = s->max,
		.sys = s->has_system ? &s->system : NULL,
		.lfc = s->has_lfc ? &lfc : NULL,
		.requested_upscale =
			s->monitor.has_requested_upscale ? &s->monitor.requested_upscale : NULL,
		.requested_upscale_valid = s->timing.monitor_requested_upscale_valid,
		.denied = s->monitor.has_denied ? &s->monitor.denied : NULL,
		.denied_cooldown = s->timing.monitor_denied_downscale_cooldown,
		.cpu_goal_milli = s->has_cpu_goal ? &s->cpu_goal_milli : NULL,
		.mem_goal_bytes = s->has_mem_goal ? &s->mem_goal_bytes : NULL,
	};
	const struct vmact_resources *plugin_requested = NULL;
	struct act_desired d;
	struct waits waits = { 0 };
	int64_t w;
	int r;

	memset(out, 0, sizeof(*out));
	r = act_desired_resources(&in, now, &d, &out->warnings, err);
	if (r < 0)
		return r;
	out->desired = d.res;

	plugin_action(s, now, d.res, out, &waits);

	if (s->plugin.ongoing)
		plugin_requested = &s->plugin.last_request;
	else if (out->has_plugin)
		plugin_requested = &out->plugin.target;
	hotplug_action(s, now, d.res, plugin_requested, out, &waits);

	/* Upscale notifications go first: asking to downscale while the monitor
	 * has not heard of an upscale would leave it out of date. */
	monitor_upscale_action(s, now, d.res, out, &waits);
	monitor_downscale_action(s, now, d.res, out->has_monitor_upscale, out, &waits);

	if (act_desired_wait(&d, out->has_monitor_downscale, s->monitor.ongoing != ACT_MONITOR_NONE,
			     &w))
		wait_add(&waits, w);
	out->has_wait = waits.has;
	out->wait = waits.min;
	return 0;
}

/* ---- feedback ------------------------------------------------------ */

int act_plugin_starting(struct act_state *s, act_time_t now, const struct vmact_resources *target,
			struct vmact_err *err)
{
	if (s->plugin.ongoing)
		return vmact_err_set(err, EBUSY, "plugin request already ongoing");
	s->plugin.ongoing = true;
	s->plugin.has_last_request = true;
	s->plugin.last_request_at = now;
	s->plugin.last_request = *target;
	return 0;
}

void act_plugin_failed(struct act_state *s, act_time_t now)
{
	s->plugin.ongoing = false;
	s->plugin.has_failure = true;
	s->plugin.failure_at = now;
}

int act_plugin_response(struct act_state *s, act_time_t now, const struct vmact_resources *permit,
			struct vmact_err *err)
{
	char a[64], b[64];
	int r = 0;

	if (!s->plugin.ongoing)
		return vmact_err_set(err, EINVAL, "plugin response without an ongoing request");
	s->plugin.ongoing = false;
	if (permit->milli_cpu == 0 || permit->mem_bytes == 0) {
		r = vmact_err_set(err, EPROTO, "invalid permit: %s field is zero",
				  permit->milli_cpu == 0 ? "cpu" : "mem");
	} else if (vmact_res_any_gt(*permit, s->plugin.last_request)) {
		fmt_res(a, sizeof(a), *permit);
		fmt_res(b, sizeof(b), s->plugin.last_request);
		r = vmact_err_set(err, EPROTO, "permit %s has resources greater than request %s", a,
				  b);
	} else if (vmact_res_any_lt(*permit, s->using_)) {
		fmt_res(a, sizeof(a), *permit);
		fmt_res(b, sizeof(b), s->using_);
		r = vmact_err_set(err, EPROTO, "permit %s has resources less than VM %s", a, b);
	}
	if (r < 0) {
		s->plugin.has_failure = true;
		s->plugin.failure_at = now;
		return r;
	}
	s->plugin.has_permit = true;
	s->plugin.permit = *permit;
	return 0;
}

int act_hotplug_starting(struct act_state *s, act_time_t now, const struct vmact_resources *target,
			 struct vmact_err *err)
{
	struct vmact_resources lo = act_hotplug_lower(s), hi = hotplug_upper(s), t = *target;
	char a[64], b[64];

	if (s->hotplug.ongoing)
		return vmact_err_set(err, EBUSY, "hotplug already ongoing");
	/* The same limits act_next_actions applies, so a caller that does not
	 * follow the actions still cannot break them. */
	t.milli_cpu = (uint32_t)enforce_field(s->using_.milli_cpu, t.milli_cpu, s->min.milli_cpu,
					      s->max.milli_cpu, hi.milli_cpu, lo.milli_cpu);
	t.mem_bytes = enforce_field(s->using_.mem_bytes, t.mem_bytes, s->min.mem_bytes,
				    s->max.mem_bytes, hi.mem_bytes, lo.mem_bytes);
	if (!vmact_res_eq(t, *target)) {
		fmt_res(a, sizeof(a), *target);
		fmt_res(b, sizeof(b), s->using_);
		return vmact_err_set(
			err, ERANGE,
			"hotplug target %s from %s is outside bounds, permit or monitor approval",
			a, b);
	}
	s->hotplug.ongoing = true;
	s->hotplug.ongoing_target = *target;
	return 0;
}

int act_hotplug_finished(struct act_state *s, act_time_t now,
			 const struct vmact_resources *achieved, bool failed, struct vmact_err *err)
{
	if (!s->hotplug.ongoing)
		return vmact_err_set(err, EINVAL, "hotplug result without an ongoing hotplug");
	s->using_ = *achieved;
	s->hotplug.ongoing = false;
	if (failed) {
		s->hotplug.has_failure = true;
		s->hotplug.failure_at = now;
	}
	return 0;
}

void act_hotplug_failed(struct act_state *s, act_time_t now)
{
	s->hotplug.ongoing = false;
	s->hotplug.has_failure = true;
	s->hotplug.failure_at = now;
}

void act_monitor_connected(struct act_state *s)
{
	s->monitor.active = true;
	s->monitor.approved = s->using_;
}

void act_monitor_reset(struct act_state *s)
{
	memset(&s->monitor, 0, sizeof(s->monitor));
}

int act_monitor_upscale_requested(struct act_state *s, act_time_t now, bool cpu, bool mem,
				  struct vmact_err *err)
{
	if (!s->monitor.active)
		return vmact_err_set(err, ENOTCONN, "upscale request without an active vm-monitor");
	s->monitor.has_requested_upscale = true;
	s->monitor.requested_upscale = (struct act_requested_upscale){
		.at = now,
		.base = s->monitor.approved,
		.cpu = cpu,
		.mem = mem,
	};
	return 0;
}

static int monitor_starting(struct act_state *s, enum act_monitor_kind kind,
			    const struct vmact_resources *target, struct vmact_err *err)
{
	if (!s->monitor.active)
		return vmact_err_set(err, ENOTCONN, "no active vm-monitor");
	if (s->monitor.ongoing != ACT_MONITOR_NONE)
		return vmact_err_set(err, EBUSY, "vm-monitor request already ongoing");
	if (kind == ACT_MONITOR_UPSCALE ? vmact_res_any_lt(*target, s->monitor.approved)
					: vmact_res_any_gt(*target, s->monitor.approved))
		return vmact_err_set(err, ERANGE, "vm-monitor %s target goes the wrong way",
				     kind == ACT_MONITOR_UPSCALE ? "upscale" : "downscale");
	s->monitor.ongoing = kind;
	s->monitor.ongoing_target = *target;
	return 0;
}

int act_monitor_upscale_starting(struct act_state *s, act_time_t now,
				 const struct vmact_resources *target, struct vmact_err *err)
{
	int r = monitor_starting(s, ACT_MONITOR_UPSCALE, target, err);

	if (r == 0)
		s->monitor.has_upscale_failure = false;
	return r;
}

int act_monitor_downscale_starting(struct act_state *s, act_time_t now,
				   const struct vmact_resources *target, struct vmact_err *err)
{
	int r = monitor_starting(s, ACT_MONITOR_DOWNSCALE, target, err);

	if (r == 0)
		s->monitor.has_downscale_failure = false;
	return r;
}

static int monitor_finish(struct act_state *s, enum act_monitor_kind kind, struct vmact_err *err)
{
	if (!s->monitor.active || s->monitor.ongoing != kind)
		return vmact_err_set(err, EINVAL,
				     "vm-monitor %s result without that request ongoing",
				     kind == ACT_MONITOR_UPSCALE ? "upscale" : "downscale");
	s->monitor.ongoing = ACT_MONITOR_NONE;
	return 0;
}

int act_monitor_upscale_ok(struct act_state *s, act_time_t now, struct vmact_err *err)
{
	int r = monitor_finish(s, ACT_MONITOR_UPSCALE, err);

	if (r == 0)
		s->monitor.approved = s->monitor.ongoing_target;
	return r;
}

void act_monitor_upscale_failed(struct act_state *s, act_time_t now)
{
	if (s->monitor.ongoing == ACT_MONITOR_UPSCALE)
		s->monitor.ongoing = ACT_MONITOR_NONE;
	s->monitor.has_upscale_failure = true;
	s->monitor.upscale_failure_at = now;
}

int act_monitor_downscale_ok(struct act_state *s, act_time_t now, struct vmact_err *err)
{
	int r = monitor_finish(s, ACT_MONITOR_DOWNSCALE, err);

	if (r == 0)
		s->monitor.approved = s->monitor.ongoing_target;
	return r;
}

int act_monitor_downscale_denied(struct act_state *s, act_time_t now, struct vmact_err *err)
{
	int r = monitor_finish(s, ACT_MONITOR_DOWNSCALE, err);

	if (r == 0) {
		s->monitor.has_denied = true;
		s->monitor.denied = (struct act_denied_downscale){
			.at = now,
			.current = s->monitor.approved,
			.requested = s->monitor.ongoing_target,
		};
	}
	return r;
}

void act_monitor_downscale_failed(struct act_state *s, act_time_t now)
{
	if (s->monitor.ongoing == ACT_MONITOR_DOWNSCALE)
		s->monitor.ongoing = ACT_MONITOR_NONE;
	s->monitor.has_downscale_failure = true;
	s->monitor.downscale_failure_at = now;
}
