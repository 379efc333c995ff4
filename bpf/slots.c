/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/slots.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/proc.h"

/* FNV-1a. */
static unsigned name_hash(const struct smp_slots *reg, const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h & (reg->nbuckets - 1);
}

int smp_slots_init(struct smp_slots *reg, unsigned max, struct vmact_err *err)
{
	*reg = (struct smp_slots){ .max = max, .nbuckets = 16 };
	while (reg->nbuckets < max)
		reg->nbuckets *= 2;
	reg->e = calloc(max, sizeof(*reg->e));
	reg->bucket = malloc(reg->nbuckets * sizeof(*reg->bucket));
	if (!reg->e || !reg->bucket) {
		free(reg->e);
		free(reg->bucket);
		*reg = (struct smp_slots){ 0 };
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	}
	for (unsigned i = 0; i < reg->nbuckets; i++)
		reg->bucket[i] = -1;
	/* The entries from reg->fresh on are left as calloc() gave them,
	 * never written: a host with a few VMs does not pay in private
	 * memory for max_vms of them (doc/actuation.md, "vmactd's own
	 * footprint"). */
	return 0;
}

/* Back to an unused entry, keeping its place in the free list. */
static void entry_clear(struct smp_entry *e)
{
	free(e->name);
	free(e->cgroup);
	if (e->cs_fd >= 0)
		close(e->cs_fd);
	e->cs_fd = -1;
	e->used = false;
	e->name = e->cgroup = NULL;
	e->tgid = 0;
	e->rs = (struct smp_readout_state){ 0 };
}

void smp_slots_done(struct smp_slots *reg)
{
	for (unsigned i = 0; reg->e && i < reg->fresh; i++)
		entry_clear(&reg->e[i]);
	free(reg->e);
	free(reg->bucket);
	*reg = (struct smp_slots){ 0 };
}

int smp_slots_find(const struct smp_slots *reg, const char *name)
{
	if (!reg->nbuckets)
		return -ENOENT;
	for (int i = reg->bucket[name_hash(reg, name)]; i >= 0; i = reg->e[i].next)
		if (!strcmp(reg->e[i].name, name))
			return i;
	return -ENOENT;
}

static bool valid_name(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	return true;
}

int smp_slots_check(const struct smp_slots *reg, const char *name, pid_t tgid,
		    struct vmact_err *err)
{
	int r;

	if (!valid_name(name))
		return vmact_err_set(err, EINVAL, "sampler: name: must be 1-255 printable bytes");
	if (tgid <= 0)
		return vmact_err_set(err, EINVAL, "sampler: %s: tgid: %d is not a process id", name,
				     (int)tgid);
	r = smp_proc_tgid(tgid);
	if (r < 0)
		return vmact_err_set(err, -r, "sampler: %s: tgid: no process %d", name, (int)tgid);
	if (r != tgid)
		return vmact_err_set(
			err, EINVAL,
			"sampler: %s: tgid: %d is a thread of process %d, not a process", name,
			(int)tgid, r);
	if (smp_slots_find(reg, name) >= 0)
		return vmact_err_set(err, EEXIST, "sampler: %s: already registered", name);
	for (unsigned i = 0; i < reg->fresh; i++)
		if (reg->e[i].used && reg->e[i].tgid == tgid)
			return vmact_err_set(err, EEXIST,
					     "sampler: %s: tgid %d already registered as %s", name,
					     (int)tgid, reg->e[i].name);
	if (reg->fresh == reg->max && VMACT_LIST_IS_EMPTY(reg->free))
		return vmact_err_set(err, ENOSPC, "sampler: %s: all %u slots in use (max_vms)",
				     name, reg->max);
	return 0;
}

int smp_slots_reserve(struct smp_slots *reg, const char *name, pid_t tgid, const char *cgroup,
		      struct vmact_err *err)
{
	struct smp_entry *e = reg->free;

	/* Never-used slots first, then the freed ones, oldest first. */
	if (reg->fresh < reg->max) {
		e = &reg->e[reg->fresh];
		e->cs_fd = -1;
	}
	if (!e)
		return vmact_err_set(err, ENOSPC, "sampler: %s: all %u slots in use (max_vms)",
				     name, reg->max);
	e->tgid = tgid;
	e->name = strdup(name);
	if (!e->name || (cgroup && !(e->cgroup = strdup(cgroup)))) {
		entry_clear(e);
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	}
	return (int)(e - reg->e);
}

void smp_slots_commit(struct smp_slots *reg, unsigned slot)
{
	struct smp_entry *e = &reg->e[slot];

	unsigned b = name_hash(reg, e->name);

	if (slot == reg->fresh)
		reg->fresh++;
	else
		VMACT_LIST_REMOVE(free, reg->free, e);
	e->used = true;
	e->next = reg->bucket[b];
	reg->bucket[b] = (int)slot;
	reg->count++;
}

void smp_slots_abort(struct smp_slots *reg, unsigned slot)
{
	entry_clear(&reg->e[slot]);
}

void smp_slots_release(struct smp_slots *reg, unsigned slot)
{
	struct smp_entry *e = &reg->e[slot];
	int *link = &reg->bucket[name_hash(reg, e->name)];

	while (*link >= 0 && *link != (int)slot)
		link = &reg->e[*link].next;
	if (*link == (int)slot)
		*link = e->next;
	entry_clear(e);
	VMACT_LIST_APPEND(free, reg->free, e);
	reg->count--;
}
