/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's side of one VM's guest worker, vmact-guestd (doc/privsep.md):
 * spawns it as an unprivileged user, watches it (its exit, a heartbeat
 * with a deadline), restarts it with a backoff, dials the VM's endpoint
 * for it, and hands every message that passed act_privsep_decode_from_worker()
 * to its owner. A worker that breaks the format is killed and restarted. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "base/error.h"
#include "guestd/privsep.h"

struct act_worker;

/* The heartbeat by default: a ping a second, 5 s to answer. */
#define ACT_WORKER_PING_USEC     (1ULL * 1000000ULL)
#define ACT_WORKER_DEADLINE_USEC (5ULL * 1000000ULL)

struct act_worker_config {
	const char *program; /* vmact-guestd */
	const char *name;    /* the VM's name: logs, argv */
	/* One of: */
	const char *monitor; /* the VM's vm-monitor endpoint; */
	/* the informant worker (vmact-guestd --informant): the VM's informant
	 * URL, which DIAL connects to, and where its per-registration servers
	 * listen (informant_listen; LISTEN binds there) and what they
	 * advertise (informant_advertise_host, NULL: the listen host); */
	const char *informant;
	const char *listen;
	const char *advertise_host;
	/* a metrics worker (`--metrics`): the VM's system exporter and its
	 * LFC exporter (NULL: none), the endpoints a DIAL without and with
	 * ACT_PRIVSEP_F_LFC opens. */
	const char *metrics, *metrics_lfc;
	const char *user;       /* run as; "nobody" if it does not exist */
	uint64_t ping_usec;     /* heartbeat period; 0: ACT_WORKER_PING_USEC */
	uint64_t deadline_usec; /* a ping unanswered this long: hung; 0: ACT_WORKER_DEADLINE_USEC */
};

struct act_worker_ops {
	/* A new worker runs (its first, or a restart). */
	void (*up)(void *ud);
	/* The worker is gone (died, killed); a restart is scheduled. */
	void (*down)(void *ud);
	/* A valid message (not PONG or DIAL, which act_worker answers). Returns
	 * <0 with err set when it breaks the conversation (an answer to a
	 * request never made): the worker is then killed. */
	int (*message)(void *ud, const struct act_privsep_msg *m, struct vmact_err *err);
};

int act_worker_new(sd_event *event, const struct act_worker_config *cfg,
		   const struct act_worker_ops *ops, void *ud, struct act_worker **out,
		   struct vmact_err *err);
/* -ENOTCONN while no worker runs. */
int act_worker_send(struct act_worker *gw, const struct act_privsep_msg *m, struct vmact_err *err);
bool act_worker_running(const struct act_worker *gw);
pid_t act_worker_pid(const struct act_worker *gw);
/* Restarts of every guest worker of this process since it started (a
 * worker that died or was killed and was spawned again):
 * vmact_guest_worker_restarts_total (doc/metrics.md). */
uint64_t act_worker_restarts_total(void);
/* Asks the worker to finish (sends `m`, e.g. STOP) and never restarts it:
 * done(done_ud) runs from the loop once it has exited, or after
 * timeout_usec, when it is killed. No ops callback after this; DIAL is
 * still answered. done may free the worker. */
int act_worker_stop(struct act_worker *gw, const struct act_privsep_msg *m, uint64_t timeout_usec,
		    void (*done)(void *ud), void *done_ud);
/* Kills the worker (SIGKILL) and reaps it; no callbacks. */
void act_worker_free(struct act_worker *gw);

/* Where vmact-guestd is when guest_worker.program is "": an installed
 * vmactd's (PREFIX/sbin) is in PREFIX/libexec/vmact, where make install and
 * the package put it; a build tree's is beside vmactd. */
int act_worker_default_program(char *buf, size_t len, struct vmact_err *err);
/* The same for a program in exe_dir: exe_dir/../libexec/vmact/vmact-guestd
 * (its real path) when it is there and executable, else exe_dir/vmact-guestd. */
int act_worker_program_near(const char *exe_dir, char *buf, size_t len, struct vmact_err *err);
