/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP server (and the arbiter behind it) against connection floods on
 * loopback, as one unprivileged local user can mount them: several times
 * the connection limit of sockets, each holding a partial request header.
 * While they are held a well-formed request must be answered, and once they
 * close the server must serve again and hold no connection. The deadlines
 * are set far out so that only the connection limits are in play. Time
 * limits are safety nets against a hang, not assertions about speed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include <errno.h>
#include <sys/socket.h>

#include "base/macro.h"
#include "agent-glue/arbiter.h"
#include "agent-glue/http-server.h"
#include "tests/lib/flood.h"
#include "tests/lib/net.h"
#include "tests/lib/wait.h"
#include "tests/lib/file.h"
#include "base/time.h"

#define GiB (1024ULL * 1024 * 1024)
#define FAR_USEC (600ULL * 1000000ULL)

static const char good_request[] = "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

struct hostile {
	struct th_flood fl; /* fl.ev is the server's loop */
	struct ag_http_server *srv;
	struct ag_arbiter *arb;
	unsigned handled;
};

static void answer(void *ud, const struct ag_http_server_request *req,
		   struct ag_http_server_reply *reply)
{
	struct hostile *h = ud;

	h->handled++;
	ag_http_reply_text(reply, 201, NULL, req->url);
}

static void server_start(struct hostile *h, const char *listen, unsigned conn_limit,
			 unsigned per_client_limit)
{
	struct ag_http_server_config cfg = {
		.listen = listen,
		.conn_limit = conn_limit,
		.per_client_limit = per_client_limit,
		.idle_timeout_sec = (unsigned)(FAR_USEC / 1000000),
		.request_timeout_usec = FAR_USEC,
	};
	struct vmact_err err = { 0 };

	memset(h, 0, sizeof(*h));
	assert_int_equal(sd_event_new(&h->fl.ev), 0);
	if (ag_http_server_new(h->fl.ev, &cfg, answer, h, &h->srv, &err) < 0)
		fail_msg("server: %s", err.msg);
	h->fl.port = ag_http_server_port(h->srv);
	if (strncmp(listen, "unix:", 5) == 0)
		snprintf(h->fl.unix_path, sizeof(h->fl.unix_path), "%s", listen + 5);
}

static void hostile_free(struct hostile *h)
{
	th_flood_close(&h->fl);
	free(h->fl.fds);
	ag_http_server_free(h->srv);
	ag_arbiter_free(h->arb);
	sd_event_unref(h->fl.ev);
}

static unsigned connections(struct hostile *h)
{
	/* The arbiter's server is not reachable from here; its connection
	 * count is checked through requests instead. */
	return ag_http_server_connections(h->srv);
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
			 h->fl.unix_path[0] ? h->fl.unix_path : src ? src : "127.0.0.1", want,
			 r < 0 ? strerror(-r) : "answered", buf);
}

/* Drives the loop until the server holds at most n connections. */
static void settle(struct hostile *h, unsigned n)
{
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;

	while (connections(h) > n && vmact_now_usec() < end)
		sd_event_run(h->fl.ev, 10000);
	if (connections(h) > n)
		fail_msg("server still holds %u connections, expected at most %u", connections(h), n);
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

/* Descriptors for n more sockets; false when the hard limit is too low. */
static bool raise_nofile(rlim_t n)
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
	if (!raise_nofile(2 * n + 512))
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
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("test_http_hostile", tests, NULL, NULL);
}
