/* SPDX-License-Identifier: Apache-2.0 */
/* The cycle state: what the plugins of one VM's scheduling and binding
 * cycles leave each other, by key (framework.h). */
#include "cluster/framework/framework.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char *key;
	void *data;
	void (*free_fn)(void *);
};

struct cl_fw_cycle {
	struct entry *e;
	size_t n, cap;
};

int cl_fw_cycle_new(struct cl_fw_cycle **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void entry_clear(struct entry *e)
{
	if (e->free_fn)
		e->free_fn(e->data);
	free(e->key);
}

void cl_fw_cycle_free(struct cl_fw_cycle *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->n; i++)
		entry_clear(&cs->e[i]);
	free(cs->e);
	free(cs);
}

static struct entry *find(const struct cl_fw_cycle *cs, const char *key)
{
	for (size_t i = 0; i < cs->n; i++)
		if (strcmp(cs->e[i].key, key) == 0)
			return &cs->e[i];
	return NULL;
}

int cl_fw_cycle_write(struct cl_fw_cycle *cs, const char *key, void *data, void (*free_fn)(void *))
{
	struct entry *e = find(cs, key);

	if (e) {
		if (e->free_fn && e->data != data)
			e->free_fn(e->data);
		e->data = data;
		e->free_fn = free_fn;
		return 0;
	}
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 8;
		struct entry *n = realloc(cs->e, cap * sizeof(*n));

		if (!n)
			goto oom;
		cs->e = n;
		cs->cap = cap;
	}
	e = &cs->e[cs->n];
	e->key = strdup(key);
	if (!e->key)
		goto oom;
	e->data = data;
	e->free_fn = free_fn;
	cs->n++;
	return 0;
oom:
	if (free_fn)
		free_fn(data);
	return -ENOMEM;
}

void *cl_fw_cycle_read(const struct cl_fw_cycle *cs, const char *key)
{
	struct entry *e = find(cs, key);

	return e ? e->data : NULL;
}

void cl_fw_cycle_delete(struct cl_fw_cycle *cs, const char *key)
{
	struct entry *e = find(cs, key);

	if (!e)
		return;
	entry_clear(e);
	*e = cs->e[--cs->n];
}
