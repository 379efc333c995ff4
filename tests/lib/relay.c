/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define RELAY_MAX 64

struct pair {
	struct th_relay *r;
	int a, b;    /* the client's, the daemon's */
	bool frozen; /* under the relay's lock */
	bool done;   /* its descriptors closed */
	pthread_t t;
	bool used;
};

struct th_relay {
	char path[108], target[108];
	int lfd, stop_pipe[2];
	atomic_bool frozen;
	pthread_t accept_t;
	pthread_mutex_t lock;
	struct pair pairs[RELAY_MAX];
};

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

/* Passes what one side sent to the other; false when the pair ends. A
 * frozen pair reads and drops; the client's close is then not passed on
 * (*gone set): the daemon's side waits for th_relay_cut. */
static bool pass(struct pair *p, int from, int to, bool *gone)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));

	pthread_mutex_lock(&p->r->lock);
	if (atomic_load(&p->r->frozen))
		p->frozen = true;
	pthread_mutex_unlock(&p->r->lock);
	if (n <= 0) {
		if (p->frozen && from == p->a) {
			*gone = true;
			return true;
		}
		return false;
	}
	if (p->frozen)
		return true;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		off += w;
	}
	return true;
}

static void *relay_pair(void *arg)
{
	struct pair *p = arg;
	struct pollfd fds[3] = { { .fd = p->a, .events = POLLIN },
				 { .fd = p->b, .events = POLLIN },
				 { .fd = p->r->stop_pipe[0], .events = POLLIN } };

	for (;;) {
		bool gone = false;

		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[2].revents)
			break;
		if (fds[0].revents && !pass(p, p->a, p->b, &gone))
			break;
		if (gone)
			fds[0].fd = -1; /* the client went; its daemon waits */
		if (fds[1].revents && !pass(p, p->b, p->a, &gone))
			break;
	}
	pthread_mutex_lock(&p->r->lock);
	p->done = true;
	close(p->a);
	close(p->b);
	pthread_mutex_unlock(&p->r->lock);
	return NULL;
}

static void *relay_accept(void *arg)
{
	struct th_relay *r = arg;
	struct pollfd fds[2] = { { .fd = r->lfd, .events = POLLIN },
				 { .fd = r->stop_pipe[0], .events = POLLIN } };

	for (;;) {
		struct sockaddr_un sa;
		struct pair *p = NULL;
		int a, b;

		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		if (!fds[0].revents)
			continue;
		a = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (a < 0)
			continue;
		b = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (b < 0 || unix_addr(r->target, &sa) < 0 ||
		    connect(b, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(a);
			if (b >= 0)
				close(b);
			continue;
		}
		pthread_mutex_lock(&r->lock);
		for (size_t i = 0; i < RELAY_MAX && !p; i++)
			if (!r->pairs[i].used)
				p = &r->pairs[i];
		/* A slot whose connection ended: its thread is about to
		 * return (it set done last). */
		for (size_t i = 0; i < RELAY_MAX && !p; i++)
			if (r->pairs[i].done) {
				p = &r->pairs[i];
				pthread_mutex_unlock(&r->lock);
				pthread_join(p->t, NULL);
				pthread_mutex_lock(&r->lock);
			}
		if (p) {
			*p = (struct pair){ .r = r, .a = a, .b = b, .used = true };
			if (pthread_create(&p->t, NULL, relay_pair, p) != 0)
				p->used = false;
		}
		pthread_mutex_unlock(&r->lock);
		if (!p || !p->used) {
			close(a);
			close(b);
		}
	}
	return NULL;
}

int th_relay_start(const char *path, const char *target, struct th_relay **out)
{
	struct th_relay *r = calloc(1, sizeof(*r));
	struct sockaddr_un sa;
	int rc;

	if (!r)
		return -ENOMEM;
	snprintf(r->path, sizeof(r->path), "%s", path);
	snprintf(r->target, sizeof(r->target), "%s", target);
	pthread_mutex_init(&r->lock, NULL);
	r->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->lfd < 0 || pipe2(r->stop_pipe, O_CLOEXEC) < 0) {
		rc = -errno;
		goto fail;
	}
	unlink(path);
	rc = unix_addr(path, &sa);
	if (rc < 0)
		goto fail;
	if (bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 ||
	    listen(r->lfd, 64) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = -pthread_create(&r->accept_t, NULL, relay_accept, r);
	if (rc < 0)
		goto fail;
	*out = r;
	return 0;
fail:
	if (r->lfd >= 0)
		close(r->lfd);
	free(r);
	return rc;
}

void th_relay_freeze(struct th_relay *r, bool frozen)
{
	pthread_mutex_lock(&r->lock);
	atomic_store(&r->frozen, frozen);
	for (size_t i = 0; frozen && i < RELAY_MAX; i++)
		if (r->pairs[i].used && !r->pairs[i].done)
			r->pairs[i].frozen = true;
	pthread_mutex_unlock(&r->lock);
}

void th_relay_cut(struct th_relay *r)
{
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < RELAY_MAX; i++)
		if (r->pairs[i].used && !r->pairs[i].done && r->pairs[i].frozen) {
			/* Both ends see EOF: the pair's thread closes them. */
			shutdown(r->pairs[i].a, SHUT_RDWR);
			shutdown(r->pairs[i].b, SHUT_RDWR);
		}
	pthread_mutex_unlock(&r->lock);
}

void th_relay_stop(struct th_relay *r)
{
	if (!r)
		return;
	if (write(r->stop_pipe[1], "x", 1) != 1)
		return; /* cannot happen: the pipe is empty */
	pthread_join(r->accept_t, NULL);
	for (size_t i = 0; i < RELAY_MAX; i++)
		if (r->pairs[i].used)
			pthread_join(r->pairs[i].t, NULL);
	close(r->lfd);
	close(r->stop_pipe[0]);
	close(r->stop_pipe[1]);
	unlink(r->path);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
