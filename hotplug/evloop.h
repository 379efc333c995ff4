/* SPDX-License-Identifier: Apache-2.0 */
/* The process-wide libvirt event thread (see hotplug.h, "Threads and the
 * event loop"): started with the first connection, joined with the last. */
#pragma once

#include "base/error.h"

/* Registers libvirt's default event implementation (once per process) and
 * starts its thread for the first user. */
int hp_evloop_get(struct vmact_err *err);
/* Stops and joins the thread when the last user leaves. */
void hp_evloop_put(void);
