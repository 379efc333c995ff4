/* SPDX-License-Identifier: Apache-2.0 */
/* The memory policy of a VM that vmact sizes on the host's own evidence
 * (doc/policy.md, "Memory without an agent"): no vm-monitor or informant
 * says when the guest runs short, so the guest's memory statistics do, as
 * the virtio balloon reports them (libvirt's balloon statistics) or, where the VM
 * offers them, its own exporter's (<vmact:metrics>). From a series of
 * samples it classifies the VM and proposes the memory it should have:
 *
 *   short    the guest pages: major faults or swap-in above a rate. It is
 *            already short of memory: grow at once, by a unit at least.
 *   filling  what it uses, projected `lead` ahead (no further than the
 *            growth was seen) at the rate its use has been growing, plus
 *            headroom, is more than it has: grow to that now, before it runs
 *            out (a guest allocating at a steady rate is given memory ahead
 *            of its allocation).
 *   ok       enough: shrink only when what it uses (its slow average, or
 *            now if higher) plus headroom has stayed below its size for
 *            `down_hold`, to that (never below min: the caller's bound).
 *
 * What the guest uses is MemTotal - MemAvailable: page cache it can drop
 * counts as free, so a guest short of memory for its cache shows it by
 * its major faults instead. Headroom is max(headroom_min, headroom_share x
 * used). Goals are the VM's plugged memory (the size vmact gives it) in
 * whole units: the guest's own overhead (plugged - MemTotal: the kernel's
 * memory map, reserved areas) is taken from the newest sample, or
 * `overhead` when the source has no MemTotal (the caller feeds no sample
 * taken before a resize ended, whose MemTotal would be the old size's).
 * What the guest uses does not depend on its size, so a resize keeps the
 * samples and their rates: a guest still allocating is met again at the
 * first sample after it. A resize restarts the shrink's hold.
 *
 * Pure: no I/O, no clock of its own (times are the caller's monotonic ns). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum act_mem_class {
	ACT_MEM_OK = 0,
	ACT_MEM_FILLING,
	ACT_MEM_SHORT,
};

/* "ok", "filling", "short". */
const char *act_mem_class_name(enum act_mem_class c);

enum act_mem_source {
	ACT_MEM_SRC_BALLOON = 0, /* libvirt's balloon statistics */
	ACT_MEM_SRC_GUEST,       /* the guest's exporter (<vmact:metrics>) */
};

/* "balloon stats", "guest metrics". */
const char *act_mem_source_name(enum act_mem_source s);

struct act_mem_policy {
	uint64_t headroom_min; /* bytes free at least (128 MiB) */
	double headroom_share; /* of what the guest uses (0.25) */
	int64_t lead;          /* ns a growing use is projected ahead at most (4 s) */
	int64_t trend_window;  /* ns the rates are taken over (4 s) */
	int64_t down_tau;      /* ns, slow average of use (20 s) */
	int64_t down_hold;     /* ns the shrink goal must hold (15 s) */
	double fault_rate;     /* major faults a second that mean short (100) */
	double swap_in_rate;   /* swap-in bytes a second that mean short (1 MiB) */
	uint64_t overhead;     /* plugged - MemTotal without a MemTotal (100 MiB) */
	uint64_t unit;         /* goals in whole units (the compute unit's memory) */
};

void act_mem_policy_defaults(struct act_mem_policy *p);

/* One reading of the guest's memory. */
struct act_mem_sample {
	int64_t at; /* when it was taken (monotonic ns) */
	enum act_mem_source source;
	uint64_t plugged;       /* the VM's memory (its size) at the time */
	uint64_t total;         /* MemTotal; 0: the source has none */
	uint64_t used;          /* MemTotal - MemAvailable */
	bool has_paging;        /* the two counters below are known */
	uint64_t major_faults;  /* since boot */
	uint64_t swap_in_bytes; /* since boot */
};

#define ACT_MEM_RING 16

struct act_mem_demand {
	struct act_mem_sample ring[ACT_MEM_RING];
	unsigned n, head;
	bool has_slow;
	double slow; /* bytes, slow average of use */
	int64_t slow_at;
	bool below; /* shrink goal below the size since below_since */
	int64_t below_since;
};

/* What one decision sees and wants. */
struct act_mem_decision {
	enum act_mem_class cls;
	enum act_mem_source source;
	uint64_t plugged, total, used;
	uint64_t headroom;   /* for what the goal is sized on */
	uint64_t projected;  /* used `lead` ahead */
	double growth;       /* bytes a second use grew over the span */
	double fault_rate;   /* major faults a second */
	double swap_in_rate; /* swap-in bytes a second */
	double slow;         /* bytes */
	int64_t span;        /* ns the rates cover; 0: one sample */
	uint64_t goal;       /* plugged memory the VM should have now */
};

void act_mem_demand_init(struct act_mem_demand *d);
/* Adds a sample (in time order; one not newer than the last is ignored). */
void act_mem_demand_feed(struct act_mem_demand *d, const struct act_mem_policy *p,
			 const struct act_mem_sample *s);
/* A resize happened: the shrink's hold starts again (the samples and the
 * slow average stay). */
void act_mem_demand_resized(struct act_mem_demand *d);
/* The decision at the newest sample; false when there is none. */
bool act_mem_demand_decide(struct act_mem_demand *d, const struct act_mem_policy *p,
			   struct act_mem_decision *out);
/* "filling: uses 612 MiB of 780 MiB, growing 60 MiB/s (balloon stats),
 * goal 1280 MiB" — for logs; 0, or -1 when it did not fit. */
int act_mem_decision_format(const struct act_mem_decision *dec, char *buf, unsigned len);
/* The same as an operator reads it, for a goal that changes from
 * from_bytes: "grow memory to 1280 MiB: uses 612 MiB of 780 MiB, growing
 * 60 MiB/s (balloon stats)". */
int act_mem_decision_reason(const struct act_mem_decision *dec, uint64_t from_bytes, char *buf,
			    unsigned len);
