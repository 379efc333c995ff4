/* SPDX-License-Identifier: Apache-2.0 */
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int vmact_err_setv(struct vmact_err *err, int code, const char *fmt, va_list ap)
{
	if (code <= 0)
		code = code < 0 ? -code : EINVAL;
	if (!err)
		return -code;
	/* Keep the innermost, most specific message. */
	if (err->code != 0)
		return -err->code;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return -code;
}

int vmact_err_set(struct vmact_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vmact_err_setv(err, code, fmt, ap);
	va_end(ap);
	return r;
}

int vmact_err_prefix(struct vmact_err *err, const char *fmt, ...)
{
	char prefix[VMACT_ERR_MSG_MAX], joined[2 * VMACT_ERR_MSG_MAX + 2];
	size_t n;
	va_list ap;

	if (!err || err->code == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	snprintf(joined, sizeof(joined), "%s: %s", prefix, err->msg);
	/* Truncation keeps the front: the path, which names the field. */
	n = strnlen(joined, sizeof(err->msg) - 1);
	memcpy(err->msg, joined, n);
	err->msg[n] = '\0';
	return -err->code;
}

void vmact_err_reset(struct vmact_err *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}
