/* SPDX-License-Identifier: Apache-2.0 */
/* The process-wide libvirt event thread (see hotplug.h, "Threads and the
 * event loop"): started with the first connection, joined with the last. */
#pragma once

#include <stdbool.h>

#include "base/error.h"
#include "base/list.h"

/* Registers libvirt's default event implementation (once per process) and
 * starts its thread for the first user. */
int hp_evloop_get(struct vmact_err *err);
/* Stops and joins the thread when the last user leaves. */
void hp_evloop_put(void);

/* Work for the event thread: run(w) once, there, soon. The thread's own
 * calls on a connection cost vmactd one wake-up, the answer's: made from
 * another thread, libvirt tells the event thread twice to stop and resume
 * watching the connection's socket (two wake-ups), and the longer the call
 * the more often the two meet on the connection's locks (more), so that a
 * call's cost grew with its size (doc/actuation.md, "Wake-ups"). */
struct hp_evwork {
	VMACT_LIST_FIELDS(struct hp_evwork, work);
	void (*run)(struct hp_evwork *w);
	bool queued; /* guarded by the queue's lock */
};

/* Queues w (any thread, while the caller holds the loop). */
void hp_evloop_post(struct hp_evwork *w);
/* Takes w back if it has not begun: true. false: it ran or runs now. */
bool hp_evloop_cancel(struct hp_evwork *w);
