/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's Prometheus endpoint (metrics.listen, doc/metrics.md): GET
 * /metrics on the daemon's loop through net/http-server, the page built
 * afresh for each request from the daemon's counters and the figures of
 * every VM, which the daemon hands over through a source. */
#pragma once

#include <systemd/sd-event.h>

#include "actuator/metrics/metrics.h"
#include "base/error.h"

struct act_metrics_server;

/* Where the page's per-VM figures come from, asked once per request. */
struct act_metrics_source {
	/* *vms malloc'd (the server frees it), one per managed VM. -ENOMEM. */
	int (*collect)(void *ud, struct act_vm_metrics **vms, size_t *n);
	/* The embedded arbiter's figures; NULL, or false: none. */
	bool (*arbiter)(void *ud, struct act_arbiter_metrics *out);
	/* vmact_guest_worker_restarts_total; NULL: 0. */
	uint64_t (*worker_restarts)(void *ud);
	void *ud;
};

/* listen: "ADDR:PORT" (port 0: any free port) or "unix:PATH". */
int act_metrics_server_new(sd_event *ev, const char *listen, const struct act_metrics *m,
			   const struct act_metrics_source *src, struct act_metrics_server **out,
			   struct vmact_err *err);
void act_metrics_server_free(struct act_metrics_server *s);
/* The TCP port bound (0 for a unix socket). */
unsigned act_metrics_server_port(const struct act_metrics_server *s);
