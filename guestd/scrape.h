/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-guestd's metrics mode (doc/privsep.md): the guest's exporters
 * (<vmact:metrics>) scraped when vmactd asks (SCRAPE) over connections
 * vmactd opens (DIAL), their Prometheus text parsed here
 * (agent-glue/codec/exporter.h), and the figures sent back as fixed
 * records: the system figures, or the LFC windows (WINDOWS records, then
 * a METRICS record), or the error. Values the records cannot carry
 * (negative, not finite, beyond privsep.h's bounds) are an error. */
#pragma once

#include <stdbool.h>

#include <systemd/sd-event.h>

#include "base/error.h"
#include "guestd/privsep.h"

struct act_scrape;

struct act_scrape_ops {
	/* A connection to the system exporter, or the LFC one: a socket, or
	 * a negative errno with err set. */
	int (*dial)(void *ud, bool lfc, struct vmact_err *err);
	/* One record to vmactd. */
	void (*send)(void *ud, struct act_privsep_msg *m);
};

/* system and lfc are the URLs to GET (lfc NULL: none). Creates the HTTP
 * client: before the system-call filter (libcurl's initialisation opens
 * files and a socket pair). */
int act_scrape_new(sd_event *event, const char *system, const char *lfc,
		   const struct act_scrape_ops *ops, void *ud, struct act_scrape **out,
		   struct vmact_err *err);
/* A SCRAPE from vmactd: one scrape of that exporter, answered later (a
 * scrape of the same exporter still running is given up: vmactd gave up
 * on it). */
void act_scrape_run(struct act_scrape *g, const struct act_privsep_msg *req);
