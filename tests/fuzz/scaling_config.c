/* SPDX-License-Identifier: Apache-2.0 */
/* Any JSON document through the ScalingBounds, ScalingConfig and VmInfo
 * decoders. Whatever decodes must re-encode and decode to the same value;
 * a config that validates must drive the goal-CU arithmetic without a
 * crash, and its goal must stay a sane number for sane metrics. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "actuator/policy/desired.h"
#include "actuator/policy/goalcu.h"
#include "agent-glue/codec/scaling.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_bounds(const json_t *v)
{
	struct ag_scaling_bounds b, b2;
	struct vmact_err err = { 0 };
	json_t *e;

	if (ag_scaling_bounds_decode(v, &b, &err) != 0)
		return;
	e = ag_scaling_bounds_encode(&b);
	if (!e || ag_scaling_bounds_decode(e, &b2, &err) != 0 || !vmact_res_eq(b.min, b2.min) ||
	    !vmact_res_eq(b.max, b2.max))
		abort();
	json_decref(e);
	static const uint64_t slots[] = { 1, 8 << 20, 1ULL << 30, 3ULL << 30 };
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		vmact_err_reset(&err);
		if (ag_scaling_bounds_validate(&b, slots[i], &err) == 0 &&
		    (b.min.mem_bytes % slots[i] || b.min.milli_cpu == 0 ||
		     b.max.mem_bytes / slots[i] > UINT16_MAX))
			abort();
	}
}

static bool same_overrides(const struct ag_scaling_overrides *a,
			   const struct ag_scaling_overrides *b)
{
	struct ag_scaling_config d, x, y;

	if (a->set != b->set)
		return false;
	/* compare through a common base so unset fields do not matter */
	ag_scaling_config_defaults(&d);
	ag_scaling_config_with_overrides(&d, a, &x);
	ag_scaling_config_with_overrides(&d, b, &y);
	return x.load_average_fraction_target == y.load_average_fraction_target &&
	       x.memory_usage_fraction_target == y.memory_usage_fraction_target &&
	       x.memory_total_fraction_target == y.memory_total_fraction_target &&
	       x.enable_lfc_metrics == y.enable_lfc_metrics &&
	       x.lfc_use_largest_window == y.lfc_use_largest_window &&
	       x.lfc_to_memory_ratio == y.lfc_to_memory_ratio &&
	       x.lfc_min_wait_before_downscale_minutes == y.lfc_min_wait_before_downscale_minutes &&
	       x.lfc_window_size_minutes == y.lfc_window_size_minutes &&
	       x.cpu_stable_zone_ratio == y.cpu_stable_zone_ratio &&
	       x.cpu_mixed_zone_ratio == y.cpu_mixed_zone_ratio;
}

static void drive_goal(const struct ag_scaling_config *c, const uint8_t *data, size_t size)
{
	static const struct vmact_resources cu = { 250, 1ULL << 30 };
	double pages[64];
	size_t n = size < 64 ? size : 64;
	struct act_system_metrics sys = {
		.load1 = size ? data[0] / 16.0 : 0,
		.load5 = size > 1 ? data[1] / 16.0 : 0,
		.memory_usage_bytes = size > 2 ? data[2] * 1e8 : 0,
		.memory_cached_bytes = size > 3 ? data[3] * 1e8 : 0,
	};
	struct act_lfc_metrics lfc = { pages, n };
	struct act_warnings w = { 0 };
	struct act_goal g;
	struct act_desired_input in = {
		.cfg = c,
		.cu = cu,
		.using_ = { 1000, 4ULL << 30 },
		.min = { 250, 1ULL << 30 },
		.max = { 8000, 32ULL << 30 },
		.sys = &sys,
		.lfc = &lfc,
	};
	struct act_desired d;

	for (size_t i = 0; i < n; i++)
		pages[i] = data[i] * 1000.0 * (double)i;
	if (act_goal_cu(c, &cu, &sys, &lfc, &g, &w, NULL) != 0)
		abort();
	if (act_desired_resources(&in, 0, &d, &w, NULL) != 0)
		abort();
	if (vmact_res_any_lt(d.res, in.min) || vmact_res_any_gt(d.res, in.max))
		abort();
}

static void check_config(const json_t *v, const uint8_t *data, size_t size)
{
	static const unsigned flags[] = { 0, AG_SCALING_REJECT_UNKNOWN, AG_SCALING_REQUIRE_ALL };
	struct vmact_err err = { 0 };

	for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		struct ag_scaling_overrides o, o2;
		struct ag_scaling_config d, c;
		json_t *e;

		vmact_err_reset(&err);
		if (ag_scaling_overrides_decode(v, flags[f], &o, &err) != 0)
			continue;
		e = ag_scaling_overrides_encode(&o);
		if (!e ||
		    ag_scaling_overrides_decode(e, AG_SCALING_REJECT_UNKNOWN, &o2, &err) != 0 ||
		    !same_overrides(&o, &o2))
			abort();
		json_decref(e);
		ag_scaling_config_defaults(&d);
		if (ag_scaling_config_effective(&d, &o, &c, &err) == 0)
			drive_goal(&c, data, size);
	}
	vmact_err_reset(&err);
	{
		struct ag_scaling_config c;

		if (ag_scaling_config_decode(v, &c, &err) == 0)
			drive_goal(&c, data, size);
	}
}

static void check_vm_info(const json_t *v)
{
	struct ag_vm_info *vm = calloc(2, sizeof(*vm));
	struct vmact_err err = { 0 };
	json_t *e;
	bool oob;

	if (!vm)
		return;
	if (ag_vm_info_decode(v, &vm[0], &err) == 0) {
		e = ag_vm_info_encode(&vm[0]);
		if (!e || ag_vm_info_decode(e, &vm[1], &err) != 0)
			abort();
		if (strcmp(vm[0].name, vm[1].name) || vm[0].cpu.use != vm[1].cpu.use ||
		    vm[0].mem.slot_size != vm[1].mem.slot_size ||
		    vm[0].config.has_scaling_config != vm[1].config.has_scaling_config ||
		    vm[0].current_revision.value != vm[1].current_revision.value)
			abort();
		json_decref(e);
		vmact_err_reset(&err);
		if (ag_vm_info_validate(&vm[0], &oob, &err) == 0 &&
		    (vm[0].cpu.min < 50 || vm[0].cpu.max > 512000 || vm[0].cpu.min > vm[0].cpu.max))
			abort();
	}
	free(vm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);

	if (!v)
		return 0;
	check_bounds(v);
	check_config(v, data, size);
	check_vm_info(v);
	json_decref(v);
	return 0;
}
