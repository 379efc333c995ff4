/* SPDX-License-Identifier: Apache-2.0 */
/* Loopback helpers shared by the network tests: driving an sd-event loop
 * until a condition holds, and raw sockets for peers that misbehave on
 * purpose (slow, garbage, silent). The time limits here are safety nets
 * against a hung test, not assertions about speed. */
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#define TH_SAFETY_USEC (30ULL * 1000000ULL)

static inline uint64_t th_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* Runs the loop until *flag becomes true; false if the safety limit hit. */
static inline bool th_run_until(sd_event *ev, const volatile bool *flag, uint64_t limit_usec)
{
	uint64_t end = th_now() + limit_usec;

	while (!*flag) {
		if (th_now() > end)
			return false;
		if (sd_event_run(ev, 50000) < 0)
			return false;
	}
	return true;
}

/* Runs the loop for a while regardless of state (to let a server progress
 * while a raw peer stalls). */
static inline void th_run_for(sd_event *ev, uint64_t usec)
{
	uint64_t end = th_now() + usec;

	while (th_now() < end)
		sd_event_run(ev, 20000);
}

/* Non-blocking TCP connection to 127.0.0.1:port (connect completes on
 * loopback immediately or shortly; writes before then fail EAGAIN). */
static inline int th_connect(unsigned port)
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

/* Reads what is available; returns bytes appended, 0 on EOF, -EAGAIN. */
static inline ssize_t th_read_some(int fd, char *buf, size_t cap, size_t *len)
{
	ssize_t n;

	if (*len + 1 >= cap)
		return -ENOSPC;
	n = read(fd, buf + *len, cap - *len - 1);
	if (n < 0)
		return -errno;
	*len += (size_t)n;
	buf[*len] = '\0';
	return n;
}

/* Drives the loop while reading fd until EOF (the peer closed) or the
 * safety limit; returns true on EOF. */
static inline bool th_read_until_eof(sd_event *ev, int fd, char *buf, size_t cap, size_t *len)
{
	uint64_t end = th_now() + TH_SAFETY_USEC;

	while (th_now() < end) {
		ssize_t n = th_read_some(fd, buf, cap, len);

		if (n == 0 || n == -ECONNRESET)
			return true;
		if (n == -ENOSPC)
			return false;
		sd_event_run(ev, 20000);
	}
	return false;
}

/* A listening socket that accepts nothing: connections complete in the
 * kernel backlog and then hear nothing ("peer never answers"). */
static inline int th_silent_listener(unsigned *port)
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

/* A port nothing listens on (bound then closed). */
static inline unsigned th_dead_port(void)
{
	unsigned port = 0;
	int fd = th_silent_listener(&port);

	if (fd >= 0)
		close(fd);
	return port;
}
