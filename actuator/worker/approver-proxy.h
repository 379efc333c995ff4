/* SPDX-License-Identifier: Apache-2.0 */
/* The approver of a VM whose guest protocol runs in its guest worker
 * (doc/privsep.md): an act_approver (guestd/approver.h) that
 * forwards requests to the worker and its events back, as fixed records. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "base/error.h"
#include "guestd/approver.h"

/* The vm-monitor through a guest worker running `program` as `user`
 * (guest_worker.*, doc/privsep.md): the worker runs the approver above,
 * this one forwards requests and events as fixed records. */
int act_approver_proxy_new(sd_event *event, const char *name, const char *endpoint,
			   const char *program, const char *user,
			   const struct act_approver_events *events, void *userdata,
			   struct act_approver **out, struct vmact_err *err);

/* The legacy informant through its own guest worker (vmact-guestd
 * --informant): the worker runs the informant's agent, vmactd opens its
 * connections (DIAL) and its servers' listening sockets (LISTEN) at
 * `listen` (informant_listen), advertised as `advertise_host`
 * (informant_advertise_host, "" or NULL: listen's host). */
int act_approver_proxy_new_informant(sd_event *event, const char *name, const char *endpoint,
				     const char *listen, const char *advertise_host,
				     const char *program, const char *user,
				     const struct act_approver_events *events, void *userdata,
				     struct act_approver **out, struct vmact_err *err);

/* Stops a proxy whose owner goes: a pending request fails now, the
 * worker is asked to finish (STOP: the informant's agent unregisters) and
 * killed if it has not within timeout_usec; done(ud) runs from the loop
 * then, and may free the approver. No owner event after this call. */
int act_approver_proxy_stop(struct act_approver *a, uint64_t timeout_usec, void (*done)(void *ud),
			    void *ud);

/* The proxy's worker process now, 0 while none runs (tests, status). */
pid_t act_approver_proxy_worker_pid(const struct act_approver *a);
