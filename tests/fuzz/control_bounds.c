/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as the body of the control API's POST /v1/vms/NAME/bounds
 * (actuator/control/control-json.c, doc/control-api.md). A failure must say why;
 * a success must set at least one bound, each non-zero and a CPU bound
 * within 32 bits, and the bounds written back as quantity strings must
 * decode to the same change. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuator/control/control-json.h"
#include "base/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Appends "key":"<quantity>" when set; the quantity's canonical text. */
static void put(char *buf, size_t cap, size_t *n, const char *key, bool set, bool milli, uint64_t v)
{
	char q[64];
	int w;

	if (!set)
		return;
	if ((milli ? vmact_quantity_format_milli(v, q, sizeof(q))
		   : vmact_quantity_format_bytes(v, q, sizeof(q))) != 0)
		abort();
	w = snprintf(buf + *n, cap - *n, "%s\"%s\":\"%s\"", *n > 1 ? "," : "", key, q);
	if (w < 0 || (size_t)w >= cap - *n)
		abort();
	*n += (size_t)w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct hp_meta_change ch = { 0 }, ch2 = { 0 };
	char body[512] = "{";
	size_t n = 1;

	if (act_control_bounds_decode((const char *)data, size, &ch, &err) != 0) {
		if (err.code == 0 || !err.msg[0])
			abort();
		return 0;
	}
	if (!ch.set_min_cpu && !ch.set_max_cpu && !ch.set_min_mem && !ch.set_max_mem)
		abort();
	if ((ch.set_min_cpu && !ch.min_milli_cpu) || (ch.set_max_cpu && !ch.max_milli_cpu) ||
	    (ch.set_min_mem && !ch.min_mem_bytes) || (ch.set_max_mem && !ch.max_mem_bytes) ||
	    ch.set_paused)
		abort();
	put(body, sizeof(body), &n, "min_cpu", ch.set_min_cpu, true, ch.min_milli_cpu);
	put(body, sizeof(body), &n, "max_cpu", ch.set_max_cpu, true, ch.max_milli_cpu);
	put(body, sizeof(body), &n, "min_memory", ch.set_min_mem, false, ch.min_mem_bytes);
	put(body, sizeof(body), &n, "max_memory", ch.set_max_mem, false, ch.max_mem_bytes);
	if (n + 2 > sizeof(body))
		abort();
	body[n++] = '}';
	body[n] = '\0';
	if (act_control_bounds_decode(body, n, &ch2, &err) != 0 ||
	    ch.set_min_cpu != ch2.set_min_cpu || ch.set_max_cpu != ch2.set_max_cpu ||
	    ch.set_min_mem != ch2.set_min_mem || ch.set_max_mem != ch2.set_max_mem ||
	    ch.min_milli_cpu != ch2.min_milli_cpu || ch.max_milli_cpu != ch2.max_milli_cpu ||
	    ch.min_mem_bytes != ch2.min_mem_bytes || ch.max_mem_bytes != ch2.max_mem_bytes)
		abort();
	return 0;
}
