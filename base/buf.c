/* SPDX-License-Identifier: Apache-2.0 */
#include "base/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool vmact_buf_append(struct vmact_buf *b, const void *p, size_t n)
{
	if (n > b->max || b->len > b->max - n) {
		b->too_big = true;
		return false;
	}
	/* Doubling: a body arrives in many small pieces. */
	if (!b->data || b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 512;
		char *d;

		while (cap < b->len + n + 1)
			cap = cap > SIZE_MAX / 2 ? b->len + n + 1 : cap * 2;
		d = realloc(b->data, cap);
		if (!d)
			return false;
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return true;
}

size_t vmact_buf_write(char *p, size_t size, size_t n, void *buf)
{
	if (size && n > SIZE_MAX / size)
		return 0;
	return vmact_buf_append(buf, p, size * n) ? size * n : 0;
}

void vmact_buf_free(struct vmact_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
