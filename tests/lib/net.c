/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/wait.h"

int th_connect(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* 1 at EOF, -1 when buf is full, 0 otherwise. */
static int eof_or_full(int fd, char *buf, size_t cap, size_t *len)
{
	ssize_t n = th_read_some(fd, buf, cap, len);

	if (n == 0 || n == -ECONNRESET)
		return 1;
	return n == -ENOSPC ? -1 : 0;
}

bool th_read_until_eof(sd_event *ev, int fd, char *buf, size_t cap, size_t *len)
{
	int r = 0;

	return TH_WAIT(ev, (r = eof_or_full(fd, buf, cap, len)) != 0, TH_SAFETY_USEC) && r > 0;
}

int th_silent_listener(unsigned *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*port = 0;
	if (fd < 0)
		return -errno;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

unsigned th_dead_port(void)
{
	unsigned port = 0;
	int fd = th_silent_listener(&port);

	if (fd >= 0)
		close(fd);
	return port;
}
