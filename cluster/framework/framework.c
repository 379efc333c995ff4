/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/framework/framework.h"

#include <errno.h>
#include <pthread.h>
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

static void status_start(struct cl_fw_status *st, const char *plugin)
{
	st->code = CL_FW_SUCCESS;
	snprintf(st->plugin, sizeof(st->plugin), "%s", plugin);
	st->msg[0] = 0;
}

/* ---- cycle state ---- */

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

/* ---- profile ---- */

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

static int check_profile(const json_t *profile, const char *path,
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
static int resolve_point(struct cl_fw *fw, const struct cl_fw_plugin_table *table,
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

int cl_fw_new(const struct cl_fw_plugin_table *table, const struct cl_fw_defaults *defaults,
	      const json_t *profile, const char *path, const struct cl_fw_handle *h,
	      struct cl_fw **out, struct vmact_err *err)
{
	struct cl_fw *fw;
	const char *sn;
	int r;

	if (profile && (r = check_profile(profile, path, table, err)) < 0)
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
		r = resolve_point(fw, table, defaults, profile, path, p, h, err);
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

/* xorshift64: enough to spread ties, cheap, one state per framework (its
 * cycles run one at a time). */
static uint64_t next_random(struct cl_fw *fw)
{
	uint64_t x = fw->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	fw->rng = x;
	return x;
}

void cl_fw_queue_sort(struct cl_fw *fw, struct cl_fw_queued *q, size_t n)
{
	struct slot *s;

	if (!fw->n_points[CL_FW_QUEUE_SORT])
		return;
	s = &fw->points[CL_FW_QUEUE_SORT][0];
	/* Insertion sort: stable, and the queue is short. */
	for (size_t i = 1; i < n; i++) {
		struct cl_fw_queued x = q[i];
		size_t j = i;

		while (j > 0 && s->inst->ops->less(s->inst->state, &x, &q[j - 1])) {
			q[j] = q[j - 1];
			j--;
		}
		q[j] = x;
	}
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

/* ---- the scheduling cycle ---- */

void cl_fw_unreserve(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		     const char *host)
{
	/* All of them, not only those that reserved: the Kubernetes framework's
	 * RunUnreservePlugins runs "the set of configured unreserve
	 * plugins". */
	for (size_t i = fw->n_points[CL_FW_RESERVE]; i-- > 0;) {
		struct slot *s = &fw->points[CL_FW_RESERVE][i];

		if (s->inst->ops->unreserve)
			s->inst->ops->unreserve(s->inst->state, cs, vm, host);
	}
}

/* Runs the filter plugins on one host; Success when all passed. */
static void run_filters(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			const struct cl_fw_host *host, struct cl_fw_status *st)
{
	status_start(st, "");
	for (size_t i = 0; i < fw->n_points[CL_FW_FILTER]; i++) {
		struct slot *s = &fw->points[CL_FW_FILTER][i];

		status_start(st, s->inst->ops->name);
		s->inst->ops->filter(s->inst->state, cs, vm, host, st);
		if (st->code != CL_FW_SUCCESS)
			return;
	}
	status_start(st, "");
}

static void post_filter(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			const struct cl_fw_host *hosts, size_t n, struct cl_fw_result *res)
{
	struct cl_fw_status statuses[CL_FW_MAX_HOSTS];

	for (size_t i = 0; i < n; i++)
		statuses[i] = res->hosts[i].filter;
	for (size_t i = 0; i < fw->n_points[CL_FW_POST_FILTER]; i++) {
		struct slot *s = &fw->points[CL_FW_POST_FILTER][i];
		struct cl_fw_status st;
		char nominated[CL_FW_NAME_MAX] = "";

		status_start(&st, s->inst->ops->name);
		s->inst->ops->post_filter(s->inst->state, cs, vm, hosts, n, statuses, nominated,
					  &st);
		if (st.code == CL_FW_SUCCESS && nominated[0]) {
			snprintf(res->nominated, sizeof(res->nominated), "%s", nominated);
			snprintf(res->status.msg + strlen(res->status.msg),
				 sizeof(res->status.msg) - strlen(res->status.msg), "; %s: %s",
				 s->inst->ops->name, st.msg);
			return;
		}
		if (st.code == CL_FW_ERROR) {
			res->status = st;
			return;
		}
	}
}

/* Every score plugin over the feasible hosts, normalised and weighted;
 * the index of the chosen host, or -1 with res->status set. */
static int score_hosts(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		       const struct cl_fw_host *hosts, const size_t *feasible, size_t nf,
		       struct cl_fw_result *res)
{
	int64_t total[CL_FW_MAX_HOSTS] = { 0 };
	int best = -1;

	for (size_t p = 0; p < fw->n_points[CL_FW_SCORE]; p++) {
		struct slot *s = &fw->points[CL_FW_SCORE][p];
		int64_t scores[CL_FW_MAX_HOSTS];
		struct cl_fw_status st;

		for (size_t k = 0; k < nf; k++) {
			status_start(&st, s->inst->ops->name);
			scores[k] = 0;
			s->inst->ops->score(s->inst->state, cs, vm, &hosts[feasible[k]], &scores[k],
					    &st);
			if (st.code != CL_FW_SUCCESS) {
				/* Score must succeed: a failure is the cycle's error. */
				res->status = st;
				res->status.code = CL_FW_ERROR;
				return -1;
			}
		}
		if (s->inst->ops->normalize) {
			status_start(&st, s->inst->ops->name);
			s->inst->ops->normalize(s->inst->state, cs, vm, scores, nf, &st);
			if (st.code != CL_FW_SUCCESS) {
				res->status = st;
				res->status.code = CL_FW_ERROR;
				return -1;
			}
		}
		for (size_t k = 0; k < nf; k++) {
			if (scores[k] < CL_FW_MIN_SCORE || scores[k] > CL_FW_MAX_SCORE) {
				res->status.code = CL_FW_ERROR;
				snprintf(res->status.plugin, sizeof(res->status.plugin), "%s",
					 s->inst->ops->name);
				snprintf(res->status.msg, sizeof(res->status.msg),
					 "score %lld for host %s outside [%d, %d] after normalizing",
					 (long long)scores[k], hosts[feasible[k]].name,
					 CL_FW_MIN_SCORE, CL_FW_MAX_SCORE);
				return -1;
			}
			total[k] += scores[k] * s->weight;
		}
	}
	for (size_t k = 0; k < nf; k++) {
		res->hosts[feasible[k]].score = total[k];
		if (best < 0 || total[k] > total[best])
			best = (int)k;
	}
	if (best >= 0) {
		/* One of the best at random (reservoir sampling over the ties). */
		size_t ties = 0;

		for (size_t k = 0; k < nf; k++)
			if (total[k] == total[best] && next_random(fw) % ++ties == 0)
				best = (int)k;
	}
	return best < 0 ? -1 : (int)feasible[best];
}

void cl_fw_schedule(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		    const struct cl_fw_host *hosts, size_t n, struct cl_fw_result *res)
{
	size_t feasible[CL_FW_MAX_HOSTS], nf = 0, nres;
	const struct cl_fw_host *host;
	int chosen;

	memset(res, 0, sizeof(*res));
	status_start(&res->status, "");
	if (n > CL_FW_MAX_HOSTS)
		n = CL_FW_MAX_HOSTS;
	res->n_hosts = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(res->hosts[i].name, sizeof(res->hosts[i].name), "%s", hosts[i].name);
		status_start(&res->hosts[i].filter, "");
	}

	for (size_t i = 0; i < fw->n_points[CL_FW_PRE_FILTER]; i++) {
		struct slot *s = &fw->points[CL_FW_PRE_FILTER][i];

		status_start(&res->status, s->inst->ops->name);
		s->inst->ops->pre_filter(s->inst->state, cs, vm, &res->status);
		if (res->status.code != CL_FW_SUCCESS)
			return;
	}

	for (size_t i = 0; i < n; i++) {
		run_filters(fw, cs, vm, &hosts[i], &res->hosts[i].filter);
		if (res->hosts[i].filter.code == CL_FW_SUCCESS)
			feasible[nf++] = i;
		else if (res->hosts[i].filter.code == CL_FW_ERROR) {
			res->status = res->hosts[i].filter;
			return;
		}
	}
	res->feasible = nf;
	if (!nf) {
		bool resolvable = false;
		size_t off = 0;

		/* Unschedulable when PostFilter could change anything on some
		 * host, UnschedulableAndUnresolvable when no host could. */
		for (size_t i = 0; i < n; i++)
			resolvable |= res->hosts[i].filter.code == CL_FW_UNSCHEDULABLE;
		res->status.code = resolvable ? CL_FW_UNSCHEDULABLE : CL_FW_UNRESOLVABLE;
		res->status.plugin[0] = 0;
		off = (size_t)snprintf(res->status.msg, sizeof(res->status.msg), "0/%zu hosts fit",
				       n);
		for (size_t i = 0; i < n && off < sizeof(res->status.msg); i++)
			off += (size_t)snprintf(res->status.msg + off,
						sizeof(res->status.msg) - off, "%s %s: %s",
						i ? ";" : ":", hosts[i].name,
						res->hosts[i].filter.msg);
		if (resolvable)
			post_filter(fw, cs, vm, hosts, n, res);
		return;
	}

	chosen = score_hosts(fw, cs, vm, hosts, feasible, nf, res);
	if (chosen < 0)
		return;
	host = &hosts[chosen];
	snprintf(res->host, sizeof(res->host), "%s", host->name);

	for (nres = 0; nres < fw->n_points[CL_FW_RESERVE]; nres++) {
		struct slot *s = &fw->points[CL_FW_RESERVE][nres];

		status_start(&res->status, s->inst->ops->name);
		s->inst->ops->reserve(s->inst->state, cs, vm, host, &res->status);
		if (res->status.code != CL_FW_SUCCESS) {
			/* Every Reserve plugin's Unreserve, those that did not
			 * reserve too (framework.h). */
			cl_fw_unreserve(fw, cs, vm, host->name);
			if (res->status.code == CL_FW_SUCCESS)
				res->status.code = CL_FW_ERROR;
			return;
		}
	}

	status_start(&res->status, "");
	for (size_t i = 0; i < fw->n_points[CL_FW_PERMIT]; i++) {
		struct slot *s = &fw->points[CL_FW_PERMIT][i];
		struct cl_fw_status st;
		uint64_t timeout = 0;

		status_start(&st, s->inst->ops->name);
		s->inst->ops->permit(s->inst->state, cs, vm, host->name, &timeout, &st);
		if (st.code == CL_FW_WAIT) {
			if (!res->n_waiting || timeout < res->wait_usec)
				res->wait_usec = timeout;
			snprintf(res->waiting[res->n_waiting++], CL_FW_NAME_MAX, "%s",
				 s->inst->ops->name);
			if (res->status.code != CL_FW_WAIT)
				res->status = st;
		} else if (st.code != CL_FW_SUCCESS) {
			/* Denied: "rejected" for the framework, whatever the code. */
			res->status = st;
			if (res->status.code == CL_FW_SKIP)
				res->status.code = CL_FW_UNSCHEDULABLE;
			res->n_waiting = 0;
			cl_fw_unreserve(fw, cs, vm, host->name);
			return;
		}
	}
}

void cl_fw_bind(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		const char *host, struct cl_fw_status *st)
{
	for (size_t i = 0; i < fw->n_points[CL_FW_PRE_BIND]; i++) {
		struct slot *s = &fw->points[CL_FW_PRE_BIND][i];

		status_start(st, s->inst->ops->name);
		s->inst->ops->pre_bind(s->inst->state, cs, vm, host, st);
		if (st->code != CL_FW_SUCCESS) {
			/* Skip and Wait mean nothing here: a failure. */
			if (st->code == CL_FW_SKIP || st->code == CL_FW_WAIT)
				st->code = CL_FW_ERROR;
			return;
		}
	}
	for (size_t i = 0; i < fw->n_points[CL_FW_BIND]; i++) {
		struct slot *s = &fw->points[CL_FW_BIND][i];

		status_start(st, s->inst->ops->name);
		s->inst->ops->bind(s->inst->state, cs, vm, host, st);
		if (st->code == CL_FW_SKIP)
			continue;
		if (st->code != CL_FW_SUCCESS)
			return;
		for (size_t k = 0; k < fw->n_points[CL_FW_POST_BIND]; k++) {
			struct slot *pb = &fw->points[CL_FW_POST_BIND][k];

			pb->inst->ops->post_bind(pb->inst->state, cs, vm, host);
		}
		return;
	}
	status_start(st, "");
	cl_fw_status_set(st, CL_FW_ERROR, "no bind plugin handled %s", vm->name);
}

/* ---- waiting VMs ---- */

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
