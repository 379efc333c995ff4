/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's readings. Every policy tick (policy.tick_ms) the sampler's
 * figures for the VM's vCPU threads since the previous tick feed the
 * reactive CPU policy (cpu-demand.h), whose goal sizes the CPU; every
 * metrics interval (sampler.interval_ms) the VM's load averages and its
 * memory from libvirt's guest statistics are fed to the core as system
 * metrics (the Neon policy's inputs, and memory under both policies).
 *
 * A VM that names its exporters (<vmact:metrics>) is also scraped on the
 * loop, as the Neon agent does (doc/protocols.md, "Metrics inputs"): the
 * system exporter every metrics interval, the LFC exporter every 15 s. The
 * guest's load1/load5 and memory then replace the host-side figures (for
 * the reactive policy, load1 is the floor of the goal: the queue beyond
 * the vCPUs); a failed scrape drops them, so the host-side signal carries
 * on, and is logged once per distinct failure. The exporters are read and
 * parsed by the VM's metrics worker (worker/scrape-proxy.h, doc/privsep.md),
 * never in vmactd. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "actuator/worker/scrape-proxy.h"
#include "actuator/worker/worker.h"
#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "base/endpoint.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/quantity.h"
#include "base/time.h"
#include "bpf/sampler.h"
#include "hotplug/domain.h"

#define MiB (1024ULL * 1024ULL)
/* MemoryUsageBytes = total - available + 100 MiB, as the Neon agent. */
#define MEM_USAGE_PAD (100ULL * MiB)

/* The scaling core keeps as many LFC windows as the reader gives. */
_Static_assert(ACT_LFC_MAX_WINDOWS == AG_LFC_MAX_WINDOWS, "LFC window limits differ");

/* The agent's LFC period; its system period is sampler.interval_ms. */
#define LFC_INTERVAL_USEC (15ULL * 1000000ULL)
/* The first system scrape after a random 0-4 s, so VMs started together
 * do not scrape together (the agent's jitter). */
#define FIRST_JITTER_USEC (4ULL * 1000000ULL)

static bool reactive(const struct act_runner *r)
{
	return act_runner_cpu_policy(r) == ACT_CPU_POLICY_REACTIVE;
}

/* With the watch the kernel closes a busy VM's windows (below), and the
 * readings' own clock is the slow one: the metrics interval. */
static uint64_t tick_usec(const struct act_runner *r)
{
	return reactive(r) && !r->rd.watching ? r->env->policy_tick_usec
					      : r->env->metrics_interval_usec;
}

/* The next tick after `usec` on a grid of `every` shared by all VMs: their
 * readings come in one wake-up of the loop instead of one each (the
 * policy's ticks are frequent: doc/policy.md, "What the faster readout
 * costs"). A loop that came late skips what it missed. */
static uint64_t next_tick(uint64_t usec, uint64_t every)
{
	return (usec / every + 1) * every;
}

/* The vCPUs plugged, not only the threads the sampler has seen (seen): a
 * vCPU just plugged has its thread counted only once it has run, and until
 * then the allowance read one vCPU short — the size before the growth,
 * which the policy took for a goal to shrink to. */
static unsigned plugged_vcpus(const struct act_runner *r, unsigned seen)
{
	if (r->rs.have_state && r->rs.seen.vcpus > seen)
		return r->rs.seen.vcpus;
	return seen;
}

/* The vCPU threads' totals now (read with the VM's reading, see
 * doc/policy.md "What the faster readout costs"); the window since the
 * last call goes to the policy. A total that went down (a vCPU thread
 * ended) starts over. */
static void feed_vcpus(struct act_runner *r, const struct smp_reading *rd,
		       const struct smp_vcpus *v, int rc, const struct vmact_err *err)
{
	uint64_t runnable, delay;
	unsigned plugged;

	if (rc < 0) {
		if (!r->rd.load_error_logged)
			log_warning("%s: cannot read the VM's threads: %s", r->name, err->msg);
		r->rd.load_error_logged = true;
		return;
	}
	runnable = v->runnable_ns;
	delay = v->delay_ns;
	plugged = plugged_vcpus(r, v->vcpus);
	if (r->rd.have_vcpu_totals && runnable >= r->rd.vcpu_runnable_ns &&
	    delay >= r->rd.vcpu_delay_ns && v->vcpus) {
		struct act_cpu_window w = {
			.at = act_runner_now_ns(r),
			.len = (int64_t)llround(rd->interval_s * 1e9),
			.vcpus = plugged,
			.quota_milli = r->quota_milli,
			.vcpu_runnable_ns = runnable - r->rd.vcpu_runnable_ns,
			.vcpu_delay_ns = delay - r->rd.vcpu_delay_ns,
			.throttled_ns = rd->has_cpu_stat ? rd->throttled_ns_delta : 0,
			.ended = v->runnable_now == 0,
		};

		act_cpu_demand_feed(&r->rd.demand, &r->rd.cpu_policy, &w);
	}
	r->rd.have_vcpu_totals = true;
	r->rd.vcpu_runnable_ns = runnable;
	r->rd.vcpu_delay_ns = delay;
}

static void hold_cpu_goal(struct act_runner *r)
{
	/* Until the reactive policy's first decision (two readouts), the CPU
	 * stays at the size the VM has. Without a goal the core would size
	 * both CPU and memory by the Neon formula on the sampler's load
	 * average, which a restarted vmactd finds pinned at the old load: the
	 * VM jumped to its permit and its memory maximum, and straight back
	 * at the first decision (test_daemon, daemon_autoscales). */
	if (reactive(r) && !r->st.has_cpu_goal)
		act_state_update_cpu_goal(&r->st, true, r->st.using_.milli_cpu);
}

/* The policy's decision; true when the CPU goal changed. Each change is
 * logged with the classification that made it. */
static bool decide_cpu(struct act_runner *r)
{
	struct act_cpu_decision dec;
	char why[256], reason[ACT_EVENT_TEXT_MAX];
	/* the goal in force: what a decision holds or moves from */
	uint32_t cur = r->st.has_cpu_goal ? r->st.cpu_goal_milli : r->st.using_.milli_cpu;

	r->rd.cpu_policy.target = r->st.config.load_average_fraction_target;
	r->rd.cpu_policy.cu_milli = r->st.cu.milli_cpu;
	r->rd.cpu_policy.min_milli = r->st.min.milli_cpu;
	r->rd.cpu_policy.max_milli = r->st.max.milli_cpu;
	if (!act_cpu_demand_decide(&r->rd.demand, &r->rd.cpu_policy, cur, &dec))
		return false;
	act_runner_export_demand(r, &dec);
	/* A decision every policy tick, a text only when something reads it
	 * (a change of goal or class): formatting it every tick was most of
	 * an idle VM's cost in user space (doc/actuation.md, "vmactd's own
	 * footprint"). */
	if (r->st.has_cpu_goal && dec.goal_milli == r->st.cpu_goal_milli) {
		/* The load's class changed, the goal did not: an event, so
		 * that "why didn't it resize?" has its answer in vmactl events
		 * (the policy's reason: contended, throttled, held after a
		 * change, at a bound). */
		if (dec.cls != r->rd.last_cls) {
			char held[32];

			act_cpu_decision_format(&dec, why, sizeof(why));
			log_debug("%s: cpu %s", r->name, why);
			vmact_quantity_format_milli(dec.goal_milli, held, sizeof(held));
			act_event(r->env->events, r->name, ACT_EV_HOLD,
				  json_pack("{s:s,s:s,s:I,s:f,s:f}", "class",
					    act_cpu_class_name(dec.cls), "was",
					    act_cpu_class_name(r->rd.last_cls), "goal_milli_cpu",
					    (json_int_t)dec.goal_milli, "busy", dec.busy,
					    "demand_cpus", dec.demand),
				  "held at %s CPU: now %s, was %s: %s", held,
				  act_cpu_class_name(dec.cls), act_cpu_class_name(r->rd.last_cls),
				  why);
		}
		r->rd.last_cls = dec.cls;
		return false;
	}
	r->rd.last_cls = dec.cls;
	act_cpu_decision_format(&dec, why, sizeof(why));
	log_info("%s: cpu %s", r->name, why);
	act_cpu_decision_reason(&dec, cur, reason, sizeof(reason));
	/* The evidence: the sampler's figures of the vCPU threads, and the
	 * guest's load1 where it set the floor. */
	{
		const char *src = dec.has_guest_load ? "BPF, guest metrics" : "BPF";
		size_t n = strlen(reason);

		snprintf(reason + n, sizeof(reason) - n, " (%s)", src);
		act_runner_text_set(&r->last_reason, reason);
		act_runner_decision_event(r,
					  json_pack("{s:s,s:s,s:I,s:f,s:f,s:s,s:s}", "resource",
						    "cpu", "class", act_cpu_class_name(dec.cls),
						    "goal_milli_cpu", (json_int_t)dec.goal_milli,
						    "busy", dec.busy, "demand_cpus", dec.demand,
						    "source", src, "approval",
						    r->approver ? act_approver_name(r->approver)
								: "host"),
					  reason);
	}
	act_state_update_cpu_goal(&r->st, true, dec.goal_milli);
	return true;
}

static void feed_system(struct act_runner *r, const struct smp_reading *rd)
{
	struct act_system_metrics m = { 0 };
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	m.load1 = rd->loadavg[0];
	m.load5 = rd->loadavg[1];
	if (r->rd.has_guest) {
		m = r->rd.guest;
	} else if (r->mem.host ? (ms = r->mem.balloon, r->mem.has_balloon)
			       : (hp_mem_stats_read_kept(r->env->hp, r->uuid, &r->dom, &ms, &err) ==
					  0 &&
				  ms.total_kib >= ms.available_kib)) {
		/* A VM without an approver has its balloon read every second
		 * (memory.c): its latest reading. */
		m.memory_usage_bytes = (double)(ms.total_kib - ms.available_kib) * 1024.0 +
				       (double)MEM_USAGE_PAD;
		m.memory_cached_bytes = ms.has_caches ? (double)ms.caches_kib * 1024.0 : 0.0;
		if (!r->mem.host) {
			r->rd.balloon = ms;
			r->rd.has_balloon = true;
			if (r->rd.mem_absent_logged)
				log_info("%s: guest memory statistics available again", r->name);
			r->rd.mem_absent_logged = false;
		}
	} else {
		m.memory_absent = true;
		/* memory.c says it for a VM it sizes */
		if (!r->mem.host) {
			r->rd.has_balloon = false;
			if (!r->rd.mem_absent_logged)
				log_warning(
					"%s: no guest memory statistics (%s): memory does not "
					"drive scaling and the VM's memory is never scaled down; "
					"to scale it, " ACT_RUNNER_BALLOON_FIX,
					r->name,
					err.msg[0] ? err.msg : "MemAvailable above MemTotal");
			r->rd.mem_absent_logged = true;
		}
	}
	vmact_err_reset(&err);
	if (act_state_update_system_metrics(&r->st, &m, &err) < 0) {
		log_warning("%s: %s", r->name, err.msg);
		return;
	}
	log_debug("%s: load1 %.2f load5 %.2f memory %s (%s)", r->name, m.load1, m.load5,
		  m.memory_absent ? "unknown" : "known", r->rd.has_guest ? "guest" : "host");
}

/* ---- the watch: the policy's windows closed in the kernel ----
 *
 * With the sampler's watch (bpf/sampler.h, "The watch"; doc/policy.md,
 * "Saturation found in the kernel"), the kernel closes the windows of a
 * busy VM and sends them the moment they close; vmactd reads an idle VM's
 * window only on its slow clock (the metrics interval). The windows are
 * the same figures the poll takes every policy tick (the vCPU threads'
 * runnable and waiting time), so the policy's classes, holds and windows
 * mean what they meant. */

/* Below the busy mark this long, a VM's windows stop coming: the busy
 * run's end, its down hold and its slow average need no tick's precision
 * (doc/policy.md). */
#define WATCH_COOL_NS (1000ULL * 1000000ULL)

static uint32_t allowance_milli(const struct act_runner *r)
{
	uint32_t vcpu_milli = plugged_vcpus(r, 0) * 1000u;

	if (!vcpu_milli)
		vcpu_milli = 1000u;
	return r->quota_milli && r->quota_milli < vcpu_milli ? r->quota_milli : vcpu_milli;
}

static uint64_t throttled_delta(struct act_runner *r, unsigned vcpus);

/* Tells the kernel what the VM's windows are judged by, when it changed
 * (a resize, a reload's target). */
void act_runner_watch_update(struct act_runner *r)
{
	struct smp_watch_params p = {
		.allowance_milli = allowance_milli(r),
		.target_permille = (uint32_t)llround(r->st.config.load_average_fraction_target *
						     1000.0),
		.up_window_ns = (uint64_t)r->rd.cpu_policy.up_window,
		.cool_ns = WATCH_COOL_NS,
	};
	struct vmact_err err = { 0 };

	if (!r->rd.watching || (p.allowance_milli == r->rd.watch_params.allowance_milli &&
				p.target_permille == r->rd.watch_params.target_permille))
		return;
	if (smp_watch_vm(r->env->sampler, r->uuid, &p, r, &err) < 0) {
		/* The windows stop; the poll takes over. */
		log_warning("%s: %s; the VM is read every policy tick", r->name, err.msg);
		r->rd.watching = false;
		return;
	}
	r->rd.watch_params = p;
	/* From the new size on, the throttled time counts from now (a
	 * quota just put below the vCPUs has its first window's share). */
	r->rd.have_throttled = false;
	throttled_delta(r, plugged_vcpus(r, 0) ? plugged_vcpus(r, 0) : 1);
}

static void watch_start(struct act_runner *r)
{
	if (!r->env->cfg->policy_events || !r->rd.sampler_registered ||
	    smp_watch_reason(r->env->sampler))
		return;
	r->rd.watching = true;
	memset(&r->rd.watch_params, 0, sizeof(r->rd.watch_params));
	act_runner_watch_update(r);
}

/* The cgroup's throttled time since the last window. Read only while the
 * quota is below the vCPUs: the policy's throttled class needs no more
 * (cpu-demand.c), and a busy VM's windows come 20 times a second. */
static uint64_t throttled_delta(struct act_runner *r, unsigned vcpus)
{
	struct vmact_err err = { 0 };
	uint64_t t, d = 0;

	if (!r->quota_milli || r->quota_milli >= vcpus * 1000u) {
		r->rd.have_throttled = false;
		return 0;
	}
	if (smp_read_throttled(r->env->sampler, r->uuid, &t, &err) < 0)
		return 0;
	if (r->rd.have_throttled && t >= r->rd.throttled_ns)
		d = t - r->rd.throttled_ns;
	r->rd.throttled_ns = t;
	r->rd.have_throttled = true;
	return d;
}

/* slow: a cool VM's window on the slow clock. It stands for the hundred
 * policy ticks the poll would have taken in its time, and the poll's "the
 * load has ended" (no vCPU runnable when a tick closed) is then "no vCPU
 * was runnable in any of it": a guest that only blinked would have shown
 * a runnable vCPU at one of those ticks, and the floor its load average
 * sets (doc/policy.md, "The reactive policy") applies as it did. */
static void feed_window(struct act_runner *r, const struct smp_window *sw, bool slow)
{
	unsigned vcpus = plugged_vcpus(r, 0) ? plugged_vcpus(r, 0) : 1;
	struct act_cpu_window w = {
		.at = (int64_t)sw->at,
		.len = (int64_t)sw->len,
		.vcpus = vcpus,
		.quota_milli = r->quota_milli,
		.vcpu_runnable_ns = sw->runnable_ns,
		.vcpu_delay_ns = sw->delay_ns,
		.throttled_ns = throttled_delta(r, vcpus),
		.ended = slow ? sw->runnable_ns == 0 && sw->runnable_now == 0
			      : sw->runnable_now == 0,
	};

	act_cpu_demand_feed(&r->rd.demand, &r->rd.cpu_policy, &w);
}

/* The slow clock: a cool VM's window since its last one; true when the
 * CPU goal changed. */
static bool watch_slow(struct act_runner *r)
{
	struct smp_window w;
	struct vmact_err err = { 0 };
	bool hot;

	act_runner_watch_update(r);
	if (smp_watch_read(r->env->sampler, r->uuid, &w, &hot, &err) < 0) {
		if (!r->rd.load_error_logged)
			log_warning("%s: cannot read the VM's window: %s", r->name, err.msg);
		r->rd.load_error_logged = true;
		return false;
	}
	if (hot)
		return false;
	feed_window(r, &w, true);
	return decide_cpu(r);
}

void act_runner_on_window(struct act_runner *r, const struct smp_window *w)
{
	if (!r->rd.watching || !reactive(r))
		return;
	act_runner_watch_update(r);
	hold_cpu_goal(r);
	feed_window(r, w, false);
	if (decide_cpu(r))
		r->core->changed(r);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_runner *r = ud;
	struct smp_reading rd;
	struct smp_vcpus v = { 0 };
	struct vmact_err err = { 0 }, verr = { 0 };
	uint64_t every = tick_usec(r);
	uint64_t per_metrics = r->env->metrics_interval_usec / every;
	bool changed = false;
	int vrc = 0, rc = -ENOENT;

	sd_event_source_set_time(s, next_tick(vmact_loop_now_usec(r->env->event), every));
	/* The reactive policy takes the vCPU totals with each reading: one
	 * syscall per VM and tick where the kernel allows. */
	if (r->rd.sampler_registered)
		rc = reactive(r) && !r->rd.watching
			     ? smp_read_with_vcpus(r->env->sampler, r->uuid, &rd, &v, &vrc, &verr,
						   &err)
			     : smp_read(r->env->sampler, r->uuid, &rd, &err);
	if (rc < 0) {
		if (!r->rd.load_error_logged && r->rd.sampler_registered)
			log_warning("%s: cannot read the VM's load: %s", r->name, err.msg);
		r->rd.load_error_logged = true;
		return 0;
	}
	/* The BPF thread table (sampler.max_threads) is shared by every
	 * VM: when it is full, threads without an entry go uncounted and
	 * this VM's load reads low (README, "Reliability and security"). */
	if (rd.untracked && !r->rd.untracked_logged) {
		log_warning(
			"%s: sampler: %llu scheduler events of the VM's threads not counted: the "
			"BPF thread table is full (sampler.max_threads); its load reads low",
			r->name, (unsigned long long)rd.untracked);
		r->rd.untracked_logged = true;
	}
	if (reactive(r) && r->rd.watching) {
		hold_cpu_goal(r);
		changed = watch_slow(r);
	} else if (reactive(r)) {
		hold_cpu_goal(r);
		feed_vcpus(r, &rd, &v, vrc, &verr);
		changed = decide_cpu(r);
	} else if (r->st.has_cpu_goal) {
		/* Switched to the Neon policy (SIGHUP): its goal CUs size the
		 * CPU from now on, not the reactive policy's last goal. */
		act_state_update_cpu_goal(&r->st, false, 0);
		changed = true;
	}
	if (r->rd.ticks++ % (per_metrics ? per_metrics : 1) == 0) {
		feed_system(r, &rd);
		changed = true;
	}
	if (changed)
		r->core->changed(r);
	return 0;
}

/* ---- the guest's exporters ---- */

static const char *kind_name(enum ag_exporter_kind k)
{
	return k == AG_EXPORTER_LFC ? "LFC metrics" : "guest metrics";
}

/* Logs a failure once per distinct cause (error and status: the message
 * may vary with a line number or a byte count), and the recovery. */
static void note_outcome(struct act_runner *r, struct act_guest_ep *ep,
			 const struct ag_exporter_result *res)
{
	if (!res->error) {
		if (ep->last_error)
			log_info("%s: %s %s: working again; using the guest's figures", r->name,
				 kind_name(res->kind), ep->url);
		ep->last_error = 0;
		ep->last_status = 0;
		return;
	}
	act_runner_export_failure(r, ACT_FAILURE_GUEST_METRICS);
	if (res->error != ep->last_error || res->status != ep->last_status) {
		const char *why = res->message ? res->message : strerror(-res->error);
		const char *at = strstr(why, ep->url);

		/* The scraper's message names the URL too: say it once. */
		if (at && !strncmp(at + strlen(ep->url), ": ", 2))
			why = at + strlen(ep->url) + 2;
		log_warning("%s: %s %s: %s; using the host-side figures", r->name,
			    kind_name(res->kind), ep->url, why);
	}
	ep->last_error = res->error;
	ep->last_status = res->status;
}

static void on_guest_system(void *ud, const struct ag_exporter_result *res)
{
	struct act_runner *r = ud;

	note_outcome(r, &r->rd.guest_sys, res);
	if (res->error || !res->system) {
		r->rd.has_guest = false;
		act_cpu_demand_guest_load(&r->rd.demand, false, 0);
		return;
	}
	r->rd.has_guest = true;
	r->rd.guest_seq++;
	r->rd.guest = (struct act_system_metrics){
		.load1 = res->system->load1,
		.load5 = res->system->load5,
		.memory_usage_bytes = res->system->memory_usage_bytes,
		.memory_cached_bytes = res->system->memory_cached_bytes,
	};
	act_cpu_demand_guest_load(&r->rd.demand, true, res->system->load1);
	/* The Neon policy reads these at its next metrics tick; the reactive
	 * one at its next policy tick. */
}

static void on_guest_lfc(void *ud, const struct ag_exporter_result *res)
{
	struct act_runner *r = ud;
	struct vmact_err err = { 0 };

	note_outcome(r, &r->rd.guest_lfc, res);
	if (res->error || !res->lfc)
		return;
	if (act_state_update_lfc_metrics(&r->st, res->lfc->wss_pages, res->lfc->n_windows, &err) <
	    0) {
		log_warning("%s: %s", r->name, err.msg);
		return;
	}
	r->core->changed(r);
}

/* Starts a scrape unless one is in flight; the loop never waits on it. */
static void scrape(struct act_runner *r, enum ag_exporter_kind kind)
{
	/* Through the VM's metrics worker: it answers, or the callback says
	 * why not (no worker running: the host-side figures meanwhile). */
	if (r->rd.scrape && !act_scrape_proxy_pending(r->rd.scrape, kind))
		act_scrape_proxy_scrape(r->rd.scrape, kind,
					kind == AG_EXPORTER_LFC ? on_guest_lfc : on_guest_system,
					r);
}

static int on_guest_sys_timer(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_runner *r = ud;

	sd_event_source_set_time(s, usec + r->env->metrics_interval_usec);
	scrape(r, AG_EXPORTER_SYSTEM);
	return 0;
}

static int on_guest_lfc_timer(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_runner *r = ud;

	sd_event_source_set_time(s, usec + LFC_INTERVAL_USEC);
	/* As the agent: LFC figures only when the VM's config uses them. */
	if (r->st.config.enable_lfc_metrics)
		scrape(r, AG_EXPORTER_LFC);
	return 0;
}

/* The longest URL taken (with its NUL). */
#define GUEST_URL_MAX 600

/* The URL to GET (malloc'd into *out): the endpoint as given, /metrics
 * when it names no path. */
static int guest_url(const char *spec, char **out, struct vmact_err *err)
{
	struct vmact_endpoint ep;
	int n;

	if (vmact_endpoint_parse(spec, VMACT_EP_HTTP | VMACT_EP_NEED_PORT, &ep, err) < 0)
		return -EINVAL;
	if (strlen(spec) + (ep.path[0] ? 0 : strlen("/metrics")) >= GUEST_URL_MAX)
		return vmact_err_set(err, ENAMETOOLONG, "'%s' too long", spec);
	n = asprintf(out, "%s%s", spec, ep.path[0] ? "" : "/metrics");
	if (n < 0) {
		*out = NULL;
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int guest_start(struct act_runner *r, struct act_guest_ep *ep, const char *spec,
		       uint64_t first_usec, sd_event_time_handler_t fn, struct vmact_err *err)
{
	int ret;

	if (!spec[0])
		return 0;
	if ((ret = guest_url(spec, &ep->url, err)) < 0)
		return vmact_err_prefix(err, "<vmact:metrics>");
	ret = sd_event_add_time_relative(r->env->event, &ep->timer, CLOCK_MONOTONIC, first_usec,
					 1000, fn, r);
	if (ret >= 0)
		ret = sd_event_source_set_enabled(ep->timer, SD_EVENT_ON);
	if (ret < 0)
		return vmact_err_set(err, -ret, "cannot add the guest metrics timer: %s",
				     strerror(-ret));
	return 0;
}

/* The VM's metrics worker (guest_worker.*, doc/privsep.md): the
 * exporters' bytes are parsed there, not in vmactd. */
static int start_worker(struct act_runner *r, struct vmact_err *err)
{
	const char *prog = r->env->cfg->guest_worker_program;
	char buf[PATH_MAX];

	if (!prog[0]) {
		if (act_worker_default_program(buf, sizeof(buf), err) < 0)
			return vmact_err_prefix(err, "guest metrics worker");
		prog = buf;
	}
	return act_scrape_proxy_new(r->env->event, r->name, r->rd.guest_sys.url,
				    r->rd.guest_lfc.url, prog, r->env->cfg->guest_worker_user,
				    &r->rd.scrape, err);
}

void act_runner_readings_free(struct act_runner *r)
{
	struct act_guest_ep *eps[] = { &r->rd.guest_sys, &r->rd.guest_lfc };

	act_scrape_proxy_free(r->rd.scrape);
	r->rd.scrape = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(eps); i++) {
		eps[i]->timer = sd_event_source_disable_unref(eps[i]->timer);
		free(eps[i]->url);
		eps[i]->url = NULL;
	}
}

int act_runner_readings_start(struct act_runner *r, struct vmact_err *err)
{
	uint32_t rnd = 0;
	int ret;

	act_cpu_policy_defaults(&r->rd.cpu_policy);
	act_cpu_demand_init(&r->rd.demand);
	hold_cpu_goal(r);
	watch_start(r);
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	ret = guest_start(r, &r->rd.guest_sys, r->meta.metrics, rnd % (FIRST_JITTER_USEC + 1),
			  on_guest_sys_timer, err);
	if (ret >= 0)
		ret = guest_start(r, &r->rd.guest_lfc, r->meta.metrics_lfc,
				  rnd % (FIRST_JITTER_USEC + 1), on_guest_lfc_timer, err);
	if (ret >= 0 && r->rd.guest_sys.url)
		ret = start_worker(r, err);
	if (ret < 0)
		return ret;
	if (r->rd.guest_sys.url)
		log_info("%s: guest metrics from %s%s%s", r->name, r->rd.guest_sys.url,
			 r->rd.guest_lfc.url ? ", LFC from " : "",
			 r->rd.guest_lfc.url ? r->rd.guest_lfc.url : "");
	ret = sd_event_add_time(r->env->event, &r->rd.timer, CLOCK_MONOTONIC,
				next_tick(vmact_loop_now_usec(r->env->event), tick_usec(r)), 1000,
				on_tick, r);
	if (ret >= 0)
		ret = sd_event_source_set_enabled(r->rd.timer, SD_EVENT_ON);
	if (ret < 0)
		return vmact_err_set(err, -ret, "cannot add the metrics timer: %s", strerror(-ret));
	return 0;
}
