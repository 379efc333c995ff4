/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/daemon/hook-listener.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/macro.h"

struct act_hook_listener {
	struct act_hook_listener_ops ops;
	sd_event_source *src;
	int fd, lock_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char last_bad[VMACT_ERR_MSG_MAX + 64];
};

static void bad(struct act_hook_listener *l, const char *why)
{
	if (strcmp(l->last_bad, why) == 0)
		return;
	snprintf(l->last_bad, sizeof(l->last_bad), "%s", why);
	if (l->ops.bad)
		l->ops.bad(l->ops.ud, why);
}

/* One datagram; false when there is none left. */
static bool receive_one(struct act_hook_listener *l)
{
	/* One byte more than a notice may have: MSG_TRUNC tells the rest. */
	char buf[VMACT_HOOK_MSG_MAX + 1];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof(ctl)
	};
	struct vmact_err err = { 0 };
	struct vmact_hook_msg m;
	const struct ucred *cred = NULL;
	char why[VMACT_ERR_MSG_MAX + 64];
	ssize_t n;

	n = recvmsg(l->fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n < 0) {
		int e = errno;

		if (e != EAGAIN && e != EINTR) {
			snprintf(why, sizeof(why), "receive: %s", strerror(e));
			bad(l, why);
		}
		return e == EINTR;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
			cred = (const struct ucred *)CMSG_DATA(c);
		else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			/* Nobody should send descriptors; close them. */
			for (int *fd = (int *)CMSG_DATA(c); (char *)fd < (char *)c + c->cmsg_len;
			     fd++)
				close(*fd);
	}
	if (!cred || cred->uid != 0) {
		snprintf(why, sizeof(why), "dropped a notice from uid %ld (root only)",
			 cred ? (long)cred->uid : -1L);
		bad(l, why);
		return true;
	}
	if ((size_t)n > VMACT_HOOK_MSG_MAX || (mh.msg_flags & MSG_TRUNC)) {
		snprintf(why, sizeof(why),
			 "dropped a datagram of %zd bytes (a notice has at most %d)", n,
			 VMACT_HOOK_MSG_MAX);
		bad(l, why);
		return true;
	}
	if (vmact_hook_msg_decode(buf, (size_t)n, &m, &err) < 0) {
		snprintf(why, sizeof(why), "dropped a datagram that is not a notice: %s", err.msg);
		bad(l, why);
		return true;
	}
	l->ops.notice(l->ops.ud, &m);
	return true;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct act_hook_listener *l = ud;

	/* Bounded per wakeup, so a flood cannot starve the rest of the loop. */
	for (int i = 0; i < 64 && receive_one(l); i++)
		;
	return 0;
}

int act_hook_listener_new(sd_event *ev, const char *path, const struct act_hook_listener_ops *ops,
			  struct act_hook_listener **out, struct vmact_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct act_hook_listener *l;
	char lock[sizeof(sa.sun_path) + 8], dir[sizeof(sa.sun_path)], *slash;
	int one = 1, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return vmact_err_set(err, ENAMETOOLONG, "%s: path too long", path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return vmact_err_set(err, errno, "%s: %m", dir);
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ops = *ops;
	l->fd = -1;
	snprintf(l->path, sizeof(l->path), "%s", path);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	l->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (l->lock_fd < 0) {
		r = vmact_err_set(err, errno, "%s: %m", lock);
		goto fail;
	}
	if (flock(l->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK
			    ? vmact_err_set(err, EADDRINUSE, "%s: in use by another vmactd", path)
			    : vmact_err_set(err, errno, "%s: %m", lock);
		goto fail;
	}
	l->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l->fd < 0) {
		r = vmact_err_set(err, errno, "socket: %m");
		goto fail;
	}
	strcpy(sa.sun_path, path);
	/* The lock is ours: whatever is there was left by a vmactd that died. */
	unlink(path);
	{
		mode_t old = umask(0177);

		r = bind(l->fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (r < 0) {
		r = vmact_err_set(err, errno, "%s: %m", path);
		goto fail;
	}
	if (setsockopt(l->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
		r = vmact_err_set(err, errno, "SO_PASSCRED: %m");
		goto fail;
	}
	r = sd_event_add_io(ev, &l->src, l->fd, EPOLLIN, on_io, l);
	if (r < 0) {
		vmact_err_set(err, -r, "sd_event_add_io: %s", strerror(-r));
		goto fail;
	}
	*out = l;
	return 0;
fail:
	act_hook_listener_free(l);
	return r;
}

void act_hook_listener_free(struct act_hook_listener *l)
{
	if (!l)
		return;
	sd_event_source_disable_unref(l->src);
	if (l->fd >= 0) {
		close(l->fd);
		unlink(l->path);
	}
	if (l->lock_fd >= 0)
		close(l->lock_fd);
	free(l);
}
