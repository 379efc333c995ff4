/* SPDX-License-Identifier: Apache-2.0 */
/* libvirt's default event implementation, run in one dedicated thread. */
#include "hotplug/evloop.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "hotplug/virt-error.h"

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
		/* A timer keeps virEventRunDefaultImpl from sleeping forever
		 * and lets hp_evloop_put wake the thread to stop it. */
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

void hp_evloop_put(void)
{
	pthread_mutex_lock(&g_lock);
	if (--g_users == 0) {
		atomic_store(&g_stop, true);
		virEventUpdateTimeout(g_wake_timer, 0);
		pthread_join(g_thread, NULL);
	}
	pthread_mutex_unlock(&g_lock);
}
