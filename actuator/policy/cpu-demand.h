/* SPDX-License-Identifier: Apache-2.0 */
/* The reactive CPU policy: how much CPU a VM wants, from what the sampler
 * saw its vCPU threads do (doc/policy.md).
 *
 * The Neon goal-CU formula reads the guest's load average. Seen from the
 * host, a VM's vCPU threads can never be more runnable than the VM has
 * vCPUs, so the guest's own queue beyond them is invisible; what is visible
 * is that every vCPU the VM is allowed wants to run all the time. This
 * module turns the sampler's exact per-window figures into a class and a
 * CPU goal:
 *
 *   throttled   the VM's own CFS quota holds its vCPUs back: raise the
 *               quota first, up to the vCPUs it has;
 *   saturated   its allowed CPU is (nearly) all in use by its vCPUs:
 *               grow it, at least one compute unit, at once;
 *   contended   its vCPUs wait for host CPUs that others hold: growing
 *               does not help (the arbiter's business), hold;
 *   ok          demand within the target share of what it has: shrink only
 *               when the slow average has stayed below a lower goal.
 *
 * Fast up: growth needs `up_window` of saturation (sub-second), counted
 * as the trailing readouts that each reach the target plus the busy part
 * of the one before them (a load that began within it); careful down: the goal to shrink to comes from an
 * exponential average with time constant `down_tau`, must stay below the
 * allowance for `down_hold`, and is computed with the lower
 * `down_target`, so a VM that was just grown does not shrink back into
 * saturation (hysteresis). A growth back to the size a shrink left, within
 * `down_memory` of it, was a flap: that size is then a floor of shrinks
 * for as long again, twice as long at each further flap (at most 8
 * times), renewed by readings that would saturate the next size down.
 *
 * Optionally the guest's own 1-minute load average (its exporter,
 * <vmact:metrics>) adds what the host cannot see: the queue beyond the
 * vCPUs. It is a floor: the goal is at least ceil_cu(load1 / target), in
 * every class but contended (more vCPUs do not help there), and a shrink
 * never goes below it. Being a minute average it is never the reason to
 * grow fast or shrink; the host's figures still do both.
 *
 * Pure: no I/O, no clock of its own (times are the caller's monotonic ns). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum act_cpu_class {
	ACT_CPU_OK = 0,
	ACT_CPU_SATURATED,
	ACT_CPU_THROTTLED,
	ACT_CPU_CONTENDED,
};

const char *act_cpu_class_name(enum act_cpu_class c);

struct act_cpu_policy {
	double target;          /* share of the allowance demand may use (0.9) */
	double down_target;     /* share used to size a shrink (0.75) */
	int64_t up_window;      /* ns of saturation a growth needs (200 ms) */
	int64_t down_tau;       /* ns, slow average's time constant (20 s) */
	int64_t down_hold;      /* ns the shrink goal must hold (15 s) */
	int64_t settle;         /* ns after a resize before the next growth (2 s) */
	int64_t down_memory;    /* ns a shrink is remembered (300 s), 0: never */
	double contended_share; /* run delay not from throttling, per runnable (0.25) */
	double throttled_share; /* throttled time per window (0.05) */
	uint32_t cu_milli;      /* compute unit's CPU: goals are whole units */
	/* The VM's bounds (0: none). A goal is clamped to them, so that a
	 * figure moving below the minimum (or above the maximum) is not a
	 * new goal: an idle guest at its minimum whose unclamped goal went
	 * 0.25 <-> 0.5 CPU at every readout made a decision event each time
	 * while its size never moved. */
	uint32_t min_milli, max_milli;
};

void act_cpu_policy_defaults(struct act_cpu_policy *p);

/* One readout of the sampler for one VM. */
struct act_cpu_window {
	int64_t at;                /* end of the window (monotonic ns) */
	int64_t len;               /* its length (ns) */
	unsigned vcpus;            /* vCPUs the VM has */
	uint32_t quota_milli;      /* its CFS quota as milli-CPU; 0 = none */
	uint64_t vcpu_runnable_ns; /* sum over vCPU threads of on-CPU + run delay */
	uint64_t vcpu_delay_ns;    /* sum over vCPU threads of run delay */
	uint64_t throttled_ns;     /* the VM group's throttled time in the window */
	/* No vCPU thread was runnable at the window's end: the guest has
	 * halted them all, so whatever load the window's average shows has
	 * ended (false where the sampler cannot tell). */
	bool ended;
};

#define ACT_CPU_RING 16

struct act_cpu_demand {
	struct act_cpu_window ring[ACT_CPU_RING];
	unsigned n, head;
	bool has_slow;
	double slow;  /* CPUs, slow average of the demand */
	bool resized; /* a resize happened at resized_at */
	int64_t resized_at;
	bool below; /* shrink goal below the allowance since below_since */
	int64_t below_since;
	bool grew; /* the last growth of the goal was decided at grew_at */
	int64_t grew_at;
	bool has_guest_load; /* the guest's load1, from its exporter */
	double guest_load;
	bool shrank; /* the last shrink of the goal left shrank_from at shrank_at */
	int64_t shrank_at;
	uint32_t shrank_from;
	uint32_t floor_milli; /* flap memory: no shrink below it until floor_until */
	int64_t floor_until;
	unsigned flaps; /* flaps in a row, each doubling the memory */
};

/* What one decision sees and wants. */
struct act_cpu_decision {
	enum act_cpu_class cls;
	double demand;            /* CPUs wanted over the up window */
	double busy;              /* demand / allowance */
	double slow;              /* slow average (CPUs) */
	double contended;         /* run delay not from throttling / runnable */
	double throttled;         /* throttled time / window */
	int64_t span;             /* ns the up window really covered */
	uint32_t allowance_milli; /* min(vCPUs, quota) */
	uint32_t goal_milli;      /* CPU the VM should have now */
	bool has_guest_load;
	double guest_load;          /* the guest's load1 */
	uint32_t guest_floor_milli; /* ceil_cu(load1 / target); 0 without it */
	uint32_t flap_floor_milli;  /* the flap memory's floor in force; 0: none */
	bool flap;                  /* this growth took back a recent shrink */
	int64_t flap_hold;          /* ns its size is now a floor of shrinks */
	int64_t flap_after;         /* ns since the shrink it took back */
};

void act_cpu_demand_init(struct act_cpu_demand *d);
/* Adds a readout; windows of zero length are ignored. */
void act_cpu_demand_feed(struct act_cpu_demand *d, const struct act_cpu_policy *p,
			 const struct act_cpu_window *w);
/* The guest's 1-minute load average (has false: none, or no longer
 * trusted); the floor of the goal from then on. */
void act_cpu_demand_guest_load(struct act_cpu_demand *d, bool has, double load1);
/* Forgets the fast history (after a resize the old windows describe another
 * VM size); the slow average stays. */
void act_cpu_demand_resized(struct act_cpu_demand *d);
/* The decision at the latest readout, for a VM whose goal in force is
 * cur_milli (0: none yet; the allowance then stands for it). Returns false
 * when there is nothing to decide on yet (no readout).
 *
 * Whatever the figures, the decision keeps four promises (doc/policy.md,
 * "What a decision never does"; test_cpu_demand's property walk): the
 * goal never goes below cur_milli unless the VM is in the ok class and the
 * down hold has passed since the last growth; it never goes above
 * cur_milli on a readout at whose end no vCPU was runnable; a hold (not
 * yet sustained, settling after a resize, contended) keeps cur_milli; and
 * it stays within the bounds. */
bool act_cpu_demand_decide(struct act_cpu_demand *d, const struct act_cpu_policy *p,
			   uint32_t cur_milli, struct act_cpu_decision *out);
/* "saturated: vCPUs 98 % busy for 0.4 s, goal 1250m" — for logs. */
int act_cpu_decision_format(const struct act_cpu_decision *dec, char *buf, unsigned len);
/* The same decision as an operator reads it, for a goal that changes from
 * from_milli (0: none before): "grow to 2 vCPUs (1.250 CPU): vCPUs 98 %
 * busy for 0.4 s" — the control API's events and `vmactl show`. */
int act_cpu_decision_reason(const struct act_cpu_decision *dec, uint32_t from_milli, char *buf,
			    unsigned len);
