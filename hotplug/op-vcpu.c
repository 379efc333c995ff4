/* SPDX-License-Identifier: Apache-2.0 */
/* vCPU operations: plug in one call, unplug one named vCPU per call. */
#include <errno.h>
#include <stdio.h>

#include "hotplug/op.h"
#include "hotplug/refusal.h"

#define VCPU_POLL_US 20000ULL

static int set_vcpus(virDomainPtr dom, const void *arg)
{
	return virDomainSetVcpusFlags(dom, *(const unsigned *)arg, VIR_DOMAIN_AFFECT_LIVE);
}

/* Unplugs one named vCPU. Used instead of a count because after an unplug
 * that outlived libvirt's wait libvirt's count is stale, and a count would
 * make it unplug a vCPU QEMU no longer has. */
static int disable_vcpu(virDomainPtr dom, const void *arg)
{
	char map[16];

	snprintf(map, sizeof(map), "%d", *(const int *)arg);
	return virDomainSetVcpu(dom, map, 0, VIR_DOMAIN_AFFECT_LIVE);
}

/* The highest vCPU QEMU still runs, never vCPU 0; -1 when unknown. */
static int last_qemu_vcpu(const struct hp_state *st)
{
	int hi;

	if (st->qemu_vcpus < 0 || !st->qemu_vcpu_mask)
		return -1;
	hi = 63 - __builtin_clzll(st->qemu_vcpu_mask);
	return hi > 0 ? hi : -1;
}

struct vcpu_step {
	unsigned want;
	bool timed_out_call;
};

static int vcpus_reached(struct hp_op *op, const struct hp_state *st, const struct hp_seen *seen,
			 void *arg, struct vmact_err *e)
{
	const struct vcpu_step *s = arg;

	if (hp_state_vcpus(st) == s->want)
		return 1;
	vmact_err_set(e, ETIMEDOUT, "vCPUs: asked for %u, QEMU runs %u after the deadline%s",
		      s->want, hp_state_vcpus(st),
		      s->timed_out_call ? " (libvirt's unplug wait timed out)" : "");
	return 0;
}

void hp_op_vcpus(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	unsigned target = op->req.vcpus;
	struct vcpu_step s = { 0 };
	int r;

	if (!hp_op_begin(op, deadline))
		return;
	/* The one rule (hotplug.h, "vCPU changes refused"), as the planner
	 * reads it from the same field. */
	if (st->vcpus_refused && target != hp_state_vcpus(st)) {
		if (st->vcpus_refusal == HP_VCPUS_DESYNC)
			vmact_err_set(
				&e, EIO,
				"libvirt counts %u vCPUs while QEMU runs %u: an earlier vCPU "
				"unplug outlived libvirt's wait; refusing vCPU changes on this "
				"VM (re-plugging crashes QEMU 7.2) until it restarts",
				st->vcpus_current, hp_state_vcpus(st));
		else
			vmact_err_set(
				&e, EIO,
				"an earlier vCPU unplug on this VM outlived libvirt's wait; "
				"vCPU changes stay refused until the VM restarts, even though "
				"libvirt's count is right again (re-plugging crashed QEMU 7.2)");
		hp_op_finish(op, -EIO, &e);
		return;
	}
	if (target < 1 || target > st->vcpus_max) {
		vmact_err_set(&e, ERANGE, "vcpus %u outside 1..%u (<vcpu> maximum)", target,
			      st->vcpus_max);
		hp_op_finish(op, -ERANGE, &e);
		return;
	}
	while (hp_state_vcpus(st) != target) {
		unsigned cur = hp_state_vcpus(st);
		/* Plug in one call; unplug one vCPU per call so that libvirt's
		 * 5 s wait covers a single vCPU and a timeout leaves a known
		 * state. */
		unsigned step = target > cur ? target : cur - 1;
		int victim = step < cur ? last_qemu_vcpu(st) : -1;

		if (victim > 0)
			r = hp_op_call(op, "virDomainSetVcpu", disable_vcpu, &victim, &e);
		else if (step < cur && st->vcpus_refused)
			r = vmact_err_set(&e, EIO, "cannot tell which vCPU QEMU still runs");
		else
			r = hp_op_call(op, "virDomainSetVcpusFlags", set_vcpus, &step, &e);
		/* An unplug libvirt did not see through (its wait timed out, or
		 * libvirtd went away meanwhile, after which it resyncs and the
		 * disagreement is no longer visible) leaves QEMU 7.2 in the
		 * state in which a re-plug crashed it: refuse later vCPU
		 * changes. A visible disagreement the reads record. */
		if (step < cur && (r == -ETIMEDOUT || r == -ECONNRESET))
			hp_vcpus_refuse(op->uuid, st->id);
		if (r == -ETIMEDOUT) {
			/* "vcpu unplug request timed out": the unplug may still
			 * complete; the wait below decides. */
			s.timed_out_call = true;
			vmact_err_reset(&e);
		} else if (r < 0) {
			hp_op_settle(op, deadline, r, &e);
			return;
		}
		s.want = step;
		if (hp_op_wait(op, deadline, VCPU_POLL_US, vcpus_reached, &s) < 0)
			return;
	}
	if (st->vcpus_refusal == HP_VCPUS_DESYNC) {
		/* rc 0: the target is reached; the message stays as a warning. */
		vmact_err_set(
			&op->res.err, EIO,
			"vCPU unplug completed in QEMU (%u vCPUs) but libvirt still counts %u: "
			"libvirt's 5 s unplug wait timed out and it never saw the removal; "
			"vCPU changes on this VM stay refused until it restarts",
			hp_state_vcpus(st), st->vcpus_current);
		op->res.rc = 0;
		return;
	}
	hp_op_finish(op, 0, NULL);
}
