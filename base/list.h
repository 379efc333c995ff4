/* SPDX-License-Identifier: Apache-2.0 */
/* Intrusive doubly linked lists in systemd's LIST_* style: the links live
 * in the item (`VMACT_LIST_FIELDS(struct item, name)`), the head is a plain
 * pointer, and removal needs no search. Every list in vmact is one of
 * these, so walking and unlinking are written once. */
#pragma once

#include <stddef.h>

#define VMACT_LIST_FIELDS(t, name) t *name##_next, *name##_prev

#define VMACT_LIST_INIT(name, item)         \
	do {                                \
		(item)->name##_next = NULL; \
		(item)->name##_prev = NULL; \
	} while (0)

/* Adds item at the front of the list whose first element is *head. */
#define VMACT_LIST_PREPEND(name, head, item)                      \
	do {                                                      \
		__typeof__(*(head)) **_h = &(head), *_i = (item); \
		_i->name##_prev = NULL;                           \
		_i->name##_next = *_h;                            \
		if (*_h)                                          \
			(*_h)->name##_prev = _i;                  \
		*_h = _i;                                         \
	} while (0)

/* Adds item at the end (O(n): lists here are short or order matters). */
#define VMACT_LIST_APPEND(name, head, item)                            \
	do {                                                           \
		__typeof__(*(head)) **_h = &(head), *_i = (item), *_t; \
		_i->name##_next = NULL;                                \
		if (!*_h) {                                            \
			_i->name##_prev = NULL;                        \
			*_h = _i;                                      \
			break;                                         \
		}                                                      \
		for (_t = *_h; _t->name##_next; _t = _t->name##_next)  \
			;                                              \
		_t->name##_next = _i;                                  \
		_i->name##_prev = _t;                                  \
	} while (0)

#define VMACT_LIST_REMOVE(name, head, item)                             \
	do {                                                            \
		__typeof__(*(head)) **_h = &(head), *_i = (item);       \
		if (_i->name##_next)                                    \
			_i->name##_next->name##_prev = _i->name##_prev; \
		if (_i->name##_prev)                                    \
			_i->name##_prev->name##_next = _i->name##_next; \
		else if (*_h == _i)                                     \
			*_h = _i->name##_next;                          \
		_i->name##_next = _i->name##_prev = NULL;               \
	} while (0)

#define VMACT_LIST_FOREACH(name, i, head) for ((i) = (head); (i); (i) = (i)->name##_next)

/* Safe against removing i inside the loop. */
#define VMACT_LIST_FOREACH_SAFE(name, i, n, head) \
	for ((i) = (head); (i) && (((n) = (i)->name##_next), 1); (i) = (n))

#define VMACT_LIST_IS_EMPTY(head) ((head) == NULL)

/* A queue: the same list with its tail and length kept beside its head, for
 * O(1) appends where the order is the point (eviction order, deadlines).
 * Declare one as `VMACT_QUEUE(struct item) q;`, zero-filled is empty; change
 * it only through VMACT_QUEUE_* so that tail and n stay right, and walk it
 * with VMACT_LIST_FOREACH(name, i, q.head). */
#define VMACT_QUEUE(t)          \
	struct {                \
		t *head, *tail; \
		unsigned n;     \
	}

#define VMACT_QUEUE_APPEND(name, q, item)             \
	do {                                          \
		__typeof__(q) *_qq = &(q);            \
		__typeof__(*_qq->head) *_qi = (item); \
		_qi->name##_next = NULL;              \
		_qi->name##_prev = _qq->tail;         \
		if (_qq->tail)                        \
			_qq->tail->name##_next = _qi; \
		else                                  \
			_qq->head = _qi;              \
		_qq->tail = _qi;                      \
		_qq->n++;                             \
	} while (0)

/* item must be in q. */
#define VMACT_QUEUE_REMOVE(name, q, item)                \
	do {                                             \
		__typeof__(q) *_qq = &(q);               \
		__typeof__(*_qq->head) *_qi = (item);    \
		if (_qq->tail == _qi)                    \
			_qq->tail = _qi->name##_prev;    \
		VMACT_LIST_REMOVE(name, _qq->head, _qi); \
		_qq->n--;                                \
	} while (0)
