/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's end of vmact-hook's notices (shared/hook-msg.h, doc/hook.md): a
 * unix datagram socket on the daemon's loop. Root-only: the socket file is
 * 0600 and every datagram's sender credentials must say uid 0. Datagrams
 * are bounded (VMACT_HOOK_MSG_MAX) and decoded strictly; one that is not a
 * notice is dropped, its error reported through bad() only when it differs
 * from the previous one, so a flood costs one log line.
 *
 * Only one vmactd listens on a path: the listener holds an flock on
 * PATH.lock while it runs, and a second one gets -EADDRINUSE instead of
 * taking the socket away from the first. */
#pragma once

#include <systemd/sd-event.h>

#include "base/error.h"
#include "shared/hook-msg.h"

struct act_hook_listener;

struct act_hook_listener_ops {
	void (*notice)(void *ud, const struct vmact_hook_msg *m);
	void (*bad)(void *ud, const char *why);
	void *ud;
};

int act_hook_listener_new(sd_event *ev, const char *path, const struct act_hook_listener_ops *ops,
			  struct act_hook_listener **out, struct vmact_err *err);
/* Closes and removes the socket. NULL is fine. */
void act_hook_listener_free(struct act_hook_listener *l);
