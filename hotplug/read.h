/* SPDX-License-Identifier: Apache-2.0 */
/* Reads of live state for the rest of hotplug/ (read.c). */
#pragma once

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"

/* hp_state_read on a connection the caller already holds (a worker that
 * must tell a lost connection from a failed read). */
int hp_state_read_vc(struct hp_conn *c, virConnectPtr vc, const char *uuid, struct hp_state *st,
		     struct vmact_err *err);

/* Which end of a live migration this host is, from a domain's job
 * (virDomainGetJobStats: its type and typed parameters). */
enum hp_migration hp_migration_from_job(int type, const virTypedParameter *p, int n);
