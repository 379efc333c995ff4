/* SPDX-License-Identifier: Apache-2.0 */
/* A VM's life once it is placed (doc/cluster.md, "Pool lifecycle"): the boot
 * watched until healthy, a standby VM put into its tier (running, paused,
 * managed-saved) and probed there, a claim woken from its tier and told to
 * the guest, failures (destroyed, reported, replaced) and removal.
 *
 * cl_life_next is level-triggered: from what a VM's metadata says and
 * what the engine asked of it, the one next job, and nothing while a job
 * of it runs. Every job writes the metadata before the step it describes
 * is taken (doc/cluster.md, "State in libvirt"). */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "base/macro.h"
#include "base/time.h"
#include "cluster/engine/node-api.h"
#include "cluster/host/console.h"
#include "cluster/host/health.h"
#include "shared/keyfile.h"

DEFINE_PTR_CLEANUP(life_conn_closep, struct _virConnect, virConnectClose)

/* A claim without an acknowledgement: its port is held open this long for
 * the guest to read the line (doc/cluster.md, "The claim"). */
#define CLAIM_LINGER_USEC (1000 * 1000ULL)
/* A removal that failed (the host away) is tried again after this long. */
#define REMOVE_RETRY_USEC (2 * 1000000ULL)

enum kind { J_RECORD, J_PLACEHOLDER, J_PROBE, J_TIER, J_CLAIM, J_REMOVE, J_MEMBER_FAIL };

struct job {
	enum kind kind;
	struct cl_engine *e;
	struct cl_vm *vm;
	struct cl_host *host;
	const struct cl_group_cfg *g;
	char uuid[VIR_UUID_STRING_BUFLEN], name[CL_NAME_MAX], host_name[CL_NAME_MAX];
	struct cl_meta meta;        /* to record */
	enum cl_state probed_state; /* J_PROBE: the state it was probed for */
	uint64_t window_usec;       /* J_PROBE */
	bool leased, persisted;
	bool retry_now; /* J_MEMBER_FAIL */
	bool has_why;
	enum cl_engine_failure why;
	double t_start, t_woken, t_told; /* J_CLAIM's steps (CLOCK_REALTIME s) */
	char provider_id[160];
	/* results */
	int r;
	bool recorded; /* J_REMOVE: state deleting is recorded */
	int node_r;    /* J_REMOVE: cl_node_api_delete's (no call: 0) */
	struct vmact_err node_err;
	struct vmact_err err;
	void (*then)(struct cl_vm *vm, int r, const char *err);
};

static struct job *job_new(struct cl_vm *vm, enum kind kind)
{
	struct job *j = calloc(1, sizeof(*j));
	struct cl_ehost *h;

	if (!j)
		return NULL;
	j->kind = kind;
	j->e = vm->g->e;
	j->vm = vm;
	j->g = vm->g->cfg;
	h = vm->host[0] ? cl_vm_ehost(j->e, vm->host) : NULL;
	j->host = h ? h->h : NULL;
	snprintf(j->uuid, sizeof(j->uuid), "%s", vm->uuid);
	snprintf(j->name, sizeof(j->name), "%s", vm->name);
	snprintf(j->host_name, sizeof(j->host_name), "%s", vm->host);
	cl_vm_provider_id(vm, j->provider_id, sizeof(j->provider_id));
	j->meta = vm->meta;
	j->leased = vm->leased;
	j->persisted = vm->persisted;
	return j;
}

static void submit(struct job *j, void (*run)(void *), void (*done)(void *))
{
	if (j->kind == J_PROBE)
		j->vm->probing = true;
	else
		j->vm->busy = true;
	if (cl_jobs_submit(j->e->jobs, run, done, j) < 0) {
		j->r = -ESHUTDOWN;
		vmact_err_set(&j->err, ESHUTDOWN, "vmact-groupd is stopping");
		done(j);
	}
}

/* A VM that was removed while a probe of it ran is freed with the probe. */
static void bury(struct cl_engine *e, struct cl_vm *vm)
{
	if (vm->g)
		VMACT_LIST_REMOVE(vms, vm->g->vms, vm);
	if (!vm->probing) {
		vm->g = NULL;
		VMACT_LIST_PREPEND(vms, e->orphans, vm);
		cl_vm_free(e, vm);
		return;
	}
	vm->gone = true;
	VMACT_LIST_PREPEND(vms, e->graveyard, vm);
}

/* ---- probes ---- */

/* A member in service reported unhealthy: its node's error says so (kept
 * in its metadata, so that a restart knows). */
static bool unhealthy_reported(const struct cl_vm *vm)
{
	return vm->meta.has_error && strcmp(vm->meta.err_code, "UNHEALTHY") == 0;
}

static void health_recorded(struct cl_vm *vm, int r, const char *err)
{
	if (r < 0)
		cl_vm_emit(vm->g->e, LOG_WARNING, vm, "could not record its health: %s", err);
	cl_vm_kick(vm->g->e);
}

static void healthy_again(struct cl_vm *vm)
{
	vm->meta.has_error = false;
	cl_vm_emit(vm->g->e, LOG_INFO, vm, "healthy again in service: its error cleared");
	if (!vm->busy)
		cl_vm_record(vm, health_recorded);
}

static void probe_run(void *data)
{
	struct job *j = data;
	_cleanup_(life_conn_closep) virConnectPtr c = cl_host_conn(j->host, &j->err);
	struct cl_health h = j->g->health;

	if (!c) {
		j->r = -EHOSTUNREACH;
		return;
	}
	h.probe_timeout_usec = j->window_usec;
	j->r = cl_health_probe(c, j->uuid, &h, &j->err);
}

static void probe_done(void *data)
{
	struct job *j = data;
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	uint64_t now = vmact_loop_now_usec(e->ev);

	vm->probing = false;
	if (vm->gone) {
		VMACT_LIST_REMOVE(vms, e->graveyard, vm);
		vm->g = NULL;
		VMACT_LIST_PREPEND(vms, e->orphans, vm);
		cl_vm_free(e, vm);
		free(j);
		return;
	}
	/* A probe for a state the VM has left (claimed meanwhile) says
	 * nothing about the new one. */
	if (vm->meta.state == j->probed_state) {
		if (j->r >= 0) {
			vm->healthy = true;
			vm->last_healthy_usec = now;
			if (vm->meta.state == CL_ST_CLAIMED && unhealthy_reported(vm))
				healthy_again(vm);
		} else if (vm->meta.state == CL_ST_READY || vm->meta.state == CL_ST_CLAIMED) {
			cl_vm_emit(e, LOG_DEBUG, vm, "health probe failed: %s", j->err.msg);
		}
	}
	free(j);
	cl_vm_kick(e);
}

static void probe(struct cl_vm *vm, uint64_t window)
{
	struct job *j = job_new(vm, J_PROBE);
	uint64_t now = vmact_loop_now_usec(vm->g->e->ev);

	if (!j || !j->host) {
		free(j);
		return;
	}
	j->probed_state = vm->meta.state;
	j->window_usec = window;
	vm->next_probe_usec = now + vm->g->cfg->life.health_interval_usec;
	submit(j, probe_run, probe_done);
}

/* ---- into a tier ---- */

static void tier_run(void *data)
{
	struct job *j = data;
	_cleanup_(life_conn_closep) virConnectPtr c = cl_host_conn(j->host, &j->err);

	if (!c) {
		j->r = -EHOSTUNREACH;
		return;
	}
	switch (j->meta.tier) {
	case CL_TIER_PAUSED:
		j->r = cl_virt_suspend(c, j->uuid, &j->err);
		break;
	case CL_TIER_SAVED:
		/* Recorded first: a saved VM's live XML is its saved one. */
		j->r = cl_virt_set_meta(c, j->uuid, &j->meta, &j->err);
		if (j->r >= 0)
			j->r = cl_virt_managed_save(c, j->uuid, &j->err);
		if (j->r >= 0) {
			struct vmact_err e2 = { 0 };

			/* Saved, it holds no CPU or memory: its lease goes, and a
			 * claim takes one again before the restore. */
			if (cl_host_release(j->host, CL_PLUGINS_LEASE_NS, j->name, &e2) >= 0)
				j->leased = false;
		}
		return;
	default:
		break;
	}
	if (j->r >= 0)
		j->r = cl_virt_set_meta(c, j->uuid, &j->meta, &j->err);
}

static void tier_done(void *data)
{
	struct job *j = data;
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	uint64_t now = vmact_loop_now_usec(e->ev);

	vm->busy = false;
	if (j->r < 0) {
		enum cl_engine_failure why = CL_FAIL_UNHEALTHY;

		cl_vm_emit(e, LOG_WARNING, vm, "could not put into tier %s: %s",
			   cl_domxml_tier_name(j->meta.tier), j->err.msg);
		free(j);
		cl_life_remove(vm, &why, "tier change failed");
		return;
	}
	vm->meta = j->meta;
	vm->leased = j->leased;
	vm->last_healthy_usec = now;
	vm->next_probe_usec = now + vm->g->cfg->life.health_interval_usec;
	cl_vm_emit(e, LOG_INFO, vm, "standby, healthy, in tier %s on %s",
		   cl_domxml_tier_name(vm->meta.tier), vm->host);
	free(j);
	cl_vm_kick(e);
}

static void into_tier(struct cl_vm *vm)
{
	struct job *j = job_new(vm, J_TIER);

	if (!j)
		return;
	j->meta.state = CL_ST_READY;
	submit(j, tier_run, tier_done);
}

/* ---- claims ---- */

/* A claim line can carry a secret: wiped before it is freed. */
static void wipe_free(char **p)
{
	if (*p) {
		explicit_bzero(*p, strlen(*p));
		free(*p);
	}
}

/* The group's claim.secret as {"KIND": TEXT}, read now (it may have been
 * rotated); NULL without one, or on an error (in err). The text's copies
 * are wiped once the line is written: *text for the caller. */
static json_t *claim_secret(const struct cl_group_cfg *g, json_t **text, struct vmact_err *err)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	json_t *o;

	*text = NULL;
	if (!g->claim.secret_kind[0])
		return NULL;
	if (vmact_keyfile_load_max(g->claim.secret_file, CL_CLAIM_SECRET_MAX, &buf, &len, err) <
	    0) {
		vmact_err_prefix(err, "claim.secret");
		return NULL;
	}
	/* A JoinConfiguration the node could not use fails the claim here,
	 * with a reason that quotes none of it. */
	if (!strcmp(g->claim.secret_kind, "kubeadm")) {
		json_t *j = json_loadb((const char *)buf, len, 0, NULL);
		const char *kind = json_string_value(json_object_get(j, "kind"));
		bool ok = kind && !strcmp(kind, "JoinConfiguration");

		json_decref(j);
		if (!ok) {
			explicit_bzero(buf, len);
			free(buf);
			vmact_err_set(err, EINVAL,
				      "claim.secret: %s is not a kubeadm JoinConfiguration in JSON",
				      g->claim.secret_file);
			return NULL;
		}
	}
	*text = json_stringn((const char *)buf, len);
	explicit_bzero(buf, len);
	free(buf);
	if (!*text) {
		vmact_err_set(err, EINVAL, "claim.secret: %s is not UTF-8 text",
			      g->claim.secret_file);
		return NULL;
	}
	o = json_object();
	if (!o || json_object_set(o, g->claim.secret_kind, *text) < 0) {
		json_decref(o);
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	return o;
}

/* "claim <json>\n" (doc/cluster.md, "The claim"); -errno with err. */
static int claim_line(const struct job *j, char **line, struct vmact_err *err)
{
	json_t *taints = json_array(), *o, *secret = NULL, *text = NULL;
	char *dump = NULL;
	int r = 0;

	*line = NULL;
	for (size_t i = 0; i < j->g->n_taints; i++)
		json_array_append_new(taints, json_pack("{s:s,s:s,s:s}", "key", j->g->taints[i].key,
							"value", j->g->taints[i].value, "effect",
							j->g->taints[i].effect));
	o = json_pack("{s:s,s:s,s:s,s:O,s:o}", "group", j->g->id, "name", j->name, "provider_id",
		      j->provider_id, "labels", j->g->labels, "taints", taints);
	if (j->g->claim.secret_kind[0]) {
		secret = claim_secret(j->g, &text, err);
		if (!secret)
			r = -(err->code ? err->code : EIO);
		else if (o && json_object_set_new(o, "secret", secret) < 0)
			r = vmact_err_set(err, ENOMEM, "out of memory");
	}
	if (r >= 0) {
		dump = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (!dump || asprintf(line, "claim %s\n", dump) < 0) {
			*line = NULL;
			r = vmact_err_set(err, ENOMEM, "out of memory");
		}
	}
	if (text)
		explicit_bzero((char *)json_string_value(text), json_string_length(text));
	json_decref(text);
	json_decref(o);
	wipe_free(&dump);
	return r;
}

static void claim_run(void *data)
{
	struct job *j = data;
	_cleanup_(life_conn_closep) virConnectPtr c = cl_host_conn(j->host, &j->err);
	_cleanup_(wipe_free) char *line = NULL;
	const struct cl_group_cfg *g = j->g;
	enum cl_virt_run run;
	bool saved;
	char ack[256];

	if (!c) {
		j->r = -EHOSTUNREACH;
		return;
	}
	if ((j->r = claim_line(j, &line, &j->err)) < 0)
		return;
	j->t_start = cl_vm_now_real();
	/* Woken from where it is, whatever the tier says (a claim resumed
	 * after a restart finds it half way). */
	if ((j->r = cl_virt_state(c, j->uuid, &run, &saved, &j->err)) < 0)
		return;
	if (run == CL_VIRT_OFF && saved) {
		if (!j->leased) {
			j->r = cl_host_lease(j->host, CL_PLUGINS_LEASE_NS, j->name, g->tpl.reserve,
					     j->e->cfg->life.lease_usec, false, &j->err);
			if (j->r < 0)
				return;
			j->leased = true;
		}
		if ((j->r = cl_virt_start(c, j->uuid, &j->err)) < 0)
			return;
	} else if (run == CL_VIRT_PAUSED) {
		if ((j->r = cl_virt_resume(c, j->uuid, &j->err)) < 0)
			return;
	} else if (run != CL_VIRT_RUNNING) {
		j->r = vmact_err_set(&j->err, EIO, "the VM is not running, paused or saved");
		return;
	}
	j->t_woken = cl_vm_now_real();
	/* With an acknowledgement the answer is the health check; without,
	 * a probe first. */
	if (g->claim.ack[0] && cl_config_claim_virtio(&g->claim)) {
		j->r = cl_console_channel(c, j->uuid, cl_config_claim_virtio(&g->claim), line,
					  g->claim.ack, g->claim.refuse, g->claim.ack_timeout_usec,
					  ack, sizeof(ack), &j->err);
	} else if (g->claim.ack[0]) {
		j->r = cl_console_expect(c, j->uuid, "serial0", g->claim.ack, g->claim.refuse,
					 g->claim.ack_timeout_usec, g->claim.channel, line, ack,
					 sizeof(ack), &j->err);
	} else if (cl_config_claim_virtio(&g->claim)) {
		/* Nothing answers: a probe first, then the line, the channel
		 * held open a while for the guest to read it. */
		j->r = cl_health_probe(c, j->uuid, &g->health, &j->err);
		if (j->r >= 0)
			j->r = cl_console_channel(c, j->uuid, cl_config_claim_virtio(&g->claim),
						  line, "\001", NULL, CLAIM_LINGER_USEC, ack,
						  sizeof(ack), &j->err);
		if (j->r == -ETIMEDOUT)
			j->r = 0;
	} else {
		j->r = cl_health_probe(c, j->uuid, &g->health, &j->err);
		if (j->r >= 0)
			j->r = cl_console_send(c, j->uuid, g->claim.channel, line,
					       CLAIM_LINGER_USEC, &j->err);
	}
	if (j->r < 0)
		return;
	j->t_told = cl_vm_now_real();
	j->meta.state = CL_ST_CLAIMED;
	j->meta.in_service = j->t_told;
	j->meta.has_error = false;
	j->r = cl_virt_set_meta(c, j->uuid, &j->meta, &j->err);
}

static void claim_done(void *data)
{
	struct job *j = data;
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	double secs;

	vm->busy = false;
	vm->leased = j->leased;
	if (j->r < 0) {
		char text[VMACT_ERR_MSG_MAX + 32];

		/* A standby VM that would not wake: a cold boot at once. One
		 * booted for the claim: the back-off first. */
		bool now = vm->meta.tier != CL_TIER_COLD;

		snprintf(text, sizeof(text), "claim failed: %s", j->err.msg);
		free(j);
		cl_life_member_failed(vm, CL_FAIL_CLAIM, "CLAIM_FAILED", text, now);
		return;
	}
	vm->meta = j->meta;
	/* Its claim was its health check. */
	vm->last_healthy_usec = vmact_loop_now_usec(e->ev);
	vm->next_probe_usec = vm->last_healthy_usec + vm->g->cfg->life.health_interval_usec;
	secs = vm->meta.requested > 0 ? vm->meta.in_service - vm->meta.requested : 0;
	if (secs < 0)
		secs = 0;
	cl_vm_observe(vm->g, vm->meta.tier, secs);
	/* Where the time went, for operators tuning a node image. */
	cl_vm_emit(e, LOG_INFO, vm,
		   "in service on %s, %.2f s after the increase (%s; claim started +%.0f ms, woken "
		   "%.0f ms, told and acknowledged %.0f ms)",
		   vm->host, secs,
		   vm->meta.tier == CL_TIER_COLD ? "cold boot" : cl_domxml_tier_name(vm->meta.tier),
		   (j->t_start - vm->meta.requested) * 1e3, (j->t_woken - j->t_start) * 1e3,
		   (j->t_told - j->t_woken) * 1e3);
	free(j);
	cl_vm_kick(e);
}

static void claim(struct cl_vm *vm)
{
	struct job *j = job_new(vm, J_CLAIM);

	if (!j)
		return;
	j->meta.state = CL_ST_CLAIMING;
	submit(j, claim_run, claim_done);
}

/* ---- failures and removal ---- */

static void remove_run(void *data)
{
	struct job *j = data;
	_cleanup_(life_conn_closep) virConnectPtr c = NULL;
	char volume[CL_NAME_MAX + 8];
	struct vmact_err e2 = { 0 };

	if (!j->persisted) {
		j->r = 0;
		return;
	}
	c = j->host ? cl_host_conn(j->host, &j->err) : NULL;
	if (!c) {
		j->r = j->host ? -EHOSTUNREACH : 0;
		return;
	}
	/* Recorded first: a vmact-groupd killed mid-way goes on with it. */
	if (j->meta.state != CL_ST_DELETING && j->meta.state != CL_ST_PENDING) {
		j->meta.state = CL_ST_DELETING;
		if ((j->r = cl_virt_set_meta(c, j->uuid, &j->meta, &j->err)) < 0 && j->r != -ENOENT)
			return;
	}
	j->recorded = true;
	if ((j->r = cl_virt_remove(c, j->uuid, &j->err)) < 0)
		return;
	cl_domxml_volume_name(j->name, volume, sizeof(volume));
	if ((j->r = cl_virt_overlay_delete(c, cl_host_cfg(j->host)->storage_pool, volume,
					   &j->err)) < 0)
		return;
	/* The lease would expire; released, the room is back at once. */
	cl_host_release(j->host, CL_PLUGINS_LEASE_NS, j->name, &e2);
	j->leased = false;
	/* A member's Node, whose kubelet is gone with it (a standby never
	 * had one). Not a reason to try the removal again. */
	if (j->e->cfg->kube.server[0] && j->meta.role == CL_ROLE_MEMBER)
		j->node_r = cl_node_api_delete(&j->e->cfg->kube, j->name, j->provider_id,
					       &j->node_err);
}

static void remove_done(void *data)
{
	struct job *j = data;
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	bool was_leased = vm->leased;

	vm->busy = false;
	if (j->r < 0) {
		cl_vm_emit(e, LOG_WARNING, vm, "removal failed (tried again): %s", j->err.msg);
		/* Not at every tick while libvirtd is away. */
		vm->remove_retry_usec = vmact_loop_now_usec(e->ev) + REMOVE_RETRY_USEC;
		if (j->recorded) {
			vm->meta.state = CL_ST_DELETING;
			cl_vm_ops_done(vm, 0, NULL);
		}
		free(j);
		return;
	}
	if (j->has_why)
		vm->g->c.failures[j->why]++;
	cl_vm_emit(e, LOG_INFO, vm, "removed from %s: domain, disk and lease%s",
		   vm->host[0] ? vm->host : "(nowhere)",
		   j->node_r > 0 ? ", and its Node from the API server" : "");
	if (j->node_r < 0)
		cl_vm_emit(e, LOG_WARNING, vm, "its Node is left in the API server: %s",
			   j->node_err.msg);
	cl_vm_ops_done(vm, 0, NULL);
	free(j);
	bury(e, vm);
	if (was_leased)
		cl_vm_evictions_done(e);
	cl_vm_kick(e);
}

void cl_life_remove(struct cl_vm *vm, enum cl_engine_failure *why, const char *text)
{
	struct job *j = job_new(vm, J_REMOVE);

	if (!j)
		return;
	vm->want_delete = true;
	if (why) {
		j->has_why = true;
		j->why = *why;
		cl_vm_emit(vm->g->e, LOG_WARNING, vm, "%s, destroyed (%s)", text,
			   vm->meta.role == CL_ROLE_POOL ? "the pool makes another" : "replaced");
	}
	submit(j, remove_run, remove_done);
}

static void member_fail_run(void *data)
{
	struct job *j = data;
	_cleanup_(life_conn_closep) virConnectPtr c = cl_host_conn(j->host, &j->err);
	_cleanup_free_ char *xml = NULL;
	struct cl_domxml_spec ds = { .group = j->g,
				     .name = j->name,
				     .uuid = j->uuid,
				     .meta = &j->meta,
				     .channel_dir = j->host ? cl_host_cfg(j->host)->channel_dir
							    : NULL };
	char volume[CL_NAME_MAX + 8];
	struct vmact_err e2 = { 0 };

	if (!c) {
		j->r = -EHOSTUNREACH;
		return;
	}
	/* The VM goes, its member stays: a placeholder (no disk) with the
	 * error, where the next placement finds it. */
	if ((j->r = cl_virt_remove(c, j->uuid, &j->err)) < 0)
		return;
	xml = cl_domxml_domain(&ds, &j->err);
	if (!xml || (j->r = cl_virt_define(c, xml, &j->err)) < 0) {
		j->r = j->r < 0 ? j->r : -ENOMEM;
		return;
	}
	cl_domxml_volume_name(j->name, volume, sizeof(volume));
	cl_virt_overlay_delete(c, cl_host_cfg(j->host)->storage_pool, volume, &e2);
	if (j->leased && cl_host_release(j->host, CL_PLUGINS_LEASE_NS, j->name, &e2) >= 0)
		j->leased = false;
	j->r = 0;
}

static void member_fail_done(void *data)
{
	struct job *j = data;
	struct cl_vm *vm = j->vm;
	struct cl_engine *e = j->e;
	uint64_t now = vmact_loop_now_usec(e->ev);

	vm->busy = false;
	if (j->r < 0) {
		cl_vm_emit(e, LOG_WARNING, vm, "could not replace the failed VM (tried again): %s",
			   j->err.msg);
		free(j);
		return;
	}
	vm->meta = j->meta;
	vm->leased = j->leased;
	vm->healthy = false;
	vm->next_try_usec = j->retry_now ? now : now + vm->g->cfg->life.retry_backoff_usec;
	free(j);
	if (vm->leased)
		cl_vm_evictions_done(e);
	cl_vm_kick(e);
}

void cl_life_member_failed(struct cl_vm *vm, enum cl_engine_failure why, const char *code,
			   const char *text, bool retry_now)
{
	struct job *j = job_new(vm, J_MEMBER_FAIL);

	if (!j)
		return;
	vm->g->c.failures[why]++;
	cl_vm_emit(vm->g->e, LOG_WARNING, vm, "%s: %s; destroyed, a new VM %s", code, text,
		   retry_now ? "is placed now" : "after the back-off");
	j->meta.state = CL_ST_PENDING;
	j->meta.tier = CL_TIER_COLD;
	j->meta.booted = 0;
	j->meta.has_error = true;
	snprintf(j->meta.err_class, sizeof(j->meta.err_class), "other");
	snprintf(j->meta.err_code, sizeof(j->meta.err_code), "%s", code);
	snprintf(j->meta.err_msg, sizeof(j->meta.err_msg), "%s", text);
	j->meta.err_at = cl_vm_now_real();
	j->retry_now = retry_now;
	submit(j, member_fail_run, member_fail_done);
}

/* ---- the next step ---- */

static void returned(struct cl_vm *vm, int r, const char *err)
{
	cl_vm_ops_done(vm, r, err);
	if (r < 0) {
		/* Not recorded: still a member, asked again. */
		vm->meta.role = CL_ROLE_MEMBER;
		vm->want_return = true;
		cl_vm_emit(vm->g->e, LOG_WARNING, vm, "could not return it to the pool: %s", err);
	}
	cl_vm_kick(vm->g->e);
}

void cl_life_next(struct cl_vm *vm)
{
	struct cl_engine *e = vm->g ? vm->g->e : NULL;
	const struct cl_lifecycle *life;
	uint64_t now;

	if (!e || vm->busy || vm->placing || vm->gone || e->stopping)
		return;
	life = &vm->g->cfg->life;
	now = vmact_loop_now_usec(e->ev);
	if (vm->want_delete) {
		if (now < vm->remove_retry_usec)
			return;
		if (!vm->persisted) {
			cl_vm_ops_done(vm, 0, NULL);
			bury(e, vm);
			return;
		}
		cl_life_remove(vm, NULL, NULL);
		return;
	}
	if (vm->want_return) {
		/* ReturnNode(unused): it was never told a claim, so it is as
		 * good as a standby VM (of the running tier, booted or not). */
		vm->want_return = false;
		vm->g->c.returned++;
		vm->meta.role = CL_ROLE_POOL;
		vm->meta.tier = CL_TIER_RUNNING;
		vm->meta.requested = 0;
		vm->meta.has_error = false;
		cl_vm_emit(e, LOG_INFO, vm, "returned to the pool, unused");
		cl_vm_record(vm, returned);
		return;
	}
	switch (vm->meta.state) {
	case CL_ST_PENDING:
		/* Placed by the engine's tick (engine.c). */
		break;
	case CL_ST_CREATING:
		/* Only after a restart: created without a result. */
		if (vm->meta.role == CL_ROLE_MEMBER)
			cl_life_member_failed(vm, CL_FAIL_BIND, "INTERRUPTED",
					      "vmact-groupd stopped while creating it", true);
		else
			cl_life_remove(vm, NULL, NULL);
		break;
	case CL_ST_BOOTING:
		if (vm->healthy) {
			if (vm->meta.role == CL_ROLE_MEMBER)
				claim(vm);
			else
				into_tier(vm);
		} else if (now >= vm->boot_deadline_usec) {
			char text[128];

			snprintf(text, sizeof(text), "not healthy %.0f s after its start",
				 life->boot_timeout_usec / 1e6);
			if (vm->meta.role == CL_ROLE_MEMBER) {
				cl_life_member_failed(vm, CL_FAIL_BOOT_TIMEOUT, "BOOT_TIMEOUT",
						      text, false);
			} else {
				enum cl_engine_failure why = CL_FAIL_BOOT_TIMEOUT;

				cl_life_remove(vm, &why, text);
			}
		} else if (!vm->probing && now >= vm->next_probe_usec) {
			uint64_t window = vm->g->cfg->health.kind == CL_HEALTH_SERIAL
						  ? life->health_interval_usec
						  : vm->g->cfg->health.probe_timeout_usec;

			/* The console is watched the whole interval: the first
			 * line after the boot is seen as it comes. */
			if (window > vm->boot_deadline_usec - now)
				window = vm->boot_deadline_usec - now;
			probe(vm, window);
		}
		break;
	case CL_ST_READY:
		if (vm->meta.role != CL_ROLE_POOL || vm->meta.tier != CL_TIER_RUNNING)
			break;
		if (now - vm->last_healthy_usec > life->healthy_timeout_usec) {
			enum cl_engine_failure why = CL_FAIL_UNHEALTHY;
			char text[128];

			snprintf(text, sizeof(text), "no good health check for %.0f s",
				 life->healthy_timeout_usec / 1e6);
			cl_life_remove(vm, &why, text);
		} else if (!vm->probing && now >= vm->next_probe_usec) {
			probe(vm, vm->g->cfg->health.probe_timeout_usec);
		}
		break;
	case CL_ST_CLAIMING:
		/* A probe still running would take the console over from the
		 * claim's acknowledgement: the claim waits for it. */
		if (!vm->probing)
			claim(vm);
		break;
	case CL_ST_DELETING:
		cl_life_remove(vm, NULL, NULL);
		break;
	case CL_ST_CLAIMED:
		/* In service: health-checked like a running standby VM (the
		 * kip's HealthyTimeout). Reported to the autoscaler through
		 * the node's error; replaced only if the group says so. */
		if (vm->meta.role != CL_ROLE_MEMBER)
			break;
		if (!vm->last_healthy_usec)
			vm->last_healthy_usec = now;
		if (now - vm->last_healthy_usec > life->healthy_timeout_usec) {
			char text[128];

			snprintf(text, sizeof(text), "no good health check for %.0f s in service",
				 life->healthy_timeout_usec / 1e6);
			if (vm->g->cfg->health.replace_unhealthy) {
				vm->last_healthy_usec = 0;
				cl_life_member_failed(vm, CL_FAIL_UNHEALTHY, "UNHEALTHY", text,
						      true);
				break;
			}
			if (!unhealthy_reported(vm)) {
				vm->g->c.failures[CL_FAIL_UNHEALTHY]++;
				cl_vm_emit(e, LOG_WARNING, vm, "%s: reported, left in service",
					   text);
				vm->meta.has_error = true;
				snprintf(vm->meta.err_class, sizeof(vm->meta.err_class), "other");
				snprintf(vm->meta.err_code, sizeof(vm->meta.err_code), "UNHEALTHY");
				snprintf(vm->meta.err_msg, sizeof(vm->meta.err_msg), "%s", text);
				vm->meta.err_at = cl_vm_now_real();
				cl_vm_record(vm, health_recorded);
				break;
			}
		}
		if (!vm->probing && now >= vm->next_probe_usec)
			probe(vm, vm->g->cfg->health.probe_timeout_usec);
		break;
	default:
		break;
	}
}
