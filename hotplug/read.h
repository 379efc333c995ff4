/* SPDX-License-Identifier: Apache-2.0 */
/* Reads of live state for the rest of hotplug/ (read.c). */
#pragma once

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"

/* hp_state_read on a connection the caller already holds (a worker that
 * must tell a lost connection from a failed read). */
int hp_state_read_vc(struct hp_conn *c, virConnectPtr vc, const char *uuid, struct hp_state *st,
		     struct vmact_err *err);
