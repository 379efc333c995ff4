/* SPDX-License-Identifier: Apache-2.0 */
/* wirecheck handlers for the agent <-> vm-monitor codec. */
#include <errno.h>
#include <string.h>

#include "agent-glue/codec/monitor.h"
#include "base/macro.h"
#include "tests/conformance/wirecheck.h"

static int type_from_name(const char *s, enum ag_mon_type *out)
{
	for (enum ag_mon_type t = AG_MON_DOWNSCALE_REQUEST; t <= AG_MON_INTERNAL_ERROR; t++) {
		if (strcmp(ag_mon_type_name(t), s) == 0) {
			*out = t;
			return 0;
		}
	}
	return -EINVAL;
}

json_t *wc_monitor_encode(const json_t *in, struct vmact_err *err)
{
	struct ag_mon_msg m = { 0 };
	const char *tname = json_string_value(json_object_get(in, "type"));
	const char *e = json_string_value(json_object_get(in, "error"));
	uint64_t id;

	if (!tname || type_from_name(tname, &m.type) < 0) {
		vmact_err_set(err, EINVAL, "vector field type: unknown or missing");
		return NULL;
	}
	if (wc_get_u64(in, "id", &id, err) < 0)
		return NULL;
	m.id = id;
	if (m.type == AG_MON_UPSCALE_NOTIFICATION &&
	    wc_get_resources(in, "granted", &m.alloc, err) < 0)
		return NULL;
	if (m.type == AG_MON_DOWNSCALE_REQUEST && wc_get_resources(in, "target", &m.alloc, err) < 0)
		return NULL;
	/* Borrowed: ag_mon_encode only reads it. */
	m.error = (char *)e;
	return ag_mon_encode(&m, err);
}

json_t *wc_monitor_decode(const json_t *in, struct vmact_err *err)
{
	struct ag_mon_msg m;
	json_t *out;
	int r;

	r = ag_mon_decode(in, &m, err);
	if (r < 0) {
		ag_mon_msg_clear(&m);
		return NULL;
	}
	out = json_pack("{s:s,s:I}", "type",
			m.type == AG_MON_UNKNOWN ? "unknown" : ag_mon_type_name(m.type), "id",
			(json_int_t)m.id);
	if (out && m.type == AG_MON_DOWNSCALE_RESULT) {
		json_object_set_new(out, "ok", json_boolean(m.ok));
		json_object_set_new(out, "status", json_string(m.status));
	}
	if (out && m.error)
		json_object_set_new(out, "error", json_string(m.error));
	ag_mon_msg_clear(&m);
	if (!out)
		vmact_err_set(err, ENOMEM, "out of memory");
	return out;
}

json_t *wc_monitor_version_response(const json_t *in, struct vmact_err *err)
{
	uint32_t v;

	if (ag_mon_version_response_decode(in, &v, err) < 0)
		return NULL;
	return json_pack("{s:I}", "version", (json_int_t)v);
}
