/* SPDX-License-Identifier: Apache-2.0 */
/* informant_desc_decode: an InformantDesc body as the agent receives it
 * after /register, validated against the agent's full range v1.0..v2.0. */
#include "tests/conformance/wirecheck.h"

#include "agent-glue/codec/informant.h"

json_t *wc_informant_desc_decode(const json_t *in, struct vmact_err *err)
{
	struct ag_informant_desc d;

	if (ag_informant_desc_decode(in, AG_INF_VERSION_MIN, AG_INF_VERSION_MAX, &d, err) < 0)
		return NULL;
	return json_pack("{s:s,s:I}", "version", ag_inf_version_name(d.version), "prometheus_port",
			 (json_int_t)d.prometheus_port);
}
