/* SPDX-License-Identifier: Apache-2.0 */
/* The waiting VMs: those a Permit plugin answered Wait for, kept until
 * every waiting plugin allowed them, one rejected them or their deadline
 * passed, under the framework's lock (the API's threads allow and reject;
 * the engine takes the results). */
#define CL_FW_PRIV_ALLOW
#include "cluster/framework/framework-priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/macro.h"

int cl_fw_wait(struct cl_fw *fw, const struct cl_fw_vm *vm, const struct cl_fw_result *res,
	       uint64_t now_usec)
{
	struct cl_fw_waiting *w;
	int r = 0;

	pthread_mutex_lock(&fw->lock);
	for (size_t i = 0; i < fw->n_waiting; i++)
		if (strcmp(fw->waiting[i].w.uid, vm->uid) == 0) {
			r = -EEXIST;
			goto out;
		}
	if (fw->n_waiting == fw->cap_waiting) {
		size_t cap = fw->cap_waiting ? fw->cap_waiting * 2 : 8;
		struct waiting_vm *nw = realloc(fw->waiting, cap * sizeof(*nw));

		if (!nw) {
			r = -ENOMEM;
			goto out;
		}
		fw->waiting = nw;
		fw->cap_waiting = cap;
	}
	memset(&fw->waiting[fw->n_waiting], 0, sizeof(fw->waiting[0]));
	w = &fw->waiting[fw->n_waiting++].w;
	snprintf(w->uid, sizeof(w->uid), "%s", vm->uid);
	snprintf(w->name, sizeof(w->name), "%s", vm->name);
	snprintf(w->group, sizeof(w->group), "%s", vm->group);
	snprintf(w->host, sizeof(w->host), "%s", res->host);
	w->since_usec = now_usec;
	w->deadline_usec = now_usec + res->wait_usec;
	w->n_pending = res->n_waiting;
	memcpy(w->pending, res->waiting, sizeof(w->pending));
out:
	pthread_mutex_unlock(&fw->lock);
	return r;
}

void cl_fw_waiting_each(struct cl_fw *fw, void (*fn)(void *ud, const struct cl_fw_waiting *w),
			void *ud)
{
	pthread_mutex_lock(&fw->lock);
	/* Kept in arrival order (removal shifts). */
	for (size_t i = 0; i < fw->n_waiting; i++)
		fn(ud, &fw->waiting[i].w);
	pthread_mutex_unlock(&fw->lock);
}

size_t cl_fw_waiting_count(struct cl_fw *fw)
{
	size_t n;

	pthread_mutex_lock(&fw->lock);
	n = fw->n_waiting;
	pthread_mutex_unlock(&fw->lock);
	return n;
}

static ssize_t waiting_index(const struct cl_fw *fw, const char *uid)
{
	for (size_t i = 0; i < fw->n_waiting; i++)
		if (strcmp(fw->waiting[i].w.uid, uid) == 0)
			return (ssize_t)i;
	return -1;
}

int cl_fw_waiting_get(struct cl_fw *fw, const char *uid, struct cl_fw_waiting *out)
{
	ssize_t i;

	pthread_mutex_lock(&fw->lock);
	i = waiting_index(fw, uid);
	if (i >= 0)
		*out = fw->waiting[i].w;
	pthread_mutex_unlock(&fw->lock);
	return i >= 0 ? 0 : -ENOENT;
}

/* Moves waiting[i] to the resolved list (lock held). When that list
 * cannot grow, the VM stays waiting and its deadline rejects it. */
static int resolve(struct cl_fw *fw, size_t i, bool allowed, const char *msg)
{
	if (fw->n_resolved == fw->cap_resolved) {
		size_t cap = fw->cap_resolved ? fw->cap_resolved * 2 : 8;
		struct waiting_vm *nr = realloc(fw->resolved, cap * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		fw->resolved = nr;
		fw->cap_resolved = cap;
	}
	fw->resolved[fw->n_resolved] = fw->waiting[i];
	fw->resolved[fw->n_resolved].allowed = allowed;
	snprintf(fw->resolved[fw->n_resolved].msg, CL_FW_MSG_MAX, "%s", msg ? msg : "");
	fw->n_resolved++;
	memmove(&fw->waiting[i], &fw->waiting[i + 1],
		(fw->n_waiting - i - 1) * sizeof(*fw->waiting));
	fw->n_waiting--;
	return 0;
}

int cl_fw_allow(struct cl_fw *fw, const char *uid, const char *plugin)
{
	struct cl_fw_waiting *w;
	ssize_t i;
	int r = 0;

	pthread_mutex_lock(&fw->lock);
	i = waiting_index(fw, uid);
	if (i < 0) {
		r = -ENOENT;
		goto out;
	}
	w = &fw->waiting[i].w;
	if (!plugin) {
		w->n_pending = 0;
	} else {
		size_t k;

		for (k = 0; k < w->n_pending; k++)
			if (strcmp(w->pending[k], plugin) == 0)
				break;
		if (k == w->n_pending) {
			r = -ESRCH;
			goto out;
		}
		memmove(w->pending[k], w->pending[k + 1], (w->n_pending - k - 1) * CL_FW_NAME_MAX);
		w->n_pending--;
	}
	if (!w->n_pending) {
		r = resolve(fw, (size_t)i, true, NULL);
		if (r == 0)
			r = 1;
	}
out:
	pthread_mutex_unlock(&fw->lock);
	return r;
}

int cl_fw_reject(struct cl_fw *fw, const char *uid, const char *msg)
{
	ssize_t i;
	int r;

	pthread_mutex_lock(&fw->lock);
	i = waiting_index(fw, uid);
	r = i < 0 ? -ENOENT : resolve(fw, (size_t)i, false, msg);
	pthread_mutex_unlock(&fw->lock);
	return r;
}

size_t cl_fw_take_resolved(struct cl_fw *fw,
			   void (*fn)(void *ud, const struct cl_fw_waiting *w, bool allowed,
				      const char *msg),
			   void *ud)
{
	struct waiting_vm *taken;
	size_t n;

	pthread_mutex_lock(&fw->lock);
	taken = fw->resolved;
	n = fw->n_resolved;
	fw->resolved = NULL;
	fw->n_resolved = fw->cap_resolved = 0;
	pthread_mutex_unlock(&fw->lock);
	/* Outside the lock: fn may start binds, which may wait again. */
	for (size_t i = 0; i < n; i++)
		fn(ud, &taken[i].w, taken[i].allowed, taken[i].msg);
	free(taken);
	return n;
}

uint64_t cl_fw_next_deadline(struct cl_fw *fw)
{
	uint64_t next = 0;

	pthread_mutex_lock(&fw->lock);
	for (size_t i = 0; i < fw->n_waiting; i++)
		if (!next || fw->waiting[i].w.deadline_usec < next)
			next = fw->waiting[i].w.deadline_usec;
	pthread_mutex_unlock(&fw->lock);
	return next;
}

size_t cl_fw_expire(struct cl_fw *fw, uint64_t now_usec,
		    void (*fn)(void *ud, const struct cl_fw_waiting *w), void *ud)
{
	struct cl_fw_waiting gone[32];
	size_t n = 0, total = 0;

	/* The callbacks run outside the lock, a batch at a time. */
	do {
		n = 0;
		pthread_mutex_lock(&fw->lock);
		for (size_t i = 0; i < fw->n_waiting && n < ARRAY_SIZE(gone);) {
			if (fw->waiting[i].w.deadline_usec <= now_usec) {
				gone[n++] = fw->waiting[i].w;
				memmove(&fw->waiting[i], &fw->waiting[i + 1],
					(fw->n_waiting - i - 1) * sizeof(*fw->waiting));
				fw->n_waiting--;
			} else {
				i++;
			}
		}
		pthread_mutex_unlock(&fw->lock);
		for (size_t i = 0; i < n && fn; i++)
			fn(ud, &gone[i]);
		total += n;
	} while (n == ARRAY_SIZE(gone));
	return total;
}
