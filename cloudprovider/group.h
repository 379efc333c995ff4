/* SPDX-License-Identifier: Apache-2.0 */
/* The node groups as vmact-groupd describes them (doc/cloudprovider.md,
 * "The RPCs"), decoded once by the API's codec (shared/group-api.h) so
 * that call threads share them read-only. A set of groups is one
 * snapshot with a reference count: the cache swaps snapshots at Refresh
 * while calls still hold the old one. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cloudprovider/arena.h"
#include "shared/group-api.h"

struct cp_groups {
	int refs; /* atomic */
	size_t n;
	struct vmact_gapi_group *g; /* labels sorted by key, as Kubernetes marshals maps */
	struct vmact_gapi_groups api;
};

/* GET /v1/groups's answer into a snapshot with one reference; errors
 * name the group ("groups[2]: max: ..."). Duplicate ids are refused. */
int cp_groups_from_json(json_t *root, struct cp_groups **out, struct vmact_err *err);
struct cp_groups *cp_groups_ref(struct cp_groups *s);
void cp_groups_unref(struct cp_groups *s);
const struct vmact_gapi_group *cp_groups_find(const struct cp_groups *s, const char *id);

/* One line for NodeGroup.debug: what an operator reading the
 * autoscaler's logs needs to find the group on the hosts; arena memory,
 * NULL when it is full. */
char *cp_group_debug(const struct vmact_gapi_group *g, struct cp_arena *a);

/* Go's GOARCH for a libvirt/uname architecture name (x86_64 -> amd64);
 * the name itself when it is already one or unknown. */
const char *cp_group_goarch(const char *arch);
