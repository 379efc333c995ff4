/* SPDX-License-Identifier: Apache-2.0 */
/* Codecs of the retired agent <-> VM informant HTTP protocol v1.0-v2.0
 * (doc/protocols.md, "Informant protocol"). Decoders follow Go's encoding/json as the real
 * peers use it: keys match case-insensitively, unknown keys are ignored,
 * but every field the type has must be present and well-typed: nothing is
 * silently defaulted, and errors name the offending field. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-glue/codec/quantity.h"
#include "base/error.h"

/* InformantProtoVersion wire values (iota + 1; 0 is invalid). */
enum ag_inf_version {
	AG_INF_V1_0 = 1,
	AG_INF_V1_1 = 2, /* agent gains POST /try-upscale */
	AG_INF_V1_2 = 3, /* informant gains PUT /health-check */
	AG_INF_V2_0 = 4, /* up/downscale bodies become AgentResourceMessage */
};
#define AG_INF_VERSION_MIN AG_INF_V1_0
#define AG_INF_VERSION_MAX AG_INF_V2_0

/* "1.0".."2.0", or NULL for a value outside the known range. */
const char *ag_inf_version_name(uint32_t v);
/* Inverse of ag_inf_version_name; -EINVAL for anything else. */
int ag_inf_version_parse(const char *s, uint32_t *out, struct vmact_err *err);
static inline bool ag_inf_has_try_upscale(uint32_t v)
{
	return v >= AG_INF_V1_1;
}
static inline bool ag_inf_has_health_check(uint32_t v)
{
	return v >= AG_INF_V1_2;
}
static inline bool ag_inf_signed_resources(uint32_t v)
{
	return v >= AG_INF_V2_0;
}

/* The informant side of negotiation: min(agent_max, informant_max) when the
 * ranges overlap, else -EPROTO with a message naming both ranges. Ranges
 * with min > max or outside the known versions are -EINVAL. */
int ag_inf_negotiate(uint32_t agent_min, uint32_t agent_max, uint32_t inf_min, uint32_t inf_max,
		     uint32_t *out, struct vmact_err *err);

/* Agent IDs are uuid.UUID on the Go side: decoding accepts the forms Go's
 * uuid.Parse accepts (canonical 36 chars, {braced}, urn:uuid:, 32 hex
 * digits) and yields the canonical lower-case 36-character text; anything
 * else is rejected. */
#define AG_INF_ID_MAX 37
/* Canonicalises s into out (0) or -EINVAL. */
int ag_inf_uuid_parse(const char *s, char out[AG_INF_ID_MAX]);
/* A fresh random (v4) UUID from getrandom(2). */
int ag_inf_uuid_new(char out[AG_INF_ID_MAX], struct vmact_err *err);
/* "host:port"; IPv6 hosts are bracketed. */
#define AG_INF_ADDR_MAX 128

struct ag_agent_desc {
	char agent_id[AG_INF_ID_MAX];
	char serve_addr[AG_INF_ADDR_MAX];
	uint32_t min_version;
	uint32_t max_version;
};
json_t *ag_agent_desc_encode(const struct ag_agent_desc *d);
/* Validates the range itself (1 <= min <= max); whether it overlaps the
 * informant's range is ag_inf_negotiate's business. */
int ag_agent_desc_decode(const json_t *v, struct ag_agent_desc *out, struct vmact_err *err);

struct ag_informant_desc {
	uint32_t version;
	/* The only metrics method the protocol defines. */
	bool has_prometheus;
	uint16_t prometheus_port;
};
json_t *ag_informant_desc_encode(const struct ag_informant_desc *d);
/* Decodes and validates as the agent does after /register: the version must
 * lie in [agent_min, agent_max] and at least one metrics method must be
 * present. */
int ag_informant_desc_decode(const json_t *v, uint32_t agent_min, uint32_t agent_max,
			     struct ag_informant_desc *out, struct vmact_err *err);

/* AgentIdentification {"agentID": "<uuid>"}. */
json_t *ag_agent_id_encode(const char *agent_id);
int ag_agent_id_decode(const json_t *v, char out[AG_INF_ID_MAX], struct vmact_err *err);

/* AgentMessage[T] {"data": T, "sequenceNumber": N}. encode steals data (it
 * is released even on failure). decode returns a borrowed reference to
 * data inside v. */
json_t *ag_agent_message_encode(json_t *data, uint64_t seq);
int ag_agent_message_decode(const json_t *v, const json_t **data, uint64_t *seq,
			    struct vmact_err *err);

/* AgentMessage[AgentIdentification], the answer of every agent endpoint. */
json_t *ag_agent_id_message_encode(const char *agent_id, uint64_t seq);
int ag_agent_id_message_decode(const json_t *v, char out[AG_INF_ID_MAX], uint64_t *seq,
			       struct vmact_err *err);

/* RawResources {"cpu": "<quantity>", "memory": "<quantity>"}: cpu as a
 * milli quantity ("250m", "1"), memory as BinarySI bytes ("4Gi"). Decode
 * accepts a quantity string or a number for each (as resource.Quantity
 * does), ceil semantics. */
json_t *ag_raw_resources_encode(const struct vmact_resources *r);
int ag_raw_resources_decode(const json_t *v, struct vmact_resources *out, struct vmact_err *err);

/* v2.0 AgentResourceMessage:
 * {"data": {"cpu": ..., "memory": ..., "id": {"agentID": ...}}, "sequenceNumber": N}. */
json_t *ag_resource_message_encode(const struct vmact_resources *r, const char *agent_id,
				   uint64_t seq);
int ag_resource_message_decode(const json_t *v, struct vmact_resources *out,
			       char agent_id[AG_INF_ID_MAX], uint64_t *seq, struct vmact_err *err);

/* MoreResourcesRequest {"cpu": bool, "memory": bool, "expectedID": ...}. */
struct ag_more_resources {
	bool cpu;
	bool memory;
	char expected_id[AG_INF_ID_MAX];
};
json_t *ag_more_resources_encode(const struct ag_more_resources *m);
int ag_more_resources_decode(const json_t *v, struct ag_more_resources *out, struct vmact_err *err);

/* SuspendAgent / ResumeAgent {"expectedID": ...} (same shape). */
json_t *ag_expected_id_encode(const char *expected_id);
int ag_expected_id_decode(const json_t *v, char out[AG_INF_ID_MAX], struct vmact_err *err);

/* UnregisterAgent {"wasActive": bool}. */
json_t *ag_unregister_encode(bool was_active);
int ag_unregister_decode(const json_t *v, bool *was_active, struct vmact_err *err);

/* DownscaleResult {"Ok": bool, "Status": string} (no json tags in Go, hence
 * the capitals; any case decodes). */
#define AG_INF_STATUS_MAX 1024
struct ag_downscale_result {
	bool ok;
	char status[AG_INF_STATUS_MAX]; /* truncated if longer */
};
json_t *ag_downscale_result_encode(const struct ag_downscale_result *r);
int ag_downscale_result_decode(const json_t *v, struct ag_downscale_result *out,
			       struct vmact_err *err);

/* The empty-object bodies ({} for GET /id, the /upscale and /health-check
 * answers): any JSON object is accepted, like Go decoding into struct{}. */
int ag_inf_empty_decode(const json_t *v, struct vmact_err *err);

/* Parses an HTTP body as one JSON value: rejects trailing garbage, NUL
 * bytes, duplicate keys; err names the position. */
int ag_inf_parse_body(const char *buf, size_t len, json_t **out, struct vmact_err *err);
/* Compact serialisation for a body; NULL on allocation failure. */
char *ag_inf_dump(const json_t *v);
