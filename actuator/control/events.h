/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's recent events, for operators (doc/control-api.md,
 * "Documents", EVENT): scaling decisions with their reasons, resizes,
 * scheduler permits, vm-monitor answers, errors and operators' changes, in a
 * bounded in-memory ring. Each event has a sequence number (1, 2, ...;
 * never reused while the daemon runs), so a reader asks for what came
 * after the last one it saw and holds no state of its own in the daemon;
 * one who fell behind by more than the ring's capacity sees a gap in the
 * numbers. Emitting is cheap and never fails the caller. */
#pragma once

#include <jansson.h>
#include <stdint.h>

enum act_event_kind {
	ACT_EV_DECISION = 0, /* the CPU goal changed, and why */
	ACT_EV_RESIZE,       /* a resize started, ended or failed */
	ACT_EV_PERMIT,       /* the scheduler's answer */
	ACT_EV_MONITOR,      /* the vm-monitor's (or informant's) answer or connection */
	ACT_EV_ERROR,        /* something failed */
	ACT_EV_CONTROL,      /* an operator's change through the control API */
	ACT_EV_HOLD,         /* no resize although the load or the goal asks: why */
	ACT_EV_RECOMMEND,    /* recommend mode: the size it would have, changed */
	ACT_EV_MIGRATION,    /* frozen for a move away, or unfrozen, and why */
	ACT_EV_KIND_COUNT,
};

/* "decision", "resize", "permit", "monitor", "error", "control", "hold",
 * "recommendation", "migration". */
const char *act_event_kind_name(enum act_event_kind k);

#define ACT_EVENT_TEXT_MAX 320
#define ACT_EVENT_VM_MAX   256

/* The texts are at most ACT_EVENT_VM_MAX - 1 and ACT_EVENT_TEXT_MAX - 1
 * bytes, allocated to their length: a full ring of fixed buffers was
 * 0.6 MiB of vmactd's private memory after a day's events, most of it
 * unused (doc/actuation.md, "vmactd's own footprint"). */
struct act_event {
	uint64_t seq;
	uint64_t time_usec; /* CLOCK_REALTIME */
	enum act_event_kind kind;
	const char *vm;   /* "" for the daemon itself */
	const char *text; /* "" if there was no memory for it */
	char *strings;    /* what vm and text point into; owned by the ring */
	json_t *fields;   /* an object (may be empty), owned by the ring */
};

struct act_events;

/* capacity 0: 1024 events. */
int act_events_new(unsigned capacity, struct act_events **out);
void act_events_free(struct act_events *e);

/* Records an event; takes `fields` (NULL: none; a non-object is dropped).
 * A NULL ring records nothing (runners without a control API). */
void act_event(struct act_events *e, const char *vm, enum act_event_kind kind, json_t *fields,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Sequence number of the newest event, 0 before the first. */
uint64_t act_events_last_seq(const struct act_events *e);
/* The oldest event still held whose number is above `after`, or NULL;
 * valid until the next act_event() (the ring may grow and move). */
const struct act_event *act_events_after(const struct act_events *e, uint64_t after);

/* Called after every new event (one listener: the control server). */
void act_events_on_new(struct act_events *e, void (*fn)(void *ud), void *ud);
