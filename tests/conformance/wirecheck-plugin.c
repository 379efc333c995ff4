/* SPDX-License-Identifier: Apache-2.0 */
/* wirecheck handlers for the plugin protocol: agent_request_encode,
 * agent_request_keys (the keys a version's request carries),
 * agent_request_decode (the arbiter's reading of an agent's body) and
 * plugin_response_decode. */
#include <errno.h>
#include <string.h>

#include "agent-glue/codec/plugin.h"
#include "base/macro.h"
#include "tests/conformance/wirecheck.h"

static int in_version(const json_t *in, enum ag_plugin_version *v, struct vmact_err *err)
{
	const char *s = json_string_value(json_object_get(in, "version"));

	if (!s)
		return vmact_err_set(err, EINVAL, "vector field version: expected a string");
	return ag_plugin_version_parse(s, v, err);
}

static int in_slot_bytes(const json_t *in, enum ag_plugin_version v, uint64_t *slot,
			 struct vmact_err *err)
{
	*slot = 0;
	if (!json_object_get(in, "slot_bytes"))
		return ag_plugin_memory_as_bytes(v)
			       ? 0
			       : vmact_err_set(err, EINVAL, "vector field slot_bytes: missing");
	return wc_get_u64(in, "slot_bytes", slot, err);
}

json_t *wc_agent_request_encode(const json_t *in, struct vmact_err *err)
{
	struct ag_agent_request r;
	const json_t *pod, *m;
	const char *ns, *name;
	uint64_t slot;

	memset(&r, 0, sizeof(r));
	if (in_version(in, &r.version, err) < 0 || in_slot_bytes(in, r.version, &slot, err) < 0)
		return NULL;
	pod = json_object_get(in, "pod");
	ns = json_string_value(json_object_get(pod, "namespace"));
	name = json_string_value(json_object_get(pod, "name"));
	if (!ns || !name || strlen(ns) > AG_PLUGIN_NAME_MAX || strlen(name) > AG_PLUGIN_NAME_MAX) {
		vmact_err_set(err, EINVAL, "vector field pod: expected {namespace, name} strings");
		return NULL;
	}
	strcpy(r.pod_namespace, ns);
	strcpy(r.pod_name, name);
	if (json_object_get(in, "compute_unit") &&
	    !json_is_null(json_object_get(in, "compute_unit"))) {
		if (wc_get_resources(in, "compute_unit", &r.compute_unit, err) < 0)
			return NULL;
		r.has_compute_unit = true;
	}
	if (wc_get_resources(in, "resources", &r.resources, err) < 0)
		return NULL;
	if (!json_is_null(json_object_get(in, "last_permit"))) {
		if (wc_get_resources(in, "last_permit", &r.last_permit, err) < 0)
			return NULL;
		r.has_last_permit = true;
	}
	m = json_object_get(in, "metrics");
	if (m && !json_is_null(m)) {
		double a, b, c;

		if (wc_get_double(m, "load_avg_1m", &a, err) < 0 ||
		    wc_get_double(m, "load_avg_5m", &b, err) < 0 ||
		    wc_get_double(m, "memory_usage_bytes", &c, err) < 0)
			return NULL;
		r.metrics.load_avg_1m = (float)a;
		r.metrics.load_avg_5m = (float)b;
		r.metrics.memory_usage_bytes = (float)c;
		r.has_metrics = true;
	}
	return ag_agent_request_encode(&r, slot, err);
}

json_t *wc_plugin_response_decode(const json_t *in, struct vmact_err *err)
{
	enum ag_plugin_version v;
	struct ag_plugin_response r;
	uint64_t slot;
	json_t *out;
	const json_t *body = json_object_get(in, "json");

	if (in_version(in, &v, err) < 0 || in_slot_bytes(in, v, &slot, err) < 0)
		return NULL;
	if (!body) {
		vmact_err_set(err, EINVAL, "vector field json: missing");
		return NULL;
	}
	if (ag_plugin_response_decode(v, body, slot, &r, err) < 0)
		return NULL;
	out = json_pack("{s:o,s:b}", "permit", wc_resources_json(&r.permit), "migrate", r.migrate);
	if (out && r.has_resource_unit &&
	    json_object_set_new(out, "compute_unit", wc_resources_json(&r.resource_unit)) < 0) {
		json_decref(out);
		out = NULL;
	}
	if (!out)
		vmact_err_set(err, ENOMEM, "out of memory");
	return out;
}

/* The keys of a JSON object, sorted, as an array. */
static json_t *sorted_keys(const json_t *obj)
{
	const char *keys[16];
	size_t n = 0;
	const char *k;
	json_t *v, *out;

	json_object_foreach((json_t *)obj, k, v) {
		if (n == ARRAY_SIZE(keys))
			return NULL;
		keys[n++] = k;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];

			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	out = json_array();
	for (size_t i = 0; out && i < n; i++)
		if (json_array_append_new(out, json_string(keys[i])) < 0) {
			json_decref(out);
			return NULL;
		}
	return out;
}

json_t *wc_agent_request_keys(const json_t *in, struct vmact_err *err)
{
	_cleanup_(json_decrefp) json_t *req = wc_agent_request_encode(in, err);
	const json_t *m;
	json_t *out;

	if (!req)
		return NULL;
	m = json_object_get(req, "metrics");
	out = json_pack("{s:o*,s:o*,s:o*}", "request", sorted_keys(req), "metrics",
			json_is_object(m) ? sorted_keys(m) : json_array(), "resources",
			sorted_keys(json_object_get(req, "resources")));
	if (!out)
		vmact_err_set(err, ENOMEM, "out of memory");
	return out;
}

static json_t *resources_or_null(bool has, const struct vmact_resources *r)
{
	return has ? wc_resources_json(r) : json_null();
}

json_t *wc_agent_request_decode(const json_t *in, struct vmact_err *err)
{
	struct ag_agent_request r;
	const json_t *body = json_object_get(in, "json");
	uint64_t slot;
	json_t *out, *m;

	if (wc_get_u64(in, "slot_bytes", &slot, err) < 0)
		return NULL;
	if (!body) {
		vmact_err_set(err, EINVAL, "vector field json: missing");
		return NULL;
	}
	if (ag_agent_request_decode(body, slot, &r, err) < 0)
		return NULL;
	m = r.has_metrics ? json_pack("{s:f,s:f,s:f}", "load_avg_1m", (double)r.metrics.load_avg_1m,
				      "load_avg_5m", (double)r.metrics.load_avg_5m,
				      "memory_usage_bytes", (double)r.metrics.memory_usage_bytes)
			  : json_null();
	out = json_pack("{s:s,s:{s:s,s:s},s:o,s:o,s:o,s:o*}", "version",
			ag_plugin_version_format((int)r.version), "pod", "namespace",
			r.pod_namespace, "name", r.pod_name, "resources",
			wc_resources_json(&r.resources), "compute_unit",
			resources_or_null(r.has_compute_unit, &r.compute_unit), "last_permit",
			resources_or_null(r.has_last_permit, &r.last_permit), "metrics", m);
	if (!out)
		vmact_err_set(err, ENOMEM, "out of memory");
	return out;
}
