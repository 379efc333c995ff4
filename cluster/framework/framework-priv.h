/* SPDX-License-Identifier: Apache-2.0 */
/* The framework's insides, shared by its files only, which call each other
 * one way (tests/checks/check-cycles.sh):
 *   framework.c    a framework built from its profile, freed; status names;
 *                  the tie-breaking random numbers
 *     -> profile.c  a profile's JSON checked, and each extension point's
 *                   plugins resolved from it and the defaults
 *   schedule.c     the extension points run: the queue's order, the
 *                  scheduling cycle, the binding cycle -> framework.c
 *   waiting.c      the VMs a Permit plugin holds, until allowed, rejected
 *                  or past their deadline
 *   cycle-state.c  the cycle state the plugins of one VM share */
#pragma once

#ifndef CL_FW_PRIV_ALLOW
#error "framework-priv.h is private to cluster/framework/: include cluster/framework/framework.h"
#endif

#include <pthread.h>

#include "cluster/framework/framework.h"

/* One instantiated plugin: shared by every point that enables it, as the
 * Kubernetes framework builds each plugin once per profile. */
struct instance {
	const struct cl_fw_plugin_ops *ops;
	void *state;
};

struct slot {
	struct instance *inst;
	int64_t weight; /* score only */
};

struct waiting_vm {
	struct cl_fw_waiting w;
	bool allowed;
	char msg[CL_FW_MSG_MAX];
};

struct cl_fw {
	char name[CL_FW_NAME_MAX];
	struct instance inst[CL_FW_MAX_PLUGINS * CL_FW_N_POINTS];
	size_t n_inst;
	struct slot points[CL_FW_N_POINTS][CL_FW_MAX_PLUGINS];
	size_t n_points[CL_FW_N_POINTS];
	struct cl_fw_handle handle; /* what the plugins were given */
	uint64_t rng;               /* xorshift64 state: ties among hosts */
	pthread_mutex_t lock;       /* the waiting and resolved VMs */
	struct waiting_vm *waiting;
	size_t n_waiting, cap_waiting;
	struct waiting_vm *resolved;
	size_t n_resolved, cap_resolved;
};

/* profile.c: checks a profile's shape and names against the plugin table;
 * -EINVAL naming the key. */
int cl_fw_profile_check(const json_t *profile, const char *path,
			const struct cl_fw_plugin_table *table, struct vmact_err *err);

/* profile.c: fills fw->points[point] (and fw->inst) from the defaults and
 * the profile (NULL: the defaults alone), initialising each plugin once;
 * an error names the key. */
int cl_fw_profile_resolve(struct cl_fw *fw, const struct cl_fw_plugin_table *table,
			  const struct cl_fw_defaults *defaults, const json_t *profile,
			  const char *path, enum cl_fw_point point, const struct cl_fw_handle *h,
			  struct vmact_err *err);

/* framework.c: the next number of fw's generator (ties among hosts). */
uint64_t cl_fw_random(struct cl_fw *fw);
