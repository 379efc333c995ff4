/* SPDX-License-Identifier: Apache-2.0 */
/* ManualApproval (cluster/plugins/plugins.h): a Permit plugin that makes new
 * members of the listed groups wait until an operator allows them
 * (`vmact-groupctl allow UID`, POST /v1/waiting/UID/allow) or rejects
 * them, at most timeoutSeconds (then they are rejected, as the
 * framework's Permit rules say). For staged roll-outs and for testing the
 * Permit path. A VM being moved (live migration) is not held. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/plugins/plugins.h"

/* The framework's cap on a Permit wait (Kubernetes: 15 min). */
#define MAX_WAIT_S 900

struct approval {
	json_t *groups; /* array of names; NULL: every group */
	uint64_t timeout_usec;
	bool standby; /* standby refills wait too */
};

static void approval_fini(void *p)
{
	struct approval *a = p;

	if (!a)
		return;
	json_decref(a->groups);
	free(a);
}

static int approval_init(const struct cl_fw_handle *h, const json_t *args, void **state,
			 struct vmact_err *err)
{
	struct approval a = { .timeout_usec = 300 * 1000000ULL }, *out;
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)args, key, v) {
		if (strcmp(key, "groups") == 0) {
			size_t i;
			json_t *g;

			if (!json_is_array(v))
				return vmact_err_set(err, EINVAL, "groups: a list of group ids");
			json_array_foreach(v, i, g)
				if (!json_is_string(g))
					return vmact_err_set(err, EINVAL, "groups[%zu]: a group id",
							     i);
			a.groups = v;
		} else if (strcmp(key, "timeoutSeconds") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > MAX_WAIT_S)
				return vmact_err_set(err, EINVAL,
						     "timeoutSeconds: an integer from 1 to %d",
						     MAX_WAIT_S);
			a.timeout_usec = (uint64_t)json_integer_value(v) * 1000000ULL;
		} else if (strcmp(key, "standby") == 0) {
			if (!json_is_boolean(v))
				return vmact_err_set(err, EINVAL, "standby: true or false");
			a.standby = json_is_true(v);
		} else {
			return vmact_err_set(err, EINVAL,
					     "%s: unknown key (groups, timeoutSeconds, standby)",
					     key);
		}
	}
	if (!h)
		return 0;
	out = calloc(1, sizeof(*out));
	if (!out)
		return vmact_err_set(err, ENOMEM, "out of memory");
	*out = a;
	json_incref(out->groups);
	*state = out;
	return 0;
}

static void approval_permit(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			    const char *host, uint64_t *timeout_usec, struct cl_fw_status *st)
{
	struct approval *a = p;
	bool listed = !a->groups;
	size_t i;
	json_t *g;

	/* A VM already running is moved, not admitted: it never waits. */
	if ((vm->standby && !a->standby) || vm->moving)
		return;
	json_array_foreach(a->groups, i, g)
		listed |= strcmp(json_string_value(g), vm->group) == 0;
	if (!listed)
		return;
	*timeout_usec = a->timeout_usec;
	cl_fw_status_set(st, CL_FW_WAIT, "waiting for an operator to allow %s on %s", vm->name,
			 host);
}

const struct cl_fw_plugin_ops cl_plugin_permit_manual_approval = {
	.name = "ManualApproval",
	.init = approval_init,
	.fini = approval_fini,
	.permit = approval_permit,
};
