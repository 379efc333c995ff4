/* SPDX-License-Identifier: Apache-2.0 */
/* A growing, NUL-terminated byte buffer for HTTP bodies (client and
 * server side). Callers enforce their own size limits before appending. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct net_bodybuf {
	char *data;
	size_t len, cap;
};

static inline int net_bodybuf_append(struct net_bodybuf *b, const void *src, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 512;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, src, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static inline void net_bodybuf_clear(struct net_bodybuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
