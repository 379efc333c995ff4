/* SPDX-License-Identifier: Apache-2.0 */
/* Agent <-> scheduler plugin codec (doc/protocols.md, "Scheduler plugin protocol"), every protocol
 * version 1.0 .. 5.0, both directions: the agent encodes AgentRequest and
 * decodes PluginResponse; the node-local arbiter does the reverse.
 *
 * Internal units are always milli-CPU and bytes. Versions < 4.0 carry
 * memory as slot counts, so every codec call takes the VM's slot size
 * (ignored from 4.0). Decoders are strict: a malformed field is an error
 * naming its path, never a default. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-glue/codec/quantity.h"
#include "base/error.h"

/* Ordinal wire values (doc/protocols.md, "Wire version numbers"): v5.0 is 7 on the wire. */
enum ag_plugin_version {
	AG_PLUGIN_V1_0 = 1,
	AG_PLUGIN_V1_1 = 2,
	AG_PLUGIN_V2_0 = 3,
	AG_PLUGIN_V2_1 = 4,
	AG_PLUGIN_V3_0 = 5,
	AG_PLUGIN_V4_0 = 6,
	AG_PLUGIN_V5_0 = 7,
};
#define AG_PLUGIN_VERSION_MIN AG_PLUGIN_V1_0
#define AG_PLUGIN_VERSION_MAX AG_PLUGIN_V5_0

#define AG_PLUGIN_DEFAULT_PORT 10299
/* The plugin reads at most this much of a request body (doc/protocols.md, "Plugin transport"). */
#define AG_PLUGIN_MAX_BODY 1024
/* Longest namespace / pod name the codec carries. k8s allows 63 / 253,
 * but vmact names pods after libvirt domains, which may be longer; the
 * real bound is the 1 KiB body, checked when a request is sent. */
#define AG_PLUGIN_NAME_MAX 1023

bool ag_plugin_version_valid(int v);
/* "1.0" .. "5.0" (a leading 'v' is accepted). */
int ag_plugin_version_parse(const char *s, enum ag_plugin_version *out, struct vmact_err *err);
/* "1.0" .. "5.0" for valid versions, "?" otherwise. */
const char *ag_plugin_version_format(int v);
/* The Go String() used in the plugin's error texts: "v5.0",
 * "<invalid: zero>", "<unknown = v5.0 + 2>". Returns buf. */
const char *ag_plugin_version_string(long long v, char *buf, size_t len);

/* Version gates, named after the Go helpers (doc/protocols.md, "Plugin versions"). */
bool ag_plugin_allows_nil_metrics(enum ag_plugin_version v);        /* >= 1.1 */
bool ag_plugin_supports_fractional_cpu(enum ag_plugin_version v);   /* >= 2.0 */
bool ag_plugin_sends_last_permit(enum ag_plugin_version v);         /* >= 2.1 */
bool ag_plugin_plugin_sends_compute_unit(enum ag_plugin_version v); /* <  3.0 */
bool ag_plugin_agent_sends_compute_unit(enum ag_plugin_version v);  /* >= 4.0 */
bool ag_plugin_memory_as_bytes(enum ag_plugin_version v);           /* >= 4.0 */
bool ag_plugin_includes_extended_metrics(enum ag_plugin_version v); /* <  5.0 */
/* What the agents of each version's era sent and handled (doc/protocols.md,
 * "What each era's agents sent"), beyond the Go helpers: memoryUsageBytes
 * came with v0.13.0, inside 2.0, and went with 5.0; agents below 2.0 panic
 * (v0.1.8 .. v0.5.1) on a response that carries "migrate". */
bool ag_plugin_sends_memory_usage(enum ag_plugin_version v);  /* 2.0 .. 4.0 */
bool ag_plugin_agent_takes_migrate(enum ag_plugin_version v); /* >= 2.0 */

/* float32 on the wire, as the Go agent keeps them. A key a request lacks
 * decodes as 0, as Go's decoder leaves it. */
struct ag_plugin_metrics {
	float load_avg_1m;
	float load_avg_5m;        /* sent for versions < 5.0 only */
	float memory_usage_bytes; /* sent for versions 2.0 .. 4.0 only */
};

struct ag_agent_request {
	enum ag_plugin_version version;
	char pod_namespace[AG_PLUGIN_NAME_MAX + 1];
	char pod_name[AG_PLUGIN_NAME_MAX + 1];
	bool has_compute_unit; /* required on the wire from 4.0 */
	struct vmact_resources compute_unit;
	struct vmact_resources resources;
	bool has_last_permit; /* false encodes null (from 2.1) */
	struct vmact_resources last_permit;
	bool has_metrics; /* false encodes null (from 1.1) */
	struct ag_plugin_metrics metrics;
};

struct ag_plugin_response {
	struct vmact_resources permit;
	bool migrate;
	bool has_resource_unit; /* "resourceUnit", versions < 3.0 */
	struct vmact_resources resource_unit;
};

/* Resources {"vCPUs", "mem"} in a version's units. slot_bytes is needed
 * below 4.0 (memory must be a whole number of slots); whole CPUs below
 * 2.0. */
json_t *ag_plugin_resources_encode(enum ag_plugin_version v, const struct vmact_resources *r,
				   uint64_t slot_bytes, struct vmact_err *err);
int ag_plugin_resources_decode(enum ag_plugin_version v, const json_t *j, uint64_t slot_bytes,
			       struct vmact_resources *out, struct vmact_err *err);

/* AgentRequest. Encode returns a new reference (NULL + err on error). */
json_t *ag_agent_request_encode(const struct ag_agent_request *r, uint64_t slot_bytes,
				struct vmact_err *err);
/* Decodes a request (the arbiter's side). The protoVersion must be a
 * valid 1..7 first (the arbiter checks and words that error itself, see
 * ag_agent_request_peek_version). Every key any era's agents sent is read
 * at every version and unknown keys are ignored, as Go's decoder does in
 * Neon's plugins; refused are wrong types and ranges and what a version
 * forbids. Distinct codes for the two errors the legacy plugins word
 * specially: -EDOM fractional CPU below 2.0, -ENODATA null metrics in 1.0;
 * other malformed input is -EINVAL/-ERANGE, with a message naming the key. */
int ag_agent_request_decode(const json_t *j, uint64_t slot_bytes, struct ag_agent_request *out,
			    struct vmact_err *err);
/* Reads only "protoVersion": 0 when absent (Go's zero value), -EINVAL when
 * it is not an integer. Any integer is returned as is, range unchecked. */
int ag_agent_request_peek_version(const json_t *j, long long *out, struct vmact_err *err);

/* PluginResponse. "migrate" is written only where r->migrate is set and
 * the version's agents take it (ag_plugin_agent_takes_migrate). */
json_t *ag_plugin_response_encode(enum ag_plugin_version v, const struct ag_plugin_response *r,
				  uint64_t slot_bytes, struct vmact_err *err);
int ag_plugin_response_decode(enum ag_plugin_version v, const json_t *j, uint64_t slot_bytes,
			      struct ag_plugin_response *out, struct vmact_err *err);

/* Serialises a message built by the encoders above: compact, with float32
 * metrics printed in their shortest round-trip form (0.37 stays 0.37).
 * Returns a malloc()ed string or NULL. */
char *ag_plugin_dumps(const json_t *msg);

/* What the agent checks before accepting a permit (doc/protocols.md,
 * "Permit checks"): no zero field, no field above what was requested, no
 * field below current usage. */
int ag_plugin_permit_validate(const struct vmact_resources *permit,
			      const struct vmact_resources *requested,
			      const struct vmact_resources *current, struct vmact_err *err);

/* float32 -> the double whose shortest decimal form is the float32's
 * shortest round-trip form (what Go's encoder prints for a float32). */
double ag_plugin_float32_wire(float f);
