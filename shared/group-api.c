/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/group-api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "shared/http-call.h"

/* A listing of a large group is tens of KiB; the bound keeps a broken
 * vmact-groupd from filling its client. */
#define ANSWER_MAX (8u << 20)

DEFINE_PTR_CLEANUP(vmact_gapi_jsonp, json_t, json_decref)

/* ---- names and paths ---- */

static const char *const group_res[] = {
	[VMACT_GAPI_GROUP] = "",
	[VMACT_GAPI_NODES] = "nodes",
	[VMACT_GAPI_STANDBY] = "standby",
	[VMACT_GAPI_INCREASE] = "increase",
	[VMACT_GAPI_DELETE_NODES] = "delete-nodes",
	[VMACT_GAPI_DECREASE_TARGET] = "decrease-target",
};

const char *vmact_gapi_group_res_name(enum vmact_gapi_group_res r)
{
	return (unsigned)r < ARRAY_SIZE(group_res) ? group_res[r] : "?";
}

int vmact_gapi_group_res_parse(const char *s, enum vmact_gapi_group_res *out)
{
	for (size_t i = 1; i < ARRAY_SIZE(group_res); i++)
		if (strcmp(s, group_res[i]) == 0) {
			*out = (enum vmact_gapi_group_res)i;
			return 0;
		}
	return -ENOENT;
}

const char *vmact_gapi_verdict_name(enum vmact_gapi_verdict v)
{
	return v == VMACT_GAPI_ALLOW ? "allow" : "reject";
}

int vmact_gapi_verdict_parse(const char *s, enum vmact_gapi_verdict *out)
{
	if (strcmp(s, "allow") == 0)
		*out = VMACT_GAPI_ALLOW;
	else if (strcmp(s, "reject") == 0)
		*out = VMACT_GAPI_REJECT;
	else
		return -ENOENT;
	return 0;
}

const char *vmact_gapi_tier_name(enum vmact_gapi_tier t)
{
	static const char *const names[] = { "running", "paused", "saved" };

	return (unsigned)t < ARRAY_SIZE(names) ? names[t] : "?";
}

const char *vmact_gapi_node_state_name(enum vmact_gapi_node_state s)
{
	static const char *const names[] = { "creating", "running", "deleting" };

	return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

char *vmact_gapi_group_path(const char *id, enum vmact_gapi_group_res r)
{
	_cleanup_free_ char *esc = vmact_http_escape(id);
	char *p = NULL;

	if (esc && asprintf(&p, VMACT_GAPI_PATH_GROUPS "/%s%s%s", esc,
			    r == VMACT_GAPI_GROUP ? "" : "/", vmact_gapi_group_res_name(r)) < 0)
		p = NULL;
	return p;
}

char *vmact_gapi_node_group_path(const char *provider_id)
{
	_cleanup_free_ char *esc = vmact_http_escape(provider_id);
	char *p = NULL;

	if (esc &&
	    asprintf(&p, VMACT_GAPI_PATH_NODE_GROUP "?" VMACT_GAPI_ARG_PROVIDER_ID "=%s", esc) < 0)
		p = NULL;
	return p;
}

char *vmact_gapi_waiting_path(const char *uid, enum vmact_gapi_verdict v)
{
	_cleanup_free_ char *esc = vmact_http_escape(uid);
	char *p = NULL;

	if (esc &&
	    asprintf(&p, VMACT_GAPI_PATH_WAITING "/%s/%s", esc, vmact_gapi_verdict_name(v)) < 0)
		p = NULL;
	return p;
}

/* ---- decoding helpers: each names its key ---- */

static bool absent(const json_t *v)
{
	return !v || json_is_null(v);
}

static int text_of(const json_t *v, const char *key, const char **out, struct vmact_err *err)
{
	const char *s;

	if (!json_is_string(v))
		return vmact_err_set(err, EPROTO, "%s: not a string", key);
	s = json_string_value(v);
	if (json_string_length(v) > VMACT_GAPI_TEXT_MAX || strlen(s) != json_string_length(v))
		return vmact_err_set(err, EPROTO, "%s: longer than %d bytes or holds a NUL", key,
				     VMACT_GAPI_TEXT_MAX);
	*out = s;
	return 0;
}

/* dflt NULL: required. */
static int get_text(const json_t *obj, const char *key, const char *dflt, const char **out,
		    struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	if (absent(v)) {
		if (!dflt)
			return vmact_err_set(err, EPROTO, "%s: missing", key);
		*out = dflt;
		return 0;
	}
	return text_of(v, key, out, err);
}

static int get_int(const json_t *obj, const char *key, bool required, long long dflt, long long lo,
		   long long hi, long long *out, struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	if (absent(v)) {
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

static int get_i32(const json_t *obj, const char *key, bool required, int32_t *out,
		   struct vmact_err *err)
{
	long long v;
	int r = get_int(obj, key, required, 0, 0, INT32_MAX, &v, err);

	if (r >= 0)
		*out = (int32_t)v;
	return r;
}

static int get_bool(const json_t *obj, const char *key, bool required, bool dflt, bool *out,
		    struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	if (absent(v)) {
		if (required)
			return vmact_err_set(err, EPROTO, "%s: missing", key);
		*out = dflt;
		return 0;
	}
	if (!json_is_boolean(v))
		return vmact_err_set(err, EPROTO, "%s: not a boolean", key);
	*out = json_is_true(v);
	return 0;
}

/* A number (an integer or a real) of at most 1e12 in magnitude: times
 * and durations. */
static int get_num(const json_t *obj, const char *key, double *out, struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	if (absent(v)) {
		*out = 0;
		return 0;
	}
	if (!json_is_number(v) || !(json_number_value(v) >= -1e12 && json_number_value(v) <= 1e12))
		return vmact_err_set(err, EPROTO, "%s: not a number in [-1e12, 1e12]", key);
	*out = json_number_value(v);
	return 0;
}

/* An array of at most max elements under key; *arr NULL when absent and
 * not required. */
static int get_array(const json_t *obj, const char *key, bool required, size_t max,
		     const json_t **arr, struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	*arr = NULL;
	if (absent(v))
		return required ? vmact_err_set(err, EPROTO, "%s: missing", key) : 0;
	if (!json_is_array(v))
		return vmact_err_set(err, EPROTO, "%s: not an array", key);
	if (json_array_size(v) > max)
		return vmact_err_set(err, EPROTO, "%s: more than %zu", key, max);
	*arr = v;
	return 0;
}

/* Strings of an array, into a malloc'd array of pointers. */
static int get_texts(const json_t *obj, const char *key, bool required, size_t max,
		     const char ***out, size_t *n, struct vmact_err *err)
{
	const json_t *arr, *v;
	size_t i;
	int r = get_array(obj, key, required, max, &arr, err);

	*out = NULL;
	*n = 0;
	if (r < 0 || !arr)
		return r;
	*out = calloc(json_array_size(arr) + 1, sizeof(**out));
	if (!*out)
		return vmact_err_set(err, ENOMEM, "%s: out of memory", key);
	json_array_foreach(arr, i, v) {
		char name[64];

		snprintf(name, sizeof(name), "%s[%zu]", key, i);
		r = text_of(v, name, &(*out)[i], err);
		if (r < 0)
			return r;
		(*n)++;
	}
	return 0;
}

/* ---- errors ---- */

json_t *vmact_gapi_error_encode(const char *message, const char *reason)
{
	return json_pack("{s:s,s:s}", "error", message, "reason", reason);
}

int vmact_gapi_error_decode(const json_t *doc, struct vmact_gapi_error *out, struct vmact_err *err)
{
	int r;

	*out = (struct vmact_gapi_error){ 0 };
	if (!json_is_object(doc))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(doc, "error", "", &out->message, err);
	if (r >= 0)
		r = get_text(doc, "reason", "", &out->reason, err);
	if (r < 0)
		return r;
	if (!out->message[0])
		out->message = NULL;
	if (!out->reason[0])
		out->reason = NULL;
	return 0;
}

int vmact_gapi_reason_errno(const char *reason, long status)
{
	static const struct {
		const char *reason;
		int err;
	} map[] = {
		{ VMACT_GAPI_NOT_FOUND, ENOENT },    { VMACT_GAPI_INVALID, EINVAL },
		{ VMACT_GAPI_OUT_OF_RANGE, ERANGE }, { VMACT_GAPI_PRECONDITION, EBUSY },
		{ VMACT_GAPI_UNAVAILABLE, EAGAIN },  { VMACT_GAPI_INTERNAL, EIO },
	};

	for (size_t i = 0; reason && i < ARRAY_SIZE(map); i++)
		if (!strcmp(reason, map[i].reason))
			return -map[i].err;
	switch (status) {
	case 404:
		return -ENOENT;
	case 400:
		return -EINVAL;
	case 409:
		return -EBUSY;
	case 503:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

/* ---- a group ---- */

static json_t *labels_encode(const struct vmact_gapi_group *g)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < g->nlabels; i++)
		if (json_object_set_new(o, g->labels[i].key, json_string(g->labels[i].value)) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

static json_t *options_encode(const struct vmact_gapi_options *o)
{
	/* A whole number of seconds goes as an integer, as an operator's
	 * configuration writes it. */
#define NUM(x) ((x) == (double)(long long)(x) ? json_integer((long long)(x)) : json_real(x))
	json_t *j = json_object();
	int r = 0;

	if (!j)
		return NULL;
	if (o->set & VMACT_GAPI_OPT_UTIL)
		r |= json_object_set_new(j, "scale_down_utilization_threshold", NUM(o->util));
	if (o->set & VMACT_GAPI_OPT_GPU_UTIL)
		r |= json_object_set_new(j, "scale_down_gpu_utilization_threshold",
					 NUM(o->gpu_util));
	if (o->set & VMACT_GAPI_OPT_UNNEEDED)
		r |= json_object_set_new(j, "scale_down_unneeded_time_s", NUM(o->unneeded_s));
	if (o->set & VMACT_GAPI_OPT_UNREADY)
		r |= json_object_set_new(j, "scale_down_unready_time_s", NUM(o->unready_s));
	if (o->set & VMACT_GAPI_OPT_PROVISION)
		r |= json_object_set_new(j, "max_node_provision_time_s", NUM(o->provision_s));
	if (o->set & VMACT_GAPI_OPT_STARTUP)
		r |= json_object_set_new(j, "max_node_startup_time_s", NUM(o->startup_s));
	if (o->set & VMACT_GAPI_OPT_ZERO_OR_MAX)
		r |= json_object_set_new(j, "zero_or_max_node_scaling",
					 json_boolean(o->zero_or_max));
	if (o->set & VMACT_GAPI_OPT_IGNORE_DS)
		r |= json_object_set_new(j, "ignore_daemonsets_utilization",
					 json_boolean(o->ignore_ds));
	if (o->set & VMACT_GAPI_OPT_NON_ATOMIC)
		r |= json_object_set_new(j, "allow_non_atomic_scale_up_to_max",
					 json_boolean(o->non_atomic));
#undef NUM
	if (r) {
		json_decref(j);
		return NULL;
	}
	return j;
}

json_t *vmact_gapi_group_encode(const struct vmact_gapi_group *g)
{
	json_t *hosts = json_array(), *taints = json_array(), *pool = json_object();
	bool ok = hosts && taints && pool;

	for (size_t i = 0; ok && i < g->nhosts; i++)
		ok = json_array_append_new(hosts, json_string(g->hosts[i])) == 0;
	for (size_t i = 0; ok && i < g->ntaints; i++)
		ok = json_array_append_new(taints,
					   json_pack("{s:s,s:s,s:s}", "key", g->taints[i].key,
						     "value", g->taints[i].value, "effect",
						     g->taints[i].effect)) == 0;
	for (int k = 0; ok && k < VMACT_GAPI_TIERS; k++)
		ok = json_object_set_new(pool, vmact_gapi_tier_name(k),
					 json_pack("{s:i,s:i,s:i}", "size", (int)g->pool[k].size,
						   "ready", (int)g->pool[k].ready, "starting",
						   (int)g->pool[k].starting)) == 0;
	if (!ok) {
		json_decref(hosts);
		json_decref(taints);
		json_decref(pool);
		return NULL;
	}
	/* json_pack takes the references of its "o"s, also when it fails
	 * (a NULL one: out of memory). */
	return json_pack("{s:s,s:i,s:i,s:i,s:i,s:o,s:o,s:o,s:{s:i,s:i,s:I,s:I,s:I,s:i,s:s,s:s},"
			 "s:o,s:o,s:s}",
			 "id", g->id, "min", (int)g->min, "max", (int)g->max, "target",
			 (int)g->target, "in_service", (int)g->in_service, "hosts", hosts, "labels",
			 labels_encode(g), "taints", taints, "template", "vcpus",
			 (int)g->tmpl.vcpus, "max_vcpus", (int)g->tmpl.max_vcpus, "memory_bytes",
			 (json_int_t)g->tmpl.memory_bytes, "max_memory_bytes",
			 (json_int_t)g->tmpl.max_memory_bytes, "ephemeral_storage_bytes",
			 (json_int_t)g->tmpl.ephemeral_bytes, "pods", (int)g->tmpl.pods, "arch",
			 g->tmpl.arch, "os", g->tmpl.os, "options", options_encode(&g->opts),
			 "pool", pool, "scheduler_name",
			 g->scheduler_name ? g->scheduler_name : "");
}

static int get_labels(const json_t *obj, struct vmact_gapi_group *g, struct vmact_err *err)
{
	const json_t *labels = json_object_get(obj, "labels"), *v;
	const char *k;

	if (absent(labels))
		return 0;
	if (!json_is_object(labels))
		return vmact_err_set(err, EPROTO, "labels: not an object");
	if (json_object_size(labels) > VMACT_GAPI_LABELS_MAX)
		return vmact_err_set(err, EPROTO, "labels: more than %d", VMACT_GAPI_LABELS_MAX);
	g->labels = calloc(json_object_size(labels) + 1, sizeof(*g->labels));
	if (!g->labels)
		return vmact_err_set(err, ENOMEM, "labels: out of memory");
	json_object_foreach((json_t *)labels, k, v) {
		struct vmact_gapi_label *kv = &g->labels[g->nlabels];

		if (!json_is_string(v) || strlen(k) > VMACT_GAPI_TEXT_MAX ||
		    json_string_length(v) > VMACT_GAPI_TEXT_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return vmact_err_set(err, EPROTO,
					     "labels.%.64s: not a string of at most %d bytes", k,
					     VMACT_GAPI_TEXT_MAX);
		kv->key = k;
		kv->value = json_string_value(v);
		g->nlabels++;
	}
	return 0;
}

static int get_taints(const json_t *obj, struct vmact_gapi_group *g, struct vmact_err *err)
{
	const json_t *taints, *t;
	size_t i;
	int r = get_array(obj, "taints", false, VMACT_GAPI_TAINTS_MAX, &taints, err);

	if (r < 0 || !taints)
		return r;
	g->taints = calloc(json_array_size(taints) + 1, sizeof(*g->taints));
	if (!g->taints)
		return vmact_err_set(err, ENOMEM, "taints: out of memory");
	json_array_foreach(taints, i, t) {
		struct vmact_gapi_taint *x = &g->taints[g->ntaints++];

		if (!json_is_object(t))
			return vmact_err_set(err, EPROTO, "taints[%zu]: not an object", i);
		r = get_text(t, "key", NULL, &x->key, err);
		if (r >= 0)
			r = get_text(t, "value", "", &x->value, err);
		if (r >= 0)
			r = get_text(t, "effect", NULL, &x->effect, err);
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

static int get_template(const json_t *obj, struct vmact_gapi_template *t, struct vmact_err *err)
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
	r = get_int(tj, "ephemeral_storage_bytes", false, 0, 0, 1LL << 60, &v, err);
	if (r < 0)
		goto bad;
	t->ephemeral_bytes = (uint64_t)v;
	/* kubelet's own default for --max-pods */
	r = get_int(tj, "pods", false, 110, 1, 100000, &v, err);
	if (r < 0)
		goto bad;
	t->pods = (uint32_t)v;
	r = get_text(tj, "arch", "amd64", &t->arch, err);
	if (r < 0)
		goto bad;
	r = get_text(tj, "os", "linux", &t->os, err);
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

	if (absent(v))
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= 1e9))
		return vmact_err_set(err, EPROTO, "%s: not a number of seconds in [0, 1e9]", key);
	*out = json_number_value(v);
	*set |= bit;
	return 0;
}

static int get_fraction(const json_t *o, const char *key, unsigned bit, double *out, unsigned *set,
			struct vmact_err *err)
{
	const json_t *v = json_object_get(o, key);

	if (absent(v))
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

	if (absent(v))
		return 0;
	if (!json_is_boolean(v))
		return vmact_err_set(err, EPROTO, "%s: not a boolean", key);
	*out = json_is_true(v);
	*set |= bit;
	return 0;
}

int vmact_gapi_options_decode(const json_t *oj, struct vmact_gapi_options *o, struct vmact_err *err)
{
	int r;

	*o = (struct vmact_gapi_options){ 0 };
	if (absent(oj))
		return 0;
	if (!json_is_object(oj))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_fraction(oj, "scale_down_utilization_threshold", VMACT_GAPI_OPT_UTIL, &o->util,
			 &o->set, err);
	if (r >= 0)
		r = get_fraction(oj, "scale_down_gpu_utilization_threshold",
				 VMACT_GAPI_OPT_GPU_UTIL, &o->gpu_util, &o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "scale_down_unneeded_time_s", VMACT_GAPI_OPT_UNNEEDED,
				&o->unneeded_s, &o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "scale_down_unready_time_s", VMACT_GAPI_OPT_UNREADY,
				&o->unready_s, &o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "max_node_provision_time_s", VMACT_GAPI_OPT_PROVISION,
				&o->provision_s, &o->set, err);
	if (r >= 0)
		r = get_flag(oj, "zero_or_max_node_scaling", VMACT_GAPI_OPT_ZERO_OR_MAX,
			     &o->zero_or_max, &o->set, err);
	if (r >= 0)
		r = get_flag(oj, "ignore_daemonsets_utilization", VMACT_GAPI_OPT_IGNORE_DS,
			     &o->ignore_ds, &o->set, err);
	if (r >= 0)
		r = get_seconds(oj, "max_node_startup_time_s", VMACT_GAPI_OPT_STARTUP,
				&o->startup_s, &o->set, err);
	if (r >= 0)
		r = get_flag(oj, "allow_non_atomic_scale_up_to_max", VMACT_GAPI_OPT_NON_ATOMIC,
			     &o->non_atomic, &o->set, err);
	return r;
}

static int get_pool(const json_t *obj, struct vmact_gapi_group *g, struct vmact_err *err)
{
	const json_t *pool = json_object_get(obj, "pool");
	int r = 0;

	if (absent(pool))
		return 0;
	if (!json_is_object(pool))
		return vmact_err_set(err, EPROTO, "pool: not an object");
	for (int k = 0; r >= 0 && k < VMACT_GAPI_TIERS; k++) {
		const json_t *t = json_object_get(pool, vmact_gapi_tier_name(k));
		int32_t v[3] = { 0 };

		if (absent(t))
			continue;
		if (!json_is_object(t))
			r = vmact_err_set(err, EPROTO, "not an object");
		if (r >= 0)
			r = get_i32(t, "size", false, &v[0], err);
		if (r >= 0)
			r = get_i32(t, "ready", false, &v[1], err);
		if (r >= 0)
			r = get_i32(t, "starting", false, &v[2], err);
		if (r < 0)
			return vmact_err_prefix(err, "pool.%s", vmact_gapi_tier_name(k));
		g->pool[k] = (struct vmact_gapi_pool_tier){ (uint32_t)v[0], (uint32_t)v[1],
							    (uint32_t)v[2] };
	}
	return r;
}

int vmact_gapi_group_decode(const json_t *obj, struct vmact_gapi_group *g, struct vmact_err *err)
{
	long long v;
	int r;

	*g = (struct vmact_gapi_group){ 0 };
	if (!json_is_object(obj))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(obj, "id", NULL, &g->id, err);
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
	/* vmact-groupd may hold a target outside [min, max] for a moment (a
	 * configuration change); it is its to report, not ours to refuse. */
	r = get_i32(obj, "target", true, &g->target, err);
	if (r >= 0)
		r = get_i32(obj, "in_service", false, &g->in_service, err);
	if (r >= 0)
		r = get_texts(obj, "hosts", false, VMACT_GAPI_LABELS_MAX, &g->hosts, &g->nhosts,
			      err);
	if (r >= 0)
		r = get_labels(obj, g, err);
	if (r >= 0)
		r = get_taints(obj, g, err);
	if (r >= 0)
		r = get_template(obj, &g->tmpl, err);
	if (r >= 0) {
		r = vmact_gapi_options_decode(json_object_get(obj, "options"), &g->opts, err);
		if (r < 0)
			vmact_err_prefix(err, "options");
	}
	if (r >= 0)
		r = get_pool(obj, g, err);
	if (r >= 0)
		r = get_text(obj, "scheduler_name", "", &g->scheduler_name, err);
	return r;
}

void vmact_gapi_group_clear(struct vmact_gapi_group *g)
{
	free(g->hosts);
	free(g->labels);
	free(g->taints);
	*g = (struct vmact_gapi_group){ 0 };
}

/* {"KEY": [each encoded]}; NULL when out of memory. */
static json_t *list_encode(const char *key, const void *v, size_t n, size_t size,
			   json_t *(*one)(const void *))
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, one((const char *)v + i * size)) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	return arr ? json_pack("{s:o}", key, arr) : NULL;
}

/* The array under key of doc, each element decoded into (*items)[i] of
 * size bytes; errors named "key[i].field". */
static int list_decode(json_t *doc, const char *key, size_t size,
		       int (*one)(const json_t *, void *, struct vmact_err *),
		       void (*clear)(void *), void **items, size_t *n, struct vmact_err *err)
{
	const json_t *arr, *o;
	size_t i;
	int r;

	*items = NULL;
	*n = 0;
	if (!json_is_object(doc))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_array(doc, key, true, VMACT_GAPI_LIST_MAX, &arr, err);
	if (r < 0)
		return r;
	*items = calloc(json_array_size(arr) + 1, size);
	if (!*items)
		return vmact_err_set(err, ENOMEM, "out of memory");
	json_array_foreach(arr, i, o) {
		r = one(o, (char *)*items + i * size, err);
		(*n)++;
		if (r < 0)
			break;
	}
	if (r >= 0)
		return 0;
	for (size_t k = 0; clear && k < *n; k++)
		clear((char *)*items + k * size);
	free(*items);
	*items = NULL;
	*n = 0;
	return vmact_err_prefix(err, "%s[%zu]", key, i);
}

static json_t *group_one(const void *g)
{
	return vmact_gapi_group_encode(g);
}

json_t *vmact_gapi_groups_encode(const struct vmact_gapi_group *g, size_t n)
{
	return list_encode("groups", g, n, sizeof(*g), group_one);
}

static int group_decode_one(const json_t *o, void *g, struct vmact_err *err)
{
	return vmact_gapi_group_decode(o, g, err);
}

static void group_clear_one(void *g)
{
	vmact_gapi_group_clear(g);
}

int vmact_gapi_groups_decode(json_t *doc, struct vmact_gapi_groups *out, struct vmact_err *err)
{
	void *items;
	int r;

	*out = (struct vmact_gapi_groups){ 0 };
	r = list_decode(doc, "groups", sizeof(*out->g), group_decode_one, group_clear_one, &items,
			&out->n, err);
	if (r < 0)
		return r;
	out->g = items;
	for (size_t i = 0; i < out->n; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(out->g[i].id, out->g[k].id)) {
				r = vmact_err_set(err, EPROTO,
						  "groups[%zu]: id: \"%s\" given twice", i,
						  out->g[i].id);
				vmact_gapi_groups_clear(out);
				return r;
			}
	out->doc = json_incref(doc);
	return 0;
}

void vmact_gapi_groups_clear(struct vmact_gapi_groups *s)
{
	for (size_t i = 0; i < s->n; i++)
		vmact_gapi_group_clear(&s->g[i]);
	free(s->g);
	json_decref(s->doc);
	*s = (struct vmact_gapi_groups){ 0 };
}

/* ---- VMs and nodes ---- */

static json_t *vm_error_encode(const struct vmact_gapi_vm_error *e)
{
	return json_pack("{s:s,s:s,s:s,s:f}", "class", e->cls, "code", e->code, "message",
			 e->message, "at", e->at);
}

static int vm_error_decode(const json_t *obj, bool *has, struct vmact_gapi_vm_error *e,
			   struct vmact_err *err)
{
	const json_t *o = json_object_get(obj, "error");
	int r;

	*has = false;
	if (absent(o))
		return 0;
	if (!json_is_object(o))
		return vmact_err_set(err, EPROTO, "error: not an object");
	r = get_text(o, "code", NULL, &e->code, err);
	if (r >= 0 && !e->code[0])
		r = vmact_err_set(err, EPROTO, "code: empty");
	if (r >= 0)
		r = get_text(o, "class", "", &e->cls, err);
	if (r >= 0)
		r = get_text(o, "message", "", &e->message, err);
	if (r >= 0)
		r = get_num(o, "at", &e->at, err);
	if (r < 0)
		return vmact_err_prefix(err, "error");
	*has = true;
	return 0;
}

static json_t *node_one(const void *p)
{
	const struct vmact_gapi_node *n = p;
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "provider_id", n->provider_id, "name",
			      n->name, "host", n->host, "state",
			      vmact_gapi_node_state_name(n->state), "vm_state", n->vm_state, "tier",
			      n->tier);

	if (o && n->has_error && json_object_set_new(o, "error", vm_error_encode(&n->error)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *vmact_gapi_nodes_encode(const struct vmact_gapi_node *v, size_t n)
{
	return list_encode("nodes", v, n, sizeof(*v), node_one);
}

static int node_decode_one(const json_t *o, void *p, struct vmact_err *err)
{
	struct vmact_gapi_node *n = p;
	const char *state = NULL;
	int r;

	if (!json_is_object(o))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(o, "provider_id", NULL, &n->provider_id, err);
	if (r >= 0 && !n->provider_id[0])
		r = vmact_err_set(err, EPROTO, "provider_id: empty");
	if (r >= 0)
		r = get_text(o, "state", NULL, &state, err);
	if (r >= 0) {
		if (!strcmp(state, "creating"))
			n->state = VMACT_GAPI_NODE_CREATING;
		else if (!strcmp(state, "running"))
			n->state = VMACT_GAPI_NODE_RUNNING;
		else if (!strcmp(state, "deleting"))
			n->state = VMACT_GAPI_NODE_DELETING;
		else
			r = vmact_err_set(err, EPROTO, "state: not creating, running or deleting");
	}
	if (r >= 0)
		r = get_text(o, "name", "", &n->name, err);
	if (r >= 0)
		r = get_text(o, "host", "", &n->host, err);
	if (r >= 0)
		r = get_text(o, "vm_state", "", &n->vm_state, err);
	if (r >= 0)
		r = get_text(o, "tier", "", &n->tier, err);
	if (r >= 0)
		r = vm_error_decode(o, &n->has_error, &n->error, err);
	return r;
}

int vmact_gapi_nodes_decode(json_t *doc, struct vmact_gapi_nodes *out, struct vmact_err *err)
{
	void *items;
	int r;

	*out = (struct vmact_gapi_nodes){ 0 };
	r = list_decode(doc, "nodes", sizeof(*out->v), node_decode_one, NULL, &items, &out->n, err);
	if (r < 0)
		return r;
	out->v = items;
	out->doc = json_incref(doc);
	return 0;
}

void vmact_gapi_nodes_clear(struct vmact_gapi_nodes *s)
{
	free(s->v);
	json_decref(s->doc);
	*s = (struct vmact_gapi_nodes){ 0 };
}

static json_t *vm_one(const void *p)
{
	const struct vmact_gapi_vm *v = p;
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:b,s:i,s:f,s:f,s:f,s:f}",
			      "provider_id", v->provider_id, "name", v->name, "host", v->host,
			      "group", v->group, "role", v->role, "tier", v->tier, "state",
			      v->state, "leased", v->leased, "busy", v->busy, "attempts",
			      (int)v->attempts, "created", v->created, "booted", v->booted,
			      "requested", v->requested, "in_service", v->in_service);

	if (o && v->has_error && json_object_set_new(o, "error", vm_error_encode(&v->error)) < 0)
		goto fail;
	if (o && !v->configured && json_object_set_new(o, "configured", json_false()) < 0)
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

json_t *vmact_gapi_vms_encode(const struct vmact_gapi_vm *v, size_t n, const bool *ready)
{
	json_t *o = list_encode("vms", v, n, sizeof(*v), vm_one);

	if (o && ready && json_object_set_new(o, "ready", json_boolean(*ready)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int vm_decode_one(const json_t *o, void *p, struct vmact_err *err)
{
	struct vmact_gapi_vm *v = p;
	long long attempts = 0;
	int r;

	if (!json_is_object(o))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(o, "provider_id", NULL, &v->provider_id, err);
	if (r >= 0)
		r = get_text(o, "name", NULL, &v->name, err);
	if (r >= 0)
		r = get_text(o, "host", NULL, &v->host, err);
	if (r >= 0)
		r = get_text(o, "group", NULL, &v->group, err);
	if (r >= 0)
		r = get_text(o, "role", NULL, &v->role, err);
	if (r >= 0)
		r = get_text(o, "tier", NULL, &v->tier, err);
	if (r >= 0)
		r = get_text(o, "state", NULL, &v->state, err);
	if (r >= 0)
		r = get_bool(o, "leased", false, false, &v->leased, err);
	if (r >= 0)
		r = get_bool(o, "busy", false, false, &v->busy, err);
	if (r >= 0)
		r = get_int(o, "attempts", false, 0, 0, INT32_MAX, &attempts, err);
	v->attempts = (int32_t)attempts;
	if (r >= 0)
		r = get_num(o, "created", &v->created, err);
	if (r >= 0)
		r = get_num(o, "booted", &v->booted, err);
	if (r >= 0)
		r = get_num(o, "requested", &v->requested, err);
	if (r >= 0)
		r = get_num(o, "in_service", &v->in_service, err);
	if (r >= 0)
		r = vm_error_decode(o, &v->has_error, &v->error, err);
	if (r >= 0)
		r = get_bool(o, "configured", false, true, &v->configured, err);
	return r;
}

int vmact_gapi_vms_decode(json_t *doc, struct vmact_gapi_vms *out, struct vmact_err *err)
{
	const json_t *ready;
	void *items;
	int r;

	*out = (struct vmact_gapi_vms){ 0 };
	r = list_decode(doc, "vms", sizeof(*out->v), vm_decode_one, NULL, &items, &out->n, err);
	if (r < 0)
		return r;
	out->v = items;
	ready = json_object_get(doc, "ready");
	if (!absent(ready)) {
		if (!json_is_boolean(ready)) {
			vmact_gapi_vms_clear(out);
			return vmact_err_set(err, EPROTO, "ready: not a boolean");
		}
		out->has_ready = true;
		out->ready = json_is_true(ready);
	}
	out->doc = json_incref(doc);
	return 0;
}

void vmact_gapi_vms_clear(struct vmact_gapi_vms *s)
{
	free(s->v);
	json_decref(s->doc);
	*s = (struct vmact_gapi_vms){ 0 };
}

/* ---- hosts ---- */

static json_t *res_encode(struct vmact_gapi_res r)
{
	return json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)r.milli_cpu, "memory_bytes",
			 (json_int_t)r.memory_bytes);
}

static int res_decode(const json_t *obj, const char *key, struct vmact_gapi_res *out,
		      struct vmact_err *err)
{
	const json_t *o = json_object_get(obj, key);
	long long c = 0, m = 0;
	int r;

	*out = (struct vmact_gapi_res){ 0 };
	if (absent(o))
		return 0;
	if (!json_is_object(o))
		return vmact_err_set(err, EPROTO, "%s: not an object", key);
	r = get_int(o, "milli_cpu", true, 0, 0, INT64_MAX, &c, err);
	if (r >= 0)
		r = get_int(o, "memory_bytes", true, 0, 0, INT64_MAX, &m, err);
	if (r < 0)
		return vmact_err_prefix(err, "%s", key);
	*out = (struct vmact_gapi_res){ c, m };
	return 0;
}

static json_t *host_one(const void *p)
{
	const struct vmact_gapi_host *h = p;
	json_t *o = json_pack("{s:s,s:s,s:b,s:b,s:{s:b,s:s},s:{s:b,s:s},s:i,s:i}", "name", h->name,
			      "uri", h->uri, "reachable", h->reachable, "scanned", h->scanned,
			      "libvirt", "ok", h->libvirt_ok, "error", h->libvirt_error, "arbiter",
			      "ok", h->arbiter_ok, "error", h->arbiter_error, "vms", (int)h->vms,
			      "leases", (int)h->leases);
	int r = 0;

	if (o && h->has_ledger) {
		r |= json_object_set_new(o, "capacity", res_encode(h->capacity));
		r |= json_object_set_new(o, "watermark", res_encode(h->watermark));
		r |= json_object_set_new(o, "reserved", res_encode(h->reserved));
		r |= json_object_set_new(o, "pressure", res_encode(h->pressure));
		r |= json_object_set_new(o, "arbiter_pods", json_integer(h->arbiter_pods));
		r |= json_object_set_new(o, "arbiter_leases", json_integer(h->arbiter_leases));
	}
	if (o)
		r |= json_object_set_new(o, "standby", res_encode(h->standby));
	if (r) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *vmact_gapi_hosts_encode(const struct vmact_gapi_host *v, size_t n)
{
	return list_encode("hosts", v, n, sizeof(*v), host_one);
}

static int status_decode(const json_t *obj, const char *key, bool *ok, const char **msg,
			 struct vmact_err *err)
{
	const json_t *o = json_object_get(obj, key);
	int r;

	if (!json_is_object(o))
		return vmact_err_set(err, EPROTO, "%s: missing or not an object", key);
	r = get_bool(o, "ok", true, false, ok, err);
	if (r >= 0)
		r = get_text(o, "error", "", msg, err);
	return r < 0 ? vmact_err_prefix(err, "%s", key) : 0;
}

static int host_decode_one(const json_t *o, void *p, struct vmact_err *err)
{
	struct vmact_gapi_host *h = p;
	int r;

	if (!json_is_object(o))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(o, "name", NULL, &h->name, err);
	if (r >= 0)
		r = get_text(o, "uri", NULL, &h->uri, err);
	if (r >= 0)
		r = get_bool(o, "reachable", true, false, &h->reachable, err);
	if (r >= 0)
		r = get_bool(o, "scanned", false, false, &h->scanned, err);
	if (r >= 0)
		r = status_decode(o, "libvirt", &h->libvirt_ok, &h->libvirt_error, err);
	if (r >= 0)
		r = status_decode(o, "arbiter", &h->arbiter_ok, &h->arbiter_error, err);
	if (r >= 0)
		r = get_i32(o, "vms", false, &h->vms, err);
	if (r >= 0)
		r = get_i32(o, "leases", false, &h->leases, err);
	h->has_ledger = !absent(json_object_get(o, "capacity"));
	if (r >= 0)
		r = res_decode(o, "capacity", &h->capacity, err);
	if (r >= 0)
		r = res_decode(o, "watermark", &h->watermark, err);
	if (r >= 0)
		r = res_decode(o, "reserved", &h->reserved, err);
	if (r >= 0)
		r = res_decode(o, "pressure", &h->pressure, err);
	if (r >= 0) {
		long long pods = 0, leases = 0;

		r = get_int(o, "arbiter_pods", false, 0, 0, INT64_MAX, &pods, err);
		if (r >= 0)
			r = get_int(o, "arbiter_leases", false, 0, 0, INT64_MAX, &leases, err);
		h->arbiter_pods = pods;
		h->arbiter_leases = leases;
	}
	if (r >= 0)
		r = res_decode(o, "standby", &h->standby, err);
	return r;
}

int vmact_gapi_hosts_decode(json_t *doc, struct vmact_gapi_hosts *out, struct vmact_err *err)
{
	void *items;
	int r;

	*out = (struct vmact_gapi_hosts){ 0 };
	r = list_decode(doc, "hosts", sizeof(*out->v), host_decode_one, NULL, &items, &out->n, err);
	if (r < 0)
		return r;
	out->v = items;
	out->doc = json_incref(doc);
	return 0;
}

void vmact_gapi_hosts_clear(struct vmact_gapi_hosts *s)
{
	free(s->v);
	json_decref(s->doc);
	*s = (struct vmact_gapi_hosts){ 0 };
}

/* ---- waiting VMs ---- */

static json_t *waiting_one(const void *p)
{
	const struct vmact_gapi_waiting *w = p;
	json_t *pending = json_array();

	for (size_t i = 0; pending && i < w->npending; i++)
		if (json_array_append_new(pending, json_string(w->pending[i])) < 0) {
			json_decref(pending);
			pending = NULL;
		}
	return pending ? json_pack("{s:s,s:s,s:s,s:s,s:o,s:f,s:f}", "uid", w->uid, "name", w->name,
				   "group", w->group, "host", w->host, "pending", pending,
				   "waited_s", w->waited_s, "timeout_s", w->timeout_s)
		       : NULL;
}

json_t *vmact_gapi_waitings_encode(const struct vmact_gapi_waiting *v, size_t n)
{
	return list_encode("waiting", v, n, sizeof(*v), waiting_one);
}

static int waiting_decode_one(const json_t *o, void *p, struct vmact_err *err)
{
	struct vmact_gapi_waiting *w = p;
	int r;

	if (!json_is_object(o))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(o, "uid", NULL, &w->uid, err);
	if (r >= 0)
		r = get_text(o, "name", NULL, &w->name, err);
	if (r >= 0)
		r = get_text(o, "group", NULL, &w->group, err);
	if (r >= 0)
		r = get_text(o, "host", NULL, &w->host, err);
	if (r >= 0)
		r = get_texts(o, "pending", true, VMACT_GAPI_LABELS_MAX, &w->pending, &w->npending,
			      err);
	if (r >= 0)
		r = get_num(o, "waited_s", &w->waited_s, err);
	if (r >= 0)
		r = get_num(o, "timeout_s", &w->timeout_s, err);
	return r;
}

static void waiting_clear_one(void *p)
{
	struct vmact_gapi_waiting *w = p;

	free(w->pending);
	w->pending = NULL;
}

int vmact_gapi_waitings_decode(json_t *doc, struct vmact_gapi_waitings *out, struct vmact_err *err)
{
	void *items;
	int r;

	*out = (struct vmact_gapi_waitings){ 0 };
	r = list_decode(doc, "waiting", sizeof(*out->v), waiting_decode_one, waiting_clear_one,
			&items, &out->n, err);
	if (r < 0)
		return r;
	out->v = items;
	out->doc = json_incref(doc);
	return 0;
}

void vmact_gapi_waitings_clear(struct vmact_gapi_waitings *s)
{
	for (size_t i = 0; i < s->n; i++)
		waiting_clear_one(&s->v[i]);
	free(s->v);
	json_decref(s->doc);
	*s = (struct vmact_gapi_waitings){ 0 };
}

/* ---- changes ---- */

json_t *vmact_gapi_delta_encode(long long delta)
{
	return json_pack("{s:I}", "delta", (json_int_t)delta);
}

int vmact_gapi_delta_decode(const json_t *doc, long long *delta, struct vmact_err *err)
{
	const json_t *v = json_object_get(doc, "delta");

	if (!json_is_integer(v))
		return vmact_err_set(err, EPROTO, "delta: an integer is required");
	*delta = json_integer_value(v);
	return 0;
}

json_t *vmact_gapi_delete_nodes_encode(const char *const *ids, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, json_string(ids[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	return arr ? json_pack("{s:o}", "provider_ids", arr) : NULL;
}

int vmact_gapi_delete_nodes_decode(const json_t *doc, const char ***ids, size_t *n,
				   struct vmact_err *err)
{
	const json_t *arr = json_object_get(doc, "provider_ids"), *it;
	size_t i;

	*ids = NULL;
	*n = 0;
	if (!json_is_array(arr) || !json_array_size(arr) ||
	    json_array_size(arr) > VMACT_GAPI_IDS_MAX)
		return vmact_err_set(err, EPROTO, "provider_ids: a list of 1 to %d ids",
				     VMACT_GAPI_IDS_MAX);
	*ids = calloc(json_array_size(arr), sizeof(**ids));
	if (!*ids)
		return vmact_err_set(err, ENOMEM, "out of memory");
	json_array_foreach(arr, i, it) {
		if (!json_is_string(it)) {
			free(*ids);
			*ids = NULL;
			*n = 0;
			return vmact_err_set(err, EPROTO, "provider_ids[%zu]: a string", i);
		}
		(*ids)[(*n)++] = json_string_value(it);
	}
	return 0;
}

json_t *vmact_gapi_target_encode(int32_t target)
{
	return json_pack("{s:i}", "target", (int)target);
}

int vmact_gapi_target_decode(const json_t *doc, int32_t *target, struct vmact_err *err)
{
	const json_t *v = json_object_get(doc, "target");

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return vmact_err_set(err, EPROTO, "target: missing or not in [0, 2^31)");
	*target = (int32_t)json_integer_value(v);
	return 0;
}

static const char *verdict_arg(enum vmact_gapi_verdict v)
{
	return v == VMACT_GAPI_ALLOW ? "plugin" : "message";
}

json_t *vmact_gapi_verdict_encode(enum vmact_gapi_verdict v, const char *arg)
{
	return arg ? json_pack("{s:s}", verdict_arg(v), arg) : json_object();
}

int vmact_gapi_verdict_decode(const json_t *doc, enum vmact_gapi_verdict v, const char **arg,
			      struct vmact_err *err)
{
	*arg = NULL;
	if (!doc)
		return 0;
	if (!json_is_object(doc))
		return vmact_err_set(err, EPROTO, "not an object");
	if (absent(json_object_get(doc, verdict_arg(v))))
		return 0;
	return text_of(json_object_get(doc, verdict_arg(v)), verdict_arg(v), arg, err);
}

json_t *vmact_gapi_verdict_done_encode(const char *uid, enum vmact_gapi_verdict v)
{
	return json_pack("{s:s,s:s}", "uid", uid, "done", vmact_gapi_verdict_name(v));
}

int vmact_gapi_verdict_done_decode(const json_t *doc, const char **uid, enum vmact_gapi_verdict *v,
				   struct vmact_err *err)
{
	const char *done;
	int r;

	if (!json_is_object(doc))
		return vmact_err_set(err, EPROTO, "not an object");
	r = get_text(doc, "uid", NULL, uid, err);
	if (r >= 0)
		r = get_text(doc, "done", NULL, &done, err);
	if (r >= 0 && vmact_gapi_verdict_parse(done, v) < 0)
		r = vmact_err_set(err, EPROTO, "done: not allow or reject");
	return r;
}

json_t *vmact_gapi_node_group_encode(const char *id)
{
	return json_pack("{s:s}", "id", id);
}

int vmact_gapi_node_group_decode(const json_t *doc, const char **id, struct vmact_err *err)
{
	if (!json_is_object(doc))
		return vmact_err_set(err, EPROTO, "not an object");
	return get_text(doc, "id", NULL, id, err);
}

/* ---- the request ---- */

static int answer_error(long status, const struct vmact_buf *a, struct vmact_err *err)
{
	_cleanup_(vmact_gapi_jsonp) json_t *doc = NULL;
	struct vmact_gapi_error e = { 0 };
	struct vmact_err ignored = { 0 };

	if (a->data)
		doc = json_loadb(a->data, a->len, 0, NULL);
	/* An answer that is not the API's error still has its status. */
	if (!doc || vmact_gapi_error_decode(doc, &e, &ignored) < 0)
		e = (struct vmact_gapi_error){ 0 };
	return vmact_err_set(err, -vmact_gapi_reason_errno(e.reason, status), "vmact-groupd: %s",
			     e.message ? e.message : "HTTP error without a reason");
}

int vmact_gapi_call(const char *socket, const char *method, const char *path, const json_t *body,
		    uint64_t timeout_usec, json_t **out, struct vmact_err *err)
{
	_cleanup_(vmact_http_answer_free) struct vmact_http_answer a = { 0 };
	_cleanup_free_ char *text = NULL;
	struct vmact_err e = { 0 };
	json_error_t je;
	int r;

	*out = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	r = vmact_http_call(&(struct vmact_http_req){ .unix_socket = socket,
						      .url = path,
						      .method = method,
						      .body = text,
						      .timeout_usec = timeout_usec,
						      .answer_max = ANSWER_MAX },
			    &a, &e);
	if (r == -ETIMEDOUT)
		return vmact_err_set(err, ETIMEDOUT,
				     "vmact-groupd at %s did not answer %s %s in time", socket,
				     method, path);
	if (r == -ENOMEM || r == -EINVAL)
		return vmact_err_set(err, -r, "%s", e.msg);
	if (r < 0)
		return vmact_err_set(err, r == -EMSGSIZE ? EIO : EAGAIN,
				     "cannot reach vmact-groupd at %s: %s", socket, e.msg);
	if (a.status < 200 || a.status > 299)
		return answer_error(a.status, &a.body, err);
	*out = json_loadb(a.body.data ? a.body.data : "", a.body.len, 0, &je);
	if (!*out)
		return vmact_err_set(
			err, EIO, "vmact-groupd answered %s %s with something other than JSON: %s",
			method, path, je.text);
	return 0;
}
