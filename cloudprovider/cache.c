/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "cloudprovider/groupd.h"
#include "shared/group-api.h"

/* A cluster's nodes, with room; past it answers are still right, only no
 * longer remembered (the autoscaler caches them itself anyway). */
#define NODES_MAX 65536u
#define BUCKETS   1024u

struct node_entry {
	struct node_entry *next;
	char *key, *group;
};

struct cp_cache {
	pthread_mutex_t lock;
	char *socket;
	struct cp_groups *view; /* NULL: none (yet, or after a failed refresh) */
	struct node_entry *buckets[BUCKETS];
	unsigned nodes;
};

DEFINE_PTR_CLEANUP(cp_cache_jsonp, json_t, json_decref)

int cp_cache_new(const char *groupd_socket, struct cp_cache **out, struct vmact_err *err)
{
	struct cp_cache *c = calloc(1, sizeof(*c));

	if (!c || !(c->socket = strdup(groupd_socket))) {
		free(c);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

static void forget_nodes(struct cp_cache *c)
{
	for (unsigned i = 0; i < BUCKETS; i++) {
		struct node_entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e->key);
			free(e->group);
			free(e);
		}
		c->buckets[i] = NULL;
	}
	c->nodes = 0;
}

void cp_cache_free(struct cp_cache *c)
{
	if (!c)
		return;
	forget_nodes(c);
	cp_groups_unref(c->view);
	pthread_mutex_destroy(&c->lock);
	free(c->socket);
	free(c);
}

static int fetch(struct cp_cache *c, uint64_t timeout_usec, struct cp_groups **out,
		 struct vmact_err *err)
{
	_cleanup_(cp_cache_jsonp) json_t *doc = NULL;
	int r = cp_groupd_call(c->socket, "GET", VMACT_GAPI_PATH_GROUPS, NULL, timeout_usec, &doc,
			       err);

	if (r < 0)
		return r;
	r = cp_groups_from_json(doc, out, err);
	/* -EPROTO: an answer that is not the API's is groupd's fault, an
	 * INTERNAL for the caller */
	return r < 0 ? vmact_err_prefix(err, "vmact-groupd's GET " VMACT_GAPI_PATH_GROUPS) : 0;
}

/* Installs s as the view unless one appeared meanwhile (two first calls
 * racing): the first one wins, so all callers share one view. */
static struct cp_groups *install(struct cp_cache *c, struct cp_groups *s, bool replace)
{
	struct cp_groups *old = NULL, *cur;

	pthread_mutex_lock(&c->lock);
	if (replace || !c->view) {
		old = c->view;
		c->view = s;
		forget_nodes(c);
		s = NULL;
	}
	cur = cp_groups_ref(c->view);
	pthread_mutex_unlock(&c->lock);
	cp_groups_unref(old);
	cp_groups_unref(s);
	return cur;
}

int cp_cache_groups(struct cp_cache *c, uint64_t timeout_usec, struct cp_groups **out,
		    struct vmact_err *err)
{
	struct cp_groups *s;
	int r;

	pthread_mutex_lock(&c->lock);
	*out = cp_groups_ref(c->view);
	pthread_mutex_unlock(&c->lock);
	if (*out)
		return 0;
	r = fetch(c, timeout_usec, &s, err);
	if (r < 0)
		return r;
	*out = install(c, s, false);
	return 0;
}

int cp_cache_refresh(struct cp_cache *c, uint64_t timeout_usec, struct vmact_err *err)
{
	struct cp_groups *s, *old;
	int r;

	pthread_mutex_lock(&c->lock);
	old = TAKE_PTR(c->view);
	forget_nodes(c);
	pthread_mutex_unlock(&c->lock);
	cp_groups_unref(old);
	r = fetch(c, timeout_usec, &s, err);
	if (r < 0)
		return r;
	cp_groups_unref(install(c, s, true));
	return 0;
}

static unsigned bucket(const char *key)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return h % BUCKETS;
}

char *cp_cache_node_get(struct cp_cache *c, const struct cp_groups *view, const char *key)
{
	char *id = NULL;

	pthread_mutex_lock(&c->lock);
	if (c->view == view) {
		for (struct node_entry *e = c->buckets[bucket(key)]; e; e = e->next)
			if (!strcmp(e->key, key)) {
				id = strdup(e->group);
				break;
			}
	}
	pthread_mutex_unlock(&c->lock);
	return id;
}

void cp_cache_node_put(struct cp_cache *c, const struct cp_groups *view, const char *key,
		       const char *group_id)
{
	struct node_entry *e;
	unsigned b = bucket(key);

	pthread_mutex_lock(&c->lock);
	if (c->view != view || c->nodes >= NODES_MAX)
		goto out;
	for (e = c->buckets[b]; e; e = e->next)
		if (!strcmp(e->key, key))
			goto out;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto out;
	e->key = strdup(key);
	e->group = strdup(group_id);
	if (!e->key || !e->group) {
		free(e->key);
		free(e->group);
		free(e);
		goto out;
	}
	e->next = c->buckets[b];
	c->buckets[b] = e;
	c->nodes++;
out:
	pthread_mutex_unlock(&c->lock);
}
