/* SPDX-License-Identifier: Apache-2.0 */
/* base/endpoint: the one parser of endpoints (ws://, http://, unix:) and
 * listen addresses (ADDR:PORT, [V6]:PORT, unix:PATH). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/endpoint.h"
#include "base/macro.h"

#define MON     (VMACT_EP_WS | VMACT_EP_HTTP | VMACT_EP_UNIX)
#define INF     (VMACT_EP_HTTP | VMACT_EP_NEED_PORT | VMACT_EP_NO_PATH)
#define INF_URL (VMACT_EP_HTTP | VMACT_EP_NEED_PORT)

static const struct {
	const char *spec;
	unsigned flags;
	enum vmact_ep_kind kind;
	const char *host;
	bool v6;
	uint16_t port;
	const char *path;
} good[] = {
	{ "ws://127.0.0.1:10301/monitor", MON, VMACT_EP_WS, "127.0.0.1", false, 10301, "/monitor" },
	{ "ws://vm-1.example", MON, VMACT_EP_WS, "vm-1.example", false, 0, "" },
	{ "ws://[::1]:10301/m?x=1", MON, VMACT_EP_WS, "::1", true, 10301, "/m?x=1" },
	{ "http://h/", MON, VMACT_EP_HTTP, "h", false, 0, "/" },
	{ "unix:/run/m.sock", MON, VMACT_EP_UNIX, "", false, 0, "/run/m.sock" },
	{ "http://127.0.0.1:10301", INF, VMACT_EP_HTTP, "127.0.0.1", false, 10301, "" },
	{ "http://[::1]:65535", INF, VMACT_EP_HTTP, "::1", true, 65535, "" },
	{ "http://127.0.0.1:1/", INF_URL, VMACT_EP_HTTP, "127.0.0.1", false, 1, "/" },
};

static const struct {
	const char *spec;
	unsigned flags;
	int code;
	const char *msg; /* the whole message */
} bad[] = {
	{ "wss://10.0.0.1/monitor", MON, -EINVAL,
	  "'wss://10.0.0.1/monitor': TLS (wss://) is not supported; use ws://, http:// or unix:" },
	{ "https://h:1", MON, -EINVAL, "'https://h:1' is not a ws://, http:// or unix: address" },
	{ "10.0.0.1:80", MON, -EINVAL, "'10.0.0.1:80' is not a ws://, http:// or unix: address" },
	{ "", MON, -EINVAL, "'' is not a ws://, http:// or unix: address" },
	{ "unix:", MON, -EINVAL, "'unix:': expected unix:PATH" },
	{ "ws://:80/", MON, -EINVAL, "'ws://:80/': expected ws://HOST[:PORT][/PATH]" },
	{ "ws://h:0/", MON, -EINVAL, "'ws://h:0/': the port must be 1-65535" },
	{ "ws://h:/", MON, -EINVAL, "'ws://h:/': the port must be 1-65535" },
	{ "ws://[::1/", MON, -EINVAL, "'ws://[::1/': expected ws://HOST[:PORT][/PATH]" },
	{ "ws://h x/", MON, -EINVAL, "'ws://h x/': expected ws://HOST[:PORT][/PATH]" },
	{ "ws://127.0.0.1:10301", INF, -EINVAL,
	  "'ws://127.0.0.1:10301' is not an http://HOST:PORT address" },
	{ "wss://h:1", INF, -EINVAL, "'wss://h:1' is not an http://HOST:PORT address" },
	{ "ftp://x", INF_URL, -EINVAL, "'ftp://x' is not an http://HOST:PORT[/PATH] address" },
	{ "http://127.0.0.1", INF, -EINVAL, "'http://127.0.0.1': expected http://HOST:PORT" },
	{ "http://:10301", INF, -EINVAL, "'http://:10301': expected http://HOST:PORT" },
	{ "http://::1:10301", INF, -EINVAL, "'http://::1:10301': expected http://HOST:PORT" },
	{ "http://user@h:10301", INF, -EINVAL, "'http://user@h:10301': expected http://HOST:PORT" },
	{ "http://h/x:10301", INF, -EINVAL, "'http://h/x:10301': expected http://HOST:PORT" },
	{ "http://[]:80", INF, -EINVAL, "'http://[]:80': expected http://HOST:PORT" },
	{ "http://h:10301/", INF, -EINVAL,
	  "'http://h:10301/': the port must be 1-65535 with nothing after it" },
	{ "http://h:65536", INF, -EINVAL,
	  "'http://h:65536': the port must be 1-65535 with nothing after it" },
	{ "http://h:99999999999999999999", INF, -EINVAL,
	  "'http://h:99999999999999999999': the port must be 1-65535 with nothing after it" },
	{ "http://h:-1", INF, -EINVAL,
	  "'http://h:-1': the port must be 1-65535 with nothing after it" },
	{ "unix:/run/m.sock", INF, -EINVAL,
	  "'unix:/run/m.sock' is not an http://HOST:PORT address" },
};

static void test_endpoints(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		struct vmact_endpoint ep;
		struct vmact_err err = { 0 };

		if (vmact_endpoint_parse(good[i].spec, good[i].flags, &ep, &err) < 0)
			fail_msg("%s: %s", good[i].spec, err.msg);
		assert_int_equal(ep.kind, good[i].kind);
		assert_string_equal(ep.host, good[i].host);
		assert_int_equal(ep.host_v6, good[i].v6);
		assert_int_equal(ep.port, good[i].port);
		assert_string_equal(ep.path, good[i].path);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct vmact_endpoint ep;
		struct vmact_err err = { 0 };
		int r = vmact_endpoint_parse(bad[i].spec, bad[i].flags, &ep, &err);

		if (r != bad[i].code)
			fail_msg("%s: %d, expected %d (%s)", bad[i].spec, r, bad[i].code, err.msg);
		assert_string_equal(err.msg, bad[i].msg);
	}
}

static const struct {
	const char *spec;
	bool allow_unix;
	int family;
	const char *host;
	uint16_t port;
	bool wildcard;
} listen_good[] = {
	{ "127.0.0.1:10299", false, AF_INET, "127.0.0.1", 10299, false },
	{ "0.0.0.0:0", false, AF_INET, "0.0.0.0", 0, true },
	{ "[::1]:0", false, AF_INET6, "::1", 0, false },
	{ "[::]:10302", false, AF_INET6, "::", 10302, true },
	{ "unix:/run/a.sock", true, AF_UNIX, "", 0, false },
};

static const struct {
	const char *spec;
	bool allow_unix;
	const char *msg;
} listen_bad[] = {
	{ "localhost:80", false, "'localhost:80': localhost is not a numeric IPv4 address" },
	{ "[localhost]:80", false, "'[localhost]:80': localhost is not a numeric IPv6 address" },
	{ "127.0.0.1:70000", false, "'127.0.0.1:70000': bad port" },
	{ "127.0.0.1:http", false, "'127.0.0.1:http': bad port" },
	{ "127.0.0.1:", false, "'127.0.0.1:': bad port" },
	{ "127.0.0.1:+1", false, "'127.0.0.1:+1': bad port" },
	{ "127.0.0.1", false, "'127.0.0.1' is not ADDR:PORT" },
	{ ":0", false, "':0' is not ADDR:PORT" },
	{ "", false, "'' is not ADDR:PORT" },
	{ "[]:0", false, "'[]:0': bad [IPv6] address" },
	{ "unix:/run/a.sock", false, "'unix:/run/a.sock': bad port" },
	{ "unix:", true, "'unix:': bad socket path" },
};

static void test_listen(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(listen_good); i++) {
		struct vmact_listen l;
		struct vmact_err err = { 0 };

		if (vmact_listen_parse(listen_good[i].spec, listen_good[i].allow_unix, &l, &err) <
		    0)
			fail_msg("%s: %s", listen_good[i].spec, err.msg);
		assert_int_equal(l.family, listen_good[i].family);
		assert_int_equal(l.addr.ss_family, listen_good[i].family);
		assert_string_equal(l.host, listen_good[i].host);
		assert_int_equal(l.port, listen_good[i].port);
		assert_int_equal(l.wildcard, listen_good[i].wildcard);
		if (l.family == AF_INET)
			assert_int_equal(ntohs(((struct sockaddr_in *)&l.addr)->sin_port), l.port);
		else if (l.family == AF_INET6)
			assert_int_equal(ntohs(((struct sockaddr_in6 *)&l.addr)->sin6_port),
					 l.port);
		else
			assert_string_equal(l.path, "/run/a.sock");
	}
	for (size_t i = 0; i < ARRAY_SIZE(listen_bad); i++) {
		struct vmact_listen l;
		struct vmact_err err = { 0 };

		assert_int_equal(vmact_listen_parse(listen_bad[i].spec, listen_bad[i].allow_unix,
						    &l, &err),
				 -EINVAL);
		assert_string_equal(err.msg, listen_bad[i].msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_listen),
	};

	return cmocka_run_group_tests_name("endpoint", tests, NULL, NULL);
}
