/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/codec/informant.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "base/macro.h"
#include "net/json.h"

static const char *const version_names[] = { NULL, "1.0", "1.1", "1.2", "2.0" };

const char *ag_inf_version_name(uint32_t v)
{
	return v >= AG_INF_VERSION_MIN && v <= AG_INF_VERSION_MAX ? version_names[v] : NULL;
}

int ag_inf_version_parse(const char *s, uint32_t *out, struct vmact_err *err)
{
	for (uint32_t v = AG_INF_VERSION_MIN; s && v <= AG_INF_VERSION_MAX; v++) {
		if (strcmp(s, version_names[v]) == 0) {
			*out = v;
			return 0;
		}
	}
	return vmact_err_set(err, EINVAL, "unknown informant protocol version \"%s\"", s ? s : "");
}

static int check_range(const char *who, uint32_t min, uint32_t max, struct vmact_err *err)
{
	if (min < AG_INF_VERSION_MIN || max > AG_INF_VERSION_MAX || min > max)
		return vmact_err_set(err, EINVAL,
				     "%s protocol range %u..%u is not within 1..%u or is empty",
				     who, min, max, AG_INF_VERSION_MAX);
	return 0;
}

int ag_inf_negotiate(uint32_t agent_min, uint32_t agent_max, uint32_t inf_min, uint32_t inf_max,
		     uint32_t *out, struct vmact_err *err)
{
	int ret;

	ret = check_range("agent", agent_min, agent_max, err);
	if (ret < 0)
		return ret;
	ret = check_range("informant", inf_min, inf_max, err);
	if (ret < 0)
		return ret;
	if (agent_max < inf_min || inf_max < agent_min)
		return vmact_err_set(
			err, EPROTO,
			"protocol version mismatch: agent supports v%s..v%s, informant v%s..v%s",
			ag_inf_version_name(agent_min), ag_inf_version_name(agent_max),
			ag_inf_version_name(inf_min), ag_inf_version_name(inf_max));
	*out = agent_max < inf_max ? agent_max : inf_max;
	return 0;
}

/* ---- UUIDs -------------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int ag_inf_uuid_parse(const char *s, char out[AG_INF_ID_MAX])
{
	size_t len = strlen(s);
	char hex[32];
	size_t n = 0;

	/* The forms uuid.Parse accepts. */
	if (len == 45 && strncasecmp(s, "urn:uuid:", 9) == 0) {
		s += 9;
		len = 36;
	} else if (len == 38 && s[0] == '{' && s[37] == '}') {
		s++;
		len = 36;
	}
	if (len == 36) {
		if (s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
			return -EINVAL;
		for (size_t i = 0; i < 36; i++) {
			if (i == 8 || i == 13 || i == 18 || i == 23)
				continue;
			if (hexval(s[i]) < 0)
				return -EINVAL;
			hex[n++] = (char)tolower((unsigned char)s[i]);
		}
	} else if (len == 32) {
		for (size_t i = 0; i < 32; i++) {
			if (hexval(s[i]) < 0)
				return -EINVAL;
			hex[n++] = (char)tolower((unsigned char)s[i]);
		}
	} else {
		return -EINVAL;
	}
	snprintf(out, AG_INF_ID_MAX, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
		 hex + 20);
	return 0;
}

int ag_inf_uuid_new(char out[AG_INF_ID_MAX], struct vmact_err *err)
{
	unsigned char b[16];
	ssize_t got = getrandom(b, sizeof(b), 0);

	if (got != (ssize_t)sizeof(b))
		return vmact_err_set(err, got < 0 ? errno : EIO, "getrandom: %s",
				     got < 0 ? strerror(errno) : "short read");
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(out, AG_INF_ID_MAX,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
	return 0;
}

/* ---- strict field access ------------------------------------------------ */

static int need_object(const json_t *v, const char *what, struct vmact_err *err)
{
	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "%s: expected a JSON object", what);
	return 0;
}

static int get_member(const json_t *obj, const char *key, const json_t **out, struct vmact_err *err)
{
	*out = net_json_get(obj, key);
	if (!*out)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	return 0;
}

#define get_bool net_json_get_bool
#define get_uint net_json_get_uint

static int get_version(const json_t *obj, const char *key, uint32_t *out, struct vmact_err *err)
{
	uint64_t v;
	int ret = get_uint(obj, key, UINT32_MAX, &v, err);

	if (ret < 0)
		return ret;
	if (v < AG_INF_VERSION_MIN || v > AG_INF_VERSION_MAX)
		return vmact_err_set(err, EINVAL, "%s: unknown informant protocol version %llu",
				     key, (unsigned long long)v);
	*out = (uint32_t)v;
	return 0;
}

static int get_string(const json_t *obj, const char *key, char *out, size_t size,
		      struct vmact_err *err)
{
	return net_json_string_copy(net_json_get(obj, key), key, out, size, err);
}

static int get_uuid(const json_t *obj, const char *key, char out[AG_INF_ID_MAX],
		    struct vmact_err *err)
{
	const json_t *v;
	int ret = get_member(obj, key, &v, err);

	if (ret < 0)
		return ret;
	if (!json_is_string(v))
		return vmact_err_set(err, EINVAL, "%s: expected a UUID string", key);
	if (strlen(json_string_value(v)) != json_string_length(v) ||
	    ag_inf_uuid_parse(json_string_value(v), out) < 0)
		return vmact_err_set(err, EINVAL, "%s: not a UUID", key);
	return 0;
}

/* Keeps the callee's code even when err is NULL. */
static int prefixed(int ret, struct vmact_err *err, const char *what)
{
	vmact_err_prefix(err, "%s", what);
	return ret;
}

/* Runs a nested decoder on obj[key] and prefixes its error with key. */
#define NESTED(obj, key, call)                                      \
	({                                                          \
		const json_t *_n_;                                  \
		int _r_ = get_member((obj), (key), &_n_, err);      \
		if (_r_ == 0) {                                     \
			_r_ = (call);                               \
			if (_r_ < 0)                                \
				vmact_err_prefix(err, "%s", (key)); \
		}                                                   \
		_r_;                                                \
	})

/* ---- types ---------------------------------------------------------------- */

json_t *ag_agent_desc_encode(const struct ag_agent_desc *d)
{
	return json_pack("{s:s,s:s,s:I,s:I}", "agentID", d->agent_id, "agentServeAddr",
			 d->serve_addr, "minProtoVersion", (json_int_t)d->min_version,
			 "maxProtoVersion", (json_int_t)d->max_version);
}

int ag_agent_desc_decode(const json_t *v, struct ag_agent_desc *out, struct vmact_err *err)
{
	struct ag_agent_desc d;
	int ret;

	if ((ret = need_object(v, "AgentDesc", err)) < 0 ||
	    (ret = get_uuid(v, "agentID", d.agent_id, err)) < 0 ||
	    (ret = get_string(v, "agentServeAddr", d.serve_addr, sizeof(d.serve_addr), err)) < 0 ||
	    (ret = get_version(v, "minProtoVersion", &d.min_version, err)) < 0 ||
	    (ret = get_version(v, "maxProtoVersion", &d.max_version, err)) < 0)
		return ret;
	if (!d.serve_addr[0])
		return vmact_err_set(err, EINVAL, "agentServeAddr: empty");
	if (d.min_version > d.max_version)
		return vmact_err_set(err, EINVAL, "minProtoVersion %u is above maxProtoVersion %u",
				     d.min_version, d.max_version);
	*out = d;
	return 0;
}

json_t *ag_informant_desc_encode(const struct ag_informant_desc *d)
{
	if (!d->has_prometheus)
		return json_pack("{s:I,s:{}}", "protoVersion", (json_int_t)d->version,
				 "metricsMethod");
	return json_pack("{s:I,s:{s:{s:I}}}", "protoVersion", (json_int_t)d->version,
			 "metricsMethod", "prometheus", "port", (json_int_t)d->prometheus_port);
}

static int prometheus_decode(const json_t *p, uint16_t *port, struct vmact_err *err)
{
	uint64_t v;
	int ret;

	if (!json_is_object(p))
		return vmact_err_set(err, EINVAL, "expected a JSON object or null");
	if ((ret = get_uint(p, "port", 65535, &v, err)) < 0)
		return ret;
	if (v == 0)
		return vmact_err_set(err, EINVAL, "port: 0 is not a usable port");
	*port = (uint16_t)v;
	return 0;
}

int ag_informant_desc_decode(const json_t *v, uint32_t agent_min, uint32_t agent_max,
			     struct ag_informant_desc *out, struct vmact_err *err)
{
	struct ag_informant_desc d = { 0 };
	const json_t *mm, *prom;
	int ret;

	if ((ret = need_object(v, "InformantDesc", err)) < 0 ||
	    (ret = get_version(v, "protoVersion", &d.version, err)) < 0 ||
	    (ret = get_member(v, "metricsMethod", &mm, err)) < 0)
		return ret;
	if (!json_is_object(mm))
		return vmact_err_set(err, EINVAL, "metricsMethod: expected a JSON object");
	prom = net_json_get(mm, "prometheus");
	/* A null pointer in Go, i.e. no such method. */
	if (prom && !json_is_null(prom)) {
		ret = prometheus_decode(prom, &d.prometheus_port, err);
		if (ret < 0)
			return prefixed(ret, err, "metricsMethod.prometheus");
		d.has_prometheus = true;
	}
	if (!d.has_prometheus)
		return vmact_err_set(err, EINVAL, "metricsMethod: no known metrics method given");
	if (d.version < agent_min || d.version > agent_max)
		return vmact_err_set(
			err, EPROTO,
			"protoVersion: informant chose %u, outside the agent's range %u..%u",
			d.version, agent_min, agent_max);
	*out = d;
	return 0;
}

json_t *ag_agent_id_encode(const char *agent_id)
{
	return json_pack("{s:s}", "agentID", agent_id);
}

int ag_agent_id_decode(const json_t *v, char out[AG_INF_ID_MAX], struct vmact_err *err)
{
	int ret = need_object(v, "AgentIdentification", err);

	return ret < 0 ? ret : get_uuid(v, "agentID", out, err);
}

json_t *ag_agent_message_encode(json_t *data, uint64_t seq)
{
	if (!data)
		return NULL;
	if (seq > (uint64_t)LLONG_MAX) {
		json_decref(data);
		return NULL;
	}
	return json_pack("{s:o,s:I}", "data", data, "sequenceNumber", (json_int_t)seq);
}

int ag_agent_message_decode(const json_t *v, const json_t **data, uint64_t *seq,
			    struct vmact_err *err)
{
	int ret;

	if ((ret = need_object(v, "AgentMessage", err)) < 0 ||
	    (ret = get_member(v, "data", data, err)) < 0 ||
	    (ret = get_uint(v, "sequenceNumber", LLONG_MAX, seq, err)) < 0)
		return ret;
	return 0;
}

json_t *ag_agent_id_message_encode(const char *agent_id, uint64_t seq)
{
	return ag_agent_message_encode(ag_agent_id_encode(agent_id), seq);
}

int ag_agent_id_message_decode(const json_t *v, char out[AG_INF_ID_MAX], uint64_t *seq,
			       struct vmact_err *err)
{
	const json_t *data;
	int ret = ag_agent_message_decode(v, &data, seq, err);

	if (ret < 0)
		return ret;
	ret = ag_agent_id_decode(data, out, err);
	return ret < 0 ? prefixed(ret, err, "data") : 0;
}

static json_t *raw_quantities(const struct vmact_resources *r)
{
	char cpu[64], mem[64];

	if (vmact_quantity_format_milli(r->milli_cpu, cpu, sizeof(cpu)) < 0 ||
	    vmact_quantity_format_bytes(r->mem_bytes, mem, sizeof(mem)) < 0)
		return NULL;
	return json_pack("{s:s,s:s}", "cpu", cpu, "memory", mem);
}

json_t *ag_raw_resources_encode(const struct vmact_resources *r)
{
	return raw_quantities(r);
}

int ag_raw_resources_decode(const json_t *v, struct vmact_resources *out, struct vmact_err *err)
{
	struct vmact_resources r;
	int ret;

	if ((ret = need_object(v, "RawResources", err)) < 0 ||
	    (ret = NESTED(v, "cpu", ag_milli_cpu_decode(_n_, &r.milli_cpu, err))) < 0 ||
	    (ret = NESTED(v, "memory", ag_bytes_decode(_n_, &r.mem_bytes, err))) < 0)
		return ret;
	*out = r;
	return 0;
}

json_t *ag_resource_message_encode(const struct vmact_resources *r, const char *agent_id,
				   uint64_t seq)
{
	json_t *data = raw_quantities(r);

	if (!data)
		return NULL;
	if (json_object_set_new(data, "id", ag_agent_id_encode(agent_id)) < 0) {
		json_decref(data);
		return NULL;
	}
	return ag_agent_message_encode(data, seq);
}

int ag_resource_message_decode(const json_t *v, struct vmact_resources *out,
			       char agent_id[AG_INF_ID_MAX], uint64_t *seq, struct vmact_err *err)
{
	const json_t *data;
	struct vmact_resources r;
	char id[AG_INF_ID_MAX];
	int ret;

	if ((ret = ag_agent_message_decode(v, &data, seq, err)) < 0)
		return ret;
	if ((ret = ag_raw_resources_decode(data, &r, err)) < 0 ||
	    (ret = NESTED(data, "id", ag_agent_id_decode(_n_, id, err))) < 0)
		return prefixed(ret, err, "data");
	*out = r;
	memcpy(agent_id, id, sizeof(id));
	return 0;
}

json_t *ag_more_resources_encode(const struct ag_more_resources *m)
{
	return json_pack("{s:b,s:b,s:s}", "cpu", m->cpu, "memory", m->memory, "expectedID",
			 m->expected_id);
}

int ag_more_resources_decode(const json_t *v, struct ag_more_resources *out, struct vmact_err *err)
{
	struct ag_more_resources m;
	int ret;

	if ((ret = need_object(v, "MoreResourcesRequest", err)) < 0 ||
	    (ret = get_bool(v, "cpu", &m.cpu, err)) < 0 ||
	    (ret = get_bool(v, "memory", &m.memory, err)) < 0 ||
	    (ret = get_uuid(v, "expectedID", m.expected_id, err)) < 0)
		return ret;
	*out = m;
	return 0;
}

json_t *ag_expected_id_encode(const char *expected_id)
{
	return json_pack("{s:s}", "expectedID", expected_id);
}

int ag_expected_id_decode(const json_t *v, char out[AG_INF_ID_MAX], struct vmact_err *err)
{
	int ret = need_object(v, "request", err);

	return ret < 0 ? ret : get_uuid(v, "expectedID", out, err);
}

json_t *ag_unregister_encode(bool was_active)
{
	return json_pack("{s:b}", "wasActive", was_active);
}

int ag_unregister_decode(const json_t *v, bool *was_active, struct vmact_err *err)
{
	int ret = need_object(v, "UnregisterAgent", err);

	return ret < 0 ? ret : get_bool(v, "wasActive", was_active, err);
}

json_t *ag_downscale_result_encode(const struct ag_downscale_result *r)
{
	return json_pack("{s:b,s:s}", "Ok", r->ok, "Status", r->status);
}

int ag_downscale_result_decode(const json_t *v, struct ag_downscale_result *out,
			       struct vmact_err *err)
{
	struct ag_downscale_result r;
	const json_t *s;
	int ret;

	if ((ret = need_object(v, "DownscaleResult", err)) < 0 ||
	    (ret = get_bool(v, "Ok", &r.ok, err)) < 0 ||
	    (ret = get_member(v, "Status", &s, err)) < 0)
		return ret;
	if (!json_is_string(s))
		return vmact_err_set(err, EINVAL, "Status: expected a string");
	/* A human-readable reason: keep what fits rather than failing. */
	snprintf(r.status, sizeof(r.status), "%s", json_string_value(s));
	*out = r;
	return 0;
}

int ag_inf_empty_decode(const json_t *v, struct vmact_err *err)
{
	/* Go decodes null into struct{} without complaint. */
	if (!json_is_object(v) && !json_is_null(v))
		return vmact_err_set(err, EINVAL, "body: expected a JSON object");
	return 0;
}

int ag_inf_parse_body(const char *buf, size_t len, json_t **out, struct vmact_err *err)
{
	json_error_t jerr;
	json_t *v;

	if (!buf || len == 0)
		return vmact_err_set(err, EINVAL, "empty body");
	v = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (!v)
		return vmact_err_set(err, EINVAL, "line %d column %d: %s", jerr.line, jerr.column,
				     jerr.text);
	*out = v;
	return 0;
}

char *ag_inf_dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
