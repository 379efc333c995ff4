/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: arbitrary bytes as a websocket server's answer to the
 * websocket upgrade. Must never crash, read out of bounds or accept a
 * response without the right Sec-WebSocket-Accept. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/ws-client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char accept[] = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
	struct vmact_err err = { 0 };
	char *head = malloc(size + 1);

	if (!head)
		return 0;
	memcpy(head, data, size);
	head[size] = '\0';
	if (net_ws_check_upgrade(head, accept, &err) == 0 &&
	    !memmem(data, size, accept, sizeof(accept) - 1))
		abort();
	free(head);
	return 0;
}
