/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/gate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/endpoint.h"
#include "base/list.h"
#include "base/macro.h"
#include "base/time.h"

/* Enough for a TLS record or an HTTP/2 frame in one piece. */
#define BUF_SIZE (16u * 1024)
/* Accepted per wake-up, so a flood cannot hold the loop. */
#define ACCEPT_BURST 64
/* Reads and writes per wake-up of one connection, likewise. */
#define PUMP_ROUNDS 8
/* Pause after the process ran out of descriptors, instead of spinning on
 * a listening socket that stays readable. */
#define EMFILE_PAUSE_USEC (100 * 1000ULL)

struct buf {
	size_t off, len;
	char data[BUF_SIZE];
};

struct conn {
	struct cp_gate *g;
	int cfd, bfd; /* client, backend (gRPC) */
	sd_event_source *cs, *bs;
	struct buf up, down; /* client to gRPC, gRPC to client */
	bool c_eof, up_shut; /* client sent EOF; passed on to gRPC */
	bool served;         /* carried a well-formed call */
	uint64_t accepted_usec;
	char client[INET6_ADDRSTRLEN + 8]; /* "ADDR:PORT" or "uid N" */
	char key[INET6_ADDRSTRLEN];        /* what a share counts: the address or uid */
	char bname[16];                    /* our abstract name, as gRPC shows it */
	VMACT_LIST_FIELDS(struct conn, all);
};

struct cp_gate {
	sd_event *ev;
	int lfd;
	sd_event_source *ls, *pause;
	struct vmact_listen addr;
	char *backend;
	unsigned limit, share;
	pthread_mutex_t lock; /* conns' list, served flags, counters */
	struct conn *conns;   /* newest first */
	unsigned n;
	unsigned long refused, evicted;
};

static void conn_close(struct conn *c)
{
	struct cp_gate *g = c->g;

	pthread_mutex_lock(&g->lock);
	VMACT_LIST_REMOVE(all, g->conns, c);
	g->n--;
	pthread_mutex_unlock(&g->lock);
	sd_event_source_disable_unref(c->cs);
	sd_event_source_disable_unref(c->bs);
	close(c->cfd);
	close(c->bfd);
	free(c);
}

/* 1: moved bytes, 0: would block, -1: the connection is over. */
static int fill(int fd, struct buf *b, bool *eof)
{
	ssize_t n;

	if (*eof || b->off + b->len == BUF_SIZE) {
		if (b->off && !*eof) {
			memmove(b->data, b->data + b->off, b->len);
			b->off = 0;
		} else {
			return 0;
		}
	}
	n = read(fd, b->data + b->off + b->len, BUF_SIZE - b->off - b->len);
	if (n > 0) {
		b->len += (size_t)n;
		return 1;
	}
	if (n == 0) {
		*eof = true;
		return 1;
	}
	return errno == EAGAIN || errno == EINTR ? 0 : -1;
}

static int drain(int fd, struct buf *b)
{
	ssize_t n;

	if (!b->len)
		return 0;
	n = send(fd, b->data + b->off, b->len, MSG_NOSIGNAL);
	if (n > 0) {
		b->off += (size_t)n;
		b->len -= (size_t)n;
		if (!b->len)
			b->off = 0;
		return 1;
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
}

static int want(sd_event_source *s, uint32_t events)
{
	int r = sd_event_source_set_io_events(s, events ? events : EPOLLIN);

	if (r >= 0)
		r = sd_event_source_set_enabled(s, events ? SD_EVENT_ON : SD_EVENT_OFF);
	return r;
}

/* Moves what can move both ways, then waits for what it needs next. */
static void pump(struct conn *c)
{
	bool b_eof = false;
	int progress, r;

	for (int round = 0; round < PUMP_ROUNDS; round++) {
		progress = 0;
		r = fill(c->cfd, &c->up, &c->c_eof);
		if (r < 0)
			goto over;
		progress |= r;
		r = drain(c->bfd, &c->up);
		if (r < 0)
			goto over;
		progress |= r;
		if (c->c_eof && !c->up.len && !c->up_shut) {
			shutdown(c->bfd, SHUT_WR);
			c->up_shut = true;
		}
		r = fill(c->bfd, &c->down, &b_eof);
		if (r < 0)
			goto over;
		progress |= r;
		r = drain(c->cfd, &c->down);
		if (r < 0)
			goto over;
		progress |= r;
		/* gRPC is done with it: what the client still sends would go
		 * nowhere, and a client that stopped reading must not keep it */
		if (b_eof)
			goto over;
		if (!progress)
			break;
	}
	r = want(c->cs, (!c->c_eof && c->up.off + c->up.len < BUF_SIZE ? EPOLLIN : 0) |
				(c->down.len ? EPOLLOUT : 0));
	if (r >= 0)
		r = want(c->bs, (c->down.off + c->down.len < BUF_SIZE ? EPOLLIN : 0) |
					(c->up.len ? EPOLLOUT : 0));
	if (r >= 0)
		return;
over:
	conn_close(c);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	pump(ud);
	return 0;
}

/* The oldest connection of `key` (NULL: of anyone) that never carried a
 * call. With g->lock held. */
static struct conn *victim(struct cp_gate *g, const char *key)
{
	struct conn *v = NULL;

	for (struct conn *c = g->conns; c; c = c->all_next)
		if (!c->served && (!key || !strcmp(c->key, key)))
			v = c; /* the list is newest first: the last one wins */
	return v;
}

/* Makes room for a newcomer from `key`: false when only connections that
 * carried calls stand in the way. */
static bool make_room(struct cp_gate *g, const char *key)
{
	struct conn *v = NULL;
	unsigned mine = 0;

	pthread_mutex_lock(&g->lock);
	for (struct conn *c = g->conns; c; c = c->all_next)
		mine += !strcmp(c->key, key);
	if (mine >= g->share)
		v = victim(g, key);
	else if (g->n >= g->limit)
		v = victim(g, NULL);
	if (v)
		g->evicted++;
	else if (mine >= g->share || g->n >= g->limit)
		g->refused++;
	pthread_mutex_unlock(&g->lock);
	if (v) {
		conn_close(v);
		return true;
	}
	return mine < g->share && g->n < g->limit;
}

static void describe(struct cp_gate *g, int fd, const struct sockaddr_storage *sa, struct conn *c)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(c->client, sizeof(c->client), "%s:%u", host, port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(c->client, sizeof(c->client), "[%s]:%u", host, port);
	} else {
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
			snprintf(host, sizeof(host), "uid %u", (unsigned)cred.uid);
		snprintf(c->client, sizeof(c->client), "%s", host);
	}
	snprintf(c->key, sizeof(c->key), "%s", host);
}

/* A unix connection to gRPC from an abstract address the kernel picks
 * (autobind), so that gRPC names this connection's calls by it. */
static int connect_backend(struct cp_gate *g, char *name, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t alen = sizeof(sa_family_t);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, alen) < 0)
		return -errno;
	alen = sizeof(a);
	if (getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
		return -errno;
	if (alen <= offsetof(struct sockaddr_un, sun_path) + 1 || a.sun_path[0])
		return -EPROTO;
	alen -= offsetof(struct sockaddr_un, sun_path) + 1;
	if (alen >= len)
		return -ENAMETOOLONG;
	memcpy(name, a.sun_path + 1, alen);
	name[alen] = 0;
	a = (struct sockaddr_un){ .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", g->backend);
	/* local: done at once, or EAGAIN when gRPC's backlog is full */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -errno;
	return TAKE_FD(fd);
}

static void take(struct cp_gate *g, int fd, const struct sockaddr_storage *sa)
{
	struct conn *c = calloc(1, sizeof(*c));
	int r;

	if (!c) {
		close(fd);
		return;
	}
	c->g = g;
	c->cfd = fd;
	c->bfd = -1;
	c->accepted_usec = vmact_now_usec();
	describe(g, fd, sa, c);
	if (!make_room(g, c->key)) {
		close(fd);
		free(c);
		return;
	}
	c->bfd = connect_backend(g, c->bname, sizeof(c->bname));
	if (c->bfd < 0) {
		close(fd);
		free(c);
		return;
	}
	r = sd_event_add_io(g->ev, &c->cs, c->cfd, EPOLLIN, on_io, c);
	if (r >= 0)
		r = sd_event_add_io(g->ev, &c->bs, c->bfd, EPOLLIN, on_io, c);
	if (r < 0) {
		sd_event_source_disable_unref(c->cs);
		close(c->cfd);
		close(c->bfd);
		free(c);
		return;
	}
	pthread_mutex_lock(&g->lock);
	VMACT_LIST_PREPEND(all, g->conns, c);
	g->n++;
	pthread_mutex_unlock(&g->lock);
}

static int on_resume(sd_event_source *s, uint64_t usec, void *ud)
{
	struct cp_gate *g = ud;

	sd_event_source_set_enabled(g->ls, SD_EVENT_ON);
	return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct cp_gate *g = ud;

	for (int i = 0; i < ACCEPT_BURST; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int cfd = accept4(g->lfd, (struct sockaddr *)&sa, &len,
				  SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd >= 0) {
			take(g, cfd, &sa);
			continue;
		}
		if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) &&
		    sd_event_source_set_enabled(g->ls, SD_EVENT_OFF) >= 0) {
			sd_event_source_set_time_relative(g->pause, EMFILE_PAUSE_USEC);
			sd_event_source_set_enabled(g->pause, SD_EVENT_ONESHOT);
		}
		break;
	}
	return 0;
}

static int listen_on(struct cp_gate *g, const char *spec, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	int one = 1;

	if (vmact_listen_parse(spec, true, &g->addr, err) < 0)
		return -EINVAL;
	fd = socket(g->addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return vmact_err_set(err, errno, "%s: socket: %m", spec);
	if (g->addr.family == AF_UNIX)
		unlink(g->addr.path);
	else
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (g->addr.family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&g->addr.addr, g->addr.addr_len) < 0)
		return vmact_err_set(err, errno, "%s: bind: %m", spec);
	if (listen(fd, 128) < 0)
		return vmact_err_set(err, errno, "%s: listen: %m", spec);
	if (g->addr.family != AF_UNIX) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);

		if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
			g->addr.port = ntohs(sa.ss_family == AF_INET
						     ? ((struct sockaddr_in *)&sa)->sin_port
						     : ((struct sockaddr_in6 *)&sa)->sin6_port);
	}
	g->lfd = TAKE_FD(fd);
	return 0;
}

int cp_gate_new(sd_event *ev, const struct cp_gate_config *cfg, struct cp_gate **out,
		struct vmact_err *err)
{
	struct cp_gate *g = calloc(1, sizeof(*g));
	int r;

	if (!g)
		return vmact_err_set(err, ENOMEM, "out of memory");
	g->ev = sd_event_ref(ev);
	g->lfd = -1;
	pthread_mutex_init(&g->lock, NULL);
	g->limit = cfg->conn_limit ? cfg->conn_limit : 64;
	g->share = cfg->per_client_limit ? cfg->per_client_limit : g->limit / 4;
	if (!g->share)
		g->share = 1;
	if (g->share > g->limit)
		g->share = g->limit;
	g->backend = strdup(cfg->backend);
	if (!g->backend || strlen(cfg->backend) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		cp_gate_free(g);
		return vmact_err_set(err, ENAMETOOLONG, "backend socket path too long");
	}
	r = listen_on(g, cfg->listen, err);
	if (r >= 0)
		r = sd_event_add_io(ev, &g->ls, g->lfd, EPOLLIN, on_accept, g);
	if (r >= 0)
		r = sd_event_add_time_relative(ev, &g->pause, CLOCK_MONOTONIC, EMFILE_PAUSE_USEC,
					       VMACT_TIMER_ACCURACY_USEC, on_resume, g);
	if (r >= 0)
		r = sd_event_source_set_enabled(g->pause, SD_EVENT_OFF);
	if (r < 0) {
		cp_gate_free(g);
		return vmact_err_set(err, -r, "%s: cannot serve: %s", cfg->listen, strerror(-r));
	}
	*out = g;
	return 0;
}

void cp_gate_close(struct cp_gate *g)
{
	if (!g)
		return;
	while (g->conns)
		conn_close(g->conns);
	g->ls = sd_event_source_disable_unref(g->ls);
	g->pause = sd_event_source_disable_unref(g->pause);
	if (g->lfd >= 0) {
		close(g->lfd);
		g->lfd = -1;
		if (g->addr.family == AF_UNIX)
			unlink(g->addr.path);
	}
}

void cp_gate_free(struct cp_gate *g)
{
	if (!g)
		return;
	cp_gate_close(g);
	pthread_mutex_destroy(&g->lock);
	sd_event_unref(g->ev);
	free(g->backend);
	free(g);
}

unsigned cp_gate_port(const struct cp_gate *g)
{
	return g->addr.family == AF_UNIX ? 0 : g->addr.port;
}

void cp_gate_stats(struct cp_gate *g, struct cp_gate_stats *st)
{
	pthread_mutex_lock(&g->lock);
	*st = (struct cp_gate_stats){ .connections = g->n,
				      .refused = g->refused,
				      .evicted = g->evicted };
	pthread_mutex_unlock(&g->lock);
}

/* gRPC names an abstract unix peer "unix-abstract:NAME". */
static const char *abstract_name(const char *peer)
{
	static const char prefix[] = "unix-abstract:";

	return strncmp(peer, prefix, sizeof(prefix) - 1) ? NULL : peer + sizeof(prefix) - 1;
}

void cp_gate_mark_served(struct cp_gate *g, const char *grpc_peer)
{
	const char *name = abstract_name(grpc_peer);

	if (!name)
		return;
	pthread_mutex_lock(&g->lock);
	for (struct conn *c = g->conns; c; c = c->all_next)
		if (!strcmp(c->bname, name)) {
			c->served = true;
			break;
		}
	pthread_mutex_unlock(&g->lock);
}

void cp_gate_client(struct cp_gate *g, const char *grpc_peer, char *buf, size_t len)
{
	const char *name = abstract_name(grpc_peer);

	snprintf(buf, len, "%s", grpc_peer);
	if (!name)
		return;
	pthread_mutex_lock(&g->lock);
	for (struct conn *c = g->conns; c; c = c->all_next)
		if (!strcmp(c->bname, name)) {
			snprintf(buf, len, "%s", c->client);
			break;
		}
	pthread_mutex_unlock(&g->lock);
}
