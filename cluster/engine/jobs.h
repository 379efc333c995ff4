/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking work off the event loop (prefix cl_jobs_).
 *
 * libvirt calls (a QEMU start, a managed save, a destroy) and the hosts'
 * arbiters take from milliseconds to seconds, a remote host longer; the
 * loop that answers the API must never wait for them. A pool runs `run`
 * in one of its threads and then `done` on the loop, in the order the
 * jobs finish. `run` touches only what the job carries (and thread-safe
 * objects: libvirt connections, the framework); `done` owns the engine's
 * state again.
 *
 * A pool of one thread is a serial queue: the scheduler's cycles run one
 * at a time on it, as the framework requires. */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "base/error.h"

struct cl_jobs;

typedef void cl_job_run_fn(void *data);
typedef void cl_job_done_fn(void *data);

int cl_jobs_new(sd_event *ev, unsigned threads, const char *name, struct cl_jobs **out,
		struct vmact_err *err);
/* Waits for the running jobs to end; the queued ones are dropped with
 * their `done` called (their `run` never ran: cl_jobs_stopping() says so). */
void cl_jobs_free(struct cl_jobs *j);

/* Queues a job; done may be NULL. -ENOMEM, or -ESHUTDOWN once stopping. */
int cl_jobs_submit(struct cl_jobs *j, cl_job_run_fn *run, cl_job_done_fn *done, void *data);

/* Jobs queued or running. */
unsigned cl_jobs_pending(const struct cl_jobs *j);
/* True once cl_jobs_free began: a `done` then runs for a dropped job. */
bool cl_jobs_stopping(const struct cl_jobs *j);

/* Runs the loop until no job of j is pending (tests and shutdown). */
int cl_jobs_drain(struct cl_jobs *j);
