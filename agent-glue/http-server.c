/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/http-server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/endpoint.h"
#include "base/macro.h"
#include "agent-glue/bodybuf.h"
#include "base/time.h"

/* One per connection: the whole-request deadline lives here because MHD's
 * own timeout only measures inactivity, which a slow trickle resets. */
struct conn_track {
	struct conn_track *prev, *next;
	int fd;
	uint64_t started;
	bool cut;
};

/* One per request: the body being accumulated. */
struct req_state {
	struct ag_bodybuf body;
	bool too_big;
	bool replied;
};

struct ag_http_server {
	sd_event *ev;
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer, *sweep;
	ag_http_handler_fn *handler;
	void *userdata;
	size_t max_body;
	unsigned too_large_status;
	char *too_large_body;
	uint64_t request_timeout;
	unsigned port;
	unsigned nconns;
	struct conn_track *conns;
	char *unix_path;
};

int ag_http_reply_text(struct ag_http_server_reply *reply, unsigned status,
		       const char *content_type, const char *text)
{
	size_t n = strlen(text);

	free(reply->body);
	reply->body = malloc(n + 1);
	if (!reply->body) {
		reply->status = 500;
		reply->body_len = 0;
		reply->content_type = NULL;
		return -ENOMEM;
	}
	memcpy(reply->body, text, n + 1);
	reply->body_len = n;
	reply->status = status;
	reply->content_type = content_type;
	return 0;
}

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status, const char *ctype,
			     char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (body)
		r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype ? ctype : "text/plain");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result queue_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
	char *copy = strdup(text);

	if (!copy)
		return MHD_NO;
	return queue(conn, status, "text/plain", copy, strlen(copy));
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct ag_http_server *s = cls;
	struct req_state *rs = *con_cls;

	if (!rs) {
		const char *cl;

		rs = calloc(1, sizeof(*rs));
		if (!rs)
			return MHD_NO;
		*con_cls = rs;
		/* A declared oversized body is refused before it is read: MHD
		 * then closes the connection instead of draining it. */
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl) {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(cl, &end, 10);
			if (errno || *end || v > s->max_body) {
				rs->replied = true;
				return queue_text(conn, s->too_large_status, s->too_large_body);
			}
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (rs->too_big || rs->replied)
			return MHD_YES;
		if (n > s->max_body - rs->body.len) {
			/* Chunked body past the limit: drain it (bounded by the
			 * request deadline) and answer at the end. */
			rs->too_big = true;
			ag_bodybuf_clear(&rs->body);
			return MHD_YES;
		}
		if (ag_bodybuf_append(&rs->body, upload_data, n) < 0)
			return MHD_NO;
		return MHD_YES;
	}
	if (rs->replied)
		return MHD_YES;
	rs->replied = true;
	if (rs->too_big)
		return queue_text(conn, s->too_large_status, s->too_large_body);

	{
		struct ag_http_server_request req = {
			.method = method,
			.url = url,
			.body = rs->body.data ? rs->body.data : "",
			.body_len = rs->body.len,
		};
		struct ag_http_server_reply reply = { 0 };
		const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_TYPE);

		req.content_type = ct ? ct : "";
		s->handler(s->userdata, &req, &reply);
		if (reply.status < 100 || reply.status > 599) {
			free(reply.body);
			return queue_text(conn, 500, "internal error");
		}
		return queue(conn, reply.status, reply.content_type, reply.body, reply.body_len);
	}
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req_state *rs = *con_cls;
	const union MHD_ConnectionInfo *ci;

	if (rs) {
		ag_bodybuf_clear(&rs->body);
		free(rs);
		*con_cls = NULL;
	}
	/* A keep-alive connection starts its next request now. */
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context) {
		struct conn_track *t = ci->socket_context;

		t->started = vmact_loop_now_usec(((struct ag_http_server *)cls)->ev);
	}
}

static int sweep_arm(struct ag_http_server *s);

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct ag_http_server *s = cls;
	struct conn_track *t = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci;

		t = calloc(1, sizeof(*t));
		if (!t)
			return; /* untracked: still bounded by the idle timeout */
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		t->fd = ci ? ci->connect_fd : -1;
		t->started = vmact_loop_now_usec(s->ev);
		t->next = s->conns;
		if (s->conns)
			s->conns->prev = t;
		s->conns = t;
		*socket_context = t;
		s->nconns++;
		sweep_arm(s);
		return;
	}
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!t)
			return;
		if (t->prev)
			t->prev->next = t->next;
		else
			s->conns = t->next;
		if (t->next)
			t->next->prev = t->prev;
		free(t);
		*socket_context = NULL;
		s->nconns--;
	}
}

static void rearm(struct ag_http_server *s)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (MHD_get_timeout(s->mhd, &ms) == MHD_YES) {
		sd_event_source_set_time(s->timer, vmact_loop_now_usec(s->ev) + (uint64_t)ms * 1000);
		sd_event_source_set_enabled(s->timer, SD_EVENT_ONESHOT);
	} else {
		sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
	}
}

static int on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct ag_http_server *s = userdata;

	MHD_run(s->mhd);
	rearm(s);
	return 0;
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct ag_http_server *s = userdata;

	MHD_run(s->mhd);
	rearm(s);
	return 0;
}

/* Shuts down connections past their request deadline; MHD sees the
 * socket fail on its next pass and releases the connection. */
static int on_sweep(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct ag_http_server *s = userdata;
	uint64_t now = vmact_loop_now_usec(s->ev);

	for (struct conn_track *t = s->conns; t; t = t->next) {
		if (!t->cut && t->fd >= 0 && now - t->started >= s->request_timeout) {
			shutdown(t->fd, SHUT_RDWR);
			t->cut = true;
		}
	}
	MHD_run(s->mhd);
	rearm(s);
	sweep_arm(s);
	return 0;
}

static int sweep_arm(struct ag_http_server *s)
{
	uint64_t next = UINT64_MAX;

	for (struct conn_track *t = s->conns; t; t = t->next)
		if (!t->cut && t->started + s->request_timeout < next)
			next = t->started + s->request_timeout;
	if (next == UINT64_MAX)
		return sd_event_source_set_enabled(s->sweep, SD_EVENT_OFF);
	sd_event_source_set_time(s->sweep, next);
	return sd_event_source_set_enabled(s->sweep, SD_EVENT_ONESHOT);
}

static int open_listener(struct ag_http_server *s, const char *spec, struct vmact_err *err)
{
	struct vmact_listen l;
	struct sockaddr_storage ss;
	socklen_t len;
	_cleanup_close_ int fd = -1;
	int one = 1;

	if (vmact_listen_parse(spec, true, &l, err) < 0)
		return vmact_err_prefix(err, "listen address");
	ss = l.addr;
	len = l.addr_len;
	if (l.family == AF_UNIX) {
		s->unix_path = strdup(l.path);
		if (!s->unix_path)
			return vmact_err_set(err, ENOMEM, "out of memory");
		unlink(l.path);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return vmact_err_set(err, errno, "listen %s: socket: %m", spec);
	if (ss.ss_family != AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		return vmact_err_set(err, errno, "listen %s: bind: %m", spec);
	if (listen(fd, 128) < 0)
		return vmact_err_set(err, errno, "listen %s: listen: %m", spec);
	if (ss.ss_family != AF_UNIX) {
		struct sockaddr_storage got;
		socklen_t glen = sizeof(got);

		if (getsockname(fd, (struct sockaddr *)&got, &glen) < 0)
			return vmact_err_set(err, errno, "listen %s: getsockname: %m", spec);
		s->port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
							 : ((struct sockaddr_in6 *)&got)->sin6_port);
	}
	return TAKE_FD(fd);
}

int ag_http_server_new(sd_event *ev, const struct ag_http_server_config *cfg,
		       ag_http_handler_fn *handler, void *userdata, struct ag_http_server **out,
		       struct vmact_err *err)
{
	struct ag_http_server *s;
	const union MHD_DaemonInfo *di;
	int lfd, r;

	if (!ev || !cfg || !cfg->listen || !handler || !out)
		return vmact_err_set(err, EINVAL, "http server: loop, listen address and handler required");
	s = calloc(1, sizeof(*s));
	if (!s)
		return vmact_err_set(err, ENOMEM, "http server: out of memory");
	s->ev = sd_event_ref(ev);
	s->handler = handler;
	s->userdata = userdata;
	s->max_body = cfg->max_body ? cfg->max_body : 64 * 1024;
	s->too_large_status = cfg->too_large_status ? cfg->too_large_status : 413;
	s->too_large_body = strdup(cfg->too_large_body ? cfg->too_large_body : "request body too large");
	s->request_timeout = cfg->request_timeout_usec ? cfg->request_timeout_usec : 10000000;
	if (!s->too_large_body) {
		r = vmact_err_set(err, ENOMEM, "http server: out of memory");
		goto fail;
	}

	lfd = open_listener(s, cfg->listen, err);
	if (lfd < 0) {
		r = lfd;
		goto fail;
	}
	s->mhd = MHD_start_daemon(
		MHD_USE_EPOLL, 0, NULL, NULL, on_access, s,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)(cfg->conn_limit ? cfg->conn_limit : 256),
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)(cfg->idle_timeout_sec ? cfg->idle_timeout_sec : 10),
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
		MHD_OPTION_END);
	if (!s->mhd) {
		close(lfd);
		r = vmact_err_set(err, EIO, "http server %s: libmicrohttpd failed to start", cfg->listen);
		goto fail;
	}
	di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!di) {
		r = vmact_err_set(err, EIO, "http server: no epoll fd from libmicrohttpd");
		goto fail;
	}
	r = sd_event_add_io(ev, &s->io, di->epoll_fd, EPOLLIN, on_io, s);
	if (r >= 0)
		r = sd_event_add_time(ev, &s->timer, CLOCK_MONOTONIC, 0, 0, on_timer, s);
	if (r >= 0)
		r = sd_event_add_time(ev, &s->sweep, CLOCK_MONOTONIC, 0, 0, on_sweep, s);
	if (r < 0) {
		vmact_err_set(err, -r, "http server: adding event sources: %s", strerror(-r));
		goto fail;
	}
	sd_event_source_set_enabled(s->sweep, SD_EVENT_OFF);
	rearm(s);
	*out = s;
	return 0;
fail:
	ag_http_server_free(s);
	return r;
}

void ag_http_server_free(struct ag_http_server *s)
{
	if (!s)
		return;
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	sd_event_source_disable_unref(s->io);
	sd_event_source_disable_unref(s->timer);
	sd_event_source_disable_unref(s->sweep);
	if (s->unix_path) {
		unlink(s->unix_path);
		free(s->unix_path);
	}
	free(s->too_large_body);
	sd_event_unref(s->ev);
	free(s);
}

unsigned ag_http_server_port(const struct ag_http_server *s)
{
	return s ? s->port : 0;
}

unsigned ag_http_server_connections(const struct ag_http_server *s)
{
	return s ? s->nconns : 0;
}
