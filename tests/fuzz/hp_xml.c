/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes through the vmact metadata parser and the live-domain-XML
 * parser: they must return 0 or an error with a message, never crash, and
 * what they accept must respect the bounds they promise. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>

#include "base/macro.h"
#include "hotplug/hotplug.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	struct hp_state st;
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (hp_meta_parse(s, &m, &err) == 0) {
		if (m.min.milli_cpu > m.max.milli_cpu || m.min.mem_bytes > m.max.mem_bytes ||
		    !m.min.milli_cpu || !m.min.mem_bytes)
			abort();
	} else if (!err.msg[0]) {
		abort();
	}
	vmact_err_reset(&err);
	if (hp_state_parse(s, &st, &err) == 0) {
		if (st.n_memdevs > HP_MAX_MEMDEVS)
			abort();
	} else if (!err.msg[0]) {
		abort();
	}
	free(s);
	return 0;
}
