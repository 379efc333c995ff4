/* SPDX-License-Identifier: Apache-2.0 */
#include "net/http-server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/buf.h"
#include "base/endpoint.h"
#include "base/list.h"
#include "base/macro.h"
#include "base/time.h"

/* Client identity for the per-client limit: the source address (an IPv4
 * address mapped into IPv6 counts as that IPv4 address), or on a unix
 * socket the peer's uid. Fixed-size and zero-filled, so memcmp() compares. */
struct client_key {
	uint32_t family;
	uint8_t id[16];
};

/* One per connection. The whole-request deadline lives here because MHD's
 * own timeout only measures inactivity, which a slow trickle resets; the
 * queues (live, cut) give the eviction order. */
struct conn_track {
	VMACT_LIST_FIELDS(struct conn_track, conns);
	struct client_key client;
	int fd;
	uint64_t started;   /* when its current request started */
	long long peer_uid; /* unix socket: SO_PEERCRED uid; -1 unknown */
	bool in_group;      /* unix socket: a member of the config's group */
	bool cut;
};

/* One per request: the body being accumulated; for a deferred request
 * also its place in the server's pending list and, once answered, the
 * reply to queue when MHD calls back after the resume. */
struct req_state {
	VMACT_LIST_FIELDS(struct req_state, pending);
	struct net_http_server *s;
	struct MHD_Connection *conn;
	struct vmact_buf body;
	bool too_big;
	bool replied;
	bool deferred, answered;
	struct net_http_server_reply reply;
};

/* Connections accepted per wakeup of the listen socket. */
#define ACCEPT_BATCH_MAX 64u
/* Pause of the listen socket after accept() ran out of descriptors or
 * memory (level-triggered, it would otherwise spin). */
#define ACCEPT_PAUSE_USEC 100000u

struct net_http_server {
	sd_event *ev;
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer, *sweep, *listen_io, *resume;
	sd_event_source *kick; /* runs MHD after a deferred reply resumed its connection */
	net_http_handler_fn *handler;
	void *userdata;
	size_t max_body;
	unsigned too_large_status;
	char *too_large_body;
	uint64_t request_timeout;
	unsigned conn_limit, per_client_limit, accept_batch;
	unsigned port;
	int listen_fd;
	bool has_group;
	gid_t group_gid;
	/* Open connections in the order their current request started, oldest
	 * first: eviction takes from the front, the sweep cuts from the front. */
	VMACT_QUEUE(struct conn_track) live;
	/* Shut down by us, not yet released by MHD; counted out of the limits. */
	VMACT_QUEUE(struct conn_track) cut;
	/* The track for the connection MHD_add_connection() is adding. */
	struct conn_track *adding;
	char *unix_path;
	bool allow_defer;
	struct req_state *pending; /* deferred requests not answered yet */
};

int net_http_reply_text(struct net_http_server_reply *reply, unsigned status,
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
	struct net_http_server *s = cls;
	struct req_state *rs = *con_cls;

	if (!rs) {
		const char *cl;

		rs = calloc(1, sizeof(*rs));
		if (!rs)
			return MHD_NO;
		rs->s = s;
		rs->conn = conn;
		rs->body.max = s->max_body;
		*con_cls = rs;
		/* A declared oversized body is refused before it is read: MHD
		 * then closes the connection instead of draining it. */
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
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
		if (!vmact_buf_append(&rs->body, upload_data, n)) {
			if (!rs->body.too_big)
				return MHD_NO; /* out of memory */
			/* Chunked body past the limit: drain it (bounded by the
			 * request deadline) and answer at the end. */
			rs->too_big = true;
			vmact_buf_free(&rs->body);
		}
		return MHD_YES;
	}
	if (rs->deferred) {
		/* Called again after net_http_pending_reply resumed it. */
		if (!rs->answered)
			return MHD_YES;
		rs->deferred = false;
		return queue(conn, rs->reply.status, rs->reply.content_type,
			     TAKE_PTR(rs->reply.body), rs->reply.body_len);
	}
	if (rs->replied)
		return MHD_YES;
	rs->replied = true;
	if (rs->too_big)
		return queue_text(conn, s->too_large_status, s->too_large_body);

	{
		struct net_http_server_request req = {
			.method = method,
			.url = url,
			.body = rs->body.data ? rs->body.data : "",
			.body_len = rs->body.len,
		};
		struct net_http_server_reply reply = { 0 };
		const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_TYPE);
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

		req.content_type = ct ? ct : "";
		req.peer_uid = ci && ci->socket_context
				       ? ((struct conn_track *)ci->socket_context)->peer_uid
				       : -1;
		req.peer_in_group = ci && ci->socket_context &&
				    ((struct conn_track *)ci->socket_context)->in_group;
		req.internal_ = rs;
		s->handler(s->userdata, &req, &reply);
		if (rs->deferred) {
			free(reply.body);
			return MHD_YES;
		}
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
	struct net_http_server *s = cls;
	struct req_state *rs = *con_cls;
	const union MHD_ConnectionInfo *ci;

	if (rs) {
		vmact_buf_free(&rs->body);
		free(rs->reply.body);
		free(rs);
		*con_cls = NULL;
	}
	/* A keep-alive connection starts its next request now: it becomes the
	 * newest, last in line for eviction and for the deadline. */
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context) {
		struct conn_track *t = ci->socket_context;

		if (t->cut)
			return;
		t->started = vmact_loop_now_usec(s->ev);
		VMACT_QUEUE_REMOVE(conns, s->live, t);
		VMACT_QUEUE_APPEND(conns, s->live, t);
	}
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct net_http_server *s = cls;
	struct conn_track *t = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		/* Only add_connection() hands MHD connections, with their track
		 * ready: every connection MHD holds is counted. */
		t = s->adding;
		s->adding = NULL;
		if (!t)
			return;
		t->started = vmact_loop_now_usec(s->ev);
		VMACT_QUEUE_APPEND(conns, s->live, t);
		*socket_context = t;
		return;
	}
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!t)
			return;
		if (t->cut)
			VMACT_QUEUE_REMOVE(conns, s->cut, t);
		else
			VMACT_QUEUE_REMOVE(conns, s->live, t);
		free(t);
		*socket_context = NULL;
	}
}

static void rearm(struct net_http_server *s)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (MHD_get_timeout(s->mhd, &ms) == MHD_YES) {
		sd_event_source_set_time(s->timer,
					 vmact_loop_now_usec(s->ev) + (uint64_t)ms * 1000);
		sd_event_source_set_enabled(s->timer, SD_EVENT_ONESHOT);
	} else {
		sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
	}
}

static int sweep_arm(struct net_http_server *s)
{
	/* The live list is in request start order: its head expires first. */
	if (!s->live.head)
		return sd_event_source_set_enabled(s->sweep, SD_EVENT_OFF);
	sd_event_source_set_time(s->sweep, s->live.head->started + s->request_timeout);
	return sd_event_source_set_enabled(s->sweep, SD_EVENT_ONESHOT);
}

/* Runs MHD (reads, answers, releases closed connections) and re-arms the
 * timers from the new state. */
static void run(struct net_http_server *s)
{
	MHD_run(s->mhd);
	rearm(s);
	sweep_arm(s);
}

static int on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	run(userdata);
	return 0;
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	run(userdata);
	return 0;
}

static int on_kick(sd_event_source *src, void *userdata)
{
	run(userdata);
	return 0;
}

/* Shuts a connection down and counts it out at once; MHD sees the socket
 * fail on its next pass and releases it (and its descriptor) then. */
static void conn_cut(struct net_http_server *s, struct conn_track *t)
{
	VMACT_QUEUE_REMOVE(conns, s->live, t);
	shutdown(t->fd, SHUT_RDWR);
	t->cut = true;
	VMACT_QUEUE_APPEND(conns, s->cut, t);
}

/* Cuts connections past their request deadline. */
static int on_sweep(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct net_http_server *s = userdata;
	uint64_t now = vmact_loop_now_usec(s->ev);

	while (s->live.head && s->live.head->started + s->request_timeout <= now)
		conn_cut(s, s->live.head);
	run(s);
	return 0;
}

static void client_key_of(int fd, const struct sockaddr_storage *ss, struct client_key *k,
			  long long *peer_uid)
{
	*peer_uid = -1;
	memset(k, 0, sizeof(*k));
	k->family = ss->ss_family;
	if (ss->ss_family == AF_INET) {
		memcpy(k->id, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			k->family = AF_INET;
			memcpy(k->id, &a->s6_addr[12], 4);
		} else {
			memcpy(k->id, a, 16);
		}
	} else if (ss->ss_family == AF_UNIX) {
		struct ucred uc;
		socklen_t len = sizeof(uc);

		/* Peers whose uid cannot be read share one (unknown) key. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0) {
			memcpy(k->id, &uc.uid, sizeof(uc.uid));
			*peer_uid = uc.uid;
		} else
			memset(k->id, 0xff, sizeof(k->id));
	}
}

/* Whether the unix socket's peer has gid among its groups when it
 * connected: its primary group, else its supplementary ones (the kernel
 * keeps both from connect(), so a later setgroups() of the peer changes
 * nothing). Unknown is false. */
static bool peer_in_group(int fd, gid_t gid)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	gid_t small[64], *groups = small;
	bool found = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return false;
	if (uc.gid == gid)
		return true;
	len = sizeof(small);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, small, &len) < 0) {
		if (errno != ERANGE || !(groups = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
			len = 0;
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		found |= groups[i] == gid;
	if (groups != small)
		free(groups);
	return found;
}

/* Room for one more connection from client k. A well-formed request is
 * always the newest one, so the oldest goes: the client's own oldest when it
 * is at its share, else the server's oldest when the server is full. */
static void make_room(struct net_http_server *s, const struct client_key *k)
{
	struct conn_track *t, *oldest = NULL;
	unsigned mine = 0;

	VMACT_LIST_FOREACH(conns, t, s->live.head) {
		if (memcmp(&t->client, k, sizeof(*k)) != 0)
			continue;
		if (!oldest)
			oldest = t;
		mine++;
	}
	if (oldest && mine >= s->per_client_limit)
		conn_cut(s, oldest);
	while (s->live.head && s->live.n >= s->conn_limit)
		conn_cut(s, s->live.head);
}

/* Hands an accepted socket to MHD (which owns it from then on). */
static void add_connection(struct net_http_server *s, int fd, struct sockaddr_storage *ss,
			   socklen_t len)
{
	struct conn_track *t = calloc(1, sizeof(*t));

	if (!t) {
		close(fd);
		return;
	}
	t->fd = fd;
	client_key_of(fd, ss, &t->client, &t->peer_uid);
	t->in_group = s->has_group && ss->ss_family == AF_UNIX && peer_in_group(fd, s->group_gid);
	make_room(s, &t->client);
	if (s->cut.n >= NET_HTTP_CUT_SLACK) {
		MHD_run(s->mhd);
		/* Not expected: a cut socket reads as failed on the next pass. */
		if (s->cut.n >= NET_HTTP_CUT_SLACK) {
			free(t);
			close(fd);
			return;
		}
	}
	if (len < sizeof(sa_family_t))
		len = sizeof(sa_family_t); /* MHD copies the address; never 0 bytes */
	s->adding = t;
	MHD_add_connection(s->mhd, fd, (struct sockaddr *)ss, len);
	/* Still ours when MHD refused before announcing the connection (it has
	 * closed the socket); once announced, its CLOSED notice frees it. */
	if (s->adding == t) {
		s->adding = NULL;
		free(t);
	}
}

static void listen_pause(struct net_http_server *s)
{
	/* The resume timer is armed first: the listen socket is only ever
	 * switched off with a timer pending that switches it back on. */
	if (sd_event_source_set_time(s->resume, vmact_loop_now_usec(s->ev) + ACCEPT_PAUSE_USEC) <
		    0 ||
	    sd_event_source_set_enabled(s->resume, SD_EVENT_ONESHOT) < 0)
		return;
	sd_event_source_set_enabled(s->listen_io, SD_EVENT_OFF);
}

static int on_resume(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct net_http_server *s = userdata;

	return sd_event_source_set_enabled(s->listen_io, SD_EVENT_ON);
}

/* The listen socket is ours, not MHD's: MHD stops watching its listen
 * socket at its connection limit and resumes only when run again, which
 * nothing triggers once every connection is gone. Ours stays watched
 * (level-triggered) and every connection waiting is accepted, evicting the
 * oldest when full, so the backlog never fills with requests nobody reads. */
static int on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct net_http_server *s = userdata;

	for (unsigned i = 0; i < s->accept_batch; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int cfd;

		memset(&ss, 0, sizeof(ss));
		cfd = accept4(s->listen_fd, (struct sockaddr *)&ss, &len,
			      SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd >= 0) {
			add_connection(s, cfd, &ss, len);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		/* accept(2): errors pending on the new connection are reported
		 * here; that connection is gone, the next one may be fine. */
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO || errno == EPERM ||
		    errno == ENETDOWN || errno == ENOPROTOOPT || errno == EHOSTDOWN ||
		    errno == ENONET || errno == EHOSTUNREACH || errno == EOPNOTSUPP ||
		    errno == ENETUNREACH)
			continue;
		/* Out of descriptors or memory (or worse): give the newest
		 * connection the oldest one's descriptor, and wait a little. */
		if (s->live.head)
			conn_cut(s, s->live.head);
		listen_pause(s);
		break;
	}
	/* Requests that came complete with their connection are answered now,
	 * before more connections can push them out. */
	run(s);
	return 0;
}

/* A listening socket someone else opened: non-blocking, its port read back. */
static int adopt_listener(struct net_http_server *s, int fd, const char *spec,
			  struct vmact_err *err)
{
	struct sockaddr_storage got;
	socklen_t glen = sizeof(got);
	int acc = 0;
	socklen_t alen = sizeof(acc);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &alen) < 0 || !acc)
		return vmact_err_set(err, EINVAL, "listen %s: not a listening socket", spec);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		return vmact_err_set(err, errno, "listen %s: fcntl: %m", spec);
	if (getsockname(fd, (struct sockaddr *)&got, &glen) < 0)
		return vmact_err_set(err, errno, "listen %s: getsockname: %m", spec);
	if (got.ss_family == AF_INET)
		s->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
	else if (got.ss_family == AF_INET6)
		s->port = ntohs(((struct sockaddr_in6 *)&got)->sin6_port);
	return 0;
}

static int open_listener(struct net_http_server *s, const char *spec, struct vmact_err *err)
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
		s->port = ntohs(got.ss_family == AF_INET
					? ((struct sockaddr_in *)&got)->sin_port
					: ((struct sockaddr_in6 *)&got)->sin6_port);
	}
	return TAKE_FD(fd);
}

int net_http_server_new(sd_event *ev, const struct net_http_server_config *cfg,
			net_http_handler_fn *handler, void *userdata, struct net_http_server **out,
			struct vmact_err *err)
{
	struct net_http_server *s;
	const union MHD_DaemonInfo *di;
	int r;

	if (!ev || !cfg || (!cfg->listen && !cfg->adopt_fd) || !handler || !out) {
		if (cfg && cfg->adopt_fd && cfg->listen_fd >= 0)
			close(cfg->listen_fd);
		return vmact_err_set(err, EINVAL,
				     "http server: loop, listen address and handler required");
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		if (cfg->adopt_fd && cfg->listen_fd >= 0)
			close(cfg->listen_fd);
		return vmact_err_set(err, ENOMEM, "http server: out of memory");
	}
	s->ev = sd_event_ref(ev);
	s->listen_fd = cfg->adopt_fd ? cfg->listen_fd : -1;
	s->handler = handler;
	s->userdata = userdata;
	s->max_body = cfg->max_body ? cfg->max_body : 64 * 1024;
	s->too_large_status = cfg->too_large_status ? cfg->too_large_status : 413;
	s->too_large_body = strdup(cfg->too_large_body ? cfg->too_large_body
						       : "request body too large");
	s->request_timeout = cfg->request_timeout_usec ? cfg->request_timeout_usec : 10000000;
	s->conn_limit = cfg->conn_limit ? cfg->conn_limit : 256;
	s->per_client_limit = cfg->per_client_limit ? cfg->per_client_limit : s->conn_limit / 2;
	if (s->per_client_limit < 1)
		s->per_client_limit = 1;
	if (s->per_client_limit > s->conn_limit)
		s->per_client_limit = s->conn_limit;
	/* At most half a client's share per wakeup, and MHD runs after each
	 * batch: a client's newest connection cannot be evicted by its own
	 * (or anyone's) later ones before MHD has read the request on it. */
	s->accept_batch = s->per_client_limit / 2;
	if (s->accept_batch < 1)
		s->accept_batch = 1;
	if (s->accept_batch > ACCEPT_BATCH_MAX)
		s->accept_batch = ACCEPT_BATCH_MAX;
	if (!s->too_large_body) {
		r = vmact_err_set(err, ENOMEM, "http server: out of memory");
		goto fail;
	}
	if (s->conn_limit > UINT_MAX - NET_HTTP_CUT_SLACK) {
		r = vmact_err_set(err, EINVAL, "http server: connection limit %u too large",
				  s->conn_limit);
		goto fail;
	}

	if (cfg->adopt_fd) {
		r = adopt_listener(s, s->listen_fd, cfg->listen ? cfg->listen : "(given)", err);
		if (r < 0)
			goto fail;
	} else {
		r = open_listener(s, cfg->listen, err);
		if (r < 0)
			goto fail;
		s->listen_fd = r;
	}
	s->allow_defer = cfg->allow_defer;
	s->has_group = cfg->has_group;
	s->group_gid = (gid_t)cfg->group_gid;
	s->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET |
			(cfg->allow_defer ? MHD_ALLOW_SUSPEND_RESUME : 0),
		0, NULL, NULL, on_access, s,
		/* Ours decides; MHD's must never refuse (see NET_HTTP_CUT_SLACK). */
		MHD_OPTION_CONNECTION_LIMIT, s->conn_limit + NET_HTTP_CUT_SLACK,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)(cfg->idle_timeout_sec ? cfg->idle_timeout_sec : 10),
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
		on_connection, s, MHD_OPTION_END);
	if (!s->mhd) {
		r = vmact_err_set(err, EIO, "http server %s: libmicrohttpd failed to start",
				  cfg->listen ? cfg->listen : "(given)");
		goto fail;
	}
	di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!di) {
		r = vmact_err_set(err, EIO, "http server: no epoll fd from libmicrohttpd");
		goto fail;
	}
	r = sd_event_add_io(ev, &s->io, di->epoll_fd, EPOLLIN, on_io, s);
	if (r >= 0)
		r = sd_event_add_io(ev, &s->listen_io, s->listen_fd, EPOLLIN, on_listen, s);
	if (r >= 0)
		r = sd_event_add_time(ev, &s->timer, CLOCK_MONOTONIC, 0, VMACT_TIMER_ACCURACY_USEC,
				      on_timer, s);
	if (r >= 0)
		r = sd_event_add_time(ev, &s->sweep, CLOCK_MONOTONIC, 0, 0, on_sweep, s);
	if (r >= 0)
		r = sd_event_add_time(ev, &s->resume, CLOCK_MONOTONIC, 0, 0, on_resume, s);
	if (r >= 0)
		r = sd_event_add_defer(ev, &s->kick, on_kick, s);
	if (r < 0) {
		vmact_err_set(err, -r, "http server: adding event sources: %s", strerror(-r));
		goto fail;
	}
	sd_event_source_set_enabled(s->sweep, SD_EVENT_OFF);
	sd_event_source_set_enabled(s->resume, SD_EVENT_OFF);
	sd_event_source_set_enabled(s->kick, SD_EVENT_OFF);
	rearm(s);
	*out = s;
	return 0;
fail:
	net_http_server_free(s);
	return r;
}

void net_http_server_free(struct net_http_server *s)
{
	if (!s)
		return;
	/* MHD refuses to stop with suspended connections: answer them. */
	while (s->pending) {
		struct net_http_server_reply r = { .status = 503 };

		net_http_reply_text(&r, 503, "text/plain", "server shutting down");
		net_http_pending_reply((struct net_http_pending *)s->pending, &r);
	}
	if (s->mhd && s->allow_defer)
		MHD_run(s->mhd);
	/* Closes every connection; their CLOSED notices free the tracks. */
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	sd_event_source_disable_unref(s->io);
	sd_event_source_disable_unref(s->listen_io);
	sd_event_source_disable_unref(s->timer);
	sd_event_source_disable_unref(s->sweep);
	sd_event_source_disable_unref(s->resume);
	sd_event_source_disable_unref(s->kick);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->unix_path) {
		unlink(s->unix_path);
		free(s->unix_path);
	}
	free(s->too_large_body);
	sd_event_unref(s->ev);
	free(s);
}

const char *net_http_request_arg(const struct net_http_server_request *req, const char *key)
{
	struct req_state *rs = req->internal_;

	return rs ? MHD_lookup_connection_value(rs->conn, MHD_GET_ARGUMENT_KIND, key) : NULL;
}

struct net_http_pending *net_http_defer(const struct net_http_server_request *req)
{
	struct req_state *rs = req->internal_;

	if (!rs || !rs->s->allow_defer || rs->deferred)
		return NULL;
	rs->deferred = true;
	rs->answered = false;
	VMACT_LIST_PREPEND(pending, rs->s->pending, rs);
	MHD_suspend_connection(rs->conn);
	return (struct net_http_pending *)rs;
}

void net_http_pending_reply(struct net_http_pending *p, struct net_http_server_reply *reply)
{
	struct req_state *rs = (struct req_state *)p;

	VMACT_LIST_REMOVE(pending, rs->s->pending, rs);
	rs->reply = *reply;
	if (rs->reply.status < 100 || rs->reply.status > 599) {
		free(rs->reply.body);
		rs->reply = (struct net_http_server_reply){ 0 };
		net_http_reply_text(&rs->reply, 500, "text/plain", "internal error");
	}
	reply->body = NULL;
	rs->answered = true;
	/* MHD handles a resumed connection on its next run (which calls
	 * on_access again, and that queues the reply); MHD does not wake
	 * our io source for it, so the kick runs MHD from the loop, never
	 * from inside a running MHD callback. */
	MHD_resume_connection(rs->conn);
	sd_event_source_set_enabled(rs->s->kick, SD_EVENT_ONESHOT);
}

unsigned net_http_server_port(const struct net_http_server *s)
{
	return s ? s->port : 0;
}

unsigned net_http_server_connections(const struct net_http_server *s)
{
	return s ? s->live.n + s->cut.n : 0;
}
