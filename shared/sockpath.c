/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/sockpath.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/macro.h"

int vmact_sockpath_prepare(const char *path, const char *key, const char *program,
			   struct vmact_err *err)
{
	_cleanup_free_ char *dir = strdup(path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	char *s;

	if (!dir)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if (path[0] != '/' || strlen(path) >= sizeof(sa.sun_path))
		return vmact_err_set(err, EINVAL,
				     "%s: '%s' must be an absolute path shorter than %zu", key,
				     path, sizeof(sa.sun_path));
	/* Its directory, and those above it, 0755 when missing. */
	for (s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return vmact_err_set(err, errno, "%s: mkdir %s: %m", key, dir);
		*s = '/';
	}
	/* Someone still answering on it: another instance. Refused, not
	 * replaced; nothing answering: stale, the server replaces it. */
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return vmact_err_set(err, EADDRINUSE,
				     "%s %s: another process serves it (is another %s running?)",
				     key, path, program);
	return 0;
}
