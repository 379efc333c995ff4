/* SPDX-License-Identifier: Apache-2.0 */
/* A profile (the configuration's "profiles", the Kubernetes
 * KubeSchedulerProfile's shape): its JSON checked against the plugin
 * table, and each extension point's plugins resolved from it and the
 * defaults, each plugin initialised once. */
#define CL_FW_PRIV_ALLOW
#include "cluster/framework/framework-priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"

const char *cl_fw_point_name(enum cl_fw_point p)
{
	static const char *const names[] = {
		[CL_FW_QUEUE_SORT] = "queueSort",
		[CL_FW_PRE_FILTER] = "preFilter",
		[CL_FW_FILTER] = "filter",
		[CL_FW_POST_FILTER] = "postFilter",
		[CL_FW_SCORE] = "score",
		[CL_FW_RESERVE] = "reserve",
		[CL_FW_PERMIT] = "permit",
		[CL_FW_PRE_BIND] = "preBind",
		[CL_FW_BIND] = "bind",
		[CL_FW_POST_BIND] = "postBind",
	};

	return (unsigned)p < ARRAY_SIZE(names) ? names[p] : "?";
}

static const struct cl_fw_plugin_ops *lookup(const struct cl_fw_plugin_table *table,
					     const char *name)
{
	for (size_t i = 0; table->plugins[i]; i++)
		if (strcmp(table->plugins[i]->name, name) == 0)
			return table->plugins[i];
	return NULL;
}

static bool implements(const struct cl_fw_plugin_ops *o, enum cl_fw_point p)
{
	switch (p) {
	case CL_FW_QUEUE_SORT:
		return o->less;
	case CL_FW_PRE_FILTER:
		return o->pre_filter;
	case CL_FW_FILTER:
		return o->filter;
	case CL_FW_POST_FILTER:
		return o->post_filter;
	case CL_FW_SCORE:
		return o->score;
	case CL_FW_RESERVE:
		return o->reserve;
	case CL_FW_PERMIT:
		return o->permit;
	case CL_FW_PRE_BIND:
		return o->pre_bind;
	case CL_FW_BIND:
		return o->bind;
	case CL_FW_POST_BIND:
		return o->post_bind;
	default:
		return false;
	}
}

/* The plugin's args in pluginConfig, NULL when none; -EINVAL for a
 * malformed list (named). */
static int plugin_args(const json_t *profile, const char *path, const char *name,
		       const json_t **out, struct vmact_err *err)
{
	const json_t *pc = profile ? json_object_get(profile, "pluginConfig") : NULL;
	size_t i;
	json_t *it;

	*out = NULL;
	if (!pc)
		return 0;
	json_array_foreach(pc, i, it) {
		const char *n = json_string_value(json_object_get(it, "name"));

		if (n && strcmp(n, name) == 0) {
			*out = json_object_get(it, "args");
			return 0;
		}
	}
	return 0;
}

static struct instance *instance_for(struct cl_fw *fw, const struct cl_fw_plugin_table *table,
				     const json_t *profile, const char *path, const char *name,
				     const struct cl_fw_handle *h, struct vmact_err *err, int *r)
{
	const struct cl_fw_plugin_ops *ops;
	const json_t *args;
	struct instance *in;

	for (size_t i = 0; i < fw->n_inst; i++)
		if (strcmp(fw->inst[i].ops->name, name) == 0)
			return &fw->inst[i];
	ops = lookup(table, name);
	if (!ops) {
		*r = -EINVAL;
		return NULL;
	}
	if ((*r = plugin_args(profile, path, name, &args, err)) < 0)
		return NULL;
	if (fw->n_inst == ARRAY_SIZE(fw->inst)) {
		*r = vmact_err_set(err, E2BIG, "%s: too many plugins", path);
		return NULL;
	}
	in = &fw->inst[fw->n_inst];
	in->ops = ops;
	in->state = NULL;
	if (ops->init) {
		struct vmact_err e2 = { 0 };

		*r = ops->init(h, args, &in->state, &e2);
		if (*r < 0) {
			vmact_err_set(err, -*r, "%s.pluginConfig[%s].args: %s", path, name, e2.msg);
			return NULL;
		}
	}
	fw->n_inst++;
	return in;
}

/* Checks an {"enabled": [...], "disabled": [...]} object's shape and
 * names; -EINVAL naming the key. */
static int check_set(const json_t *set, const char *p, const struct cl_fw_plugin_table *table,
		     enum cl_fw_point point, struct vmact_err *err)
{
	static const char *const lists[] = { "enabled", "disabled" };
	const char *key;
	json_t *v;

	if (!json_is_object(set))
		return vmact_err_set(err, EINVAL, "%s: must be an object", p);
	json_object_foreach((json_t *)set, key, v) {
		if (strcmp(key, "enabled") && strcmp(key, "disabled"))
			return vmact_err_set(err, EINVAL, "%s.%s: unknown key (enabled, disabled)",
					     p, key);
	}
	for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
		const json_t *arr = json_object_get(set, lists[l]);
		size_t i;
		json_t *it;

		if (!arr)
			continue;
		if (!json_is_array(arr))
			return vmact_err_set(err, EINVAL, "%s.%s: must be an array", p, lists[l]);
		json_array_foreach(arr, i, it) {
			const char *n, *k;
			json_t *x;

			if (!json_is_object(it))
				return vmact_err_set(err, EINVAL, "%s.%s[%zu]: must be an object",
						     p, lists[l], i);
			json_object_foreach(it, k, x) {
				if (strcmp(k, "name") && !(l == 0 && strcmp(k, "weight") == 0))
					return vmact_err_set(err, EINVAL,
							     "%s.%s[%zu].%s: unknown key", p,
							     lists[l], i, k);
			}
			n = json_string_value(json_object_get(it, "name"));
			if (!n)
				return vmact_err_set(err, EINVAL,
						     "%s.%s[%zu].name: required string", p,
						     lists[l], i);
			if (l == 1 && strcmp(n, "*") == 0)
				continue;
			if (!lookup(table, n))
				return vmact_err_set(err, EINVAL,
						     "%s.%s[%zu].name: unknown plugin '%s'", p,
						     lists[l], i, n);
			if (l == 0 && !implements(lookup(table, n), point))
				return vmact_err_set(
					err, EINVAL,
					"%s.%s[%zu].name: plugin '%s' has no %s extension point", p,
					lists[l], i, n, cl_fw_point_name(point));
			x = json_object_get(it, "weight");
			if (x && (!json_is_integer(x) || json_integer_value(x) < 1 ||
				  json_integer_value(x) > 100 || point != CL_FW_SCORE))
				return vmact_err_set(
					err, EINVAL,
					point == CL_FW_SCORE
						? "%s.%s[%zu].weight: an integer from 1 to 100"
						: "%s.%s[%zu].weight: only score plugins have one",
					p, lists[l], i);
		}
	}
	return 0;
}

int cl_fw_profile_check(const json_t *profile, const char *path,
			const struct cl_fw_plugin_table *table, struct vmact_err *err)
{
	const json_t *plugins, *pc;
	const char *key;
	json_t *v;
	char p[256];

	if (!json_is_object(profile))
		return vmact_err_set(err, EINVAL, "%s: must be an object", path);
	json_object_foreach((json_t *)profile, key, v) {
		if (strcmp(key, "schedulerName") && strcmp(key, "plugins") &&
		    strcmp(key, "pluginConfig"))
			return vmact_err_set(
				err, EINVAL,
				"%s.%s: unknown key (schedulerName, plugins, pluginConfig)", path,
				key);
	}
	v = json_object_get(profile, "schedulerName");
	if (v && (!json_is_string(v) || !json_string_length(v) ||
		  json_string_length(v) >= CL_FW_NAME_MAX))
		return vmact_err_set(err, EINVAL, "%s.schedulerName: a name of 1 to %d characters",
				     path, CL_FW_NAME_MAX - 1);
	plugins = json_object_get(profile, "plugins");
	if (plugins) {
		if (!json_is_object(plugins))
			return vmact_err_set(err, EINVAL, "%s.plugins: must be an object", path);
		json_object_foreach((json_t *)plugins, key, v) {
			int point = -1, r;

			for (int i = 0; i < CL_FW_N_POINTS; i++)
				if (strcmp(key, cl_fw_point_name(i)) == 0)
					point = i;
			if (point < 0)
				return vmact_err_set(
					err, EINVAL,
					"%s.plugins.%s: unknown extension point (queueSort, "
					"preFilter, filter, postFilter, score, reserve, permit, "
					"preBind, bind, postBind)",
					path, key);
			snprintf(p, sizeof(p), "%s.plugins.%s", path, key);
			if ((r = check_set(v, p, table, point, err)) < 0)
				return r;
		}
	}
	pc = json_object_get(profile, "pluginConfig");
	if (pc) {
		size_t i;
		json_t *it;

		if (!json_is_array(pc))
			return vmact_err_set(err, EINVAL, "%s.pluginConfig: must be an array",
					     path);
		json_array_foreach(pc, i, it) {
			const char *n;

			if (!json_is_object(it))
				return vmact_err_set(err, EINVAL,
						     "%s.pluginConfig[%zu]: must be an object",
						     path, i);
			json_object_foreach(it, key, v) {
				if (strcmp(key, "name") && strcmp(key, "args"))
					return vmact_err_set(
						err, EINVAL,
						"%s.pluginConfig[%zu].%s: unknown key (name, args)",
						path, i, key);
			}
			n = json_string_value(json_object_get(it, "name"));
			if (!n)
				return vmact_err_set(err, EINVAL,
						     "%s.pluginConfig[%zu].name: required string",
						     path, i);
			if (!lookup(table, n))
				return vmact_err_set(
					err, EINVAL,
					"%s.pluginConfig[%zu].name: unknown plugin '%s'", path, i,
					n);
			v = json_object_get(it, "args");
			if (v && !json_is_object(v))
				return vmact_err_set(err, EINVAL,
						     "%s.pluginConfig[%zu].args: must be an object",
						     path, i);
		}
	}
	return 0;
}

/* The names a point ends up with: defaults minus disabled, then enabled
 * (an enabled default moves to its place in "enabled", with its weight). */
int cl_fw_profile_resolve(struct cl_fw *fw, const struct cl_fw_plugin_table *table,
			  const struct cl_fw_defaults *defaults, const json_t *profile,
			  const char *path, enum cl_fw_point point, const struct cl_fw_handle *h,
			  struct vmact_err *err)
{
	const json_t *set = NULL, *enabled = NULL, *disabled = NULL;
	const char *names[CL_FW_MAX_PLUGINS * 2];
	int64_t weights[CL_FW_MAX_PLUGINS * 2];
	size_t n = 0, i;
	bool all_off = false;
	json_t *it;

	if (profile && json_object_get(profile, "plugins"))
		set = json_object_get(json_object_get(profile, "plugins"), cl_fw_point_name(point));
	if (set) {
		enabled = json_object_get(set, "enabled");
		disabled = json_object_get(set, "disabled");
	}
	json_array_foreach(disabled, i, it) {
		if (strcmp(json_string_value(json_object_get(it, "name")), "*") == 0)
			all_off = true;
	}
	for (i = 0; !all_off && defaults && defaults->points[point] && defaults->points[point][i];
	     i++) {
		const char *d = defaults->points[point][i];
		bool off = false, again = false;
		size_t j;
		json_t *x;

		json_array_foreach(disabled, j, x) {
			if (strcmp(json_string_value(json_object_get(x, "name")), d) == 0)
				off = true;
		}
		json_array_foreach(enabled, j, x) {
			if (strcmp(json_string_value(json_object_get(x, "name")), d) == 0)
				again = true;
		}
		if (off || again)
			continue;
		names[n] = d;
		weights[n++] = 1;
	}
	json_array_foreach(enabled, i, it) {
		json_t *w = json_object_get(it, "weight");

		if (n == ARRAY_SIZE(names))
			break;
		names[n] = json_string_value(json_object_get(it, "name"));
		weights[n++] = w ? json_integer_value(w) : 1;
	}
	if (n > CL_FW_MAX_PLUGINS)
		return vmact_err_set(err, E2BIG, "%s.plugins.%s: more than %d plugins", path,
				     cl_fw_point_name(point), CL_FW_MAX_PLUGINS);
	if (point == CL_FW_QUEUE_SORT && n > 1)
		return vmact_err_set(err, EINVAL,
				     "%s.plugins.queueSort: only one plugin may be enabled (%s, %s)",
				     path, names[0], names[1]);
	for (i = 0; i < n; i++) {
		struct instance *in;
		int r = 0;

		for (size_t j = 0; j < i; j++)
			if (strcmp(names[j], names[i]) == 0)
				return vmact_err_set(err, EINVAL,
						     "%s.plugins.%s: plugin '%s' enabled twice",
						     path, cl_fw_point_name(point), names[i]);
		in = instance_for(fw, table, profile, path, names[i], h, err, &r);
		if (!in)
			return r < 0 && err && err->code
				       ? r
				       : vmact_err_set(err, EINVAL,
						       "%s.plugins.%s: unknown plugin '%s'", path,
						       cl_fw_point_name(point), names[i]);
		if (!implements(in->ops, point))
			return vmact_err_set(err, EINVAL,
					     "%s.plugins.%s: plugin '%s' has no %s extension point",
					     path, cl_fw_point_name(point), names[i],
					     cl_fw_point_name(point));
		fw->points[point][fw->n_points[point]].inst = in;
		fw->points[point][fw->n_points[point]++].weight = weights[i];
	}
	return 0;
}
