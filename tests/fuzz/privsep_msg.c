/* SPDX-License-Identifier: Apache-2.0 */
/* Any datagram through vmactd's decoder of its guest workers' messages
 * (guestd/privsep.c, doc/privsep.md): a worker is assumed
 * compromised. A record accepted is the bytes given, of a worker type
 * with a name, its guest figures within their bounds; a refusal says
 * why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestd/privsep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct act_privsep_msg m;

	if (act_privsep_decode_from_worker(data, size, &m, &err) == 0) {
		if (size != sizeof(m) || memcmp(&m, data, size) != 0 ||
		    !act_privsep_type_name(m.type) || m.type < ACT_PRIVSEP_PONG ||
		    strnlen(m.text, sizeof(m.text)) == sizeof(m.text))
			abort();
		/* LISTEN asks for a socket and carries nothing else. */
		if (m.type == ACT_PRIVSEP_LISTEN &&
		    (m.flags || m.seq || m.code || m.milli_cpu || m.mem_bytes || m.text[0]))
			abort();
		if (m.type == ACT_PRIVSEP_METRICS && m.code == 0 &&
		    (m.mem_bytes > ACT_PRIVSEP_MAX_MEM_BYTES ||
		     ((m.flags & ACT_PRIVSEP_F_LFC)
			      ? m.spare[0] > ACT_PRIVSEP_MAX_WINDOWS
			      : m.spare[0] > ACT_PRIVSEP_MAX_LOAD_MILLI ||
					m.spare[1] > ACT_PRIVSEP_MAX_LOAD_MILLI)))
			abort();
		if (m.type == ACT_PRIVSEP_WINDOWS)
			for (size_t i = 0; i < 4; i++)
				if (m.spare[i] > ACT_PRIVSEP_MAX_PAGE_MILLI)
					abort();
	} else if (err.code == 0 || !err.msg[0]) {
		abort();
	}
	/* The worker's decoder of vmactd's records, on the same bytes. */
	memset(&err, 0, sizeof(err));
	if (act_privsep_decode_from_daemon(data, size, &m, &err) < 0) {
		if (err.code == 0 || !err.msg[0])
			abort();
	} else if ((m.type == ACT_PRIVSEP_LISTEN_REPLY || m.type == ACT_PRIVSEP_DIAL_REPLY) &&
		   (m.code > 0 || m.code < -4095)) {
		abort();
	} else if (m.type == ACT_PRIVSEP_STOP && (m.flags || m.seq || m.code || m.text[0])) {
		abort();
	}
	return 0;
}
