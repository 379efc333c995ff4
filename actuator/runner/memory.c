/* SPDX-License-Identifier: Apache-2.0 */
/* The memory of a VM without a vm-monitor or informant (doc/policy.md,
 * "Without an agent"). Nobody in the guest says when it runs short, so the
 * host reads what the guest's virtio balloon driver reports
 * (libvirt's balloon statistics, every VM's in one call a second: the clock
 * below) while no resize runs, feeds each new
 * sample (QEMU's last_update moved) to the memory policy
 * (actuator/policy/mem-demand.h), and its goal sizes the VM's memory
 * through the core; the guest's exporter (<vmact:metrics>) stands in where
 * the balloon has no figures. A VM without figures keeps its memory: the
 * goal is then its size, and why is said once, with the fix. A resize is
 * seen from here as the VM's size moving: the samples before it describe
 * another size. Reports to the core through r->core. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ACT_RUNNER_PRIV_ALLOW
#include "actuator/runner/runner-priv.h"
#include "agent-glue/codec/exporter.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/quantity.h"
#include "base/time.h"

/* No new sample for this long: the guest stopped sending statistics. */
#define STALE_NS ACT_SEC(60)
/* A guest whose stats period is 1 s (the recommended one): its figures
 * as they come. */
#define INTERVAL_USEC (1ULL * 1000000ULL)

static void absent(struct act_runner *r, const char *why)
{
	char size[32];

	if (!why) {
		if (r->mem.absent)
			log_info("%s: guest memory statistics available again", r->name);
		act_runner_text_set(&r->mem.absent, "");
		return;
	}
	if (!r->mem.absent) {
		vmact_quantity_format_bytes(r->st.using_.mem_bytes, size, sizeof(size));
		log_warning("%s: no guest memory statistics (%s): its memory stays at %s and does "
			    "not drive scaling; to scale it, " ACT_RUNNER_BALLOON_FIX,
			    r->name, why, size);
		act_event(r->env->events, r->name, ACT_EV_DECISION,
			  json_pack("{s:s,s:s,s:s}", "resource", "memory", "source", "none", "fix",
				    "<memballoon model='virtio'><stats period='1'/></memballoon>"),
			  "memory stays at %s: no guest memory statistics (%s)", size, why);
	}
	act_runner_text_set(&r->mem.absent, why);
}

/* No figures: the memory is kept where it is, and the Neon formula's
 * memory part (which the core would fall back to) is marked unknown at
 * once, so that no old figure shrinks it meanwhile. */
static bool no_figures(struct act_runner *r, const char *why)
{
	bool changed = !r->st.has_mem_goal || r->st.mem_goal_bytes != r->st.using_.mem_bytes;

	absent(r, why);
	r->mem.has_dec = false;
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
	char why[320], reason[ACT_EVENT_TEXT_MAX];
	uint64_t goal;

	act_mem_demand_feed(&r->mem.demand, &r->mem.policy, s);
	r->mem.plugged = s->plugged;
	if (!act_mem_demand_decide(&r->mem.demand, &r->mem.policy, &dec))
		return false;
	r->mem.dec = dec;
	r->mem.has_dec = true;
	/* Within the bounds, so that a guest wanting more than its max asks
	 * once, not at every sample. */
	goal = clamp_u64(dec.goal, r->st.min.mem_bytes, r->st.max.mem_bytes);
	if (r->st.has_mem_goal && goal == r->st.mem_goal_bytes)
		return false;
	act_mem_decision_format(&dec, why, sizeof(why));
	log_info("%s: memory %s", r->name, why);
	act_mem_decision_reason(&dec,
				r->st.has_mem_goal ? r->st.mem_goal_bytes : r->st.using_.mem_bytes,
				reason, sizeof(reason));
	act_runner_text_set(&r->mem.last_reason, reason);
	act_runner_decision_event(r,
				  json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:f}", "resource",
					    "memory", "class", act_mem_class_name(dec.cls),
					    "source", act_mem_source_name(dec.source),
					    "goal_mem_bytes", (json_int_t)goal, "used_bytes",
					    (json_int_t)dec.used, "total_bytes",
					    (json_int_t)dec.total, "headroom_bytes",
					    (json_int_t)dec.headroom, "growth_bytes_per_s",
					    dec.growth, "major_faults_per_s", dec.fault_rate,
					    "swap_in_bytes_per_s", dec.swap_in_rate),
				  reason);
	act_state_update_mem_goal(&r->st, true, goal);
	return true;
}

/* The VM's part of the second's reading (struct hp_mem_stats_req). */
static bool read_balloon(struct act_runner *r, const struct hp_mem_stats_req *q)
{
	const struct hp_mem_stats ms = q->out;
	act_time_t now = act_runner_now_ns(r);
	struct act_mem_sample s;

	if (q->rc < 0 || ms.total_kib < ms.available_kib) {
		r->mem.has_balloon = false;
		/* The exporter's figures carry on where the VM has one. */
		if (r->rd.has_guest)
			return false;
		return no_figures(r, q->rc < 0 && q->err.msg[0] ? q->err.msg
								: "MemAvailable above MemTotal");
	}
	r->mem.balloon = ms;
	r->mem.has_balloon = true;
	/* A sample is new when QEMU's last_update moved (whole seconds, so
	 * a stats period below 1 s is read once a second). */
	if (ms.last_update && ms.last_update == r->mem.balloon_update) {
		if (now - r->mem.balloon_update_at <= STALE_NS)
			return false;
		r->mem.has_balloon = false;
		return no_figures(r, "the guest has sent no new balloon statistics for 60 s");
	}
	r->mem.balloon_update = ms.last_update;
	r->mem.balloon_update_at = now;
	/* Taken before the last resize ended: it describes the old size. */
	if (ms.last_update && ms.last_update <= r->mem.fence)
		return false;
	absent(r, NULL);
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

/* The exporter's figures, where the balloon has none: each scrape that
 * worked once. */
static bool read_guest(struct act_runner *r)
{
	double used = r->rd.guest.memory_usage_bytes - AG_EXPORTER_MEMORY_SLACK_BYTES;
	struct act_mem_sample s = {
		.at = act_runner_now_ns(r),
		.source = ACT_MEM_SRC_GUEST,
		.plugged = r->st.using_.mem_bytes,
		.used = used > 0 ? (uint64_t)used : 0,
	};

	if (r->mem.has_balloon || !r->rd.has_guest || r->rd.guest_seq == r->mem.guest_seq)
		return false;
	r->mem.guest_seq = r->rd.guest_seq;
	absent(r, NULL);
	return feed(r, &s);
}

/* The VM's size moved since the last sample (a resize ended): what the
 * guest reported before its end (QEMU's last_update, whole seconds)
 * describes another size. */
static void resized(struct act_runner *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	r->mem.fence = r->rs.done_s ? r->rs.done_s : (uint64_t)ts.tv_sec;
	r->mem.plugged = r->st.using_.mem_bytes;
	act_mem_demand_resized(&r->mem.demand);
	/* Kept memory follows the size the VM now has. */
	if (r->mem.absent)
		act_state_update_mem_goal(&r->st, true, r->st.using_.mem_bytes);
}

/* ---- the clock: every VM's balloon in one call a second ----
 *
 * One timer for all the VMs whose memory is sized here, on the whole
 * seconds of the monotonic clock, and one call to libvirtd for all their
 * statistics, made on libvirt's event thread (hp_mem_stats_read_async):
 * vmactd wakes for the second and for the answer, however many VMs there
 * are (doc/actuation.md, "Wake-ups"). A call per VM cost vmactd about 7
 * wake-ups a second each; one call for all made from this thread, 4 a
 * second and more the more VMs it read (libvirt's event thread told twice
 * to stop and resume watching the socket, and meeting this thread on the
 * connection's locks for as long as the call ran). The clock exists while
 * at least one VM has joined, or while its last call is out. */
struct act_mem_clock {
	sd_event_source *timer;
	struct act_runner_env *env; /* NULL: detached, freed when the call is back */
	struct act_runner **vms;    /* joined */
	size_t n, cap;
	/* The call out, if any: its VMs (a VM that leaves meanwhile leaves a
	 * NULL) and the handles it reads through. */
	struct clock_call *call;
	bool again; /* a VM joined while the call was out: read at once after */
};

/* One second's call: the batch's own memory (hp_mem_stats_read_async),
 * a request and a slot per VM. */
struct clock_slot {
	struct act_runner *r; /* NULL: the VM left while the call was out */
	virDomainPtr dom;     /* the batch's handle (a ref of the VM's own) */
	virDomainPtr given;   /* what it was when the call went out */
	char uuid[HP_UUID_LEN];
};

struct clock_call {
	struct act_mem_clock *k;
	size_t n;
	struct hp_mem_stats_req *reqs;
	struct clock_slot slot[];
};

static void clock_free(struct act_mem_clock *k)
{
	sd_event_source_disable_unref(k->timer);
	free(k->vms);
	free(k);
}

static void call_free(struct clock_call *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->slot[i].dom)
			virDomainFree(q->slot[i].dom);
	free(q->reqs);
	free(q);
}

/* A VM's second: false while a resize runs (the call would wait for its
 * job), and its size moved since the last sample. */
static bool take_part(struct act_runner *r)
{
	if (r->rs.busy)
		return false;
	if (r->mem.plugged && r->mem.plugged != r->st.using_.mem_bytes)
		resized(r);
	return true;
}

/* The VM's handle after the call: the one the batch looked up when the
 * VM's own failed (libvirtd restarted), unless the VM has another since. */
static void take_handle(struct clock_slot *sl)
{
	struct act_runner *r = sl->r;

	if (sl->dom == sl->given)
		return; /* the batch's ref goes with the call */
	if (r->dom == sl->given) {
		if (r->dom)
			virDomainFree(r->dom);
		r->dom = TAKE_PTR(sl->dom);
	}
}

static void on_answer(void *userdata, bool delivered)
{
	struct clock_call *q = userdata;
	struct act_mem_clock *k = q->k;

	/* k->call stays q meanwhile: a VM that leaves in a consequence of
	 * another's figures leaves a NULL in its slot (clock_leave). */
	for (size_t i = 0; delivered && i < q->n; i++) {
		struct act_runner *r = q->slot[i].r;
		bool changed;

		if (!r)
			continue;
		take_handle(&q->slot[i]);
		/* A resize began while the call was out: its figures wait. */
		if (!take_part(r))
			continue;
		changed = read_balloon(r, &q->reqs[i]);
		changed |= read_guest(r);
		if (changed)
			r->core->changed(r);
	}
	k->call = NULL;
	call_free(q);
	if (!k->env) {
		clock_free(k); /* its last VM left */
		return;
	}
	if (k->again) {
		k->again = false;
		sd_event_source_set_time(k->timer, vmact_loop_now_usec(k->env->event));
	}
}

static int on_clock(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_mem_clock *k = ud;
	struct act_runner_env *env = k->env;
	struct vmact_err err = { 0 };
	struct clock_call *q;
	size_t m = 0;

	/* The next whole second after now, also a policy tick (a second is
	 * a whole number of them); from now, not from when it was due: a
	 * loop that came late, or the first reading (due at once), skips
	 * what it missed instead of catching up a second at a time. */
	(void)usec;
	sd_event_source_set_time(s, (vmact_loop_now_usec(env->event) + INTERVAL_USEC) /
					    INTERVAL_USEC * INTERVAL_USEC);
	/* The last second's call is still out (libvirtd is slow): this
	 * second is skipped, not queued behind it. */
	if (k->call)
		return 0;
	/* Tried again in a second; figures a second late are figures. */
	q = calloc(1, sizeof(*q) + k->n * sizeof(q->slot[0]));
	if (q)
		q->reqs = calloc(k->n ? k->n : 1, sizeof(*q->reqs));
	if (!q || !q->reqs) {
		free(q);
		return 0;
	}
	q->k = k;
	for (size_t i = 0; i < k->n; i++) {
		struct act_runner *r = k->vms[i];
		struct clock_slot *sl = &q->slot[m];

		if (!take_part(r))
			continue;
		sl->r = r;
		snprintf(sl->uuid, sizeof(sl->uuid), "%s", r->uuid);
		sl->dom = r->dom;
		if (sl->dom)
			virDomainRef(sl->dom);
		sl->given = sl->dom;
		q->reqs[m] = (struct hp_mem_stats_req){ .uuid = sl->uuid, .dom = &sl->dom };
		m++;
	}
	q->n = m;
	if (!m) {
		call_free(q);
		return 0;
	}
	if (hp_mem_stats_read_async(env->hp, q->reqs, m, on_answer, q, &err) < 0) {
		call_free(q);
		return 0;
	}
	k->call = q;
	return 0;
}

static int clock_join(struct act_runner *r, struct vmact_err *err)
{
	struct act_runner_env *env = r->env;
	struct act_mem_clock *k = env->mem_clock;
	int ret;

	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return vmact_err_set(err, ENOMEM, "out of memory");
		k->env = env;
		ret = sd_event_add_time(env->event, &k->timer, CLOCK_MONOTONIC,
					vmact_loop_now_usec(env->event), 1000, on_clock, k);
		if (ret >= 0)
			ret = sd_event_source_set_enabled(k->timer, SD_EVENT_ON);
		if (ret < 0) {
			sd_event_source_disable_unref(k->timer);
			free(k);
			return vmact_err_set(err, -ret, "cannot add the memory timer: %s",
					     strerror(-ret));
		}
		env->mem_clock = k;
	}
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 8;
		struct act_runner **v = realloc(k->vms, cap * sizeof(*v));

		if (!v)
			return vmact_err_set(err, ENOMEM, "out of memory");
		k->vms = v;
		k->cap = cap;
	}
	k->vms[k->n++] = r;
	/* The first reading at once: the figures before any decision (after
	 * the call that is out, if one is). */
	if (k->call)
		k->again = true;
	else
		sd_event_source_set_time(k->timer, vmact_loop_now_usec(env->event));
	return 0;
}

static void clock_leave(struct act_runner *r)
{
	struct act_mem_clock *k = r->env->mem_clock;

	if (!k)
		return;
	if (k->call)
		for (size_t i = 0; i < k->call->n; i++)
			if (k->call->slot[i].r == r)
				k->call->slot[i].r = NULL;
	for (size_t i = 0; i < k->n; i++)
		if (k->vms[i] == r) {
			k->vms[i] = k->vms[--k->n];
			break;
		}
	if (k->n)
		return;
	r->env->mem_clock = NULL;
	if (!k->call) {
		clock_free(k);
		return;
	}
	/* The call's answer frees it: the runners' environment may be gone
	 * by then. */
	sd_event_source_disable_unref(k->timer);
	k->timer = NULL;
	k->env = NULL;
}

int act_runner_memory_start(struct act_runner *r, struct vmact_err *err)
{
	int ret;

	act_mem_policy_defaults(&r->mem.policy);
	r->mem.policy.unit = r->st.cu.mem_bytes;
	act_mem_demand_init(&r->mem.demand);
	r->mem.host = !r->approver && !r->api_vm;
	if (!r->mem.host)
		return 0;
	/* Until the first sample, the memory stays as it is. */
	act_state_update_mem_goal(&r->st, true, r->st.using_.mem_bytes);
	r->mem.plugged = r->st.using_.mem_bytes;
	ret = clock_join(r, err);
	r->mem.joined = ret == 0;
	return ret;
}

void act_runner_memory_free(struct act_runner *r)
{
	if (r->mem.joined)
		clock_leave(r);
	r->mem.joined = false;
}
