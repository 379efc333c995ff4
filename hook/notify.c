/* SPDX-License-Identifier: Apache-2.0 */
/* One datagram to vmactd, never blocking libvirtd behind it (hook.h). */
#include "hook/hook.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/macro.h"

int hk_notify(const char *path, const struct vmact_hook_msg *m, unsigned wait_ms,
	      struct vmact_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[VMACT_HOOK_MSG_MAX];
	_cleanup_close_ int fd = -1;
	int n;

	if (strlen(path) >= sizeof(sa.sun_path))
		return vmact_err_set(err, ENAMETOOLONG, "%s: socket path too long", path);
	strcpy(sa.sun_path, path);
	n = vmact_hook_msg_encode(m, buf, sizeof(buf), err);
	if (n < 0)
		return n;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return vmact_err_set(err, errno, "socket: %m");
	/* Connected, so that poll() below waits for room in vmactd's queue. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return vmact_err_set(err, errno, "%s: %m", path);
	for (int attempt = 0;; attempt++) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		if (send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n)
			return 0;
		if (errno != EAGAIN || attempt > 0 || wait_ms == 0)
			break;
		if (poll(&p, 1, (int)wait_ms) <= 0) {
			errno = EAGAIN;
			break;
		}
	}
	if (errno == EAGAIN)
		return vmact_err_set(err, EAGAIN, "%s: vmactd is not reading its notices", path);
	return vmact_err_set(err, errno, "%s: %m", path);
}
