/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/codec/monitor.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "net/json.h"

static const char *const type_names[] = {
	[AG_MON_DOWNSCALE_REQUEST] = "DownscaleRequest",
	[AG_MON_UPSCALE_NOTIFICATION] = "UpscaleNotification",
	[AG_MON_HEALTH_CHECK] = "HealthCheck",
	[AG_MON_UPSCALE_REQUEST] = "UpscaleRequest",
	[AG_MON_UPSCALE_CONFIRMATION] = "UpscaleConfirmation",
	[AG_MON_DOWNSCALE_RESULT] = "DownscaleResult",
	[AG_MON_INVALID_MESSAGE] = "InvalidMessage",
	[AG_MON_INTERNAL_ERROR] = "InternalError",
};

const char *ag_mon_type_name(enum ag_mon_type t)
{
	if ((size_t)t >= ARRAY_SIZE(type_names))
		return NULL;
	return type_names[t];
}

void ag_mon_msg_clear(struct ag_mon_msg *m)
{
	if (!m)
		return;
	free(m->status);
	free(m->error);
	free(m->type_name);
	memset(m, 0, sizeof(*m));
}

uint64_t ag_mon_next_agent_id(uint64_t *counter)
{
	*counter += 2;
	return *counter;
}

json_t *ag_mon_version_range_encode(uint32_t min, uint32_t max)
{
	return json_pack("{s:I,s:I}", "min", (json_int_t)min, "max", (json_int_t)max);
}

int ag_mon_version_response_decode(const json_t *v, uint32_t *version, struct vmact_err *err)
{
	const json_t *ver, *e;

	if (!json_is_object(v))
		return vmact_err_set(err, EBADMSG, "version response: expected a JSON object");
	e = net_json_get(v, "error");
	if (e && !json_is_null(e)) {
		if (!json_is_string(e))
			return vmact_err_set(err, EBADMSG,
					     "version response: error: expected a string");
		return vmact_err_set(err, EPROTO,
				     "vm-monitor refused the protocol version range: %s",
				     json_string_value(e));
	}
	ver = net_json_get(v, "version");
	if (!ver)
		return vmact_err_set(err, EBADMSG, "version response: version: missing");
	if (!json_is_integer(ver))
		return vmact_err_set(err, EBADMSG,
				     "version response: version: expected an integer");
	if (json_integer_value(ver) != AG_MON_PROTO_V1_0)
		return vmact_err_set(err, EPROTO,
				     "version response: version: monitor chose %" JSON_INTEGER_FORMAT
				     ", agent supports only 1 (v1.0)",
				     json_integer_value(ver));
	*version = AG_MON_PROTO_V1_0;
	return 0;
}

static json_t *alloc_encode(const struct vmact_resources *r, struct vmact_err *err)
{
	json_t *cpu;

	if (r->mem_bytes > (uint64_t)INT64_MAX) {
		vmact_err_set(err, ERANGE, "mem: %llu bytes does not fit the wire",
			      (unsigned long long)r->mem_bytes);
		return NULL;
	}
	/* Keep the bytes identical to the Go agent's float64 ("1", "0.333");
	 * serde reads an integer into f64 fine. */
	cpu = net_json_real((double)r->milli_cpu / 1000.0, false);
	if (!cpu) {
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	return json_pack("{s:o,s:I}", "cpu", cpu, "mem", (json_int_t)r->mem_bytes);
}

json_t *ag_mon_encode(const struct ag_mon_msg *m, struct vmact_err *err)
{
	json_t *content = NULL;
	const char *name = ag_mon_type_name(m->type);

	switch (m->type) {
	case AG_MON_DOWNSCALE_REQUEST:
	case AG_MON_UPSCALE_NOTIFICATION: {
		json_t *a = alloc_encode(&m->alloc, err);

		if (!a)
			return NULL;
		content = json_pack("{s:o}",
				    m->type == AG_MON_DOWNSCALE_REQUEST ? "target" : "granted", a);
		break;
	}
	case AG_MON_HEALTH_CHECK:
		/* Content is mandatory even when empty: serde needs it. */
		content = json_object();
		break;
	case AG_MON_INVALID_MESSAGE:
	case AG_MON_INTERNAL_ERROR:
		if (!m->error) {
			vmact_err_set(err, EINVAL, "%s: error: missing", name);
			return NULL;
		}
		content = json_pack("{s:s}", "error", m->error);
		break;
	default:
		vmact_err_set(err, EINVAL, "type: %s is not sent by the agent",
			      name ? name : "(unknown)");
		return NULL;
	}
	if (!content) {
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	if (m->id > (uint64_t)INT64_MAX) {
		json_decref(content);
		vmact_err_set(err, ERANGE, "id: %llu does not fit the wire",
			      (unsigned long long)m->id);
		return NULL;
	}
	json_t *frame = json_pack("{s:o,s:s,s:I}", "content", content, "type", name, "id",
				  (json_int_t)m->id);
	if (!frame)
		vmact_err_set(err, ENOMEM, "out of memory");
	return frame;
}

char *ag_mon_encode_text(const struct ag_mon_msg *m, struct vmact_err *err)
{
	_cleanup_(json_decrefp) json_t *frame = ag_mon_encode(m, err);
	char *s;

	if (!frame)
		return NULL;
	s = net_json_dumps(frame, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		vmact_err_set(err, ENOMEM, "out of memory");
	return s;
}

static enum ag_mon_type monitor_type(const char *s)
{
	/* The Go agent switches on the exact string; types it only sends
	 * (DownscaleRequest, UpscaleNotification) are unknown when received. */
	static const enum ag_mon_type known[] = {
		AG_MON_UPSCALE_REQUEST, AG_MON_UPSCALE_CONFIRMATION, AG_MON_DOWNSCALE_RESULT,
		AG_MON_INTERNAL_ERROR,  AG_MON_HEALTH_CHECK,         AG_MON_INVALID_MESSAGE,
	};

	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		if (strcmp(s, type_names[known[i]]) == 0)
			return known[i];
	return AG_MON_UNKNOWN;
}

static int dup_string_field(const json_t *frame, const char *field, const char *tname, char **out,
			    struct vmact_err *err)
{
	const json_t *v = net_json_get(frame, field);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: %s: missing", tname, field);
	if (!json_is_string(v))
		return vmact_err_set(err, EINVAL, "%s: %s: expected a string", tname, field);
	*out = strndup(json_string_value(v), json_string_length(v));
	if (!*out)
		return vmact_err_set(err, ENOMEM, "out of memory");
	return 0;
}

int ag_mon_decode(const json_t *frame, struct ag_mon_msg *out, struct vmact_err *err)
{
	const json_t *t, *idv, *okv;
	double idf;
	int r;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(frame))
		return vmact_err_set(err, EBADMSG, "message: expected a JSON object");
	/* type and id come from a generic map in the Go agent: exact keys. */
	t = json_object_get(frame, "type");
	if (!t)
		return vmact_err_set(err, EBADMSG, "type: missing");
	if (!json_is_string(t))
		return vmact_err_set(err, EBADMSG, "type: expected a string");
	idv = json_object_get(frame, "id");
	if (!idv)
		return vmact_err_set(err, EBADMSG, "id: missing");
	if (!json_is_number(idv))
		return vmact_err_set(err, EBADMSG, "id: expected a number");
	/* The agent reads the id as float64 and truncates it: reproduce that
	 * (ids above 2^53 lose precision there too), but refuse values Go
	 * would turn into garbage instead of inventing one. */
	idf = json_number_value(idv);
	if (!isfinite(idf) || idf < 0 || idf >= 18446744073709551616.0)
		return vmact_err_set(err, EBADMSG, "id: %g is not a valid transaction id", idf);
	out->id = (uint64_t)idf;
	out->type_name = strndup(json_string_value(t), json_string_length(t));
	if (!out->type_name)
		return vmact_err_set(err, ENOMEM, "out of memory");
	out->type = monitor_type(out->type_name);

	switch (out->type) {
	case AG_MON_DOWNSCALE_RESULT:
		okv = net_json_get(frame, "ok");
		if (!okv)
			return vmact_err_set(err, EINVAL, "DownscaleResult: Ok: missing");
		if (!json_is_boolean(okv))
			return vmact_err_set(err, EINVAL,
					     "DownscaleResult: Ok: expected a boolean");
		out->ok = json_is_true(okv);
		r = dup_string_field(frame, "status", "DownscaleResult", &out->status, err);
		if (r < 0)
			return r;
		break;
	case AG_MON_INVALID_MESSAGE:
	case AG_MON_INTERNAL_ERROR:
		r = dup_string_field(frame, "error", out->type_name, &out->error, err);
		if (r < 0)
			return r;
		break;
	default:
		/* No payload: like Go decoding into struct{}, extra keys ignored. */
		break;
	}
	return 0;
}

int ag_mon_decode_text(const char *buf, size_t len, struct ag_mon_msg *out, struct vmact_err *err)
{
	_cleanup_(json_decrefp) json_t *frame = NULL;
	json_error_t jerr;

	memset(out, 0, sizeof(*out));
	frame = json_loadb(buf, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!frame)
		return vmact_err_set(err, EBADMSG, "message: not JSON: %s at position %d",
				     jerr.text, jerr.position);
	return ag_mon_decode(frame, out, err);
}
