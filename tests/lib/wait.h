/* SPDX-License-Identifier: Apache-2.0 */
/* Waiting in tests, one way: a condition and a bounded time. The bound is
 * a safety net against a hung test, never an assertion about speed, so it
 * is generous (TH_SAFETY_USEC unless a test knows better). While waiting,
 * an sd-event loop is pumped when the caller has one (the condition comes
 * true through its callbacks); without one (ev NULL) the wait sleeps a
 * little between checks (the condition is another process's doing). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "base/time.h"

#define TH_SAFETY_USEC (30ULL * VMACT_USEC_PER_SEC)

/* Seconds on vmact's one clock (CLOCK_MONOTONIC), for tests that report
 * or compute in seconds. */
double th_now_s(void);

/* One step of a wait: false once end_usec (vmact_now_usec() time) has
 * passed or the loop failed; otherwise runs one iteration of ev (at most
 * 50 ms) or, without a loop, sleeps 50 ms, and returns true. */
bool th_wait_step(sd_event *ev, uint64_t end_usec);

/* TH_WAIT(ev, cond, limit_usec): true as soon as cond holds, false if it
 * still does not after limit_usec. cond is any expression, evaluated
 * before each step. */
#define TH_WAIT(ev, cond, limit_usec)                                       \
	({                                                                  \
		uint64_t th_end_ = vmact_now_usec() + (limit_usec);         \
		bool th_ok_;                                                \
		while (!(th_ok_ = !!(cond)) && th_wait_step((ev), th_end_)) \
			;                                                   \
		th_ok_;                                                     \
	})

/* The same, failing the cmocka test (include cmocka.h first) when cond
 * never held within TH_SAFETY_USEC; what names it in the message. */
#define TH_WAIT_OR_FAIL(ev, cond, what)                             \
	do {                                                        \
		if (!TH_WAIT((ev), (cond), TH_SAFETY_USEC))         \
			fail_msg("gave up waiting for %s", (what)); \
	} while (0)

/* TH_WAIT with a predicate function, for conditions kept in a function. */
bool th_wait_until(sd_event *ev, bool (*pred)(void *arg), void *arg, uint64_t limit_usec);

/* Runs ev for usec regardless of state: lets a server make progress while
 * a raw peer stalls on purpose. Not a wait for a condition. */
void th_run_for(sd_event *ev, uint64_t usec);
