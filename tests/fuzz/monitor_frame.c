/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: any bytes as a monitor->agent frame and as a version
 * response. The decoder must never crash or leak; whatever it accepts must
 * be answerable (the client re-encodes an InvalidMessage with its id). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent-glue/codec/monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct ag_mon_msg m, reply = { .type = AG_MON_INVALID_MESSAGE, .error = "x" };
	json_t *v;
	uint32_t ver;
	int r;

	r = ag_mon_decode_text((const char *)data, size, &m, &err);
	if (r == 0 || r == -EINVAL) {
		char *s;

		reply.id = m.id;
		s = ag_mon_encode_text(&reply, &err);
		/* Every id the decoder returns is below 2^64; ids above INT64_MAX
		 * cannot be echoed and must be refused, not truncated. */
		if (!s && m.id <= (uint64_t)INT64_MAX)
			abort();
		free(s);
	}
	ag_mon_msg_clear(&m);
	v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (v) {
		vmact_err_reset(&err);
		if (ag_mon_version_response_decode(v, &ver, &err) == 0 && ver != AG_MON_PROTO_V1_0)
			abort();
		json_decref(v);
	}
	return 0;
}
