/* SPDX-License-Identifier: Apache-2.0 */
/* Any datagram through vmactd's decoder of vmact-hook's notices
 * (shared/hook-msg.c): a success must encode back to the same bytes (the
 * format has one spelling per notice), a failure must say why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/hook-msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct vmact_hook_msg m;
	char back[VMACT_HOOK_MSG_MAX];
	int n;

	if (vmact_hook_msg_decode((const char *)data, size, &m, &err) == 0) {
		n = vmact_hook_msg_encode(&m, back, sizeof(back), &err);
		if (n < 0 || (size_t)n != size || memcmp(back, data, size) != 0)
			abort();
	} else if (err.code == 0 || !err.msg[0]) {
		abort();
	}
	return 0;
}
