/* SPDX-License-Identifier: Apache-2.0 */
/* The operations framework (op.c): one worker thread per operation, at
 * most one operation per VM, and the helpers every operation is written
 * with (op-vcpu.c, op-memory.c). Each operation starts from the live state,
 * re-reads it after every libvirt call and reports what was actually
 * achieved; the libvirt return code is only a hint. */
#pragma once

#include <pthread.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "base/list.h"
#include "hotplug/conn.h"
#include "hotplug/hotplug.h"

struct hp_op;

/* One operation kind: runs in the worker thread and records its outcome in
 * op->res (through hp_op_finish / hp_op_settle / hp_op_wait). */
typedef void (*hp_op_run_fn)(struct hp_op *op, uint64_t deadline);

struct hp_op {
	VMACT_LIST_FIELDS(struct hp_op, ops); /* in flight, all connections */
	hp_op_run_fn run;
	struct hp_conn *conn;
	char uuid[HP_UUID_LEN];
	struct hp_op_req req;
	hp_op_fn fn;
	void *userdata;
	pthread_t thread;
	struct hp_watch watch; /* this domain's events, while the worker runs */
	struct hp_qitem done;  /* hands the result to the loop thread */
	struct hp_op_result res;
};

/* The operations (op-vcpu.c, op-memory.c). */
void hp_op_vcpus(struct hp_op *op, uint64_t deadline);
void hp_op_virtio_mem(struct hp_op *op, uint64_t deadline);
void hp_op_dimm_attach(struct hp_op *op, uint64_t deadline);
void hp_op_dimm_detach(struct hp_op *op, uint64_t deadline);

/* Starts run(op) in a worker thread; hp_op_start picks run by kind. */
int hp_op_launch(struct hp_conn *c, const char *uuid, const struct hp_op_req *req, hp_op_run_fn run,
		 hp_op_fn fn, void *userdata, struct vmact_err *err);

/* Re-reads the live state, waiting for a reconnect (until the deadline)
 * when libvirtd went away. */
int hp_op_reread(struct hp_op *op, uint64_t deadline, struct hp_state *st, struct vmact_err *err);

/* Runs one libvirt call on a fresh domain handle; a call that failed
 * because the connection died is -ECONNRESET. */
typedef int (*hp_dom_call_fn)(virDomainPtr dom, const void *arg);
int hp_op_call(struct hp_op *op, const char *what, hp_dom_call_fn fn, const void *arg,
	       struct vmact_err *err);

/* Records the outcome: rc plus the message, keeping the first error. */
void hp_op_finish(struct hp_op *op, int rc, const struct vmact_err *e);
/* After a failed call or at the end: records rc with the state that is now
 * true. An operation whose VM disappeared reports -ENODEV whatever happened
 * before. Returns the recorded rc. */
int hp_op_settle(struct hp_op *op, uint64_t deadline, int rc, struct vmact_err *e);
/* Every operation starts here: reads the live state into op->res.state;
 * false when it could not (the result is then already settled). */
bool hp_op_begin(struct hp_op *op, uint64_t deadline);

/* Asked after each re-read: 1 when the operation reached its goal, 0 not
 * yet (e then says what is missing, the message if the deadline passes),
 * or a negative errno with e set to end the operation with it. seen is what
 * the event thread saw of the domain before that re-read. */
typedef int (*hp_op_check_fn)(struct hp_op *op, const struct hp_state *st,
			      const struct hp_seen *seen, void *arg, struct vmact_err *e);

/* The one wait of every operation: re-reads op->res.state until check()
 * says the goal is reached (returns 0), check() fails, the deadline passes
 * (-ETIMEDOUT), the state cannot be read, or vmact closes the connection
 * (-ECANCELED). Every way out but success records the result. An event of
 * the domain wakes it early; poll_us is the fallback. */
int hp_op_wait(struct hp_op *op, uint64_t deadline, uint64_t poll_us, hp_op_check_fn check,
	       void *arg);
