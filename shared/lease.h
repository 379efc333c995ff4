/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter's lease protocol (prefix vmact_lease_; doc/cluster.md,
 * "Capacity leases"): how the cluster layer reserves a host's capacity
 * for a new VM in the same ledger as the arbiter's permits to VMs that
 * grow. Pure: the messages and their signature, no I/O.
 *
 *   POST   /v1/leases                 {"namespace","name","milli_cpu","memory_bytes",
 *                                      "ttl_s","existing","moving"}  -> 200 a lease,
 *                                      409 no room
 *   DELETE /v1/leases/NAMESPACE/NAME  -> 200 {"released": true|false}
 *   GET    /v1/leases/NAMESPACE/NAME  -> 200 the entry (struct vmact_lease_pod),
 *                                      404 {"error":"no such pod"}
 *   GET    /v1/leases                 -> 200 the ledger
 *
 * "moving" (optional, default false) marks the VM as being moved away
 * from the host (doc/cluster.md, "Capacity leases"): from then on its
 * agent's answers stay at its reservation and carry "migrate", and its
 * autoscaler stops resizing it; the entry's "frozen" says when it has
 * (the mover waits for it before it moves the VM). A POST without it, or
 * the lease's release or expiry, clears the mark. It is written only when
 * true, so an arbiter that predates it never sees it.
 *
 * Authentication: every request carries ?ts=UNIX_SECONDS&sig=HEX, the
 * HMAC-SHA256 under a shared key of "METHOD\nPATH\nTS\nBODY" (nettle).
 * The arbiter refuses a signature that does not match (compared in
 * constant time) or a ts more than VMACT_LEASE_WINDOW_S from its clock. A
 * replay inside the window repeats an idempotent request (a lease is
 * named; a release of a released lease does nothing). The key is a file
 * only root and the cluster layer's user can read (shared/keyfile.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/error.h"
#include "base/resources.h"

#define VMACT_LEASE_WINDOW_S  60
#define VMACT_LEASE_SIG_HEX   64
#define VMACT_LEASE_NAME_MAX  63
#define VMACT_LEASE_TTL_MAX_S 86400

/* out gets VMACT_LEASE_SIG_HEX hex digits and a NUL. */
void vmact_lease_sign(const uint8_t *key, size_t key_len, const char *method, const char *path,
		      long long ts, const char *body, size_t body_len, char *out);
/* Checks ts (decimal text) and sig against the request at time now; -EACCES
 * with the reason. */
int vmact_lease_verify(const uint8_t *key, size_t key_len, const char *method, const char *path,
		       const char *ts, const char *sig, const char *body, size_t body_len,
		       long long now, struct vmact_err *err);

struct vmact_lease_request {
	char ns[VMACT_LEASE_NAME_MAX + 1];
	char name[VMACT_LEASE_NAME_MAX + 1];
	struct vmact_resources size;
	uint32_t ttl_s;
	/* The VM runs already (a restarted cluster layer re-leasing it):
	 * recorded even above the watermark, as the arbiter records a pod
	 * registering at its size. */
	bool existing;
	/* The VM is being moved away: see "moving" above. */
	bool moving;
};

/* malloc'd JSON text. */
char *vmact_lease_request_encode(const struct vmact_lease_request *r);
/* -EINVAL naming the field; len (size_t)-1: body is NUL-terminated. */
int vmact_lease_request_decode(const char *body, size_t len, struct vmact_lease_request *r,
			       struct vmact_err *err);

/* A host's ledger as GET /v1/leases answers it. */
struct vmact_lease_ledger {
	struct vmact_resources total, watermark, reserved, pressure;
	unsigned pods, leases;
};
json_t *vmact_lease_ledger_encode(const struct vmact_lease_ledger *l);
/* Every member required: -EPROTO naming it ("reserved: milli_cpu: missing"). */
int vmact_lease_ledger_decode(const json_t *j, struct vmact_lease_ledger *l, struct vmact_err *err);

/* One entry of a host's ledger as GET /v1/leases/NS/NAME answers it:
 * its reservation and the growth it was refused, whether its agent spoke
 * for it within the arbiter's pod ttl and whether a lease holds it, and
 * the moving mark with its "frozen" (nothing resizes the VM any more). */
struct vmact_lease_pod {
	char ns[VMACT_LEASE_NAME_MAX + 1];
	char name[VMACT_LEASE_NAME_MAX + 1];
	struct vmact_resources size, pressure;
	bool agent, leased, moving, frozen;
};
json_t *vmact_lease_pod_encode(const struct vmact_lease_pod *p);
/* Every member required: -EPROTO naming it ("pressure: memory_bytes:
 * missing", "frozen: missing"); a namespace or name that is not one
 * (vmact_lease_name_valid) is -EPROTO too. */
int vmact_lease_pod_decode(const json_t *j, struct vmact_lease_pod *p, struct vmact_err *err);

/* A namespace or name as Kubernetes allows one (DNS label characters,
 * '.' too), so that it is also one URL path segment. */
bool vmact_lease_name_valid(const char *s);
