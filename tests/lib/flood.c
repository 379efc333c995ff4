/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/flood.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/time.h"
#include "net/http-server.h"
#include "tests/lib/file.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

const char th_flood_partial_header[] = "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ";

/* Lets the server run: its loop when it is here, else a short sleep. */
static void pump(struct th_flood *f, uint64_t usec)
{
	if (f->ev)
		sd_event_run(f->ev, usec);
	else if (usec)
		usleep((useconds_t)usec);
}

int th_flood_open(struct th_flood *f, const char *src)
{
	int fd;

	if (f->unix_path[0]) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", f->unix_path);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		return fd;
	}

	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)f->port) };
	struct sockaddr_in from = { .sin_family = AF_INET };

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, src ? src : "127.0.0.1", &from.sin_addr);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0 ||
	    (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Sends what is left of text (from *off) once fd has connected; true
 * when all of it went. A connection the server already closed counts as
 * sent: it was accepted, which is what a flood is about. */
static bool send_some(int fd, const char *text, size_t len, size_t *off)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	while (*off < len) {
		ssize_t n;

		if (poll(&p, 1, 0) != 1)
			return false;
		n = send(fd, text + *off, len - *off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINPROGRESS)
				return false;
			*off = len;
			break;
		}
		*off += (size_t)n;
	}
	return true;
}

bool th_flood_send(int fd, const char *text)
{
	size_t off = 0;

	return send_some(fd, text, strlen(text), &off);
}

int th_flood(struct th_flood *f, unsigned n, const char *const *srcs, unsigned nsrcs, unsigned *got)
{
	unsigned base = f->nfds, opened = 0, sent = 0;
	size_t *off = calloc(n, sizeof(*off)), hlen = strlen(th_flood_partial_header);
	bool *done = calloc(n, sizeof(*done));
	int *fds = realloc(f->fds, (base + n) * sizeof(*f->fds));
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;
	int ret = 0;

	if (!off || !done || !fds) {
		free(off);
		free(done);
		if (fds)
			f->fds = fds;
		return -ENOMEM;
	}
	f->fds = fds;
	while (sent < n && vmact_now_usec() < end) {
		bool progress = false;

		if (opened < n) {
			int fd = th_flood_open(f, srcs ? srcs[opened % nsrcs] : NULL);

			if (fd >= 0) {
				f->fds[base + opened++] = fd;
				f->nfds = base + opened;
				progress = true;
			} else if (fd != -EAGAIN) {
				ret = fd;
				break;
			}
		}
		pump(f, 0);
		for (unsigned i = 0; i < opened; i++) {
			if (!done[i] &&
			    send_some(f->fds[base + i], th_flood_partial_header, hlen, &off[i])) {
				done[i] = true;
				sent++;
				progress = true;
			}
		}
		if (!progress)
			pump(f, 10000);
	}
	free(off);
	free(done);
	if (got)
		*got = sent;
	if (!ret && sent < n)
		ret = -ETIMEDOUT;
	return ret;
}

int th_flood_request(struct th_flood *f, const char *src, const char *req, size_t req_len,
		     char *buf, size_t cap)
{
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;
	size_t len = 0, off = 0;
	bool sent = false, eof = false;
	int fd = -EAGAIN;

	if (cap)
		buf[0] = '\0';
	while (fd == -EAGAIN && vmact_now_usec() < end) {
		fd = th_flood_open(f, src);
		if (fd == -EAGAIN)
			pump(f, 10000);
	}
	if (fd < 0)
		return fd;
	while (!eof && vmact_now_usec() < end) {
		ssize_t n;

		if (!sent)
			sent = send_some(fd, req, req_len, &off);
		pump(f, f->ev ? 10000 : 0);
		n = th_read_some(fd, buf, cap, &len);
		eof = n == 0 || n == -ECONNRESET || n == -ENOSPC || n == -EPIPE;
		if (n == -EAGAIN && !f->ev) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			poll(&p, 1, 10);
		}
	}
	close(fd);
	return eof ? 0 : -ETIMEDOUT;
}

int th_flood_bad_input(struct th_flood *f, const char *path, char *msg, size_t msglen)
{
	static const char garbage[] =
		"\x16\x03\x01\x02\x00\x01\x00\xff\r\n\r\n\x00\x01garbage\r\n\r\n";
	const size_t big_len = 256 * 1024;
	char *big = malloc(big_len + 64), buf[4096], truncated[512];
	uint64_t end;
	int n, fd, r;

	if (!big) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	/* An oversized header line: refused, or the connection closed. */
	n = snprintf(big, big_len, "GET %s HTTP/1.1\r\nX-Big: ", path);
	memset(big + n, 'a', big_len - (size_t)n);
	memcpy(big + big_len, "\r\n\r\n", 5);
	r = th_flood_request(f, NULL, big, big_len + 4, buf, sizeof(buf));
	free(big);
	if (r < 0 || (buf[0] && strncmp(buf, "HTTP/1.1 4", 10) != 0)) {
		snprintf(msg, msglen, "oversized header: %s \"%.80s\"",
			 r < 0 ? strerror(-r) : "answered", buf);
		return -1;
	}
	/* Garbage: an error or a closed connection. */
	r = th_flood_request(f, NULL, garbage, sizeof(garbage) - 1, buf, sizeof(buf));
	if (r < 0 || (buf[0] && strncmp(buf, "HTTP/1.1 4", 10) != 0)) {
		snprintf(msg, msglen, "garbage: %s \"%.80s\"", r < 0 ? strerror(-r) : "answered",
			 buf);
		return -1;
	}
	/* A body that never completes, and the client leaves. */
	snprintf(truncated, sizeof(truncated),
		 "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n{\"min_cpu\":", path);
	end = vmact_now_usec() + TH_SAFETY_USEC;
	do {
		fd = th_flood_open(f, NULL);
		if (fd == -EAGAIN)
			pump(f, 10000);
	} while (fd == -EAGAIN && vmact_now_usec() < end);
	if (fd < 0) {
		snprintf(msg, msglen, "truncated body: cannot connect: %s", strerror(-fd));
		return -1;
	}
	while (!th_flood_send(fd, truncated) && vmact_now_usec() < end)
		pump(f, 10000);
	close(fd);
	return 0;
}

int th_flood_fds_within(pid_t pid, long bound, long *first, long *last)
{
	*first = *last = th_proc_fds(pid);
	if (*first < 0)
		return -ESRCH;
	if (*first > bound + (long)NET_HTTP_CUT_SLACK)
		return -E2BIG;
	if (!TH_WAIT(NULL, (*last = th_proc_fds(pid)) < 0 || *last <= bound, TH_SAFETY_USEC))
		return -ETIMEDOUT;
	return *last < 0 ? -ESRCH : 0;
}

void th_flood_close(struct th_flood *f)
{
	for (unsigned i = 0; i < f->nfds; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
	f->nfds = 0;
}

bool th_flood_raise_nofile(unsigned n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return false;
	if (rl.rlim_cur >= n)
		return true;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < n)
		return false;
	rl.rlim_cur = n;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}
