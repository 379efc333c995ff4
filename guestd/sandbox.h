/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-guestd's sandbox (doc/privsep.md): the unprivileged user, no
 * capabilities, no_new_privs, and a system-call allow-list. Linked into
 * vmact-guestd alone (libseccomp). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

/* Becomes uid/gid (no supplementary groups) when `change`, else stays
 * who it is (a vmactd not run as root); then drops every capability it
 * can, sets no_new_privs and non-dumpable, and checks that no capability
 * is left. */
int act_sandbox_drop_privileges(bool change, uid_t uid, gid_t gid, struct vmact_err *err);
/* Loads the allow-list: any other call kills the worker. */
int act_sandbox_seccomp(struct vmact_err *err);
