/* SPDX-License-Identifier: Apache-2.0 */
/* Pure hotplug planning, unit-tested without I/O (tests/unit/test_plan.c).
 *
 * Hotplug ordering (act_plan_hotplug): the VM's CPU size is its CFS quota
 * (milli-CPUs x cgroup.cpu_quota_overcommit) over ceil(milli/1000) online
 * vCPUs. A shrink lowers the quota FIRST and unplugs after: the quota takes
 * effect at once, while a vCPU unplug can take libvirt's 5 s wait or
 * outlive it, so the VM is held to its new, smaller size from the first
 * moment. A growth plugs FIRST and raises the quota LAST: until the quota
 * is raised the extra vCPUs share the old quota, so a failure part-way
 * leaves the VM at its old size instead of above it. Memory, which has no
 * second knob, is changed between the two. Either way the VM's usable CPU
 * (min(quota, vCPUs)) never exceeds the larger of the old size and the
 * plugin's permit at any moment.
 *
 * Result feedback: after the steps (or the first failing one) the live
 * state is re-read and what the VM has (act_achieved) becomes the core's
 * `using`, not the target. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/resources.h"
#include "hotplug/hotplug.h"

/* What the VM can be resized to, from its live state. */
struct act_vm_layout {
	unsigned vcpus_max; /* <vcpu> maximum */
	unsigned vcpus_now; /* running vCPUs */
	/* vCPU changes are refused (hp_state.vcpus_refused): no vCPU is
	 * plugged or unplugged, the CPU size moves by the quota alone, within
	 * the vCPUs the VM has. */
	bool vcpus_refused;
	/* Shrink by the quota alone: vCPUs already plugged stay plugged
	 * (policy.cpu_shrink "quota"; doc/notes/vcpu-unplug.md), a growth plugs
	 * only what the quota cannot give. */
	bool keep_vcpus;
	uint64_t base_bytes; /* boot memory, cannot be unplugged */
	enum hp_mem_method method;
	/* virtio-mem: the device's size and block */
	uint64_t vmem_size_bytes, vmem_block_bytes;
	/* DIMMs: one DIMM per compute unit of memory */
	uint64_t dimm_bytes;
	unsigned dimm_slots; /* <maxMemory slots> */
	unsigned dimms_now;
};

/* The limits a hotplug must respect, besides the layout. */
struct act_plan_limits {
	struct vmact_resources min, max;
	bool has_permit; /* no permit: nothing may grow */
	struct vmact_resources permit;
	bool has_approved; /* no monitor approval: nothing may shrink */
	struct vmact_resources approved;
};

enum act_step_kind {
	ACT_STEP_QUOTA, /* write the CFS quota for `milli` */
	ACT_STEP_VCPUS, /* set the online vCPUs to `vcpus` */
	ACT_STEP_MEM,   /* resize guest memory to `mem_bytes` in total */
};

struct act_step {
	enum act_step_kind kind;
	uint32_t milli;
	unsigned vcpus;
	uint64_t mem_bytes;
};

#define ACT_PLAN_MAX_STEPS 4
struct act_plan {
	/* The target the layout can represent: between using and the wanted
	 * target, field by field (growth rounds down, shrink rounds up, so
	 * neither passes the wanted value). Equal to using: nothing to do. */
	struct vmact_resources target;
	unsigned n;
	struct act_step steps[ACT_PLAN_MAX_STEPS];
};

/* -ERANGE (naming the field and the bound) when `want` grows a field past
 * max or the permit (or without a permit), or shrinks one below min or the
 * monitor's approval (or without one). Belt and braces: the core already
 * keeps its targets inside these; a target outside them is never started. */
int act_plan_hotplug(const struct vmact_resources *using_, const struct vmact_resources *want,
		     const struct act_plan_limits *lim, const struct act_vm_layout *layout,
		     struct act_plan *out, struct vmact_err *err);

/* What the VM has: min(quota, vCPUs x 1000) milli-CPUs (quota_milli 0 =
 * no quota) and its memory. */
struct vmact_resources act_achieved(uint32_t quota_milli, unsigned vcpus, uint64_t mem_bytes);

/* The layout of a live domain for a VM's metadata (dimm_bytes: the
 * compute unit's memory). */
void act_vm_layout_from_state(const struct hp_state *st, const struct hp_meta *meta,
			      uint64_t dimm_bytes, struct act_vm_layout *out);
