/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's Prometheus endpoint (prefix cl_metrics_; doc/cluster.md,
 * "Metrics"): pool sizes by tier, provisioning times by tier, boots,
 * failures, leases and reservations, members by state, waiting VMs; the
 * page written by net/prom-write on each scrape from the engine's memory. */
#pragma once

#include <systemd/sd-event.h>

#include "base/error.h"
#include "cluster/engine.h"
#include "net/prom-write.h"

struct cl_metrics;

/* Writes the families into w (for the endpoint and for tests). */
void cl_metrics_write(struct cl_engine *e, struct net_prom_writer *w);

/* Serves GET /metrics on listen ("ADDR:PORT"; the default is loopback). */
int cl_metrics_new(sd_event *ev, const char *listen, struct cl_engine *e, struct cl_metrics **out,
		   struct vmact_err *err);
void cl_metrics_free(struct cl_metrics *m);
unsigned cl_metrics_port(const struct cl_metrics *m);
