/* SPDX-License-Identifier: Apache-2.0 */
/* The per-VM scaling configuration surface (doc/protocols.md,
 * "ScalingBounds", "ScalingConfig" and "VmInfo"):
 * ScalingConfig (agent default config and the autoscaling.neon.tech/config
 * annotation), ScalingBounds (autoscaling.neon.tech/bounds) and VmInfo.
 *
 * JSON keys are the Go ones (camelCase); like Go's encoding/json they are
 * matched case-insensitively on decode. Every decoder is strict about types
 * and names the offending field in err. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent-glue/codec/quantity.h"
#include "base/error.h"

struct ag_scaling_config {
	double load_average_fraction_target; /* 0 <= x < 2 */
	double memory_usage_fraction_target; /* 0 <= x < 1 */
	double memory_total_fraction_target; /* 0 <= x < 1 */
	bool enable_lfc_metrics;
	bool lfc_use_largest_window;
	double lfc_to_memory_ratio;                    /* > 0 (vmact; Go does not check) */
	int32_t lfc_min_wait_before_downscale_minutes; /* >= window (Go crashes otherwise) */
	int32_t lfc_window_size_minutes;               /* >= 2 (Go crashes otherwise) */
	double cpu_stable_zone_ratio;
	double cpu_mixed_zone_ratio;
};

/* One bit per field of ag_scaling_config, in Go declaration order. */
enum ag_scaling_field {
	AG_SC_LOAD_AVERAGE_FRACTION_TARGET = 1u << 0,
	AG_SC_MEMORY_USAGE_FRACTION_TARGET = 1u << 1,
	AG_SC_MEMORY_TOTAL_FRACTION_TARGET = 1u << 2,
	AG_SC_ENABLE_LFC_METRICS = 1u << 3,
	AG_SC_LFC_USE_LARGEST_WINDOW = 1u << 4,
	AG_SC_LFC_TO_MEMORY_RATIO = 1u << 5,
	AG_SC_LFC_MIN_WAIT_BEFORE_DOWNSCALE_MINUTES = 1u << 6,
	AG_SC_LFC_WINDOW_SIZE_MINUTES = 1u << 7,
	AG_SC_CPU_STABLE_ZONE_RATIO = 1u << 8,
	AG_SC_CPU_MIXED_ZONE_RATIO = 1u << 9,
	AG_SC_ALL = (1u << 10) - 1,
};

/* The annotation form: every field optional (Go's omitempty pointers). Only
 * the fields whose bit is in `set` carry a value. */
struct ag_scaling_overrides {
	unsigned set;
	struct ag_scaling_config v;
};

/* The agent defaults shipped in autoscaler-agent/config_map.yaml
 * (doc/protocols.md, "Scaling config defaults"). */
void ag_scaling_config_defaults(struct ag_scaling_config *out);

/* Decode flags. */
enum {
	/* Every field must be present (the agent's own default config). */
	AG_SCALING_REQUIRE_ALL = 1u << 0,
	/* Unknown keys are an error (Go's config-file reader uses
	 * DisallowUnknownFields; the annotation reader ignores them). */
	AG_SCALING_REJECT_UNKNOWN = 1u << 1,
};

/* Decodes a ScalingConfig object. A key whose value is null counts as
 * absent, as a nil Go pointer does. Numbers may be integers or reals; the
 * two minute counts must be JSON integers; booleans must be true/false. Does
 * not validate ranges (see the validate functions). */
int ag_scaling_overrides_decode(const json_t *v, unsigned flags, struct ag_scaling_overrides *out,
				struct vmact_err *err);
/* The fields that are set, in Go order and spelling (omitempty). */
json_t *ag_scaling_overrides_encode(const struct ag_scaling_overrides *o);

/* Go's ValidateOverrides: only the three fraction targets are range-checked
 * (fields that are set). */
int ag_scaling_overrides_validate(const struct ag_scaling_overrides *o, struct vmact_err *err);

/* Each set override replaces the default (Go's WithOverrides). o may be NULL. */
void ag_scaling_config_with_overrides(const struct ag_scaling_config *defaults,
				      const struct ag_scaling_overrides *o,
				      struct ag_scaling_config *out);

/* Validates an effective config: the Go checks plus what the Go agent would
 * crash on (window < 2, min wait < window) and values the arithmetic cannot
 * use (non-finite numbers, lfcToMemoryRatio <= 0). */
int ag_scaling_config_validate(const struct ag_scaling_config *c, struct vmact_err *err);

/* The agent's default config: all fields required, unknown keys rejected,
 * then ag_scaling_config_validate. */
int ag_scaling_config_decode(const json_t *v, struct ag_scaling_config *out, struct vmact_err *err);
json_t *ag_scaling_config_encode(const struct ag_scaling_config *c);

/* Effective config of a VM: defaults with the annotation applied, then
 * validated. A config the Go agent would accept but crash on later is
 * rejected here with an error naming the field. */
int ag_scaling_config_effective(const struct ag_scaling_config *defaults,
				const struct ag_scaling_overrides *o, struct ag_scaling_config *out,
				struct vmact_err *err);

/* ScalingBounds (doc/protocols.md, "ScalingBounds"), in internal units:
 * CPU in milli-CPUs, memory in bytes, both as given by the annotation
 * (before slot rounding). */
struct ag_scaling_bounds {
	struct vmact_resources min, max;
};

/* {"min":{"cpu":Q,"mem":Q},"max":{...}}; all four values required. */
int ag_scaling_bounds_decode(const json_t *v, struct ag_scaling_bounds *out, struct vmact_err *err);
json_t *ag_scaling_bounds_encode(const struct ag_scaling_bounds *b);
/* Go's Validate: cpu non-zero, mem > 0 and a multiple of slot_bytes; plus
 * (vmact) slot counts must fit uint16 instead of silently wrapping. */
int ag_scaling_bounds_validate(const struct ag_scaling_bounds *b, uint64_t slot_bytes,
			       struct vmact_err *err);

/* VmInfo (doc/protocols.md, "VmInfo"). */
#define AG_VM_NAME_MAX      253 /* DNS subdomain (k8s object names) */
#define AG_VM_NAMESPACE_MAX 63  /* DNS label */

struct ag_revision {
	int64_t value;
	uint32_t flags;
	char updated_at[64]; /* RFC 3339 text as the peer wrote it */
};

struct ag_vm_info {
	char name[AG_VM_NAME_MAX + 1];
	char namespace_[AG_VM_NAMESPACE_MAX + 1];
	struct {
		uint32_t min, max, use; /* milli-CPU */
	} cpu;
	struct {
		uint16_t min, max, use; /* slots */
		uint64_t slot_size;     /* bytes */
	} mem;
	struct {
		bool auto_migration_enabled;
		bool always_migrate;
		bool scaling_enabled;
		bool has_scaling_config;
		struct ag_scaling_overrides scaling_config;
	} config;
	bool has_current_revision;
	struct ag_revision current_revision;
};

/* Every field required except config.scalingConfig and currentRevision
 * (absent or null); unknown keys ignored (Go). Structural checks only: call
 * ag_vm_info_validate for the semantic ones. */
int ag_vm_info_decode(const json_t *v, struct ag_vm_info *out, struct vmact_err *err);
json_t *ag_vm_info_encode(const struct ag_vm_info *vm);

/* slot_size > 0; min and max CPU within [50m, 512000m]; min <= max per field;
 * the scaling config overrides pass ValidateOverrides. *use_out_of_bounds
 * (may be NULL) reports use outside [min, max], which the Go agent only
 * warns about. */
int ag_vm_info_validate(const struct ag_vm_info *vm, bool *use_out_of_bounds,
			struct vmact_err *err);

/* Applies validated bounds: CPU as is, memory as whole slots. */
int ag_vm_info_apply_bounds(struct ag_vm_info *vm, const struct ag_scaling_bounds *b,
			    struct vmact_err *err);

/* Using()/Min()/Max() in internal units. */
struct vmact_resources ag_vm_info_using(const struct ag_vm_info *vm);
struct vmact_resources ag_vm_info_min(const struct ag_vm_info *vm);
struct vmact_resources ag_vm_info_max(const struct ag_vm_info *vm);
