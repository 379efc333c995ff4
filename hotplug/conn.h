/* SPDX-License-Identifier: Apache-2.0 */
/* The libvirt connection as the rest of hotplug/ sees it (conn.c): a
 * referenced virConnectPtr for one call, the hand-over queue to the
 * sd-event thread, and watches through which a worker thread waits for
 * events of one domain. The connection knows nothing of what a worker
 * does: a worker hands back a completion function, not an operation. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "base/list.h"
#include "hotplug/evloop.h"
#include "hotplug/hotplug.h"

/* A new reference on the live connection (virConnectClose it), or NULL
 * while libvirtd is away. Any thread. */
virConnectPtr hp_conn_get(struct hp_conn *c);
const char *hp_conn_uri(const struct hp_conn *c);
/* Where QEMU's pid files are (<rundir>/<name>.pid). */
const char *hp_conn_qemu_rundir(const struct hp_conn *c);

/* The hp_event_kind a libvirt lifecycle event (VIR_DOMAIN_EVENT_*, its
 * detail) is to vmact, or -1 for none: a domain arriving by live
 * migration starts when libvirt resumes it here, not when its paused
 * QEMU starts; one migrated away stops. */
int hp_lifecycle_kind(int event, int detail);

/* ---- the queue to the sd-event thread ---------------------------------- */

/* Runs on the sd-event thread with delivered = true; or from hp_conn_free
 * with delivered = false, when the connection closes first (release
 * whatever userdata holds, report nothing). */
typedef void (*hp_done_fn)(struct hp_conn *c, void *userdata, bool delivered);

/* One queued item: a domain event (allocated by conn.c), the close
 * callback, or a worker's completion (embedded in the worker's own state:
 * handing a result back never fails for want of memory). */
struct hp_qitem {
	VMACT_LIST_FIELDS(struct hp_qitem, queue);
	hp_done_fn done; /* completion when set; the queue never frees it */
	void *userdata;
	struct hp_event ev;
	bool disconnected; /* close callback fired for connection gen */
	unsigned gen;
};

/* ---- work on libvirt's event thread -------------------------------------- */

/* A call for the event thread (hotplug/evloop.h: why) and its completion. */
struct hp_ework {
	struct hp_evwork w;
	VMACT_LIST_FIELDS(struct hp_ework, eworks);
	struct hp_conn *c;
	void (*run)(struct hp_conn *c, void *userdata); /* on the event thread */
	struct hp_qitem it;
	hp_done_fn done;
	void *userdata;
};

/* Runs run(c, userdata) on libvirt's event thread, then done(c, userdata,
 * true) on the sd-event thread; or done(..., false) from hp_conn_free when
 * the connection closes first (it waits for a run that began). e is the
 * caller's until done. -ESHUTDOWN when the connection is closing. */
int hp_conn_run(struct hp_conn *c, struct hp_ework *e, void (*run)(struct hp_conn *c, void *),
		hp_done_fn done, void *userdata, struct vmact_err *err);

/* ---- watches: a worker thread waiting on one domain -------------------- */

/* What the libvirt event thread saw of the domain since the watch began. */
struct hp_seen {
	bool stopped;                            /* lifecycle STOPPED */
	char removed_alias[HP_ALIAS_MAX];        /* last DEVICE_REMOVED */
	char removal_failed_alias[HP_ALIAS_MAX]; /* last DEVICE_REMOVAL_FAILED */
};

struct hp_watch {
	VMACT_LIST_FIELDS(struct hp_watch, watches);
	char uuid[HP_UUID_LEN];
	/* Guarded by the connection's lock, written by the event thread. */
	unsigned kicks; /* events since the last hp_watch_wait */
	struct hp_seen seen;
};

/* Starts watching uuid's events. A registered watch keeps hp_conn_free
 * waiting until it is handed back with hp_watch_done. -ESHUTDOWN when the
 * connection is closing. */
int hp_watch_add(struct hp_conn *c, struct hp_watch *w, const char *uuid, struct vmact_err *err);
/* Unregisters a watch whose worker never started. */
void hp_watch_cancel(struct hp_conn *c, struct hp_watch *w);
/* Waits until `until` (CLOCK_MONOTONIC µs), an event of the domain, a
 * connection change or close. false when the connection is closing. */
bool hp_watch_wait(struct hp_conn *c, struct hp_watch *w, uint64_t until);
/* A consistent copy of what was seen so far. */
void hp_watch_seen(struct hp_conn *c, const struct hp_watch *w, struct hp_seen *out);
/* The worker's last call: unregisters w and queues `it`, which will run
 * done(c, userdata, ...) on the sd-event thread, in one step, so that
 * hp_conn_free finds either the watch or the item. */
void hp_watch_done(struct hp_conn *c, struct hp_watch *w, struct hp_qitem *it, hp_done_fn done,
		   void *userdata);
