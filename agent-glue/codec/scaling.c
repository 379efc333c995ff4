/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/codec/scaling.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/macro.h"
#include "net/json.h"

/* ---- JSON helpers -------------------------------------------------- */

static int get_number(const json_t *v, const char *name, double *out, struct vmact_err *err)
{
	if (!json_is_number(v))
		return vmact_err_set(err, EINVAL, "%s: expected a number", name);
	*out = json_number_value(v);
	if (!isfinite(*out))
		return vmact_err_set(err, ERANGE, "%s: not a finite number", name);
	return 0;
}

static int get_bool(const json_t *v, const char *name, bool *out, struct vmact_err *err)
{
	if (!json_is_boolean(v))
		return vmact_err_set(err, EINVAL, "%s: expected true or false", name);
	*out = json_is_true(v);
	return 0;
}

static int get_int_range(const json_t *v, const char *name, json_int_t lo, json_int_t hi,
			 json_int_t *out, struct vmact_err *err)
{
	if (!json_is_integer(v))
		return vmact_err_set(err, EINVAL, "%s: expected an integer", name);
	*out = json_integer_value(v);
	if (*out < lo || *out > hi)
		return vmact_err_set(err, ERANGE, "%s: %lld out of range [%lld, %lld]", name,
				     (long long)*out, (long long)lo, (long long)hi);
	return 0;
}

/* Sets key to a new reference; consumes v. Returns -ENOMEM on failure. */
static int set_new(json_t *obj, const char *key, json_t *v)
{
	if (!v || json_object_set_new(obj, key, v) < 0)
		return -ENOMEM;
	return 0;
}

/* ---- ScalingConfig ------------------------------------------------- */

enum field_type { F_REAL, F_BOOL, F_INT };

static const struct {
	const char *key;
	unsigned bit;
	enum field_type type;
	size_t off;
} fields[] = {
#define F(key, bit, type, member)                                          \
	{                                                                  \
		key, bit, type, offsetof(struct ag_scaling_config, member) \
	}
	F("loadAverageFractionTarget", AG_SC_LOAD_AVERAGE_FRACTION_TARGET, F_REAL,
	  load_average_fraction_target),
	F("memoryUsageFractionTarget", AG_SC_MEMORY_USAGE_FRACTION_TARGET, F_REAL,
	  memory_usage_fraction_target),
	F("memoryTotalFractionTarget", AG_SC_MEMORY_TOTAL_FRACTION_TARGET, F_REAL,
	  memory_total_fraction_target),
	F("enableLFCMetrics", AG_SC_ENABLE_LFC_METRICS, F_BOOL, enable_lfc_metrics),
	F("lfcUseLargestWindow", AG_SC_LFC_USE_LARGEST_WINDOW, F_BOOL, lfc_use_largest_window),
	F("lfcToMemoryRatio", AG_SC_LFC_TO_MEMORY_RATIO, F_REAL, lfc_to_memory_ratio),
	F("lfcMinWaitBeforeDownscaleMinutes", AG_SC_LFC_MIN_WAIT_BEFORE_DOWNSCALE_MINUTES, F_INT,
	  lfc_min_wait_before_downscale_minutes),
	F("lfcWindowSizeMinutes", AG_SC_LFC_WINDOW_SIZE_MINUTES, F_INT, lfc_window_size_minutes),
	F("cpuStableZoneRatio", AG_SC_CPU_STABLE_ZONE_RATIO, F_REAL, cpu_stable_zone_ratio),
	F("cpuMixedZoneRatio", AG_SC_CPU_MIXED_ZONE_RATIO, F_REAL, cpu_mixed_zone_ratio),
#undef F
};

void ag_scaling_config_defaults(struct ag_scaling_config *out)
{
	*out = (struct ag_scaling_config){
		.load_average_fraction_target = 0.9,
		.memory_usage_fraction_target = 0.75,
		.memory_total_fraction_target = 0.9,
		.enable_lfc_metrics = false,
		.lfc_use_largest_window = false,
		.lfc_to_memory_ratio = 0.75,
		.lfc_min_wait_before_downscale_minutes = 5,
		.lfc_window_size_minutes = 5,
		.cpu_stable_zone_ratio = 0,
		.cpu_mixed_zone_ratio = 0,
	};
}

int ag_scaling_overrides_decode(const json_t *v, unsigned flags, struct ag_scaling_overrides *out,
				struct vmact_err *err)
{
	struct ag_scaling_overrides o = { 0 };
	const char *k;
	json_t *fv;

	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "scaling config: expected an object");
	if (flags & AG_SCALING_REJECT_UNKNOWN) {
		json_object_foreach((json_t *)v, k, fv) {
			size_t i;

			for (i = 0; i < ARRAY_SIZE(fields); i++)
				if (net_json_key_matches(k, fields[i].key))
					break;
			if (i == ARRAY_SIZE(fields))
				return vmact_err_set(err, EINVAL,
						     "scaling config: unknown field \"%s\"", k);
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		char *p = (char *)&o.v + fields[i].off;
		const json_t *x = net_json_get(v, fields[i].key);
		json_int_t n;
		int r = 0;

		if (!x || json_is_null(x)) {
			if (flags & AG_SCALING_REQUIRE_ALL)
				return vmact_err_set(err, EINVAL,
						     "scaling config: %s: required field",
						     fields[i].key);
			continue;
		}
		switch (fields[i].type) {
		case F_REAL:
			r = get_number(x, fields[i].key, (double *)p, err);
			break;
		case F_BOOL:
			r = get_bool(x, fields[i].key, (bool *)p, err);
			break;
		case F_INT:
			r = get_int_range(x, fields[i].key, INT32_MIN, INT32_MAX, &n, err);
			if (r == 0)
				*(int32_t *)p = (int32_t)n;
			break;
		}
		if (r < 0)
			return vmact_err_prefix(err, "scaling config");
		o.set |= fields[i].bit;
	}
	*out = o;
	return 0;
}

json_t *ag_scaling_overrides_encode(const struct ag_scaling_overrides *o)
{
	_cleanup_(json_decrefp) json_t *obj = json_object();

	if (!obj)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const char *p = (const char *)&o->v + fields[i].off;
		json_t *x = NULL;

		if (!(o->set & fields[i].bit))
			continue;
		switch (fields[i].type) {
		case F_REAL:
			x = net_json_real(*(const double *)p, false);
			break;
		case F_BOOL:
			x = json_boolean(*(const bool *)p);
			break;
		case F_INT:
			x = json_integer(*(const int32_t *)p);
			break;
		}
		if (set_new(obj, fields[i].key, x) < 0)
			return NULL;
	}
	return TAKE_PTR(obj);
}

static int check_fraction(unsigned set, unsigned bit, double x, double upper, const char *name,
			  struct vmact_err *err)
{
	if (!(set & bit))
		return 0;
	if (!isfinite(x))
		return vmact_err_set(err, ERANGE, "scaling config: %s: must be a finite number",
				     name);
	if (x < 0.0)
		return vmact_err_set(err, ERANGE,
				     "scaling config: %s: must be set to value >= 0 (got %g)", name,
				     x);
	if (x >= upper)
		return vmact_err_set(err, ERANGE,
				     "scaling config: %s: must be set to value < %g (got %g)", name,
				     upper, x);
	return 0;
}

static int validate_fractions(unsigned set, const struct ag_scaling_config *c,
			      struct vmact_err *err)
{
	int r;

	r = check_fraction(set, AG_SC_LOAD_AVERAGE_FRACTION_TARGET, c->load_average_fraction_target,
			   2.0, "loadAverageFractionTarget", err);
	if (r == 0)
		r = check_fraction(set, AG_SC_MEMORY_USAGE_FRACTION_TARGET,
				   c->memory_usage_fraction_target, 1.0,
				   "memoryUsageFractionTarget", err);
	if (r == 0)
		r = check_fraction(set, AG_SC_MEMORY_TOTAL_FRACTION_TARGET,
				   c->memory_total_fraction_target, 1.0,
				   "memoryTotalFractionTarget", err);
	return r;
}

int ag_scaling_overrides_validate(const struct ag_scaling_overrides *o, struct vmact_err *err)
{
	return validate_fractions(o->set, &o->v, err);
}

void ag_scaling_config_with_overrides(const struct ag_scaling_config *defaults,
				      const struct ag_scaling_overrides *o,
				      struct ag_scaling_config *out)
{
	struct ag_scaling_config c = *defaults;

	if (o) {
		for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
			size_t sz = fields[i].type == F_REAL   ? sizeof(double)
				    : fields[i].type == F_BOOL ? sizeof(bool)
							       : sizeof(int32_t);

			if (o->set & fields[i].bit)
				memcpy((char *)&c + fields[i].off,
				       (const char *)&o->v + fields[i].off, sz);
		}
	}
	*out = c;
}

int ag_scaling_config_validate(const struct ag_scaling_config *c, struct vmact_err *err)
{
	int r = validate_fractions(AG_SC_ALL, c, err);

	if (r < 0)
		return r;
	if (!isfinite(c->lfc_to_memory_ratio) || c->lfc_to_memory_ratio <= 0)
		return vmact_err_set(
			err, ERANGE,
			"scaling config: lfcToMemoryRatio: must be a number > 0 (got %g)",
			c->lfc_to_memory_ratio);
	if (!isfinite(c->cpu_stable_zone_ratio))
		return vmact_err_set(err, ERANGE,
				     "scaling config: cpuStableZoneRatio: must be finite");
	if (!isfinite(c->cpu_mixed_zone_ratio))
		return vmact_err_set(err, ERANGE,
				     "scaling config: cpuMixedZoneRatio: must be finite");
	/* The Go agent's working-set estimator panics on these. */
	if (c->lfc_window_size_minutes < 2)
		return vmact_err_set(err, ERANGE,
				     "scaling config: lfcWindowSizeMinutes: must be >= 2 (got %d)",
				     c->lfc_window_size_minutes);
	if (c->lfc_min_wait_before_downscale_minutes < c->lfc_window_size_minutes)
		return vmact_err_set(err, ERANGE,
				     "scaling config: lfcMinWaitBeforeDownscaleMinutes: must be >= "
				     "lfcWindowSizeMinutes (got %d < %d)",
				     c->lfc_min_wait_before_downscale_minutes,
				     c->lfc_window_size_minutes);
	return 0;
}

int ag_scaling_config_decode(const json_t *v, struct ag_scaling_config *out, struct vmact_err *err)
{
	struct ag_scaling_overrides o;
	int r;

	r = ag_scaling_overrides_decode(v, AG_SCALING_REQUIRE_ALL | AG_SCALING_REJECT_UNKNOWN, &o,
					err);
	if (r < 0)
		return r;
	r = ag_scaling_config_validate(&o.v, err);
	if (r < 0)
		return r;
	*out = o.v;
	return 0;
}

json_t *ag_scaling_config_encode(const struct ag_scaling_config *c)
{
	struct ag_scaling_overrides o = { .set = AG_SC_ALL, .v = *c };

	return ag_scaling_overrides_encode(&o);
}

int ag_scaling_config_effective(const struct ag_scaling_config *defaults,
				const struct ag_scaling_overrides *o, struct ag_scaling_config *out,
				struct vmact_err *err)
{
	struct ag_scaling_config c;
	int r;

	if (o) {
		r = ag_scaling_overrides_validate(o, err);
		if (r < 0)
			return r;
	}
	ag_scaling_config_with_overrides(defaults, o, &c);
	r = ag_scaling_config_validate(&c, err);
	if (r < 0)
		return r;
	*out = c;
	return 0;
}

/* ---- ScalingBounds ------------------------------------------------- */

static int decode_resource_bounds(const json_t *v, const char *name, struct vmact_resources *out,
				  struct vmact_err *err)
{
	const json_t *cpu, *mem;
	int r;

	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "%s: expected an object", name);
	cpu = net_json_get(v, "cpu");
	mem = net_json_get(v, "mem");
	if (!cpu)
		return vmact_err_set(err, EINVAL, "%s.cpu: required field", name);
	if (!mem)
		return vmact_err_set(err, EINVAL, "%s.mem: required field", name);
	r = ag_milli_cpu_decode(cpu, &out->milli_cpu, err);
	if (r < 0)
		return vmact_err_prefix(err, "%s.cpu", name);
	r = ag_bytes_decode(mem, &out->mem_bytes, err);
	if (r < 0)
		return vmact_err_prefix(err, "%s.mem", name);
	return 0;
}

int ag_scaling_bounds_decode(const json_t *v, struct ag_scaling_bounds *out, struct vmact_err *err)
{
	struct ag_scaling_bounds b;
	const json_t *min, *max;
	int r;

	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "scaling bounds: expected an object");
	min = net_json_get(v, "min");
	max = net_json_get(v, "max");
	if (!min)
		return vmact_err_set(err, EINVAL, "scaling bounds: min: required field");
	if (!max)
		return vmact_err_set(err, EINVAL, "scaling bounds: max: required field");
	r = decode_resource_bounds(min, "min", &b.min, err);
	if (r == 0)
		r = decode_resource_bounds(max, "max", &b.max, err);
	if (r < 0)
		return vmact_err_prefix(err, "scaling bounds");
	*out = b;
	return 0;
}

static json_t *resources_bounds_json(const struct vmact_resources *r)
{
	_cleanup_(json_decrefp) json_t *o = json_object();

	if (!o || set_new(o, "cpu", ag_milli_cpu_encode(r->milli_cpu)) < 0 ||
	    set_new(o, "mem", ag_bytes_encode(r->mem_bytes)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

json_t *ag_scaling_bounds_encode(const struct ag_scaling_bounds *b)
{
	_cleanup_(json_decrefp) json_t *o = json_object();

	if (!o || set_new(o, "min", resources_bounds_json(&b->min)) < 0 ||
	    set_new(o, "max", resources_bounds_json(&b->max)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

static int validate_resource_bounds(const struct vmact_resources *r, const char *name,
				    uint64_t slot_bytes, struct vmact_err *err)
{
	if (r->milli_cpu == 0)
		return vmact_err_set(err, EINVAL,
				     "scaling bounds: %s.cpu: must be set to a non-zero value",
				     name);
	if (r->mem_bytes == 0)
		return vmact_err_set(
			err, EINVAL,
			"scaling bounds: %s.mem: must be set to a value greater than zero", name);
	if (r->mem_bytes % slot_bytes != 0)
		return vmact_err_set(
			err, EINVAL,
			"scaling bounds: %s.mem: must be divisible by VM memory slot size %llu",
			name, (unsigned long long)slot_bytes);
	if (r->mem_bytes / slot_bytes > UINT16_MAX)
		return vmact_err_set(
			err, ERANGE,
			"scaling bounds: %s.mem: %llu slots do not fit the slot count (max %u)",
			name, (unsigned long long)(r->mem_bytes / slot_bytes), UINT16_MAX);
	return 0;
}

int ag_scaling_bounds_validate(const struct ag_scaling_bounds *b, uint64_t slot_bytes,
			       struct vmact_err *err)
{
	int r;

	if (slot_bytes == 0)
		return vmact_err_set(err, EINVAL, "scaling bounds: memory slot size is zero");
	r = validate_resource_bounds(&b->min, "min", slot_bytes, err);
	if (r == 0)
		r = validate_resource_bounds(&b->max, "max", slot_bytes, err);
	return r;
}

/* ---- VmInfo -------------------------------------------------------- */

static int get_string(const json_t *obj, const char *key, char *buf, size_t len,
		      struct vmact_err *err)
{
	const json_t *v = net_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: required field", key);
	return net_json_string_copy(v, key, buf, len, err);
}

static const json_t *get_object(const json_t *obj, const char *key, struct vmact_err *err)
{
	const json_t *v = net_json_get(obj, key);

	if (!v) {
		vmact_err_set(err, EINVAL, "%s: required field", key);
		return NULL;
	}
	if (!json_is_object(v)) {
		vmact_err_set(err, EINVAL, "%s: expected an object", key);
		return NULL;
	}
	return v;
}

static int decode_cpu(const json_t *vm, struct ag_vm_info *out, struct vmact_err *err)
{
	static const char *const keys[] = { "min", "max", "use" };
	uint32_t *dst[] = { &out->cpu.min, &out->cpu.max, &out->cpu.use };
	const json_t *cpu = get_object(vm, "cpu", err);

	if (!cpu)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const json_t *v = net_json_get(cpu, keys[i]);

		if (!v)
			return vmact_err_set(err, EINVAL, "cpu.%s: required field", keys[i]);
		if (ag_milli_cpu_decode(v, dst[i], err) < 0)
			return vmact_err_prefix(err, "cpu.%s", keys[i]);
	}
	return 0;
}

static int decode_mem(const json_t *vm, struct ag_vm_info *out, struct vmact_err *err)
{
	static const char *const keys[] = { "min", "max", "use" };
	uint16_t *dst[] = { &out->mem.min, &out->mem.max, &out->mem.use };
	const json_t *mem = get_object(vm, "mem", err), *v;
	json_int_t n;

	if (!mem)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		v = net_json_get(mem, keys[i]);
		if (!v)
			return vmact_err_set(err, EINVAL, "mem.%s: required field", keys[i]);
		if (get_int_range(v, keys[i], 0, UINT16_MAX, &n, err) < 0)
			return vmact_err_prefix(err, "mem");
		*dst[i] = (uint16_t)n;
	}
	v = net_json_get(mem, "slotSize");
	if (!v)
		return vmact_err_set(err, EINVAL, "mem.slotSize: required field");
	if (ag_bytes_decode(v, &out->mem.slot_size, err) < 0)
		return vmact_err_prefix(err, "mem.slotSize");
	return 0;
}

static int decode_config(const json_t *vm, struct ag_vm_info *out, struct vmact_err *err)
{
	static const char *const keys[] = { "autoMigrationEnabled", "alwaysMigrate",
					    "scalingEnabled" };
	bool *dst[] = { &out->config.auto_migration_enabled, &out->config.always_migrate,
			&out->config.scaling_enabled };
	const json_t *cfg = get_object(vm, "config", err), *v;

	if (!cfg)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		v = net_json_get(cfg, keys[i]);
		if (!v)
			return vmact_err_set(err, EINVAL, "config.%s: required field", keys[i]);
		if (get_bool(v, keys[i], dst[i], err) < 0)
			return vmact_err_prefix(err, "config");
	}
	v = net_json_get(cfg, "scalingConfig");
	if (v && !json_is_null(v)) {
		if (ag_scaling_overrides_decode(v, 0, &out->config.scaling_config, err) < 0)
			return vmact_err_prefix(err, "config.scalingConfig");
		out->config.has_scaling_config = true;
	}
	return 0;
}

static int decode_revision(const json_t *vm, struct ag_vm_info *out, struct vmact_err *err)
{
	const json_t *v = net_json_get(vm, "currentRevision"), *rev, *x;
	json_int_t n;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "currentRevision: expected an object");
	rev = get_object(v, "revision", err);
	if (!rev)
		return vmact_err_prefix(err, "currentRevision");
	x = net_json_get(rev, "value");
	if (!x)
		return vmact_err_set(err, EINVAL, "currentRevision.revision.value: required field");
	if (get_int_range(x, "value", INT64_MIN, INT64_MAX, &n, err) < 0)
		return vmact_err_prefix(err, "currentRevision.revision");
	out->current_revision.value = n;
	x = net_json_get(rev, "flags");
	if (!x)
		return vmact_err_set(err, EINVAL, "currentRevision.revision.flags: required field");
	if (get_int_range(x, "flags", 0, UINT32_MAX, &n, err) < 0)
		return vmact_err_prefix(err, "currentRevision.revision");
	out->current_revision.flags = (uint32_t)n;
	if (get_string(v, "updatedAt", out->current_revision.updated_at,
		       sizeof(out->current_revision.updated_at), err) < 0)
		return vmact_err_prefix(err, "currentRevision");
	out->has_current_revision = true;
	return 0;
}

int ag_vm_info_decode(const json_t *v, struct ag_vm_info *out, struct vmact_err *err)
{
	struct ag_vm_info tmp = { 0 }, *vm = &tmp;
	int r;

	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "vm info: expected an object");
	r = get_string(v, "name", vm->name, sizeof(vm->name), err);
	if (r == 0)
		r = get_string(v, "namespace", vm->namespace_, sizeof(vm->namespace_), err);
	if (r == 0)
		r = decode_cpu(v, vm, err);
	if (r == 0)
		r = decode_mem(v, vm, err);
	if (r == 0)
		r = decode_config(v, vm, err);
	if (r == 0)
		r = decode_revision(v, vm, err);
	if (r < 0)
		return vmact_err_prefix(err, "vm info");
	*out = *vm;
	return 0;
}

json_t *ag_vm_info_encode(const struct ag_vm_info *vm)
{
	_cleanup_(json_decrefp) json_t *o = json_object(), *cpu = json_object(),
				       *mem = json_object(), *cfg = json_object();

	if (!o || !cpu || !mem || !cfg)
		return NULL;
	if (set_new(cpu, "min", ag_milli_cpu_encode(vm->cpu.min)) < 0 ||
	    set_new(cpu, "max", ag_milli_cpu_encode(vm->cpu.max)) < 0 ||
	    set_new(cpu, "use", ag_milli_cpu_encode(vm->cpu.use)) < 0)
		return NULL;
	if (set_new(mem, "min", json_integer(vm->mem.min)) < 0 ||
	    set_new(mem, "max", json_integer(vm->mem.max)) < 0 ||
	    set_new(mem, "use", json_integer(vm->mem.use)) < 0 ||
	    set_new(mem, "slotSize", ag_bytes_encode(vm->mem.slot_size)) < 0)
		return NULL;
	if (set_new(cfg, "autoMigrationEnabled", json_boolean(vm->config.auto_migration_enabled)) <
		    0 ||
	    set_new(cfg, "alwaysMigrate", json_boolean(vm->config.always_migrate)) < 0 ||
	    set_new(cfg, "scalingEnabled", json_boolean(vm->config.scaling_enabled)) < 0)
		return NULL;
	if (vm->config.has_scaling_config &&
	    set_new(cfg, "scalingConfig", ag_scaling_overrides_encode(&vm->config.scaling_config)) <
		    0)
		return NULL;
	if (set_new(o, "name", json_string(vm->name)) < 0 ||
	    set_new(o, "namespace", json_string(vm->namespace_)) < 0 ||
	    set_new(o, "cpu", TAKE_PTR(cpu)) < 0 || set_new(o, "mem", TAKE_PTR(mem)) < 0 ||
	    set_new(o, "config", TAKE_PTR(cfg)) < 0)
		return NULL;
	if (vm->has_current_revision) {
		json_t *rev = json_pack("{s:{s:I,s:I},s:s}", "revision", "value",
					(json_int_t)vm->current_revision.value, "flags",
					(json_int_t)vm->current_revision.flags, "updatedAt",
					vm->current_revision.updated_at);

		if (set_new(o, "currentRevision", rev) < 0)
			return NULL;
	}
	return TAKE_PTR(o);
}

struct vmact_resources ag_vm_info_using(const struct ag_vm_info *vm)
{
	return (struct vmact_resources){ vm->cpu.use, vm->mem.slot_size * vm->mem.use };
}

struct vmact_resources ag_vm_info_min(const struct ag_vm_info *vm)
{
	return (struct vmact_resources){ vm->cpu.min, vm->mem.slot_size * vm->mem.min };
}

struct vmact_resources ag_vm_info_max(const struct ag_vm_info *vm)
{
	return (struct vmact_resources){ vm->cpu.max, vm->mem.slot_size * vm->mem.max };
}

#define CPU_MIN_REASONABLE 50u
#define CPU_MAX_REASONABLE 512000u

int ag_vm_info_validate(const struct ag_vm_info *vm, bool *use_out_of_bounds, struct vmact_err *err)
{
	struct vmact_resources min, max, use;
	static const char *const which[] = { "min", "max" };
	const uint32_t cpus[] = { vm->cpu.min, vm->cpu.max };

	if (vm->mem.slot_size == 0)
		return vmact_err_set(err, EINVAL,
				     "vm info: mem.slotSize: must be greater than zero");
	/* Slot counts are uint16, so slot_size * count overflows uint64 only
	 * for absurd slot sizes; reject those rather than wrap. */
	if (vm->mem.slot_size > UINT64_MAX / UINT16_MAX)
		return vmact_err_set(err, ERANGE, "vm info: mem.slotSize: too large");
	for (size_t i = 0; i < 2; i++) {
		if (cpus[i] < CPU_MIN_REASONABLE)
			return vmact_err_set(err, ERANGE,
					     "vm info: cpu.%s: %um is smaller than 50m", which[i],
					     cpus[i]);
		if (cpus[i] > CPU_MAX_REASONABLE)
			return vmact_err_set(err, ERANGE,
					     "vm info: cpu.%s: %um is bigger than 512000m",
					     which[i], cpus[i]);
	}
	min = ag_vm_info_min(vm);
	max = ag_vm_info_max(vm);
	use = ag_vm_info_using(vm);
	if (min.milli_cpu > max.milli_cpu)
		return vmact_err_set(err, EINVAL,
				     "vm info: cpu.min %um is greater than cpu.max %um",
				     min.milli_cpu, max.milli_cpu);
	if (vm->mem.min > vm->mem.max)
		return vmact_err_set(err, EINVAL,
				     "vm info: mem.min %u slots is greater than mem.max %u",
				     vm->mem.min, vm->mem.max);
	if (vm->config.has_scaling_config &&
	    ag_scaling_overrides_validate(&vm->config.scaling_config, err) < 0)
		return vmact_err_prefix(err, "vm info: config.scalingConfig");
	if (use_out_of_bounds)
		*use_out_of_bounds = use.milli_cpu < min.milli_cpu ||
				     use.mem_bytes < min.mem_bytes ||
				     use.milli_cpu > max.milli_cpu || use.mem_bytes > max.mem_bytes;
	return 0;
}

int ag_vm_info_apply_bounds(struct ag_vm_info *vm, const struct ag_scaling_bounds *b,
			    struct vmact_err *err)
{
	int r = ag_scaling_bounds_validate(b, vm->mem.slot_size, err);

	if (r < 0)
		return r;
	vm->cpu.min = b->min.milli_cpu;
	vm->cpu.max = b->max.milli_cpu;
	vm->mem.min = (uint16_t)(b->min.mem_bytes / vm->mem.slot_size);
	vm->mem.max = (uint16_t)(b->max.mem_bytes / vm->mem.slot_size);
	return 0;
}
