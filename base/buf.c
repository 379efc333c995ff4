/* SPDX-License-Identifier: Apache-2.0 */
#include "base/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool vmact_buf_append(struct vmact_buf *b, const void *p, size_t n)
{
	char *d;

	if (n > b->max || b->len > b->max - n) {
		b->too_big = true;
		return false;
	}
	d = realloc(b->data, b->len + n + 1);
	if (!d)
		return false;
	if (n)
		memcpy(d + b->len, p, n);
	b->len += n;
	d[b->len] = 0;
	b->data = d;
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
	b->len = 0;
}
