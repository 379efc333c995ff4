/* SPDX-License-Identifier: Apache-2.0 */
/* wirecheck handlers for the scaling-policy kinds: goal_cpu_cu,
 * wss_estimate, project_next_highest, desired_resources. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actuator/policy/actions.h"
#include "actuator/policy/desired.h"
#include "actuator/policy/goalcu.h"
#include "agent-glue/codec/scaling.h"
#include "base/macro.h"
#include "tests/conformance/wirecheck.h"

/* The vectors spell ScalingConfig fields in snake_case; the agent's names
 * are camelCase and matched case-insensitively, so dropping the underscores
 * and capitalising what follows gives the Go key. Missing fields take the
 * agent defaults (vectors README); unknown ones are an error so a typo in a
 * vector cannot silently fall back to a default. */
static int vector_config(const json_t *in, struct ag_scaling_config *out, struct vmact_err *err)
{
	const json_t *c = json_object_get(in, "config");
	_cleanup_(json_decrefp) json_t *camel = NULL;
	struct ag_scaling_config defaults;
	struct ag_scaling_overrides o;
	const char *k;
	json_t *v;

	if (!json_is_object(c))
		return vmact_err_set(err, EINVAL, "vector field config: expected an object");
	camel = json_object();
	if (!camel)
		return vmact_err_set(err, ENOMEM, "out of memory");
	json_object_foreach((json_t *)c, k, v) {
		char key[128];
		size_t j = 0;
		bool up = false;

		for (size_t i = 0; k[i] && j + 1 < sizeof(key); i++) {
			if (k[i] == '_') {
				up = true;
				continue;
			}
			key[j++] = up ? (char)toupper((unsigned char)k[i]) : k[i];
			up = false;
		}
		key[j] = '\0';
		if (json_object_set(camel, key, v) < 0)
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	if (ag_scaling_overrides_decode(camel, AG_SCALING_REJECT_UNKNOWN, &o, err) < 0)
		return -EINVAL;
	ag_scaling_config_defaults(&defaults);
	return ag_scaling_config_effective(&defaults, &o, out, err);
}

static int vector_series(const json_t *in, const char *key, double **out, size_t *n,
			 struct vmact_err *err)
{
	const json_t *a = json_object_get(in, key);
	double *s;

	if (!json_is_array(a))
		return vmact_err_set(err, EINVAL, "vector field %s: expected an array", key);
	*n = json_array_size(a);
	s = calloc(*n ? *n : 1, sizeof(*s));
	if (!s)
		return vmact_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < *n; i++) {
		const json_t *x = json_array_get(a, i);

		if (!json_is_number(x)) {
			free(s);
			return vmact_err_set(err, EINVAL, "vector field %s[%zu]: expected a number",
					     key, i);
		}
		s[i] = json_number_value(x);
	}
	*out = s;
	return 0;
}

static int vector_system(const json_t *in, struct act_system_metrics *m, bool *present,
			 struct vmact_err *err)
{
	const json_t *s = json_object_get(in, "system");

	*present = false;
	if (!s || json_is_null(s))
		return 0;
	if (!json_is_object(s))
		return vmact_err_set(err, EINVAL,
				     "vector field system: expected an object or null");
	memset(m, 0, sizeof(*m));
	if (wc_get_double(s, "load1", &m->load1, err) < 0 ||
	    wc_get_double(s, "load5", &m->load5, err) < 0)
		return -EINVAL;
	/* goal_cpu_cu vectors carry only the loads. */
	if (json_object_get(s, "memory_usage_bytes") &&
	    wc_get_double(s, "memory_usage_bytes", &m->memory_usage_bytes, err) < 0)
		return -EINVAL;
	if (json_object_get(s, "memory_cached_bytes") &&
	    wc_get_double(s, "memory_cached_bytes", &m->memory_cached_bytes, err) < 0)
		return -EINVAL;
	*present = true;
	return 0;
}

json_t *wc_goal_cpu_cu(const json_t *in, struct vmact_err *err)
{
	struct ag_scaling_config cfg;
	struct vmact_resources cu;
	struct act_system_metrics sys;
	struct act_warnings w = { 0 };
	struct act_goal g;
	bool has_sys;

	if (vector_config(in, &cfg, err) < 0 ||
	    wc_get_resources(in, "compute_unit", &cu, err) < 0 ||
	    vector_system(in, &sys, &has_sys, err) < 0)
		return NULL;
	if (!has_sys) {
		vmact_err_set(err, EINVAL, "vector field system: required");
		return NULL;
	}
	if (act_goal_cu(&cfg, &cu, &sys, NULL, &g, &w, err) < 0)
		return NULL;
	if (!g.has_cpu) {
		vmact_err_set(err, EINVAL, "no CPU part computed");
		return NULL;
	}
	return json_pack("{s:f}", "cpu_cu", g.cpu);
}

json_t *wc_wss_estimate(const json_t *in, struct vmact_err *err)
{
	_cleanup_free_ double *s = NULL;
	uint64_t off, win;
	double factor, v;
	size_t n;

	if (wc_get_double(in, "factor", &factor, err) < 0 ||
	    wc_get_u64(in, "initial_offset", &off, err) < 0 ||
	    wc_get_u64(in, "window", &win, err) < 0 || vector_series(in, "series", &s, &n, err) < 0)
		return NULL;
	if (act_wss_estimate(s, n, factor, off, win, &v, err) < 0)
		return NULL;
	return json_pack("{s:f}", "value", v);
}

json_t *wc_project_next_highest(const json_t *in, struct vmact_err *err)
{
	_cleanup_free_ double *s = NULL;
	double factor, v;
	size_t n;

	if (wc_get_double(in, "factor", &factor, err) < 0 ||
	    vector_series(in, "series", &s, &n, err) < 0)
		return NULL;
	if (act_project_next_highest(s, n, factor, &v, err) < 0)
		return NULL;
	return json_pack("{s:f}", "value", v);
}

/* VM bounds and usage go through VmInfo (slot counts) as in the agent. */
static int vector_vm(const json_t *in, struct ag_vm_info *vm, struct vmact_err *err)
{
	const json_t *b = json_object_get(in, "bounds");
	struct vmact_resources min, max, use;
	uint64_t slot;
	uint64_t slots[3];
	const struct vmact_resources *src[3] = { &min, &max, &use };

	if (!json_is_object(b))
		return vmact_err_set(err, EINVAL, "vector field bounds: expected an object");
	if (wc_get_resources(b, "min", &min, err) < 0 ||
	    wc_get_resources(b, "max", &max, err) < 0 ||
	    wc_get_u64(b, "slot_bytes", &slot, err) < 0 ||
	    wc_get_resources(in, "using", &use, err) < 0)
		return -EINVAL;
	if (slot == 0)
		return vmact_err_set(err, EINVAL, "vector field bounds.slot_bytes: zero");
	for (size_t i = 0; i < 3; i++) {
		if (src[i]->mem_bytes % slot || src[i]->mem_bytes / slot > UINT16_MAX)
			return vmact_err_set(err, EINVAL, "vector: memory not a whole slot count");
		slots[i] = src[i]->mem_bytes / slot;
	}
	memset(vm, 0, sizeof(*vm));
	vm->cpu.min = min.milli_cpu;
	vm->cpu.max = max.milli_cpu;
	vm->cpu.use = use.milli_cpu;
	vm->mem.slot_size = slot;
	vm->mem.min = (uint16_t)slots[0];
	vm->mem.max = (uint16_t)slots[1];
	vm->mem.use = (uint16_t)slots[2];
	return ag_vm_info_validate(vm, NULL, err);
}

json_t *wc_desired_resources(const json_t *in, struct vmact_err *err)
{
	_cleanup_free_ double *pages = NULL;
	struct ag_scaling_config cfg;
	struct act_system_metrics sys;
	struct act_lfc_metrics lfc = { 0 };
	struct act_denied_downscale denied = { 0 };
	struct act_desired_input din = { 0 };
	struct act_timing timing;
	struct act_warnings w = { 0 };
	struct act_desired d;
	struct ag_vm_info vm;
	const json_t *x;
	bool has_sys;

	if (vector_config(in, &cfg, err) < 0 ||
	    wc_get_resources(in, "compute_unit", &din.cu, err) < 0 || vector_vm(in, &vm, err) < 0 ||
	    vector_system(in, &sys, &has_sys, err) < 0)
		return NULL;
	x = json_object_get(in, "lfc_working_set_pages");
	if (x && !json_is_null(x)) {
		if (vector_series(in, "lfc_working_set_pages", &pages, &lfc.n, err) < 0)
			return NULL;
		lfc.wss_pages = pages;
		din.lfc = &lfc;
	}
	act_timing_defaults(&timing);
	x = json_object_get(in, "denied_downscale");
	if (x && !json_is_null(x)) {
		if (wc_get_resources(x, "current", &denied.current, err) < 0 ||
		    wc_get_resources(x, "requested", &denied.requested, err) < 0)
			return NULL;
		din.denied = &denied;
		din.denied_cooldown = timing.monitor_denied_downscale_cooldown;
	}
	din.cfg = &cfg;
	din.using_ = ag_vm_info_using(&vm);
	din.min = ag_vm_info_min(&vm);
	din.max = ag_vm_info_max(&vm);
	din.sys = has_sys ? &sys : NULL;
	if (act_desired_resources(&din, 0, &d, &w, err) < 0)
		return NULL;
	return json_pack("{s:o}", "resources", wc_resources_json(&d.res));
}
