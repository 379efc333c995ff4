/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/control/events.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The ring starts with this many entries and doubles, until cap, each time
 * it is full before it has wrapped: a daemon with a few quiet VMs does not
 * hold 1024 entries it never writes (56 KiB, doc/actuation.md "vmactd's own
 * footprint"). */
#define RING_FIRST 32

struct act_events {
	struct act_event *ring;
	unsigned cap;   /* what it holds at most */
	unsigned alloc; /* entries allocated (<= cap; == cap once it wraps) */
	uint64_t last;  /* seq of the newest; event s lives at (s - 1) % cap */
	void (*on_new)(void *ud);
	void *ud;
};

static const char *const kind_names[ACT_EV_KIND_COUNT] = {
	[ACT_EV_DECISION] = "decision",   [ACT_EV_RESIZE] = "resize",
	[ACT_EV_PERMIT] = "permit",       [ACT_EV_MONITOR] = "monitor",
	[ACT_EV_ERROR] = "error",         [ACT_EV_CONTROL] = "control",
	[ACT_EV_HOLD] = "hold",           [ACT_EV_RECOMMEND] = "recommendation",
	[ACT_EV_MIGRATION] = "migration",
};

const char *act_event_kind_name(enum act_event_kind k)
{
	return (unsigned)k < ACT_EV_KIND_COUNT ? kind_names[k] : "unknown";
}

int act_events_new(unsigned capacity, struct act_events **out)
{
	struct act_events *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->cap = capacity ? capacity : 1024;
	e->alloc = e->cap < RING_FIRST ? e->cap : RING_FIRST;
	e->ring = calloc(e->alloc, sizeof(*e->ring));
	if (!e->ring) {
		free(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

void act_events_free(struct act_events *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < e->alloc; i++) {
		json_decref(e->ring[i].fields);
		free(e->ring[i].strings);
	}
	free(e->ring);
	free(e);
}

/* Before the ring's first wrap, s - 1 < alloc for every event held, so
 * growing keeps each where (s - 1) % cap finds it. Out of memory, the ring
 * stays at the size it has (cap becomes that: it wraps there). */
static void ring_grow(struct act_events *e)
{
	unsigned n = e->alloc * 2 < e->cap ? e->alloc * 2 : e->cap;
	struct act_event *r = realloc(e->ring, n * sizeof(*r));

	if (!r) {
		e->cap = e->alloc;
		return;
	}
	memset(r + e->alloc, 0, (n - e->alloc) * sizeof(*r));
	e->ring = r;
	e->alloc = n;
}

void act_event(struct act_events *e, const char *vm, enum act_event_kind kind, json_t *fields,
	       const char *fmt, ...)
{
	char text[ACT_EVENT_TEXT_MAX];
	size_t vm_len, text_len;
	struct act_event *ev;
	struct timespec ts;
	va_list ap;

	if (!e) {
		json_decref(fields);
		return;
	}
	if (e->last == e->alloc && e->alloc < e->cap)
		ring_grow(e);
	ev = &e->ring[e->last % e->cap];
	json_decref(ev->fields);
	ev->seq = ++e->last;
	clock_gettime(CLOCK_REALTIME, &ts);
	ev->time_usec = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	ev->kind = kind;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	vm = vm ? vm : "";
	vm_len = strnlen(vm, ACT_EVENT_VM_MAX - 1);
	text_len = strlen(text);
	free(ev->strings);
	ev->strings = malloc(vm_len + 1 + text_len + 1);
	if (ev->strings) {
		memcpy(ev->strings, vm, vm_len);
		ev->strings[vm_len] = '\0';
		memcpy(ev->strings + vm_len + 1, text, text_len + 1);
		ev->vm = ev->strings;
		ev->text = ev->strings + vm_len + 1;
	} else {
		/* The event still counts and keeps its kind and fields. */
		ev->vm = ev->text = "";
	}
	if (fields && !json_is_object(fields)) {
		json_decref(fields);
		fields = NULL;
	}
	ev->fields = fields ? fields : json_object();
	if (e->on_new)
		e->on_new(e->ud);
}

uint64_t act_events_last_seq(const struct act_events *e)
{
	return e ? e->last : 0;
}

const struct act_event *act_events_after(const struct act_events *e, uint64_t after)
{
	uint64_t oldest, want;

	if (!e || after >= e->last)
		return NULL;
	oldest = e->last > e->cap ? e->last - e->cap + 1 : 1;
	want = after + 1 > oldest ? after + 1 : oldest;
	return &e->ring[(want - 1) % e->cap];
}

void act_events_on_new(struct act_events *e, void (*fn)(void *ud), void *ud)
{
	e->on_new = fn;
	e->ud = ud;
}
