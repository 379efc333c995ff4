/* SPDX-License-Identifier: Apache-2.0 */
/* Two reads vmactd needs besides hotplug.h, kept in their own header so
 * that hotplug.h stays free of libvirt types: a domain handle (for the
 * cgroup lookup in actuator/cgroup/cgroup-domain.h) and the guest's memory
 * statistics. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"

/* A new handle on the domain (virDomainFree it), or NULL with err set
 * (-ENOTCONN when libvirtd is away, -ENODEV when the domain is gone). */
virDomainPtr hp_domain_lookup(struct hp_conn *c, const char *uuid, struct vmact_err *err);

/* The domain an operator named, as virsh takes it: a UUID (any case,
 * with or without dashes) or a name. uuid (HP_UUID_LEN) and name
 * (HP_NAME_MAX) get libvirt's own spelling; -ENODEV when no domain is
 * called that. */
int hp_domain_resolve(struct hp_conn *c, const char *name_or_uuid, char *uuid, char *name,
		      struct vmact_err *err);

/* The domain's XML: its persistent definition (inactive) or what runs
 * (live). *xml is malloc'd. active/persistent (may be NULL) say which
 * the domain has. */
int hp_domain_xml(struct hp_conn *c, const char *uuid, bool inactive, char **xml, bool *active,
		  bool *persistent, struct vmact_err *err);

/* The guest's own view of its memory, from the balloon driver's statistics
 * (libvirt's balloon statistics). Needs <memballoon model='virtio'> with a
 * <stats period='N'/> and the guest's virtio_balloon driver. Only total
 * and available are required; each has_ says whether the guest sent the
 * others (older drivers send fewer). */
struct hp_mem_stats {
	uint64_t total_kib;     /* balloon.available: MemTotal */
	uint64_t available_kib; /* balloon.usable: MemAvailable */
	bool has_caches;
	uint64_t caches_kib; /* balloon.disk_caches */
	bool has_unused;
	uint64_t unused_kib; /* balloon.unused: MemFree */
	bool has_swap;
	uint64_t swap_in_kib, swap_out_kib; /* since the guest booted */
	bool has_faults;
	uint64_t major_faults, minor_faults; /* since the guest booted */
	/* When QEMU last received statistics (Unix time, whole seconds); 0:
	 * not reported. It stands still when the guest stopped sending. */
	uint64_t last_update;
};

/* The balloon's statistics of many domains in one call to libvirtd
 * (virDomainListGetStats with the balloon group): a reader that comes back
 * every second for every VM (vmactd's memory readings) wakes itself and
 * libvirtd once, not once per VM. Each request names its domain by uuid and
 * keeps its handle in *dom between calls (NULL: looked up here and kept;
 * the caller frees it with virDomainFree), which saves a lookup per VM and
 * second. When the call through kept handles fails (libvirtd restarted,
 * their connection closed), it is made once more with fresh ones. Each
 * request's rc is 0 with its figures in out, or a negative errno with err:
 * -ENODATA (naming the missing statistic) when the guest reports no
 * usable/available figures, -ENODEV when the domain is gone or stopped. */
struct hp_mem_stats_req {
	const char *uuid;
	virDomainPtr *dom;
	struct hp_mem_stats out;
	int rc;
	struct vmact_err err;
};
void hp_mem_stats_read_batch(struct hp_conn *c, struct hp_mem_stats_req *reqs, size_t n);

/* The same batch read on libvirt's event thread, and done(userdata,
 * true) called on the sd-event thread once it has been: the thread that
 * asks waits for nothing, and vmactd wakes for the answer alone
 * (hotplug/evloop.h: why a call from another thread costs more). done(...,
 * false) instead when the connection closes first. reqs, their uuids and
 * the handles their dom point to are the batch's until done: the caller
 * keeps its own handles apart (virDomainRef) and takes back those the
 * batch changed. -ESHUTDOWN while the connection closes, -ENOMEM. */
typedef void (*hp_mem_stats_done_fn)(void *userdata, bool delivered);
int hp_mem_stats_read_async(struct hp_conn *c, struct hp_mem_stats_req *reqs, size_t n,
			    hp_mem_stats_done_fn done, void *userdata, struct vmact_err *err);

/* The same for one domain. */
int hp_mem_stats_read_kept(struct hp_conn *c, const char *uuid, virDomainPtr *dom,
			   struct hp_mem_stats *out, struct vmact_err *err);

/* One domain's record of virDomainListGetStats (its state and balloon
 * groups) as figures: what the batch does with each; the rules above. */
int hp_mem_stats_from_params(const virTypedParameter *p, int n, struct hp_mem_stats *out,
			     struct vmact_err *err);
