/* SPDX-License-Identifier: Apache-2.0 */
/* Two reads vmactd needs besides hotplug.h, kept in their own header so
 * that hotplug.h stays free of libvirt types: a domain handle (for the
 * cgroup lookup in actuator/cgroup/cgroup-domain.h) and the guest's memory
 * statistics. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"

/* A new handle on the domain (virDomainFree it), or NULL with err set
 * (-ENOTCONN when libvirtd is away, -ENODEV when the domain is gone). */
virDomainPtr hp_domain_lookup(struct hp_conn *c, const char *uuid, struct vmact_err *err);

/* The guest's own view of its memory, from the balloon driver's statistics
 * (virDomainMemoryStats). Needs <memballoon model='virtio'> with a
 * <stats period='N'/> and the guest's virtio_balloon driver. */
struct hp_mem_stats {
	uint64_t total_kib;     /* VIR_DOMAIN_MEMORY_STAT_AVAILABLE: MemTotal */
	uint64_t available_kib; /* VIR_DOMAIN_MEMORY_STAT_USABLE: MemAvailable */
	bool has_caches;
	uint64_t caches_kib;    /* VIR_DOMAIN_MEMORY_STAT_DISK_CACHES */
};

/* -ENODATA (with a message saying which statistic is missing) when the
 * domain reports no usable/available figures. */
int hp_mem_stats_read(struct hp_conn *c, const char *uuid, struct hp_mem_stats *out,
		      struct vmact_err *err);
