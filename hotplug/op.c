/* SPDX-License-Identifier: Apache-2.0 */
/* The operations framework: worker threads, the in-flight list, the
 * re-read and wait every operation uses, and how a result is recorded. */
#include "hotplug/op.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "hotplug/read.h"
#include "hotplug/virt-error.h"

/* Operations in flight on every connection (few: one per VM at most).
 * Touched by the loop threads only, but a process may run several. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hp_op *g_ops;

int hp_op_reread(struct hp_op *op, uint64_t deadline, struct hp_state *st, struct vmact_err *err)
{
	struct hp_conn *c = op->conn;

	for (;;) {
		virConnectPtr vc = hp_conn_get(c);
		int r;

		if (vc) {
			vmact_err_reset(err);
			r = hp_state_read_vc(c, vc, op->uuid, st, err);
			/* libvirt reports a dropped socket as an internal error. */
			if (r < 0 && virConnectIsAlive(vc) != 1)
				r = -ECONNRESET;
			virConnectClose(vc);
			if (r != -ECONNRESET)
				return r;
		}
		if (vmact_now_usec() >= deadline)
			return vmact_err_set(err, ECONNRESET,
					     "lost the connection to libvirtd and it did not come "
					     "back before the deadline");
		if (!hp_watch_wait(c, &op->watch, vmact_now_usec() + 50000))
			return vmact_err_set(err, ECANCELED, "connection closed by vmact");
	}
}

int hp_op_call(struct hp_op *op, const char *what, hp_dom_call_fn fn, const void *arg,
	       struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(op->conn);
	virDomainPtr dom;
	int r = 0;

	if (!vc)
		return vmact_err_set(err, ECONNRESET, "%s: not connected to libvirtd", what);
	dom = virDomainLookupByUUIDString(vc, op->uuid);
	if (!dom) {
		r = hp_virt_err(err, what);
	} else {
		if (fn(dom, arg) < 0)
			r = hp_virt_err(err, what);
		virDomainFree(dom);
	}
	if (r < 0 && virConnectIsAlive(vc) != 1) {
		err->code = ECONNRESET;
		r = -ECONNRESET;
	}
	virConnectClose(vc);
	return r;
}

void hp_op_finish(struct hp_op *op, int rc, const struct vmact_err *e)
{
	op->res.rc = rc;
	if (rc < 0 && e && e->code)
		op->res.err = *e;
	else if (rc < 0 && !op->res.err.code)
		vmact_err_set(&op->res.err, -rc, "%s", strerror(-rc));
}

int hp_op_settle(struct hp_op *op, uint64_t deadline, int rc, struct vmact_err *e)
{
	struct vmact_err rerr = { 0 };
	int r = hp_op_reread(op, deadline + 10000000ULL, &op->res.state, &rerr);

	op->res.state_valid = r == 0;
	if (r == -ENODEV) {
		vmact_err_reset(&op->res.err);
		vmact_err_set(&op->res.err, ENODEV, "domain went away during the operation (%s)",
			      rerr.msg);
		op->res.rc = -ENODEV;
		return -ENODEV;
	}
	if (r < 0 && rc == 0) {
		hp_op_finish(op, r, &rerr);
		return r;
	}
	hp_op_finish(op, rc, e);
	return rc;
}

bool hp_op_begin(struct hp_op *op, uint64_t deadline)
{
	struct vmact_err e = { 0 };
	int r = hp_op_reread(op, deadline, &op->res.state, &e);

	if (r < 0) {
		hp_op_settle(op, deadline, r, &e);
		return false;
	}
	op->res.state_valid = true;
	/* Refused at once rather than left to libvirt, whose migration job
	 * would hold the change for 30 s and then fail it ("cannot acquire
	 * state change lock"); the next decision asks again. EAGAIN, not
	 * EBUSY: that is a guest refusing to give memory back. */
	if (op->res.state.migration != HP_MIGRATION_NONE) {
		vmact_err_set(&e, EAGAIN, "a live migration of the domain is under way (%s)",
			      op->res.state.migration == HP_MIGRATION_ARRIVING ? "arriving here"
									       : "leaving");
		hp_op_finish(op, -EAGAIN, &e);
		return false;
	}
	return true;
}

int hp_op_wait(struct hp_op *op, uint64_t deadline, uint64_t poll_us, hp_op_check_fn check,
	       void *arg)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	struct hp_seen seen;
	int r;

	for (;;) {
		hp_watch_seen(op->conn, &op->watch, &seen);
		if ((r = hp_op_reread(op, deadline, st, &e)) < 0)
			return hp_op_settle(op, deadline, r, &e);
		vmact_err_reset(&e);
		r = check(op, st, &seen, arg, &e);
		if (r > 0)
			return 0;
		if (r < 0) {
			hp_op_finish(op, r, &e);
			return r;
		}
		if (vmact_now_usec() >= deadline) {
			/* Time out the intent, not the device: the guest may
			 * still get there; the state says how far it got. */
			hp_op_finish(op, -ETIMEDOUT, &e);
			return -ETIMEDOUT;
		}
		if (!hp_watch_wait(op->conn, &op->watch, vmact_now_usec() + poll_us)) {
			hp_op_finish(op, -ECANCELED, NULL);
			return -ECANCELED;
		}
	}
}

/* ---- lifecycle ----------------------------------------------------------- */

/* On the loop thread (delivered), or from hp_conn_free (not delivered). */
static void op_done(struct hp_conn *c, void *userdata, bool delivered)
{
	struct hp_op *op = userdata;

	pthread_join(op->thread, NULL);
	pthread_mutex_lock(&g_lock);
	VMACT_LIST_REMOVE(ops, g_ops, op);
	pthread_mutex_unlock(&g_lock);
	/* Unlisted before the callback so that it may start the next one. */
	if (delivered)
		op->fn(c, op->uuid, &op->res, op->userdata);
	free(op);
}

static void *op_thread(void *arg)
{
	struct hp_op *op = arg;
	uint64_t start = vmact_now_usec();
	uint64_t deadline = start + (op->req.timeout_ms ? op->req.timeout_ms : 30000) * 1000ULL;

	op->run(op, deadline);
	op->res.elapsed_us = vmact_now_usec() - start;
	hp_watch_done(op->conn, &op->watch, &op->done, op_done, op);
	return NULL;
}

static bool in_flight_locked(struct hp_conn *c, const char *uuid)
{
	struct hp_op *op;

	VMACT_LIST_FOREACH(ops, op, g_ops)
		if (op->conn == c && !strcmp(op->uuid, uuid))
			return true;
	return false;
}

bool hp_op_in_flight(struct hp_conn *c, const char *uuid)
{
	bool busy;

	pthread_mutex_lock(&g_lock);
	busy = in_flight_locked(c, uuid);
	pthread_mutex_unlock(&g_lock);
	return busy;
}

int hp_op_launch(struct hp_conn *c, const char *uuid, const struct hp_op_req *req, hp_op_run_fn run,
		 hp_op_fn fn, void *userdata, struct vmact_err *err)
{
	struct hp_op *op;
	int r;

	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->conn = c;
	snprintf(op->uuid, sizeof(op->uuid), "%s", uuid);
	op->req = *req;
	op->fn = fn;
	op->userdata = userdata;
	op->run = run;
	pthread_mutex_lock(&g_lock);
	if (in_flight_locked(c, uuid)) {
		pthread_mutex_unlock(&g_lock);
		free(op);
		return vmact_err_set(err, EBUSY, "an operation on domain %s is still in flight",
				     uuid);
	}
	/* Watching before the thread runs, so events for this domain already
	 * wake it. */
	if ((r = hp_watch_add(c, &op->watch, uuid, err)) < 0) {
		pthread_mutex_unlock(&g_lock);
		free(op);
		return r;
	}
	r = -pthread_create(&op->thread, NULL, op_thread, op);
	if (r < 0) {
		hp_watch_cancel(c, &op->watch);
		pthread_mutex_unlock(&g_lock);
		free(op);
		return vmact_err_set(err, -r, "cannot start the operation thread");
	}
	VMACT_LIST_PREPEND(ops, g_ops, op);
	pthread_mutex_unlock(&g_lock);
	return 0;
}
