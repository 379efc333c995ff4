/* SPDX-License-Identifier: Apache-2.0 */
/* Domains on which a vCPU unplug was lost (refusal.c): see hotplug.h,
 * "Truth", for why vCPU changes on them stay refused until they restart. */
#pragma once

#include <stdbool.h>

#include "hotplug/hotplug.h"

/* Records that a vCPU unplug on the domain (uuid + libvirt id, so that a
 * restarted VM starts clean) outlived libvirt's wait. Any thread. */
void hp_vcpus_refuse(const char *uuid, int id);
bool hp_vcpus_lost_unplug(const char *uuid, int id);

/* The rule, in one place: sets st->vcpus_refused and st->vcpus_refusal
 * from st (libvirt's count against QEMU's) and the recorded lost unplugs.
 * A disagreement is recorded too, so that the refusal outlives libvirt
 * correcting its count. Every read of live state ends here. */
void hp_vcpus_refusal_apply(struct hp_state *st);
