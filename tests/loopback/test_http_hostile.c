/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP server (and the arbiter behind it) against connection floods on
 * loopback, as one unprivileged local user can mount them: several times
 * the connection limit of sockets, each holding a partial request header.
 * While they are held a well-formed request must be answered, and once they
 * close the server must serve again and hold no connection. The deadlines
 * are set far out so that only the connection limits are in play. Time
 * limits are safety nets against a hang, not assertions about speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent-glue/arbiter/arbiter.h"
#include "base/macro.h"
#include "base/time.h"
#include "net/http-server.h"
#include "tests/lib/file.h"
#include "tests/lib/flood.h"
#include "tests/lib/net.h"
#include "tests/lib/wait.h"

#define GiB      (1024ULL * 1024 * 1024)
#define FAR_USEC (600ULL * 1000000ULL)

static const char good_request[] = "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

struct hostile {
	struct th_flood fl; /* fl.ev is the server's loop */
	struct net_http_server *srv;
	struct ag_arbiter *arb;
	unsigned handled;
};

static void answer(void *ud, const struct net_http_server_request *req,
		   struct net_http_server_reply *reply)
{
	struct hostile *h = ud;

	h->handled++;
	net_http_reply_text(reply, 201, NULL, req->url);
}

static void server_start(struct hostile *h, const char *listen, unsigned conn_limit,
			 unsigned per_client_limit)
{
	struct net_http_server_config cfg = {
		.listen = listen,
		.conn_limit = conn_limit,
		.per_client_limit = per_client_limit,
		.idle_timeout_sec = (unsigned)(FAR_USEC / 1000000),
		.request_timeout_usec = FAR_USEC,
	};
	struct vmact_err err = { 0 };

	memset(h, 0, sizeof(*h));
	assert_int_equal(sd_event_new(&h->fl.ev), 0);
	if (net_http_server_new(h->fl.ev, &cfg, answer, h, &h->srv, &err) < 0)
		fail_msg("server: %s", err.msg);
	h->fl.port = net_http_server_port(h->srv);
	if (strncmp(listen, "unix:", 5) == 0)
		snprintf(h->fl.unix_path, sizeof(h->fl.unix_path), "%s", listen + 5);
}

static void hostile_free(struct hostile *h)
{
	th_flood_close(&h->fl);
	free(h->fl.fds);
	net_http_server_free(h->srv);
	ag_arbiter_free(h->arb);
	sd_event_unref(h->fl.ev);
}

static unsigned connections(struct hostile *h)
{
	/* The arbiter's server is not reachable from here; its connection
	 * count is checked through requests instead. */
	return net_http_server_connections(h->srv);
}

/* n connections holding a partial header each, while the server's loop
 * runs: every one must get through. */
static void flood(struct hostile *h, unsigned n, const char *const *srcs, unsigned nsrcs)
{
	unsigned got = 0;
	int r = th_flood(&h->fl, n, srcs, nsrcs, &got);

	if (r < 0)
		fail_msg("flood: %s; %u of %u connections got through", strerror(-r), got, n);
}

/* A well-formed request from src must be answered with want in it. */
static void expect_reply(struct hostile *h, const char *src, const char *req, const char *want)
{
	char buf[4096];
	int r = th_flood_request(&h->fl, src, req, strlen(req), buf, sizeof(buf));

	if (r < 0 || !strstr(buf, want))
		fail_msg("%s: no reply with \"%s\" (%s; got \"%s\")",
			 h->fl.unix_path[0] ? h->fl.unix_path
			 : src              ? src
					    : "127.0.0.1",
			 want, r < 0 ? strerror(-r) : "answered", buf);
}

/* Drives the loop until the server holds at most n connections. */
static void settle(struct hostile *h, unsigned n)
{
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;

	while (connections(h) > n && vmact_now_usec() < end)
		sd_event_run(h->fl.ev, 10000);
	if (connections(h) > n)
		fail_msg("server still holds %u connections, expected at most %u", connections(h),
			 n);
}

static void close_flood(struct hostile *h)
{
	th_flood_close(&h->fl);
}

/* 4x the limit from the good client's own address (one client, so its
 * share is what evicts), then served again once the flood closed. */
static void test_flood_same_client(void **state)
{
	struct hostile h;

	server_start(&h, "127.0.0.1:0", 32, 0);
	flood(&h, 4 * 32, NULL, 0);
	settle(&h, 32);
	expect_reply(&h, NULL, good_request, "HTTP/1.1 201");
	assert_int_equal(h.handled, 1);
	close_flood(&h);
	settle(&h, 0);
	expect_reply(&h, NULL, good_request, "HTTP/1.1 201");
	settle(&h, 0);
	assert_int_equal(h.handled, 2);
	hostile_free(&h);
}

/* The flood from eight other addresses, each within its share: the server's
 * limit is what evicts, the oldest first. */
static void test_flood_many_clients(void **state)
{
	static const char *const srcs[] = { "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5",
					    "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9" };
	struct hostile h;

	server_start(&h, "127.0.0.1:0", 32, 0);
	flood(&h, 4 * 32, srcs, ARRAY_SIZE(srcs));
	settle(&h, 32);
	expect_reply(&h, NULL, good_request, "HTTP/1.1 201");
	expect_reply(&h, "127.0.0.5", good_request, "HTTP/1.1 201");
	close_flood(&h);
	settle(&h, 0);
	expect_reply(&h, NULL, good_request, "HTTP/1.1 201");
	settle(&h, 0);
	assert_int_equal(h.handled, 3);
	hostile_free(&h);
}

/* A client over its share loses its own connections, not other clients'
 * older ones: eight partial requests from one address survive a flood from
 * another and complete afterwards. */
static void test_flood_spares_other_clients(void **state)
{
	static const char *const attacker[] = { "127.0.0.2" };
	const char *head = "GET /v HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
	struct hostile h;
	int victims[8];

	server_start(&h, "127.0.0.1:0", 32, 16);
	for (unsigned i = 0; i < ARRAY_SIZE(victims); i++) {
		uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;

		victims[i] = th_flood_open(&h.fl, "127.0.0.3");
		assert_true(victims[i] >= 0);
		while (!th_flood_send(victims[i], head) && vmact_now_usec() < end)
			sd_event_run(h.fl.ev, 10000);
	}
	flood(&h, 4 * 32, attacker, 1);
	settle(&h, 8 + 16);
	for (unsigned i = 0; i < ARRAY_SIZE(victims); i++) {
		char buf[1024];
		size_t len = 0;

		buf[0] = '\0';
		assert_int_equal(send(victims[i], "\r\n", 2, MSG_NOSIGNAL), 2);
		assert_true(th_read_until_eof(h.fl.ev, victims[i], buf, sizeof(buf), &len));
		close(victims[i]);
		if (!strstr(buf, "HTTP/1.1 201"))
			fail_msg("victim %u was cut: \"%s\"", i, buf);
	}
	assert_int_equal(h.handled, ARRAY_SIZE(victims));
	close_flood(&h);
	settle(&h, 0);
	hostile_free(&h);
}

/* The same on a unix socket, where a client is a peer uid (all of these
 * are the test's own). */
static void test_flood_unix(void **state)
{
	char spec[96];
	struct hostile h;

	snprintf(spec, sizeof(spec), "unix:/tmp/vmact-hostile-%d.sock", (int)getpid());
	server_start(&h, spec, 32, 0);
	flood(&h, 4 * 32, NULL, 0);
	settle(&h, 32);
	expect_reply(&h, NULL, good_request, "HTTP/1.1 201");
	close_flood(&h);
	settle(&h, 0);
	expect_reply(&h, NULL, good_request, "HTTP/1.1 201");
	hostile_free(&h);
}

/* The client for test_oversized_header: the whole oversized request is in
 * the socket before the server reads any of it (no new readiness edges
 * after that); what came back, or nothing, goes to out. */
static void oversized_client(unsigned port, int out)
{
	const size_t big_len = 256 * 1024;
	char *big = malloc(big_len + 64), buf[256] = "";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = TH_SAFETY_USEC / 1000000 };
	size_t len = 0, off = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0), n;

	if (!big || fd < 0)
		_exit(1);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	n = snprintf(big, big_len, "GET /x HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'a', big_len - (size_t)n);
	memcpy(big + big_len, "\r\n\r\n", 5);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		_exit(1);
	while (off < big_len + 4) {
		ssize_t w = send(fd, big + off, big_len + 4 - off, MSG_NOSIGNAL);

		if (w <= 0)
			break; /* the server answered and closed: read what it said */
		off += (size_t)w;
	}
	while (len < sizeof(buf) - 1) {
		ssize_t r = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);

		if (r <= 0)
			break;
		len += (size_t)r;
	}
	if (write(out, buf, len) < 0)
		_exit(1);
	_exit(0);
}

static int on_flag(sd_event_source *src, int fd, uint32_t revents, void *ud)
{
	*(bool *)ud = true;
	return 0;
}

static int on_flag_time(sd_event_source *src, uint64_t usec, void *ud)
{
	*(bool *)ud = true;
	return 0;
}

/* With the server's default deadlines, a header over libmicrohttpd's
 * memory limit that arrived all at once is answered 431. The server reads
 * it in a pass per timer wakeup; with sd-event's default timer accuracy
 * each pass waited up to 250 ms, the 10 s request deadline cut the
 * connection first and the client got no answer (VMACT_TIMER_ACCURACY_USEC). */
static void test_oversized_header(void **state)
{
	struct net_http_server_config cfg = { .listen = "127.0.0.1:0", .conn_limit = 16 };
	struct vmact_err err = { 0 };
	struct hostile h;
	char buf[256] = "";
	size_t len = 0;
	sd_event_source *io = NULL, *safety = NULL;
	int p[2], status;
	bool done = false;
	pid_t pid;

	memset(&h, 0, sizeof(h));
	assert_int_equal(sd_event_new(&h.fl.ev), 0);
	if (net_http_server_new(h.fl.ev, &cfg, answer, &h, &h.srv, &err) < 0)
		fail_msg("server: %s", err.msg);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		oversized_client(net_http_server_port(h.srv), p[1]);
	}
	close(p[1]);
	/* The loop waits as vmactd's does, for its next event with no
	 * timeout: the pipe (the client's answer) or the safety timer. */
	assert_true(sd_event_add_io(h.fl.ev, &io, p[0], EPOLLIN, on_flag, &done) >= 0);
	assert_true(sd_event_add_time_relative(h.fl.ev, &safety, CLOCK_MONOTONIC, TH_SAFETY_USEC, 0,
					       on_flag_time, &done) >= 0);
	while (!done)
		assert_true(sd_event_run(h.fl.ev, UINT64_MAX) >= 0);
	sd_event_source_disable_unref(io);
	sd_event_source_disable_unref(safety);
	if (waitpid(pid, &status, WNOHANG) == 0)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	for (ssize_t r;
	     len < sizeof(buf) - 1 && (r = read(p[0], buf + len, sizeof(buf) - 1 - len)) > 0;)
		len += (size_t)r;
	buf[len] = '\0';
	close(p[0]);
	if (strncmp(buf, "HTTP/1.1 431", 12) != 0)
		fail_msg("oversized header: no 431 answer (got \"%.80s\")", buf);
	assert_int_equal(h.handled, 0);
	hostile_free(&h);
}

/* The arbiter exactly as vmactd embeds it and vmact-arbiter runs it
 * (connection limit 512), against 3x its limit of partial headers from
 * the address its agents use. */
static void test_arbiter_flood(void **state)
{
	static const char alive[] =
		"{\"protoVersion\":7,\"pod\":{\"namespace\":\"d\",\"name\":\"alive\"},"
		"\"computeUnit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
		"\"lastPermit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},\"metrics\":null}";
	const unsigned n = 3 * 512;
	struct ag_arbiter_config cfg = {
		.capacity = { 8000, 32 * GiB },
		.watermark = 1,
		.request_timeout_usec = FAR_USEC,
	};
	struct vmact_err err = { 0 };
	struct hostile h;
	char req[1024];

	/* Both ends of every connection live in this process. */
	if (!th_flood_raise_nofile(2 * n + 512))
		skip();
	memset(&h, 0, sizeof(h));
	assert_int_equal(sd_event_new(&h.fl.ev), 0);
	if (ag_arbiter_new(&cfg, &h.arb, &err) < 0 ||
	    ag_arbiter_listen(h.arb, h.fl.ev, "127.0.0.1:0", &err) < 0)
		fail_msg("arbiter: %s", err.msg);
	h.fl.port = ag_arbiter_port(h.arb);
	snprintf(req, sizeof(req),
		 "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		 strlen(alive), alive);
	flood(&h, n, NULL, 0);
	expect_reply(&h, NULL, req, "{\"permit\":{\"vCPUs\":1,\"mem\":\"1Gi\"}}");
	close_flood(&h);
	expect_reply(&h, NULL, req, "{\"permit\":{\"vCPUs\":1,\"mem\":\"1Gi\"}}");
	hostile_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_same_client),
		cmocka_unit_test(test_flood_many_clients),
		cmocka_unit_test(test_flood_spares_other_clients),
		cmocka_unit_test(test_flood_unix),
		cmocka_unit_test(test_arbiter_flood),
		cmocka_unit_test(test_oversized_header),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("test_http_hostile", tests, NULL, NULL);
}
