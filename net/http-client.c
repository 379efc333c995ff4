/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl multi driven by sd-event: curl tells us which sockets to watch
 * (socket callback) and when to wake it (timer callback); sd-event tells
 * curl what happened (curl_multi_socket_action). Completed transfers are
 * collected after every action, outside any curl callback, so completion
 * callbacks may start or cancel other calls. */
#include "net/http-client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>

#include "base/buf.h"
#include "base/list.h"
#include "base/macro.h"
#include "base/time.h"

struct net_http_call {
	struct net_http_client *client;
	VMACT_LIST_FIELDS(struct net_http_call, calls);
	CURL *easy;
	struct curl_slist *headers;
	net_http_done_fn *cb;
	void *userdata;
	struct vmact_buf body; /* its max: the request's max_response */
	char errbuf[CURL_ERROR_SIZE];
	struct vmact_err connect_err; /* the client's connect_fn failed */
};

struct net_http_client {
	sd_event *ev;
	CURLM *multi;
	sd_event_source *timer;
	struct net_http_call *calls;
	size_t ncalls;
	net_http_connect_fn *connect_fn;
	void *connect_ud;
};

static void call_unlink(struct net_http_call *call)
{
	struct net_http_client *c = call->client;

	VMACT_LIST_REMOVE(calls, c->calls, call);
	c->ncalls--;
}

static void call_free(struct net_http_call *call)
{
	if (call->easy) {
		curl_multi_remove_handle(call->client->multi, call->easy);
		curl_easy_cleanup(call->easy);
	}
	curl_slist_free_all(call->headers);
	vmact_buf_free(&call->body);
	free(call);
}

static int map_curl_error(CURLcode rc, const struct net_http_call *call)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return EHOSTUNREACH;
	case CURLE_WRITE_ERROR:
		return call->body.too_big ? EFBIG : EIO;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return ECONNRESET;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return EPROTO;
	case CURLE_URL_MALFORMAT:
		return EINVAL;
	case CURLE_OUT_OF_MEMORY:
		return ENOMEM;
	default:
		return EIO;
	}
}

static void finish(struct net_http_client *c, CURL *easy, CURLcode rc)
{
	struct net_http_call *call = NULL;
	struct vmact_err err = { 0 };

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&call);
	if (!call)
		return;
	call_unlink(call);
	if (rc == CURLE_OK) {
		struct net_http_response resp = { 0 };
		const char *ct = NULL;

		curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp.status);
		curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &ct);
		resp.content_type = ct ? ct : "";
		resp.body = call->body.data ? call->body.data : "";
		resp.body_len = call->body.len;
		call->cb(call->userdata, 0, &resp, NULL);
	} else {
		int code = map_curl_error(rc, call);
		const char *detail = call->errbuf[0] ? call->errbuf : curl_easy_strerror(rc);
		char *url = NULL;

		curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &url);
		if (call->connect_err.code)
			vmact_err_set(&err, call->connect_err.code, "%s: %s", url ? url : "?",
				      call->connect_err.msg);
		else if (code == EFBIG)
			vmact_err_set(&err, code, "%s: response body exceeds %zu bytes",
				      url ? url : "?", call->body.max);
		else
			vmact_err_set(&err, code, "%s: %s", url ? url : "?", detail);
		call->cb(call->userdata, -err.code, NULL, &err);
	}
	call_free(call);
}

static void collect_done(struct net_http_client *c)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(c->multi, &left))) {
		if (msg->msg == CURLMSG_DONE)
			finish(c, msg->easy_handle, msg->data.result);
	}
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct net_http_client *c = userdata;
	int flags = 0, running;

	if (revents & EPOLLIN)
		flags |= CURL_CSELECT_IN;
	if (revents & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & (EPOLLERR | EPOLLHUP))
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(c->multi, fd, flags, &running);
	collect_done(c);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct net_http_client *c = userdata;
	int running;

	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	collect_done(c);
	return 0;
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct net_http_client *c = userp;
	sd_event_source *src = socketp;
	uint32_t events = 0;

	if (what == CURL_POLL_REMOVE) {
		if (src) {
			sd_event_source_disable_unref(src);
			curl_multi_assign(c->multi, fd, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		events |= EPOLLOUT;
	if (!src) {
		if (sd_event_add_io(c->ev, &src, fd, events, on_io, c) < 0)
			return -1;
		curl_multi_assign(c->multi, fd, src);
		return 0;
	}
	if (sd_event_source_set_io_events(src, events) < 0)
		return -1;
	return sd_event_source_set_enabled(src, SD_EVENT_ON) < 0 ? -1 : 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct net_http_client *c = userp;
	uint64_t now;

	if (timeout_ms < 0)
		return c->timer ? (sd_event_source_set_enabled(c->timer, SD_EVENT_OFF) < 0 ? -1 : 0)
				: 0;
	now = vmact_loop_now_usec(c->ev) + (uint64_t)timeout_ms * 1000;
	if (!c->timer)
		return sd_event_add_time(c->ev, &c->timer, CLOCK_MONOTONIC, now,
					 VMACT_TIMER_ACCURACY_USEC, on_timer, c) < 0
			       ? -1
			       : 0;
	if (sd_event_source_set_time(c->timer, now) < 0)
		return -1;
	return sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT) < 0 ? -1 : 0;
}

/* The connection comes from the client's connect_fn: curl neither
 * creates nor connects a socket (CURLOPT_OPENSOCKETFUNCTION and
 * CURLOPT_SOCKOPTFUNCTION). A socket still connecting is fine: curl's
 * first send waits for it to be writable and reports its error. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct net_http_call *call = clientp;
	struct net_http_client *c = call->client;
	char *url = NULL;
	int fd;

	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	curl_easy_getinfo(call->easy, CURLINFO_EFFECTIVE_URL, &url);
	fd = c->connect_fn(c->connect_ud, url ? url : "", &call->connect_err);
	if (fd < 0) {
		if (!call->connect_err.code)
			vmact_err_set(&call->connect_err, -fd, "%s", strerror(-fd));
		return CURL_SOCKET_BAD;
	}
	return fd;
}

static int socket_ready(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
	return CURL_SOCKOPT_ALREADY_CONNECTED;
}

void net_http_client_set_connect(struct net_http_client *c, net_http_connect_fn *fn, void *userdata)
{
	c->connect_fn = fn;
	c->connect_ud = userdata;
}

int net_http_client_new(sd_event *ev, struct net_http_client **out, struct vmact_err *err)
{
	_cleanup_free_ struct net_http_client *c = NULL;

	if (!ev || !out)
		return vmact_err_set(err, EINVAL, "http client: event loop and output required");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return vmact_err_set(err, ENOMEM, "http client: libcurl initialisation failed");
	c = calloc(1, sizeof(*c));
	if (!c) {
		curl_global_cleanup();
		return vmact_err_set(err, ENOMEM, "http client: out of memory");
	}
	c->multi = curl_multi_init();
	if (!c->multi) {
		curl_global_cleanup();
		return vmact_err_set(err, ENOMEM, "http client: curl_multi_init failed");
	}
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	c->ev = sd_event_ref(ev);
	*out = TAKE_PTR(c);
	return 0;
}

void net_http_client_free(struct net_http_client *c)
{
	if (!c)
		return;
	while (c->calls) {
		struct net_http_call *call = c->calls;

		call_unlink(call);
		call_free(call);
	}
	/* Closing cached connections still goes through socket_cb, so the
	 * client must stay intact until the multi handle is gone. */
	curl_multi_cleanup(c->multi);
	sd_event_source_disable_unref(c->timer);
	sd_event_unref(c->ev);
	free(c);
	curl_global_cleanup();
}

size_t net_http_client_pending(const struct net_http_client *c)
{
	return c ? c->ncalls : 0;
}

int net_http_client_start(struct net_http_client *c, const struct net_http_request *req,
			  net_http_done_fn *cb, void *userdata, struct net_http_call **callp,
			  struct vmact_err *err)
{
	struct net_http_call *call;
	bool has_body;
	CURL *e;

	if (!c || !req || !req->url || !req->method || !cb)
		return vmact_err_set(err, EINVAL, "http client: url, method and callback required");
	if (req->body_len && !req->body)
		return vmact_err_set(err, EINVAL, "http client: body length without body");
	if (strcmp(req->method, "GET") && strcmp(req->method, "POST") &&
	    strcmp(req->method, "PUT") && strcmp(req->method, "DELETE"))
		return vmact_err_set(err, EINVAL, "http client: unsupported method %s",
				     req->method);
	if (strncasecmp(req->url, "http://", 7) && strncasecmp(req->url, "https://", 8))
		return vmact_err_set(err, EINVAL, "http client: %s: only http and https URLs",
				     req->url);
	call = calloc(1, sizeof(*call));
	if (!call)
		return vmact_err_set(err, ENOMEM, "http client: out of memory");
	call->client = c;
	call->cb = cb;
	call->userdata = userdata;
	call->body.max = req->max_response ? req->max_response : NET_HTTP_DEFAULT_MAX_RESPONSE;
	call->easy = e = curl_easy_init();
	if (!e)
		goto oom;

	has_body = req->body || strcmp(req->method, "GET");
	/* curl would add "Expect: 100-continue" to larger bodies and wait for
	 * a reply most servers never send. */
	call->headers = curl_slist_append(NULL, "Expect:");
	if (!call->headers)
		goto oom;
	if (!req->content_type && has_body) {
		/* Otherwise curl labels every body as a form. */
		struct curl_slist *l = curl_slist_append(call->headers, "Content-Type:");

		if (!l)
			goto oom;
		call->headers = l;
	} else if (req->content_type) {
		char line[256];
		struct curl_slist *l;

		if ((size_t)snprintf(line, sizeof(line), "Content-Type: %s", req->content_type) >=
		    sizeof(line)) {
			call_free(call);
			return vmact_err_set(err, EINVAL, "http client: content type too long");
		}
		l = curl_slist_append(call->headers, line);
		if (!l)
			goto oom;
		call->headers = l;
	}

	if (curl_easy_setopt(e, CURLOPT_URL, req->url) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK) {
		call_free(call);
		return vmact_err_set(err, EINVAL, "http client: bad url %s", req->url);
	}
	if (req->unix_socket &&
	    curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket) != CURLE_OK)
		goto oom;
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PRIVATE, call);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, vmact_buf_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &call->body);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, call->headers);
	if (c->connect_fn) {
		curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
		curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, call);
		curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, socket_ready);
	}
	if (req->timeout_usec)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)((req->timeout_usec + 999) / 1000));
	if (strcmp(req->method, "GET") == 0) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else {
		if (strcmp(req->method, "POST") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
		if (has_body) {
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
			if (curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS,
					     req->body ? (const char *)req->body : "") != CURLE_OK)
				goto oom;
		}
	}

	if (curl_multi_add_handle(c->multi, e) != CURLM_OK)
		goto oom;
	VMACT_LIST_PREPEND(calls, c->calls, call);
	c->ncalls++;
	if (callp)
		*callp = call;
	return 0;
oom:
	call_free(call);
	return vmact_err_set(err, ENOMEM, "http client: out of memory setting up request");
}

void net_http_call_cancel(struct net_http_call *call)
{
	if (!call)
		return;
	call_unlink(call);
	call_free(call);
}
