/* SPDX-License-Identifier: Apache-2.0 */
/* `vmactl top`: a live full-screen view of every VM (plain ANSI escapes:
 * any terminal, tmux and screen included), refreshed every second; q or
 * Ctrl-C quits. With json, one snapshot per line instead. */
#pragma once

#include <stdbool.h>

#include "base/error.h"

/* iterations: stop after that many refreshes (0: until q). */
int ctl_top(const char *socket, unsigned iterations, bool json, struct vmact_err *err);
