/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin client end to end on loopback: against vmact's own arbiter
 * (every version, negotiation both ways), against a Node.js peer that plays
 * the HEAD plugin (tests/peers/plugin-head.js: a protocol stack vmact did
 * not write), and against raw sockets that misbehave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent-glue/arbiter/arbiter.h"
#include "agent-glue/client/plugin-client.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/peer.h"
#include "tests/lib/wait.h"

#define GiB (1024ULL * 1024 * 1024)

struct fx {
	sd_event *ev;
	struct net_http_client *http;
	struct ag_arbiter *arb;
	struct th_peer node;
	unsigned version_changes;
	enum ag_plugin_version changed_from, changed_to;
};

struct outcome {
	bool done;
	int error;
	long status;
	char message[1024];
	enum ag_plugin_version version;
	struct ag_plugin_response resp;
};

static void on_result(void *ud, const struct ag_plugin_result *res)
{
	struct outcome *o = ud;

	o->done = true;
	o->error = res->error;
	o->status = res->status;
	o->version = res->version;
	o->resp = res->response;
	snprintf(o->message, sizeof(o->message), "%s", res->message ? res->message : "");
}

static void on_version(void *ud, enum ag_plugin_version from, enum ag_plugin_version to,
		       const char *text)
{
	struct fx *f = ud;

	f->version_changes++;
	f->changed_from = from;
	f->changed_to = to;
	assert_non_null(strstr(text, "protocol version mismatch"));
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(sd_event_new(&f->ev), 0);
	assert_int_equal(net_http_client_new(f->ev, &f->http, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	th_peer_stop(&f->node);
	ag_arbiter_free(f->arb);
	net_http_client_free(f->http);
	sd_event_unref(f->ev);
	free(f);
	return 0;
}

static void start_arbiter(struct fx *f, struct ag_arbiter_config cfg)
{
	struct vmact_err err = { 0 };

	if (ag_arbiter_new(&cfg, &f->arb, &err) < 0 ||
	    ag_arbiter_listen(f->arb, f->ev, "127.0.0.1:0", &err) < 0)
		fail_msg("arbiter: %s", err.msg);
}

/* Starts the Node peer and reads the port it prints. */
static void start_node(struct fx *f)
{
	static const char *const args[] = { "--cpu", "4000", "--mem", "17179869184", NULL };
	char msg[512];

	if (th_peer_start(&f->node, "plugin-head.js", args, NULL, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
}

static struct ag_plugin_client *client(struct fx *f, unsigned port, enum ag_plugin_version v,
				       uint64_t slot, uint64_t timeout)
{
	char url[64];
	struct ag_plugin_client_config cfg = {
		.url = url, .version = v, .slot_bytes = slot, .timeout_usec = timeout
	};
	struct ag_plugin_client *pc = NULL;
	struct vmact_err err = { 0 };

	assert_int_equal(ag_plugin_url("127.0.0.1", port, url, sizeof(url)), 0);
	if (ag_plugin_client_new(f->http, &cfg, &pc, &err) < 0)
		fail_msg("client: %s", err.msg);
	ag_plugin_client_on_version_change(pc, on_version, f);
	return pc;
}

static struct ag_agent_request request(const char *name, struct vmact_resources res,
				       const struct vmact_resources *last)
{
	struct ag_agent_request r;

	memset(&r, 0, sizeof(r));
	strcpy(r.pod_namespace, "default");
	snprintf(r.pod_name, sizeof(r.pod_name), "%s", name);
	r.has_compute_unit = true;
	r.compute_unit = (struct vmact_resources){ 1000, 4 * GiB };
	r.resources = res;
	if (last) {
		r.has_last_permit = true;
		r.last_permit = *last;
	}
	r.has_metrics = true;
	r.metrics = (struct ag_plugin_metrics){ 0.37f, 0.25f, 1e8f };
	return r;
}

static void run(struct fx *f, struct ag_plugin_client *pc, const struct ag_agent_request *r,
		const struct vmact_resources *current, struct outcome *o)
{
	struct vmact_err err = { 0 };

	memset(o, 0, sizeof(*o));
	if (ag_plugin_client_request(pc, r, current, on_result, o, &err) < 0)
		fail_msg("request: %s", err.msg);
	assert_true(TH_WAIT(f->ev, o->done, TH_SAFETY_USEC));
}

/* ---- against the arbiter ---------------------------------------------- */

static void test_arbiter_grants(void **state)
{
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct outcome o;
	struct ag_agent_request r;
	struct vmact_resources one = { 1000, 4 * GiB };

	start_arbiter(f,
		      (struct ag_arbiter_config){ .capacity = { 4000, 16 * GiB }, .watermark = 1 });
	pc = client(f, ag_arbiter_port(f->arb), 0, 0, 0);
	r = request("vm-a", one, NULL);
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.status, 200);
	assert_int_equal(o.version, AG_PLUGIN_V5_0);
	assert_int_equal(o.resp.permit.milli_cpu, 1000);
	/* Upscale beyond the node: partial, in whole units. */
	r = request("vm-a", (struct vmact_resources){ 6000, 24 * GiB }, &one);
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.resp.permit.milli_cpu, 4000);
	assert_int_equal(o.resp.permit.mem_bytes, 16 * GiB);
	assert_int_equal(f->version_changes, 0);
	ag_plugin_client_free(pc);
}

/* Pods that stop asking are forgotten on the loop's expiry timer. */
static void test_arbiter_expires_silent_pods(void **state)
{
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct outcome o;
	struct vmact_resources one = { 1000, 4 * GiB };
	struct ag_agent_request r = request("vm-gone", one, NULL);
	struct ag_arbiter_totals t;

	start_arbiter(f, (struct ag_arbiter_config){ .capacity = { 4000, 16 * GiB },
						     .pod_ttl_usec = 200000 });
	pc = client(f, ag_arbiter_port(f->arb), 0, 0, 0);
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, 0);
	ag_arbiter_totals(f->arb, &t);
	assert_int_equal(t.pods, 1);
	TH_WAIT(f->ev, (ag_arbiter_totals(f->arb, &t), t.pods == 0), TH_SAFETY_USEC);
	assert_int_equal(t.pods, 0);
	assert_int_equal(t.reserved.milli_cpu, 0);
	ag_plugin_client_free(pc);
}

static void test_every_version_against_arbiter(void **state)
{
	struct fx *f = *state;

	start_arbiter(f, (struct ag_arbiter_config){ .capacity = { 16000, 64 * GiB },
						     .slot_bytes = GiB,
						     .watermark = 1 });
	for (int v = AG_PLUGIN_V1_0; v <= AG_PLUGIN_V5_0; v++) {
		struct ag_plugin_client *pc = client(f, ag_arbiter_port(f->arb),
						     (enum ag_plugin_version)v, GiB, 0);
		struct vmact_resources cur = { 1000, 2 * GiB }, want = { 2000, 3 * GiB };
		struct ag_agent_request r;
		struct outcome o;
		char name[16];

		snprintf(name, sizeof(name), "vm-v%d", v);
		r = request(name, cur, NULL);
		run(f, pc, &r, &cur, &o);
		if (o.error)
			fail_msg("v%s first: %s", ag_plugin_version_format(v), o.message);
		assert_int_equal(o.version, v);
		r = request(name, want, &cur);
		run(f, pc, &r, &cur, &o);
		if (o.error)
			fail_msg("v%s upscale: %s", ag_plugin_version_format(v), o.message);
		assert_int_equal(o.resp.permit.milli_cpu, 2000);
		assert_int_equal(o.resp.permit.mem_bytes, 3 * GiB);
		assert_int_equal(o.resp.has_resource_unit, v < AG_PLUGIN_V3_0);
		ag_plugin_client_free(pc);
	}
	assert_int_equal(f->version_changes, 0);
}

static void test_negotiates_down_and_remembers(void **state)
{
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct outcome o;
	struct vmact_resources one = { 1000, 4 * GiB };
	struct ag_agent_request r = request("vm-b", one, NULL);

	start_arbiter(f, (struct ag_arbiter_config){ .capacity = { 4000, 16 * GiB },
						     .max_version = AG_PLUGIN_V4_0 });
	pc = client(f, ag_arbiter_port(f->arb), 0, 0, 0);
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.version, AG_PLUGIN_V4_0);
	assert_int_equal(f->version_changes, 1);
	assert_int_equal(f->changed_from, AG_PLUGIN_V5_0);
	assert_int_equal(f->changed_to, AG_PLUGIN_V4_0);
	assert_true(ag_plugin_client_version_switched(pc));
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.version, AG_PLUGIN_V4_0);
	assert_int_equal(f->version_changes, 1); /* told once */
	ag_plugin_client_free(pc);
}

static void test_negotiates_up(void **state)
{
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct outcome o;
	struct vmact_resources one = { 1000, 4 * GiB };
	struct ag_agent_request r = request("vm-c", one, NULL);

	/* No slot size on the arbiter: it wants 4.0..5.0; a 3.0 client goes
	 * to 4.0 (the closest). */
	start_arbiter(f, (struct ag_arbiter_config){ .capacity = { 4000, 16 * GiB } });
	pc = client(f, ag_arbiter_port(f->arb), AG_PLUGIN_V3_0, GiB, 0);
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.version, AG_PLUGIN_V4_0);
	assert_int_equal(f->changed_from, AG_PLUGIN_V3_0);
	ag_plugin_client_free(pc);
}

static void test_negotiation_impossible(void **state)
{
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct outcome o;
	struct vmact_resources one = { 1000, 4 * GiB };
	struct ag_agent_request r = request("vm-d", one, NULL);

	/* The plugin only speaks slot versions; the client has no slot
	 * size: a failure naming the cause, not a crash or a guess. */
	start_arbiter(f, (struct ag_arbiter_config){ .capacity = { 4000, 16 * GiB },
						     .slot_bytes = GiB,
						     .min_version = AG_PLUGIN_V2_0,
						     .max_version = AG_PLUGIN_V3_0 });
	pc = client(f, ag_arbiter_port(f->arb), 0, 0, 0);
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, -EINVAL);
	assert_non_null(strstr(o.message, "plugin wants protocol 3.0"));
	assert_non_null(strstr(o.message, "slot size required"));
	ag_plugin_client_free(pc);
}

static void test_body_limit(void **state)
{
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct vmact_resources one = { 1000, 4 * GiB };
	struct ag_agent_request r = request("x", one, NULL);
	struct vmact_err err = { 0 };
	struct outcome o = { 0 };

	start_arbiter(f, (struct ag_arbiter_config){ .capacity = { 4000, 16 * GiB } });
	pc = client(f, ag_arbiter_port(f->arb), 0, 0, 0);
	/* A long name that still fits: sent and answered. */
	memset(r.pod_name, 'p', 700);
	r.pod_name[700] = '\0';
	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, 0);
	/* One that would push the body to 1 KiB: refused before sending. */
	memset(r.pod_name, 'p', 900);
	r.pod_name[900] = '\0';
	memset(&o, 0, sizeof(o));
	assert_int_equal(ag_plugin_client_request(pc, &r, &one, on_result, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "the plugin reads at most 1023"));
	assert_non_null(strstr(err.msg, "shorten the pod name"));
	th_run_for(f->ev, 50000);
	assert_false(o.done);
	ag_plugin_client_free(pc);
}

/* ---- against the Node peer that plays HEAD ---------------------------- */

static void test_head_peer_negotiation_and_wait(void **state)
{
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct outcome o;
	struct vmact_resources one = { 1000, 4 * GiB };
	struct ag_agent_request r = request("vm-head", one, NULL);

	start_node(f);
	pc = client(f, f->node.port, AG_PLUGIN_V4_0, 0, 0);
	run(f, pc, &r, &one, &o);
	if (o.error)
		fail_msg("%s", o.message);
	assert_int_equal(o.version, AG_PLUGIN_V5_0);
	assert_int_equal(f->version_changes, 1);
	assert_int_equal(f->changed_to, AG_PLUGIN_V5_0);
	assert_int_equal(o.resp.permit.milli_cpu, 1000);
	assert_false(o.resp.migrate);
	/* Upscale past the peer's 4-CPU node: partial, whole units. */
	r = request("vm-head", (struct vmact_resources){ 6000, 24 * GiB }, &one);
	run(f, pc, &r, &one, &o);
	if (o.error)
		fail_msg("%s", o.message);
	assert_int_equal(o.resp.permit.milli_cpu, 4000);
	assert_int_equal(o.resp.permit.mem_bytes, 16 * GiB);
	/* Decrease: fast path echo. */
	r = request("vm-head", (struct vmact_resources){ 2000, 8 * GiB },
		    &(struct vmact_resources){ 4000, 16 * GiB });
	run(f, pc, &r, &(struct vmact_resources){ 2000, 8 * GiB }, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.resp.permit.milli_cpu, 2000);
	ag_plugin_client_free(pc);
}

static void test_head_peer_failures(void **state)
{
	static const struct {
		const char *pod;
		int error;
		long status;
		const char *needle;
	} t[] = {
		{ "missing", -EREMOTEIO, 404, "plugin answered status 404: pod not found" },
		{ "nonode", -EREMOTEIO, 404, "pod's node is unknown" },
		{ "novm", -EREMOTEIO, 400, "pod is not associated with a VM" },
		{ "patchfail", -EREMOTEIO, 500, "failed to patch VM object" },
		{ "stuck", -EREMOTEIO, 500, "timed out waiting for updates to be processed" },
		{ "garbage", -EBADMSG, 200, "not JSON" },
		{ "liar", -ERANGE, 200, "is above the requested" },
		{ "hangup", -ECONNRESET, 0, "plugin request failed" },
		{ "silent", -ETIMEDOUT, 0, "plugin request failed" },
	};
	struct fx *f = *state;
	struct ag_plugin_client *pc;
	struct vmact_resources one = { 1000, 4 * GiB };

	start_node(f);
	/* A short timeout so "silent" ends quickly; "stuck" answers at 1 s. */
	pc = client(f, f->node.port, 0, 0, 3 * 1000000ULL);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ag_agent_request r = request(t[i].pod, one, NULL);
		struct outcome o;

		run(f, pc, &r, &one, &o);
		if (o.error != t[i].error || o.status != t[i].status ||
		    !strstr(o.message, t[i].needle))
			fail_msg("pod %s: got %d/%ld \"%s\"", t[i].pod, o.error, o.status,
				 o.message);
	}
	/* And the client still works afterwards. */
	{
		struct ag_agent_request r = request("after", one, &one);
		struct outcome o;

		run(f, pc, &r, &one, &o);
		assert_int_equal(o.error, 0);
	}
	ag_plugin_client_free(pc);
}

/* ---- raw misbehaving peers -------------------------------------------- */

struct raw_peer {
	int lfd;
	const char *reply;
	sd_event_source *src;
};

static int raw_accept(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct raw_peer *p = ud;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	char buf[2048];

	if (c < 0)
		return 0;
	/* Read what already arrived (never block: the client shares this
	 * loop), answer with junk, hang up. */
	(void)!read(c, buf, sizeof(buf));
	(void)!write(c, p->reply, strlen(p->reply));
	close(c);
	return 0;
}

static void test_raw_garbage_peers(void **state)
{
	static const char *replies[] = {
		"\x01\x02\x03 this is not HTTP at all\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"permit\":",
		"",
	};
	struct fx *f = *state;
	struct vmact_resources one = { 1000, 4 * GiB };

	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
		struct raw_peer p = { .reply = replies[i] };
		unsigned port;
		struct ag_plugin_client *pc;
		struct ag_agent_request r = request("raw", one, NULL);
		struct outcome o;

		p.lfd = th_silent_listener(&port);
		assert_true(p.lfd >= 0);
		assert_int_equal(sd_event_add_io(f->ev, &p.src, p.lfd, EPOLLIN, raw_accept, &p), 0);
		pc = client(f, port, 0, 0, 5 * 1000000ULL);
		run(f, pc, &r, &one, &o);
		assert_true(o.error < 0);
		assert_true(o.error != -ETIMEDOUT);
		assert_non_null(strstr(o.message, "plugin request failed"));
		ag_plugin_client_free(pc);
		sd_event_source_disable_unref(p.src);
		close(p.lfd);
	}
}

/* ---- what the client sends at each version ----------------------------- */

/* A peer that keeps the body of the request it gets and grants what was
 * asked: a bare HTTP reader, so the bytes checked are the client's own. */
struct capture {
	int lfd;
	sd_event_source *src, *conn;
	char buf[4096];
	size_t len;
	json_t *body;
};

static int capture_read(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct capture *c = ud;
	ssize_t n = read(fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	const char *end, *cl;
	char reply[2048];
	char *permit;
	size_t want, head;

	(void)s;
	(void)revents;
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n > 0) {
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
		end = strstr(c->buf, "\r\n\r\n");
		cl = strcasestr(c->buf, "content-length:");
		if (!end || !cl)
			return 0;
		want = strtoul(cl + strlen("content-length:"), NULL, 10);
		head = (size_t)(end + 4 - c->buf);
		if (c->len < head + want)
			return 0;
		json_decref(c->body);
		c->body = json_loadb(end + 4, want, 0, NULL);
		permit = c->body ? json_dumps(json_object_get(c->body, "resources"), JSON_COMPACT)
				 : NULL;
		snprintf(reply, sizeof(reply),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n{\"permit\":%s}",
			 strlen("{\"permit\":}") + strlen(permit ? permit : "null"),
			 permit ? permit : "null");
		free(permit);
		(void)!write(fd, reply, strlen(reply));
	}
	c->conn = sd_event_source_disable_unref(c->conn);
	close(fd);
	return 0;
}

static int capture_accept(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct capture *c = ud;
	int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	(void)s;
	(void)revents;
	if (cfd < 0)
		return 0;
	if (c->conn) {
		close(cfd);
		return 0;
	}
	c->len = 0;
	if (sd_event_add_io(sd_event_source_get_event(s), &c->conn, cfd, EPOLLIN, capture_read, c) <
	    0)
		close(cfd);
	return 0;
}

/* Whether obj's keys are exactly the strings of keys. */
static bool keys_are(const json_t *obj, const json_t *keys)
{
	size_t i;
	const json_t *k;

	if (!json_is_object(obj) || json_object_size(obj) != json_array_size(keys))
		return false;
	json_array_foreach(keys, i, k) {
		if (!json_object_get(obj, json_string_value(k)))
			return false;
	}
	return true;
}

/* At each version the client sends the keys that version's era of
 * plugins decoded (tests/conformance/agent-eras.json, agent_request_keys;
 * doc/protocols.md, "What each era's agents sent"), over the wire. */
static void test_sends_each_eras_keys(void **state)
{
	struct fx *f = *state;
	struct capture c = { 0 };
	json_error_t jerr;
	json_t *doc = json_load_file("tests/conformance/agent-eras.json", 0, &jerr), *kase;
	unsigned port, checked = 0;
	size_t i;

	if (!doc)
		fail_msg("tests/conformance/agent-eras.json: %s (run from the source tree top)",
			 jerr.text);
	c.lfd = th_silent_listener(&port);
	assert_true(c.lfd >= 0);
	assert_int_equal(sd_event_add_io(f->ev, &c.src, c.lfd, EPOLLIN, capture_accept, &c), 0);
	json_array_foreach(json_object_get(doc, "cases"), i, kase) {
		const json_t *want = json_object_get(kase, "out");
		const char *vs = json_string_value(
			json_object_get(json_object_get(kase, "in"), "version"));
		struct vmact_resources cur = { 1000, 4 * GiB };
		struct ag_agent_request r = request("era", cur, &cur);
		enum ag_plugin_version v;
		struct ag_plugin_client *pc;
		struct outcome o;
		struct vmact_err err = { 0 };

		if (strcmp(json_string_value(json_object_get(kase, "kind")), "agent_request_keys"))
			continue;
		assert_int_equal(ag_plugin_version_parse(vs, &v, &err), 0);
		pc = client(f, port, v, GiB, 0);
		run(f, pc, &r, &cur, &o);
		if (o.error)
			fail_msg("v%s: %s", vs, o.message);
		assert_non_null(c.body);
		if (!keys_are(c.body, json_object_get(want, "request")) ||
		    !keys_are(json_object_get(c.body, "metrics"),
			      json_object_get(want, "metrics")) ||
		    !keys_are(json_object_get(c.body, "resources"),
			      json_object_get(want, "resources"))) {
			char *got = json_dumps(c.body, JSON_COMPACT | JSON_SORT_KEYS);

			fail_msg("v%s sent %s\n  its era decoded %s", vs, got,
				 json_dumps(want, JSON_COMPACT));
		}
		ag_plugin_client_free(pc);
		checked++;
	}
	assert_int_equal(checked, 7); /* every version */
	json_decref(c.body);
	json_decref(doc);
	sd_event_source_disable_unref(c.conn);
	sd_event_source_disable_unref(c.src);
	close(c.lfd);
}

static void test_refused_and_cancel(void **state)
{
	struct fx *f = *state;
	struct vmact_resources one = { 1000, 4 * GiB };
	struct ag_agent_request r = request("vm", one, NULL);
	struct ag_plugin_client *pc = client(f, th_dead_port(), 0, 0, 0);
	struct outcome o;
	struct vmact_err err = { 0 };
	unsigned port;
	int lfd;

	run(f, pc, &r, &one, &o);
	assert_int_equal(o.error, -ECONNREFUSED);
	ag_plugin_client_free(pc);
	/* Freeing with a request in flight: no callback, no leak. */
	lfd = th_silent_listener(&port);
	pc = client(f, port, 0, 0, 0);
	memset(&o, 0, sizeof(o));
	assert_int_equal(ag_plugin_client_request(pc, &r, &one, on_result, &o, &err), 0);
	th_run_for(f->ev, 100000);
	ag_plugin_client_free(pc);
	th_run_for(f->ev, 100000);
	assert_false(o.done);
	close(lfd);
}

static void test_mismatch_parser(void **state)
{
	enum ag_plugin_version w;
	const char *head = "protocol version mismatch: need v5.0 but got v4.0\n";
	const char *legacy = "Protocol version mismatch: Need v3.0 to v5.0 but got v2.0";

	assert_int_equal(ag_plugin_parse_mismatch(head, strlen(head), AG_PLUGIN_V4_0, &w), 0);
	assert_int_equal(w, AG_PLUGIN_V5_0);
	assert_int_equal(ag_plugin_parse_mismatch(legacy, strlen(legacy), AG_PLUGIN_V2_0, &w), 0);
	assert_int_equal(w, AG_PLUGIN_V3_0);
	assert_int_equal(ag_plugin_parse_mismatch(legacy, strlen(legacy), 8, &w), 0);
	assert_int_equal(w, AG_PLUGIN_V5_0);
	assert_int_equal(ag_plugin_parse_mismatch("pod not found", 13, AG_PLUGIN_V5_0, &w),
			 -ENOENT);
	assert_int_equal(ag_plugin_parse_mismatch(head, 30, AG_PLUGIN_V5_0, &w), -ENOENT);
	assert_int_equal(
		ag_plugin_parse_mismatch("protocol version mismatch: need v9.0 but got v4.0", 50,
					 AG_PLUGIN_V4_0, &w),
		-ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_arbiter_grants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arbiter_expires_silent_pods, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_version_against_arbiter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_negotiates_down_and_remembers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_negotiates_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negotiation_impossible, setup, teardown),
		cmocka_unit_test_setup_teardown(test_body_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_peer_negotiation_and_wait, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_head_peer_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_garbage_peers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_and_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sends_each_eras_keys, setup, teardown),
		cmocka_unit_test(test_mismatch_parser),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("test_plugin_client", tests, NULL, NULL);
}
