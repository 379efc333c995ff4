/* SPDX-License-Identifier: Apache-2.0 */
/* One libvirt host of the cluster layer (prefix cl_host_): its libvirt
 * connection by URI, and its arbiter's lease interface, the host's one
 * ledger of capacity (shared/lease.h).
 *
 * Everything here blocks (a connection, an HTTP request) and is safe from
 * several threads at once: it runs in the engine's jobs, never on its
 * loop. The last outcome (reachable or why not) is kept for the loop to
 * read (cl_host_status). */
#pragma once

#include <libvirt/libvirt.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "cluster/config/config.h"
#include "shared/lease.h"

struct cl_host;

/* Reads the lease key; connects nothing yet. */
int cl_host_new(const struct cl_host_cfg *cfg, struct cl_host **out, struct vmact_err *err);
void cl_host_free(struct cl_host *h);
const char *cl_host_name(const struct cl_host *h);
const struct cl_host_cfg *cl_host_cfg(const struct cl_host *h);

/* The host's connection (opened, or opened again after it died), with a
 * reference of the caller's: virConnectClose it. NULL with the reason
 * when libvirt on the host cannot be reached. */
virConnectPtr cl_host_conn(struct cl_host *h, struct vmact_err *err);

/* Reserves size for ns/name for ttl (0 when reserved; -EBUSY when the
 * arbiter has no room: err says what is free; -EACCES when it refused
 * the signature; -EIO when it could not be reached or answered nonsense).
 * existing: record it whatever the room (a running VM). */
int cl_host_lease(struct cl_host *h, const char *ns, const char *name, struct vmact_resources size,
		  uint64_t ttl_usec, bool existing, struct vmact_err *err);
/* Marks (moving) or unmarks the running VM ns/name as being moved away
 * (doc/cluster.md, "Live migration"): a lease recording it at size
 * whatever the room, with the arbiter's answers to its agent carrying
 * Migrate and no growth while marked. Errors as cl_host_lease. */
int cl_host_mark_moving(struct cl_host *h, const char *ns, const char *name,
			struct vmact_resources size, uint64_t ttl_usec, bool moving,
			struct vmact_err *err);
/* The arbiter's entry for ns/name (its reservation, whether it is marked
 * moving and frozen); -ENOENT when it has none, -EIO, -EACCES. */
int cl_host_pod(struct cl_host *h, const char *ns, const char *name, struct vmact_lease_pod *out,
		struct vmact_err *err);
/* Ends a lease; a lease the arbiter does not know is no error. */
int cl_host_release(struct cl_host *h, const char *ns, const char *name, struct vmact_err *err);
/* The ledger's totals. */
int cl_host_ledger(struct cl_host *h, struct vmact_lease_ledger *out, struct vmact_err *err);

/* Drained (doc/cluster.md, "Draining a host"): nothing new is placed or
 * moved there. Safe from any thread. */
void cl_host_set_draining(struct cl_host *h, bool draining);
bool cl_host_draining(struct cl_host *h);

struct cl_host_status {
	bool libvirt_ok, arbiter_ok;
	char libvirt_err[VMACT_ERR_MSG_MAX], arbiter_err[VMACT_ERR_MSG_MAX];
	bool have_ledger;
	struct vmact_lease_ledger ledger; /* the last one read */
};
void cl_host_status(struct cl_host *h, struct cl_host_status *out);

/* libvirt's own event loop in a thread of its own, for connection
 * keepalives and console streams: once per process, before any
 * connection. */
int cl_host_event_loop_start(struct vmact_err *err);
