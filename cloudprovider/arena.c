/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *pb_alloc(void *ud, size_t size)
{
	return cp_arena_alloc(ud, size);
}

/* Everything goes with the arena. */
static void pb_free(void *ud, void *p)
{
	(void)ud, (void)p;
}

void cp_arena_init(struct cp_arena *a, size_t budget)
{
	*a = (struct cp_arena){ .budget = budget };
	a->pb.alloc = pb_alloc;
	a->pb.free = pb_free;
	a->pb.allocator_data = a;
}

void cp_arena_free(struct cp_arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->ptrs[i]);
	free(a->ptrs);
	a->ptrs = NULL;
	a->n = a->cap = 0;
}

void *cp_arena_alloc(struct cp_arena *a, size_t size)
{
	void *p;

	if (size == 0)
		size = 1;
	if (size > a->budget) {
		a->failed = 1;
		return NULL;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		void **ptrs = realloc(a->ptrs, cap * sizeof(*ptrs));

		if (!ptrs) {
			a->failed = 1;
			return NULL;
		}
		a->ptrs = ptrs;
		a->cap = cap;
	}
	p = calloc(1, size);
	if (!p) {
		a->failed = 1;
		return NULL;
	}
	a->budget -= size;
	a->ptrs[a->n++] = p;
	return p;
}

void *cp_arena_array(struct cp_arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		a->failed = 1;
		return NULL;
	}
	return cp_arena_alloc(a, n * size);
}

char *cp_arena_strdup(struct cp_arena *a, const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = cp_arena_alloc(a, len);

	if (p)
		memcpy(p, s, len);
	return p;
}

char *cp_arena_printf(struct cp_arena *a, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = cp_arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}
