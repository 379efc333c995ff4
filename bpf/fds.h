/* SPDX-License-Identifier: Apache-2.0 */
/* File descriptors of BPF programs, maps and links that the sampler keeps
 * once libbpf's objects are freed (sampler-bpf.c, watch.c, task-iter.c). */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* A descriptor of its own for fd (close-on-exec, above the standard
 * three), or -errno (-EBADF for a negative fd). */
static inline int smp_fd_dup(int fd)
{
	int r;

	if (fd < 0)
		return -EBADF;
	r = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return r < 0 ? -errno : r;
}

/* Closes *fd if it is one and leaves -1. */
static inline void smp_fd_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}
