/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by every component: cleanup attributes in the
 * style of systemd and crun, so every resource is released on every path. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                       \
	({                                \
		__typeof__(p) _tp_ = (p); \
		(p) = NULL;               \
		_tp_;                     \
	})
#define TAKE_FD(fd)              \
	({                       \
		int _tf_ = (fd); \
		(fd) = -1;       \
		_tf_;            \
	})

/* Defines `static inline void name(type **p)` calling fn(*p) when non-NULL,
 * for library types (json_t, xmlDoc, virDomain, ...). */
#define DEFINE_PTR_CLEANUP(name, type, fn) \
	static inline void name(type **p)  \
	{                                  \
		if (*p)                    \
			fn(*p);            \
	}

/* The stdio and dirent handles every layer uses. */
DEFINE_PTR_CLEANUP(vmact_fclosep, FILE, fclose)
#define _cleanup_fclose_ _cleanup_(vmact_fclosep)
DEFINE_PTR_CLEANUP(vmact_closedirp, DIR, closedir)
#define _cleanup_closedir_ _cleanup_(vmact_closedirp)
