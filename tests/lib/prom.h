/* SPDX-License-Identifier: Apache-2.0 */
/* Debian's Prometheus server run by a test (prefix th_prom_): its
 * configuration, storage and log in a directory of the test's, scraping
 * the test's targets on 127.0.0.1 every second, and instant queries
 * through its HTTP API (/api/v1/query). Stopped by th_prom_stop; what it
 * wrote goes with the test's directory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "tests/lib/proc.h"

#define TH_PROM_PROGRAM "/usr/bin/prometheus"

/* A scrape job: its name and the port of its target on 127.0.0.1. */
struct th_prom_job {
	const char *name;
	unsigned port;
};

struct th_prom {
	char cfg[128], log[128], data[128];
	unsigned port; /* its web listener's */
	struct th_proc proc;
};

/* Writes the configuration into dir, starts Prometheus on a free port and
 * waits up to limit_s for it to be ready. 0; -ETIMEDOUT (its log's tail
 * printed on stderr), or another -errno. */
int th_prom_start(struct th_prom *p, const char *dir, const struct th_prom_job *jobs, size_t n,
		  double limit_s);

/* The instant query's result vector (a new reference), or NULL with why
 * in err: no success from the server (a malformed query, or no answer),
 * or a result that is not a vector. */
json_t *th_prom_query(const struct th_prom *p, const char *promql, char *err, size_t errlen);

/* The value of a query that yields exactly one series; false otherwise. */
bool th_prom_query_one(const struct th_prom *p, const char *promql, double *v);

/* Stops Prometheus (SIGTERM, 30 s, then SIGKILL); its exit status. Safe
 * on a fixture never started. */
int th_prom_stop(struct th_prom *p);
