/* SPDX-License-Identifier: Apache-2.0 */
/* A Prometheus endpoint: GET /metrics on a loop through net/http-server,
 * the page written afresh for each request by its owner's function
 * (vmactd's metrics.listen, vmact-groupd's). Everything else is a 404 or
 * a 405; a page the writer cannot finish is a 500 that says why. */
#pragma once

#include <systemd/sd-event.h>

#include "base/error.h"
#include "net/prom-write.h"

struct net_prom_server;

/* Writes the page's families into w; < 0 (a negative errno) when it
 * could not (then the answer is a 500). */
typedef int net_prom_page_fn(void *ud, struct net_prom_writer *w);

/* listen: "ADDR:PORT" (port 0: any free port) or "unix:PATH". */
int net_prom_server_new(sd_event *ev, const char *listen, net_prom_page_fn *page, void *ud,
			struct net_prom_server **out, struct vmact_err *err);
void net_prom_server_free(struct net_prom_server *s);
/* The TCP port bound (0 for a unix socket). */
unsigned net_prom_server_port(const struct net_prom_server *s);
