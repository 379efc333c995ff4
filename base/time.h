/* SPDX-License-Identifier: Apache-2.0 */
/* One clock for all of vmact: CLOCK_MONOTONIC, which is also what sd-event
 * timers and bpf_ktime_get_ns() use, so times from the loop, the kernel and
 * a worker thread compare directly. */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#define VMACT_USEC_PER_SEC  1000000ULL
#define VMACT_NSEC_PER_USEC 1000ULL
/* Accuracy for sd-event timers that stand for "run again now" or a
 * protocol step: sd-event's default (an accuracy of 0) lets a timer fire
 * up to 250 ms late to coalesce wakeups, which a library asking to be
 * called back at once (libmicrohttpd, libcurl) turns into a 250 ms stall
 * per step. */
#define VMACT_TIMER_ACCURACY_USEC 1000ULL

uint64_t vmact_now_nsec(void);
uint64_t vmact_now_usec(void);
/* The loop's cached time of this iteration (sd_event_now), so every event
 * source handled in one iteration sees the same now; the clock itself when
 * the loop has not run yet or ev is NULL. */
uint64_t vmact_loop_now_usec(sd_event *ev);
