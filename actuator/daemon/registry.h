/* SPDX-License-Identifier: Apache-2.0 */
/* The VM registry: which running domains vmactd manages. One libvirt
 * connection (hotplug/hp_conn) on the daemon's loop; every running domain
 * whose vmact metadata says enabled="true" gets a runner (actuator/runner/runner.h).
 * Domain start/stop and metadata changes add, update and remove runners; a
 * libvirt reconnect resynchronises everything (events during the gap are
 * lost). A domain with broken metadata is skipped with one log line naming
 * the domain and the element, repeated only when the error changes or the
 * metadata is edited again. */
#pragma once

struct ag_arbiter;

#include <stdbool.h>

#include <systemd/sd-event.h>

#include "actuator/config/config.h"
#include "base/error.h"

struct act_registry;
struct act_metrics;
struct smp_sampler;
struct act_events;
struct act_vm_view;
struct hp_meta_change;

struct act_registry_opts {
	sd_event *event;
	const struct act_config *cfg;
	const char *plugin_url;      /* plugin.mode remote: where runners send plugin requests */
	struct ag_arbiter *arbiter;  /* else: the embedded arbiter, called in-process */
	struct smp_sampler *sampler; /* may be NULL */
	struct act_metrics *metrics; /* the daemon's counters (metrics.h); may be NULL */
	struct act_events *events;   /* the control API's event ring; may be NULL */
	/* Called after every change of the managed set and after each full
	 * sync (first: the first sync finished). */
	void (*changed)(void *ud, unsigned managed, bool first_sync);
	void *ud;
};

/* Connects to libvirt (the first attempt is synchronous: a bad URI fails
 * here); the first sync runs from the loop on the CONNECTED event. */
int act_registry_new(const struct act_registry_opts *o, struct act_registry **out,
		     struct vmact_err *err);
/* Daemon shutdown, first half: stops every runner and manages no new
 * ones; done(ud) runs from the loop once the informant agents of those
 * runners have unregistered (bounded by the informant client's register
 * timeout), or right away when there are none. */
void act_registry_shutdown(struct act_registry *reg, void (*done)(void *ud), void *ud);

/* Stops every runner, then closes the libvirt connection (waiting for
 * operations in flight). NULL is fine. */
void act_registry_free(struct act_registry *reg);

unsigned act_registry_count(const struct act_registry *reg);

struct act_vm_metrics;
/* The metrics page's figures of every VM vmactd manages, *out malloc'd. */
int act_registry_metrics(struct act_registry *reg, struct act_vm_metrics **out, size_t *n);
/* The control API's views (control-json.h) of every VM vmactd manages or
 * skipped for broken metadata, by name; *out is malloc'd. */
/* The libvirt connection (vmactl check, enable, disable: enroll.h). */
struct hp_conn *act_registry_hp(struct act_registry *reg);
/* all: also the running domains vmactd ignores (no metadata, disabled,
 * outside libvirt.name_prefix), each with the reason. */
int act_registry_views(struct act_registry *reg, bool all, struct act_vm_view **out, size_t *n);
/* One VM by name; -ENOENT when vmactd does not know it. */
int act_registry_view(struct act_registry *reg, const char *name, struct act_vm_view *out);
/* Writes an operator's change into the VM's metadata (hp_meta_write);
 * libvirt's metadata event then updates the runner. -ENOENT: unknown VM. */
int act_registry_change(struct act_registry *reg, const char *name, const struct hp_meta_change *ch,
			struct vmact_err *err);
/* Re-reads every running domain now (after a configuration reload); does
 * nothing while libvirt is not connected (the reconnect resyncs). */
void act_registry_resync(struct act_registry *reg);

struct vmact_hook_msg;
/* A notice from vmact-hook (actuator/daemon/hook-listener.h): "started" resyncs
 * that domain now, "stopped" and "release" drop its runner now, the other
 * steps come before the domain runs here and change nothing (its
 * "started" follows). libvirt's own events and reconnects still do the
 * same later: a notice only makes vmactd learn it sooner. Returns what
 * it did, for the log. */
const char *act_registry_hook_notice(struct act_registry *reg, const struct vmact_hook_msg *m);
struct act_hook_status;
/* What the notices say of the hook (control-json.h): GET /v1/vms. */
void act_registry_hook_status(struct act_registry *reg, struct act_hook_status *out);
/* The embedded arbiter's reservations went down (a lease released or
 * lapsed): every runner it denied growth asks again now
 * (act_runner_room_freed). Callable from the arbiter's event callback. */
void act_registry_room_freed(struct act_registry *reg);

/* The embedded arbiter marked (moving) or unmarked pod ns/name as moving
 * away (a lease of the cluster layer, doc/cluster.md "Capacity leases"):
 * the runner that speaks for that pod is frozen or thawed
 * (act_runner_freeze). No runner here speaks for it: nothing resizes its
 * VM here, so the arbiter hears at once that it is frozen. Callable from
 * the arbiter's event callback. */
void act_registry_pod_moving(struct act_registry *reg, const char *ns, const char *name,
			     bool moving);
struct act_detection;
/* How the VMs' load is found (control-json.h): GET /v1/vms. */
void act_registry_detection(struct act_registry *reg, struct act_detection *out);
