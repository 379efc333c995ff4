/* SPDX-License-Identifier: Apache-2.0 */
/* ScalingConfig, ScalingBounds and VmInfo codecs (doc/protocols.md, "VM configuration surface"). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent-glue/codec/scaling.h"
#include "base/macro.h"

#define GiB (1024ULL * 1024 * 1024)

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, JSON_DECODE_ANY, &e);

	if (!v) {
		print_error("bad test JSON %s: %s\n", s, e.text);
		fail();
	}
	return v;
}

/* Field by field: the struct has padding. */
static bool config_eq(const struct ag_scaling_config *x, const struct ag_scaling_config *y)
{
	return x->load_average_fraction_target == y->load_average_fraction_target &&
	       x->memory_usage_fraction_target == y->memory_usage_fraction_target &&
	       x->memory_total_fraction_target == y->memory_total_fraction_target &&
	       x->enable_lfc_metrics == y->enable_lfc_metrics &&
	       x->lfc_use_largest_window == y->lfc_use_largest_window &&
	       x->lfc_to_memory_ratio == y->lfc_to_memory_ratio &&
	       x->lfc_min_wait_before_downscale_minutes ==
		       y->lfc_min_wait_before_downscale_minutes &&
	       x->lfc_window_size_minutes == y->lfc_window_size_minutes &&
	       x->cpu_stable_zone_ratio == y->cpu_stable_zone_ratio &&
	       x->cpu_mixed_zone_ratio == y->cpu_mixed_zone_ratio;
}

static void overrides_ok(const char *s, struct ag_scaling_overrides *o)
{
	_cleanup_(json_decrefp) json_t *v = parse(s);
	struct vmact_err err = { 0 };

	if (ag_scaling_overrides_decode(v, 0, o, &err) != 0) {
		print_error("%s: %s\n", s, err.msg);
		fail();
	}
}

/* Rejected, with the message naming `field`. */
static void overrides_err(const char *s, unsigned flags, const char *field)
{
	_cleanup_(json_decrefp) json_t *v = parse(s);
	struct vmact_err err = { 0 };
	struct ag_scaling_overrides o = { .set = 77 };

	assert_true(ag_scaling_overrides_decode(v, flags, &o, &err) < 0);
	assert_int_equal(o.set, 77); /* untouched */
	if (!strstr(err.msg, field)) {
		print_error("%s: message \"%s\" does not name %s\n", s, err.msg, field);
		fail();
	}
}

static void test_defaults(void **state)
{
	struct ag_scaling_config c;

	ag_scaling_config_defaults(&c);
	assert_true(c.load_average_fraction_target == 0.9);
	assert_true(c.memory_usage_fraction_target == 0.75);
	assert_true(c.memory_total_fraction_target == 0.9);
	assert_false(c.enable_lfc_metrics);
	assert_false(c.lfc_use_largest_window);
	assert_true(c.lfc_to_memory_ratio == 0.75);
	assert_int_equal(c.lfc_window_size_minutes, 5);
	assert_int_equal(c.lfc_min_wait_before_downscale_minutes, 5);
	assert_true(c.cpu_stable_zone_ratio == 0 && c.cpu_mixed_zone_ratio == 0);
	assert_int_equal(ag_scaling_config_validate(&c, NULL), 0);
}

static void test_overrides_decode(void **state)
{
	struct ag_scaling_overrides o;
	struct ag_scaling_config d, c;

	/* the example of doc/protocols.md, "ScalingConfig" */
	overrides_ok("{\"loadAverageFractionTarget\":0.7,\"enableLFCMetrics\":true,"
		     "\"lfcToMemoryRatio\":0.75}",
		     &o);
	assert_int_equal(o.set, AG_SC_LOAD_AVERAGE_FRACTION_TARGET | AG_SC_ENABLE_LFC_METRICS |
					AG_SC_LFC_TO_MEMORY_RATIO);
	ag_scaling_config_defaults(&d);
	ag_scaling_config_with_overrides(&d, &o, &c);
	assert_true(c.load_average_fraction_target == 0.7);
	assert_true(c.enable_lfc_metrics);
	assert_true(c.memory_usage_fraction_target == 0.75); /* default kept */

	/* null is "not set"; keys match case-insensitively; integers are numbers */
	overrides_ok("{\"loadAverageFractionTarget\":null,\"LFCWINDOWSIZEMINUTES\":7,"
		     "\"cpuStableZoneRatio\":1}",
		     &o);
	assert_int_equal(o.set, AG_SC_LFC_WINDOW_SIZE_MINUTES | AG_SC_CPU_STABLE_ZONE_RATIO);
	assert_int_equal(o.v.lfc_window_size_minutes, 7);
	assert_true(o.v.cpu_stable_zone_ratio == 1.0);

	/* the annotation reader ignores unknown keys, like Go */
	overrides_ok("{\"someFutureField\":[1,2]}", &o);
	assert_int_equal(o.set, 0);
	ag_scaling_config_with_overrides(&d, NULL, &c);
	assert_true(config_eq(&c, &d));

	overrides_err("[]", 0, "expected an object");
	overrides_err("{\"loadAverageFractionTarget\":\"0.7\"}", 0, "loadAverageFractionTarget");
	overrides_err("{\"enableLFCMetrics\":1}", 0, "enableLFCMetrics");
	overrides_err("{\"lfcWindowSizeMinutes\":5.5}", 0, "lfcWindowSizeMinutes");
	overrides_err("{\"lfcMinWaitBeforeDownscaleMinutes\":99999999999}", 0,
		      "lfcMinWaitBeforeDownscaleMinutes");
	overrides_err("{\"someFutureField\":1}", AG_SCALING_REJECT_UNKNOWN, "someFutureField");
	overrides_err("{}", AG_SCALING_REQUIRE_ALL, "loadAverageFractionTarget");
}

static void test_validate(void **state)
{
	static const struct {
		const char *json;
		const char *field; /* NULL: valid */
	} cases[] = {
		{ "{\"loadAverageFractionTarget\":0}", NULL },
		{ "{\"loadAverageFractionTarget\":1.99}", NULL },
		{ "{\"loadAverageFractionTarget\":2}", "loadAverageFractionTarget" },
		{ "{\"loadAverageFractionTarget\":-0.1}", "loadAverageFractionTarget" },
		{ "{\"memoryUsageFractionTarget\":1}", "memoryUsageFractionTarget" },
		{ "{\"memoryTotalFractionTarget\":-1}", "memoryTotalFractionTarget" },
		{ "{\"memoryTotalFractionTarget\":0.99}", NULL },
		/* the Go agent crashes on these two */
		{ "{\"lfcWindowSizeMinutes\":1,\"lfcMinWaitBeforeDownscaleMinutes\":1}",
		  "lfcWindowSizeMinutes" },
		{ "{\"lfcWindowSizeMinutes\":6}", "lfcMinWaitBeforeDownscaleMinutes" },
		{ "{\"lfcWindowSizeMinutes\":2,\"lfcMinWaitBeforeDownscaleMinutes\":2}", NULL },
		{ "{\"lfcToMemoryRatio\":0}", "lfcToMemoryRatio" },
	};
	struct ag_scaling_config d, c;

	ag_scaling_config_defaults(&d);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ag_scaling_overrides o;
		struct vmact_err err = { 0 };
		int r;

		overrides_ok(cases[i].json, &o);
		memset(&c, 0xaa, sizeof(c));
		r = ag_scaling_config_effective(&d, &o, &c, &err);
		if (!cases[i].field) {
			assert_int_equal(r, 0);
			continue;
		}
		if (r == 0 || !strstr(err.msg, cases[i].field)) {
			print_error("%s: r=%d \"%s\"\n", cases[i].json, r, err.msg);
			fail();
		}
	}
}

static void test_config_decode_encode(void **state)
{
	static const char full[] =
		"{\"loadAverageFractionTarget\":0.9,\"memoryUsageFractionTarget\":0.75,"
		"\"memoryTotalFractionTarget\":0.9,\"enableLFCMetrics\":false,"
		"\"lfcUseLargestWindow\":false,\"lfcToMemoryRatio\":0.75,"
		"\"lfcMinWaitBeforeDownscaleMinutes\":5,\"lfcWindowSizeMinutes\":5,"
		"\"cpuStableZoneRatio\":0,\"cpuMixedZoneRatio\":0}";
	_cleanup_(json_decrefp) json_t *v = parse(full), *e = NULL, *bad = NULL;
	_cleanup_free_ char *s = NULL;
	struct ag_scaling_config c, d;
	struct vmact_err err = { 0 };

	assert_int_equal(ag_scaling_config_decode(v, &c, &err), 0);
	ag_scaling_config_defaults(&d);
	assert_true(config_eq(&c, &d));
	/* Go order and spelling; whole reals print as integers like Go's */
	e = ag_scaling_config_encode(&c);
	assert_non_null(e);
	/* jansson prints %.17g; 15 digits give Go's shortest form for these */
	s = json_dumps(e, JSON_COMPACT | JSON_REAL_PRECISION(15));
	assert_string_equal(s, full);

	/* the agent config needs every field */
	json_object_del(v, "cpuMixedZoneRatio");
	assert_int_equal(ag_scaling_config_decode(v, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "cpuMixedZoneRatio"));
	bad = parse("{\"loadAverageFractionTarget\":0.9,\"memoryUsageFractionTarget\":0.75,"
		    "\"memoryTotalFractionTarget\":0.9,\"enableLFCMetrics\":false,"
		    "\"lfcUseLargestWindow\":false,\"lfcToMemoryRatio\":0.75,"
		    "\"lfcMinWaitBeforeDownscaleMinutes\":3,\"lfcWindowSizeMinutes\":5,"
		    "\"cpuStableZoneRatio\":0,\"cpuMixedZoneRatio\":0}");
	vmact_err_reset(&err);
	assert_int_equal(ag_scaling_config_decode(bad, &c, &err), -ERANGE);
	assert_non_null(strstr(err.msg, "lfcMinWaitBeforeDownscaleMinutes"));
}

static void bounds_ok(const char *s, struct ag_scaling_bounds *b)
{
	_cleanup_(json_decrefp) json_t *v = parse(s);
	struct vmact_err err = { 0 };

	if (ag_scaling_bounds_decode(v, b, &err) != 0) {
		print_error("%s: %s\n", s, err.msg);
		fail();
	}
}

static void bounds_err(const char *s, const char *field)
{
	_cleanup_(json_decrefp) json_t *v = parse(s);
	struct vmact_err err = { 0 };
	struct ag_scaling_bounds b;

	assert_true(ag_scaling_bounds_decode(v, &b, &err) < 0);
	if (!strstr(err.msg, field)) {
		print_error("%s: \"%s\" does not name %s\n", s, err.msg, field);
		fail();
	}
}

static void test_bounds(void **state)
{
	struct ag_scaling_bounds b;
	struct vmact_err err = { 0 };
	_cleanup_(json_decrefp) json_t *e = NULL;
	_cleanup_free_ char *s = NULL;

	/* the two literals of doc/protocols.md, "ScalingBounds" */
	bounds_ok(
		"{\"min\": {\"cpu\": \"250m\", \"mem\": \"1Gi\"}, \"max\": {\"cpu\": 1, \"mem\": \"4Gi\"}}",
		&b);
	assert_int_equal(b.min.milli_cpu, 250);
	assert_int_equal(b.min.mem_bytes, GiB);
	assert_int_equal(b.max.milli_cpu, 1000);
	assert_int_equal(b.max.mem_bytes, 4 * GiB);
	assert_int_equal(ag_scaling_bounds_validate(&b, GiB, NULL), 0);
	e = ag_scaling_bounds_encode(&b);
	s = json_dumps(e, JSON_COMPACT);
	assert_string_equal(
		s,
		"{\"min\":{\"cpu\":\"250m\",\"mem\":\"1Gi\"},\"max\":{\"cpu\":1,\"mem\":\"4Gi\"}}");
	bounds_ok("{\"min\":{\"cpu\":0.25,\"mem\":\"1Gi\"},\"max\":{\"cpu\":1.25,\"mem\":\"5Gi\"}}",
		  &b);
	assert_int_equal(b.max.milli_cpu, 1250);
	assert_int_equal(b.max.mem_bytes, 5 * GiB);

	bounds_err("{\"max\":{\"cpu\":1,\"mem\":\"4Gi\"}}", "min");
	bounds_err("{\"min\":{\"mem\":\"1Gi\"},\"max\":{\"cpu\":1,\"mem\":\"4Gi\"}}", "min.cpu");
	bounds_err("{\"min\":{\"cpu\":1,\"mem\":\"1Gi\"},\"max\":{\"cpu\":1,\"mem\":\"lots\"}}",
		   "max.mem");
	bounds_err("{\"min\":{\"cpu\":\"-1\",\"mem\":\"1Gi\"},\"max\":{\"cpu\":1,\"mem\":\"1Gi\"}}",
		   "min.cpu");
	bounds_err("{\"min\":5,\"max\":{\"cpu\":1,\"mem\":\"1Gi\"}}", "min");

	bounds_ok("{\"min\":{\"cpu\":0,\"mem\":\"1Gi\"},\"max\":{\"cpu\":1,\"mem\":\"1536Mi\"}}",
		  &b);
	assert_int_equal(ag_scaling_bounds_validate(&b, GiB, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "min.cpu"));
	b.min.milli_cpu = 250;
	vmact_err_reset(&err);
	assert_int_equal(ag_scaling_bounds_validate(&b, GiB, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "max.mem"));
	b.max.mem_bytes = 70000 * GiB; /* Go would wrap the uint16 slot count */
	vmact_err_reset(&err);
	assert_int_equal(ag_scaling_bounds_validate(&b, GiB, &err), -ERANGE);
	assert_int_equal(ag_scaling_bounds_validate(&b, 0, NULL), -EINVAL);
}

static const char vm_example[] =
	"{\"name\":\"compute-abc\",\"namespace\":\"default\","
	"\"cpu\":{\"min\":\"250m\",\"max\":2,\"use\":\"500m\"},"
	"\"mem\":{\"min\":1,\"max\":8,\"use\":2,\"slotSize\":\"1Gi\"},"
	"\"config\":{\"autoMigrationEnabled\":true,\"alwaysMigrate\":false,\"scalingEnabled\":true,"
	"\"scalingConfig\":{\"loadAverageFractionTarget\":0.9}},"
	"\"currentRevision\":{\"revision\":{\"value\":12,\"flags\":1},"
	"\"updatedAt\":\"2025-07-01T12:00:00Z\"}}";

static void test_vm_info_roundtrip(void **state)
{
	_cleanup_(json_decrefp) json_t *v = parse(vm_example), *e = NULL;
	_cleanup_free_ char *s = NULL;
	struct ag_vm_info vm;
	struct vmact_err err = { 0 };
	bool oob = true;
	struct vmact_resources r;

	assert_int_equal(ag_vm_info_decode(v, &vm, &err), 0);
	assert_string_equal(vm.name, "compute-abc");
	assert_string_equal(vm.namespace_, "default");
	assert_int_equal(vm.cpu.min, 250);
	assert_int_equal(vm.cpu.max, 2000);
	assert_int_equal(vm.cpu.use, 500);
	assert_int_equal(vm.mem.use, 2);
	assert_int_equal(vm.mem.slot_size, GiB);
	assert_true(vm.config.auto_migration_enabled);
	assert_true(vm.config.has_scaling_config);
	assert_int_equal(vm.config.scaling_config.set, AG_SC_LOAD_AVERAGE_FRACTION_TARGET);
	assert_true(vm.has_current_revision);
	assert_int_equal(vm.current_revision.value, 12);
	assert_int_equal(vm.current_revision.flags, 1);
	assert_int_equal(ag_vm_info_validate(&vm, &oob, NULL), 0);
	assert_false(oob);
	r = ag_vm_info_using(&vm);
	assert_int_equal(r.milli_cpu, 500);
	assert_int_equal(r.mem_bytes, 2 * GiB);
	r = ag_vm_info_max(&vm);
	assert_int_equal(r.mem_bytes, 8 * GiB);

	/* byte-identical re-encoding, in Go's field order */
	e = ag_vm_info_encode(&vm);
	assert_non_null(e);
	s = json_dumps(e, JSON_COMPACT | JSON_REAL_PRECISION(15));
	assert_string_equal(s, vm_example);

	/* optional parts absent */
	json_object_del(json_object_get(v, "config"), "scalingConfig");
	json_object_del(v, "currentRevision");
	assert_int_equal(ag_vm_info_decode(v, &vm, &err), 0);
	assert_false(vm.config.has_scaling_config);
	assert_false(vm.has_current_revision);
}

/* Mutates the example with a JSON merge of `patch` at `path` (top level or
 * one object deep) and expects a decode or validate error naming field. */
static void vm_err(const char *obj, const char *key, const char *value, const char *field,
		   bool at_validate)
{
	_cleanup_(json_decrefp) json_t *v = parse(vm_example), *x = NULL;
	struct ag_vm_info vm;
	struct vmact_err err = { 0 };
	json_t *target = obj ? json_object_get(v, obj) : v;
	int r;

	if (value) {
		x = parse(value);
		json_object_set(target, key, x);
	} else {
		json_object_del(target, key);
	}
	r = ag_vm_info_decode(v, &vm, &err);
	if (at_validate) {
		assert_int_equal(r, 0);
		r = ag_vm_info_validate(&vm, NULL, &err);
	}
	if (r == 0 || !strstr(err.msg, field)) {
		print_error("%s.%s=%s: r=%d \"%s\"\n", obj ? obj : "", key,
			    value ? value : "(deleted)", r, err.msg);
		fail();
	}
}

/* Changes to the example VmInfo and the error each gives: obj.key set to
 * value (NULL: deleted), the field the message names, and whether decoding
 * succeeds and validation refuses. */
static const struct {
	const char *obj, *key, *value, *field;
	bool at_validate;
} vm_errors[] = {
	{ NULL, "name", NULL, "name", false },
	{ NULL, "name", "5", "name", false },
	{ NULL, "namespace", "\"0123456789012345678901234567890123456789012345678901234567890123\"",
	  "namespace", false },
	{ "cpu", "use", NULL, "cpu.use", false },
	{ "cpu", "max", "\"two\"", "cpu.max", false },
	{ "mem", "use", "70000", "mem", false },
	{ "mem", "min", "1.5", "mem", false },
	{ "mem", "slotSize", NULL, "mem.slotSize", false },
	{ "config", "scalingEnabled", "\"true\"", "config", false },
	{ "config", "scalingConfig", "{\"enableLFCMetrics\":\"yes\"}", "enableLFCMetrics", false },
	{ NULL, "currentRevision", "{\"revision\":{\"value\":1},\"updatedAt\":\"x\"}", "flags",
	  false },
	/* semantic checks */
	{ "cpu", "min", "\"40m\"", "cpu.min", true },
	{ "cpu", "max", "513", "cpu.max", true },
	{ "cpu", "min", "3", "cpu.min", true },
	{ "mem", "min", "9", "mem.min", true },
	{ "mem", "slotSize", "0", "slotSize", true },
	{ "config", "scalingConfig", "{\"memoryUsageFractionTarget\":1.5}",
	  "memoryUsageFractionTarget", true },
};

static void test_vm_info_errors(void **state)
{
	for (size_t i = 0; i < sizeof(vm_errors) / sizeof(vm_errors[0]); i++)
		vm_err(vm_errors[i].obj, vm_errors[i].key, vm_errors[i].value, vm_errors[i].field,
		       vm_errors[i].at_validate);
}

static void test_vm_info_apply_bounds(void **state)
{
	_cleanup_(json_decrefp) json_t *v = parse(vm_example);
	struct ag_vm_info vm;
	struct ag_scaling_bounds b;
	bool oob = false;

	assert_int_equal(ag_vm_info_decode(v, &vm, NULL), 0);
	bounds_ok("{\"min\":{\"cpu\":1,\"mem\":\"4Gi\"},\"max\":{\"cpu\":1.25,\"mem\":\"5Gi\"}}",
		  &b);
	assert_int_equal(ag_vm_info_apply_bounds(&vm, &b, NULL), 0);
	assert_int_equal(vm.cpu.min, 1000);
	assert_int_equal(vm.cpu.max, 1250);
	assert_int_equal(vm.mem.min, 4);
	assert_int_equal(vm.mem.max, 5);
	/* usage below the new min is a warning, not an error */
	assert_int_equal(ag_vm_info_validate(&vm, &oob, NULL), 0);
	assert_true(oob);
	b.max.mem_bytes = GiB + 1;
	assert_int_equal(ag_vm_info_apply_bounds(&vm, &b, NULL), -EINVAL);
	assert_int_equal(vm.mem.max, 5); /* unchanged */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),       cmocka_unit_test(test_overrides_decode),
		cmocka_unit_test(test_validate),       cmocka_unit_test(test_config_decode_encode),
		cmocka_unit_test(test_bounds),         cmocka_unit_test(test_vm_info_roundtrip),
		cmocka_unit_test(test_vm_info_errors), cmocka_unit_test(test_vm_info_apply_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
