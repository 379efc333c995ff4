/* SPDX-License-Identifier: Apache-2.0 */
/* The websocket client (net/ws-client.h): the upgrade pieces and
 * the checks of its configuration, also as the vm-monitor client reports
 * them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent-glue/client/monitor-client.h"
#include "base/macro.h"
#include "net/ws-client.h"

static void test_accept_rfc6455_example(void **state)
{
	char out[NET_WS_ACCEPT_LEN + 1];

	/* The worked example of RFC 6455 section 1.3. */
	net_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", out);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static int check(const char *head, struct vmact_err *err)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s", head);
	vmact_err_reset(err);
	return net_ws_check_upgrade(buf, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", err);
}

static void test_check_upgrade(void **state)
{
	static const struct {
		const char *head, *err; /* err NULL: accepted */
	} cases[] = {
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		  "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
		  NULL },
		/* Header names and tokens are case-insensitive; lists allowed. */
		{ "HTTP/1.1 101\r\nupgrade: WebSocket\r\nconnection: keep-alive, upgrade\r\n"
		  "sec-websocket-accept:   s3pPLMBiTxaQ9kYGzzhZRbK+xOo=  ",
		  NULL },
		{ "HTTP/1.1 404 Not Found\r\nContent-Length: 0",
		  "refused: HTTP/1.1 404 Not Found" },
		{ "HTTP/1.1 1010 Odd\r\nUpgrade: websocket", "refused" },
		{ "", "refused: (empty response)" },
		{ "HTTP/1.1 101\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
		  "Upgrade header" },
		{ "HTTP/1.1 101\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
		  "Connection header" },
		{ "HTTP/1.1 101\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: xx",
		  "Sec-WebSocket-Accept header" },
		{ "HTTP/1.1 101\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		  "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: permessage-deflate",
		  "Sec-WebSocket-Extensions" },
	};
	struct vmact_err err = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r = check(cases[i].head, &err);

		if (!cases[i].err) {
			if (r != 0)
				fail_msg("case %zu rejected: %s", i, err.msg);
			continue;
		}
		assert_int_equal(r, -EPROTO);
		if (!strstr(err.msg, cases[i].err))
			fail_msg("case %zu: \"%s\" does not mention %s", i, err.msg, cases[i].err);
	}
}

static void test_ws_config_errors(void **state)
{
	static const struct {
		struct net_ws_client_config cfg;
		const char *err; /* NULL: accepted */
	} cases[] = {
		{ { .path = "/" }, "exactly one of host and unix_path" },
		{ { .host = "h", .unix_path = "/x", .path = "/" },
		  "exactly one of host and unix_path" },
		{ { .host = "", .path = "/" }, "empty host or unix_path" },
		{ { .unix_path = "", .path = "/" }, "empty host or unix_path" },
		{ { .host = "h" }, "path must start with '/'" },
		{ { .host = "h", .path = "monitor" }, "path must start with '/'" },
		{ { .host = "h", .path = "/monitor" }, NULL },
		{ { .unix_path = "/run/x.sock", .path = "/monitor", .peer = "p" }, NULL },
	};
	struct vmact_err err = { 0 };
	sd_event *e = NULL;

	assert_int_equal(sd_event_new(&e), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct net_ws_client *ws = NULL;
		int r;

		vmact_err_reset(&err);
		r = net_ws_client_new(e, &cases[i].cfg, NULL, NULL, &ws, &err);
		if (!cases[i].err) {
			if (r != 0)
				fail_msg("case %zu rejected: %s", i, err.msg);
			assert_int_equal(net_ws_client_state(ws), NET_WS_CLOSED);
			/* Sending needs an open connection; closing a closed one
			 * does nothing. */
			assert_int_equal(net_ws_client_send_text(ws, "x", 1), -ENOTCONN);
			net_ws_client_close(ws, 1000, "bye");
			net_ws_client_drop(ws, 1000, "bye", "bye");
			assert_int_equal(net_ws_client_state(ws), NET_WS_CLOSED);
			net_ws_client_free(ws);
			continue;
		}
		assert_int_equal(r, -EINVAL);
		assert_null(ws);
		if (strcmp(err.msg, cases[i].err) != 0)
			fail_msg("case %zu: \"%s\" is not \"%s\"", i, err.msg, cases[i].err);
	}
	sd_event_unref(e);
}

static void test_config_errors(void **state)
{
	struct ag_mon_client_config none = { 0 }, both = { .host = "h", .unix_path = "/x" },
				    path = { .host = "h", .path = "monitor" };
	struct ag_mon_client *c = NULL;
	struct vmact_err err = { 0 };
	sd_event *e = NULL;

	assert_int_equal(sd_event_new(&e), 0);
	assert_int_equal(ag_mon_client_new(e, &none, NULL, NULL, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "monitor client: exactly one of host and unix_path");
	vmact_err_reset(&err);
	assert_int_equal(ag_mon_client_new(e, &both, NULL, NULL, &c, &err), -EINVAL);
	vmact_err_reset(&err);
	assert_int_equal(ag_mon_client_new(e, &path, NULL, NULL, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "monitor client: path must start with '/'");
	assert_null(c);
	sd_event_unref(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accept_rfc6455_example),
		cmocka_unit_test(test_check_upgrade),
		cmocka_unit_test(test_ws_config_errors),
		cmocka_unit_test(test_config_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
