/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/daemon/registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "actuator/cgroup/cgroup.h"
#include "actuator/control/control-json.h"
#include "actuator/metrics/metrics.h"
#include "actuator/runner/runner.h"
#include "agent-glue/arbiter/arbiter.h"
#include "base/list.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/time.h"
#include "bpf/sampler.h"
#include "guestd/approver.h"
#include "hotplug/hotplug.h"
#include "shared/hook-msg.h"
#include "shared/lease.h"

/* A domain vmactd knows about: managed (runner) or skipped (its last
 * error, so the same error is not logged on every resync). */
struct entry {
	VMACT_LIST_FIELDS(struct entry, entries);
	char uuid[HP_UUID_LEN];
	char name[HP_NAME_MAX];
	struct act_runner *runner;
	/* Why it is not managed, malloc'd (NULL: managed, or not known): a
	 * fixed buffer cost every VM its 576 bytes. */
	char *skipped;
	/* Not asking to be managed (no vmact metadata, enabled="false",
	 * outside libvirt.name_prefix): skipped says which; shown by
	 * vmactl status --all only, never logged as an error. */
	bool ignored;
	bool seen; /* resync mark */
};

#define HOOK_SEEN 64 /* the last notices' domains, to match libvirt's starts */

struct act_registry {
	struct act_registry_opts o;
	/* vmact-hook's notices (act_registry_hook_status). */
	struct act_hook_status hook;
	char hook_seen[HOOK_SEEN][VMACT_HOOK_UUID_LEN + 1];
	unsigned hook_next;
	bool hook_warned; /* "restart libvirtd" logged since the last notice */
	struct act_runner_env env;
	struct act_cg cg;
	bool have_cg;
	struct hp_conn *hp;
	struct entry *entries;
	bool synced;
	bool shutting_down;
};

/* Sets or ("") clears why the entry is not managed; out of memory, the
 * reason is lost, the state kept (it only informs). The same reason again
 * (every resync of a domain still skipped) is kept as it is. */
static void set_skipped(struct entry *e, const char *why)
{
	if (e->skipped && !strcmp(e->skipped, why))
		return;
	free(e->skipped);
	e->skipped = why[0] ? strdup(why) : NULL;
}

static void entry_free(struct entry *e)
{
	if (e) {
		free(e->skipped);
		free(e);
	}
}

static struct entry *find(struct act_registry *reg, const char *uuid)
{
	struct entry *e;

	VMACT_LIST_FOREACH(entries, e, reg->entries)
		if (strcmp(e->uuid, uuid) == 0)
			return e;
	return NULL;
}

/* The runner is the VM's owner in the sampler, registered by it until it
 * is freed. */
static void on_window(void *owner, const char *uuid, const struct smp_window *w, void *ud)
{
	act_runner_on_window(owner, w);
}

static struct act_runner *find_runner(void *ud, const char *uuid)
{
	struct entry *e = find(ud, uuid);

	return e ? e->runner : NULL;
}

int act_registry_metrics(struct act_registry *reg, struct act_vm_metrics **out, size_t *n)
{
	struct entry *e;
	size_t k = 0, i = 0;

	VMACT_LIST_FOREACH(entries, e, reg->entries)
		if (e->runner)
			k++;
	*out = calloc(k ? k : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	VMACT_LIST_FOREACH(entries, e, reg->entries)
		if (e->runner)
			act_runner_metrics(e->runner, &(*out)[i++]);
	*n = k;
	return 0;
}

struct hp_conn *act_registry_hp(struct act_registry *reg)
{
	return reg->hp;
}

unsigned act_registry_count(const struct act_registry *reg)
{
	const struct entry *e;
	unsigned n = 0;

	VMACT_LIST_FOREACH(entries, e, reg->entries)
		n += e->runner != NULL;
	return n;
}

static void notify(struct act_registry *reg, bool first)
{
	if (reg->o.changed)
		reg->o.changed(reg->o.ud, act_registry_count(reg), first);
}

/* The domain stopped or left the host (a migration's end is a stop
 * here): its runner no longer speaks for its pod, and the arbiter keeps
 * nothing for it but what a lease holds (ag_arbiter_forget). */
static void drop(struct act_registry *reg, const char *uuid, const char *why)
{
	struct entry *e = find(reg, uuid);

	if (!e)
		return;
	VMACT_LIST_REMOVE(entries, reg->entries, e);
	if (e->runner) {
		log_info("%s: no longer managed (%s)", act_runner_name(e->runner), why);
		if (reg->env.arbiter) {
			const char *ns, *pod;

			act_runner_pod_key(e->runner, &ns, &pod);
			ag_arbiter_forget(reg->env.arbiter, ns, pod);
		}
		act_runner_free(e->runner);
	}
	entry_free(e);
	/* What it held is free unless a lease keeps it. */
	if (reg->env.arbiter)
		act_registry_room_freed(reg);
}

void act_registry_room_freed(struct act_registry *reg)
{
	struct entry *e;

	VMACT_LIST_FOREACH(entries, e, reg->entries)
		if (e->runner)
			act_runner_room_freed(e->runner);
}

/* A new runner whose pod the cluster layer is moving already (the
 * runner was replaced for new metadata, or vmactd found the VM again):
 * frozen from the start. */
static void freeze_if_moving(struct act_registry *reg, struct act_runner *r)
{
	struct vmact_lease_pod p;
	const char *ns, *pod;

	if (!reg->env.arbiter)
		return;
	act_runner_pod_key(r, &ns, &pod);
	if (ag_arbiter_pod_entry(reg->env.arbiter, ns, pod, vmact_loop_now_usec(reg->o.event),
				 &p) == 0 &&
	    p.moving)
		act_runner_freeze(r, true, "its pod is marked moving at the arbiter");
}

void act_registry_pod_moving(struct act_registry *reg, const char *ns, const char *name,
			     bool moving)
{
	struct entry *e;
	char why[320];

	snprintf(why, sizeof(why),
		 moving ? "the cluster layer marked pod %s/%s moving (a lease at the arbiter)"
			: "pod %s/%s is no longer marked moving (its lease was renewed without "
			  "the mark, released or expired)",
		 ns, name);
	VMACT_LIST_FOREACH(entries, e, reg->entries) {
		const char *rns, *rpod;

		if (!e->runner)
			continue;
		act_runner_pod_key(e->runner, &rns, &rpod);
		if (strcmp(rns, ns) == 0 && strcmp(rpod, name) == 0) {
			act_runner_freeze(e->runner, moving, why);
			return;
		}
	}
	/* Not a VM of this vmactd (another agent on arbiter.listen, or a
	 * VM that is not managed): nothing here resizes it. */
	if (moving && reg->env.arbiter) {
		log_info("arbiter: %s; no VM of this vmactd speaks for it: frozen at once", why);
		ag_arbiter_pod_frozen(reg->env.arbiter, ns, name, true);
	}
}

/* Records that a domain is not managed; logs when the reason is new. */
static void skip(struct act_registry *reg, struct entry *e, const char *name, const char *msg,
		 bool force_log)
{
	if (e->runner) {
		log_info("%s: no longer managed", act_runner_name(e->runner));
		act_runner_free(e->runner);
		e->runner = NULL;
	}
	if (force_log || !e->skipped || strcmp(e->skipped, msg) != 0)
		log_error("%s: not managed: %s", name, msg);
	set_skipped(e, msg);
}

/* A running domain vmactd sees but that does not ask to be managed. */
static void ignore(struct act_registry *reg, const struct hp_state *st, const char *why)
{
	struct entry *e = find(reg, st->uuid);

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		snprintf(e->uuid, sizeof(e->uuid), "%s", st->uuid);
		VMACT_LIST_PREPEND(entries, reg->entries, e);
	}
	if (e->runner) {
		log_info("%s: no longer managed (%s)", act_runner_name(e->runner), why);
		act_runner_free(e->runner);
		e->runner = NULL;
	}
	snprintf(e->name, sizeof(e->name), "%s", st->name);
	set_skipped(e, why);
	e->ignored = true;
	e->seen = true;
}

/* Brings one running domain in line with its metadata. */
static void sync_domain(struct act_registry *reg, const struct hp_state *st, bool meta_changed)
{
	struct vmact_err err = { 0 };
	struct entry *e = find(reg, st->uuid);
	_cleanup_(hp_meta_done) struct hp_meta meta = { 0 };
	char msg[VMACT_ERR_MSG_MAX + 64];
	int r;

	if (reg->shutting_down)
		return;
	if (strncmp(st->name, reg->o.cfg->libvirt_name_prefix,
		    strlen(reg->o.cfg->libvirt_name_prefix)) != 0) {
		snprintf(msg, sizeof(msg), "its name does not start with libvirt.name_prefix '%s'",
			 reg->o.cfg->libvirt_name_prefix);
		ignore(reg, st, msg);
		return;
	}
	/* Arriving by live migration: the paused QEMU is not this host's to
	 * manage until libvirt resumes it here, whose event syncs it again
	 * (doc/actuation.md, "Live migration"). */
	if (st->migration == HP_MIGRATION_ARRIVING) {
		if (e)
			e->seen = true;
		else
			log_info("%s: arriving by live migration; managed once it runs here",
				 st->name);
		return;
	}
	r = hp_meta_read(reg->hp, st->uuid, &meta, &err);
	/* libvirtd went away between the listing and this read: keep what
	 * we have, the reconnect resyncs. */
	if (r == -ENOTCONN || r == -ECONNRESET) {
		log_warning("%s: cannot read its metadata now: %s", st->name, err.msg);
		if ((e = find(reg, st->uuid)))
			e->seen = true;
		return;
	}
	if (r == -ENODEV) { /* stopped since the listing */
		drop(reg, st->uuid, "not running");
		return;
	}
	if (r == -ENOENT || (r >= 0 && !meta.enabled)) {
		if (e && e->runner) {
			log_info("%s: autoscaling %s: CPU quota removed", st->name,
				 r == -ENOENT ? "metadata removed" : "disabled");
			if (act_runner_release(e->runner, &err) < 0)
				log_warning("%s: cannot remove the CPU quota: %s", st->name,
					    err.msg);
		}
		ignore(reg, st,
		       r == -ENOENT ? "no vmact metadata (vmactl enable puts it under vmact)"
				    : "its vmact metadata says enabled=\"false\" (vmactl disable)");
		return;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			log_error("%s: out of memory", st->name);
			return;
		}
		snprintf(e->uuid, sizeof(e->uuid), "%s", st->uuid);
		VMACT_LIST_PREPEND(entries, reg->entries, e);
	}
	e->seen = true;
	e->ignored = false;
	snprintf(e->name, sizeof(e->name), "%s", st->name);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "vmact metadata: %s", err.msg);
		skip(reg, e, st->name, msg, meta_changed);
		return;
	}
	if (e->runner) {
		r = act_runner_update(e->runner, &meta, &err);
		if (r == 0) {
			if (meta_changed)
				log_info("%s: metadata updated", st->name);
			set_skipped(e, "");
			return;
		}
		if (r < 0) {
			snprintf(msg, sizeof(msg), "vmact metadata: %s (keeping the previous one)",
				 err.msg);
			log_error("%s: %s", st->name, msg);
			return;
		}
		/* The change needs a new runner. */
		act_runner_free(e->runner);
		e->runner = NULL;
		vmact_err_reset(&err);
	}
	r = act_runner_new(&reg->env, st, &meta, &e->runner, &err);
	if (r < 0) {
		e->runner = NULL;
		skip(reg, e, st->name, err.msg, meta_changed);
		return;
	}
	freeze_if_moving(reg, e->runner);
	set_skipped(e, "");
}

static void resync(struct act_registry *reg)
{
	struct vmact_err err = { 0 };
	struct hp_state *doms = NULL;
	struct entry *e, *next;
	size_t n = 0;
	bool first = !reg->synced;

	if (hp_list_running(reg->hp, &doms, &n, &err) < 0) {
		log_error("libvirt: cannot list the running domains: %s", err.msg);
		return;
	}
	VMACT_LIST_FOREACH(entries, e, reg->entries)
		e->seen = false;
	for (size_t i = 0; i < n; i++)
		sync_domain(reg, &doms[i], false);
	for (size_t i = 0; i < n; i++)
		if ((e = find(reg, doms[i].uuid)))
			e->seen = true;
	VMACT_LIST_FOREACH_SAFE(entries, e, next, reg->entries) {
		if (!e->seen)
			drop(reg, e->uuid, "not running");
	}
	free(doms);
	reg->synced = true;
	log_info("libvirt: %zu running domain%s, %u managed", n, n == 1 ? "" : "s",
		 act_registry_count(reg));
	notify(reg, first);
}

void act_registry_resync(struct act_registry *reg)
{
	if (!reg->shutting_down && hp_conn_is_up(reg->hp))
		resync(reg);
}

/* A domain that (re)started or whose metadata changed. */
static void sync_uuid(struct act_registry *reg, const char *uuid, const char *name,
		      bool meta_changed)
{
	struct vmact_err err = { 0 };
	struct hp_state st;

	if (hp_state_read(reg->hp, uuid, &st, &err) < 0) {
		if (err.code == ENODEV || err.code == ENOENT)
			drop(reg, uuid, "not running");
		else
			log_warning("%s: cannot read the domain: %s", name, err.msg);
		return;
	}
	sync_domain(reg, &st, meta_changed);
}

static uint64_t realtime_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

const char *act_registry_hook_notice(struct act_registry *reg, const struct vmact_hook_msg *m)
{
	unsigned before = act_registry_count(reg);
	const char *what;

	if (reg->shutting_down)
		return "ignored (shutting down)";
	if (strncmp(m->name, reg->o.cfg->libvirt_name_prefix,
		    strlen(reg->o.cfg->libvirt_name_prefix)) != 0)
		return "ignored (not under libvirt.name_prefix)";
	reg->hook.notices++;
	reg->hook.last_notice_usec = realtime_usec();
	reg->hook_warned = false;
	snprintf(reg->hook_seen[reg->hook_next++ % HOOK_SEEN], VMACT_HOOK_UUID_LEN + 1, "%s",
		 m->uuid);
	switch (m->op) {
	case VMACT_HOOK_STARTED:
		if (!hp_conn_is_up(reg->hp))
			return "noted (libvirt not connected; the reconnect resyncs)";
		sync_uuid(reg, m->uuid, m->name, false);
		what = "resynchronised";
		break;
	case VMACT_HOOK_STOPPED:
	case VMACT_HOOK_RELEASE:
		what = find(reg, m->uuid) ? "dropped" : "noted";
		drop(reg, m->uuid, "stopped");
		break;
	default:
		return "noted";
	}
	if (act_registry_count(reg) != before)
		notify(reg, false);
	return what;
}

/* A start libvirt reports: its hook's "prepare" notice came before QEMU
 * started, when libvirtd runs the hook. */
static void note_start(struct act_registry *reg, const struct hp_event *ev)
{
	if (strncmp(ev->name, reg->o.cfg->libvirt_name_prefix,
		    strlen(reg->o.cfg->libvirt_name_prefix)) != 0)
		return;
	for (unsigned i = 0; i < HOOK_SEEN; i++)
		if (strcmp(reg->hook_seen[i], ev->uuid) == 0)
			return;
	{
		struct stat st;

		/* Said once until a notice comes (libvirtd restarted). */
		if (!reg->hook_warned && stat(VMACT_HOOK_PATH, &st) == 0) {
			reg->hook_warned = true;
			log_warning("hook: %s started without a notice from vmact-hook: libvirtd "
				    "reads its hooks when it starts; restart libvirtd for "
				    "%s to run",
				    ev->name, VMACT_HOOK_PATH);
		}
	}
	reg->hook.unhooked_usec = realtime_usec();
	snprintf(reg->hook.unhooked, sizeof(reg->hook.unhooked), "%s", ev->name);
}

void act_registry_hook_status(struct act_registry *reg, struct act_hook_status *out)
{
	struct stat st;

	*out = reg->hook;
	out->installed = stat(VMACT_HOOK_PATH, &st) == 0;
}

static void on_event(struct hp_conn *c, const struct hp_event *ev, void *ud)
{
	struct act_registry *reg = ud;
	unsigned before = act_registry_count(reg);

	if (reg->shutting_down)
		return;
	switch (ev->kind) {
	case HP_EV_CONNECTED:
		if (ev->reconnects)
			log_info("libvirt: reconnected, resynchronising");
		resync(reg);
		return;
	case HP_EV_DISCONNECTED:
		log_warning("libvirt: connection lost; reconnecting (runners keep their state)");
		return;
	case HP_EV_DOMAIN_STOPPED:
		drop(reg, ev->uuid, "stopped");
		break;
	case HP_EV_DOMAIN_STARTED:
		note_start(reg, ev);
		sync_uuid(reg, ev->uuid, ev->name, false);
		break;
	case HP_EV_METADATA_CHANGED:
		sync_uuid(reg, ev->uuid, ev->name, ev->kind == HP_EV_METADATA_CHANGED);
		break;
	default:
		return;
	}
	if (act_registry_count(reg) != before)
		notify(reg, false);
}

int act_registry_new(const struct act_registry_opts *o, struct act_registry **out,
		     struct vmact_err *err)
{
	struct act_registry *reg = calloc(1, sizeof(*reg));
	struct hp_conn_opts ho = { .uri = o->cfg->libvirt_uri };
	struct vmact_err cerr = { 0 };
	int r;

	if (!reg)
		return -ENOMEM;
	reg->o = *o;
	r = act_cg_open(&reg->cg, NULL, &cerr);
	if (r < 0)
		log_error("cgroup: %s: no VM can be managed (fractional CPU limits cannot be "
			  "enforced)",
			  cerr.msg);
	else
		reg->have_cg = true;
	reg->env = (struct act_runner_env){
		.event = o->event,
		.cfg = o->cfg,
		.cg = reg->have_cg ? &reg->cg : NULL,
		.sampler = o->sampler,
		.plugin_url = o->plugin_url,
		.arbiter = o->arbiter,
		.prom = o->metrics,
		.metrics_interval_usec = (uint64_t)o->cfg->sampler_interval_ms * 1000u,
		.policy_tick_usec = (uint64_t)o->cfg->policy_tick_ms * 1000u,
		.events = o->events,
		.find = find_runner,
		.find_ud = reg,
	};
	r = act_cpu_overcommit_from_double(o->cfg->cpu_quota_overcommit, &reg->env.overcommit, err);
	if (r < 0) {
		vmact_err_prefix(err, "cgroup.cpu_quota_overcommit");
		free(reg);
		return r;
	}
	r = hp_conn_new(o->event, &ho, on_event, reg, &reg->hp, err);
	if (r < 0) {
		free(reg);
		return r;
	}
	reg->env.hp = reg->hp;
	/* The windows of busy VMs, as the kernel closes them (bpf/sampler.h,
	 * "The watch"). */
	if (o->sampler)
		smp_watch_handler(o->sampler, on_window, reg);
	*out = reg;
	return 0;
}

static void free_entries(struct act_registry *reg)
{
	struct entry *e;

	while ((e = reg->entries)) {
		VMACT_LIST_REMOVE(entries, reg->entries, e);
		act_runner_free(e->runner);
		entry_free(e);
	}
}

void act_registry_shutdown(struct act_registry *reg, void (*done)(void *ud), void *ud)
{
	reg->shutting_down = true;
	free_entries(reg);
	if (!reg->env.inf_draining) {
		done(ud);
		return;
	}
	log_info("waiting for informant agents to unregister");
	reg->env.inf_drained = done;
	reg->env.inf_drained_ud = ud;
}

void act_registry_free(struct act_registry *reg)
{
	if (!reg)
		return;
	free_entries(reg);
	reg->env.inf_drained = NULL;
	act_runner_informant_drain_free(&reg->env);
	hp_conn_free(reg->hp);
	free(reg);
}

static void view_of(const struct entry *e, struct act_vm_view *v)
{
	if (e->runner) {
		act_runner_view(e->runner, v);
		return;
	}
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", e->name);
	snprintf(v->uuid, sizeof(v->uuid), "%s", e->uuid);
	v->state = e->ignored ? ACT_VM_IGNORED : ACT_VM_UNMANAGED;
	snprintf(v->reason, sizeof(v->reason), "%s", e->skipped ? e->skipped : "");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct act_vm_view *)a)->name, ((const struct act_vm_view *)b)->name);
}

int act_registry_views(struct act_registry *reg, bool all, struct act_vm_view **out, size_t *n)
{
	const struct entry *e;
	size_t k = 0, i = 0;

	VMACT_LIST_FOREACH(entries, e, reg->entries)
		k += all || !e->ignored;
	*out = calloc(k ? k : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	VMACT_LIST_FOREACH(entries, e, reg->entries)
		if (all || !e->ignored)
			view_of(e, &(*out)[i++]);
	qsort(*out, k, sizeof(**out), by_name);
	*n = k;
	return 0;
}

/* By name or UUID, as virsh takes a domain: the UUID in any case. */
static struct entry *find_name(struct act_registry *reg, const char *name)
{
	struct entry *e;

	VMACT_LIST_FOREACH(entries, e, reg->entries)
		if (strcmp(e->name, name) == 0 || strcasecmp(e->uuid, name) == 0)
			return e;
	return NULL;
}

int act_registry_view(struct act_registry *reg, const char *name, struct act_vm_view *out)
{
	struct entry *e = find_name(reg, name);

	if (!e)
		return -ENOENT;
	view_of(e, out);
	return 0;
}

int act_registry_change(struct act_registry *reg, const char *name, const struct hp_meta_change *ch,
			struct vmact_err *err)
{
	struct entry *e = find_name(reg, name);

	if (!e || e->ignored)
		return vmact_err_set(err, ENOENT, "no VM named '%s' is managed by vmactd%s", name,
				     e ? " (vmactl status --all says why)" : "");
	return hp_meta_write(reg->hp, e->uuid, ch, NULL, err);
}

void act_registry_detection(struct act_registry *reg, struct act_detection *out)
{
	const struct act_config *cfg = reg->env.cfg;
	struct smp_sampler *s = reg->env.sampler;
	const char *why = s ? smp_watch_reason(s) : "no load sampler";

	*out = (struct act_detection){
		.sampler = !s                                       ? "none"
			   : smp_backend_used(s) == SMP_BACKEND_BPF ? "bpf"
								    : "taskstats",
		.kernel = s && !why && cfg->policy_events,
		.tick_ms = cfg->policy_tick_ms,
		.slow_ms = cfg->sampler_interval_ms,
	};
	if (!out->kernel)
		snprintf(out->reason, sizeof(out->reason), "%s",
			 !cfg->policy_events ? "policy.events is off" : why);
}
