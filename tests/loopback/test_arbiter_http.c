/* SPDX-License-Identifier: Apache-2.0 */
/* The vmact-arbiter program over real sockets, driven by libcurl's easy
 * interface (a client whose HTTP stack vmact did not write) and by raw
 * sockets: every status code and text of the protocol, the 1 KiB limit,
 * slowloris, malformed HTTP, connection floods, clean SIGTERM exit, CLI
 * errors, and the request bodies of every era of Neon's agent
 * (tests/conformance/agent-eras.json). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

static char arbiter_path[PATH_MAX];

struct proc {
	struct th_proc proc; /* proc.out_fd: its stderr */
	unsigned port;
};

/* Runs vmact-arbiter with args; for a listening one, reads the port from
 * its first stderr line. */
static int spawn(struct proc *p, const char *const *args, bool wait_listen)
{
	static const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_PIPE };
	const char *argv[32];
	size_t n = 0;
	int r;

	argv[n++] = arbiter_path;
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	r = th_spawn(&p->proc, argv, &o);
	if (r < 0)
		return r;
	if (wait_listen) {
		char line[512];
		size_t len = 0;
		const char *at;

		while (len < sizeof(line) - 1) {
			ssize_t rd = read(p->proc.out_fd, line + len, 1);

			if (rd <= 0 || line[len] == '\n')
				break;
			len++;
		}
		line[len] = '\0';
		at = strstr(line, "(port ");
		if (!at || sscanf(at, "(port %u)", &p->port) != 1)
			fail_msg("vmact-arbiter did not start: %s", line);
	}
	return 0;
}

/* Reads the rest of stderr and the exit status. */
static int finish(struct proc *p, char *out, size_t cap)
{
	th_read_fd_all(p->proc.out_fd, out, cap);
	return th_proc_wait(&p->proc);
}

static struct proc server;

struct answer {
	long status;
	char ctype[64];
	char body[2048];
	size_t len;
};

static size_t collect(char *data, size_t size, size_t n, void *ud)
{
	struct answer *a = ud;
	size_t len = size * n;

	if (a->len + len >= sizeof(a->body))
		return 0;
	memcpy(a->body + a->len, data, len);
	a->len += len;
	a->body[a->len] = '\0';
	return len;
}

static struct answer curl_do(const char *method, const char *body, size_t len)
{
	struct answer a = { 0 };
	char url[64];
	char *ct = NULL;
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	CURLcode rc;

	h = curl_slist_append(h, "Expect:");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", server.port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("curl: %s", curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	snprintf(a.ctype, sizeof(a.ctype), "%s", ct ? ct : "");
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return a;
}

static void expect(const char *method, const char *body, long status, const char *want)
{
	struct answer a = curl_do(method, body, body ? strlen(body) : 0);

	if (a.status != status || strcmp(a.body, want) != 0)
		fail_msg("%s %s\n  got %ld %s\n want %ld %s", method, body ? body : "", a.status,
			 a.body, status, want);
	assert_string_equal(a.ctype, status == 200 ? "application/json" : "text/plain");
}

static int group_setup(void **state)
{
	static const char *const args[] = {
		"--listen",    "127.0.0.1:0", "--cpu",       "8", "--memory",          "32Gi",
		"--slot-size", "1Gi",         "--watermark", "1", "--request-timeout", "1",
		NULL
	};
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -1;
	self[n] = '\0';
	/* build[/san]/tests/loopback/test_arbiter_http -> build[/san]/vmact-arbiter */
	snprintf(arbiter_path, sizeof(arbiter_path), "%s/../../vmact-arbiter", dirname(self));
	if (access(arbiter_path, X_OK) != 0) {
		fprintf(stderr, "missing %s\n", arbiter_path);
		return -1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return spawn(&server, args, true);
}

static int group_teardown(void **state)
{
	char out[4096];

	kill(server.proc.pid, SIGTERM);
	finish(&server, out, sizeof(out));
	curl_global_cleanup();
	return 0;
}

static void test_status_400_texts(void **state)
{
	char big[2000];

	expect("GET", NULL, 400, "must be POST");
	expect("PUT", "{}", 400, "must be POST");
	expect("DELETE", NULL, 400, "must be POST");
	expect("POST", "", 400, "bad JSON");
	expect("POST", "{\"protoVersion\":7,", 400, "bad JSON");
	expect("POST", "not json", 400, "bad JSON");
	expect("POST", "{}", 400, "invalid protocol version <invalid: zero>");
	expect("POST", "{\"protoVersion\":9}", 400,
	       "protocol version mismatch: need v1.0 to v5.0 but got <unknown = v5.0 + 2>");
	expect("POST",
	       "{\"protoVersion\":7,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"computeUnit\":{\"vCPUs\":0,\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":1,\"mem\":\"1Gi\"}}",
	       400, "computeUnit fields must be non-zero: vCPUs must be non-zero");
	expect("POST",
	       "{\"protoVersion\":2,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"resources\":{\"vCPUs\":0.5,\"mem\":1},\"metrics\":null}",
	       400,
	       "agent requested fractional CPU with protocol version that does not support it");
	expect("POST",
	       "{\"protoVersion\":1,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"resources\":{\"vCPUs\":1,\"mem\":1},\"metrics\":null}",
	       400, "nil metrics not supported for protocol version v1.0");
	/* Over 1 KiB: "bad JSON" like Go's LimitReader, even though the
	 * body would be valid JSON. */
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big,
	       "{\"protoVersion\":7,\"pod\":{\"namespace\":\"n\",\"name\":\"big\"},"
	       "\"computeUnit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":1,\"mem\":\"1Gi\"}",
	       123);
	big[sizeof(big) - 2] = '}';
	expect("POST", big, 400, "bad JSON");
}

static void test_status_200_every_version(void **state)
{
	expect("POST",
	       "{\"protoVersion\":7,\"pod\":{\"namespace\":\"default\",\"name\":\"compute-quiet-fog-123-abcde\"},"
	       "\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},"
	       "\"lastPermit\":null,\"metrics\":null}",
	       200, "{\"permit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"}}");
	expect("POST",
	       "{\"protoVersion\":7,\"pod\":{\"namespace\":\"default\",\"name\":\"compute-quiet-fog-123-abcde\"},"
	       "\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":1,\"mem\":\"4Gi\"},"
	       "\"lastPermit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},\"metrics\":{\"loadAvg1M\":0.37}}",
	       200, "{\"permit\":{\"vCPUs\":1,\"mem\":\"4Gi\"}}");
	expect("POST",
	       "{\"protoVersion\":6,\"pod\":{\"namespace\":\"d\",\"name\":\"v4\"},"
	       "\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":\"500m\",\"mem\":\"2Gi\"},"
	       "\"lastPermit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},"
	       "\"metrics\":{\"loadAvg1M\":0.5,\"loadAvg5M\":0.25,\"memoryUsageBytes\":100000000}}",
	       200, "{\"permit\":{\"vCPUs\":\"500m\",\"mem\":\"2Gi\"}}");
	expect("POST",
	       "{\"protoVersion\":5,\"pod\":{\"namespace\":\"d\",\"name\":\"v3\"},"
	       "\"resources\":{\"vCPUs\":\"500m\",\"mem\":2},\"lastPermit\":null,\"metrics\":null}",
	       200, "{\"permit\":{\"vCPUs\":\"500m\",\"mem\":2}}");
	expect("POST",
	       "{\"protoVersion\":4,\"pod\":{\"namespace\":\"d\",\"name\":\"v21\"},"
	       "\"resources\":{\"vCPUs\":\"500m\",\"mem\":2},\"lastPermit\":{\"vCPUs\":\"250m\",\"mem\":1},"
	       "\"metrics\":null}",
	       200,
	       "{\"permit\":{\"vCPUs\":\"500m\",\"mem\":2},\"resourceUnit\":{\"vCPUs\":\"250m\",\"mem\":1}}");
	expect("POST",
	       "{\"protoVersion\":3,\"pod\":{\"namespace\":\"default\",\"name\":\"p\"},"
	       "\"resources\":{\"vCPUs\":\"500m\",\"mem\":2},"
	       "\"metrics\":{\"loadAvg1M\":0.5,\"loadAvg5M\":0.25,\"memoryUsageBytes\":100000000}}",
	       200,
	       "{\"permit\":{\"vCPUs\":\"500m\",\"mem\":2},\"resourceUnit\":{\"vCPUs\":\"250m\",\"mem\":1}}");
	expect("POST",
	       "{\"protoVersion\":2,\"pod\":{\"name\":\"p11\",\"namespace\":\"default\"},"
	       "\"resources\":{\"vCPUs\":2,\"mem\":2},\"metrics\":null}",
	       200,
	       "{\"permit\":{\"vCPUs\":2,\"mem\":2},\"resourceUnit\":{\"vCPUs\":1,\"mem\":4}}");
	expect("POST",
	       "{\"protoVersion\":1,\"pod\":{\"name\":\"p10\",\"namespace\":\"default\"},"
	       "\"resources\":{\"vCPUs\":1,\"mem\":1},"
	       "\"metrics\":{\"loadAvg1M\":1,\"loadAvg5M\":1,\"memoryUsageBytes\":1}}",
	       200,
	       "{\"permit\":{\"vCPUs\":1,\"mem\":1},\"resourceUnit\":{\"vCPUs\":1,\"mem\":4}}");
}

/* Each era's agent body (tests/conformance/agent-eras.json, read from the
 * source tree's top as the peers are) gets the answer the file gives:
 * a permit, never "migrate", or the refusal's words. */
static void test_agent_eras(void **state)
{
	static const char *const args[] = { "--listen",    "127.0.0.1:0", "--cpu",       "64",
					    "--memory",    "256Gi",       "--slot-size", "1Gi",
					    "--watermark", "1",           NULL };
	struct proc p, keep = server;
	json_error_t jerr;
	json_t *doc = json_load_file("tests/conformance/agent-eras.json", 0, &jerr), *c;
	size_t i, n = 0;
	char out[4096];

	if (!doc)
		fail_msg("tests/conformance/agent-eras.json: %s (run from the source tree top)",
			 jerr.text);
	assert_int_equal(spawn(&p, args, true), 0);
	server = p;
	json_array_foreach(json_object_get(doc, "cases"), i, c) {
		const json_t *answer = json_object_get(c, "answer");
		const char *note = json_string_value(json_object_get(c, "note"));
		char *body;
		struct answer a;
		json_t *got;

		if (!answer)
			continue;
		body = json_dumps(json_object_get(json_object_get(c, "in"), "json"), JSON_COMPACT);
		assert_non_null(body);
		a = curl_do("POST", body, strlen(body));
		if (a.status != json_integer_value(json_object_get(answer, "status")))
			fail_msg("%s: %s\n  got %ld %s", note, body, a.status, a.body);
		if (a.status != 200) {
			assert_string_equal(a.body,
					    json_string_value(json_object_get(answer, "body")));
		} else {
			got = json_loads(a.body, 0, NULL);
			if (!got ||
			    !json_equal(json_object_get(got, "permit"),
					json_object_get(answer, "permit")) ||
			    json_object_get(got, "migrate"))
				fail_msg("%s: %s\n  got %s", note, body, a.body);
			json_decref(got);
		}
		free(body);
		n++;
	}
	json_decref(doc);
	server = keep;
	kill(p.proc.pid, SIGTERM);
	assert_int_equal(finish(&p, out, sizeof(out)), 0);
	/* One per version and metrics shape at least. */
	assert_true(n >= 14);
}

static void assert_still_serving(void)
{
	expect("POST",
	       "{\"protoVersion\":7,\"pod\":{\"namespace\":\"d\",\"name\":\"alive\"},"
	       "\"computeUnit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
	       "\"lastPermit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},\"metrics\":null}",
	       200, "{\"permit\":{\"vCPUs\":1,\"mem\":\"1Gi\"}}");
}

/* Reads fd until the peer closes; true when it did. Blocking reads with
 * a receive timeout (the server is another process). */
static bool closed_by_peer(int fd, char *buf, size_t cap)
{
	struct timeval tv = { .tv_sec = 1 };
	size_t len = 0;
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	buf[0] = '\0';
	while (vmact_now_usec() < end) {
		ssize_t n = read(fd, buf + len, cap - len - 1);

		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n > 0) {
			len += (size_t)n;
			buf[len] = '\0';
			if (len + 1 >= cap)
				len = 0;
		}
	}
	return false;
}

static void test_slowloris_is_cut(void **state)
{
	int fd = th_connect(server.port);
	const char *head =
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"protoVersion\":7";
	char buf[1024];
	bool cut = false;
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, head, strlen(head)), (ssize_t)strlen(head));
	/* Trickle the body, one byte every 200 ms, never idle long enough
	 * for an idle timeout; the whole-request deadline (1 s) cuts it. */
	while (!cut && vmact_now_usec() < end) {
		char c;

		if (write(fd, " ", 1) < 0) {
			cut = true;
			break;
		}
		usleep(200000);
		if (read(fd, &c, 1) == 0)
			cut = true;
	}
	assert_true(cut || closed_by_peer(fd, buf, sizeof(buf)));
	close(fd);
	assert_still_serving();
}

static void test_malformed_http(void **state)
{
	static const char *junk[] = {
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 tls hello\r\n\r\n",
		"GARBAGE\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	};
	char buf[2048];

	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		int fd = th_connect(server.port);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, junk[i], strlen(junk[i])), (ssize_t)strlen(junk[i]));
		assert_true(closed_by_peer(fd, buf, sizeof(buf)));
		/* Either an HTTP error status or a plain close, never a 200. */
		assert_null(strstr(buf, " 200 "));
		close(fd);
		assert_still_serving();
	}
}

static void test_connection_flood(void **state)
{
	int fds[40];

	for (size_t i = 0; i < 40; i++) {
		fds[i] = th_connect(server.port);
		assert_true(fds[i] >= 0);
	}
	assert_still_serving();
	for (size_t i = 0; i < 40; i++)
		close(fds[i]);
	assert_still_serving();
}

static void test_cli(void **state)
{
	static const struct {
		const char *args[8];
		int rc;
		const char *needle;
	} t[] = {
		{ { "--watermark", "2", NULL },
		  2,
		  "--watermark 2: not a number in the allowed range" },
		{ { "--cpu", "lots", NULL }, 2, "--cpu lots" },
		{ { "--memory", "-1Gi", NULL }, 2, "--memory -1Gi" },
		{ { "--min-version", "6.0", NULL }, 2, "--min-version 6.0" },
		{ { "--compute-unit", "250m", NULL }, 2, "expected CPU,MEM" },
		{ { "--listen", "nowhere", "--cpu", "1", "--memory", "1Gi" },
		  1,
		  "listen address: 'nowhere' is not ADDR:PORT" },
		{ { "--cpu", "1", "--reserve-cpu", "2", NULL }, 2, "no CPU left" },
		{ { "--max-version", "3.0", NULL }, 2, "slot size" },
		{ { "extra", NULL }, 2, "unexpected argument extra" },
		{ { "--help", NULL }, 0, "" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct proc p;
		char out[4096];
		int rc;

		assert_int_equal(spawn(&p, t[i].args, false), 0);
		rc = finish(&p, out, sizeof(out));
		if (rc != t[i].rc || !strstr(out, t[i].needle))
			fail_msg("%s: exit %d, stderr \"%s\"", t[i].args[0], rc, out);
	}
}

static void test_sigterm_clean_exit(void **state)
{
	static const char *const args[] = { "--listen", "127.0.0.1:0", "--cpu", "2",
					    "--memory", "4Gi",         NULL };
	struct proc p;
	char out[4096];

	assert_int_equal(spawn(&p, args, true), 0);
	assert_true(p.port > 0);
	kill(p.proc.pid, SIGTERM);
	assert_int_equal(finish(&p, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "vmact-arbiter: stopped"));
}

/* The arbiter against a Node.js agent peer (tests/peers/plugin-agent.js)
 * whose HTTP client and JSON encoding vmact did not write. */
static void test_node_agent_peer(void **state)
{
	static const char *const args[] = { "--listen",    "127.0.0.1:0", "--cpu",       "64",
					    "--memory",    "256Gi",       "--slot-size", "1Gi",
					    "--watermark", "1",           NULL };
	static const struct th_spawn_opts to_pipe = { .out = TH_OUT_PIPE, .err = TH_OUT_PIPE };
	struct proc p;
	char port[16], out[4096], log[8192];
	const char *peer_args[] = { port, NULL };
	struct th_proc agent;
	int status;

	assert_int_equal(spawn(&p, args, true), 0);
	snprintf(port, sizeof(port), "%u", p.port);
	if (th_peer_spawn(&agent, "plugin-agent.js", peer_args, &to_pipe) < 0)
		fail_msg("tests/peers/plugin-agent.js not found (run from the source tree top)");
	th_read_fd_all(agent.out_fd, log, sizeof(log));
	status = th_proc_wait(&agent);
	kill(p.proc.pid, SIGTERM);
	assert_int_equal(finish(&p, out, sizeof(out)), 0);
	if (status != 0 || !strstr(log, "ok "))
		fail_msg("node agent peer failed (is nodejs installed?):\n%s", log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_400_texts),
		cmocka_unit_test(test_status_200_every_version),
		cmocka_unit_test(test_agent_eras),
		cmocka_unit_test(test_slowloris_is_cut),
		cmocka_unit_test(test_malformed_http),
		cmocka_unit_test(test_connection_flood),
		cmocka_unit_test(test_node_agent_peer),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_sigterm_clean_exit),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("test_arbiter_http", tests, group_setup, group_teardown);
}
