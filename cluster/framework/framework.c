/* SPDX-License-Identifier: Apache-2.0 */
/* A framework built from its profile and freed; the status codes' names,
 * the helper of plugins that keep only their handle, and the random
 * numbers that break ties among hosts (framework-priv.h lists the other
 * files). */
#define CL_FW_PRIV_ALLOW
#include "cluster/framework/framework-priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/macro.h"

/* ---- status ---- */

const char *cl_fw_code_name(enum cl_fw_code c)
{
	static const char *const names[] = {
		[CL_FW_SUCCESS] = "Success",
		[CL_FW_ERROR] = "Error",
		[CL_FW_UNSCHEDULABLE] = "Unschedulable",
		[CL_FW_UNRESOLVABLE] = "UnschedulableAndUnresolvable",
		[CL_FW_WAIT] = "Wait",
		[CL_FW_SKIP] = "Skip",
	};

	return (unsigned)c < ARRAY_SIZE(names) ? names[c] : "Unknown";
}

void cl_fw_status_set(struct cl_fw_status *st, enum cl_fw_code code, const char *fmt, ...)
{
	va_list ap;

	st->code = code;
	va_start(ap, fmt);
	vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
	va_end(ap);
}

/* ---- plugins ---- */

int cl_fw_init_handle_only(const struct cl_fw_handle *h, const json_t *args, void **state,
			   struct vmact_err *err)
{
	struct cl_fw_handle *copy;

	if (args && json_object_size(args))
		return vmact_err_set(err, EINVAL, "this plugin takes no args");
	if (!h)
		return 0;
	copy = malloc(sizeof(*copy));
	if (!copy)
		return vmact_err_set(err, ENOMEM, "out of memory");
	*copy = *h;
	*state = copy;
	return 0;
}

int cl_fw_new(const struct cl_fw_plugin_table *table, const struct cl_fw_defaults *defaults,
	      const json_t *profile, const char *path, const struct cl_fw_handle *h,
	      struct cl_fw **out, struct vmact_err *err)
{
	struct cl_fw *fw;
	const char *sn;
	int r;

	if (profile && (r = cl_fw_profile_check(profile, path, table, err)) < 0)
		return r;
	fw = calloc(1, sizeof(*fw));
	if (!fw)
		return vmact_err_set(err, ENOMEM, "out of memory");
	pthread_mutex_init(&fw->lock, NULL);
	cl_fw_seed(fw, 0);
	if (h) {
		/* The plugins' handle leads back to this framework. */
		fw->handle = *h;
		fw->handle.fw = fw;
		h = &fw->handle;
	}
	sn = profile ? json_string_value(json_object_get(profile, "schedulerName")) : NULL;
	snprintf(fw->name, sizeof(fw->name), "%s", sn ? sn : "default");
	for (int p = 0; p < CL_FW_N_POINTS; p++) {
		r = cl_fw_profile_resolve(fw, table, defaults, profile, path, p, h, err);
		if (r < 0) {
			cl_fw_free(fw);
			return r;
		}
	}
	/* A pluginConfig for a plugin no point enabled is a mistake the
	 * operator would want to hear of. */
	if (profile && json_object_get(profile, "pluginConfig")) {
		size_t i;
		json_t *it;

		json_array_foreach(json_object_get(profile, "pluginConfig"), i, it) {
			const char *n = json_string_value(json_object_get(it, "name"));
			bool used = false;

			for (size_t k = 0; k < fw->n_inst; k++)
				used |= strcmp(fw->inst[k].ops->name, n) == 0;
			if (!used) {
				cl_fw_free(fw);
				return vmact_err_set(
					err, EINVAL,
					"%s.pluginConfig[%zu].name: plugin '%s' is not enabled "
					"at any extension point",
					path, i, n);
			}
		}
	}
	*out = fw;
	return 0;
}

void cl_fw_free(struct cl_fw *fw)
{
	if (!fw)
		return;
	for (size_t i = 0; i < fw->n_inst; i++)
		if (fw->inst[i].ops->fini)
			fw->inst[i].ops->fini(fw->inst[i].state);
	free(fw->waiting);
	free(fw->resolved);
	pthread_mutex_destroy(&fw->lock);
	free(fw);
}

void cl_fw_seed(struct cl_fw *fw, uint64_t seed)
{
	while (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		;
	fw->rng = seed;
}

/* xorshift64: enough to spread ties, cheap, one state per framework,
 * advanced atomically: a move's cycle may run beside a placement's. */
uint64_t cl_fw_random(struct cl_fw *fw)
{
	uint64_t old = __atomic_load_n(&fw->rng, __ATOMIC_RELAXED), x;

	do {
		x = old;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	} while (!__atomic_compare_exchange_n(&fw->rng, &old, x, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return x;
}

const char *cl_fw_scheduler_name(const struct cl_fw *fw)
{
	return fw->name;
}

size_t cl_fw_plugins(const struct cl_fw *fw, enum cl_fw_point p, const char **names, size_t max)
{
	for (size_t i = 0; i < fw->n_points[p] && i < max; i++)
		names[i] = fw->points[p][i].inst->ops->name;
	return fw->n_points[p];
}
