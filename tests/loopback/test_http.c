/* SPDX-License-Identifier: Apache-2.0 */
/* http-client and http-server against each other and against raw sockets
 * on loopback, all on one sd-event loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/http-client.h"
#include "net/http-server.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/wait.h"

struct fixture {
	sd_event *ev;
	struct net_http_server *srv;
	struct net_http_client *cli;
	unsigned handled;
};

/* Echo handler: "METHOD URL CT\nBODY"; /big answers 100 KiB. */
static void echo(void *ud, const struct net_http_server_request *req,
		 struct net_http_server_reply *reply)
{
	struct fixture *f = ud;
	size_t n;

	f->handled++;
	if (strcmp(req->url, "/big") == 0) {
		reply->body = malloc(100 * 1024);
		if (!reply->body)
			return;
		memset(reply->body, 'x', 100 * 1024);
		reply->body_len = 100 * 1024;
		reply->status = 200;
		return;
	}
	if (strcmp(req->url, "/fail") == 0)
		return; /* status 0: handler failure -> 500 */
	n = strlen(req->method) + strlen(req->url) + strlen(req->content_type) + req->body_len + 8;
	reply->body = malloc(n);
	if (!reply->body)
		return;
	reply->body_len = (size_t)snprintf(reply->body, n, "%s %s %s\n", req->method, req->url,
					   req->content_type);
	memcpy(reply->body + reply->body_len, req->body, req->body_len);
	reply->body_len += req->body_len;
	reply->status = 201;
	reply->content_type = "application/x-echo";
}

static int setup_with(void **state, const char *listen)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct net_http_server_config cfg = {
		.listen = listen,
		.max_body = 1024,
		.too_large_status = 400,
		.too_large_body = "bad JSON",
		.request_timeout_usec = 300000,
		.idle_timeout_sec = 5,
	};
	struct vmact_err err = { 0 };

	assert_non_null(f);
	assert_int_equal(sd_event_new(&f->ev), 0);
	if (net_http_server_new(f->ev, &cfg, echo, f, &f->srv, &err) < 0)
		fail_msg("server: %s", err.msg);
	if (net_http_client_new(f->ev, &f->cli, &err) < 0)
		fail_msg("client: %s", err.msg);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, "127.0.0.1:0");
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	net_http_client_free(f->cli);
	net_http_server_free(f->srv);
	sd_event_unref(f->ev);
	free(f);
	return 0;
}

struct result {
	bool done;
	int rc;
	long status;
	char ctype[64];
	char *body;
	size_t len;
	char msg[VMACT_ERR_MSG_MAX];
};

static void on_done(void *ud, int rc, const struct net_http_response *resp,
		    const struct vmact_err *err)
{
	struct result *r = ud;

	r->done = true;
	r->rc = rc;
	if (resp) {
		r->status = resp->status;
		snprintf(r->ctype, sizeof(r->ctype), "%s", resp->content_type);
		r->body = malloc(resp->body_len + 1);
		memcpy(r->body, resp->body, resp->body_len + 1);
		r->len = resp->body_len;
	} else if (err) {
		snprintf(r->msg, sizeof(r->msg), "%s", err->msg);
	}
}

static void do_request(struct fixture *f, struct net_http_request *req, struct result *r)
{
	struct vmact_err err = { 0 };

	memset(r, 0, sizeof(*r));
	if (net_http_client_start(f->cli, req, on_done, r, NULL, &err) < 0)
		fail_msg("start: %s", err.msg);
	assert_true(TH_WAIT(f->ev, r->done, TH_SAFETY_USEC));
}

static char *url_of(struct fixture *f, const char *path)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "http://127.0.0.1:%u%s", net_http_server_port(f->srv), path);
	return buf;
}

static void test_methods(void **state)
{
	struct fixture *f = *state;
	static const char *methods[] = { "GET", "POST", "PUT", "DELETE" };

	for (size_t i = 0; i < 4; i++) {
		char want[256];
		struct result r;
		struct net_http_request req = {
			.method = methods[i],
			.url = url_of(f, "/a/b?c=d"),
			.content_type = i ? "application/json" : NULL,
			.body = i ? "{\"x\":1}" : NULL,
			.body_len = i ? 7 : 0,
			.timeout_usec = 10000000,
		};

		do_request(f, &req, &r);
		assert_int_equal(r.rc, 0);
		assert_int_equal(r.status, 201);
		assert_string_equal(r.ctype, "application/x-echo");
		snprintf(want, sizeof(want), "%s /a/b %s\n%s", methods[i],
			 i ? "application/json" : "", i ? "{\"x\":1}" : "");
		assert_string_equal(r.body, want);
		free(r.body);
	}
	assert_int_equal(f->handled, 4);
	assert_int_equal(net_http_client_pending(f->cli), 0);
}

static bool all_done(const struct result *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!r[i].done)
			return false;
	return true;
}

static void test_concurrent(void **state)
{
	struct fixture *f = *state;
	struct result r[20];
	struct vmact_err err = { 0 };

	memset(r, 0, sizeof(r));
	for (size_t i = 0; i < 20; i++) {
		char body[16];
		struct net_http_request req = {
			.method = "POST",
			.url = url_of(f, "/"),
			.body = body,
			.timeout_usec = 10000000,
		};

		req.body_len = (size_t)snprintf(body, sizeof(body), "%zu", i);
		assert_int_equal(net_http_client_start(f->cli, &req, on_done, &r[i], NULL, &err),
				 0);
	}
	assert_true(TH_WAIT(f->ev, all_done(r, 20), TH_SAFETY_USEC));
	for (size_t i = 0; i < 20; i++) {
		char want[64];

		snprintf(want, sizeof(want), "POST / \n%zu", i);
		assert_int_equal(r[i].rc, 0);
		assert_string_equal(r[i].body, want);
		free(r[i].body);
	}
}

static void test_handler_failure_is_500(void **state)
{
	struct fixture *f = *state;
	struct result r;
	struct net_http_request req = { .method = "GET", .url = url_of(f, "/fail") };

	do_request(f, &req, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.status, 500);
	assert_string_equal(r.body, "internal error");
	free(r.body);
}

static void test_response_cap(void **state)
{
	struct fixture *f = *state;
	struct result r;
	struct net_http_request req = { .method = "GET",
					.url = url_of(f, "/big"),
					.max_response = 1024 };

	do_request(f, &req, &r);
	assert_int_equal(r.rc, -EFBIG);
	assert_non_null(strstr(r.msg, "exceeds 1024 bytes"));
	/* A cap above the body lets the same response through. */
	req.max_response = 200 * 1024;
	do_request(f, &req, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.len, 100 * 1024);
	free(r.body);
}

static void test_oversized_body(void **state)
{
	struct fixture *f = *state;
	char big[2000];
	struct result r;
	struct net_http_request req = { .method = "POST",
					.url = url_of(f, "/"),
					.body = big,
					.body_len = sizeof(big),
					.timeout_usec = 10000000 };

	memset(big, 'a', sizeof(big));
	do_request(f, &req, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.status, 400);
	assert_string_equal(r.ctype, "text/plain");
	assert_string_equal(r.body, "bad JSON");
	free(r.body);
	assert_int_equal(f->handled, 0);
	/* Exactly at the limit is accepted, and the server keeps serving. */
	req.body_len = 1024;
	do_request(f, &req, &r);
	assert_int_equal(r.status, 201);
	free(r.body);
}

/* A chunked body has no Content-Length: the limit hits while reading. */
static void test_oversized_chunked(void **state)
{
	struct fixture *f = *state;
	char buf[4096];
	size_t len = 0;
	int fd = th_connect(net_http_server_port(f->srv));
	const char *head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
			   "Connection: close\r\n\r\n";
	char chunk[700];

	assert_true(fd >= 0);
	assert_int_equal(write(fd, head, strlen(head)), (ssize_t)strlen(head));
	memset(chunk, 'b', sizeof(chunk));
	for (int i = 0; i < 3; i++) {
		char hdr[16];
		int n = snprintf(hdr, sizeof(hdr), "%zx\r\n", sizeof(chunk));

		assert_int_equal(write(fd, hdr, (size_t)n), n);
		assert_int_equal(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
		assert_int_equal(write(fd, "\r\n", 2), 2);
	}
	assert_int_equal(write(fd, "0\r\n\r\n", 5), 5);
	assert_true(th_read_until_eof(f->ev, fd, buf, sizeof(buf), &len));
	close(fd);
	assert_non_null(strstr(buf, "HTTP/1.1 400"));
	assert_non_null(strstr(buf, "bad JSON"));
	assert_int_equal(f->handled, 0);
}

static void test_garbage_then_serves(void **state)
{
	struct fixture *f = *state;
	char buf[4096];
	size_t len = 0;
	int fd = th_connect(net_http_server_port(f->srv));
	const char *junk = "\x01\x02 garbage garbage\r\n\r\n";
	struct result r;
	struct net_http_request req = { .method = "GET", .url = url_of(f, "/ok") };

	assert_true(fd >= 0);
	assert_int_equal(write(fd, junk, strlen(junk)), (ssize_t)strlen(junk));
	assert_true(th_read_until_eof(f->ev, fd, buf, sizeof(buf), &len));
	close(fd);
	/* Either a 400 from libmicrohttpd or a plain close; never a handler call. */
	if (len)
		assert_non_null(strstr(buf, " 400 "));
	assert_int_equal(f->handled, 0);
	do_request(f, &req, &r);
	assert_int_equal(r.status, 201);
	free(r.body);
}

/* Slowloris: headers trickle in and never finish. The whole-request
 * deadline (300 ms here) closes the connection although it is never idle
 * for MHD's idle timeout (5 s); meanwhile other requests are served. */
static void test_slowloris(void **state)
{
	struct fixture *f = *state;
	int fd = th_connect(net_http_server_port(f->srv));
	const char *head = "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	struct result r;
	struct net_http_request req = { .method = "GET", .url = url_of(f, "/ok") };
	char buf[256];
	size_t len = 0;
	bool closed = false;
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, head, strlen(head)), (ssize_t)strlen(head));
	do_request(f, &req, &r);
	assert_int_equal(r.status, 201);
	free(r.body);
	while (!closed && vmact_now_usec() < end) {
		ssize_t n;

		if (write(fd, "a", 1) < 0 && errno != EAGAIN)
			closed = true;
		th_run_for(f->ev, 100000);
		n = th_read_some(fd, buf, sizeof(buf), &len);
		if (n == 0 || n == -ECONNRESET || n == -EPIPE)
			closed = true;
	}
	close(fd);
	assert_true(closed);
	assert_int_equal(f->handled, 1);
}

static void test_timeout_silent_peer(void **state)
{
	struct fixture *f = *state;
	unsigned port;
	int lfd = th_silent_listener(&port);
	char url[64];
	struct result r;
	struct net_http_request req = {
		.method = "POST", .url = url, .body = "{}", .body_len = 2, .timeout_usec = 200000
	};

	assert_true(lfd >= 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	do_request(f, &req, &r);
	close(lfd);
	assert_int_equal(r.rc, -ETIMEDOUT);
}

static void test_refused(void **state)
{
	struct fixture *f = *state;
	char url[64];
	struct result r;
	struct net_http_request req = { .method = "GET", .url = url, .timeout_usec = 5000000 };

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", th_dead_port());
	do_request(f, &req, &r);
	assert_int_equal(r.rc, -ECONNREFUSED);
	assert_true(strlen(r.msg) > 0);
}

static void test_bad_args(void **state)
{
	struct fixture *f = *state;
	struct vmact_err err = { 0 };
	struct result r = { 0 };
	struct net_http_request req = { .method = "PATCH", .url = "http://127.0.0.1:1/" };

	assert_int_equal(net_http_client_start(f->cli, &req, on_done, &r, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "PATCH"));
	vmact_err_reset(&err);
	req.method = "GET";
	req.url = "ftp://127.0.0.1/";
	assert_int_equal(net_http_client_start(f->cli, &req, on_done, &r, NULL, &err), -EINVAL);
}

static void test_cancel(void **state)
{
	struct fixture *f = *state;
	unsigned port;
	int lfd = th_silent_listener(&port);
	char url[64];
	struct result r = { 0 };
	struct net_http_call *call = NULL;
	struct vmact_err err = { 0 };
	struct net_http_request req = { .method = "GET", .url = url, .timeout_usec = 100000 };

	assert_true(lfd >= 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	assert_int_equal(net_http_client_start(f->cli, &req, on_done, &r, &call, &err), 0);
	th_run_for(f->ev, 20000);
	net_http_call_cancel(call);
	assert_int_equal(net_http_client_pending(f->cli), 0);
	th_run_for(f->ev, 300000);
	close(lfd);
	assert_false(r.done);
}

static void test_unix_socket(void **state)
{
	struct fixture *f;
	char path[64], spec[80];
	struct result r;
	struct net_http_request req = { .method = "POST",
					.url = "http://localhost/u",
					.body = "hi",
					.body_len = 2,
					.unix_socket = path };

	snprintf(path, sizeof(path), "/tmp/vmact-plugin-test-%d.sock", (int)getpid());
	snprintf(spec, sizeof(spec), "unix:%s", path);
	setup_with((void **)&f, spec);
	assert_int_equal(net_http_server_port(f->srv), 0);
	do_request(f, &req, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "POST /u \nhi");
	free(r.body);
	teardown((void **)&f);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_ipv6_loopback(void **state)
{
	struct fixture *f;
	char url[64];
	struct result r;
	struct net_http_request req = { .method = "GET", .url = url };
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };

	if (probe < 0 || bind(probe, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (probe >= 0)
			close(probe);
		skip(); /* no IPv6 loopback on this host */
	}
	close(probe);
	setup_with((void **)&f, "[::1]:0");
	snprintf(url, sizeof(url), "http://[::1]:%u/v6", net_http_server_port(f->srv));
	do_request(f, &req, &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.body, "GET /v6 \n");
	free(r.body);
	teardown((void **)&f);
}

static void test_server_bad_listen(void **state)
{
	sd_event *ev = NULL;
	struct net_http_server *s = NULL;
	struct vmact_err err = { 0 };
	struct net_http_server_config cfg = { .listen = "127.0.0.1:99999" };

	assert_int_equal(sd_event_new(&ev), 0);
	assert_true(net_http_server_new(ev, &cfg, echo, NULL, &s, &err) < 0);
	assert_non_null(strstr(err.msg, "bad port"));
	assert_null(s);
	sd_event_unref(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_methods, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handler_failure_is_500, setup, teardown),
		cmocka_unit_test_setup_teardown(test_response_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized_chunked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_then_serves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slowloris, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_silent_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test(test_unix_socket),
		cmocka_unit_test(test_ipv6_loopback),
		cmocka_unit_test(test_server_bad_listen),
	};

	return cmocka_run_group_tests_name("test_http", tests, NULL, NULL);
}
