/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's own metrics, read the way the Neon agent reads them
 * (doc/protocols.md, "Metrics inputs"): the system exporter (load averages
 * and memory, port 9100) and the Postgres LFC exporter (cache counters and
 * working-set windows, port 9499), both in the Prometheus text format
 * (net/prom-text.h).
 *
 * Two layers: readers that turn a text into metrics (pure, for tests and
 * fuzzing), and a scraper that GETs an endpoint on the daemon's sd-event
 * loop through the http client, bounded in size and time, and hands the
 * parsed metrics or the reason there are none to a callback. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "net/http-client.h"
#include "net/prom-text.h"

#define AG_GUEST_SYSTEM_PORT 9100
#define AG_GUEST_LFC_PORT 9499
/* The agent's timeouts for each endpoint. */
#define AG_GUEST_SYSTEM_TIMEOUT_USEC (2ULL * 1000000ULL)
#define AG_GUEST_LFC_TIMEOUT_USEC (5ULL * 1000000ULL)
/* Default cap on a scraped body: a system exporter's page is a few tens of
 * KiB; 1440 LFC windows are under 100 KiB. */
#define AG_GUEST_DEFAULT_MAX_BYTES (256u * 1024u)
/* Added to total - available to get the usage the goal is computed from,
 * as the agent does. */
#define AG_GUEST_MEMORY_SLACK_BYTES (100.0 * 1024 * 1024)
/* Working-set windows kept: one per minute over a day. The scaling core
 * (actuator/actions.h, ACT_LFC_MAX_WINDOWS) holds as many; the layer that
 * connects the two is the place to assert they agree. */
#define AG_LFC_MAX_WINDOWS 1440u
/* Bytes per LFC page: the windows count pages. */
#define AG_LFC_PAGE_BYTES 8192u

enum ag_guest_metrics_kind {
	AG_GUEST_METRICS_SYSTEM,
	AG_GUEST_METRICS_LFC,
};

struct ag_system_metrics {
	double load1, load5;
	double memory_usage_bytes;  /* total - available + 100 MiB */
	double memory_cached_bytes;
};

struct ag_lfc_metrics {
	double hits, misses, writes;
	size_t n_windows;
	/* wss_pages[i]: approximate working set over the last (i + 1) minutes,
	 * in 8 KiB pages. */
	double wss_pages[AG_LFC_MAX_WINDOWS];
};

/* Readers. Each required family must be typed gauge (a `# TYPE name gauge`
 * line) and have exactly one sample; families the reader does not use are
 * ignored. The LFC windows are the samples of
 * lfc_approximate_working_set_size_windows, each with a duration_seconds
 * label holding a decimal integer; sorted by it they must be exactly 60,
 * 120, ... with no gap and no duplicate, at most AG_LFC_MAX_WINDOWS of
 * them. Values are taken as the text gives them (the scaling core judges
 * them). Errors are -EBADMSG with a message naming the family. */
int ag_system_metrics_read(const struct net_prom_text *t, struct ag_system_metrics *out,
			   struct vmact_err *err);
int ag_lfc_metrics_read(const struct net_prom_text *t, struct ag_lfc_metrics *out,
			struct vmact_err *err);
/* Parse and read in one step (the parser's errors as net_prom_parse gives
 * them). */
int ag_system_metrics_parse(const char *text, size_t len, struct ag_system_metrics *out,
			    struct vmact_err *err);
int ag_lfc_metrics_parse(const char *text, size_t len, struct ag_lfc_metrics *out,
			 struct vmact_err *err);

/* "http://HOST:PORT/metrics" with the kind's port (IPv6 literals are
 * bracketed); port 0 = the kind's default. -ENOSPC when buf is too small,
 * -EINVAL for an empty host. */
int ag_guest_metrics_url(const char *host, unsigned port, enum ag_guest_metrics_kind kind,
			 char *buf, size_t len);

struct ag_guest_scrape;

struct ag_guest_metrics_result {
	enum ag_guest_metrics_kind kind;
	/* 0: the metrics below are valid. Otherwise:
	 *   -ETIMEDOUT    no complete answer within the timeout,
	 *   -ECONNREFUSED / -ECONNRESET / -EHOSTUNREACH / -EPROTO ... transport,
	 *   -EFBIG        the body exceeds max_bytes,
	 *   -EREMOTEIO    the endpoint answered a status other than 200,
	 *   -EBADMSG      the body is not a valid text or lacks what the reader
	 *                 needs (the message says which line or family),
	 *   -E2BIG        the text exceeds the parser's count limits. */
	int error;
	const char *message; /* NULL on success; names the URL and the cause */
	long status;         /* HTTP status, 0 when none was received */
	const struct ag_system_metrics *system; /* kind SYSTEM, error 0 */
	const struct ag_lfc_metrics *lfc;       /* kind LFC, error 0 */
};

/* Every pointer in res is valid only during the call. The callback may free
 * the scrape handle (and start new scrapes). */
typedef void ag_guest_metrics_fn(void *userdata, const struct ag_guest_metrics_result *res);

/* Starts one GET of url on client's loop and returns at once. timeout_usec 0
 * = the kind's default (2 s system, 5 s LFC); max_bytes 0 =
 * AG_GUEST_DEFAULT_MAX_BYTES, at most NET_PROM_MAX_TEXT. The callback runs
 * exactly once, from the loop, unless the handle is freed first. Errors
 * before sending (bad arguments, bad URL) are returned and the callback is
 * not called. The caller owns *out and frees it with ag_guest_scrape_free,
 * during or after the callback, or before it to cancel; always before the
 * http client, since the handle refers to a call the client owns. */
int ag_guest_metrics_fetch(struct net_http_client *client, const char *url,
			   enum ag_guest_metrics_kind kind, uint64_t timeout_usec, size_t max_bytes,
			   ag_guest_metrics_fn *cb, void *userdata, struct ag_guest_scrape **out,
			   struct vmact_err *err);
/* Cancels the request if it is still pending (the callback is then never
 * called). NULL is fine. */
void ag_guest_scrape_free(struct ag_guest_scrape *s);
/* True until the callback has run. */
bool ag_guest_scrape_pending(const struct ag_guest_scrape *s);
