/* SPDX-License-Identifier: Apache-2.0 */
/* Loopback helpers shared by the network tests: driving an sd-event loop
 * until a condition holds, raw sockets for peers that misbehave on
 * purpose (slow, garbage, silent), and starting the Node.js peers. The time limits here are safety nets
 * against a hung test, not assertions about speed. */
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

/* ---- Node.js peers (tests/peers/) ------------------------------------ */

/* A peer process: `node tests/peers/SCRIPT ARGS...` (under $VMACT_TOP when
 * set, else the current directory) with pipes on its stdin and stdout.
 * The peers print "listening PORT" as their first line once they accept
 * connections; later lines are the peer's own business. */
struct th_peer {
	pid_t pid;
	int in;  /* the peer's stdin (commands), -1 when none */
	int out; /* the peer's stdout, past the "listening" line */
	unsigned port;
	char first_line[128]; /* what the peer said first, for failure messages */
};

/* Reads one line (without its newline) from the peer's stdout, waiting at
 * most limit_usec. 0, -ETIMEDOUT, -EPIPE at EOF, -ENOSPC. One byte at a
 * time: nothing is read past the line, so later lines stay in the pipe. */
static inline int th_peer_read_line(struct th_peer *p, char *line, size_t cap, uint64_t limit_usec)
{
	uint64_t end = th_now() + limit_usec;
	size_t n = 0;

	for (;;) {
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		uint64_t now = th_now();
		ssize_t r;

		if (n + 1 >= cap)
			return -ENOSPC;
		if (now >= end)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)((end - now) / 1000) + 1) < 0 && errno != EINTR)
			return -errno;
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		r = read(p->out, line + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			line[n] = '\0';
			return -EPIPE;
		}
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	return 0;
}

/* Starts the peer and waits for its "listening PORT" line. args: NULL or a
 * NULL-terminated list (at most 16). 0 or a negative errno; on failure
 * first_line holds what the peer printed instead (empty: node missing). */
static inline int th_peer_start(struct th_peer *p, const char *script, const char *const *args)
{
	const char *top = getenv("VMACT_TOP");
	char path[4096];
	const char *argv[20] = { "node", path };
	size_t argc = 2;
	int in[2], out[2], r;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->in = p->out = -1;
	snprintf(path, sizeof(path), "%s/tests/peers/%s", top ? top : ".", script);
	for (; args && *args && argc < sizeof(argv) / sizeof(argv[0]) - 1; args++)
		argv[argc++] = *args;
	argv[argc] = NULL;
	if (access(path, R_OK) != 0)
		return -ENOENT;
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		r = -errno;
		close(in[0]);
		close(in[1]);
		return r;
	}
	p->pid = fork();
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execvp("node", (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
	if (p->pid < 0)
		return -EAGAIN;
	r = th_peer_read_line(p, p->first_line, sizeof(p->first_line), TH_SAFETY_USEC);
	if (r < 0)
		return r;
	if (sscanf(p->first_line, "listening %u", &p->port) != 1 || !p->port)
		return -EPROTO;
	return 0;
}

/* Sends one command line to the peer's stdin. */
static inline int th_peer_send(struct th_peer *p, const char *line)
{
	size_t n = strlen(line);

	if (write(p->in, line, n) != (ssize_t)n || write(p->in, "\n", 1) != 1)
		return -EPIPE;
	return 0;
}

/* Terminates the peer and reaps it. Safe on a peer that never started. */
static inline void th_peer_stop(struct th_peer *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
	}
	if (p->in >= 0)
		close(p->in);
	if (p->out >= 0)
		close(p->out);
	p->pid = -1;
	p->in = p->out = -1;
}
