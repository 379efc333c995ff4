/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler's VMs: a fixed table of max_vms slots (the slot is the key of
 * the BPF maps), looked up by name, each with what its next readout is
 * measured against. Backends keep their own per-slot state; this knows
 * nothing of them. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/list.h"
#include "bpf/readout.h"

struct smp_entry {
	bool used;
	char *name;
	pid_t tgid;
	char *cgroup; /* directory of its cpu.stat, or NULL */
	/* That cpu.stat, open between readouts (-1: not open): re-read with
	 * pread, not opened and closed each policy tick (doc/actuation.md,
	 * "vmactd's own footprint"). */
	int cs_fd;
	struct smp_readout_state rs;
	/* The watch (sampler.h): the registration's generation, which the
	 * kernel's windows carry (a slot's next VM has another), and
	 * whether it is watched. */
	uint64_t watch_gen;
	bool watched;
	void *watch_owner;
	VMACT_LIST_FIELDS(struct smp_entry, free);
	int next; /* next used slot in its name bucket, or -1 */
};

struct smp_slots {
	struct smp_entry *e; /* max entries, indexed by slot */
	unsigned max, count;
	/* Free slots: first those never used (fresh and on: untouched
	 * memory), then those freed, oldest-freed first: a slot is reused as
	 * late as possible, so a scheduler hook still finishing an update for
	 * the VM that held it (a window of microseconds) cannot leak into the
	 * next. */
	unsigned fresh;
	struct smp_entry *free;
	/* Used slots by name hash: every readout looks its VM up by name, 4
	 * times a second per VM (doc/policy.md, "What the faster readout
	 * costs"). nbuckets is a power of two. */
	int *bucket;
	unsigned nbuckets;
};

int smp_slots_init(struct smp_slots *reg, unsigned max, struct vmact_err *err);
void smp_slots_done(struct smp_slots *reg);

int smp_slots_find(const struct smp_slots *reg, const char *name); /* slot or -ENOENT */

/* Whether name and tgid can be registered: a printable name, a process
 * (not a thread) that exists, neither registered yet, and a free slot. */
int smp_slots_check(const struct smp_slots *reg, const char *name, pid_t tgid,
		    struct vmact_err *err);
/* Fills the next free slot for a VM that passed smp_slots_check and
 * returns it; it stays free until smp_slots_commit, and
 * smp_slots_abort gives it up. */
int smp_slots_reserve(struct smp_slots *reg, const char *name, pid_t tgid, const char *cgroup,
		      struct vmact_err *err);
void smp_slots_commit(struct smp_slots *reg, unsigned slot);
void smp_slots_abort(struct smp_slots *reg, unsigned slot);
/* Frees a used slot; it goes to the end of the free list. */
void smp_slots_release(struct smp_slots *reg, unsigned slot);
