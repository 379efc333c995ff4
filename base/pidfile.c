/* SPDX-License-Identifier: Apache-2.0 */
#include "base/pidfile.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

int vmact_pidfile_read(const char *path, pid_t *out, struct vmact_err *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char buf[VMACT_PIDFILE_MAX + 1];
	size_t n;
	long long v;

	if (!f)
		return vmact_err_set(err, errno, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, VMACT_PIDFILE_MAX, f);
	if (ferror(f))
		return vmact_err_set(err, EIO, "%s: read error", path);
	/* A pid file is a few bytes: anything longer is not one, and reading
	 * it whole would let a stray file make us read without bound. */
	if (n == VMACT_PIDFILE_MAX && fgetc(f) != EOF)
		return vmact_err_set(err, EPROTO, "%s: longer than %d bytes, not a pid file", path,
				     VMACT_PIDFILE_MAX);
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n == 0)
		return vmact_err_set(err, EPROTO, "%s: empty", path);
	/* Digits only: strtoll alone would take signs, spaces and a number
	 * followed by anything. */
	if (strspn(buf, "0123456789") != n || n > 10)
		return vmact_err_set(err, EPROTO, "%s: \"%s\" is not a pid", path, buf);
	v = strtoll(buf, NULL, 10);
	if (v <= 0 || v > INT32_MAX)
		return vmact_err_set(err, EPROTO, "%s: \"%s\" is not a pid", path, buf);
	*out = (pid_t)v;
	return 0;
}
