/* SPDX-License-Identifier: Apache-2.0 */
/* Error reporting shared by all components.
 *
 * Functions return 0 or a negative errno. When they fail they may also fill
 * a caller-provided struct vmact_err with a human-readable message naming
 * what went wrong (for a decoder: the field). Only the component boundary
 * (the daemon, the CLI, a test) prints it; library code never logs. */
#pragma once

#include <stdarg.h>

#define VMACT_ERR_MSG_MAX 512

struct vmact_err {
	int code; /* positive errno, 0 when unset */
	char msg[VMACT_ERR_MSG_MAX];
};

/* Records the error (the first one wins unless the struct was reset) and
 * returns -code, so callers can write `return vmact_err_set(err, EINVAL, ...)`.
 * err may be NULL. */
int vmact_err_set(struct vmact_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int vmact_err_setv(struct vmact_err *err, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Prefixes an existing message with context ("pod: name: too long"), so
 * nested decoders can name the full path of the offending field. Returns
 * -err->code (or -EINVAL if err is NULL or unset). */
int vmact_err_prefix(struct vmact_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void vmact_err_reset(struct vmact_err *err);
