/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/client/plugin-client.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/list.h"
#include "base/macro.h"

struct pending {
	struct ag_plugin_client *pc;
	VMACT_LIST_FIELDS(struct pending, pending);
	struct net_http_call *call;
	sd_event_source *defer; /* in-process: the answer's turn on the loop */
	char *body;             /* in-process: the request body */
	size_t body_len;
	struct ag_agent_request req;
	bool has_current;
	struct vmact_resources current;
	enum ag_plugin_version sent_version;
	bool renegotiated;
	ag_plugin_done_fn *cb;
	void *userdata;
};

struct ag_plugin_client {
	struct net_http_client *http;
	sd_event *ev; /* in-process transport, else NULL */
	ag_plugin_local_fn *local;
	void *local_ud;
	char *url;
	enum ag_plugin_version configured, version;
	uint64_t timeout, slot_bytes;
	ag_plugin_version_changed_fn *version_cb;
	void *version_ud;
	struct pending *pending;
};

int ag_plugin_url(const char *host, unsigned port, char *buf, size_t len)
{
	int n;

	if (!port)
		port = AG_PLUGIN_DEFAULT_PORT;
	if (strchr(host, ':') && host[0] != '[')
		n = snprintf(buf, len, "http://[%s]:%u/", host, port);
	else
		n = snprintf(buf, len, "http://%s:%u/", host, port);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static int client_new(const struct ag_plugin_client_config *cfg, struct ag_plugin_client **out,
		      struct vmact_err *err)
{
	struct ag_plugin_client *pc;
	enum ag_plugin_version v = cfg->version ? cfg->version : AG_PLUGIN_V5_0;

	if (!ag_plugin_version_valid((int)v))
		return vmact_err_set(err, EINVAL, "plugin client: invalid protocol version %d",
				     (int)v);
	if (!ag_plugin_memory_as_bytes(v) && !cfg->slot_bytes)
		return vmact_err_set(
			err, EINVAL,
			"plugin client: protocol %s counts memory slots: slot size required",
			ag_plugin_version_format((int)v));
	pc = calloc(1, sizeof(*pc));
	if (!pc || !(pc->url = strdup(cfg->url))) {
		free(pc);
		return vmact_err_set(err, ENOMEM, "plugin client: out of memory");
	}
	pc->configured = pc->version = v;
	pc->timeout = cfg->timeout_usec ? cfg->timeout_usec : AG_PLUGIN_DEFAULT_TIMEOUT_USEC;
	pc->slot_bytes = cfg->slot_bytes;
	*out = pc;
	return 0;
}

int ag_plugin_client_new(struct net_http_client *http, const struct ag_plugin_client_config *cfg,
			 struct ag_plugin_client **out, struct vmact_err *err)
{
	int r;

	if (!http || !cfg || !cfg->url || !out)
		return vmact_err_set(err, EINVAL, "plugin client: http client and url required");
	r = client_new(cfg, out, err);
	if (r >= 0)
		(*out)->http = http;
	return r;
}

int ag_plugin_client_new_local(sd_event *ev, ag_plugin_local_fn *fn, void *fn_userdata,
			       const struct ag_plugin_client_config *cfg,
			       struct ag_plugin_client **out, struct vmact_err *err)
{
	struct ag_plugin_client_config c;
	int r;

	if (!ev || !fn || !cfg || !out)
		return vmact_err_set(err, EINVAL, "plugin client: loop and local handler required");
	c = *cfg;
	if (!c.url)
		c.url = "local:";
	r = client_new(&c, out, err);
	if (r >= 0) {
		(*out)->ev = sd_event_ref(ev);
		(*out)->local = fn;
		(*out)->local_ud = fn_userdata;
	}
	return r;
}

static void pending_free(struct pending *p)
{
	net_http_call_cancel(p->call);
	sd_event_source_disable_unref(p->defer);
	free(p->body);
	free(p);
}

void ag_plugin_client_free(struct ag_plugin_client *pc)
{
	if (!pc)
		return;
	while (pc->pending) {
		struct pending *p = pc->pending;

		VMACT_LIST_REMOVE(pending, pc->pending, p);
		pending_free(p);
	}
	free(pc->url);
	sd_event_unref(pc->ev);
	free(pc);
}

void ag_plugin_client_on_version_change(struct ag_plugin_client *pc,
					ag_plugin_version_changed_fn *fn, void *userdata)
{
	pc->version_cb = fn;
	pc->version_ud = userdata;
}

enum ag_plugin_version ag_plugin_client_version(const struct ag_plugin_client *pc)
{
	return pc->version;
}

bool ag_plugin_client_version_switched(const struct ag_plugin_client *pc)
{
	return pc->version != pc->configured;
}

/* "vX.Y" at *p; advances past it. */
static int parse_v(const char **p, const char *end, enum ag_plugin_version *out)
{
	char buf[8];
	size_t n = 0;
	const char *s = *p;

	if (s >= end || *s != 'v')
		return -ENOENT;
	s++;
	while (s < end && n < sizeof(buf) - 1 && (isdigit((unsigned char)*s) || *s == '.'))
		buf[n++] = *s++;
	buf[n] = '\0';
	if (ag_plugin_version_parse(buf, out, NULL) < 0)
		return -ENOENT;
	*p = s;
	return 0;
}

int ag_plugin_parse_mismatch(const char *text, size_t len, enum ag_plugin_version have,
			     enum ag_plugin_version *want)
{
	static const char prefix[] = "protocol version mismatch: need ";
	const char *p = text, *end = text + len;
	enum ag_plugin_version lo, hi;

	while (p < end && isspace((unsigned char)*p))
		p++;
	if ((size_t)(end - p) < sizeof(prefix) - 1 || strncasecmp(p, prefix, sizeof(prefix) - 1))
		return -ENOENT;
	p += sizeof(prefix) - 1;
	if (parse_v(&p, end, &lo) < 0)
		return -ENOENT;
	hi = lo;
	if ((size_t)(end - p) > 4 && strncmp(p, " to ", 4) == 0) {
		p += 4;
		if (parse_v(&p, end, &hi) < 0 || hi < lo)
			return -ENOENT;
	}
	if ((size_t)(end - p) < 9 || strncmp(p, " but got ", 9))
		return -ENOENT;
	/* The closest version the plugin accepts. */
	*want = have > hi ? hi : lo;
	if (have >= lo && have <= hi)
		*want = have;
	return 0;
}

/* Printable, bounded copy of a peer's text for messages. */
static void sanitize(char *dst, size_t cap, const char *src, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < cap; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (n && dst[n - 1] == '\n')
		n--;
	dst[n] = '\0';
}

static int send_pending(struct pending *p, struct vmact_err *err);

static void complete(struct pending *p, int error, long status, const char *msg,
		     const struct ag_plugin_response *resp)
{
	struct ag_plugin_result res = {
		.error = error,
		.message = msg,
		.status = status,
		.version = p->sent_version,
	};

	if (resp)
		res.response = *resp;
	VMACT_LIST_REMOVE(pending, p->pc->pending, p);
	p->cb(p->userdata, &res);
	pending_free(p);
}

static void on_http_done(void *ud, int rc, const struct net_http_response *resp,
			 const struct vmact_err *herr)
{
	struct pending *p = ud;
	struct ag_plugin_client *pc = p->pc;
	char text[256], msg[2 * VMACT_ERR_MSG_MAX + 512];
	struct vmact_err err = { 0 };
	_cleanup_(json_decrefp) json_t *j = NULL;
	struct ag_plugin_response out;
	json_error_t jerr;

	p->call = NULL;
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "plugin request failed: %s",
			 herr && herr->msg[0] ? herr->msg : strerror(-rc));
		complete(p, rc, 0, msg, NULL);
		return;
	}
	if (resp->status == 400 && !p->renegotiated) {
		enum ag_plugin_version want;

		if (ag_plugin_parse_mismatch(resp->body, resp->body_len, p->sent_version, &want) ==
			    0 &&
		    want != p->sent_version) {
			enum ag_plugin_version from = pc->version;

			sanitize(text, sizeof(text), resp->body, resp->body_len);
			p->renegotiated = true;
			if (pc->version != want) {
				pc->version = want;
				if (pc->version_cb)
					pc->version_cb(pc->version_ud, from, want, text);
			}
			if (send_pending(p, &err) < 0) {
				snprintf(
					msg, sizeof(msg),
					"plugin wants protocol %s (\"%s\") but the request cannot be sent in it: %s",
					ag_plugin_version_format((int)want), text, err.msg);
				complete(p, err.code ? -err.code : -EPROTO, resp->status, msg,
					 NULL);
			}
			return;
		}
	}
	if (resp->status != 200) {
		sanitize(text, sizeof(text), resp->body, resp->body_len);
		snprintf(msg, sizeof(msg), "plugin answered status %ld: %s", resp->status,
			 text[0] ? text : "(empty body)");
		complete(p, -EREMOTEIO, resp->status, msg, NULL);
		return;
	}
	j = json_loadb(resp->body, resp->body_len, 0, &jerr);
	if (!j) {
		snprintf(msg, sizeof(msg), "plugin response is not JSON: %s", jerr.text);
		complete(p, -EBADMSG, resp->status, msg, NULL);
		return;
	}
	if (ag_plugin_response_decode(p->sent_version, j, pc->slot_bytes, &out, &err) < 0) {
		snprintf(msg, sizeof(msg), "plugin response (protocol %s): %s",
			 ag_plugin_version_format((int)p->sent_version), err.msg);
		complete(p, -EBADMSG, resp->status, msg, NULL);
		return;
	}
	if (ag_plugin_permit_validate(&out.permit, &p->req.resources,
				      p->has_current ? &p->current : NULL, &err) < 0) {
		snprintf(msg, sizeof(msg), "plugin sent an invalid permit: %s", err.msg);
		complete(p, -ERANGE, resp->status, msg, NULL);
		return;
	}
	complete(p, 0, resp->status, "ok", &out);
}

/* The in-process answer, on the loop's next turn. */
static int on_local_turn(sd_event_source *s, void *ud)
{
	struct pending *p = ud;
	struct ag_plugin_client *pc = p->pc;
	struct net_http_server_reply reply = { 0 };
	struct net_http_response resp;
	_cleanup_free_ char *body = NULL;

	p->defer = sd_event_source_disable_unref(p->defer);
	pc->local(pc->local_ud, p->body, p->body_len, &reply);
	body = reply.body;
	resp = (struct net_http_response){
		.status = reply.status ? reply.status : 500,
		.content_type = reply.content_type ? reply.content_type : "",
		.body = body ? body : "",
		.body_len = body ? reply.body_len : 0,
	};
	on_http_done(p, 0, &resp, NULL);
	return 0;
}

static int send_pending(struct pending *p, struct vmact_err *err)
{
	struct ag_plugin_client *pc = p->pc;
	_cleanup_(json_decrefp) json_t *j = NULL;
	_cleanup_free_ char *body = NULL;
	size_t len;
	struct net_http_request hr = { 0 };

	p->req.version = pc->version;
	j = ag_agent_request_encode(&p->req, pc->slot_bytes, err);
	if (!j)
		return -err->code;
	body = ag_plugin_dumps(j);
	if (!body)
		return vmact_err_set(err, ENOMEM, "out of memory");
	len = strlen(body);
	if (len >= AG_PLUGIN_MAX_BODY)
		return vmact_err_set(
			err, EMSGSIZE,
			"request body is %zu bytes but the plugin reads at most %d: shorten the "
			"pod name (%.64s/%.64s...)",
			len, AG_PLUGIN_MAX_BODY - 1, p->req.pod_namespace, p->req.pod_name);
	p->sent_version = pc->version;
	if (pc->local) {
		int r;

		free(p->body);
		p->body_len = len;
		p->body = TAKE_PTR(body);
		r = sd_event_add_defer(pc->ev, &p->defer, on_local_turn, p);
		if (r < 0)
			return vmact_err_set(err, -r, "plugin client: cannot queue the request: %s",
					     strerror(-r));
		return 0;
	}
	hr.method = "POST";
	hr.url = pc->url;
	hr.content_type = "application/json";
	hr.body = body;
	hr.body_len = len;
	hr.timeout_usec = pc->timeout;
	p->sent_version = pc->version;
	return net_http_client_start(pc->http, &hr, on_http_done, p, &p->call, err);
}

int ag_plugin_client_request(struct ag_plugin_client *pc, const struct ag_agent_request *req,
			     const struct vmact_resources *current, ag_plugin_done_fn *cb,
			     void *userdata, struct vmact_err *err)
{
	struct pending *p;
	int r;

	if (!pc || !req || !cb)
		return vmact_err_set(err, EINVAL, "plugin client: request and callback required");
	p = calloc(1, sizeof(*p));
	if (!p)
		return vmact_err_set(err, ENOMEM, "plugin client: out of memory");
	p->pc = pc;
	p->req = *req;
	if (current) {
		p->has_current = true;
		p->current = *current;
	}
	p->cb = cb;
	p->userdata = userdata;
	r = send_pending(p, err);
	if (r < 0) {
		free(p);
		return r;
	}
	VMACT_LIST_PREPEND(pending, pc->pending, p);
	return 0;
}
