/* SPDX-License-Identifier: Apache-2.0 */
/* One call's memory: every allocation of a request's decoding and of its
 * answer comes from here and goes at once when the call ends, so a
 * handler's error paths free nothing by hand. The budget bounds what one
 * request may make protobuf-c allocate: a small message can decode into
 * much larger structures (an empty map entry is two bytes on the wire and
 * a struct in memory). */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

struct cp_arena {
	ProtobufCAllocator pb; /* for protobuf_c_message_unpack */
	size_t budget;         /* bytes still allowed */
	size_t n, cap;
	void **ptrs;
	int failed; /* an allocation was refused or failed */
};

/* budget: the most all of this arena's allocations may add up to. */
void cp_arena_init(struct cp_arena *a, size_t budget);
void cp_arena_free(struct cp_arena *a);

/* Zeroed memory, NULL once the budget is spent or malloc fails. */
void *cp_arena_alloc(struct cp_arena *a, size_t size);
void *cp_arena_array(struct cp_arena *a, size_t n, size_t size);
char *cp_arena_strdup(struct cp_arena *a, const char *s);
char *cp_arena_printf(struct cp_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
