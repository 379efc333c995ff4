/* SPDX-License-Identifier: Apache-2.0 */
/* The resource pair every part of vmact speaks in: CPU in milli-CPUs,
 * memory in bytes (internal units everywhere), with the per-field
 * arithmetic of Go's Resources methods that the policy and the arbiter
 * share. Pure. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct vmact_resources {
	uint32_t milli_cpu;
	uint64_t mem_bytes;
};

/* Some field of a above (below) b's. */
bool vmact_res_any_gt(struct vmact_resources a, struct vmact_resources b);
bool vmact_res_any_lt(struct vmact_resources a, struct vmact_resources b);
bool vmact_res_eq(struct vmact_resources a, struct vmact_resources b);
struct vmact_resources vmact_res_max(struct vmact_resources a, struct vmact_resources b);
struct vmact_resources vmact_res_min(struct vmact_resources a, struct vmact_resources b);
/* cu × n, saturating instead of wrapping. */
struct vmact_resources vmact_res_mul(struct vmact_resources cu, uint64_t n);
