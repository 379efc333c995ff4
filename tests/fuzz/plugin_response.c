/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as a PluginResponse body, in every protocol version. Whatever
 * decodes must encode again and decode to the same response, but for
 * "migrate", which is never written below 2.0 (its agents panic on it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/codec/plugin.h"

static int res_eq(const struct vmact_resources *a, const struct vmact_resources *b)
{
	return a->milli_cpu == b->milli_cpu && a->mem_bytes == b->mem_bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);

	if (!j)
		return 0;
	for (int v = AG_PLUGIN_VERSION_MIN; v <= AG_PLUGIN_VERSION_MAX; v++) {
		struct ag_plugin_response r, back;
		struct vmact_err err = { 0 };
		json_t *e;

		if (ag_plugin_response_decode((enum ag_plugin_version)v, j, 1ULL << 30, &r, &err) <
		    0) {
			if (!err.code || !err.msg[0])
				abort();
			continue;
		}
		e = ag_plugin_response_encode((enum ag_plugin_version)v, &r, 1ULL << 30, &err);
		if (!e)
			abort(); /* decoded values are always representable again */
		if (ag_plugin_response_decode((enum ag_plugin_version)v, e, 1ULL << 30, &back,
					      &err) < 0 ||
		    !res_eq(&r.permit, &back.permit) ||
		    back.migrate != (r.migrate && ag_plugin_agent_takes_migrate(v)) ||
		    r.has_resource_unit != back.has_resource_unit ||
		    (r.has_resource_unit && !res_eq(&r.resource_unit, &back.resource_unit)))
			abort();
		json_decref(e);
	}
	json_decref(j);
	return 0;
}
