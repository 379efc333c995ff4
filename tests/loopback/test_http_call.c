/* SPDX-License-Identifier: Apache-2.0 */
/* The one blocking HTTP client between vmact's programs
 * (shared/http-call.c) against a raw unix-socket peer in a thread of the
 * test that writes canned bytes (no HTTP code of vmact's on that side):
 * an answer and the request as it went out, a status passed through, an
 * answer beyond the bound, a peer that never answers, no peer at all, and
 * a cancelled request. Each failure has its own errno, which vmactl,
 * vmact-groupctl, vmact-cloudprovider and vmact-groupd word for their
 * users. */
/* What cmocka.h needs first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "shared/http-call.h"

struct peer {
	char path[108];
	int lfd;
	const char *reply; /* NULL: read the request, answer nothing */
	char request[4096];
	size_t request_len;
	bool write_failed;
	pthread_t thread;
};

/* One connection: the request read until the client has sent it all (its
 * headers and a Content-Length body), the canned answer written, then the
 * connection held until the client closes it. */
static void *serve(void *p)
{
	struct peer *s = p;
	int fd = accept(s->lfd, NULL, NULL);
	char buf[512];
	ssize_t n;

	if (fd < 0)
		return NULL;
	for (;;) {
		const char *end, *cl;
		size_t want;

		n = read(fd, s->request + s->request_len, sizeof(s->request) - 1 - s->request_len);
		if (n <= 0)
			break;
		s->request_len += (size_t)n;
		s->request[s->request_len] = 0;
		end = strstr(s->request, "\r\n\r\n");
		if (!end)
			continue;
		cl = strcasestr(s->request, "content-length:");
		want = (size_t)(end + 4 - s->request) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		if (s->request_len >= want)
			break;
	}
	/* The client may hang up first (an answer beyond its bound). */
	if (s->reply && write(fd, s->reply, strlen(s->reply)) < 0)
		s->write_failed = true;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return NULL;
}

static void peer_start(struct peer *s, const char *reply)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "/tmp/test_http_call.%d.sock", (int)getpid());
	unlink(s->path);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", s->path);
	s->reply = reply;
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void peer_stop(struct peer *s)
{
	pthread_join(s->thread, NULL);
	close(s->lfd);
	unlink(s->path);
}

/* An HTTP/1.1 answer with its body, malloc'd. */
static char *answer(const char *status, const char *body)
{
	char *r = NULL;

	assert_true(asprintf(&r,
			     "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
			     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			     status, strlen(body), body) > 0);
	return r;
}

static const struct vmact_http_req base_req = {
	.url = "/v1/groups?x=1",
	.method = "GET",
	.timeout_usec = 30 * 1000000ULL,
	.answer_max = 4096,
};

static void test_answer(void **state)
{
	struct peer s;
	struct vmact_http_req q = base_req;
	struct vmact_http_answer a;
	struct vmact_err err = { 0 };

	(void)state;
	char *reply = answer("200 OK", "{\"ok\":true}");

	peer_start(&s, reply);
	q.unix_socket = s.path;
	q.method = "POST";
	q.body = "{\"delta\":2}";
	if (vmact_http_call(&q, &a, &err) < 0)
		fail_msg("%s", err.msg);
	peer_stop(&s);
	assert_int_equal(a.status, 200);
	assert_int_equal(a.body.len, 11);
	assert_string_equal(a.body.data, "{\"ok\":true}");
	/* The request as it went out: the method, the path with its query, a
	 * JSON body. */
	assert_non_null(strstr(s.request, "POST /v1/groups?x=1 HTTP/1.1\r\n"));
	assert_non_null(strcasestr(s.request, "\r\nContent-Type: application/json\r\n"));
	assert_non_null(strstr(s.request, "\r\n\r\n{\"delta\":2}"));
	vmact_http_answer_free(&a);
	free(reply);
}

/* Any status is an answer: the caller says what it means. */
static void test_status(void **state)
{
	struct peer s;
	struct vmact_http_req q = base_req;
	struct vmact_http_answer a;
	struct vmact_err err = { 0 };

	(void)state;
	char *reply = answer("503 Service Unavailable",
			     "{\"error\":\"no\",\"reason\":\"unavailable\"}");

	peer_start(&s, reply);
	q.unix_socket = s.path;
	assert_int_equal(vmact_http_call(&q, &a, &err), 0);
	peer_stop(&s);
	assert_int_equal(a.status, 503);
	assert_non_null(strstr(a.body.data, "\"unavailable\""));
	vmact_http_answer_free(&a);
	free(reply);
}

static void test_too_large(void **state)
{
	static char body[5001];
	struct peer s;
	struct vmact_http_req q = base_req;
	struct vmact_http_answer a;
	struct vmact_err err = { 0 };
	char *reply;

	(void)state;
	memset(body, 'x', sizeof(body) - 1);
	reply = answer("200 OK", body);
	peer_start(&s, reply);
	q.unix_socket = s.path;
	assert_int_equal(vmact_http_call(&q, &a, &err), -EMSGSIZE);
	peer_stop(&s);
	assert_string_equal(err.msg, "answer too large");
	/* Nothing beyond the bound was kept. */
	assert_true(a.body.len <= q.answer_max);
	vmact_http_answer_free(&a);
	free(reply);
}

/* A peer that takes the request and never answers: the timeout ends it. */
static void test_silent(void **state)
{
	struct peer s;
	struct vmact_http_req q = base_req;
	struct vmact_http_answer a;
	struct vmact_err err = { 0 };

	(void)state;
	peer_start(&s, NULL);
	q.unix_socket = s.path;
	q.timeout_usec = 300000;
	assert_int_equal(vmact_http_call(&q, &a, &err), -ETIMEDOUT);
	peer_stop(&s);
	assert_non_null(strstr(s.request, "GET /v1/groups?x=1 "));
	vmact_http_answer_free(&a);
}

/* No peer on the socket's path. */
static void test_refused(void **state)
{
	struct vmact_http_req q = base_req;
	struct vmact_http_answer a;
	struct vmact_err err = { 0 };
	char path[108];

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_http_call.%d.absent", (int)getpid());
	unlink(path);
	q.unix_socket = path;
	assert_int_equal(vmact_http_call(&q, &a, &err), -ECONNREFUSED);
	assert_true(err.msg[0] != 0);
	vmact_http_answer_free(&a);
}

/* A flag set (as a signal handler sets it): the request is abandoned
 * with -EINTR rather than waiting for a silent peer's timeout. */
static void test_cancel(void **state)
{
	static volatile sig_atomic_t flag = 1;
	struct peer s;
	struct vmact_http_req q = base_req;
	struct vmact_http_answer a;
	struct vmact_err err = { 0 };

	(void)state;
	peer_start(&s, NULL);
	q.unix_socket = s.path;
	q.cancel = &flag;
	assert_int_equal(vmact_http_call(&q, &a, &err), -EINTR);
	/* The peer may not even have been reached; let it go either way. */
	{
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un u = { .sun_family = AF_UNIX };

		snprintf(u.sun_path, sizeof(u.sun_path), "%s", s.path);
		if (connect(fd, (struct sockaddr *)&u, sizeof(u)) == 0 &&
		    write(fd, "GET / HTTP/1.1\r\n\r\n", 18) < 0)
			fail_msg("write: %s", strerror(errno));
		close(fd);
	}
	peer_stop(&s);
	vmact_http_answer_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer),    cmocka_unit_test(test_status),
		cmocka_unit_test(test_too_large), cmocka_unit_test(test_silent),
		cmocka_unit_test(test_refused),   cmocka_unit_test(test_cancel),
	};

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
