/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"

int vmact_keyfile_load(const char *path, uint8_t **key, size_t *len, struct vmact_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	ssize_t n;
	size_t got = 0;

	if (fd < 0)
		return vmact_err_set(err, errno, "key file %s: %m", path);
	if (fstat(fd, &st) < 0)
		return vmact_err_set(err, errno, "key file %s: %m", path);
	if (!S_ISREG(st.st_mode))
		return vmact_err_set(err, EINVAL, "key file %s: not a regular file", path);
	/* Whoever reads it may reserve every host's capacity. */
	if (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP))
		return vmact_err_set(err, EPERM,
				     "key file %s: mode %04o lets others read or change it (0640 or "
				     "tighter)",
				     path, (unsigned)(st.st_mode & 07777));
	buf = malloc(VMACT_KEYFILE_MAX + 1);
	if (!buf)
		return vmact_err_set(err, ENOMEM, "out of memory");
	while ((n = read(fd, buf + got, VMACT_KEYFILE_MAX + 1 - got)) > 0)
		got += (size_t)n;
	if (n < 0)
		return vmact_err_set(err, errno, "key file %s: %m", path);
	if (got > VMACT_KEYFILE_MAX)
		return vmact_err_set(err, EINVAL, "key file %s: longer than %d bytes", path,
				     VMACT_KEYFILE_MAX);
	while (got && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
		got--;
	if (got < VMACT_KEYFILE_MIN)
		return vmact_err_set(err, EINVAL, "key file %s: shorter than %d bytes", path,
				     VMACT_KEYFILE_MIN);
	*key = TAKE_PTR(buf);
	*len = got;
	return 0;
}
