/* SPDX-License-Identifier: Apache-2.0 */
/* libvirt connection: event thread, sd-event hand-over through an eventfd,
 * keepalive, close callback, reconnect with backoff. See hotplug.h for why
 * libvirt's events run in their own thread. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <libvirt/virterror.h>

#include "base/macro.h"
#include "hotplug/internal.h"

/* ---- the process-wide libvirt event thread ----------------------------- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_registered;
static unsigned g_users;
static pthread_t g_thread;
static atomic_bool g_stop;
static int g_wake_timer = -1;

static void silent_error(void *ud, virErrorPtr e)
{
	/* Library code never prints; errors travel in struct vmact_err. */
}

static void wake_noop(int timer, void *opaque)
{
}

static void *ev_thread(void *arg)
{
	while (!atomic_load(&g_stop))
		if (virEventRunDefaultImpl() < 0)
			break;
	return NULL;
}

static int evloop_get(struct vmact_err *err)
{
	int r = 0;

	pthread_mutex_lock(&g_lock);
	if (!g_registered) {
		struct sigaction sa;

		/* libvirt writes to its socket without MSG_NOSIGNAL: when
		 * libvirtd dies, the next RPC raises SIGPIPE and, by default,
		 * kills the whole daemon silently. libvirt asks its clients to
		 * ignore it; do so unless the program installed a handler. */
		if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
			signal(SIGPIPE, SIG_IGN);
		virSetErrorFunc(NULL, silent_error);
		if (virEventRegisterDefaultImpl() < 0) {
			r = hp_virt_err(err, "virEventRegisterDefaultImpl");
			goto out;
		}
		/* A timer keeps virEventRunDefaultImpl from sleeping forever
		 * and lets evloop_put wake the thread to stop it. */
		g_wake_timer = virEventAddTimeout(1000, wake_noop, NULL, NULL);
		if (g_wake_timer < 0) {
			r = hp_virt_err(err, "virEventAddTimeout");
			goto out;
		}
		g_registered = true;
	}
	if (g_users++ == 0) {
		atomic_store(&g_stop, false);
		virEventUpdateTimeout(g_wake_timer, 1000);
		if ((r = -pthread_create(&g_thread, NULL, ev_thread, NULL)) < 0) {
			g_users--;
			vmact_err_set(err, -r, "cannot start the libvirt event thread");
		}
	}
out:
	pthread_mutex_unlock(&g_lock);
	return r;
}

static void evloop_put(void)
{
	pthread_mutex_lock(&g_lock);
	if (--g_users == 0) {
		atomic_store(&g_stop, true);
		virEventUpdateTimeout(g_wake_timer, 0);
		pthread_join(g_thread, NULL);
	}
	pthread_mutex_unlock(&g_lock);
}

/* ---- errors ------------------------------------------------------------- */

int hp_virt_err(struct vmact_err *err, const char *what)
{
	virErrorPtr e = virGetLastError();
	int code = EIO;

	if (!e)
		return vmact_err_set(err, EIO, "%s failed", what);
	switch (e->code) {
	case VIR_ERR_NO_DOMAIN:
		code = ENODEV;
		break;
	case VIR_ERR_OPERATION_TIMEOUT:
		code = ETIMEDOUT;
		break;
	case VIR_ERR_SYSTEM_ERROR:
	case VIR_ERR_RPC:
	case VIR_ERR_NO_CONNECT:
	case VIR_ERR_INVALID_CONN:
	case VIR_ERR_AUTH_FAILED:
		code = ECONNRESET;
		break;
	case VIR_ERR_NO_SUPPORT:
	case VIR_ERR_OPERATION_UNSUPPORTED:
		code = EOPNOTSUPP;
		break;
	case VIR_ERR_INVALID_ARG:
	case VIR_ERR_XML_ERROR:
	case VIR_ERR_CONFIG_UNSUPPORTED:
	case VIR_ERR_XML_DETAIL:
		code = EINVAL;
		break;
	case VIR_ERR_NO_DOMAIN_METADATA:
		code = ENOENT;
		break;
	default:
		break;
	}
	return vmact_err_set(err, code, "%s: %s", what, e->message ? e->message : "libvirt error");
}

/* ---- queue to the sd-event thread ---------------------------------------- */

void hp_queue_push(struct hp_conn *c, struct hp_qitem *it)
{
	uint64_t one = 1;

	pthread_mutex_lock(&c->lock);
	it->next = NULL;
	if (c->q_tail)
		c->q_tail->next = it;
	else
		c->q_head = it;
	c->q_tail = it;
	pthread_mutex_unlock(&c->lock);
	/* An eventfd counter cannot overflow in practice; a failed write
	 * would only delay delivery to the next push. */
	if (write(c->efd, &one, sizeof(one)) < 0) {
	}
}

virConnectPtr hp_conn_get(struct hp_conn *c, unsigned *gen)
{
	virConnectPtr vc;

	pthread_mutex_lock(&c->lock);
	vc = c->vc;
	if (vc)
		virConnectRef(vc);
	if (gen)
		*gen = c->gen;
	pthread_mutex_unlock(&c->lock);
	return vc;
}

/* Runs in the libvirt event thread: copy, kick waiting operations, queue. */
static void domain_event(struct hp_conn *c, virDomainPtr dom, enum hp_event_kind kind,
			 const char *alias, uint64_t size_kib)
{
	struct hp_qitem *it = calloc(1, sizeof(*it));
	char uuid[VIR_UUID_STRING_BUFLEN] = "";
	const char *name = virDomainGetName(dom);

	virDomainGetUUIDString(dom, uuid);
	pthread_mutex_lock(&c->lock);
	for (struct hp_op *op = c->ops; op; op = op->next) {
		if (strcmp(op->uuid, uuid))
			continue;
		op->kicks++;
		if (kind == HP_EV_DOMAIN_STOPPED)
			op->stopped = true;
		if (kind == HP_EV_DEVICE_REMOVED && alias)
			snprintf(op->removed_alias, sizeof(op->removed_alias), "%s", alias);
		if (kind == HP_EV_DEVICE_REMOVAL_FAILED && alias)
			snprintf(op->removal_failed_alias, sizeof(op->removal_failed_alias), "%s",
				 alias);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (!it)
		return; /* the kick above still wakes a waiting operation */
	it->ev.kind = kind;
	snprintf(it->ev.uuid, sizeof(it->ev.uuid), "%s", uuid);
	snprintf(it->ev.name, sizeof(it->ev.name), "%s", name ? name : "");
	snprintf(it->ev.alias, sizeof(it->ev.alias), "%s", alias ? alias : "");
	it->ev.size_kib = size_kib;
	hp_queue_push(c, it);
}

static int cb_lifecycle(virConnectPtr vc, virDomainPtr dom, int event, int detail, void *opaque)
{
	if (event == VIR_DOMAIN_EVENT_STARTED)
		domain_event(opaque, dom, HP_EV_DOMAIN_STARTED, NULL, 0);
	else if (event == VIR_DOMAIN_EVENT_STOPPED)
		domain_event(opaque, dom, HP_EV_DOMAIN_STOPPED, NULL, 0);
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
	hp_queue_push(c, it);
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
		hp_queue_push(c, it);
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
	struct hp_qitem *it;
	uint64_t v;

	if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&c->lock);
	it = c->q_head;
	c->q_head = c->q_tail = NULL;
	pthread_mutex_unlock(&c->lock);
	while (it) {
		struct hp_qitem *next = it->next;

		if (it->disconnected) {
			unsigned gen;

			pthread_mutex_lock(&c->lock);
			gen = c->gen;
			pthread_mutex_unlock(&c->lock);
			if (it->gen == gen)
				lose_connection(c);
		} else if (it->op) {
			hp_op_complete(c, it->op);
		} else {
			c->fn(c, &it->ev, c->userdata);
		}
		free(it);
		it = next;
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
	if ((r = evloop_get(err)) < 0)
		goto fail_early;
	if ((r = do_connect(c, err)) < 0) {
		evloop_put();
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
	struct hp_qitem *it;
	struct hp_op *op;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	/* Workers notice `closing` at their next wait; a libvirt call in
	 * progress finishes first (at most libvirt's own 5 s). */
	for (;;) {
		pthread_mutex_lock(&c->lock);
		op = c->ops;
		if (op)
			c->ops = op->next;
		pthread_mutex_unlock(&c->lock);
		if (!op)
			break;
		pthread_join(op->thread, NULL);
		free(op);
	}
	if (c->vc) {
		unregister_all(c, c->vc);
		virConnectClose(c->vc);
		c->vc = NULL;
	}
	evloop_put();
	while ((it = c->q_head)) {
		c->q_head = it->next;
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

/* ---- reads ------------------------------------------------------------- */

DEFINE_PTR_CLEANUP(hp_domfreep, struct _virDomain, virDomainFree)
#define _cleanup_dom_ _cleanup_(hp_domfreep)

static int read_dom(struct hp_conn *c, virDomainPtr dom, struct hp_state *st,
		    struct vmact_err *err)
{
	_cleanup_free_ char *xml = NULL;
	struct vmact_err qerr = { 0 };
	int r, n;

	if (virDomainIsActive(dom) != 1)
		return vmact_err_set(err, ENODEV, "domain is not running");
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml)
		return hp_virt_err(err, "virDomainGetXMLDesc");
	if ((r = hp_state_parse(xml, st, err)) < 0)
		return r;
	n = hp_qemu_vcpu_threads(c->qemu_rundir, st->name, &st->qemu_vcpu_mask, &qerr);
	st->qemu_vcpus = n >= 0 ? n : -1;
	st->vcpus_refused = hp_state_vcpu_desync(st);
	return 0;
}

int hp_state_read_vc(struct hp_conn *c, virConnectPtr vc, const char *uuid, struct hp_state *st,
		     struct vmact_err *err)
{
	_cleanup_dom_ virDomainPtr dom = virDomainLookupByUUIDString(vc, uuid);

	if (!dom)
		return hp_virt_err(err, uuid);
	return read_dom(c, dom, st, err);
}

int hp_state_read(struct hp_conn *c, const char *uuid, struct hp_state *st,
		  struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c, NULL);
	int r;

	if (!vc)
		return vmact_err_set(err, ENOTCONN, "not connected to libvirtd (%s)", c->uri);
	r = hp_state_read_vc(c, vc, uuid, st, err);
	virConnectClose(vc);
	return r;
}

int hp_list_running(struct hp_conn *c, struct hp_state **out, size_t *n, struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c, NULL);
	virDomainPtr *doms = NULL;
	struct hp_state *arr = NULL;
	int nd, r = 0;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (!vc)
		return vmact_err_set(err, ENOTCONN, "not connected to libvirtd (%s)", c->uri);
	nd = virConnectListAllDomains(vc, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (nd < 0) {
		r = hp_virt_err(err, "virConnectListAllDomains");
		goto out;
	}
	arr = calloc(nd ? (size_t)nd : 1, sizeof(*arr));
	if (!arr) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nd; i++) {
		struct vmact_err e = { 0 };

		/* A domain that stopped since the listing is simply gone. */
		if (read_dom(c, doms[i], &arr[k], &e) == 0)
			k++;
	}
	*out = TAKE_PTR(arr);
	*n = k;
out:
	for (int i = 0; i < nd; i++)
		virDomainFree(doms[i]);
	free(doms);
	free(arr);
	virConnectClose(vc);
	return r;
}

int hp_meta_read(struct hp_conn *c, const char *uuid, struct hp_meta *meta,
		 struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(c, NULL);
	_cleanup_free_ char *xml = NULL;
	virDomainPtr dom;
	int r;

	if (!vc)
		return vmact_err_set(err, ENOTCONN, "not connected to libvirtd (%s)", c->uri);
	dom = virDomainLookupByUUIDString(vc, uuid);
	if (!dom) {
		r = hp_virt_err(err, uuid);
		goto out;
	}
	xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, HP_NS_URI,
				   VIR_DOMAIN_AFFECT_LIVE);
	if (!xml) {
		r = hp_virt_err(err, "virDomainGetMetadata");
		virDomainFree(dom);
		goto out;
	}
	virDomainFree(dom);
	r = hp_meta_parse(xml, meta, err);
out:
	virConnectClose(vc);
	return r;
}
