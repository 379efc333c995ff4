/* SPDX-License-Identifier: Apache-2.0 */
/* Is a domain's layout ready for vmact, and what would a change take?
 * (hotplug/layout.c, prefix hp_layout_; doc/domain.md.) Pure: it reads a
 * domain XML as libvirt writes it (live or the persistent definition) and
 * optionally the vmact bounds, and says part by part what the layout lets
 * vmact do: vCPUs it can plug, memory it can add and remove, and whether a
 * missing part can be added to the running domain or only by a cold
 * restart (shut the domain down, change its definition, start it). Used by
 * `vmactl check` and `vmactl enable` through vmactd's control API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/resources.h"
#include "hotplug/hotplug.h"

enum hp_layout_level {
	HP_LAYOUT_OK,      /* the part is there */
	HP_LAYOUT_NOTE,    /* vmact works without it, with less room */
	HP_LAYOUT_BLOCKER, /* the bounds asked for cannot be reached */
};

struct hp_layout_item {
	const char *part; /* a short fixed name: "vcpus", "numa", ... */
	enum hp_layout_level level;
	bool cold; /* changing it takes a cold restart */
	char text[384];
	/* The command that fixes it (virt-xml from Debian's virtinst, virsh,
	 * vmactl), for `vmactl check --fix`; "" when there is none to give.
	 * fix_cold: it changes the definition, which takes effect at the
	 * next cold start (else it acts on the running domain too). */
	char fix[512];
	bool fix_cold;
};

#define HP_LAYOUT_MAX_ITEMS 12

struct hp_layout {
	unsigned vcpus_now;        /* <vcpu current=…> */
	unsigned vcpus_max;        /* <vcpu>: the most that can be plugged */
	uint64_t mem_base_bytes;   /* boot memory: the NUMA cells, never unplugged */
	uint64_t mem_max_bytes;    /* the most memory hotplug can reach */
	bool mem_hotplug;          /* memory can grow at all */
	enum hp_mem_method method; /* the layout's: virtio-mem when it has a device */
	bool ready;                /* no blocker */
	size_t n;
	struct hp_layout_item items[HP_LAYOUT_MAX_ITEMS];
};

/* Reads domain_xml. With bounds (min and max both non-NULL), a part that
 * keeps them from being reached is a blocker; without, only what the
 * layout offers is reported (and nothing blocks). method: the memory
 * method the bounds would use (NULL: the layout's own). dimm_bytes: the
 * size of one DIMM (the compute unit's memory) for the DIMM method.
 * guest_metrics: the VM's metadata names the guest's exporter
 * (<vmact:metrics>), whose figures size its memory; else the balloon's
 * statistics must, and without them its memory stays at its size (the
 * "memory-stats" part, a note). */
int hp_layout_check(const char *domain_xml, const struct vmact_resources *min,
		    const struct vmact_resources *max, const enum hp_mem_method *method,
		    uint64_t dimm_bytes, bool guest_metrics, struct hp_layout *out,
		    struct vmact_err *err);

/* The bounds `vmactl enable` writes when none are given (doc/domain.md):
 * from the vCPUs the domain boots with to its <vcpu> maximum, and from its
 * boot memory to the most its memory device or slots can add. */
void hp_layout_default_bounds(const struct hp_layout *l, struct vmact_resources *min,
			      struct vmact_resources *max);

/* A new <vmact:autoscaling enabled="true"> element with these bounds and
 * memory method, mode="recommend" and <vmact:migration enabled="true"/>
 * when opts (may be NULL) sets them (the element `vmactl enable
 * [--recommend] [--migration]` writes), without a namespace declaration,
 * as virDomainSetMetadata takes it; checked by hp_meta_parse before it is
 * returned. *out is malloc'd. */
int hp_layout_meta_build(const struct vmact_resources *min, const struct vmact_resources *max,
			 enum hp_mem_method method, const struct hp_meta_change *opts, char **out,
			 struct vmact_err *err);
