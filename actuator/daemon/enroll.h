/* SPDX-License-Identifier: Apache-2.0 */
/* Putting a domain under vmact and taking it out (vmactl check, enable,
 * disable; doc/domain.md). Any domain libvirt knows, running or not, named
 * or by UUID: the layout is read from libvirt (hotplug/layout.c), the
 * metadata written live and into the definition (hotplug/meta-write.c).
 * vmactd then takes the domain over through libvirt's metadata event as
 * for any other edit. */
#pragma once

#include "actuator/control/control-json.h"
#include "base/error.h"
#include "hotplug/hotplug.h"

struct hp_conn;

/* The domain's layout against bounds: those of *bounds that are set,
 * the rest from its metadata, else the layout's defaults. dimm_bytes: the
 * host's compute unit memory (DIMMs of a VM without its own). -ENODEV
 * when no domain is named so. */
int act_enroll_check(struct hp_conn *c, const char *dom, const struct hp_meta_change *bounds,
		     uint64_t dimm_bytes, struct act_domain_check *out, struct vmact_err *err);

/* act_enroll_check, then, when the layout can do the bounds, writes them
 * with enabled="true": a new element for a domain without metadata, or
 * the change into the one it has. -EINVAL (out says why) when the layout
 * cannot do them or the metadata it has is invalid. */
int act_enroll_enable(struct hp_conn *c, const char *dom, const struct hp_meta_change *bounds,
		      uint64_t dimm_bytes, struct act_domain_check *out, struct vmact_err *err);

/* enabled="false" in the domain's metadata (the rest kept, for a later
 * enable). *name gets libvirt's name of the domain. -ENOENT when it has
 * no vmact metadata. */
int act_enroll_disable(struct hp_conn *c, const char *dom, char name[HP_NAME_MAX],
		       struct vmact_err *err);
