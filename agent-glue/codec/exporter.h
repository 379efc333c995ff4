/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's own metrics, read the way the Neon agent reads them
 * (doc/protocols.md, "Metrics inputs"): the system exporter (load averages
 * and memory, port 9100) and the Postgres LFC exporter (cache counters and
 * working-set windows, port 9499), both in the Prometheus text format
 * (net/prom-text.h).
 *
 * Readers that turn a page into metrics, pure (for tests and fuzzing); the
 * scraper that fetches the pages is agent-glue/client/exporter-scrape.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "net/prom-text.h"

#define AG_EXPORTER_SYSTEM_PORT 9100
#define AG_EXPORTER_LFC_PORT    9499
/* The agent's timeouts for each endpoint. */
#define AG_EXPORTER_SYSTEM_TIMEOUT_USEC (2ULL * 1000000ULL)
#define AG_EXPORTER_LFC_TIMEOUT_USEC    (5ULL * 1000000ULL)
/* Default cap on a scraped body: a system exporter's page is a few tens of
 * KiB; 1440 LFC windows are under 100 KiB. */
#define AG_EXPORTER_DEFAULT_MAX_BYTES (256u * 1024u)
/* Added to total - available to get the usage the goal is computed from,
 * as the agent does. */
#define AG_EXPORTER_MEMORY_SLACK_BYTES (100.0 * 1024 * 1024)
/* Working-set windows kept: one per minute over a day. The scaling core
 * (actuator/policy/actions.h, ACT_LFC_MAX_WINDOWS) holds as many; the layer that
 * connects the two is the place to assert they agree. */
#define AG_LFC_MAX_WINDOWS 1440u
/* Bytes per LFC page: the windows count pages. */
#define AG_LFC_PAGE_BYTES 8192u

enum ag_exporter_kind {
	AG_EXPORTER_SYSTEM,
	AG_EXPORTER_LFC,
};

struct ag_system_metrics {
	double load1, load5;
	double memory_usage_bytes; /* total - available + 100 MiB */
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
int ag_exporter_url(const char *host, unsigned port, enum ag_exporter_kind kind, char *buf,
		    size_t len);
