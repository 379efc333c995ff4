/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's Prometheus endpoint (prefix cl_metrics_; doc/cluster.md,
 * "Metrics"): pool sizes by tier, provisioning times by tier, boots,
 * failures, leases and reservations, members by state, waiting VMs; the
 * page written by net/prom-write on each scrape from the engine's memory. */
#pragma once

#include "cluster/engine/engine.h"
#include "net/prom-write.h"

/* Writes the families into w (for the endpoint and for tests). */
void cl_metrics_write(struct cl_engine *e, struct net_prom_writer *w);
/* The same as net/prom-serve's page function, the engine its ud: vmact-groupd
 * serves GET /metrics on metrics.listen with it. */
int cl_metrics_page(void *engine, struct net_prom_writer *w);
