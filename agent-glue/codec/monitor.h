/* SPDX-License-Identifier: Apache-2.0 */
/* Agent <-> vm-monitor protocol v1.0 codec (doc/protocols.md, "vm-monitor protocol").
 *
 * The two directions use different envelopes: the agent sends adjacently
 * tagged frames {"content":{...},"type":T,"id":N}; the monitor answers with
 * flat frames {"type":T, <payload fields>, "id":N}. This codec encodes the
 * agent's side and decodes the monitor's side the way the Go agent does:
 * "type" and "id" are read from a generic map (exact key names, id as a
 * float64 truncated to uint64), then the payload fields are matched
 * case-insensitively like encoding/json (so "Ok"/"ok" both work, last key
 * wins). Unlike Go, payload fields that are absent, null or ill-typed are
 * errors naming the field: no silent zero values. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-glue/codec/quantity.h"
#include "base/error.h"

#define AG_MON_PROTO_V1_0 1u
/* Default TCP port and path of the vm-monitor's websocket. */
#define AG_MON_DEFAULT_PORT 10301
#define AG_MON_PATH         "/monitor"

enum ag_mon_type {
	AG_MON_UNKNOWN = 0,          /* a type the agent does not handle: answer InvalidMessage */
	AG_MON_DOWNSCALE_REQUEST,    /* A->M content {"target": Allocation} */
	AG_MON_UPSCALE_NOTIFICATION, /* A->M content {"granted": Allocation} */
	AG_MON_HEALTH_CHECK,         /* both directions, no payload */
	AG_MON_UPSCALE_REQUEST,      /* M->A, no payload, never answered */
	AG_MON_UPSCALE_CONFIRMATION, /* M->A, no payload */
	AG_MON_DOWNSCALE_RESULT,     /* M->A "Ok": bool, "Status": string */
	AG_MON_INVALID_MESSAGE,      /* both, "error": string */
	AG_MON_INTERNAL_ERROR,       /* both, "error": string */
};

struct ag_mon_msg {
	enum ag_mon_type type;
	uint64_t id;
	/* DownscaleRequest target / UpscaleNotification granted. */
	struct vmact_resources alloc;
	/* DownscaleResult. */
	bool ok;
	char *status;
	/* InvalidMessage / InternalError text. */
	char *error;
	/* Decoded frames: the "type" string as received (also for unknown). */
	char *type_name;
};

/* The wire name of a known type; NULL for AG_MON_UNKNOWN/out of range. */
const char *ag_mon_type_name(enum ag_mon_type t);

void ag_mon_msg_clear(struct ag_mon_msg *m);

/* Version negotiation, first frame of the agent: {"min":MIN,"max":MAX}. */
json_t *ag_mon_version_range_encode(uint32_t min, uint32_t max);
/* The monitor's answer: {"version":N} -> *version; {"error":"..."} or a
 * version outside [1,1] -> -EPROTO with the monitor's text in err; a body
 * that is not such an object -> -EBADMSG. */
int ag_mon_version_response_decode(const json_t *v, uint32_t *version, struct vmact_err *err);

/* Agent -> monitor frame. Only the types the agent may send are accepted
 * (DownscaleRequest, UpscaleNotification, HealthCheck, InvalidMessage,
 * InternalError); anything else is -EINVAL. NULL-returning variant fills
 * err. Allocation.cpu is a float of vCPUs (an integer when whole, as Go
 * prints it) and mem an integer of bytes. */
json_t *ag_mon_encode(const struct ag_mon_msg *m, struct vmact_err *err);
/* Same, as compact text with the shortest round-tripping float for cpu
 * (Go's float64 formatting), NUL-terminated, caller frees. */
char *ag_mon_encode_text(const struct ag_mon_msg *m, struct vmact_err *err);

/* Monitor -> agent frame. On success fills *out (caller clears it).
 * Errors:
 *  -EBADMSG: not an object, or "type"/"id" missing or ill-typed. The Go
 *            agent treats this as a fatal connection error without reply.
 *  -EINVAL:  a known type whose payload fields are missing or ill-typed;
 *            out->type, out->id and out->type_name are filled so the caller
 *            can answer InvalidMessage with the same id.
 *  -ENOMEM. */
int ag_mon_decode(const json_t *frame, struct ag_mon_msg *out, struct vmact_err *err);
/* Parses text first; text that is not JSON is -EBADMSG. */
int ag_mon_decode_text(const char *buf, size_t len, struct ag_mon_msg *out, struct vmact_err *err);

/* Transaction ids: the agent's own requests are even, from 2; the
 * monitor's are odd, from 3. *counter starts at 0. */
uint64_t ag_mon_next_agent_id(uint64_t *counter);
static inline bool ag_mon_id_is_agent(uint64_t id)
{
	return id % 2 == 0;
}
static inline bool ag_mon_id_is_monitor(uint64_t id)
{
	return id % 2 == 1;
}
