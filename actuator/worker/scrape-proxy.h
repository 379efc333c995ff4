/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's metrics exporters (<vmact:metrics>) scraped through a guest
 * worker of their own (vmact-guestd --metrics, doc/privsep.md): vmactd
 * never reads the exporters' bytes. It sends a SCRAPE, and takes the
 * worker's answer only when every field is in range (privsep.c), the
 * LFC windows are all there, and it answers a scrape asked for; a worker
 * that breaks the conversation is killed and restarted (worker/worker.h).
 * The results are handed over as the worker's scraper gives them
 * (agent-glue/client/exporter-scrape.h, its result type only). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "agent-glue/client/exporter-scrape.h"
#include "base/error.h"

struct act_scrape_proxy;

/* system_url and lfc_url (NULL: none) are the URLs the worker GETs and
 * vmactd dials for it; the worker runs `program` as `user`. */
int act_scrape_proxy_new(sd_event *event, const char *name, const char *system_url,
			 const char *lfc_url, const char *program, const char *user,
			 struct act_scrape_proxy **out, struct vmact_err *err);
/* Starts one scrape of kind; cb runs exactly once with its result: from
 * the loop, or before this returns when no worker runs (restarting: an
 * error, so the host-side figures are used). Not while one of that kind
 * is pending (act_scrape_proxy_pending). */
void act_scrape_proxy_scrape(struct act_scrape_proxy *p, enum ag_exporter_kind kind,
			     ag_exporter_scrape_fn *cb, void *userdata);
bool act_scrape_proxy_pending(const struct act_scrape_proxy *p, enum ag_exporter_kind kind);
/* The worker process now, 0 while none runs. */
pid_t act_scrape_proxy_worker_pid(const struct act_scrape_proxy *p);
/* Kills the worker; no callback runs. NULL is fine. */
void act_scrape_proxy_free(struct act_scrape_proxy *p);
