/* SPDX-License-Identifier: Apache-2.0 */
/* libvirt's default event implementation, run in one dedicated thread. */
#include "hotplug/evloop.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "hotplug/virt-error.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_registered;
static unsigned g_users;
static pthread_t g_thread;
static atomic_bool g_stop;
/* Written to wake the thread: work was posted, or it is to stop. An
 * eventfd the thread watches, not a libvirt timer set from here: setting
 * one takes the event loop's locks, which the thread just woken takes
 * too, and the two met often enough to double the wake-ups of a loaded
 * host (doc/actuation.md, "Wake-ups"). */
static int g_wake_fd = -1;
/* Work posted for the thread; its own lock: g_lock is held while the
 * thread is joined. */
static pthread_mutex_t g_qlock = PTHREAD_MUTEX_INITIALIZER;
static struct hp_evwork *g_work;

static void silent_error(void *ud, virErrorPtr e)
{
	/* Library code never prints; errors travel in struct vmact_err. */
}

static void wake(void)
{
	uint64_t one = 1;

	/* The counter cannot overflow in practice; a failed write leaves the
	 * work to the next one. */
	if (write(g_wake_fd, &one, sizeof(one)) < 0) {
	}
}

/* The eventfd is read before the queue is taken, so that work posted
 * while this runs wakes the thread again. */
static void on_wake(int watch, int fd, int events, void *opaque)
{
	struct hp_evwork *list, *w, *next;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
	}
	pthread_mutex_lock(&g_qlock);
	list = g_work;
	g_work = NULL;
	VMACT_LIST_FOREACH(work, w, list)
		w->queued = false;
	pthread_mutex_unlock(&g_qlock);
	/* run() may free w: the next one first. */
	for (w = list; w; w = next) {
		next = w->work_next;
		w->work_next = w->work_prev = NULL;
		w->run(w);
	}
}

void hp_evloop_post(struct hp_evwork *w)
{
	pthread_mutex_lock(&g_qlock);
	VMACT_LIST_APPEND(work, g_work, w);
	w->queued = true;
	pthread_mutex_unlock(&g_qlock);
	wake();
}

bool hp_evloop_cancel(struct hp_evwork *w)
{
	bool taken;

	pthread_mutex_lock(&g_qlock);
	taken = w->queued;
	if (taken) {
		VMACT_LIST_REMOVE(work, g_work, w);
		w->queued = false;
	}
	pthread_mutex_unlock(&g_qlock);
	return taken;
}

static void *ev_thread(void *arg)
{
	while (!atomic_load(&g_stop))
		if (virEventRunDefaultImpl() < 0)
			break;
	return NULL;
}

int hp_evloop_get(struct vmact_err *err)
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
		/* The thread wakes only for libvirt's own work and for this
		 * (no periodic tick: a tick a second was a wake-up a second
		 * of an idle vmactd, doc/actuation.md "Wake-ups"). */
		g_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (g_wake_fd < 0) {
			r = vmact_err_set(err, errno, "eventfd: %m");
			goto out;
		}
		if (virEventAddHandle(g_wake_fd, VIR_EVENT_HANDLE_READABLE, on_wake, NULL, NULL) <
		    0) {
			r = hp_virt_err(err, "virEventAddHandle");
			close(g_wake_fd);
			g_wake_fd = -1;
			goto out;
		}
		g_registered = true;
	}
	if (g_users++ == 0) {
		atomic_store(&g_stop, false);
		if ((r = -pthread_create(&g_thread, NULL, ev_thread, NULL)) < 0) {
			g_users--;
			vmact_err_set(err, -r, "cannot start the libvirt event thread");
		}
	}
out:
	pthread_mutex_unlock(&g_lock);
	return r;
}

void hp_evloop_put(void)
{
	pthread_mutex_lock(&g_lock);
	if (--g_users == 0) {
		atomic_store(&g_stop, true);
		wake();
		pthread_join(g_thread, NULL);
	}
	pthread_mutex_unlock(&g_lock);
}
