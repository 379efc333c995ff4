/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"

/* The file's bytes (a NUL after them), min to max, trailing line ends
 * dropped. */
static int load(const char *path, size_t min, size_t max, uint8_t **key, size_t *len,
		struct vmact_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	uint8_t *buf = NULL;
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int r = 0;

	if (fd < 0)
		return vmact_err_set(err, errno, "key file %s: %m", path);
	if (fstat(fd, &st) < 0)
		return vmact_err_set(err, errno, "key file %s: %m", path);
	if (!S_ISREG(st.st_mode))
		return vmact_err_set(err, EINVAL, "key file %s: not a regular file", path);
	/* Whoever reads it may reserve every host's capacity, or join a
	 * node to the cluster. */
	if (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP))
		return vmact_err_set(err, EPERM,
				     "key file %s: mode %04o lets others read or change it (0640 or "
				     "tighter)",
				     path, (unsigned)(st.st_mode & 07777));
	buf = malloc(max + 2);
	if (!buf)
		return vmact_err_set(err, ENOMEM, "out of memory");
	while ((n = read(fd, buf + got, max + 1 - got)) > 0)
		got += (size_t)n;
	if (n < 0)
		r = vmact_err_set(err, errno, "key file %s: %m", path);
	else if (got > max)
		r = vmact_err_set(err, EINVAL, "key file %s: longer than %zu bytes", path, max);
	while (r >= 0 && got && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
		got--;
	if (r >= 0 && got < min)
		r = vmact_err_set(err, EINVAL, "key file %s: shorter than %zu bytes", path, min);
	if (r < 0) {
		explicit_bzero(buf, max + 2);
		free(buf);
		return r;
	}
	buf[got] = 0;
	*key = buf;
	*len = got;
	return 0;
}

int vmact_keyfile_load(const char *path, uint8_t **key, size_t *len, struct vmact_err *err)
{
	return load(path, VMACT_KEYFILE_MIN, VMACT_KEYFILE_MAX, key, len, err);
}

int vmact_keyfile_load_max(const char *path, size_t max, uint8_t **key, size_t *len,
			   struct vmact_err *err)
{
	return load(path, 1, max, key, len, err);
}
