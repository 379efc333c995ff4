/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/group.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

/* Far above any real group; keeps the Debug line and label copies small
 * whatever groupd sends. */
#define LABELS_MAX 256
#define TAINTS_MAX 64
#define TEXT_MAX   1024

static int get_text(const json_t *obj, const char *key, bool required, const char *dflt, char **out,
		    struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);
	const char *s;

	if (!v || json_is_null(v)) {
		if (required)
			return vmact_err_set(err, EPROTO, "%s: missing", key);
		s = dflt;
	} else if (!json_is_string(v)) {
		return vmact_err_set(err, EPROTO, "%s: not a string", key);
	} else {
		s = json_string_value(v);
		if (strlen(s) > TEXT_MAX || strlen(s) != json_string_length(v))
			return vmact_err_set(err, EPROTO, "%s: longer than %d bytes or holds a NUL",
					     key, TEXT_MAX);
	}
	*out = strdup(s);
	return *out ? 0 : vmact_err_set(err, ENOMEM, "%s: out of memory", key);
}

static int get_int(const json_t *obj, const char *key, bool required, long long dflt, long long lo,
		   long long hi, long long *out, struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return vmact_err_set(err, EPROTO, "%s: missing", key);
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v))
		return vmact_err_set(err, EPROTO, "%s: not an integer", key);
	*out = json_integer_value(v);
	if (*out < lo || *out > hi)
		return vmact_err_set(err, EPROTO, "%s: %lld is outside [%lld, %lld]", key, *out, lo,
				     hi);
	return 0;
}

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cp_kv *)a)->key, ((const struct cp_kv *)b)->key);
}

static int get_labels(const json_t *obj, struct cp_group *g, struct vmact_err *err)
{
	const json_t *labels = json_object_get(obj, "labels"), *v;
	const char *k;

	if (!labels || json_is_null(labels))
		return 0;
	if (!json_is_object(labels))
		return vmact_err_set(err, EPROTO, "labels: not an object");
	if (json_object_size(labels) > LABELS_MAX)
		return vmact_err_set(err, EPROTO, "labels: more than %d", LABELS_MAX);
	g->labels = calloc(json_object_size(labels) + 1, sizeof(*g->labels));
	if (!g->labels)
		return vmact_err_set(err, ENOMEM, "labels: out of memory");
	json_object_foreach((json_t *)labels, k, v) {
		struct cp_kv *kv = &g->labels[g->nlabels];

		if (!json_is_string(v) || strlen(k) > TEXT_MAX ||
		    json_string_length(v) > TEXT_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return vmact_err_set(err, EPROTO,
					     "labels.%.64s: not a string of at most %d bytes", k,
					     TEXT_MAX);
		kv->key = strdup(k);
		kv->value = strdup(json_string_value(v));
		g->nlabels++;
		if (!kv->key || !kv->value)
			return vmact_err_set(err, ENOMEM, "labels: out of memory");
	}
	qsort(g->labels, g->nlabels, sizeof(*g->labels), kv_cmp);
	return 0;
}

static int get_taints(const json_t *obj, struct cp_group *g, struct vmact_err *err)
{
	const json_t *taints = json_object_get(obj, "taints"), *t;
	size_t i;
	int r;

	if (!taints || json_is_null(taints))
		return 0;
	if (!json_is_array(taints))
		return vmact_err_set(err, EPROTO, "taints: not an array");
	if (json_array_size(taints) > TAINTS_MAX)
		return vmact_err_set(err, EPROTO, "taints: more than %d", TAINTS_MAX);
	g->taints = calloc(json_array_size(taints) + 1, sizeof(*g->taints));
	if (!g->taints)
		return vmact_err_set(err, ENOMEM, "taints: out of memory");
	json_array_foreach(taints, i, t) {
		struct cp_taint *x = &g->taints[g->ntaints++];

		if (!json_is_object(t))
			return vmact_err_set(err, EPROTO, "taints[%zu]: not an object", i);
		r = get_text(t, "key", true, NULL, &x->key, err);
		if (r >= 0)
			r = get_text(t, "value", false, "", &x->value, err);
		if (r >= 0)
			r = get_text(t, "effect", true, NULL, &x->effect, err);
		if (r >= 0 && strcmp(x->effect, "NoSchedule") &&
		    strcmp(x->effect, "PreferNoSchedule") && strcmp(x->effect, "NoExecute"))
			r = vmact_err_set(err, EPROTO,
					  "effect: \"%.64s\" is not a Kubernetes taint effect",
					  x->effect);
		if (r < 0)
			return vmact_err_prefix(err, "taints[%zu]", i);
	}
	return 0;
}

static int get_template(const json_t *obj, struct cp_template *t, struct vmact_err *err)
{
	const json_t *tj = json_object_get(obj, "template");
	long long v;
	int r;

	if (!json_is_object(tj))
		return vmact_err_set(err, EPROTO, "template: missing or not an object");
	r = get_int(tj, "vcpus", true, 0, 1, 4096, &v, err);
	if (r < 0)
		goto bad;
	t->vcpus = (uint32_t)v;
	r = get_int(tj, "max_vcpus", false, t->vcpus, t->vcpus, 4096, &v, err);
	if (r < 0)
		goto bad;
	t->max_vcpus = (uint32_t)v;
	r = get_int(tj, "memory_bytes", true, 0, 1, 1LL << 52, &v, err);
	if (r < 0)
		goto bad;
	t->memory_bytes = (uint64_t)v;
	r = get_int(tj, "max_memory_bytes", false, (long long)t->memory_bytes,
		    (long long)t->memory_bytes, 1LL << 52, &v, err);
	if (r < 0)
		goto bad;
	t->max_memory_bytes = (uint64_t)v;
	/* kubelet's own default for --max-pods */
	r = get_int(tj, "ephemeral_storage_bytes", false, 0, 0, 1LL << 60, &v, err);
	if (r < 0)
		goto bad;
	t->ephemeral_bytes = (uint64_t)v;
	r = get_int(tj, "pods", false, 110, 1, 100000, &v, err);
	if (r < 0)
		goto bad;
	t->pods = (uint32_t)v;
	r = get_text(tj, "arch", false, "amd64", &t->arch, err);
	if (r < 0)
		goto bad;
	r = get_text(tj, "os", false, "linux", &t->os, err);
	if (r < 0)
		goto bad;
	return 0;
bad:
	return vmact_err_prefix(err, "template");
}

static int get_seconds(const json_t *o, const char *key, unsigned bit, double *out, unsigned *set,
		       struct vmact_err *err)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e9)
		return vmact_err_set(err, EPROTO, "%s: not a number of seconds in [0, 1e9]", key);
	*out = json_number_value(v);
	*set |= bit;
	return 0;
}

static int get_fraction(const json_t *o, const char *key, unsigned bit, double *out, unsigned *set,
			struct vmact_err *err)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= 1))
		return vmact_err_set(err, EPROTO, "%s: not a number in [0, 1]", key);
	*out = json_number_value(v);
	*set |= bit;
	return 0;
}

static int get_flag(const json_t *o, const char *key, unsigned bit, bool *out, unsigned *set,
		    struct vmact_err *err)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return vmact_err_set(err, EPROTO, "%s: not a boolean", key);
	*out = json_is_true(v);
	*set |= bit;
	return 0;
}

static int get_options(const json_t *obj, struct cp_options *o, struct vmact_err *err)
{
	const json_t *oj = json_object_get(obj, "options");
	int r;

	if (!oj || json_is_null(oj))
		return 0;
	if (!json_is_object(oj))
		return vmact_err_set(err, EPROTO, "options: not an object");
	r = get_fraction(oj, "scale_down_utilization_threshold", CP_OPT_UTIL, &o->util, &o->set,
			 err);
	if (r >= 0)
		r = get_fraction(oj, "scale_down_gpu_utilization_threshold", CP_OPT_GPU_UTIL,
				 &o->gpu_util, &o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "scale_down_unneeded_time_s", CP_OPT_UNNEEDED, &o->unneeded_s,
				&o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "scale_down_unready_time_s", CP_OPT_UNREADY, &o->unready_s,
				&o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "max_node_provision_time_s", CP_OPT_PROVISION, &o->provision_s,
				&o->set, err);
	if (r >= 0)
		r = get_flag(oj, "zero_or_max_node_scaling", CP_OPT_ZERO_OR_MAX, &o->zero_or_max,
			     &o->set, err);
	if (r >= 0)
		r = get_flag(oj, "ignore_daemonsets_utilization", CP_OPT_IGNORE_DS, &o->ignore_ds,
			     &o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "max_node_startup_time_s", CP_OPT_STARTUP, &o->startup_s,
				&o->set, err);
	if (r >= 0)
		r = get_flag(oj, "allow_non_atomic_scale_up_to_max", CP_OPT_NON_ATOMIC,
			     &o->non_atomic, &o->set, err);
	return r < 0 ? vmact_err_prefix(err, "options") : 0;
}

/* What an operator reading the autoscaler's logs needs to find the group
 * on the hosts. */
static int make_debug(const json_t *obj, struct cp_group *g, struct vmact_err *err)
{
	const json_t *hosts = json_object_get(obj, "hosts"), *h;
	char line[1024];
	size_t len, i;
	int n;

	n = snprintf(line, sizeof(line),
		     "vmact group %s: min %d max %d target %d, %u vCPU %llu MiB", g->id, g->min,
		     g->max, g->target, g->tmpl.vcpus,
		     (unsigned long long)(g->tmpl.memory_bytes >> 20));
	len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	if (json_is_array(hosts) && json_array_size(hosts) > 0) {
		json_array_foreach(hosts, i, h) {
			if (!json_is_string(h) || len >= sizeof(line) - 1)
				continue;
			n = snprintf(line + len, sizeof(line) - len, "%s%s", i ? "," : ", hosts ",
				     json_string_value(h));
			len = n < 0                            ? len
			      : len + (size_t)n < sizeof(line) ? len + (size_t)n
							       : sizeof(line) - 1;
		}
	}
	g->debug = strdup(line);
	return g->debug ? 0 : vmact_err_set(err, ENOMEM, "out of memory");
}

int cp_group_from_json(const json_t *obj, struct cp_group *g, struct vmact_err *err)
{
	long long v;
	int r;

	*g = (struct cp_group){ 0 };
	if (!json_is_object(obj))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(obj, "id", true, NULL, &g->id, err);
	if (r < 0)
		return r;
	if (!g->id[0])
		return vmact_err_set(err, EPROTO, "id: empty");
	r = get_int(obj, "min", true, 0, 0, INT32_MAX, &v, err);
	if (r < 0)
		return r;
	g->min = (int32_t)v;
	r = get_int(obj, "max", true, 0, g->min, INT32_MAX, &v, err);
	if (r < 0)
		return r;
	g->max = (int32_t)v;
	/* groupd may hold a target outside [min, max] for a moment (a
	 * config change); it is its to report, not ours to refuse. */
	r = get_int(obj, "target", true, 0, 0, INT32_MAX, &v, err);
	if (r < 0)
		return r;
	g->target = (int32_t)v;
	r = get_labels(obj, g, err);
	if (r >= 0)
		r = get_taints(obj, g, err);
	if (r >= 0)
		r = get_template(obj, &g->tmpl, err);
	if (r >= 0)
		r = get_options(obj, &g->opts, err);
	if (r >= 0)
		r = make_debug(obj, g, err);
	return r;
}

void cp_group_clear(struct cp_group *g)
{
	for (size_t i = 0; i < g->nlabels; i++) {
		free(g->labels[i].key);
		free(g->labels[i].value);
	}
	free(g->labels);
	for (size_t i = 0; i < g->ntaints; i++) {
		free(g->taints[i].key);
		free(g->taints[i].value);
		free(g->taints[i].effect);
	}
	free(g->taints);
	free(g->tmpl.arch);
	free(g->tmpl.os);
	free(g->id);
	free(g->debug);
	*g = (struct cp_group){ 0 };
}

struct cp_groups *cp_groups_ref(struct cp_groups *s)
{
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void cp_groups_unref(struct cp_groups *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; i < s->n; i++)
		cp_group_clear(&s->g[i]);
	free(s->g);
	free(s);
}

int cp_groups_from_json(const json_t *root, struct cp_groups **out, struct vmact_err *err)
{
	const json_t *arr = json_object_get(root, "groups"), *gj;
	struct cp_groups *s;
	size_t i;
	int r;

	*out = NULL;
	if (!json_is_array(arr))
		return vmact_err_set(err, EPROTO, "groups: missing or not an array");
	s = calloc(1, sizeof(*s));
	if (!s)
		return vmact_err_set(err, ENOMEM, "out of memory");
	s->refs = 1;
	s->g = calloc(json_array_size(arr) + 1, sizeof(*s->g));
	if (!s->g) {
		cp_groups_unref(s);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	json_array_foreach(arr, i, gj) {
		r = cp_group_from_json(gj, &s->g[s->n], err);
		s->n++;
		if (r >= 0 && cp_groups_find(s, s->g[s->n - 1].id) != &s->g[s->n - 1])
			r = vmact_err_set(err, EPROTO, "id: \"%s\" given twice", s->g[s->n - 1].id);
		if (r < 0) {
			cp_groups_unref(s);
			return vmact_err_prefix(err, "groups[%zu]", i);
		}
	}
	*out = s;
	return 0;
}

const struct cp_group *cp_groups_find(const struct cp_groups *s, const char *id)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->g[i].id && !strcmp(s->g[i].id, id))
			return &s->g[i];
	return NULL;
}

const char *cp_group_goarch(const char *arch)
{
	static const char *const map[][2] = {
		{ "x86_64", "amd64" }, { "aarch64", "arm64" },   { "i686", "386" },
		{ "i386", "386" },     { "armv7l", "arm" },      { "ppc64le", "ppc64le" },
		{ "s390x", "s390x" },  { "riscv64", "riscv64" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcmp(arch, map[i][0]))
			return map[i][1];
	return arch;
}
