/* SPDX-License-Identifier: Apache-2.0 */
/* Any text through the cpu.stat parser (base/cpustat.c): a success must
 * name its version and carry the fields that version requires, a failure
 * must say why; the delta of a reading with itself is all zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpustat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct vmact_cpustat st, d;
	char *s;

	if (size >= VMACT_CPUSTAT_MAX)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (vmact_cpustat_parse(s, &st, &err) == 0) {
		if (st.version != 1 && st.version != 2)
			abort();
		if (st.has_usage != (st.version == 2))
			abort();
		if (vmact_cpustat_delta(&st, &st, &d) != 0 || d.nr_periods || d.nr_throttled ||
		    d.throttled_ns || d.nr_bursts || d.burst_ns || d.usage_ns)
			abort();
	} else if (err.code == 0 || !err.msg[0]) {
		abort();
	}
	free(s);
	return 0;
}
