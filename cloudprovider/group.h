/* SPDX-License-Identifier: Apache-2.0 */
/* A node group as vmact-groupd describes it (doc/cloudprovider.md, "The
 * RPCs"), decoded once from its JSON into plain C so
 * that call threads share it read-only. A set of groups is one
 * snapshot with a reference count: the cache swaps snapshots at Refresh
 * while calls still hold the old one. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct cp_kv {
	char *key, *value;
};

struct cp_taint {
	char *key, *value, *effect;
};

/* What one of the group's VMs boots with. */
struct cp_template {
	uint32_t vcpus, max_vcpus;
	uint64_t memory_bytes, max_memory_bytes;
	uint64_t ephemeral_bytes; /* the node's ephemeral-storage; 0: not said */
	uint32_t pods;
	char *arch; /* Kubernetes' (Go's) name: amd64, arm64, ... */
	char *os;
};

/* The NodeGroupAutoscalingOptions the group's config sets; `set` says
 * which (CP_OPT_*), the others come from the autoscaler's defaults. */
enum {
	CP_OPT_UTIL = 1u << 0,
	CP_OPT_GPU_UTIL = 1u << 1,
	CP_OPT_UNNEEDED = 1u << 2,
	CP_OPT_UNREADY = 1u << 3,
	CP_OPT_PROVISION = 1u << 4,
	CP_OPT_ZERO_OR_MAX = 1u << 5,
	CP_OPT_IGNORE_DS = 1u << 6,
	CP_OPT_STARTUP = 1u << 7,
	CP_OPT_NON_ATOMIC = 1u << 8,
};

struct cp_options {
	unsigned set;
	double util, gpu_util;
	double unneeded_s, unready_s, provision_s, startup_s;
	bool zero_or_max, ignore_ds, non_atomic;
};

struct cp_group {
	char *id;
	int32_t min, max, target;
	struct cp_kv *labels; /* sorted by key, as Kubernetes marshals maps */
	size_t nlabels;
	struct cp_taint *taints;
	size_t ntaints;
	struct cp_template tmpl;
	struct cp_options opts;
	char *debug; /* one line for NodeGroup.debug */
};

struct cp_groups {
	int refs; /* atomic */
	size_t n;
	struct cp_group *g;
};

/* Decodes one group object; errors name the key ("template.vcpus: ...").
 * On failure *g is left for cp_group_clear. */
int cp_group_from_json(const json_t *obj, struct cp_group *g, struct vmact_err *err);
void cp_group_clear(struct cp_group *g);

/* {"groups": [...]} into a snapshot with one reference; errors name the
 * group ("groups[2].max: ..."). Duplicate ids are refused. */
int cp_groups_from_json(const json_t *root, struct cp_groups **out, struct vmact_err *err);
struct cp_groups *cp_groups_ref(struct cp_groups *s);
void cp_groups_unref(struct cp_groups *s);
const struct cp_group *cp_groups_find(const struct cp_groups *s, const char *id);

/* Go's GOARCH for a libvirt/uname architecture name (x86_64 -> amd64);
 * the name itself when it is already one or unknown. */
const char *cp_group_goarch(const char *arch);
