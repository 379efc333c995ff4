/* SPDX-License-Identifier: Apache-2.0 */
/* Any JSON value through the quantity decoders; whatever decodes must
 * re-encode and decode to the same value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/codec/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	char *s = malloc(size + 1);
	json_t *v;
	uint64_t b, b2;
	uint32_t m, m2;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (vmact_quantity_parse_value(s, &b, &err) == 0) {
		char buf[64];

		if (vmact_quantity_format_bytes(b, buf, sizeof(buf)) != 0 ||
		    vmact_quantity_parse_value(buf, &b2, &err) != 0 || b2 != b)
			abort();
	}
	vmact_err_reset(&err);
	vmact_quantity_parse_milli(s, &b, &err);
	free(s);

	v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!v)
		return 0;
	if (ag_milli_cpu_decode(v, &m, &err) == 0) {
		json_t *e = ag_milli_cpu_encode(m);

		if (!e || ag_milli_cpu_decode(e, &m2, &err) != 0 || m2 != m)
			abort();
		json_decref(e);
	}
	if (ag_bytes_decode(v, &b, &err) == 0) {
		json_t *e = ag_bytes_encode(b);

		if (!e || ag_bytes_decode(e, &b2, &err) != 0 || b2 != b)
			abort();
		json_decref(e);
	}
	json_decref(v);
	return 0;
}
