/* SPDX-License-Identifier: Apache-2.0 */
/* What vmact-cloudprovider remembers, and only until the next Refresh:
 * cluster-autoscaler caches NodeGroups and NodeGroupForNode between two
 * Refresh calls, so the answers it may mix within one loop must come from
 * one view of the groups (doc/cloudprovider.md, "Consistency"). The view
 * is a snapshot of groupd's group list taken at Refresh (or at the first
 * call after a failed one) and the node-to-group answers given since.
 * Any thread. */
#pragma once

#include <stdint.h>

#include "base/error.h"
#include "cloudprovider/group.h"

struct cp_cache;

int cp_cache_new(const char *groupd_socket, struct cp_cache **out, struct vmact_err *err);
void cp_cache_free(struct cp_cache *c);

/* The current snapshot (a reference the caller drops with
 * cp_groups_unref), fetched from groupd within timeout_usec when there is
 * none. Errors: cp_groupd_call's. */
int cp_cache_groups(struct cp_cache *c, uint64_t timeout_usec, struct cp_groups **out,
		    struct vmact_err *err);

/* Forgets everything and takes a new snapshot. On failure the cache stays
 * empty, so the next call asks groupd again. */
int cp_cache_refresh(struct cp_cache *c, uint64_t timeout_usec, struct vmact_err *err);

/* The group a node was said to belong to since the snapshot `view` was
 * taken: a malloc'd id, or NULL when not asked yet (or view is no longer
 * current). */
char *cp_cache_node_get(struct cp_cache *c, const struct cp_groups *view, const char *key);
/* Remembers it, unless a Refresh replaced `view` in the meantime. */
void cp_cache_node_put(struct cp_cache *c, const struct cp_groups *view, const char *key,
		       const char *group_id);
