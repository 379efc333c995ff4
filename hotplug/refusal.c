/* SPDX-License-Identifier: Apache-2.0 */
#include "hotplug/refusal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"

/* Process-wide: the QEMU process is the same whichever connection saw its
 * unplug get lost. A ring: the oldest entry is recycled; 64 VMs with a
 * broken unplug since the daemon started is far beyond a real host. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char uuid[HP_UUID_LEN];
	int id;
} g_lost[64];
static size_t g_n, g_next;

static bool lost_locked(const char *uuid, int id)
{
	for (size_t i = 0; i < g_n; i++)
		if (g_lost[i].id == id && !strcmp(g_lost[i].uuid, uuid))
			return true;
	return false;
}

void hp_vcpus_refuse(const char *uuid, int id)
{
	pthread_mutex_lock(&g_lock);
	if (!lost_locked(uuid, id)) {
		g_lost[g_next].id = id;
		snprintf(g_lost[g_next].uuid, sizeof(g_lost[g_next].uuid), "%s", uuid);
		g_next = (g_next + 1) % ARRAY_SIZE(g_lost);
		if (g_n < ARRAY_SIZE(g_lost))
			g_n++;
	}
	pthread_mutex_unlock(&g_lock);
}

bool hp_vcpus_lost_unplug(const char *uuid, int id)
{
	bool lost;

	pthread_mutex_lock(&g_lock);
	lost = lost_locked(uuid, id);
	pthread_mutex_unlock(&g_lock);
	return lost;
}

void hp_vcpus_refusal_apply(struct hp_state *st)
{
	bool desync = st->qemu_vcpus >= 0 && (unsigned)st->qemu_vcpus != st->vcpus_current;

	if (desync)
		hp_vcpus_refuse(st->uuid, st->id);
	if (desync)
		st->vcpus_refusal = HP_VCPUS_DESYNC;
	else if (hp_vcpus_lost_unplug(st->uuid, st->id))
		st->vcpus_refusal = HP_VCPUS_LOST_UNPLUG;
	else
		st->vcpus_refusal = HP_VCPUS_ALLOWED;
	st->vcpus_refused = st->vcpus_refusal != HP_VCPUS_ALLOWED;
}
