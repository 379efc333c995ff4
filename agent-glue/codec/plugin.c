/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/codec/plugin.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "net/json.h"

static const char *const version_names[] = { "1.0", "1.1", "2.0", "2.1", "3.0", "4.0", "5.0" };

bool ag_plugin_version_valid(int v)
{
	return v >= AG_PLUGIN_VERSION_MIN && v <= AG_PLUGIN_VERSION_MAX;
}

const char *ag_plugin_version_format(int v)
{
	return ag_plugin_version_valid(v) ? version_names[v - 1] : "?";
}

const char *ag_plugin_version_string(long long v, char *buf, size_t len)
{
	if (v == 0)
		snprintf(buf, len, "<invalid: zero>");
	else if (v > 0 && v <= AG_PLUGIN_VERSION_MAX)
		snprintf(buf, len, "v%s", version_names[v - 1]);
	else
		snprintf(buf, len, "<unknown = v%s + %lld>",
			 version_names[AG_PLUGIN_VERSION_MAX - 1], v - AG_PLUGIN_VERSION_MAX);
	return buf;
}

int ag_plugin_version_parse(const char *s, enum ag_plugin_version *out, struct vmact_err *err)
{
	const char *p = s;

	if (!s)
		return vmact_err_set(err, EINVAL, "protocol version: missing");
	if (*p == 'v')
		p++;
	for (int i = 0; i < (int)ARRAY_SIZE(version_names); i++) {
		if (strcmp(p, version_names[i]) == 0) {
			*out = (enum ag_plugin_version)(i + 1);
			return 0;
		}
	}
	return vmact_err_set(
		err, EINVAL,
		"protocol version \"%s\": expected one of 1.0, 1.1, 2.0, 2.1, 3.0, 4.0, 5.0", s);
}

bool ag_plugin_allows_nil_metrics(enum ag_plugin_version v)
{
	return v >= AG_PLUGIN_V1_1;
}

bool ag_plugin_supports_fractional_cpu(enum ag_plugin_version v)
{
	return v >= AG_PLUGIN_V2_0;
}

bool ag_plugin_sends_last_permit(enum ag_plugin_version v)
{
	return v >= AG_PLUGIN_V2_1;
}

bool ag_plugin_plugin_sends_compute_unit(enum ag_plugin_version v)
{
	return v < AG_PLUGIN_V3_0;
}

bool ag_plugin_agent_sends_compute_unit(enum ag_plugin_version v)
{
	return v >= AG_PLUGIN_V4_0;
}

bool ag_plugin_memory_as_bytes(enum ag_plugin_version v)
{
	return v >= AG_PLUGIN_V4_0;
}

bool ag_plugin_includes_extended_metrics(enum ag_plugin_version v)
{
	return v < AG_PLUGIN_V5_0;
}

bool ag_plugin_sends_memory_usage(enum ag_plugin_version v)
{
	return v >= AG_PLUGIN_V2_0 && v < AG_PLUGIN_V5_0;
}

bool ag_plugin_agent_takes_migrate(enum ag_plugin_version v)
{
	return v >= AG_PLUGIN_V2_0;
}

/* ---- Resources ---------------------------------------------------------- */

json_t *ag_plugin_resources_encode(enum ag_plugin_version v, const struct vmact_resources *r,
				   uint64_t slot_bytes, struct vmact_err *err)
{
	json_t *cpu, *mem;

	if (!ag_plugin_version_valid((int)v)) {
		vmact_err_set(err, EINVAL, "invalid protocol version %d", (int)v);
		return NULL;
	}
	if (ag_plugin_supports_fractional_cpu(v)) {
		cpu = ag_milli_cpu_encode(r->milli_cpu);
	} else {
		if (r->milli_cpu % 1000) {
			vmact_err_set(err, EINVAL,
				      "vCPUs: %" PRIu32
				      "m is fractional; protocol %s carries whole CPUs only",
				      r->milli_cpu, ag_plugin_version_format((int)v));
			return NULL;
		}
		cpu = json_integer(r->milli_cpu / 1000);
	}
	if (ag_plugin_memory_as_bytes(v)) {
		mem = ag_bytes_encode(r->mem_bytes);
	} else {
		if (slot_bytes == 0) {
			json_decref(cpu);
			vmact_err_set(err, EINVAL,
				      "mem: protocol %s counts memory slots: slot size required",
				      ag_plugin_version_format((int)v));
			return NULL;
		}
		if (r->mem_bytes % slot_bytes) {
			json_decref(cpu);
			vmact_err_set(err, EINVAL,
				      "mem: %" PRIu64 " bytes is not a whole number of %" PRIu64
				      "-byte slots",
				      r->mem_bytes, slot_bytes);
			return NULL;
		}
		if (r->mem_bytes / slot_bytes > (uint64_t)INT64_MAX) {
			json_decref(cpu);
			vmact_err_set(err, ERANGE,
				      "mem: %" PRIu64 " slots do not fit a JSON integer",
				      r->mem_bytes / slot_bytes);
			return NULL;
		}
		mem = json_integer((json_int_t)(r->mem_bytes / slot_bytes));
	}
	if (!cpu || !mem) {
		json_decref(cpu);
		json_decref(mem);
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	return json_pack("{s:o,s:o}", "vCPUs", cpu, "mem", mem);
}

int ag_plugin_resources_decode(enum ag_plugin_version v, const json_t *j, uint64_t slot_bytes,
			       struct vmact_resources *out, struct vmact_err *err)
{
	struct vmact_resources r;

	if (!ag_plugin_version_valid((int)v))
		return vmact_err_set(err, EINVAL, "invalid protocol version %d", (int)v);
	/* Same shape in every version; only the units differ. */
	if (ag_resources_decode(j, &r, err) < 0)
		return -err->code;
	if (!ag_plugin_supports_fractional_cpu(v) && r.milli_cpu % 1000)
		return vmact_err_set(err, EDOM,
				     "vCPUs: fractional CPU (%" PRIu32
				     "m) with protocol version %s, "
				     "which carries whole CPUs only",
				     r.milli_cpu, ag_plugin_version_format((int)v));
	if (!ag_plugin_memory_as_bytes(v)) {
		uint64_t slots = r.mem_bytes;

		if (slot_bytes == 0)
			return vmact_err_set(
				err, EINVAL,
				"mem: protocol %s counts memory slots: slot size required",
				ag_plugin_version_format((int)v));
		if (slots > UINT64_MAX / slot_bytes)
			return vmact_err_set(err, ERANGE, "mem: %" PRIu64 " slots overflow", slots);
		r.mem_bytes = slots * slot_bytes;
	}
	*out = r;
	return 0;
}

/* ---- float32 ------------------------------------------------------------ */

double ag_plugin_float32_wire(float f)
{
	char buf[32];

	if (!isfinite(f))
		return f;
	net_json_shortest_g(f, true, buf, sizeof(buf));
	return strtod(buf, NULL);
}

char *ag_plugin_dumps(const json_t *msg)
{
	return net_json_dumps(msg, JSON_COMPACT);
}

static json_t *float_json(const char *key, float f, struct vmact_err *err)
{
	json_t *j;

	if (!isfinite(f)) {
		vmact_err_set(err, EINVAL, "metrics.%s: not a finite number", key);
		return NULL;
	}
	j = net_json_real(f, true);
	if (!j)
		vmact_err_set(err, ENOMEM, "out of memory");
	return j;
}

static int float_decode(const json_t *obj, const char *key, float *out, struct vmact_err *err)
{
	const json_t *v = net_json_get(obj, key);
	double d;

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_number(v))
		return vmact_err_set(err, EINVAL, "%s: expected a number", key);
	d = json_number_value(v);
	if (!isfinite(d) || fabs(d) > FLT_MAX)
		return vmact_err_set(err, ERANGE, "%s: %g does not fit a float32", key, d);
	*out = (float)d;
	return 0;
}

/* ---- AgentRequest ------------------------------------------------------- */

static int set_or_fail(json_t *obj, const char *key, json_t *v, struct vmact_err *err)
{
	if (!v)
		return err && err->code ? -err->code : vmact_err_set(err, ENOMEM, "out of memory");
	if (json_object_set_new(obj, key, v) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	return 0;
}

static json_t *metrics_encode(const struct ag_agent_request *r, struct vmact_err *err)
{
	_cleanup_(json_decrefp) json_t *m = json_object();

	if (!m) {
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	if (set_or_fail(m, "loadAvg1M", float_json("loadAvg1M", r->metrics.load_avg_1m, err), err) <
	    0)
		return NULL;
	/* The keys the version's era sent, and its plugins decoded
	 * (doc/protocols.md, "What each era's agents sent"). */
	if (ag_plugin_includes_extended_metrics(r->version) &&
	    set_or_fail(m, "loadAvg5M", float_json("loadAvg5M", r->metrics.load_avg_5m, err), err) <
		    0)
		return NULL;
	if (ag_plugin_sends_memory_usage(r->version) &&
	    set_or_fail(m, "memoryUsageBytes",
			float_json("memoryUsageBytes", r->metrics.memory_usage_bytes, err),
			err) < 0)
		return NULL;
	return TAKE_PTR(m);
}

json_t *ag_agent_request_encode(const struct ag_agent_request *r, uint64_t slot_bytes,
				struct vmact_err *err)
{
	_cleanup_(json_decrefp) json_t *o = NULL;
	enum ag_plugin_version v = r->version;
	json_t *x;

	if (!ag_plugin_version_valid((int)v)) {
		vmact_err_set(err, EINVAL, "protoVersion: invalid protocol version %d", (int)v);
		return NULL;
	}
	if (!r->pod_name[0]) {
		vmact_err_set(err, EINVAL, "pod.name: must not be empty");
		return NULL;
	}
	o = json_object();
	if (!o || set_or_fail(o, "protoVersion", json_integer(v), err) < 0 ||
	    set_or_fail(o, "pod",
			json_pack("{s:s,s:s}", "namespace", r->pod_namespace, "name", r->pod_name),
			err) < 0) {
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	if (ag_plugin_agent_sends_compute_unit(v)) {
		if (!r->has_compute_unit || !r->compute_unit.milli_cpu ||
		    !r->compute_unit.mem_bytes) {
			vmact_err_set(
				err, EINVAL,
				"computeUnit: protocol %s needs a compute unit with non-zero fields",
				ag_plugin_version_format((int)v));
			return NULL;
		}
		x = ag_plugin_resources_encode(v, &r->compute_unit, slot_bytes, err);
		if (set_or_fail(o, "computeUnit", x, err) < 0) {
			vmact_err_prefix(err, "computeUnit");
			return NULL;
		}
	}
	x = ag_plugin_resources_encode(v, &r->resources, slot_bytes, err);
	if (set_or_fail(o, "resources", x, err) < 0) {
		vmact_err_prefix(err, "resources");
		return NULL;
	}
	if (ag_plugin_sends_last_permit(v)) {
		x = r->has_last_permit
			    ? ag_plugin_resources_encode(v, &r->last_permit, slot_bytes, err)
			    : json_null();
		if (set_or_fail(o, "lastPermit", x, err) < 0) {
			vmact_err_prefix(err, "lastPermit");
			return NULL;
		}
	}
	if (r->has_metrics) {
		x = metrics_encode(r, err);
	} else if (ag_plugin_allows_nil_metrics(v)) {
		x = json_null();
	} else {
		vmact_err_set(err, EINVAL, "metrics: protocol %s requires metrics (null from 1.1)",
			      ag_plugin_version_format((int)v));
		return NULL;
	}
	if (set_or_fail(o, "metrics", x, err) < 0)
		return NULL;
	return TAKE_PTR(o);
}

int ag_agent_request_peek_version(const json_t *j, long long *out, struct vmact_err *err)
{
	const json_t *v;

	if (!json_is_object(j))
		return vmact_err_set(err, EINVAL, "request: expected a JSON object");
	v = net_json_get(j, "protoVersion");
	if (!v || json_is_null(v)) {
		*out = 0;
		return 0;
	}
	if (!json_is_integer(v))
		return vmact_err_set(err, EINVAL, "protoVersion: expected an integer");
	*out = json_integer_value(v);
	return 0;
}

static int name_decode(const json_t *pod, const char *key, char *out, struct vmact_err *err)
{
	return net_json_string_copy(net_json_get(pod, key), key, out, AG_PLUGIN_NAME_MAX + 1, err);
}

/* A key Go's decoder would leave at zero when absent or null. */
static int float_decode_opt(const json_t *obj, const char *key, float *out, struct vmact_err *err)
{
	const json_t *v = net_json_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	return float_decode(obj, key, out, err);
}

/* Every era's keys at every version (doc/protocols.md, "What each era's
 * agents sent"): loadAvg1M and loadAvg5M from v1.0's agents on,
 * memoryUsageBytes from v0.13.0 (inside 2.0) to 4.0, loadAvg1M alone in
 * 5.0. So 1.x and early 2.0 requests lack memoryUsageBytes and 5.0 ones
 * lack loadAvg5M: a missing key is read as 0, as Neon's plugins read it,
 * and only loadAvg1M, which every agent sent, is required. */
static int metrics_decode(enum ag_plugin_version v, const json_t *m, struct ag_agent_request *r,
			  struct vmact_err *err)
{
	if (!m || json_is_null(m)) {
		if (!ag_plugin_allows_nil_metrics(v))
			return vmact_err_set(err, ENODATA, "null is not allowed with protocol %s",
					     ag_plugin_version_format((int)v));
		r->has_metrics = false;
		return 0;
	}
	if (!json_is_object(m))
		return vmact_err_set(err, EINVAL, "expected an object or null");
	if (float_decode(m, "loadAvg1M", &r->metrics.load_avg_1m, err) < 0 ||
	    float_decode_opt(m, "loadAvg5M", &r->metrics.load_avg_5m, err) < 0 ||
	    float_decode_opt(m, "memoryUsageBytes", &r->metrics.memory_usage_bytes, err) < 0)
		return -err->code;
	r->has_metrics = true;
	return 0;
}

int ag_agent_request_decode(const json_t *j, uint64_t slot_bytes, struct ag_agent_request *out,
			    struct vmact_err *err)
{
	struct ag_agent_request r;
	const json_t *pod, *x;
	long long ver;
	enum ag_plugin_version v;

	memset(&r, 0, sizeof(r));
	if (ag_agent_request_peek_version(j, &ver, err) < 0)
		return -err->code;
	if (!ag_plugin_version_valid((int)ver) || ver != (int)ver)
		return vmact_err_set(err, EPROTONOSUPPORT,
				     "protoVersion: %lld is not a known version", ver);
	r.version = v = (enum ag_plugin_version)ver;

	pod = net_json_get(j, "pod");
	if (!pod)
		return vmact_err_set(err, EINVAL, "pod: missing");
	if (!json_is_object(pod))
		return vmact_err_set(err, EINVAL, "pod: expected an object");
	if (name_decode(pod, "namespace", r.pod_namespace, err) < 0 ||
	    name_decode(pod, "name", r.pod_name, err) < 0)
		return vmact_err_prefix(err, "pod");
	if (!r.pod_name[0])
		return vmact_err_set(err, EINVAL, "pod.name: must not be empty");

	if (ag_plugin_agent_sends_compute_unit(v)) {
		x = net_json_get(j, "computeUnit");
		if (x && !json_is_null(x)) {
			if (ag_plugin_resources_decode(v, x, slot_bytes, &r.compute_unit, err) < 0)
				return vmact_err_prefix(err, "computeUnit");
			r.has_compute_unit = true;
		}
	}
	x = net_json_get(j, "resources");
	if (!x)
		return vmact_err_set(err, EINVAL, "resources: missing");
	if (ag_plugin_resources_decode(v, x, slot_bytes, &r.resources, err) < 0)
		return vmact_err_prefix(err, "resources");
	if (ag_plugin_sends_last_permit(v)) {
		x = net_json_get(j, "lastPermit");
		if (x && !json_is_null(x)) {
			if (ag_plugin_resources_decode(v, x, slot_bytes, &r.last_permit, err) < 0)
				return vmact_err_prefix(err, "lastPermit");
			r.has_last_permit = true;
		}
	}
	if (metrics_decode(v, net_json_get(j, "metrics"), &r, err) < 0)
		return vmact_err_prefix(err, "metrics");
	*out = r;
	return 0;
}

/* ---- PluginResponse ----------------------------------------------------- */

json_t *ag_plugin_response_encode(enum ag_plugin_version v, const struct ag_plugin_response *r,
				  uint64_t slot_bytes, struct vmact_err *err)
{
	_cleanup_(json_decrefp) json_t *o = json_object();
	json_t *x;

	if (!o) {
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	x = ag_plugin_resources_encode(v, &r->permit, slot_bytes, err);
	if (set_or_fail(o, "permit", x, err) < 0) {
		vmact_err_prefix(err, "permit");
		return NULL;
	}
	/* 1.x agents up to v0.5.1 panic on it (doc/protocols.md, "What each
	 * era's agents sent"). */
	if (r->migrate && ag_plugin_agent_takes_migrate(v) &&
	    set_or_fail(o, "migrate", json_object(), err) < 0)
		return NULL;
	if (ag_plugin_plugin_sends_compute_unit(v) && r->has_resource_unit) {
		x = ag_plugin_resources_encode(v, &r->resource_unit, slot_bytes, err);
		if (set_or_fail(o, "resourceUnit", x, err) < 0) {
			vmact_err_prefix(err, "resourceUnit");
			return NULL;
		}
	}
	return TAKE_PTR(o);
}

int ag_plugin_response_decode(enum ag_plugin_version v, const json_t *j, uint64_t slot_bytes,
			      struct ag_plugin_response *out, struct vmact_err *err)
{
	struct ag_plugin_response r;
	const json_t *x;

	memset(&r, 0, sizeof(r));
	if (!ag_plugin_version_valid((int)v))
		return vmact_err_set(err, EINVAL, "invalid protocol version %d", (int)v);
	if (!json_is_object(j))
		return vmact_err_set(err, EINVAL, "response: expected a JSON object");
	x = net_json_get(j, "permit");
	if (!x || json_is_null(x))
		return vmact_err_set(err, EINVAL, "permit: missing");
	if (ag_plugin_resources_decode(v, x, slot_bytes, &r.permit, err) < 0)
		return vmact_err_prefix(err, "permit");
	x = net_json_get(j, "migrate");
	if (x && !json_is_null(x)) {
		if (!json_is_object(x))
			return vmact_err_set(err, EINVAL, "migrate: expected an object or null");
		r.migrate = true;
	}
	if (ag_plugin_plugin_sends_compute_unit(v)) {
		x = net_json_get(j, "resourceUnit");
		if (x && !json_is_null(x)) {
			if (ag_plugin_resources_decode(v, x, slot_bytes, &r.resource_unit, err) < 0)
				return vmact_err_prefix(err, "resourceUnit");
			r.has_resource_unit = true;
		}
	}
	*out = r;
	return 0;
}

/* ---- permit validation -------------------------------------------------- */

int ag_plugin_permit_validate(const struct vmact_resources *permit,
			      const struct vmact_resources *requested,
			      const struct vmact_resources *current, struct vmact_err *err)
{
	char a[32], b[32];

	if (permit->milli_cpu == 0)
		return vmact_err_set(err, EPROTO, "permit: vCPUs is zero");
	if (permit->mem_bytes == 0)
		return vmact_err_set(err, EPROTO, "permit: mem is zero");
	if (permit->milli_cpu > requested->milli_cpu) {
		vmact_quantity_format_milli(permit->milli_cpu, a, sizeof(a));
		vmact_quantity_format_milli(requested->milli_cpu, b, sizeof(b));
		return vmact_err_set(err, EPROTO, "permit: vCPUs %s is above the requested %s", a,
				     b);
	}
	if (permit->mem_bytes > requested->mem_bytes) {
		vmact_quantity_format_bytes(permit->mem_bytes, a, sizeof(a));
		vmact_quantity_format_bytes(requested->mem_bytes, b, sizeof(b));
		return vmact_err_set(err, EPROTO, "permit: mem %s is above the requested %s", a, b);
	}
	if (current && permit->milli_cpu < current->milli_cpu) {
		vmact_quantity_format_milli(permit->milli_cpu, a, sizeof(a));
		vmact_quantity_format_milli(current->milli_cpu, b, sizeof(b));
		return vmact_err_set(err, EPROTO, "permit: vCPUs %s is below current usage %s", a,
				     b);
	}
	if (current && permit->mem_bytes < current->mem_bytes) {
		vmact_quantity_format_bytes(permit->mem_bytes, a, sizeof(a));
		vmact_quantity_format_bytes(current->mem_bytes, b, sizeof(b));
		return vmact_err_set(err, EPROTO, "permit: mem %s is below current usage %s", a, b);
	}
	return 0;
}
