/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/prom.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/macro.h"
#include "base/time.h"
#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/wait.h"

/* Its TSDB flushes on SIGTERM: a few seconds on a loaded host. */
#define TH_PROM_STOP_USEC (30 * VMACT_USEC_PER_SEC)
#define TH_PROM_LOG_TAIL  4000

static bool prom_ready(void *arg)
{
	const struct th_prom *p = arg;
	char url[64];
	_cleanup_free_ char *b = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/-/ready", p->port);
	b = th_cluster_http_get(url);
	return b != NULL;
}

int th_prom_start(struct th_prom *p, const char *dir, const struct th_prom_job *jobs, size_t n,
		  double limit_s)
{
	char text[4096], flag[3][192];
	const char *argv[] = { TH_PROM_PROGRAM, flag[0], flag[1], flag[2], NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = p->log };
	size_t len;
	int r;

	snprintf(p->cfg, sizeof(p->cfg), "%s/prometheus.yml", dir);
	snprintf(p->log, sizeof(p->log), "%s/prometheus.log", dir);
	snprintf(p->data, sizeof(p->data), "%s/data", dir);
	p->port = th_dead_port();
	if (!p->port)
		return -EADDRNOTAVAIL;
	len = (size_t)snprintf(text, sizeof(text),
			       "global:\n"
			       "  scrape_interval: 1s\n"
			       "  scrape_timeout: 1s\n"
			       "scrape_configs:\n");
	for (size_t i = 0; i < n && len < sizeof(text); i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"  - job_name: %s\n"
					"    static_configs:\n"
					"      - targets: ['127.0.0.1:%u']\n",
					jobs[i].name, jobs[i].port);
	if (len >= sizeof(text))
		return -E2BIG;
	r = th_write_file(p->cfg, text);
	if (r < 0)
		return r;
	snprintf(flag[0], sizeof(flag[0]), "--config.file=%s", p->cfg);
	snprintf(flag[1], sizeof(flag[1]), "--storage.tsdb.path=%s", p->data);
	snprintf(flag[2], sizeof(flag[2]), "--web.listen-address=127.0.0.1:%u", p->port);
	r = th_spawn(&p->proc, argv, &o);
	if (r < 0)
		return r;
	if (!th_wait_until(NULL, prom_ready, p, (uint64_t)(limit_s * VMACT_USEC_PER_SEC))) {
		th_print_log_tail(p->log, "prometheus", TH_PROM_LOG_TAIL);
		return -ETIMEDOUT;
	}
	return 0;
}

json_t *th_prom_query(const struct th_prom *p, const char *promql, char *err, size_t errlen)
{
	CURL *c = curl_easy_init();
	char *esc = c ? curl_easy_escape(c, promql, 0) : NULL;
	char url[4096];
	_cleanup_free_ char *body = NULL;
	json_t *doc, *res = NULL;

	if (c)
		curl_easy_cleanup(c);
	if (!esc) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/query?query=%s", p->port, esc);
	curl_free(esc);
	/* th_cluster_http_get: the body of a 200 only; a query error is 400. */
	body = th_cluster_http_get(url);
	doc = body ? json_loads(body, 0, NULL) : NULL;
	if (doc && !strcmp(json_string_value(json_object_get(doc, "status")) ?: "", "success"))
		res = json_incref(json_object_get(json_object_get(doc, "data"), "result"));
	else
		snprintf(err, errlen,
			 "no success from Prometheus (a malformed query, or no answer)");
	json_decref(doc);
	if (res && !json_is_array(res)) {
		json_decref(res);
		res = NULL;
		snprintf(err, errlen, "not a vector");
	}
	return res;
}

bool th_prom_query_one(const struct th_prom *p, const char *promql, double *v)
{
	char err[128];
	json_t *r = th_prom_query(p, promql, err, sizeof(err));
	const char *s = NULL;

	if (r && json_array_size(r) == 1)
		s = json_string_value(
			json_array_get(json_object_get(json_array_get(r, 0), "value"), 1));
	if (s)
		*v = strtod(s, NULL);
	json_decref(r);
	return s != NULL;
}

int th_prom_stop(struct th_prom *p)
{
	return th_proc_stop(&p->proc, SIGTERM, TH_PROM_STOP_USEC);
}
