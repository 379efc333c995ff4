/* SPDX-License-Identifier: Apache-2.0 */
/* Where a daemon's unix socket goes (prefix vmact_sockpath_): vmactd's
 * control API and vmact-groupd's API prepare it the same way. */
#pragma once

#include "base/error.h"

/* Checks that path is absolute and fits a sockaddr_un, creates its
 * directory (and those above it) 0755 when missing, and refuses a socket
 * another process still answers on (-EADDRINUSE: "is another PROGRAM
 * running?"); a stale one is left for the server to replace. Errors start
 * with key (the configuration's name for it, "control.socket"). */
int vmact_sockpath_prepare(const char *path, const char *key, const char *program,
			   struct vmact_err *err);
