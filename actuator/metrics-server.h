/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's Prometheus endpoint (metrics.listen, doc/metrics.md): GET
 * /metrics on the daemon's loop through agent-glue/http-server, the page
 * built afresh for each request from the daemon's counters and every
 * runner of the registry. */
#pragma once

#include <systemd/sd-event.h>

#include "actuator/metrics.h"
#include "actuator/registry.h"
#include "base/error.h"

struct act_metrics_server;

/* listen: "ADDR:PORT" (port 0: any free port) or "unix:PATH". */
int act_metrics_server_new(sd_event *ev, const char *listen, const struct act_metrics *m,
			   struct act_registry *reg, struct act_metrics_server **out,
			   struct vmact_err *err);
void act_metrics_server_free(struct act_metrics_server *s);
/* The TCP port bound (0 for a unix socket). */
unsigned act_metrics_server_port(const struct act_metrics_server *s);
