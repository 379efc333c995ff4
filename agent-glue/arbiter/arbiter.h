/* SPDX-License-Identifier: Apache-2.0 */
/* Node-local arbiter: the scheduler plugin's side of the agent protocol
 * (doc/protocols.md, "Scheduler plugin protocol") for hosts without a Kubernetes scheduler.
 *
 * It answers every protocol version 1.0 .. 5.0 with the status codes and
 * text bodies of the real plugins (doc/protocols.md, "HEAD plugin answers";
 * legacy wording below 4.0: "Legacy plugins") over a model of one node:
 *   total     = (capacity - reserve) x overcommit
 *   watermark = floor(total x watermark fraction), per resource
 * Decreases are granted at once. Increases are granted in whole compute
 * units up to the watermark (the exact remainder when the rest of the
 * request is smaller than that), CPU and memory independently
 * (doc/protocols.md, "Permit computation"); what cannot be granted is
 * recorded as pressure. When reservations exceed the
 * watermark (a pod registering at its current size, a restart restoring
 * reservations) growth is refused and the pods that would be migrated,
 * oldest first, are reported as candidates; their answers carry no
 * "migrate", since the arbiter moves nothing itself.
 *
 * Moving (doc/cluster.md, "Capacity leases"): the cluster layer marks a
 * VM it is about to move with a moving lease. From then on the pod is
 * the legacy plugins' migrating pod (doc/protocols.md, "Legacy
 * plugins"): no increase (what is asked beyond its reservation is
 * pressure), a decrease granted, "migrate": {} in its answers from 2.0 on
 * and, once one went out, 400 to any request that changes its resources.
 * Agents below 2.0 panic on "migrate": they are pinned the same way but
 * never told. The mover waits for the entry's "frozen": set by the VM's
 * owner (ag_arbiter_pod_frozen, with owner_freezes), or by the arbiter
 * itself once its agent was told or cannot be.
 *
 * An unknown pod is registered at its lastPermit (restart
 * recovery, doc/protocols.md, "Legacy plugins")
 * or, without one, at the resources it reports using; pods not heard from
 * for pod_ttl are forgotten.
 *
 * Leases (doc/cluster.md, "Capacity leases"): the cluster layer reserves
 * room for a new VM in the same ledger, under the same watermark, through
 * /v1/leases (shared/lease.h), signed with a shared key. A lease
 * is an entry like a pod's that lives until its ttl passes without a
 * renewal; when the new VM's own agent speaks for it (same namespace and
 * name), the lease was its first reservation and growth goes on from it.
 *
 * The core (ag_arbiter_handle, ag_arbiter_lease_handle) does no I/O;
 * ag_arbiter_listen() puts it on
 * an sd-event loop behind the HTTP server, so vmactd can embed it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "agent-glue/codec/plugin.h"
#include "agent-glue/codec/quantity.h"
#include "base/error.h"
#include "net/http-server.h"

struct ag_arbiter;

struct ag_arbiter_config {
	struct vmact_resources capacity; /* the host's; see ag_host_capacity() */
	struct vmact_resources reserve;  /* kept for the host itself */
	uint32_t overcommit_cpu_milli;   /* 1000 = none; 0 = 1000 */
	uint32_t overcommit_mem_milli;
	double watermark; /* (0, 1]; 0 = 0.9 */
	/* Memory slot size for versions < 4.0 (slot counts on the wire).
	 * 0 = 1 GiB, NeonVM's default memorySlotSize: agents before 4.0
	 * count memory in the slots of their VM, and the VMs of those
	 * releases had 1 GiB slots unless their spec said otherwise. */
	uint64_t slot_bytes;
#define AG_ARBITER_DEFAULT_SLOT_BYTES (1ULL << 30)
	/* Compute unit for requests < 4.0, which do not carry one; 0 fields =
	 * {250m, slot_bytes}. */
	struct vmact_resources legacy_compute_unit;
	enum ag_plugin_version min_version, max_version; /* 0 = 1.0 / 5.0 */
	uint64_t pod_ttl_usec;                           /* 0 = 60 s */
	uint64_t request_timeout_usec; /* whole HTTP request (slowloris cut); 0 = 10 s */
	/* The lease key (shared/keyfile.h), copied; NULL: no lease interface
	 * (its requests are answered 404). */
	const uint8_t *lease_key;
	size_t lease_key_len;
	/* Whoever embeds the arbiter stops the VMs itself (vmactd, whose
	 * runners freeze): only ag_arbiter_pod_frozen() sets a moving pod's
	 * "frozen". Else (vmact-arbiter, serving other agents) the pod is
	 * frozen once an answer told its agent, or at once when no live
	 * agent speaks for it or its agent is below 2.0. */
	bool owner_freezes;
};

struct ag_arbiter_totals {
	struct vmact_resources total, watermark, reserved, pressure;
	unsigned pods;
	unsigned candidates; /* select_migrations' report: would be migrated */
	unsigned migrating;  /* marked moving by a lease */
	unsigned leases;     /* entries held by a lease */
	uint64_t requests, grants_partial, refused;
};

/* One per answered request, for the boundary's logging and for tests. */
struct ag_arbiter_event {
	unsigned status;                      /* the HTTP status sent */
	const char *text;                     /* error body when status != 200 */
	const char *pod_namespace, *pod_name; /* NULL when the request did not decode */
	enum ag_plugin_version version;
	bool new_pod;
	struct vmact_resources requested, permit, pressure;
	bool candidate; /* a migration candidate: reported, never in the answer */
	bool migrate;   /* the answer carried "migrate" (the pod is moving, agent >= 2.0) */
	/* The pod is marked moving: after an answer, its mark; after a lease
	 * request (or a lease's expiry, status 200 with no text) where
	 * moving_changed, the mark it set (true) or cleared (false). */
	bool moving;
	bool moving_changed;
	bool lease; /* a request of the lease interface, or a lease's expiry */
};
typedef void ag_arbiter_event_fn(void *userdata, const struct ag_arbiter_event *ev);

int ag_arbiter_new(const struct ag_arbiter_config *cfg, struct ag_arbiter **out,
		   struct vmact_err *err);
void ag_arbiter_free(struct ag_arbiter *a);

/* fn runs before the call that emitted it returns (the request's reply
 * is made): it may call ag_arbiter_pod_frozen() and read the arbiter,
 * never change its entries otherwise. */
void ag_arbiter_on_event(struct ag_arbiter *a, ag_arbiter_event_fn *fn, void *userdata);

/* The protocol, without I/O: method and body in, reply out (the reply's
 * body is malloc()ed, as the HTTP server expects). now is CLOCK_MONOTONIC
 * in µs, for pod expiry. */
void ag_arbiter_handle(struct ag_arbiter *a, const char *method, const char *body, size_t len,
		       uint64_t now_usec, struct net_http_server_reply *reply);

/* The lease interface without I/O: a request to /v1/leases[/NS/NAME]
 * with its ts and sig query arguments (NULL when absent), at now (CLOCK_
 * MONOTONIC µs, for expiry) and now_real (Unix seconds, for the
 * signature's window). */
void ag_arbiter_lease_handle(struct ag_arbiter *a, const char *method, const char *url,
			     const char *ts, const char *sig, const char *body, size_t len,
			     uint64_t now_usec, long long now_real,
			     struct net_http_server_reply *reply);

/* Forgets pods not heard from for pod_ttl and leases not renewed within
 * their ttl; returns how many entries went. */
unsigned ag_arbiter_expire(struct ag_arbiter *a, uint64_t now_usec);

void ag_arbiter_totals(const struct ag_arbiter *a, struct ag_arbiter_totals *t);
/* The migration candidates (not the pods marked moving), oldest first;
 * fn is called per pod. */
void ag_arbiter_migration_candidates(const struct ag_arbiter *a,
				     void (*fn)(void *ud, const char *ns, const char *name,
						const struct vmact_resources *reserved),
				     void *userdata);
/* A pod's current reservation; -ENOENT when unknown. */
int ag_arbiter_pod(const struct ag_arbiter *a, const char *ns, const char *name,
		   struct vmact_resources *reserved, struct vmact_resources *pressure);
struct vmact_lease_pod;
/* A pod's entry as GET /v1/leases/NS/NAME shows it (shared/lease.h), at
 * now (CLOCK_MONOTONIC µs: is its agent live); -ENOENT when unknown. */
int ag_arbiter_pod_entry(const struct ag_arbiter *a, const char *ns, const char *name,
			 uint64_t now_usec, struct vmact_lease_pod *out);
/* The owner (owner_freezes) says whether nothing resizes a moving pod's
 * VM any more; ignored (false) while the pod is not marked moving.
 * -ENOENT when unknown. Emits nothing: callable from an event callback. */
int ag_arbiter_pod_frozen(struct ag_arbiter *a, const char *ns, const char *name, bool frozen);
/* The pod's agent is gone (its VM stopped or left the host): its hold
 * and pressure go, and the entry with them unless a lease holds it (then
 * the lease's reservation, and any moving mark, stay until its release
 * or expiry). Unknown pods are ignored. Emits nothing. */
void ag_arbiter_forget(struct ag_arbiter *a, const char *ns, const char *name);

/* Puts the arbiter on the loop: idle pods expire. */
int ag_arbiter_attach(struct ag_arbiter *a, sd_event *ev, struct vmact_err *err);
/* The protocol in-process, for ag_plugin_client_new_local(): a POST of
 * body, answered at the loop's time (attach first). */
void ag_arbiter_local(void *userdata, const char *body, size_t len,
		      struct net_http_server_reply *reply);

/* Serves the protocol on the loop (1 KiB body limit answered "bad JSON",
 * slow requests cut after request_timeout) and expires idle pods. listen is
 * "ADDR:PORT" or "unix:PATH". One listener per arbiter. */
int ag_arbiter_listen(struct ag_arbiter *a, sd_event *ev, const char *listen,
		      struct vmact_err *err);
unsigned ag_arbiter_port(const struct ag_arbiter *a);

/* The host's CPUs (online) and RAM (MemTotal). */
int ag_host_capacity(struct vmact_resources *out, struct vmact_err *err);
