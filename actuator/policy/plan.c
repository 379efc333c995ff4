/* SPDX-License-Identifier: Apache-2.0 */
/* Pure hotplug planning: which quota, vCPU and memory steps take a VM from
 * what it uses to a target, in which order, within its bounds, the
 * scheduler's permit and the vm-monitor's approval (see plan.h). */
#include "actuator/policy/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

static uint64_t round_down(uint64_t x, uint64_t unit)
{
	return unit ? x / unit * unit : x;
}

static uint64_t round_up(uint64_t x, uint64_t unit)
{
	return unit ? (x + unit - 1) / unit * unit : x;
}

static unsigned vcpus_for(uint32_t milli)
{
	return (unsigned)((milli + 999u) / 1000u);
}

/* The memory the layout can give closest to want without passing it
 * (from cur's side). */
static uint64_t mem_representable(uint64_t cur, uint64_t want, const struct act_vm_layout *l)
{
	uint64_t extra, unit, cap;

	if (want == cur)
		return cur;
	if (l->method == HP_METHOD_VIRTIO_MEM) {
		unit = l->vmem_block_bytes;
		cap = l->vmem_size_bytes;
	} else {
		unit = l->dimm_bytes;
		cap = (uint64_t)l->dimm_slots * l->dimm_bytes;
	}
	if (want <= l->base_bytes)
		extra = 0;
	else
		extra = want - l->base_bytes;
	extra = want > cur ? round_down(extra, unit) : round_up(extra, unit);
	if (extra > round_down(cap, unit))
		extra = round_down(cap, unit);
	want = l->base_bytes + extra;
	/* Never past cur in the other direction: a rounding that would turn
	 * a growth into a shrink (or back) means "nothing possible". */
	return want;
}

static int check_field(const char *what, uint64_t cur, uint64_t want, uint64_t min, uint64_t max,
		       bool has_permit, uint64_t permit, bool has_approved, uint64_t approved,
		       struct vmact_err *err)
{
	if (want > cur) {
		if (want > max)
			return vmact_err_set(err, ERANGE,
					     "%s %" PRIu64 " above the VM's max %" PRIu64, what,
					     want, max);
		if (!has_permit)
			return vmact_err_set(err, ERANGE,
					     "%s growth to %" PRIu64
					     " without a permit from the scheduler",
					     what, want);
		if (want > permit)
			return vmact_err_set(err, ERANGE,
					     "%s %" PRIu64 " above the permit %" PRIu64, what, want,
					     permit);
	} else if (want < cur) {
		if (want < min)
			return vmact_err_set(err, ERANGE,
					     "%s %" PRIu64 " below the VM's min %" PRIu64, what,
					     want, min);
		if (!has_approved)
			return vmact_err_set(err, ERANGE,
					     "%s shrink to %" PRIu64
					     " without the vm-monitor's approval",
					     what, want);
		if (want < approved)
			return vmact_err_set(err, ERANGE,
					     "%s %" PRIu64
					     " below what the vm-monitor approved (%" PRIu64 ")",
					     what, want, approved);
	}
	return 0;
}

int act_plan_hotplug(const struct vmact_resources *using_, const struct vmact_resources *want,
		     const struct act_plan_limits *lim, const struct act_vm_layout *l,
		     struct act_plan *out, struct vmact_err *err)
{
	struct vmact_resources t;
	uint64_t cpu;
	int r;

	memset(out, 0, sizeof(*out));
	r = check_field("cpu (milli-CPUs)", using_->milli_cpu, want->milli_cpu, lim->min.milli_cpu,
			lim->max.milli_cpu, lim->has_permit, lim->permit.milli_cpu,
			lim->has_approved, lim->approved.milli_cpu, err);
	if (r >= 0)
		r = check_field("memory (bytes)", using_->mem_bytes, want->mem_bytes,
				lim->min.mem_bytes, lim->max.mem_bytes, lim->has_permit,
				lim->permit.mem_bytes, lim->has_approved, lim->approved.mem_bytes,
				err);
	if (r < 0)
		return r;

	/* CPU: any milli-CPU count is a quota; the vCPUs are capped by the
	 * domain's maximum (a growth then stops at whole maximum vCPUs). */
	cpu = want->milli_cpu;
	{
		unsigned top = l->vcpus_refused ? l->vcpus_now : l->vcpus_max;

		if (cpu > using_->milli_cpu && vcpus_for((uint32_t)cpu) > top)
			cpu = (uint64_t)top * 1000u;
	}
	if ((want->milli_cpu > using_->milli_cpu && cpu < using_->milli_cpu) || cpu == 0)
		cpu = using_->milli_cpu;
	t.milli_cpu = (uint32_t)cpu;

	t.mem_bytes = mem_representable(using_->mem_bytes, want->mem_bytes, l);
	if ((want->mem_bytes > using_->mem_bytes && t.mem_bytes < using_->mem_bytes) ||
	    (want->mem_bytes < using_->mem_bytes && t.mem_bytes > using_->mem_bytes) ||
	    want->mem_bytes == using_->mem_bytes)
		t.mem_bytes = using_->mem_bytes;
	out->target = t;

	if (t.milli_cpu < using_->milli_cpu) {
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_QUOTA,
							  .milli = t.milli_cpu };
		if (!l->vcpus_refused && !l->keep_vcpus && vcpus_for(t.milli_cpu) < l->vcpus_now)
			out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_VCPUS,
								  .vcpus = vcpus_for(t.milli_cpu) };
	} else if (t.milli_cpu > using_->milli_cpu && !l->vcpus_refused &&
		   vcpus_for(t.milli_cpu) > l->vcpus_now) {
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_VCPUS,
							  .vcpus = vcpus_for(t.milli_cpu) };
	}
	if (t.mem_bytes != using_->mem_bytes)
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_MEM,
							  .mem_bytes = t.mem_bytes };
	if (t.milli_cpu > using_->milli_cpu)
		out->steps[out->n++] = (struct act_step){ .kind = ACT_STEP_QUOTA,
							  .milli = t.milli_cpu };
	return 0;
}

struct vmact_resources act_achieved(uint32_t quota_milli, unsigned vcpus, uint64_t mem_bytes)
{
	uint64_t cpu = (uint64_t)vcpus * 1000u;

	if (quota_milli && quota_milli < cpu)
		cpu = quota_milli;
	return (struct vmact_resources){ .milli_cpu = cpu > UINT32_MAX ? UINT32_MAX : (uint32_t)cpu,
					 .mem_bytes = mem_bytes };
}

void act_vm_layout_from_state(const struct hp_state *st, const struct hp_meta *meta,
			      uint64_t dimm_bytes, struct act_vm_layout *out)
{
	const struct hp_memdev *d;

	memset(out, 0, sizeof(*out));
	out->vcpus_max = st->vcpus_max;
	out->vcpus_now = hp_state_vcpus(st);
	out->vcpus_refused = st->vcpus_refused;
	out->base_bytes = st->base_kib * 1024u;
	out->method = meta->method;
	d = hp_state_memdev(st, meta->mem_alias, HP_MEM_VIRTIO_MEM);
	if (d) {
		out->vmem_size_bytes = d->size_kib * 1024u;
		out->vmem_block_bytes = d->block_kib * 1024u;
	}
	out->dimm_bytes = dimm_bytes;
	out->dimm_slots = st->slots;
	out->dimms_now = hp_state_dimms(st);
	if (meta->method == HP_METHOD_DIMM && st->max_memory_kib) {
		uint64_t room = st->max_memory_kib * 1024u - out->base_bytes;
		uint64_t fit = dimm_bytes ? room / dimm_bytes : 0;

		if (fit < out->dimm_slots)
			out->dimm_slots = (unsigned)fit;
	}
	if (meta->method == HP_METHOD_VIRTIO_MEM && !d)
		out->vmem_size_bytes = 0; /* nothing to resize: memory stays */
}
