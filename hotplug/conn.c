/* SPDX-License-Identifier: Apache-2.0 */
/* The libvirt connection: connect, keepalive, close callback, reconnect
 * with backoff, and the queue that hands libvirt events and workers'
 * completions to the sd-event thread through an eventfd. The event thread
 * itself is hotplug/evloop.c; see hotplug.h for why it is a thread. */
#include "hotplug/conn.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "base/macro.h"
#include "hotplug/evloop.h"
#include "hotplug/virt-error.h"

struct hp_conn {
	sd_event *event;
	sd_event_source *efd_src;
	sd_event_source *retry_src;
	int efd;
	hp_event_fn fn;
	void *userdata;
	char *uri;
	char *qemu_rundir;
	int ka_interval;
	unsigned ka_count;
	uint64_t backoff_min_us, backoff_max_us, backoff_us;
	unsigned reconnects;

	/* Guarded by lock: the connection is shared with worker threads. */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* connection changed, a watch was kicked or done */
	virConnectPtr vc;
	unsigned gen; /* bumped on every (re)connect and loss */
	int cb_ids[8];
	size_t n_cb;
	struct hp_qitem *queue;
	struct hp_watch *watches; /* workers in flight */
	struct hp_ework *eworks;  /* posted to the event thread, not done */
	bool closing;
};

virConnectPtr hp_conn_get(struct hp_conn *c)
{
	virConnectPtr vc;

	pthread_mutex_lock(&c->lock);
	vc = c->vc;
	if (vc)
		virConnectRef(vc);
	pthread_mutex_unlock(&c->lock);
	return vc;
}

const char *hp_conn_uri(const struct hp_conn *c)
{
	return c->uri;
}

const char *hp_conn_qemu_rundir(const struct hp_conn *c)
{
	return c->qemu_rundir;
}

/* ---- queue to the sd-event thread ---------------------------------------- */

/* Called with c->lock held. */
static void queue_locked(struct hp_conn *c, struct hp_qitem *it)
{
	VMACT_LIST_APPEND(queue, c->queue, it);
}

static void wake_loop(struct hp_conn *c)
{
	uint64_t one = 1;

	/* An eventfd counter cannot overflow in practice; a failed write
	 * would only delay delivery to the next push. */
	if (write(c->efd, &one, sizeof(one)) < 0) {
	}
}

static void queue_push(struct hp_conn *c, struct hp_qitem *it)
{
	pthread_mutex_lock(&c->lock);
	queue_locked(c, it);
	pthread_mutex_unlock(&c->lock);
	wake_loop(c);
}

/* Takes c->lock, unless the connection is closing: -ESHUTDOWN, unlocked. */
static int lock_open(struct hp_conn *c, struct vmact_err *err)
{
	pthread_mutex_lock(&c->lock);
	if (!c->closing)
		return 0;
	pthread_mutex_unlock(&c->lock);
	return vmact_err_set(err, ESHUTDOWN, "connection is closing");
}

/* ---- watches ------------------------------------------------------------ */

int hp_watch_add(struct hp_conn *c, struct hp_watch *w, const char *uuid, struct vmact_err *err)
{
	*w = (struct hp_watch){ 0 };
	snprintf(w->uuid, sizeof(w->uuid), "%s", uuid);
	if (lock_open(c, err) < 0)
		return -ESHUTDOWN;
	VMACT_LIST_PREPEND(watches, c->watches, w);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void hp_watch_cancel(struct hp_conn *c, struct hp_watch *w)
{
	pthread_mutex_lock(&c->lock);
	VMACT_LIST_REMOVE(watches, c->watches, w);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

bool hp_watch_wait(struct hp_conn *c, struct hp_watch *w, uint64_t until)
{
	struct timespec ts = { .tv_sec = (time_t)(until / 1000000ULL),
			       .tv_nsec = (long)(until % 1000000ULL) * 1000L };
	bool open;

	pthread_mutex_lock(&c->lock);
	if (!w->kicks && !c->closing)
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	w->kicks = 0;
	open = !c->closing;
	pthread_mutex_unlock(&c->lock);
	return open;
}

void hp_watch_seen(struct hp_conn *c, const struct hp_watch *w, struct hp_seen *out)
{
	pthread_mutex_lock(&c->lock);
	*out = w->seen;
	pthread_mutex_unlock(&c->lock);
}

void hp_watch_done(struct hp_conn *c, struct hp_watch *w, struct hp_qitem *it, hp_done_fn done,
		   void *userdata)
{
	*it = (struct hp_qitem){ .done = done, .userdata = userdata };
	pthread_mutex_lock(&c->lock);
	VMACT_LIST_REMOVE(watches, c->watches, w);
	queue_locked(c, it);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	wake_loop(c);
}

/* ---- work on the event thread ------------------------------------------- */

/* The evloop's item is the first member: the work is found from it. */
static_assert(offsetof(struct hp_ework, w) == 0, "hp_ework starts with its hp_evwork");

static void ework_run(struct hp_evwork *w)
{
	struct hp_ework *e = (struct hp_ework *)w;
	struct hp_conn *c = e->c;

	e->run(c, e->userdata);
	e->it = (struct hp_qitem){ .done = e->done, .userdata = e->userdata };
	pthread_mutex_lock(&c->lock);
	VMACT_LIST_REMOVE(eworks, c->eworks, e);
	queue_locked(c, &e->it);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	wake_loop(c);
}

int hp_conn_run(struct hp_conn *c, struct hp_ework *e, void (*run)(struct hp_conn *c, void *),
		hp_done_fn done, void *userdata, struct vmact_err *err)
{
	*e = (struct hp_ework){
		.w = { .run = ework_run }, .c = c, .run = run, .done = done, .userdata = userdata
	};
	if (lock_open(c, err) < 0)
		return -ESHUTDOWN;
	VMACT_LIST_PREPEND(eworks, c->eworks, e);
	pthread_mutex_unlock(&c->lock);
	hp_evloop_post(&e->w);
	return 0;
}

/* At close: work not begun is given back at once; a run that began is
 * waited for (its completion is then in the queue). */
static void eworks_end(struct hp_conn *c)
{
	struct hp_ework *e, *next, *taken = NULL;

	pthread_mutex_lock(&c->lock);
	VMACT_LIST_FOREACH_SAFE(eworks, e, next, c->eworks) {
		if (!hp_evloop_cancel(&e->w))
			continue;
		VMACT_LIST_REMOVE(eworks, c->eworks, e);
		VMACT_LIST_PREPEND(eworks, taken, e);
	}
	while (!VMACT_LIST_IS_EMPTY(c->eworks))
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	VMACT_LIST_FOREACH_SAFE(eworks, e, next, taken)
		e->done(c, e->userdata, false);
}

/* ---- libvirt callbacks (the libvirt event thread) ----------------------- */

/* Copy, kick the watches on this domain, queue. */
static void domain_event(struct hp_conn *c, virDomainPtr dom, enum hp_event_kind kind,
			 const char *alias, uint64_t size_kib)
{
	struct hp_qitem *it = calloc(1, sizeof(*it));
	char uuid[VIR_UUID_STRING_BUFLEN] = "";
	const char *name = virDomainGetName(dom);
	struct hp_watch *w;

	virDomainGetUUIDString(dom, uuid);
	pthread_mutex_lock(&c->lock);
	VMACT_LIST_FOREACH(watches, w, c->watches) {
		if (strcmp(w->uuid, uuid))
			continue;
		w->kicks++;
		if (kind == HP_EV_DOMAIN_STOPPED)
			w->seen.stopped = true;
		if (kind == HP_EV_DEVICE_REMOVED && alias)
			snprintf(w->seen.removed_alias, sizeof(w->seen.removed_alias), "%s", alias);
		if (kind == HP_EV_DEVICE_REMOVAL_FAILED && alias)
			snprintf(w->seen.removal_failed_alias, sizeof(w->seen.removal_failed_alias),
				 "%s", alias);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (!it)
		return; /* the kick above still wakes a waiting worker */
	it->ev.kind = kind;
	snprintf(it->ev.uuid, sizeof(it->ev.uuid), "%s", uuid);
	snprintf(it->ev.name, sizeof(it->ev.name), "%s", name ? name : "");
	snprintf(it->ev.alias, sizeof(it->ev.alias), "%s", alias ? alias : "");
	it->ev.size_kib = size_kib;
	queue_push(c, it);
}

int hp_lifecycle_kind(int event, int detail)
{
	switch (event) {
	case VIR_DOMAIN_EVENT_STARTED:
		/* An incoming migration's QEMU, paused until the source's
		 * memory is here: it starts running here when it is
		 * resumed. */
		return detail == VIR_DOMAIN_EVENT_STARTED_MIGRATED ? -1 : HP_EV_DOMAIN_STARTED;
	case VIR_DOMAIN_EVENT_RESUMED:
		/* The end of an incoming migration (and, at a source whose
		 * migration failed, its guest running again). */
		return detail == VIR_DOMAIN_EVENT_RESUMED_MIGRATED ? HP_EV_DOMAIN_STARTED : -1;
	case VIR_DOMAIN_EVENT_STOPPED:
		/* Migrated away included: libvirt 9.0 sends no Undefined
		 * event at a source it undefines the domain from. */
		return HP_EV_DOMAIN_STOPPED;
	default:
		return -1;
	}
}

static int cb_lifecycle(virConnectPtr vc, virDomainPtr dom, int event, int detail, void *opaque)
{
	int kind = hp_lifecycle_kind(event, detail);

	if (kind >= 0)
		domain_event(opaque, dom, (enum hp_event_kind)kind, NULL, 0);
	return 0;
}

static void cb_removed(virConnectPtr vc, virDomainPtr dom, const char *alias, void *opaque)
{
	domain_event(opaque, dom, HP_EV_DEVICE_REMOVED, alias, 0);
}

static void cb_removal_failed(virConnectPtr vc, virDomainPtr dom, const char *alias, void *opaque)
{
	domain_event(opaque, dom, HP_EV_DEVICE_REMOVAL_FAILED, alias, 0);
}

static void cb_metadata(virConnectPtr vc, virDomainPtr dom, int type, const char *nsuri,
			void *opaque)
{
	if (type == VIR_DOMAIN_METADATA_ELEMENT && nsuri && strcmp(nsuri, HP_NS_URI) == 0)
		domain_event(opaque, dom, HP_EV_METADATA_CHANGED, NULL, 0);
}

static void cb_memdev_size(virConnectPtr vc, virDomainPtr dom, const char *alias,
			   unsigned long long size, void *opaque)
{
	domain_event(opaque, dom, HP_EV_MEMDEV_SIZE, alias, size);
}

static void cb_close(virConnectPtr vc, int reason, void *opaque)
{
	struct hp_conn *c = opaque;
	struct hp_qitem *it = calloc(1, sizeof(*it));

	pthread_mutex_lock(&c->lock);
	if (it)
		it->gen = c->gen;
	pthread_mutex_unlock(&c->lock);
	if (!it)
		return;
	it->disconnected = true;
	queue_push(c, it);
}

/* ---- connect / lose / reconnect ----------------------------------------- */

static void unregister_all(struct hp_conn *c, virConnectPtr vc)
{
	for (size_t i = 0; i < c->n_cb; i++)
		virConnectDomainEventDeregisterAny(vc, c->cb_ids[i]);
	c->n_cb = 0;
	virConnectUnregisterCloseCallback(vc, cb_close);
}

static int do_connect(struct hp_conn *c, struct vmact_err *err)
{
	static const struct {
		int id;
		virConnectDomainEventGenericCallback cb;
	} cbs[] = {
		{ VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(cb_lifecycle) },
		{ VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED, VIR_DOMAIN_EVENT_CALLBACK(cb_removed) },
		{ VIR_DOMAIN_EVENT_ID_DEVICE_REMOVAL_FAILED,
		  VIR_DOMAIN_EVENT_CALLBACK(cb_removal_failed) },
		{ VIR_DOMAIN_EVENT_ID_METADATA_CHANGE, VIR_DOMAIN_EVENT_CALLBACK(cb_metadata) },
		{ VIR_DOMAIN_EVENT_ID_MEMORY_DEVICE_SIZE_CHANGE,
		  VIR_DOMAIN_EVENT_CALLBACK(cb_memdev_size) },
	};
	virConnectPtr vc = virConnectOpen(c->uri);
	struct hp_qitem *it;
	int r;

	if (!vc)
		return hp_virt_err(err, c->uri);
	if (virConnectSetKeepAlive(vc, c->ka_interval, c->ka_count) < 0) {
		r = hp_virt_err(err, "virConnectSetKeepAlive");
		goto fail;
	}
	if (virConnectRegisterCloseCallback(vc, cb_close, c, NULL) < 0) {
		r = hp_virt_err(err, "virConnectRegisterCloseCallback");
		goto fail;
	}
	/* Registered again on every new connection: callbacks die with it. */
	for (size_t i = 0; i < ARRAY_SIZE(cbs); i++) {
		int id = virConnectDomainEventRegisterAny(vc, NULL, cbs[i].id, cbs[i].cb, c, NULL);

		if (id < 0) {
			r = hp_virt_err(err, "virConnectDomainEventRegisterAny");
			goto fail;
		}
		c->cb_ids[c->n_cb++] = id;
	}
	pthread_mutex_lock(&c->lock);
	c->vc = vc;
	c->gen++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);

	/* Events during the gap are lost: the user resyncs on CONNECTED. */
	it = calloc(1, sizeof(*it));
	if (it) {
		it->ev.kind = HP_EV_CONNECTED;
		it->ev.reconnects = c->reconnects;
		queue_push(c, it);
	}
	c->backoff_us = c->backoff_min_us;
	return 0;
fail:
	unregister_all(c, vc);
	virConnectClose(vc);
	return r;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata);

static void schedule_retry(struct hp_conn *c)
{
	uint64_t delay = c->backoff_us;

	c->backoff_us = c->backoff_us * 2 > c->backoff_max_us ? c->backoff_max_us
							      : c->backoff_us * 2;
	if (c->retry_src) {
		sd_event_source_set_time_relative(c->retry_src, delay);
		sd_event_source_set_enabled(c->retry_src, SD_EVENT_ONESHOT);
	} else {
		sd_event_add_time_relative(c->event, &c->retry_src, CLOCK_MONOTONIC, delay, 0,
					   on_retry, c);
	}
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct hp_conn *c = userdata;
	struct vmact_err err = { 0 };

	if (c->vc)
		return 0;
	c->reconnects++;
	if (do_connect(c, &err) < 0) {
		c->reconnects--;
		schedule_retry(c);
	}
	return 0;
}

static void lose_connection(struct hp_conn *c)
{
	virConnectPtr vc;
	struct hp_event ev = { .kind = HP_EV_DISCONNECTED };

	pthread_mutex_lock(&c->lock);
	vc = c->vc;
	c->vc = NULL;
	c->gen++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (!vc)
		return;
	unregister_all(c, vc);
	virConnectClose(vc);
	c->fn(c, &ev, c->userdata);
	schedule_retry(c);
}

static int on_efd(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct hp_conn *c = userdata;
	struct hp_qitem *items, *it, *next;
	uint64_t v;

	if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&c->lock);
	items = TAKE_PTR(c->queue);
	pthread_mutex_unlock(&c->lock);
	VMACT_LIST_FOREACH_SAFE(queue, it, next, items) {
		if (it->done) {
			/* The worker's own memory: done() may free it. */
			it->done(c, it->userdata, true);
			continue;
		}
		if (it->disconnected) {
			unsigned gen;

			pthread_mutex_lock(&c->lock);
			gen = c->gen;
			pthread_mutex_unlock(&c->lock);
			if (it->gen == gen)
				lose_connection(c);
		} else {
			c->fn(c, &it->ev, c->userdata);
		}
		free(it);
	}
	return 0;
}

int hp_conn_new(sd_event *ev, const struct hp_conn_opts *opts, hp_event_fn fn, void *userdata,
		struct hp_conn **out, struct vmact_err *err)
{
	struct hp_conn_opts o = opts ? *opts : (struct hp_conn_opts){ 0 };
	struct hp_conn *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->efd = -1;
	pthread_mutex_init(&c->lock, NULL);
	{
		pthread_condattr_t ca;

		/* Workers wait with CLOCK_MONOTONIC deadlines. */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	c->event = sd_event_ref(ev);
	c->fn = fn;
	c->userdata = userdata;
	c->uri = strdup(o.uri ? o.uri : HP_URI_DEFAULT);
	c->qemu_rundir = strdup(o.qemu_rundir ? o.qemu_rundir : "/run/libvirt/qemu");
	c->ka_interval = o.keepalive_interval ? o.keepalive_interval : 5;
	c->ka_count = o.keepalive_count ? o.keepalive_count : 3;
	c->backoff_min_us = o.backoff_min_us ? o.backoff_min_us : 100000;
	c->backoff_max_us = o.backoff_max_us ? o.backoff_max_us : 5000000;
	c->backoff_us = c->backoff_min_us;
	if (!c->uri || !c->qemu_rundir) {
		r = -ENOMEM;
		goto fail_early;
	}
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->efd < 0) {
		r = vmact_err_set(err, errno, "eventfd: %m");
		goto fail_early;
	}
	r = sd_event_add_io(ev, &c->efd_src, c->efd, EPOLLIN, on_efd, c);
	if (r < 0) {
		vmact_err_set(err, -r, "sd_event_add_io: %s", strerror(-r));
		goto fail_early;
	}
	if ((r = hp_evloop_get(err)) < 0)
		goto fail_early;
	if ((r = do_connect(c, err)) < 0) {
		hp_evloop_put();
		goto fail_early;
	}
	*out = c;
	return 0;
fail_early:
	sd_event_source_unref(c->efd_src);
	if (c->efd >= 0)
		close(c->efd);
	sd_event_unref(c->event);
	free(c->uri);
	free(c->qemu_rundir);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
	return r;
}

void hp_conn_free(struct hp_conn *c)
{
	struct hp_qitem *it, *next;

	if (!c)
		return;
	/* Workers notice `closing` at their next wait and hand their watch
	 * back; a libvirt call in progress finishes first (at most libvirt's
	 * own 5 s). */
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	pthread_cond_broadcast(&c->cond);
	while (!VMACT_LIST_IS_EMPTY(c->watches))
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	eworks_end(c);
	if (c->vc) {
		unregister_all(c, c->vc);
		virConnectClose(c->vc);
		c->vc = NULL;
	}
	hp_evloop_put();
	/* Completions not delivered yet release their worker, unreported. */
	VMACT_LIST_FOREACH_SAFE(queue, it, next, c->queue) {
		VMACT_LIST_REMOVE(queue, c->queue, it);
		if (it->done)
			it->done(c, it->userdata, false);
		else
			free(it);
	}
	sd_event_source_disable_unref(c->efd_src);
	sd_event_source_disable_unref(c->retry_src);
	sd_event_unref(c->event);
	close(c->efd);
	free(c->uri);
	free(c->qemu_rundir);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

bool hp_conn_is_up(struct hp_conn *c)
{
	bool up;

	pthread_mutex_lock(&c->lock);
	up = c->vc != NULL;
	pthread_mutex_unlock(&c->lock);
	return up;
}
