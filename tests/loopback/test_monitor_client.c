/* SPDX-License-Identifier: Apache-2.0 */
/* The vm-monitor client against an independent peer: tests/peers/vm-monitor.js
 * (Node, npm `ws`), over loopback TCP and over a unix socket. The peer
 * prints what it sees as JSON lines and takes commands on stdin. Tests wait
 * for conditions (bounded by a generous deadline), never for durations. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "agent-glue/client/monitor-client.h"
#include "agent-glue/codec/monitor.h"
#include "base/macro.h"
#include "base/time.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define MiB (1024ull * 1024)
#define GiB (1024 * MiB)
#define MS  1000ull

struct result {
	bool done;
	enum ag_mon_outcome outcome;
	char status[512];
	uint64_t generation, id;
};

struct tctx {
	sd_event *e;
	struct th_peer peer;
	sd_event_source *out_src;
	char buf[1 << 16];
	size_t len;
	json_t *events;
	int port;
	char unix_path[108];
	bool use_unix;

	struct ag_mon_client *c;
	unsigned connected, disconnected, upscale_requested;
	uint64_t last_gen;
	char last_reason[256];
	char reasons[4096]; /* every disconnect's, one a line */
};

static bool verbose(void)
{
	return getenv("VMACT_TEST_VERBOSE") != NULL;
}

static int on_peer_out(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct tctx *t = userdata;
	ssize_t n = read(fd, t->buf + t->len, sizeof(t->buf) - 1 - t->len);
	char *nl;

	if (n <= 0) {
		sd_event_source_set_enabled(s, SD_EVENT_OFF);
		return 0;
	}
	t->len += (size_t)n;
	t->buf[t->len] = '\0';
	while ((nl = memchr(t->buf, '\n', t->len))) {
		json_t *ev;

		*nl = '\0';
		if (verbose())
			fprintf(stderr, "peer: %s\n", t->buf);
		ev = json_loads(t->buf, 0, NULL);
		json_array_append_new(t->events, ev ? ev : json_string(t->buf));
		t->len -= (size_t)(nl + 1 - t->buf);
		memmove(t->buf, nl + 1, t->len);
	}
	if (t->len == sizeof(t->buf) - 1)
		t->len = 0; /* a runaway line: drop it rather than stall */
	return 0;
}

#define WAIT_FOR(t, cond, what) TH_WAIT_OR_FAIL((t)->e, cond, what)

static const char *ev_str(const json_t *ev, const char *key)
{
	return json_string_value(json_object_get(ev, key));
}

/* First event at index >= *from named `event` whose msg.type is `type`
 * (any if NULL); *from is moved past it. */
static json_t *peer_find(struct tctx *t, size_t *from, const char *event, const char *type)
{
	for (size_t i = from ? *from : 0; i < json_array_size(t->events); i++) {
		json_t *ev = json_array_get(t->events, i);
		const char *name = ev_str(ev, "event");

		if (!name || strcmp(name, event) != 0)
			continue;
		if (type) {
			const char *mt = ev_str(json_object_get(ev, "msg"), "type");

			if (!mt || strcmp(mt, type) != 0)
				continue;
		}
		if (from)
			*from = i + 1;
		return ev;
	}
	return NULL;
}

static size_t peer_count(struct tctx *t, const char *event, const char *type)
{
	size_t from = 0, n = 0;

	while (peer_find(t, &from, event, type))
		n++;
	return n;
}

static void peer_cmd(struct tctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void peer_cmd(struct tctx *t, const char *fmt, ...)
{
	char line[512];
	size_t acks = peer_count(t, "ack", NULL);
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n] = '\n';
	assert_int_equal(write(t->peer.proc.in_fd, line, (size_t)n + 1), n + 1);
	WAIT_FOR(t, peer_count(t, "ack", NULL) > acks, "the peer's ack");
}

static void peer_start_script(struct tctx *t, const char *script, const char *const *args)
{
	const char *argv[32];
	size_t argc = 0;
	char msg[512];

	if (t->use_unix) {
		snprintf(t->unix_path, sizeof(t->unix_path), "/tmp/vmact-montest-%d.sock",
			 (int)getpid());
		argv[argc++] = "--unix";
		argv[argc++] = t->unix_path;
	}
	for (; args && *args && argc < ARRAY_SIZE(argv) - 1; args++)
		argv[argc++] = *args;
	argv[argc] = NULL;
	if (th_peer_start(&t->peer, script, argv, NULL, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	assert_int_equal(sd_event_add_io(t->e, &t->out_src, t->peer.proc.out_fd, EPOLLIN,
					 on_peer_out, t),
			 0);
	t->port = (int)t->peer.port;
}

static void peer_start(struct tctx *t, const char *const *args)
{
	peer_start_script(t, "vm-monitor.js", args);
}

static void on_connected(struct ag_mon_client *c, uint64_t gen, void *ud)
{
	struct tctx *t = ud;

	t->connected++;
	t->last_gen = gen;
}

static void on_disconnected(struct ag_mon_client *c, uint64_t gen, const char *reason, void *ud)
{
	struct tctx *t = ud;

	t->disconnected++;
	snprintf(t->last_reason, sizeof(t->last_reason), "%s", reason);
	if (strlen(t->reasons) + strlen(reason) + 2 < sizeof(t->reasons)) {
		strcat(t->reasons, reason);
		strcat(t->reasons, "\n");
	}
}

static void on_upscale_requested(struct ag_mon_client *c, uint64_t at, void *ud)
{
	struct tctx *t = ud;

	assert_true(at > 0);
	t->upscale_requested++;
}

static void on_log(struct ag_mon_client *c, int prio, const char *msg, void *ud)
{
	if (verbose())
		fprintf(stderr, "client: %s\n", msg);
}

static const struct ag_mon_client_callbacks callbacks = {
	.connected = on_connected,
	.disconnected = on_disconnected,
	.upscale_requested = on_upscale_requested,
	.log = on_log,
};

static struct ag_mon_client_config base_config(struct tctx *t)
{
	struct ag_mon_client_config cfg = {
		.connect_timeout_usec = 3000 * MS,
		.response_timeout_usec = 3000 * MS,
		.health_interval_usec = 200 * MS,
		.health_max_failing_usec = 30000 * MS,
		.retry_min_wait_usec = 200 * MS,
		.close_timeout_usec = 1000 * MS,
	};

	return cfg;
}

/* The peer's address is known once it listens: filled in here unless the
 * test chose one. */
static void client_start(struct tctx *t, const struct ag_mon_client_config *cfg_in)
{
	struct ag_mon_client_config cfg = *cfg_in;
	struct vmact_err err = { 0 };

	if (!cfg.host && !cfg.unix_path) {
		if (t->use_unix) {
			cfg.unix_path = t->unix_path;
		} else {
			cfg.host = "127.0.0.1";
			cfg.port = (uint16_t)t->port;
		}
	}
	assert_int_equal(ag_mon_client_new(t->e, &cfg, &callbacks, t, &t->c, &err), 0);
	assert_int_equal(ag_mon_client_start(t->c, &err), 0);
}

static void wait_connected(struct tctx *t, unsigned n)
{
	WAIT_FOR(t, t->connected >= n && ag_mon_client_state(t->c) == AG_MON_CLIENT_CONNECTED,
		 "the client to connect");
}

static void on_done(struct ag_mon_client *c, const struct ag_mon_result *res, void *ud)
{
	struct result *r = ud;

	assert_false(r->done);
	r->done = true;
	r->outcome = res->outcome;
	r->generation = res->generation;
	r->id = res->id;
	snprintf(r->status, sizeof(r->status), "%s", res->status);
}

static void do_request(struct tctx *t, bool up, uint32_t milli, uint64_t mem, struct result *r)
{
	struct vmact_resources a = { .milli_cpu = milli, .mem_bytes = mem };
	struct vmact_err err = { 0 };
	uint64_t id = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	if (up)
		ret = ag_mon_client_upscale(t->c, &a, on_done, r, &id, &err);
	else
		ret = ag_mon_client_downscale(t->c, &a, on_done, r, &id, &err);
	if (ret < 0)
		fail_msg("request: %s", err.msg);
	assert_false(r->done); /* never completes inside the call */
	assert_true(id >= 2 && ag_mon_id_is_agent(id));
	WAIT_FOR(t, r->done, "the request to complete");
	assert_int_equal(r->id, id);
}

static int setup(void **state)
{
	struct tctx *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	assert_int_equal(sd_event_new(&t->e), 0);
	t->events = json_array();
	*state = t;
	return 0;
}

static int setup_unix(void **state)
{
	setup(state);
	((struct tctx *)*state)->use_unix = true;
	return 0;
}

static int teardown(void **state)
{
	struct tctx *t = *state;

	ag_mon_client_free(t->c);
	sd_event_source_disable_unref(t->out_src);
	th_peer_stop(&t->peer);
	if (t->unix_path[0])
		unlink(t->unix_path);
	json_decref(t->events);
	sd_event_unref(t->e);
	free(t);
	return 0;
}

/* ---- tests ------------------------------------------------------------- */

/* Handshake, health checks with even ids from 2, and a clean stop (1000). */
static void test_handshake_and_health(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	json_t *ev, *range;
	size_t from = 0;

	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);
	assert_int_equal(ag_mon_client_generation(t->c), 1);
	assert_int_equal(t->last_gen, 1);
	ev = peer_find(t, NULL, "version", NULL);
	assert_non_null(ev);
	range = json_object_get(ev, "range");
	assert_int_equal(json_integer_value(json_object_get(range, "min")), 1);
	assert_int_equal(json_integer_value(json_object_get(range, "max")), 1);
	assert_int_equal(json_object_size(range), 2);

	WAIT_FOR(t, ag_mon_client_stats(t->c)->health_ok >= 3, "three answered health checks");
	for (uint64_t want = 2; want <= 6; want += 2) {
		ev = peer_find(t, &from, "recv", "HealthCheck");
		assert_non_null(ev);
		assert_int_equal(json_integer_value(
					 json_object_get(json_object_get(ev, "msg"), "id")),
				 want);
	}
	assert_true(ag_mon_client_last_success(t->c) > 0);
	assert_int_equal(peer_count(t, "dropped", NULL), 0);

	ag_mon_client_stop(t->c);
	assert_int_equal(ag_mon_client_state(t->c), AG_MON_CLIENT_STOPPED);
	assert_int_equal(t->disconnected, 1);
	WAIT_FOR(t, peer_find(t, NULL, "closed", NULL), "the peer to see the close");
	ev = peer_find(t, NULL, "closed", NULL);
	assert_int_equal(json_integer_value(json_object_get(ev, "code")), 1000);
}

/* A frame right behind the 101 response (read together with the headers)
 * is not lost: the peer's ping gets its pong and the handshake completes. */
static void test_eager_frame(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	const char *args[] = { "--eager-ping", NULL };

	peer_start(t, args);
	client_start(t, &cfg);
	wait_connected(t, 1);
	WAIT_FOR(t, peer_find(t, NULL, "pong", NULL), "the pong");
	WAIT_FOR(t, ag_mon_client_stats(t->c)->health_ok >= 1, "a health check");
}

static void stop_on_upscale_request(struct ag_mon_client *c, uint64_t at, void *ud)
{
	(*(unsigned *)ud)++;
	/* From inside the client's frame processing. */
	ag_mon_client_stop(c);
}

/* Stopping from a callback fails what is pending, closes with 1000 and
 * does not reconnect. */
static void test_stop_from_callback(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	struct ag_mon_client_callbacks cb = { .upscale_requested = stop_on_upscale_request };
	struct vmact_resources a = { 1000, GiB };
	struct vmact_err err = { 0 };
	struct result r = { 0 };
	unsigned calls = 0;

	peer_start(t, NULL);
	cfg.host = "127.0.0.1";
	cfg.port = (uint16_t)t->port;
	assert_int_equal(ag_mon_client_new(t->e, &cfg, &cb, &calls, &t->c, &err), 0);
	assert_int_equal(ag_mon_client_start(t->c, &err), 0);
	WAIT_FOR(t, ag_mon_client_state(t->c) == AG_MON_CLIENT_CONNECTED, "the connection");
	peer_cmd(t, "silent on");
	assert_int_equal(ag_mon_client_downscale(t->c, &a, on_done, &r, NULL, &err), 0);
	WAIT_FOR(t, peer_find(t, NULL, "recv", "DownscaleRequest"), "the downscale to arrive");
	peer_cmd(t, "pressure");
	WAIT_FOR(t, ag_mon_client_state(t->c) == AG_MON_CLIENT_STOPPED, "the stop");
	assert_int_equal(calls, 1);
	assert_true(r.done);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_FAILED);
	assert_non_null(strstr(r.status, "client stopped"));
	WAIT_FOR(t, peer_find(t, NULL, "closed", NULL), "the peer to see the end");
	assert_int_equal(json_integer_value(
				 json_object_get(peer_find(t, NULL, "closed", NULL), "code")),
			 1000);
	assert_int_equal(ag_mon_client_stats(t->c)->attempts, 1);
}

/* The peer is as strict as the monitor: frames serde cannot read (no
 * content, mem as a float, unknown type) drop the connection without an
 * InvalidMessage; the client then reconnects. */
static void test_peer_drops_bad_frames(void **state)
{
	static const char *const bad[] = {
		"{\"type\":\"HealthCheck\",\"id\":10}",
		"{\"content\":{\"target\":{\"cpu\":1,\"mem\":1073741824.0}},\"type\":\"DownscaleRequest\",\"id\":10}",
		"{\"content\":{},\"type\":\"UpscaleRequest\",\"id\":10}",
		"not json",
	};
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	struct vmact_err err = { 0 };

	cfg.health_interval_usec = 60000 * MS;
	peer_start(t, NULL);
	client_start(t, &cfg);
	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
		wait_connected(t, i + 1);
		assert_int_equal(ag_mon_client_send_raw(t->c, bad[i], &err), 0);
		WAIT_FOR(t, t->disconnected == i + 1, "the peer to drop the connection");
		assert_int_equal(peer_count(t, "dropped", NULL), i + 1);
		assert_non_null(strstr(t->last_reason, "closed without a close frame"));
	}
	assert_int_equal(peer_count(t, "sent", "InvalidMessage"), 0);
	wait_connected(t, ARRAY_SIZE(bad) + 1);
}

/* Upscale notification, downscale approved and denied by the memory
 * threshold, InternalError: the same over TCP and over a unix socket. */
static void test_requests(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	const char *args[] = { "--usage-mib", "256", NULL };
	struct result r;
	json_t *ev, *granted;
	size_t from = 0;

	cfg.health_interval_usec = 60000 * MS; /* keep ids predictable */
	peer_start(t, args);
	client_start(t, &cfg);
	wait_connected(t, 1);

	do_request(t, true, 500, 2 * GiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_OK);
	assert_int_equal(r.generation, 1);
	assert_int_equal(r.id, 2);
	ev = peer_find(t, &from, "recv", "UpscaleNotification");
	assert_non_null(ev);
	granted = json_object_get(json_object_get(ev, "msg"), "granted");
	assert_true(json_number_value(json_object_get(granted, "cpu")) == 0.5);
	assert_int_equal(json_integer_value(json_object_get(granted, "mem")), 2 * GiB);

	/* (2048 - 100) * 0.85 = 1655.8 MiB >= 256 + 100: approved. */
	do_request(t, false, 1000, 2 * GiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_OK);
	assert_int_equal(r.id, 4);
	assert_non_null(strstr(r.status, "threshold"));

	/* (512 - 100) * 0.85 = 350.2 MiB < 256 + 100: denied with the text. */
	do_request(t, false, 250, 512 * MiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_DENIED);
	assert_string_equal(r.status,
			    "calculated memory threshold too low: 350.2 MiB (new threshold) "
			    "< 256 (current usage) + 100 (downscale buffer)");
	ev = peer_find(t, &from, "recv", "DownscaleRequest");
	ev = peer_find(t, &from, "recv", "DownscaleRequest");
	assert_non_null(ev);
	assert_true(json_number_value(
			    json_object_get(json_object_get(json_object_get(ev, "msg"), "target"),
					    "cpu")) == 0.25);

	/* Lower usage: the same target is now fine. */
	peer_cmd(t, "usage 200");
	do_request(t, false, 250, 512 * MiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_OK);

	/* Refused before anything is sent, with the field named. */
	{
		struct vmact_resources huge = { 1000, UINT64_MAX };
		struct vmact_err err = { 0 };
		uint64_t pending = ag_mon_client_pending(t->c);

		assert_int_equal(ag_mon_client_downscale(t->c, &huge, on_done, &r, NULL, &err),
				 -ERANGE);
		assert_non_null(strstr(err.msg, "mem"));
		assert_int_equal(ag_mon_client_upscale(t->c, NULL, on_done, &r, NULL, NULL),
				 -EINVAL);
		assert_int_equal(ag_mon_client_pending(t->c), pending);
	}

	peer_cmd(t, "internal-error on");
	do_request(t, false, 250, 512 * MiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_FAILED);
	assert_string_equal(r.status, "vm-monitor internal error: failed to downscale");
	do_request(t, true, 250, 512 * MiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_FAILED);

	/* Nothing the client sent was refused, nothing answered as invalid. */
	assert_int_equal(peer_count(t, "dropped", NULL), 0);
	assert_int_equal(peer_count(t, "recv", "InvalidMessage"), 0);
	assert_int_equal(ag_mon_client_stats(t->c)->connections, 1);
	assert_int_equal(ag_mon_client_pending(t->c), 0);
}

static void test_not_connected(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	struct vmact_resources a = { 1000, GiB };
	struct vmact_err err = { 0 };

	/* Nothing listens there: requests fail at once, attempts repeat. */
	cfg.host = "127.0.0.1";
	cfg.port = 1;
	client_start(t, &cfg);
	assert_int_equal(ag_mon_client_downscale(t->c, &a, on_done, NULL, NULL, &err), -ENOTCONN);
	assert_non_null(strstr(err.msg, "not connected"));
	WAIT_FOR(t, ag_mon_client_stats(t->c)->attempts >= 3, "three connection attempts");
	assert_non_null(strstr(ag_mon_client_stats(t->c)->last_disconnect, "refused"));
	assert_int_equal(t->connected, 0);
	assert_int_equal(t->disconnected, 0);
}

/* Attempts are spaced by retry_min_wait from the start of the previous
 * one; a connection that lived longer is retried at once. Checked on the
 * schedule the client computed, not on a stopwatch. */
static void test_reconnect_spacing(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t), refused;
	uint64_t started, now;

	/* A refused attempt: the next one waits for the full minimum. */
	refused = cfg;
	refused.host = "127.0.0.1";
	refused.port = 1;
	refused.retry_min_wait_usec = 3600000 * MS;
	client_start(t, &refused);
	WAIT_FOR(t, ag_mon_client_state(t->c) == AG_MON_CLIENT_WAITING, "the refused attempt");
	started = ag_mon_client_attempt_started(t->c);
	assert_int_equal(ag_mon_client_next_attempt(t->c), started + refused.retry_min_wait_usec);
	assert_int_equal(ag_mon_client_stats(t->c)->attempts, 1);
	ag_mon_client_free(t->c);
	t->c = NULL;

	/* A connection that outlived a short minimum is retried at once. */
	peer_start(t, NULL);
	cfg.retry_min_wait_usec = 1 * MS;
	client_start(t, &cfg);
	wait_connected(t, 1);
	WAIT_FOR(t, ag_mon_client_stats(t->c)->health_ok >= 1, "a health check");
	peer_cmd(t, "drop");
	WAIT_FOR(t, t->disconnected == 1, "the drop");
	now = vmact_loop_now_usec(t->e);
	if (ag_mon_client_state(t->c) == AG_MON_CLIENT_WAITING)
		assert_true(ag_mon_client_next_attempt(t->c) <= now);
	wait_connected(t, 2);
}

static void test_version_error(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	const char *args[] = { "--min-version", "2", "--max-version", "3", NULL };
	const struct ag_mon_client_stats *st;

	peer_start(t, args);
	client_start(t, &cfg);
	st = ag_mon_client_stats(t->c);
	WAIT_FOR(t,
		 st->attempts >= 2 && ag_mon_client_state(t->c) != AG_MON_CLIENT_CONNECTING &&
			 ag_mon_client_state(t->c) != AG_MON_CLIENT_NEGOTIATING &&
			 ag_mon_client_state(t->c) != AG_MON_CLIENT_CLOSING,
		 "two refused attempts");
	assert_int_equal(t->connected, 0);
	assert_int_equal(st->connections, 0);
	assert_int_equal(st->last_close_sent, 1002);
	if (!strstr(st->last_disconnect, "Received protocol version range v1.0 to v1.0 which does "
					 "not overlap with <unknown: 2> to <unknown: 3>"))
		fail_msg("unexpected reason: %s", st->last_disconnect);
}

static void test_upscale_request(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	struct result r;
	json_t *ev;

	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);
	peer_cmd(t, "pressure");
	WAIT_FOR(t, t->upscale_requested == 1, "the UpscaleRequest callback");
	ev = peer_find(t, NULL, "sent", "UpscaleRequest");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "msg"), "id")), 3);
	assert_true(ag_mon_client_last_upscale_request(t->c) > 0);

	/* Simulated pressure: granted 1 GiB sets the threshold to
	 * (1024 - 100) * 0.85 MiB; usage above it makes the peer ask. */
	do_request(t, true, 1000, GiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_OK);
	peer_cmd(t, "usage 900");
	WAIT_FOR(t, t->upscale_requested >= 2, "a pressure-driven UpscaleRequest");
	assert_int_equal(ag_mon_client_stats(t->c)->upscale_requests, t->upscale_requested);
	/* One more round trip, then check UpscaleRequest was never answered. */
	do_request(t, true, 1000, GiB, &r);
	assert_int_equal(peer_count(t, "recv", "InvalidMessage"), 0);
	assert_int_equal(peer_count(t, "recv", "UpscaleRequest"), 0);
	ev = peer_find(t, NULL, "sent", "UpscaleRequest");
	assert_true(ag_mon_id_is_monitor(
		(uint64_t)json_integer_value(json_object_get(json_object_get(ev, "msg"), "id"))));
}

static void on_b_connected(struct ag_mon_client *c, uint64_t gen, void *ud)
{
	(*(unsigned *)ud)++;
}

/* A second connection kills the first; the first reconnects with a new
 * generation, fresh ids, and its old request failed. */
static void test_second_connection(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t), cfg_b;
	struct ag_mon_client_callbacks cb_b = { .connected = on_b_connected };
	_cleanup_(ag_mon_client_freep) struct ag_mon_client *b = NULL;
	struct vmact_err err = { 0 };
	struct vmact_resources a = { 1000, GiB };
	struct result r = { 0 };
	unsigned b_connected = 0;
	size_t from = 0;
	json_t *ev;

	cfg.health_interval_usec = 60000 * MS;
	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);
	/* Leave a request hanging on the first connection. */
	peer_cmd(t, "silent on");
	assert_int_equal(ag_mon_client_downscale(t->c, &a, on_done, &r, NULL, &err), 0);
	WAIT_FOR(t, peer_find(t, NULL, "recv", "DownscaleRequest"), "the downscale to arrive");
	peer_cmd(t, "silent off");

	cfg_b = cfg;
	if (t->use_unix) {
		cfg_b.unix_path = t->unix_path;
	} else {
		cfg_b.host = "127.0.0.1";
		cfg_b.port = (uint16_t)t->port;
	}
	cfg_b.retry_min_wait_usec = 3600000 * MS; /* never comes back */
	assert_int_equal(ag_mon_client_new(t->e, &cfg_b, &cb_b, &b_connected, &b, &err), 0);
	assert_int_equal(ag_mon_client_start(b, &err), 0);

	WAIT_FOR(t, t->disconnected == 1, "the first connection to be killed");
	assert_true(r.done);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_FAILED);
	assert_int_equal(r.generation, 1);
	assert_non_null(strstr(r.status, "connection to vm-monitor lost"));
	/* It comes back (killing b in turn) with everything reset. */
	wait_connected(t, 2);
	assert_int_equal(ag_mon_client_generation(t->c), 2);
	assert_int_equal(t->last_gen, 2);
	assert_int_equal(ag_mon_client_pending(t->c), 0);
	do_request(t, true, 1000, GiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_OK);
	assert_int_equal(r.generation, 2);
	assert_int_equal(r.id, 2); /* ids restart with the connection */
	ev = peer_find(t, &from, "connection", NULL);
	ev = peer_find(t, &from, "connection", NULL);
	ev = peer_find(t, &from, "connection", NULL);
	assert_non_null(ev);
	assert_true(peer_count(t, "dropped", NULL) >= 2);
}

/* Peer stops answering health checks: the connection is closed with 1011
 * once they failed for longer than the window, then re-established. */
static void test_health_failure(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	json_t *ev;

	cfg.response_timeout_usec = 300 * MS;
	cfg.health_interval_usec = 100 * MS;
	cfg.health_max_failing_usec = 500 * MS;
	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);
	WAIT_FOR(t, ag_mon_client_stats(t->c)->health_ok >= 1, "a good health check");
	peer_cmd(t, "health off");
	WAIT_FOR(t, t->disconnected == 1, "the health-check failure rule");
	if (!strstr(t->last_reason, "failing health checks for at least 0.5s"))
		fail_msg("unexpected reason: %s", t->last_reason);
	assert_int_equal(ag_mon_client_stats(t->c)->last_close_sent, 1011);
	assert_true(ag_mon_client_stats(t->c)->health_failed >= 2);
	WAIT_FOR(t, peer_find(t, NULL, "closed", NULL), "the peer to see the close");
	ev = peer_find(t, NULL, "closed", NULL);
	assert_int_equal(json_integer_value(json_object_get(ev, "code")), 1011);
	peer_cmd(t, "health on");
	wait_connected(t, 2);
	WAIT_FOR(t, ag_mon_client_stats(t->c)->health_ok >= 2, "health on the new connection");
}

/* A reply after the response timeout is answered InvalidMessage with the
 * same id, and the connection stays. */
static void test_response_timeout_late_reply(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	struct result r;
	json_t *ev, *msg;
	char want[200];

	cfg.response_timeout_usec = 1000 * MS;
	cfg.health_interval_usec = 60000 * MS;
	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);
	peer_cmd(t, "delay 3000");
	do_request(t, false, 1000, 4 * GiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_FAILED);
	assert_non_null(strstr(r.status, "timed out waiting 1s for monitor response"));
	assert_int_equal(ag_mon_client_stats(t->c)->timeouts, 1);
	WAIT_FOR(t, peer_find(t, NULL, "recv", "InvalidMessage"),
		 "the InvalidMessage for the late reply");
	msg = json_object_get(peer_find(t, NULL, "recv", "InvalidMessage"), "msg");
	assert_int_equal(json_integer_value(json_object_get(msg, "id")), r.id);
	snprintf(want, sizeof(want),
		 "Received DownscaleResult with id %llu but id is unknown or already timed out "
		 "waiting for a reply",
		 (unsigned long long)r.id);
	assert_string_equal(ev_str(msg, "error"), want);
	peer_cmd(t, "delay 0");
	do_request(t, true, 1000, 4 * GiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_OK);
	assert_int_equal(ag_mon_client_stats(t->c)->connections, 1);
	assert_int_equal(t->disconnected, 0);
	ev = peer_find(t, NULL, "dropped", NULL);
	assert_null(ev);
}

static void test_unknown_type(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	json_t *msg;

	cfg.health_interval_usec = 60000 * MS;
	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);
	peer_cmd(t, "unknown-type");
	WAIT_FOR(t, peer_find(t, NULL, "recv", "InvalidMessage"),
		 "InvalidMessage for an unknown type");
	msg = json_object_get(peer_find(t, NULL, "recv", "InvalidMessage"), "msg");
	assert_int_equal(json_integer_value(json_object_get(msg, "id")), 3);
	assert_string_equal(ev_str(msg, "error"), "Received message of unknown type: \"Mystery\"");
	/* An unsolicited reply to an id we never used. */
	peer_cmd(t, "raw {\"type\":\"UpscaleConfirmation\",\"id\":1000}");
	WAIT_FOR(t, peer_count(t, "recv", "InvalidMessage") == 2,
		 "InvalidMessage for an unknown id");
	assert_int_equal(ag_mon_client_stats(t->c)->invalid_sent, 2);
	assert_int_equal(ag_mon_client_pending(t->c), 0);
	peer_cmd(t, "raw {\"type\":\"InternalError\",\"error\":\"e\",\"id\":1002}");
	WAIT_FOR(t, peer_count(t, "recv", "InvalidMessage") == 3,
		 "InvalidMessage for an unknown id");
	{
		size_t from = 0;
		json_t *ev;

		peer_find(t, &from, "recv", "InvalidMessage");
		peer_find(t, &from, "recv", "InvalidMessage");
		ev = peer_find(t, &from, "recv", "InvalidMessage");
		assert_string_equal(
			ev_str(json_object_get(ev, "msg"), "error"),
			"Received MonitorError with id 1002 but id is unknown or already "
			"timed out waiting for a reply");
	}
	/* InvalidMessage from the monitor is only logged... */
	peer_cmd(t, "raw {\"type\":\"InvalidMessage\",\"error\":\"x\",\"id\":5}");
	WAIT_FOR(t, ag_mon_client_stats(t->c)->invalid_received == 1,
		 "the InvalidMessage to be seen");
	/* ...but fails a request waiting on that id at once. */
	{
		struct vmact_resources a = { 1000, GiB };
		struct vmact_err err = { 0 };
		struct result r = { 0 };
		uint64_t id;

		peer_cmd(t, "silent on");
		assert_int_equal(ag_mon_client_downscale(t->c, &a, on_done, &r, &id, &err), 0);
		WAIT_FOR(t, peer_find(t, NULL, "recv", "DownscaleRequest"),
			 "the downscale to arrive");
		peer_cmd(t, "raw {\"type\":\"InvalidMessage\",\"error\":\"nope\",\"id\":%llu}",
			 (unsigned long long)id);
		WAIT_FOR(t, r.done, "the request to fail");
		assert_int_equal(r.outcome, AG_MON_OUTCOME_FAILED);
		assert_string_equal(r.status, "vm-monitor rejected the request: nope");
		peer_cmd(t, "silent off");
	}
	assert_int_equal(ag_mon_client_state(t->c), AG_MON_CLIENT_CONNECTED);
	assert_int_equal(t->disconnected, 0);
}

/* Payload the client cannot decode: InvalidMessage, then close 1011. */
static void test_bad_payload(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	struct result r;
	json_t *msg;

	cfg.health_interval_usec = 60000 * MS;
	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);
	peer_cmd(t, "bad-result on");
	do_request(t, false, 1000, 4 * GiB, &r);
	assert_int_equal(r.outcome, AG_MON_OUTCOME_FAILED);
	WAIT_FOR(t, t->disconnected == 1, "the connection to close");
	WAIT_FOR(t, peer_find(t, NULL, "recv", "InvalidMessage"), "the InvalidMessage");
	msg = json_object_get(peer_find(t, NULL, "recv", "InvalidMessage"), "msg");
	assert_non_null(msg);
	assert_int_equal(json_integer_value(json_object_get(msg, "id")), r.id);
	assert_non_null(strstr(
		ev_str(msg, "error"),
		"Error unmarshaling DownscaleResult: DownscaleResult: Ok: expected a boolean"));
	assert_int_equal(ag_mon_client_stats(t->c)->last_close_sent, 1011);
	WAIT_FOR(t, peer_find(t, NULL, "closed", NULL), "the peer to see the close");
	assert_int_equal(json_integer_value(
				 json_object_get(peer_find(t, NULL, "closed", NULL), "code")),
			 1011);
}

/* Garbage text, a binary frame, a frame cut short by a dying socket: each
 * ends the connection without a crash, and the client comes back. */
static void test_garbage_and_cuts(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);

	peer_start(t, NULL);
	client_start(t, &cfg);
	wait_connected(t, 1);

	peer_cmd(t, "garbage");
	WAIT_FOR(t, t->disconnected == 1, "the connection to close after garbage");
	assert_non_null(strstr(t->last_reason, "not JSON"));
	assert_int_equal(ag_mon_client_stats(t->c)->last_close_sent, 1011);
	assert_int_equal(peer_count(t, "recv", "InvalidMessage"), 0);

	wait_connected(t, 2);
	peer_cmd(t, "binary");
	WAIT_FOR(t, t->disconnected == 2, "the connection to close after a binary frame");
	assert_int_equal(ag_mon_client_stats(t->c)->last_close_sent, 1003);

	wait_connected(t, 3);
	peer_cmd(t, "cut");
	WAIT_FOR(t, t->disconnected == 3, "the connection to end after a cut frame");
	assert_non_null(strstr(t->last_reason, "closed without a close frame"));

	wait_connected(t, 4);
	peer_cmd(t, "close 4000");
	WAIT_FOR(t, t->disconnected == 4, "the connection to end after the peer's close");
	assert_int_equal(ag_mon_client_stats(t->c)->last_close_received, 4000);

	/* A framing violation: wslay closes with 1002; the peer never answers
	 * and the close timeout ends the connection. */
	wait_connected(t, 5);
	peer_cmd(t, "rsv-mute");
	WAIT_FOR(t, t->disconnected == 5, "the connection to end after a protocol violation");
	if (!strstr(t->last_reason, "protocol violation"))
		fail_msg("unexpected reason: %s", t->last_reason);
	assert_int_equal(ag_mon_client_stats(t->c)->last_close_sent, 1002);
	assert_non_null(strstr(t->last_reason, "protocol violation"));
	wait_connected(t, 6);
	assert_int_equal(ag_mon_client_generation(t->c), 6);
}

/* A peer that accepts the upgrade but never answers the version range. */
static void test_never_answers(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	const char *args[] = { "--setup-timeout-ms", "600000", NULL };

	cfg.connect_timeout_usec = 1000 * MS;
	peer_start(t, args);
	peer_cmd(t, "silent on");
	client_start(t, &cfg);
	WAIT_FOR(t,
		 ag_mon_client_stats(t->c)->attempts >= 2 &&
			 ag_mon_client_state(t->c) == AG_MON_CLIENT_WAITING,
		 "a timed-out attempt");
	assert_int_equal(t->connected, 0);
	assert_non_null(strstr(ag_mon_client_stats(t->c)->last_disconnect,
			       "timed out connecting to vm-monitor after 1s"));
	assert_int_equal(ag_mon_client_stats(t->c)->last_close_sent, 1002);
	/* The monitor answers again: the next attempt succeeds. */
	peer_cmd(t, "silent off");
	wait_connected(t, 1);
}

/* A hostile monitor (tests/peers/hostile-monitor.js): floods of pings
 * and of unknown messages while it never reads, a reserved opcode, a
 * 2^62-byte frame, a frame that never finishes (the health checks go
 * unanswered). Each connection is dropped with its reason, what the
 * client queued for the peer stays bounded (the floods end because the
 * client closed, not at the peer's 256 MiB), and it connects again to a
 * monitor that behaves. */
static void test_hostile_peer(void **state)
{
	struct tctx *t = *state;
	struct ag_mon_client_config cfg = base_config(t);
	const char *args[] = { "--modes", "ping-flood,text-flood,bad-opcode,huge-length,unfinished",
			       NULL };
	long rss0 = th_proc_rss_kib(getpid()), rss;

	cfg.response_timeout_usec = 300 * MS;
	cfg.health_max_failing_usec = 1000 * MS;
	peer_start_script(t, "hostile-monitor.js", args);
	client_start(t, &cfg);
	WAIT_FOR(t, t->connected >= 6 && ag_mon_client_state(t->c) == AG_MON_CLIENT_CONNECTED,
		 "the client to get through the attacks to a behaving monitor");
	rss = th_proc_rss_kib(getpid());
	if (verbose())
		fprintf(stderr, "reasons:\n%sRSS %ld -> %ld KiB\n", t->reasons, rss0, rss);
	assert_int_equal(peer_count(t, "flooded", NULL), 2);
	assert_non_null(strstr(t->reasons, "the vm-monitor does not read what is sent to it"));
	assert_non_null(strstr(t->reasons, "closed with 1002"));
	assert_non_null(strstr(t->reasons, "closed with 1009"));
	assert_non_null(strstr(t->reasons, "failing health checks for at least 1s"));
	assert_true(rss - rss0 < 16 * 1024);
}

#define BOTH(fn)                                              \
	cmocka_unit_test_setup_teardown(fn, setup, teardown), \
		cmocka_unit_test_setup_teardown(fn, setup_unix, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_handshake_and_health),
		BOTH(test_requests),
		BOTH(test_eager_frame),
		cmocka_unit_test_setup_teardown(test_peer_drops_bad_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_connected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_spacing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_from_callback, setup, teardown),
		BOTH(test_version_error),
		BOTH(test_upscale_request),
		BOTH(test_second_connection),
		BOTH(test_health_failure),
		BOTH(test_response_timeout_late_reply),
		BOTH(test_unknown_type),
		BOTH(test_bad_payload),
		BOTH(test_garbage_and_cuts),
		BOTH(test_never_answers),
		cmocka_unit_test_setup_teardown(test_hostile_peer, setup_unix, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
