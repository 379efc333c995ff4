/* SPDX-License-Identifier: Apache-2.0 */
/* The agent side of the informant protocol (agent-glue/client/informant-client.h)
 * on loopback against tests/peers/informant.js, an informant written on
 * Node's http module that shares nothing with vmact's stack, and against
 * raw-socket peers that misbehave on purpose. Every wait has a safety limit
 * against a hung test; nothing asserts on elapsed time.
 *
 * The last tests run the agent as vmactd does by default: in its own guest
 * worker (doc/privsep.md), the real vmact-guestd of this build behind
 * vmactd's proxy approver on a loop here: registration through the
 * listening socket the proxy's side opens (LISTEN), the informant calling
 * the worker's server back, approvals, a hostile informant, a killed
 * worker restarted, and the goodbye (STOP -> DELETE /unregister). */
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

#include "actuator/worker/approver-proxy.h"
#include "agent-glue/client/informant-client.h"
#include "base/macro.h"
#include "net/http-client.h"
#include "tests/lib/file.h"
#include "tests/lib/flood.h"
#include "tests/lib/net.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

/* ---- the Node fixture ------------------------------------------------- */

struct fixture {
	struct th_peer peer;
	sd_event_source *io;
	char buf[1 << 16];
	size_t len;
	json_t *events; /* every event so far, in order */
	size_t cursor;  /* wait_event searches from here */
	bool eof;       /* the fixture's stdout closed: it is gone */
	unsigned port;
};

static int on_fixture_out(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct fixture *fx = ud;
	ssize_t n = th_read_some(fd, fx->buf, sizeof(fx->buf), &fx->len);
	char *nl;

	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		fx->eof = true;
		sd_event_source_set_enabled(s, SD_EVENT_OFF);
		return 0;
	}
	while ((nl = memchr(fx->buf, '\n', fx->len))) {
		json_t *ev = json_loadb(fx->buf, (size_t)(nl - fx->buf), 0, NULL);

		if (ev)
			json_array_append_new(fx->events, ev);
		else
			fprintf(stderr, "fixture: unparsable line: %.*s\n", (int)(nl - fx->buf),
				fx->buf);
		fx->len -= (size_t)(nl + 1 - fx->buf);
		memmove(fx->buf, nl + 1, fx->len);
	}
	return 0;
}

/* Does ev have event == name and, for each "key=value" in match (string
 * compare against the JSON's text or string), the same member? */
static bool event_matches(const json_t *ev, const char *name, const char *const *match)
{
	if (strcmp(json_string_value(json_object_get(ev, "event")) ?: "", name) != 0)
		return false;
	for (; match && *match; match++) {
		const char *eq = strchr(*match, '=');
		_cleanup_free_ char *key = strndup(*match, (size_t)(eq - *match));
		const json_t *v = json_object_get(ev, key);
		_cleanup_free_ char *text = NULL;

		if (!v)
			return false;
		text = json_is_string(v) ? strdup(json_string_value(v))
					 : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		if (!text || strcmp(text, eq + 1) != 0)
			return false;
	}
	return true;
}

/* Runs the loop until the fixture reports a matching event at or after the
 * cursor; moves the cursor past it. Borrowed reference. */
#define wait_event(ev, fx, name, ...) \
	wait_event_(ev, fx, name, (const char *const[]){ __VA_ARGS__ __VA_OPT__(, ) NULL })
static json_t *wait_event_(sd_event *ev, struct fixture *fx, const char *name,
			   const char *const *match)
{
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;

	for (;;) {
		for (size_t i = fx->cursor; i < json_array_size(fx->events); i++) {
			json_t *e = json_array_get(fx->events, i);

			if (event_matches(e, name, match)) {
				fx->cursor = i + 1;
				return e;
			}
		}
		if (fx->eof)
			fail_msg("fixture tests/peers/informant.js exited before reporting event %s",
				 name);
		if (!th_wait_step(ev, end))
			fail_msg("fixture never reported event %s", name);
	}
}

static size_t count_events(struct fixture *fx, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < json_array_size(fx->events); i++)
		n += event_matches(json_array_get(fx->events, i), name, NULL);
	return n;
}

static void fx_cmd(struct fixture *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fx_cmd(struct fixture *fx, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(line) - 1);
	line[n++] = '\n';
	assert_int_equal(write(fx->peer.proc.in_fd, line, (size_t)n), n);
}

/* check_ms: the fixture's periodic GET /id interval, "0" = only on command. */
static void fx_start_checking(sd_event *ev, struct fixture *fx, const char *min, const char *max,
			      const char *check_ms)
{
	/* The informant's 100-400 ms timeouts, stretched: a sanitized agent
	 * on a busy machine is slow, not dead. */
	const char *args[] = {
		"--host", "127.0.0.1",        "--port", "0",          "--min",  min, "--max",
		max,      "--timeout-factor", "20",     "--check-ms", check_ms, NULL
	};
	char msg[512];

	memset(fx, 0, sizeof(*fx));
	fx->events = json_array();
	if (th_peer_start(&fx->peer, "informant.js", args, NULL, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	assert_int_equal(sd_event_add_io(ev, &fx->io, fx->peer.proc.out_fd, EPOLLIN, on_fixture_out,
					 fx),
			 0);
	fx->port = fx->peer.port;
}

static void fx_start(sd_event *ev, struct fixture *fx, const char *min, const char *max)
{
	fx_start_checking(ev, fx, min, max, "0");
}

static void fx_stop(struct fixture *fx)
{
	sd_event_source_disable_unref(fx->io);
	th_peer_stop(&fx->peer); /* stdin EOF ends the fixture */
	for (size_t i = 0; i < json_array_size(fx->events); i++) {
		const json_t *e = json_array_get(fx->events, i);

		/* The fixture checks sequence numbers of every message. */
		if (event_matches(e, "protocol-error", NULL)) {
			char *s = json_dumps(e, JSON_COMPACT);

			fail_msg("fixture saw a protocol error: %s", s);
		}
	}
	json_decref(fx->events);
}

/* ---- the agent under test --------------------------------------------- */

struct watch {
	enum ag_inf_mode mode;
	unsigned registered, exited, try_upscales, notices;
	bool try_cpu, try_mem, retry_should_fix;
	char last_exit[VMACT_ERR_MSG_MAX];
	uint32_t version;
	bool stopped;
	/* last up/downscale answer */
	bool op_done;
	int op_result;
	struct ag_downscale_result dr;
	char op_err[VMACT_ERR_MSG_MAX];
};

static void w_mode(void *ud, enum ag_inf_mode m, const char *id)
{
	((struct watch *)ud)->mode = m;
}

static void w_registered(void *ud, const char *id, const struct ag_informant_desc *d)
{
	struct watch *w = ud;

	w->registered++;
	w->version = d->version;
}

static void w_try(void *ud, bool cpu, bool mem)
{
	struct watch *w = ud;

	w->try_upscales++;
	w->try_cpu = cpu;
	w->try_mem = mem;
}

static void w_exited(void *ud, const char *id, const struct vmact_err *err, bool retry)
{
	struct watch *w = ud;

	w->exited++;
	w->retry_should_fix = retry;
	snprintf(w->last_exit, sizeof(w->last_exit), "%s", err ? err->msg : "");
}

static void w_notice(void *ud, const struct vmact_err *err)
{
	((struct watch *)ud)->notices++;
}

static const struct ag_inf_agent_events watch_events = {
	.mode_changed = w_mode,
	.registered = w_registered,
	.try_upscale = w_try,
	.server_exited = w_exited,
	.notice = w_notice,
};

static void w_down(void *ud, int result, const struct ag_downscale_result *r,
		   const struct vmact_err *err)
{
	struct watch *w = ud;

	w->op_done = true;
	w->op_result = result;
	if (r)
		w->dr = *r;
	snprintf(w->op_err, sizeof(w->op_err), "%s", err ? err->msg : "");
}

static void w_up(void *ud, int result, const struct vmact_err *err)
{
	w_down(ud, result, NULL, err);
}

static void w_stopped(void *ud)
{
	((struct watch *)ud)->stopped = true;
}

struct env {
	sd_event *ev;
	struct fixture fx;
	struct ag_inf_agent *a;
	struct watch w;
	char url[64];
};

static void agent_new(struct env *t, unsigned port, uint32_t min, uint32_t max,
		      uint64_t register_timeout)
{
	struct vmact_err err = { 0 };
	struct ag_inf_agent_config cfg = {
		.listen = "127.0.0.1:0",
		.min_version = min,
		.max_version = max,
		.register_timeout_usec = register_timeout,
		/* Long enough that a held health check stays in flight. */
		.request_timeout_usec = TH_SAFETY_USEC,
		.health_interval_usec = 100000,
		.retry_wait_usec = 50000,
	};

	snprintf(t->url, sizeof(t->url), "http://127.0.0.1:%u/", port);
	cfg.informant_url = t->url;
	memset(&t->w, 0, sizeof(t->w));
	if (ag_inf_agent_new(t->ev, &cfg, &watch_events, &t->w, &t->a, &err) < 0)
		fail_msg("ag_inf_agent_new: %s", err.msg);
	if (ag_inf_agent_start(t->a, &err) < 0)
		fail_msg("ag_inf_agent_start: %s", err.msg);
}

static void run_until_mode(struct env *t, enum ag_inf_mode m)
{
	if (!TH_WAIT(t->ev, ag_inf_agent_mode(t->a) == m, TH_SAFETY_USEC))
		fail_msg("agent never became %s (is %s; last exit: %s)", ag_inf_mode_name(m),
			 ag_inf_mode_name(ag_inf_agent_mode(t->a)), t->w.last_exit);
}

static void wait_op(struct env *t)
{
	TH_WAIT_OR_FAIL(t->ev, t->w.op_done, "the up/downscale to complete");
	t->w.op_done = false;
}

/* Asks for a down- or upscale and waits for its answer. */
static void scale_and_wait(struct env *t, bool down, const struct vmact_resources *to, int want)
{
	struct vmact_err err = { 0 };
	int ret = down ? ag_inf_agent_downscale(t->a, to, w_down, &t->w, &err)
		       : ag_inf_agent_upscale(t->a, to, w_up, &t->w, &err);

	if (ret < 0)
		fail_msg("%sscale: %s", down ? "down" : "up", err.msg);
	wait_op(t);
	assert_int_equal(t->w.op_result, want);
}

/* Start the fixture with an informant range, the agent with its range, and
 * wait until the informant resumed it. */
static void env_up(struct env *t, const char *fmin, const char *fmax, uint32_t amin, uint32_t amax)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(sd_event_new(&t->ev), 0);
	fx_start(t->ev, &t->fx, fmin, fmax);
	agent_new(t, t->fx.port, amin, amax, 2000000);
	run_until_mode(t, AG_INF_RUNNING);
	wait_event(t->ev, &t->fx, "resume", "status=200");
}

static void env_down(struct env *t)
{
	ag_inf_agent_free(t->a);
	fx_stop(&t->fx);
	/* Let nothing linger in the loop. */
	sd_event_unref(t->ev);
}

static void stop_agent(struct env *t)
{
	assert_int_equal(ag_inf_agent_stop(t->a, w_stopped, &t->w), 0);
	assert_true(TH_WAIT(t->ev, t->w.stopped, TH_SAFETY_USEC));
	assert_int_equal(ag_inf_agent_mode(t->a), AG_INF_NONE);
}

static void assert_seqs_increasing(const json_t *state, const char *id, uint64_t last)
{
	const json_t *agents = json_object_get(state, "agents"), *ag;
	size_t i;

	json_array_foreach(agents, i, ag) {
		const json_t *seqs = json_object_get(ag, "seqs");
		json_int_t prev = 0;
		size_t j;
		const json_t *s;

		if (strcmp(json_string_value(json_object_get(ag, "id")), id) != 0)
			continue;
		assert_true(json_array_size(seqs) > 0);
		assert_int_equal(json_integer_value(json_array_get(seqs, 0)), 1);
		json_array_foreach(seqs, j, s) {
			assert_true(json_integer_value(s) > prev);
			prev = json_integer_value(s);
		}
		assert_int_equal((uint64_t)prev, last);
		return;
	}
	fail_msg("agent %s not in the fixture's state", id);
}

/* ---- tests ------------------------------------------------------------ */

static void test_lifecycle_v2(void **state)
{
	struct vmact_resources down = { .milli_cpu = 500, .mem_bytes = 2ULL << 30 };
	struct vmact_resources up = { .milli_cpu = 2000, .mem_bytes = 4ULL << 30 };
	struct vmact_err err = { 0 };
	char id[AG_INF_ID_MAX], idkv[64];
	struct env t;
	json_t *e;

	(void)state;
	env_up(&t, "1", "4", 0, 0);
	snprintf(id, sizeof(id), "%s", ag_inf_agent_id(t.a));
	snprintf(idkv, sizeof(idkv), "agentID=%s", id);
	assert_int_equal(t.w.registered, 1);
	assert_int_equal(t.w.version, AG_INF_V2_0);
	assert_int_equal(ag_inf_agent_version(t.a), AG_INF_V2_0);
	t.fx.cursor = 0; /* registration came before the resume env_up waited for */
	e = wait_event(t.ev, &t.fx, "register", idkv);
	assert_int_equal(json_integer_value(json_object_get(e, "version")), 4);
	assert_string_equal(json_string_value(json_object_get(e, "addr")),
			    ag_inf_agent_serve_addr(t.a));

	/* v1.2+: health checks while running. */
	wait_event(t.ev, &t.fx, "health-check", idkv);

	/* Approved downscale: a signed AgentResourceMessage. */
	assert_int_equal(ag_inf_agent_downscale(t.a, &down, w_down, &t.w, &err), 0);
	assert_int_equal(ag_inf_agent_downscale(t.a, &down, w_down, &t.w, &err), -EBUSY);
	wait_op(&t);
	assert_int_equal(t.w.op_result, 0);
	assert_true(t.w.dr.ok);
	assert_string_equal(t.w.dr.status, "approved by fixture");
	e = wait_event(t.ev, &t.fx, "downscale", idkv, "cpu=500m", "memory=2Gi", "ok=true");
	assert_true(json_is_integer(json_object_get(e, "seq")));

	/* Denied downscale. */
	fx_cmd(&t.fx, "{\"cmd\":\"set\",\"approve\":false,\"status\":\"not enough memory\"}");
	wait_event(t.ev, &t.fx, "ack", "cmd=set");
	scale_and_wait(&t, true, &down, 0);
	assert_false(t.w.dr.ok);
	assert_string_equal(t.w.dr.status, "not enough memory");
	wait_event(t.ev, &t.fx, "downscale", idkv, "ok=false");

	/* Upscale. */
	scale_and_wait(&t, false, &up, 0);
	wait_event(t.ev, &t.fx, "upscale", idkv, "cpu=2", "memory=4Gi");

	/* The informant asks for more memory. */
	fx_cmd(&t.fx, "{\"cmd\":\"try-upscale\",\"cpu\":false,\"memory\":true}");
	wait_event(t.ev, &t.fx, "try-upscale", idkv, "status=200", "error=null");
	assert_int_equal(t.w.try_upscales, 1);
	assert_false(t.w.try_cpu);
	assert_true(t.w.try_mem);

	/* Periodic GET /id checks keep the order too. */
	fx_cmd(&t.fx, "{\"cmd\":\"check\"}");
	wait_event(t.ev, &t.fx, "id-check", idkv, "phase=periodic", "status=200");
	wait_event(t.ev, &t.fx, "checked");

	/* Every AgentMessage the agent sent, in order: 1, 2, 3, ... */
	fx_cmd(&t.fx, "{\"cmd\":\"state\"}");
	e = wait_event(t.ev, &t.fx, "state");
	assert_string_equal(json_string_value(json_object_get(e, "current")), id);
	assert_seqs_increasing(e, id, ag_inf_agent_seq(t.a));

	stop_agent(&t);
	wait_event(t.ev, &t.fx, "unregister", idkv, "wasActive=true");
	assert_int_equal(t.w.exited, 1);
	assert_int_equal(ag_inf_agent_generation(t.a), 1);
	env_down(&t);
}

static void test_lifecycle_v1_1(void **state)
{
	struct vmact_resources down = { .milli_cpu = 250, .mem_bytes = 1ULL << 30 };
	char idkv[64];
	struct env t;
	json_t *e;

	(void)state;
	/* A v0.1.4-v0.6 informant: 1.1 only. */
	env_up(&t, "2", "2", 0, 0);
	snprintf(idkv, sizeof(idkv), "agentID=%s", ag_inf_agent_id(t.a));
	assert_int_equal(t.w.version, AG_INF_V1_1);
	/* Below v2.0 the body is plain RawResources: no sequence number. */
	scale_and_wait(&t, true, &down, 0);
	e = wait_event(t.ev, &t.fx, "downscale", idkv, "cpu=250m", "memory=1Gi");
	assert_null(json_object_get(e, "seq"));
	fx_cmd(&t.fx, "{\"cmd\":\"try-upscale\",\"cpu\":true,\"memory\":false}");
	wait_event(t.ev, &t.fx, "try-upscale", idkv, "status=200");
	assert_int_equal(t.w.try_upscales, 1);
	assert_true(t.w.try_cpu);
	/* No health checks below v1.2. */
	assert_int_equal(count_events(&t.fx, "health-check"), 0);
	stop_agent(&t);
	wait_event(t.ev, &t.fx, "unregister", idkv);
	env_down(&t);
}

static void test_v1_0_no_try_upscale(void **state)
{
	char idkv[64];
	struct env t;

	(void)state;
	/* Also the informant's own periodic GET /id checks (every 100 ms). */
	memset(&t, 0, sizeof(t));
	assert_int_equal(sd_event_new(&t.ev), 0);
	fx_start_checking(t.ev, &t.fx, "1", "1", "100");
	agent_new(&t, t.fx.port, 0, 0, 2000000);
	run_until_mode(&t, AG_INF_RUNNING);
	snprintf(idkv, sizeof(idkv), "agentID=%s", ag_inf_agent_id(t.a));
	wait_event(t.ev, &t.fx, "id-check", idkv, "phase=periodic", "status=200", "error=null");
	wait_event(t.ev, &t.fx, "id-check", idkv, "phase=periodic", "status=200", "error=null");
	assert_int_equal(t.w.version, AG_INF_V1_0);
	fx_cmd(&t.fx, "{\"cmd\":\"try-upscale\",\"cpu\":true,\"memory\":true}");
	wait_event(t.ev, &t.fx, "try-upscale", idkv, "status=400");
	assert_int_equal(t.w.try_upscales, 0);
	/* Refusing is not a reason to re-register. */
	assert_int_equal(ag_inf_agent_mode(t.a), AG_INF_RUNNING);
	assert_int_equal(t.w.exited, 0);
	env_down(&t);
}

/* The informant's /resume overtakes its /register answer: the agent still
 * ends up running, without re-registering. */
static void test_resume_before_register_answer(void **state)
{
	struct vmact_resources to = { .milli_cpu = 1000, .mem_bytes = 1ULL << 30 };
	char idkv[64];
	struct env t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(sd_event_new(&t.ev), 0);
	fx_start(t.ev, &t.fx, "1", "4");
	fx_cmd(&t.fx, "{\"cmd\":\"set\",\"resumeEarly\":true}");
	wait_event(t.ev, &t.fx, "ack", "cmd=set");
	agent_new(&t, t.fx.port, 0, 0, 2000000);
	snprintf(idkv, sizeof(idkv), "agentID=%s", ag_inf_agent_id(t.a));
	wait_event(t.ev, &t.fx, "resume", idkv, "status=200");
	run_until_mode(&t, AG_INF_RUNNING);
	assert_int_equal(t.w.registered, 1);
	assert_int_equal(t.w.exited, 0);
	assert_int_equal(ag_inf_agent_generation(t.a), 1);
	scale_and_wait(&t, true, &to, 0);
	env_down(&t);
}

static void test_version_mismatch(void **state)
{
	char first[AG_INF_ID_MAX];
	struct env t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(sd_event_new(&t.ev), 0);
	fx_start(t.ev, &t.fx, "4", "4");
	/* A v0.1.0 agent: 1.0 only. */
	agent_new(&t, t.fx.port, 1, 1, 2000000);
	snprintf(first, sizeof(first), "%s", ag_inf_agent_id(t.a));
	wait_event(t.ev, &t.fx, "rejected", "path=/register", "status=400");
	TH_WAIT(t.ev, ag_inf_agent_generation(t.a) >= 2, TH_SAFETY_USEC);
	assert_true(t.w.exited >= 1);
	assert_non_null(strstr(t.w.last_exit, "400"));
	assert_non_null(strstr(t.w.last_exit, "mismatch"));
	assert_int_equal(t.w.registered, 0);
	/* It keeps trying, each time as a new agent. */
	assert_true(ag_inf_agent_generation(t.a) >= 2);
	wait_event(t.ev, &t.fx, "rejected", "path=/register", "status=400");
	assert_string_not_equal(first, ag_inf_agent_id(t.a)[0] ? ag_inf_agent_id(t.a) : "x");
	assert_int_not_equal(ag_inf_agent_mode(t.a), AG_INF_RUNNING);
	env_down(&t);
}

/* A 4xx/5xx from the informant ends the registration; after the retry
 * wait a new agent ID registers and is resumed. */
static void reregister_after(const char *path, int status, bool retry_should_fix)
{
	struct vmact_resources to = { .milli_cpu = 1000, .mem_bytes = 1ULL << 30 };
	struct vmact_err err = { 0 };
	char old[AG_INF_ID_MAX], oldkv[64], newkv[64];
	struct env t;

	env_up(&t, "1", "4", 0, 0);
	snprintf(old, sizeof(old), "%s", ag_inf_agent_id(t.a));
	snprintf(oldkv, sizeof(oldkv), "agentID=%s", old);
	fx_cmd(&t.fx, "{\"cmd\":\"fail\",\"path\":\"%s\",\"status\":%d,\"count\":1}", path, status);
	wait_event(t.ev, &t.fx, "ack", "cmd=fail");
	if (strcmp(path, "/downscale") == 0) {
		assert_int_equal(ag_inf_agent_downscale(t.a, &to, w_down, &t.w, &err), 0);
		wait_op(&t);
		assert_int_equal(t.w.op_result, -EREMOTEIO);
		assert_non_null(strstr(t.w.op_err, "/downscale"));
	}
	wait_event(t.ev, &t.fx, "injected-failure");
	/* Old registration withdrawn, a new one current. */
	wait_event(t.ev, &t.fx, "unregister", oldkv);
	run_until_mode(&t, AG_INF_RUNNING);
	assert_true(t.w.exited >= 1);
	assert_int_equal(t.w.retry_should_fix, retry_should_fix);
	assert_string_not_equal(ag_inf_agent_id(t.a), old);
	assert_int_equal(ag_inf_agent_generation(t.a), 2);
	snprintf(newkv, sizeof(newkv), "agentID=%s", ag_inf_agent_id(t.a));
	wait_event(t.ev, &t.fx, "resume", newkv, "status=200");
	/* The new registration works. */
	scale_and_wait(&t, false, &to, 0);
	env_down(&t);
}

static void test_reregister_after_404(void **state)
{
	(void)state;
	reregister_after("/health-check", 404, true);
}

static void test_reregister_after_500(void **state)
{
	(void)state;
	reregister_after("/downscale", 500, false);
}

static void test_reregister_after_register_500(void **state)
{
	struct env t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(sd_event_new(&t.ev), 0);
	fx_start(t.ev, &t.fx, "1", "4");
	fx_cmd(&t.fx, "{\"cmd\":\"fail\",\"path\":\"/register\",\"status\":500,\"count\":1}");
	wait_event(t.ev, &t.fx, "ack", "cmd=fail");
	agent_new(&t, t.fx.port, 0, 0, 2000000);
	run_until_mode(&t, AG_INF_RUNNING);
	assert_int_equal(t.w.exited, 1);
	assert_non_null(strstr(t.w.last_exit, "500"));
	assert_int_equal(ag_inf_agent_generation(t.a), 2);
	assert_int_equal(t.w.registered, 1);
	env_down(&t);
}

static void test_suspension(void **state)
{
	struct vmact_resources to = { .milli_cpu = 1000, .mem_bytes = 1ULL << 30 };
	struct vmact_err err = { 0 };
	char idkv[64];
	struct env t;

	(void)state;
	env_up(&t, "1", "4", 0, 0);
	snprintf(idkv, sizeof(idkv), "agentID=%s", ag_inf_agent_id(t.a));
	fx_cmd(&t.fx, "{\"cmd\":\"suspend\"}");
	wait_event(t.ev, &t.fx, "suspend", idkv, "status=200");
	assert_int_equal(ag_inf_agent_mode(t.a), AG_INF_SUSPENDED);
	assert_int_equal(ag_inf_agent_downscale(t.a, &to, w_down, &t.w, &err), -EAGAIN);
	assert_non_null(strstr(err.msg, "suspended"));
	vmact_err_reset(&err);
	assert_int_equal(ag_inf_agent_upscale(t.a, &to, w_up, &t.w, &err), -EAGAIN);
	vmact_err_reset(&err);
	/* An informant-side try-upscale while suspended is a protocol
	 * violation: 400 and a fresh registration. */
	fx_cmd(&t.fx,
	       "{\"cmd\":\"request\",\"tag\":\"t\",\"method\":\"POST\",\"path\":\"/try-upscale\","
	       "\"body\":\"{\\\"cpu\\\":true,\\\"memory\\\":false,\\\"expectedID\\\":\\\"%s\\\"}\"}",
	       ag_inf_agent_id(t.a));
	wait_event(t.ev, &t.fx, "response", "tag=t", "status=400");
	assert_int_equal(t.w.try_upscales, 0);
	run_until_mode(&t, AG_INF_RUNNING);
	assert_int_equal(ag_inf_agent_generation(t.a), 2);
	assert_true(t.w.retry_should_fix);
	scale_and_wait(&t, true, &to, 0);
	env_down(&t);
}

/* A request queued behind a health check must not go out once the
 * informant suspended the agent: it fails with -EAGAIN instead. */
static void test_suspend_drops_queued_request(void **state)
{
	struct vmact_resources to = { .milli_cpu = 1000, .mem_bytes = 1ULL << 30 };
	struct vmact_err err = { 0 };
	char idkv[64];
	struct env t;

	(void)state;
	env_up(&t, "1", "4", 0, 0);
	snprintf(idkv, sizeof(idkv), "agentID=%s", ag_inf_agent_id(t.a));
	fx_cmd(&t.fx, "{\"cmd\":\"hold\",\"path\":\"/health-check\"}");
	wait_event(t.ev, &t.fx, "ack", "cmd=hold");
	wait_event(t.ev, &t.fx, "held", "path=/health-check");
	assert_int_equal(ag_inf_agent_downscale(t.a, &to, w_down, &t.w, &err), 0);
	fx_cmd(&t.fx, "{\"cmd\":\"suspend\"}");
	wait_event(t.ev, &t.fx, "suspend", idkv, "status=200");
	wait_op(&t);
	assert_int_equal(t.w.op_result, -EAGAIN);
	fx_cmd(&t.fx, "{\"cmd\":\"release\"}");
	wait_event(t.ev, &t.fx, "ack", "cmd=release");
	fx_cmd(&t.fx, "{\"cmd\":\"resume\"}");
	wait_event(t.ev, &t.fx, "resume", idkv, "status=200");
	scale_and_wait(&t, true, &to, 0);
	/* Only the second request ever reached the informant. */
	wait_event(t.ev, &t.fx, "downscale", idkv);
	assert_int_equal(count_events(&t.fx, "downscale"), 1);
	assert_int_equal(ag_inf_agent_generation(t.a), 1);
	env_down(&t);
}

static void dup_done(void *ud, int result, const struct net_http_response *resp,
		     const struct vmact_err *err)
{
	long *status = ud;

	*status = result < 0 ? result : resp->status;
}

/* Two agents for one VM (an agent restart): the newest becomes current,
 * the older one is suspended, and gets the VM back when the newer one
 * unregisters. */
static void test_two_agents(void **state)
{
	struct vmact_resources to = { .milli_cpu = 1000, .mem_bytes = 1ULL << 30 };
	struct ag_inf_agent_config cfg = {
		.listen = "127.0.0.1:0",
		.health_interval_usec = 100000,
		.retry_wait_usec = 50000,
	};
	struct vmact_err err = { 0 };
	struct ag_inf_agent *b = NULL;
	struct net_http_client *http = NULL;
	struct watch wb = { 0 };
	char akv[64], bkv[64], url[96];
	struct env t;
	long status = 0;

	(void)state;
	env_up(&t, "1", "4", 0, 0);
	snprintf(akv, sizeof(akv), "agentID=%s", ag_inf_agent_id(t.a));
	cfg.informant_url = t.url;
	assert_int_equal(ag_inf_agent_new(t.ev, &cfg, &watch_events, &wb, &b, &err), 0);
	assert_int_equal(ag_inf_agent_start(b, &err), 0);
	snprintf(bkv, sizeof(bkv), "agentID=%s", ag_inf_agent_id(b));
	wait_event(t.ev, &t.fx, "suspend", akv, "status=200");
	wait_event(t.ev, &t.fx, "resume", bkv, "status=200");
	TH_WAIT_OR_FAIL(t.ev, ag_inf_agent_mode(b) == AG_INF_RUNNING, "agent b to run");
	assert_int_equal(ag_inf_agent_mode(t.a), AG_INF_SUSPENDED);
	assert_int_equal(ag_inf_agent_downscale(t.a, &to, w_down, &t.w, &err), -EAGAIN);
	assert_int_equal(ag_inf_agent_downscale(b, &to, w_down, &wb, &err), 0);
	TH_WAIT_OR_FAIL(t.ev, wb.op_done, "wb.op_done");
	assert_int_equal(wb.op_result, 0);
	wait_event(t.ev, &t.fx, "downscale", bkv);

	/* The informant refuses a second registration under B's ID. */
	{
		struct ag_agent_desc d = { .min_version = 1, .max_version = 4 };
		_cleanup_(json_decrefp) json_t *j = NULL;
		_cleanup_free_ char *body = NULL;
		struct net_http_request req = { .method = "POST",
						.content_type = "application/json",
						.timeout_usec = 2000000,
						.url = url };

		snprintf(d.agent_id, sizeof(d.agent_id), "%s", ag_inf_agent_id(b));
		snprintf(d.serve_addr, sizeof(d.serve_addr), "%s", ag_inf_agent_serve_addr(b));
		j = ag_agent_desc_encode(&d);
		body = ag_inf_dump(j);
		req.body = body;
		req.body_len = strlen(body);
		snprintf(url, sizeof(url), "http://127.0.0.1:%u/register", t.fx.port);
		assert_int_equal(net_http_client_new(t.ev, &http, &err), 0);
		assert_int_equal(net_http_client_start(http, &req, dup_done, &status, NULL, &err),
				 0);
		TH_WAIT_OR_FAIL(t.ev, status != 0, "status != 0");
		assert_int_equal(status, 409);
		net_http_client_free(http);
	}

	/* B leaves: A is resumed. */
	assert_int_equal(ag_inf_agent_stop(b, w_stopped, &wb), 0);
	assert_true(TH_WAIT(t.ev, wb.stopped, TH_SAFETY_USEC));
	wait_event(t.ev, &t.fx, "unregister", bkv, "wasActive=true");
	wait_event(t.ev, &t.fx, "resume", akv, "status=200");
	run_until_mode(&t, AG_INF_RUNNING);
	assert_int_equal(ag_inf_agent_generation(t.a), 1);
	scale_and_wait(&t, false, &to, 0);
	ag_inf_agent_free(b);
	env_down(&t);
}

static void test_resume_suspend_cycle(void **state)
{
	struct vmact_resources to = { .milli_cpu = 1000, .mem_bytes = 1ULL << 30 };
	char idkv[64];
	struct env t;

	(void)state;
	env_up(&t, "1", "4", 0, 0);
	snprintf(idkv, sizeof(idkv), "agentID=%s", ag_inf_agent_id(t.a));
	fx_cmd(&t.fx, "{\"cmd\":\"suspend\"}");
	wait_event(t.ev, &t.fx, "suspend", idkv, "status=200");
	fx_cmd(&t.fx, "{\"cmd\":\"resume\"}");
	wait_event(t.ev, &t.fx, "resume", idkv, "status=200");
	assert_int_equal(ag_inf_agent_mode(t.a), AG_INF_RUNNING);
	assert_int_equal(ag_inf_agent_generation(t.a), 1);
	/* A second /resume while running: 400, and the agent re-registers. */
	fx_cmd(&t.fx,
	       "{\"cmd\":\"request\",\"tag\":\"r\",\"method\":\"POST\",\"path\":\"/resume\","
	       "\"body\":\"{\\\"expectedID\\\":\\\"%s\\\"}\"}",
	       ag_inf_agent_id(t.a));
	wait_event(t.ev, &t.fx, "response", "tag=r", "status=400",
		   "body=Cannot resume agent that is already running");
	run_until_mode(&t, AG_INF_RUNNING);
	assert_int_equal(ag_inf_agent_generation(t.a), 2);
	scale_and_wait(&t, false, &to, 0);
	env_down(&t);
}

static void test_agent_server_answers(void **state)
{
	static const struct {
		const char *method, *path, *body, *status, *answer;
	} cases[] = {
		{ "PUT", "/id", "{}", "405", "request method must be GET" },
		{ "POST", "/suspend", "{}x", "400", "bad JSON" },
		{ "GET", "/id", "", "400", "bad JSON" },
		{ "GET", "/id", "[1]", "400", "bad JSON" },
		{ "GET", "/nope", "{}", "404", NULL },
		{ "DELETE", "/resume", "{}", "405", "request method must be POST" },
		{ "GET", "/try-upscale", "{}", "405", "request method must be POST" },
		{ "POST", "/try-upscale", "{}", "400", "bad JSON" },
		{ "POST", "/resume",
		  "{\\\"expectedID\\\":\\\"00000000-0000-4000-8000-000000000000\\\"}", "404",
		  NULL },
		{ "POST", "/suspend", "{\\\"expectedID\\\":\\\"not-a-uuid\\\"}", "400",
		  "bad JSON" },
	};
	char tag[16], st[32], ans[128];
	struct env t;
	uint64_t seq;
	json_t *e;

	(void)state;
	env_up(&t, "1", "4", 0, 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(tag, sizeof(tag), "tag=c%zu", i);
		snprintf(st, sizeof(st), "status=%s", cases[i].status);
		snprintf(ans, sizeof(ans), "body=%s", cases[i].answer ? cases[i].answer : "");
		fx_cmd(&t.fx,
		       "{\"cmd\":\"request\",\"tag\":\"c%zu\",\"method\":\"%s\",\"path\":\"%s\","
		       "\"body\":\"%s\"}",
		       i, cases[i].method, cases[i].path, cases[i].body);
		if (cases[i].answer)
			wait_event(t.ev, &t.fx, "response", tag, st, ans);
		else
			wait_event(t.ev, &t.fx, "response", tag, st);
	}
	/* None of that changed the state or counted a message. */
	assert_int_equal(ag_inf_agent_mode(t.a), AG_INF_RUNNING);
	assert_int_equal(ag_inf_agent_generation(t.a), 1);
	assert_true(t.w.notices >= 5);
	seq = ag_inf_agent_seq(t.a);
	fx_cmd(&t.fx,
	       "{\"cmd\":\"request\",\"tag\":\"ok\",\"method\":\"GET\",\"path\":\"/id\",\"body\":\"{}\"}");
	e = wait_event(t.ev, &t.fx, "response", "tag=ok", "status=200");
	assert_int_equal(ag_inf_agent_seq(t.a), seq + 1);
	{
		_cleanup_(json_decrefp) json_t *b =
			json_loads(json_string_value(json_object_get(e, "body")), 0, NULL);

		assert_non_null(b);
		assert_int_equal(json_integer_value(json_object_get(b, "sequenceNumber")), seq + 1);
		assert_string_equal(json_string_value(
					    json_object_get(json_object_get(b, "data"), "agentID")),
				    ag_inf_agent_id(t.a));
	}
	env_down(&t);
}

/* The agent's server (the one the informant calls) under a slowloris
 * flood of 4x its connection limit (256, http-server.h's default) from
 * four source addresses, an oversized header, garbage and a body that
 * never completes: GET /id is answered during and after, and the agent
 * stays registered and running (doc/reliability.md). */
static void test_agent_server_flood(void **state)
{
	static const char *const srcs[] = { "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4" };
	static const char id_get[] =
		"GET /id HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		"Content-Length: 2\r\nConnection: close\r\n\r\n{}";
	struct th_flood f = { 0 };
	char buf[2048], msg[256];
	unsigned got = 0;
	const char *colon;
	struct env t;

	(void)state;
	/* Room for both sides of every flood connection. */
	th_flood_raise_nofile(4096);
	env_up(&t, "1", "4", 0, 0);
	f.ev = t.ev;
	colon = strrchr(ag_inf_agent_serve_addr(t.a), ':');
	assert_non_null(colon);
	f.port = (unsigned)atoi(colon + 1);
	if (th_flood(&f, 4 * 256, srcs, 4, &got) < 0)
		fail_msg("flood: %u of %u connections got through", got, 4 * 256);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(th_flood_request(&f, NULL, id_get, strlen(id_get), buf,
						  sizeof(buf)),
				 0);
		if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
			fail_msg("GET /id %s the flood: \"%.80s\"", round ? "after" : "during",
				 buf);
		if (round == 0) {
			th_flood_close(&f);
			if (th_flood_bad_input(&f, "/try-upscale", msg, sizeof(msg)) < 0)
				fail_msg("%s", msg);
		}
	}
	assert_int_equal(ag_inf_agent_mode(t.a), AG_INF_RUNNING);
	assert_int_equal(ag_inf_agent_generation(t.a), 1);
	free(f.fds);
	env_down(&t);
}

/* ---- misbehaving informants -------------------------------------------- */

enum bad_mode { BAD_CLOSE_MID, BAD_GARBAGE, BAD_NO_ID_CALL, BAD_BAD_DESC };

struct bad_peer {
	enum bad_mode mode;
	int lfd;
	unsigned port;
	sd_event_source *accept_src;
	struct bad_conn {
		int fd;
		sd_event_source *src;
		char buf[4096];
		size_t len;
		bool answered;
	} conns[32];
	unsigned nconns;
	unsigned requests;
};

static int on_bad_read(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct bad_peer *p = ud;
	struct bad_conn *c = NULL;
	ssize_t n;
	const char *answer = NULL, *body = NULL;
	char out[512];

	for (unsigned i = 0; i < p->nconns; i++)
		if (p->conns[i].fd == fd)
			c = &p->conns[i];
	if (!c)
		return 0;
	n = th_read_some(fd, c->buf, sizeof(c->buf), &c->len);
	if (n == 0 || (n < 0 && n != -EAGAIN) || c->answered) {
		if (n == 0 || (n < 0 && n != -EAGAIN))
			sd_event_source_set_enabled(s, SD_EVENT_OFF);
		return 0;
	}
	if (!strstr(c->buf, "\r\n\r\n"))
		return 0;
	c->answered = true;
	p->requests++;
	switch (p->mode) {
	case BAD_CLOSE_MID:
		answer =
			"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
			"{\"protoVersion\":4,\"metr";
		break;
	case BAD_GARBAGE:
		answer = "\x01\x02garbage garbage\r\n\r\n\xff";
		break;
	case BAD_NO_ID_CALL:
		body = "{\"protoVersion\":4,\"metricsMethod\":{\"prometheus\":{\"port\":9100}}}";
		break;
	case BAD_BAD_DESC:
		body = "{\"protoVersion\":9,\"metricsMethod\":{}}";
		break;
	}
	if (body) {
		snprintf(out, sizeof(out),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s",
			 strlen(body), body);
		answer = out;
	}
	if (write(fd, answer, strlen(answer)) < 0)
		return 0;
	/* Every mode hangs up after its answer. */
	shutdown(fd, SHUT_RDWR);
	return 0;
}

static int on_bad_accept(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct bad_peer *p = ud;
	int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (c < 0)
		return 0;
	if (p->nconns == ARRAY_SIZE(p->conns)) {
		close(c);
		return 0;
	}
	p->conns[p->nconns].fd = c;
	sd_event_add_io(sd_event_source_get_event(s), &p->conns[p->nconns].src, c, EPOLLIN,
			on_bad_read, p);
	p->nconns++;
	return 0;
}

static void bad_peer_free(struct bad_peer *p)
{
	for (unsigned i = 0; i < p->nconns; i++) {
		sd_event_source_disable_unref(p->conns[i].src);
		close(p->conns[i].fd);
	}
	sd_event_source_disable_unref(p->accept_src);
	if (p->lfd >= 0)
		close(p->lfd);
}

/* The agent must survive the peer, report why each registration failed,
 * and keep retrying with fresh IDs. */
static void against_bad_peer(enum bad_mode mode, const char *want)
{
	struct bad_peer p = { .mode = mode, .lfd = -1 };
	struct env t;

	memset(&t, 0, sizeof(t));
	assert_int_equal(sd_event_new(&t.ev), 0);
	p.lfd = th_silent_listener(&p.port);
	assert_true(p.lfd >= 0);
	assert_int_equal(sd_event_add_io(t.ev, &p.accept_src, p.lfd, EPOLLIN, on_bad_accept, &p),
			 0);
	agent_new(&t, p.port, 0, 0, 500000);
	TH_WAIT(t.ev, t.w.exited >= 2, TH_SAFETY_USEC);
	assert_true(t.w.exited >= 2);
	if (!strstr(t.w.last_exit, want))
		fail_msg("exit reason \"%s\" does not mention \"%s\"", t.w.last_exit, want);
	assert_int_equal(t.w.registered, 0);
	assert_true(ag_inf_agent_generation(t.a) >= 2);
	assert_true(p.requests >= 2);
	ag_inf_agent_free(t.a);
	bad_peer_free(&p);
	sd_event_unref(t.ev);
}

static void test_peer_closes_mid_message(void **state)
{
	(void)state;
	against_bad_peer(BAD_CLOSE_MID, "/register");
}

static void test_peer_sends_garbage(void **state)
{
	(void)state;
	against_bad_peer(BAD_GARBAGE, "/register");
}

static void test_peer_skips_id_call(void **state)
{
	(void)state;
	against_bad_peer(BAD_NO_ID_CALL, "without calling GET /id");
}

static void test_peer_bad_desc(void **state)
{
	(void)state;
	against_bad_peer(BAD_BAD_DESC, "protoVersion");
}

static void test_peer_never_answers(void **state)
{
	unsigned port = 0;
	int lfd = th_silent_listener(&port);
	struct env t;

	(void)state;
	assert_true(lfd >= 0);
	memset(&t, 0, sizeof(t));
	assert_int_equal(sd_event_new(&t.ev), 0);
	agent_new(&t, port, 0, 0, 200000);
	TH_WAIT(t.ev, t.w.exited >= 2, TH_SAFETY_USEC);
	assert_true(t.w.exited >= 2);
	assert_non_null(strstr(t.w.last_exit, "/register"));
	assert_int_equal(ag_inf_agent_mode(t.a) == AG_INF_RUNNING, 0);
	ag_inf_agent_free(t.a);
	close(lfd);
	sd_event_unref(t.ev);
}

static void test_nobody_listens(void **state)
{
	struct env t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(sd_event_new(&t.ev), 0);
	agent_new(&t, th_dead_port(), 0, 0, 200000);
	TH_WAIT(t.ev, t.w.exited >= 2, TH_SAFETY_USEC);
	assert_true(t.w.exited >= 2);
	/* Nobody heard of it: stopping needs no /unregister. */
	assert_int_equal(ag_inf_agent_stop(t.a, w_stopped, &t.w), 0);
	assert_true(TH_WAIT(t.ev, t.w.stopped, TH_SAFETY_USEC));
	ag_inf_agent_free(t.a);
	sd_event_unref(t.ev);
}

static void test_config_errors(void **state)
{
	struct ag_inf_agent_config cfg = { .informant_url = "http://127.0.0.1:1",
					   .listen = "0.0.0.0:0" };
	struct vmact_err err = { 0 };
	struct ag_inf_agent *a = NULL;
	sd_event *ev = NULL;

	(void)state;
	assert_int_equal(sd_event_new(&ev), 0);
	assert_int_equal(ag_inf_agent_new(ev, &cfg, NULL, NULL, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "advertise_host"));
	vmact_err_reset(&err);
	cfg.listen = "127.0.0.1:0";
	cfg.informant_url = "ftp://x";
	assert_int_equal(ag_inf_agent_new(ev, &cfg, NULL, NULL, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "informant_url"));
	vmact_err_reset(&err);
	cfg.informant_url = "http://127.0.0.1:1";
	cfg.min_version = 3;
	cfg.max_version = 2;
	assert_true(ag_inf_agent_new(ev, &cfg, NULL, NULL, &a, &err) < 0);
	vmact_err_reset(&err);
	cfg.min_version = cfg.max_version = 0;
	cfg.listen = "0.0.0.0:0";
	cfg.advertise_host = "::1";
	assert_int_equal(ag_inf_agent_new(ev, &cfg, NULL, NULL, &a, &err), 0);
	assert_int_equal(ag_inf_agent_start(a, &err), 0);
	assert_non_null(strstr(ag_inf_agent_serve_addr(a), "[::1]:"));
	ag_inf_agent_free(a);
	sd_event_unref(ev);
}

/* ---- through the guest worker (doc/privsep.md) ----------------------- */

struct wk {
	unsigned connected, lost, changed, upscales, done, stopped;
	bool up_memory;
	enum act_approval outcome;
};

static void wk_connected(void *ud)
{
	((struct wk *)ud)->connected++;
}

static void wk_lost(void *ud, bool dropped)
{
	((struct wk *)ud)->lost++;
}

static void wk_changed(void *ud)
{
	((struct wk *)ud)->changed++;
}

static void wk_upscale(void *ud, bool cpu, bool memory)
{
	struct wk *w = ud;

	w->upscales++;
	w->up_memory = memory;
}

static void wk_done(void *ud, enum act_approval outcome)
{
	struct wk *w = ud;

	w->done++;
	w->outcome = outcome;
}

static void wk_stopped(void *ud)
{
	((struct wk *)ud)->stopped++;
}

static const struct act_approver_events wk_events = {
	.connected = wk_connected,
	.lost = wk_lost,
	.changed = wk_changed,
	.upscale_requested = wk_upscale,
};

static void wk_status_is(pid_t pid, const char *key, const char *want)
{
	char v[64];

	if (!th_proc_status(pid, key, v, sizeof(v)) || strcmp(v, want))
		fail_msg("informant worker %d: %s is %s, not %s", (int)pid, key, v, want);
}

/* One request through the worker; its outcome. */
static enum act_approval wk_request(sd_event *ev, struct act_approver *ap, struct wk *w, bool up)
{
	struct vmact_resources target = { .milli_cpu = up ? 2000 : 1000,
					  .mem_bytes = (up ? 2ULL : 1ULL) << 30 };
	struct vmact_err err = { 0 };
	unsigned done = w->done;

	if ((up ? act_approver_request_upscale(ap, &target, wk_done, w, &err)
		: act_approver_request_downscale(ap, &target, wk_done, w, &err)) < 0)
		fail_msg("request: %s", err.msg);
	TH_WAIT_OR_FAIL(ev, w->done > done, "the informant's answer through the worker");
	return w->outcome;
}

/* The worker's sandbox, as the kernel shows it. */
static void wk_sandboxed(pid_t pid)
{
	wk_status_is(pid, "NoNewPrivs", "1");
	wk_status_is(pid, "Seccomp", "2");
	if (geteuid() == 0) {
		wk_status_is(pid, "CapEff", "0000000000000000");
		wk_status_is(pid, "CapPrm", "0000000000000000");
	}
}

/* Two workers, each with its informant, side by side on one loop: the
 * first's re-registration waits out the agent's 5 s health-check interval
 * and its 5 s retry (the defaults vmactd gives it), the second meanwhile
 * takes the approvals, the hostile informant, the kill and the STOP. */
static void test_worker(void **state)
{
	char program[PATH_MAX], url[2][64], name[64];
	struct vmact_err err = { 0 };
	struct act_approver *ap = NULL, *bp = NULL;
	struct fixture fx, fb;
	struct wk w = { 0 }, wb = { 0 };
	sd_event *ev = NULL;
	unsigned first_port = 0;
	pid_t pid, bpid, bpid2;
	json_t *e;
	int fd;

	(void)state;
	assert_int_equal(th_build_prog("vmact-guestd", program, sizeof(program)), 0);
	assert_int_equal(sd_event_new(&ev), 0);
	fx_start(ev, &fx, "1", "4");
	fx_start(ev, &fb, "1", "4");
	snprintf(url[0], sizeof(url[0]), "http://127.0.0.1:%u", fx.port);
	snprintf(url[1], sizeof(url[1]), "http://127.0.0.1:%u", fb.port);
	snprintf(name, sizeof(name), "inf-worker-%d", (int)getpid());
	assert_int_equal(act_approver_proxy_new_informant(ev, name, url[0], "127.0.0.1:0", NULL,
							  program, "vmact", &wk_events, &w, &ap,
							  &err),
			 0);
	assert_int_equal(act_approver_proxy_new_informant(ev, name, url[1], "127.0.0.1:0", NULL,
							  program, "vmact", &wk_events, &wb, &bp,
							  &err),
			 0);
	/* Registered from the worker: the informant called its server back
	 * (GET /id) on the socket vmactd bound, and resumed it. */
	e = wait_event(ev, &fx, "register");
	assert_int_equal(sscanf(json_string_value(json_object_get(e, "addr")) ?: "", "127.0.0.1:%u",
				&first_port),
			 1);
	TH_WAIT_OR_FAIL(ev, w.connected >= 1, "the agent running in the worker");
	assert_true(act_approver_approves(ap) && act_approver_may_resize(ap));
	pid = act_approver_proxy_worker_pid(ap);
	assert_true(pid > 0);
	wk_sandboxed(pid);
	{
		char rss[64] = "?";

		th_proc_status(pid, "VmRSS", rss, sizeof(rss));
		print_message("informant worker %d: %ld descriptors, RSS %s\n", (int)pid,
			      th_proc_fds(pid), rss);
	}
	/* Its failing health check ends the registration: the worker's next
	 * server, under its filter, gets a new listening socket from the
	 * proxy's side and registers again (below, once the second worker
	 * has done its part). */
	fx_cmd(&fx, "{\"cmd\":\"fail\",\"path\":\"/health-check\",\"status\":500,"
		    "\"count\":1}");

	/* The second worker: approvals both ways; the informant denies when
	 * told to. */
	wait_event(ev, &fb, "register");
	TH_WAIT_OR_FAIL(ev, wb.connected >= 1, "the agent running in the second worker");
	assert_true(act_approver_approves(bp) && act_approver_may_resize(bp));
	bpid = act_approver_proxy_worker_pid(bp);
	assert_true(bpid > 0 && bpid != pid);
	wk_sandboxed(bpid);
	assert_int_equal(wk_request(ev, bp, &wb, false), ACT_APPROVAL_OK);
	assert_int_equal(wk_request(ev, bp, &wb, true), ACT_APPROVAL_OK);
	fx_cmd(&fb, "{\"cmd\":\"set\",\"approve\":false,\"status\":\"no\"}");
	wait_event(ev, &fb, "ack");
	assert_int_equal(wk_request(ev, bp, &wb, false), ACT_APPROVAL_DENIED);
	/* The informant asks for more, through the worker's server. */
	fx_cmd(&fb, "{\"cmd\":\"try-upscale\",\"cpu\":false,\"memory\":true}");
	e = wait_event(ev, &fb, "try-upscale");
	assert_int_equal(json_integer_value(json_object_get(e, "status")), 200);
	TH_WAIT_OR_FAIL(ev, wb.upscales >= 1, "the informant's try-upscale through the worker");
	assert_true(wb.up_memory);

	/* A hostile informant: garbage to the worker's server is answered
	 * 400, a wrong agent ID 404; the worker lives on. */
	fx_cmd(&fb, "{\"cmd\":\"request\",\"tag\":\"g\",\"method\":\"POST\","
		    "\"path\":\"/resume\",\"body\":\"{\\\"expectedID\\\":[[[\"}");
	e = wait_event(ev, &fb, "response", "tag=g");
	assert_int_equal(json_integer_value(json_object_get(e, "status")), 400);
	fx_cmd(&fb,
	       "{\"cmd\":\"request\",\"tag\":\"h\",\"method\":\"POST\","
	       "\"path\":\"/suspend\",\"body\":\"{\\\"expectedID\\\":\\\"00000000-0000-4000-8000-000000000000\\\"}\"}");
	e = wait_event(ev, &fb, "response", "tag=h");
	assert_int_equal(json_integer_value(json_object_get(e, "status")), 404);
	assert_int_equal(act_approver_proxy_worker_pid(bp), bpid);
	fx_cmd(&fb, "{\"cmd\":\"set\",\"approve\":true}");
	wait_event(ev, &fb, "ack");
	assert_int_equal(wk_request(ev, bp, &wb, false), ACT_APPROVAL_OK);

	/* Killed: lost, nothing approved meanwhile, a new worker registers. */
	assert_int_equal(kill(bpid, SIGKILL), 0);
	TH_WAIT_OR_FAIL(ev, wb.lost >= 1 && act_approver_proxy_worker_pid(bp) != bpid,
			"the killed worker noticed");
	assert_false(act_approver_approves(bp));
	wait_event(ev, &fb, "register");
	TH_WAIT_OR_FAIL(ev, wb.connected >= 2, "the agent running in a new worker");
	bpid2 = act_approver_proxy_worker_pid(bp);
	assert_true(bpid2 > 0 && bpid2 != bpid);
	assert_int_equal(wk_request(ev, bp, &wb, false), ACT_APPROVAL_OK);

	/* Stopped: the worker unregisters and exits by itself. */
	assert_int_equal(act_approver_proxy_stop(bp, TH_SAFETY_USEC, wk_stopped, &wb), 0);
	wait_event(ev, &fb, "unregister");
	TH_WAIT_OR_FAIL(ev, wb.stopped == 1, "the worker finished");
	assert_true(kill(bpid2, 0) < 0 && errno == ESRCH);
	act_approver_free(bp);
	fx_stop(&fb);

	/* The first worker registered again, under its filter. */
	wait_event(ev, &fx, "injected-failure");
	wait_event(ev, &fx, "register");
	TH_WAIT_OR_FAIL(ev, w.connected >= 2, "the agent running again in the same worker");
	assert_int_equal(act_approver_proxy_worker_pid(ap), pid);
	/* The first registration's listening socket is gone with it: its
	 * port refuses (one listening socket per worker alive). */
	fd = th_connect(first_port);
	if (fd >= 0)
		close(fd);
	assert_int_equal(fd, -ECONNREFUSED);
	assert_int_equal(wk_request(ev, ap, &w, false), ACT_APPROVAL_OK);
	act_approver_free(ap);
	fx_stop(&fx);
	sd_event_unref(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_lifecycle_v2),
		cmocka_unit_test(test_lifecycle_v1_1),
		cmocka_unit_test(test_v1_0_no_try_upscale),
		cmocka_unit_test(test_resume_before_register_answer),
		cmocka_unit_test(test_version_mismatch),
		cmocka_unit_test(test_reregister_after_404),
		cmocka_unit_test(test_reregister_after_500),
		cmocka_unit_test(test_reregister_after_register_500),
		cmocka_unit_test(test_suspension),
		cmocka_unit_test(test_suspend_drops_queued_request),
		cmocka_unit_test(test_resume_suspend_cycle),
		cmocka_unit_test(test_two_agents),
		cmocka_unit_test(test_agent_server_answers),
		cmocka_unit_test(test_agent_server_flood),
		cmocka_unit_test(test_peer_closes_mid_message),
		cmocka_unit_test(test_peer_sends_garbage),
		cmocka_unit_test(test_peer_skips_id_call),
		cmocka_unit_test(test_peer_bad_desc),
		cmocka_unit_test(test_peer_never_answers),
		cmocka_unit_test(test_nobody_listens),
		cmocka_unit_test(test_worker),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
