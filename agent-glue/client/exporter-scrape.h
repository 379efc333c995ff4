/* SPDX-License-Identifier: Apache-2.0 */
/* The scraper of the guest's exporters (<vmact:metrics>): GETs an endpoint
 * on the daemon's sd-event loop through the http client, bounded in size
 * and time, and hands the metrics the codec read from it
 * (agent-glue/codec/exporter.h), or the reason there are none, to a
 * callback. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-glue/codec/exporter.h"
#include "base/error.h"
#include "net/http-client.h"

struct ag_exporter_scrape;

struct ag_exporter_result {
	enum ag_exporter_kind kind;
	/* 0: the metrics below are valid. Otherwise:
	 *   -ETIMEDOUT    no complete answer within the timeout,
	 *   -ECONNREFUSED / -ECONNRESET / -EHOSTUNREACH / -EPROTO ... transport,
	 *   -EFBIG        the body exceeds max_bytes,
	 *   -EREMOTEIO    the endpoint answered a status other than 200,
	 *   -EBADMSG      the body is not a valid text or lacks what the reader
	 *                 needs (the message says which line or family),
	 *   -E2BIG        the text exceeds the parser's count limits. */
	int error;
	const char *message;                    /* NULL on success; names the URL and the cause */
	long status;                            /* HTTP status, 0 when none was received */
	const struct ag_system_metrics *system; /* kind SYSTEM, error 0 */
	const struct ag_lfc_metrics *lfc;       /* kind LFC, error 0 */
};

/* Every pointer in res is valid only during the call. The callback may free
 * the scrape handle (and start new scrapes). */
typedef void ag_exporter_scrape_fn(void *userdata, const struct ag_exporter_result *res);

/* Starts one GET of url on client's loop and returns at once. timeout_usec 0
 * = the kind's default (2 s system, 5 s LFC); max_bytes 0 =
 * AG_EXPORTER_DEFAULT_MAX_BYTES, at most NET_PROM_MAX_TEXT. The callback runs
 * exactly once, from the loop, unless the handle is freed first. Errors
 * before sending (bad arguments, bad URL) are returned and the callback is
 * not called. The caller owns *out and frees it with ag_exporter_scrape_free,
 * during or after the callback, or before it to cancel; always before the
 * http client, since the handle refers to a call the client owns. */
int ag_exporter_scrape_start(struct net_http_client *client, const char *url,
			     enum ag_exporter_kind kind, uint64_t timeout_usec, size_t max_bytes,
			     ag_exporter_scrape_fn *cb, void *userdata,
			     struct ag_exporter_scrape **out, struct vmact_err *err);
/* Cancels the request if it is still pending (the callback is then never
 * called). NULL is fine. */
void ag_exporter_scrape_free(struct ag_exporter_scrape *s);
/* True until the callback has run. */
bool ag_exporter_scrape_pending(const struct ag_exporter_scrape *s);
