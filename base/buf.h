/* SPDX-License-Identifier: Apache-2.0 */
/* Bytes from a peer collected in memory up to a bound: HTTP bodies on both
 * sides of net/, and the answers vmactl, vmact-cloudprovider and
 * vmact-groupd read through libcurl. A peer that sends more than the bound
 * is cut off, never followed into memory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct vmact_buf {
	char *data; /* NUL-terminated; NULL until the first byte */
	size_t len, cap;
	size_t max;   /* bytes it may hold; set before the first append */
	bool too_big; /* an append went beyond max: nothing of it was kept */
};

/* Appends n bytes; false when they would go beyond max (too_big set) or
 * memory ran out, and then the buffer is as it was. */
bool vmact_buf_append(struct vmact_buf *b, const void *p, size_t n);

/* libcurl's CURLOPT_WRITEFUNCTION shape, with a struct vmact_buf as its
 * CURLOPT_WRITEDATA (base/ does not include curl.h: the signature is
 * plain C). A short count makes libcurl fail the transfer. */
size_t vmact_buf_write(char *p, size_t size, size_t n, void *buf);

void vmact_buf_free(struct vmact_buf *b);
