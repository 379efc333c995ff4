/* SPDX-License-Identifier: Apache-2.0 */
#include "base/resources.h"

bool vmact_res_any_gt(struct vmact_resources a, struct vmact_resources b)
{
	return a.milli_cpu > b.milli_cpu || a.mem_bytes > b.mem_bytes;
}

bool vmact_res_any_lt(struct vmact_resources a, struct vmact_resources b)
{
	return vmact_res_any_gt(b, a);
}

bool vmact_res_eq(struct vmact_resources a, struct vmact_resources b)
{
	return a.milli_cpu == b.milli_cpu && a.mem_bytes == b.mem_bytes;
}

struct vmact_resources vmact_res_max(struct vmact_resources a, struct vmact_resources b)
{
	return (struct vmact_resources){
		.milli_cpu = a.milli_cpu > b.milli_cpu ? a.milli_cpu : b.milli_cpu,
		.mem_bytes = a.mem_bytes > b.mem_bytes ? a.mem_bytes : b.mem_bytes,
	};
}

struct vmact_resources vmact_res_min(struct vmact_resources a, struct vmact_resources b)
{
	return (struct vmact_resources){
		.milli_cpu = a.milli_cpu < b.milli_cpu ? a.milli_cpu : b.milli_cpu,
		.mem_bytes = a.mem_bytes < b.mem_bytes ? a.mem_bytes : b.mem_bytes,
	};
}

struct vmact_resources vmact_res_mul(struct vmact_resources cu, uint64_t n)
{
	struct vmact_resources r;
	uint64_t cpu;

	if (__builtin_mul_overflow((uint64_t)cu.milli_cpu, n, &cpu) || cpu > UINT32_MAX)
		cpu = UINT32_MAX;
	r.milli_cpu = (uint32_t)cpu;
	if (__builtin_mul_overflow(cu.mem_bytes, n, &r.mem_bytes))
		r.mem_bytes = UINT64_MAX;
	return r;
}
