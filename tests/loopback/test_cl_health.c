/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's tcp health check (cluster/host/health.c, doc/cluster.md
 * "Health") against real sockets on 127.0.0.1: a listener is healthy, a
 * closed port and a listener whose queue is full are not (with the errno
 * and a message naming the address), malformed addresses are refused
 * before any socket, and cl_health_probe of kind tcp gives the same
 * answers. The agent kind needs a guest: tests/integration/test_cluster.c. */
/* What cmocka.h needs first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/macro.h"
#include "cluster/host/health.h"
#include "tests/lib/net.h"

/* Long enough for any loopback connection on a busy machine; the cases
 * that must not connect fail at once (refused) or are about the timeout. */
#define PROBE_USEC (10 * 1000000ULL)

static void tcp_listener_is_healthy(void **state)
{
	struct vmact_err err = { 0 };
	unsigned port;
	_cleanup_close_ int fd = th_silent_listener(&port);
	char addr[32];

	assert_true(fd >= 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	/* The handshake completes in the kernel's backlog: nothing need
	 * accept for the check to pass, as for a real service's port. */
	if (cl_health_tcp(addr, PROBE_USEC, &err) != 0)
		fail_msg("%s: %s", addr, err.msg);
}

static void tcp_closed_port_is_refused(void **state)
{
	struct vmact_err err = { 0 };
	unsigned port = th_dead_port();
	char addr[32];

	assert_true(port > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	assert_int_equal(cl_health_tcp(addr, PROBE_USEC, &err), -ECONNREFUSED);
	/* The message names what was tried: the operator's only clue. */
	if (!strstr(err.msg, addr))
		fail_msg("message without the address: %s", err.msg);
}

/* A connection attempt that never waits: those beyond the queue stay in
 * SYN_SENT (th_connect would block on them). */
static int connect_nonblock(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A listener whose accept queue is full: Linux drops further SYNs (and
 * the client would retry in a second), so the probe's own timeout is what
 * ends it. Only the result is asserted, never how long it took. */
static void tcp_full_queue_times_out(void **state)
{
	struct vmact_err err = { 0 };
	unsigned port;
	_cleanup_close_ int fd = th_silent_listener(&port);
	int fill[8];
	char addr[32];
	int r = 0;

	assert_true(fd >= 0);
	/* A backlog of 0 keeps one connection; fill it (and then some). */
	assert_int_equal(listen(fd, 0), 0);
	for (size_t i = 0; i < ARRAY_SIZE(fill); i++)
		fill[i] = connect_nonblock(port);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	r = cl_health_tcp(addr, 300 * 1000ULL, &err);
	for (size_t i = 0; i < ARRAY_SIZE(fill); i++)
		if (fill[i] >= 0)
			close(fill[i]);
	assert_int_equal(r, -ETIMEDOUT);
	if (!strstr(err.msg, addr) || !strstr(err.msg, "no answer within"))
		fail_msg("%s", err.msg);
}

static void tcp_malformed_address(void **state)
{
	static const char *const bad[] = {
		"",
		"127.0.0.1",
		"127.0.0.1:notaport",
		"127.0.0.1:70000",
		"localhost:80", /* numeric only: no resolver in a probe */
		"[::1:80",
		"unix:/run/x.sock", /* a listen spec, but not for a probe */
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct vmact_err err = { 0 };
		int r = cl_health_tcp(bad[i], PROBE_USEC, &err);

		if (r != -EINVAL || !err.msg[0])
			fail_msg("'%s': %d (%s), want -EINVAL with a reason", bad[i], r, err.msg);
	}
}

static void probe_kind_tcp(void **state)
{
	struct cl_health h = { .kind = CL_HEALTH_TCP, .probe_timeout_usec = PROBE_USEC };
	struct vmact_err err = { 0 };
	unsigned port;
	_cleanup_close_ int fd = th_silent_listener(&port);

	assert_true(fd >= 0);
	/* The tcp kind needs no libvirt connection and no domain: the
	 * address is the group's (doc/cluster.md), the same for every VM. */
	snprintf(h.address, sizeof(h.address), "127.0.0.1:%u", port);
	if (cl_health_probe(NULL, "00000000-0000-0000-0000-000000000000", &h, &err) != 0)
		fail_msg("%s: %s", h.address, err.msg);
	close(fd);
	fd = -1;
	/* The same port closed: the VM is not healthy. */
	assert_int_equal(cl_health_probe(NULL, "00000000-0000-0000-0000-000000000000", &h, &err),
			 -ECONNREFUSED);
	assert_non_null(strstr(err.msg, h.address));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tcp_listener_is_healthy),
		cmocka_unit_test(tcp_closed_port_is_refused),
		cmocka_unit_test(tcp_full_queue_times_out),
		cmocka_unit_test(tcp_malformed_address),
		cmocka_unit_test(probe_kind_tcp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
