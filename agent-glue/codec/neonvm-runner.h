/* SPDX-License-Identifier: Apache-2.0 */
/* neonvm-runner HTTP API bodies (doc/protocols.md, "Runner CPU API"): VCPUChange, the
 * body of POST /cpu_change, and VCPUCgroup, the answer of GET /cpu_current.
 * Both are a single Go field `VCPUs MilliCPU` without a json tag, so the key
 * is literally "VCPUs" (any case decodes) and the value uses the MilliCPU
 * encoding (doc/protocols.md, "Quantities"). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* {"VCPUs": <MilliCPU>}; NULL on allocation failure. */
json_t *ag_neonvm_runner_vcpu_change_encode(uint32_t milli_cpu);
int ag_neonvm_runner_vcpu_change_decode(const json_t *v, uint32_t *milli_cpu,
					struct vmact_err *err);
/* VCPUCgroup has the same shape. */
json_t *ag_neonvm_runner_vcpu_cgroup_encode(uint32_t milli_cpu);
int ag_neonvm_runner_vcpu_cgroup_decode(const json_t *v, uint32_t *milli_cpu,
					struct vmact_err *err);

/* The runner's HTTP server (doc/runner-api.md): which handler a request
 * reaches. Paths match exactly (as Go's ServeMux patterns without a
 * trailing slash); a known path with another method is the runner's 400,
 * an unknown path its mux's 404. */
enum ag_runner_route {
	AG_RUNNER_CPU_CHANGE,  /* POST /cpu_change */
	AG_RUNNER_CPU_CURRENT, /* GET /cpu_current */
	AG_RUNNER_READY,       /* /ready, any method */
	AG_RUNNER_BAD_METHOD,  /* /cpu_change or /cpu_current, another method: 400 */
	AG_RUNNER_NOT_FOUND,   /* anything else: 404 */
};
enum ag_runner_route ag_neonvm_runner_route(const char *method, const char *path);

/* The runner's answers: 400 for a request it cannot read (wrong method,
 * unreadable body, bad JSON), 500 when the change or the reading fails,
 * 404 with Go's text for an unknown path. */
#define AG_RUNNER_STATUS_BAD_REQUEST 400u
#define AG_RUNNER_STATUS_FAILED      500u
#define AG_RUNNER_STATUS_NOT_FOUND   404u
#define AG_RUNNER_NOT_FOUND_BODY     "404 page not found\n"

/* The body of POST /cpu_change as it arrives (JSON text, not
 * NUL-terminated). -EINVAL naming what is wrong: not JSON, not an object,
 * no "VCPUs", a value that is no MilliCPU. (The Go runner would take a
 * missing VCPUs as 0, below any VM's minimum: refused either way.) */
int ag_neonvm_runner_change_parse(const char *body, size_t len, uint32_t *milli_cpu,
				  struct vmact_err *err);
/* The body of GET /cpu_current's answer: malloc()ed JSON text, *len its
 * length; NULL on allocation failure. */
char *ag_neonvm_runner_cgroup_dump(uint32_t milli_cpu, size_t *len);

/* Retired runner protocol label vm.neon.tech/runner-version (v0.7-v0.48):
 * "1" = RunnerProtoV1, the first with fractional CPU via cgroups. Parses the
 * label's value (decimal, 1..UINT32_MAX; 0 and garbage are errors). */
#define AG_NEONVM_RUNNER_PROTO_V1 1u
int ag_neonvm_runner_version_parse(const char *label, uint32_t *out, struct vmact_err *err);
static inline bool ag_neonvm_runner_supports_cgroup_fractional_cpu(uint32_t v)
{
	return v >= AG_NEONVM_RUNNER_PROTO_V1;
}
