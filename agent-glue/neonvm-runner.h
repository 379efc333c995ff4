/* SPDX-License-Identifier: Apache-2.0 */
/* neonvm-runner HTTP API bodies (doc/protocols.md, "Runner CPU API"): VCPUChange, the
 * body of POST /cpu_change, and VCPUCgroup, the answer of GET /cpu_current.
 * Both are a single Go field `VCPUs MilliCPU` without a json tag, so the key
 * is literally "VCPUs" (any case decodes) and the value uses the MilliCPU
 * encoding (doc/protocols.md, "Quantities"). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* {"VCPUs": <MilliCPU>}; NULL on allocation failure. */
json_t *ag_neonvm_runner_vcpu_change_encode(uint32_t milli_cpu);
int ag_neonvm_runner_vcpu_change_decode(const json_t *v, uint32_t *milli_cpu, struct vmact_err *err);
/* VCPUCgroup has the same shape. */
json_t *ag_neonvm_runner_vcpu_cgroup_encode(uint32_t milli_cpu);
int ag_neonvm_runner_vcpu_cgroup_decode(const json_t *v, uint32_t *milli_cpu, struct vmact_err *err);

/* Retired runner protocol label vm.neon.tech/runner-version (v0.7-v0.48):
 * "1" = RunnerProtoV1, the first with fractional CPU via cgroups. Parses the
 * label's value (decimal, 1..UINT32_MAX; 0 and garbage are errors). */
#define AG_NEONVM_RUNNER_PROTO_V1 1u
int ag_neonvm_runner_version_parse(const char *label, uint32_t *out, struct vmact_err *err);
static inline bool ag_neonvm_runner_supports_cgroup_fractional_cpu(uint32_t v)
{
	return v >= AG_NEONVM_RUNNER_PROTO_V1;
}
