/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's metrics page (doc/metrics.md) judged by Prometheus's own
 * checker: `promtool check metrics` (Debian package prometheus) on the
 * page a real vmactd serves, and on every per-VM family written for VMs
 * with awkward names; the endpoint's answers to other paths and methods;
 * metrics.listen "" turning it off. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "actuator/metrics/metrics.h"
#include "net/prom-text.h"
#include "net/prom-write.h"
#include "tests/lib/proc.h"

#define PROMTOOL "/usr/bin/promtool"

static char vmactd_path[PATH_MAX + 16];

struct buf {
	char *p;
	size_t len;
};

static size_t collect(char *data, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;
	char *np = realloc(b->p, b->len + size * n + 1);

	if (!np)
		return 0;
	memcpy(np + b->len, data, size * n);
	b->p = np;
	b->len += size * n;
	b->p[b->len] = 0;
	return size * n;
}

static long http(const char *method, const char *url, struct buf *body, char *ctype, size_t ctlen)
{
	CURL *c = curl_easy_init();
	long status = 0;
	char *ct = NULL;

	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (ctype && curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(ctype, ctlen, "%s", ct);
	curl_easy_cleanup(c);
	return status;
}

/* Runs promtool check metrics on text; its exit status, its output in out. */
static int promtool_check(const char *text, size_t len, char *out, size_t outlen)
{
	static const struct th_spawn_opts o = { .stdin_pipe = true,
						.out = TH_OUT_PIPE,
						.err = TH_OUT_PIPE };
	const char *argv[] = { PROMTOOL, "check", "metrics", NULL };
	struct th_proc p = { 0 };
	size_t got = 0;
	ssize_t n;

	assert_int_equal(th_spawn(&p, argv, &o), 0);
	for (size_t off = 0; off < len; off += (size_t)n) {
		n = write(p.in_fd, text + off, len - off);
		assert_true(n > 0);
	}
	close(p.in_fd);
	p.in_fd = -1;
	while (got + 1 < outlen && (n = read(p.out_fd, out + got, outlen - got - 1)) > 0)
		got += (size_t)n;
	out[got] = 0;
	return th_proc_wait(&p);
}

static void assert_promtool_ok(const char *text, size_t len)
{
	char out[8192];
	int status = promtool_check(text, len, out, sizeof(out));

	if (status != 0 || out[0])
		fail_msg("promtool check metrics: status %d: %s\n--- page:\n%s", status, out, text);
}

static int write_config(char *path, const char *text)
{
	FILE *f;
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

struct daemon {
	struct th_proc proc;
	FILE *err;
	char path[32];
	unsigned port; /* metrics; 0 when it said none */
	bool said_metrics;
};

/* Starts vmactd with its own pin root, a domain prefix nobody uses and
 * metrics_json as its "metrics" section, and reads its log up to
 * "started". */
static void start(struct daemon *d, const char *metrics_json)
{
	static const struct th_spawn_opts o = { .err = TH_OUT_PIPE };
	const char *argv[] = { vmactd_path, "--config", d->path, NULL };
	char text[512], line[512];

	snprintf(d->path, sizeof(d->path), "/tmp/vmactd-metrics-XXXXXX");
	snprintf(text, sizeof(text),
		 "{\"libvirt\":{\"name_prefix\":\"vmactd-metrics-%d-none-\"},"
		 "\"sampler\":{\"pin_root\":\"/sys/fs/bpf/vmactd-metrics-%d\"}%s%s}",
		 (int)getpid(), (int)getpid(), metrics_json ? ",\"metrics\":" : "",
		 metrics_json ? metrics_json : "");
	assert_int_equal(write_config(d->path, text), 0);
	assert_int_equal(th_spawn(&d->proc, argv, &o), 0);
	d->err = fdopen(d->proc.out_fd, "r");
	assert_non_null(d->err);
	d->proc.out_fd = -1;
	while (fgets(line, sizeof(line), d->err)) {
		char *at = strstr(line, "metrics: serving");

		if (at) {
			d->said_metrics = true;
			at = strstr(at, "(port ");
			assert_non_null(at);
			assert_int_equal(sscanf(at, "(port %u)", &d->port), 1);
		}
		if (strstr(line, "metrics:"))
			d->said_metrics = true;
		if (strstr(line, "vmactd: started"))
			break;
	}
}

static void stop(struct daemon *d)
{
	kill(d->proc.pid, SIGTERM);
	assert_int_equal(th_proc_wait(&d->proc), 0);
	fclose(d->err);
	unlink(d->path);
}

/* The page of a vmactd with no VM: valid for promtool and the parser,
 * with the daemon's families; other paths 404, other methods 405. */
static void test_endpoint(void **state)
{
	struct daemon d = { 0 };
	struct buf b = { 0 };
	struct vmact_err err = { 0 };
	struct net_prom_text *t = NULL;
	char url[80], ct[128] = "";
	const struct net_prom_family *f;

	(void)state;
	start(&d, "{\"listen\":\"127.0.0.1:0\"}");
	assert_true(d.port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", d.port);
	assert_int_equal(http("GET", url, &b, ct, sizeof(ct)), 200);
	assert_string_equal(ct, "text/plain; version=0.0.4; charset=utf-8");
	assert_promtool_ok(b.p, b.len);
	assert_int_equal(net_prom_parse(b.p, b.len, &t, &err), 0);
	f = net_prom_find(t, "vmact_managed_vms");
	assert_non_null(f);
	assert_int_equal(f->n_samples, 1);
	assert_true(f->samples[0].value == 0);
	f = net_prom_find(t, "vmact_hotplug_latency_seconds");
	assert_non_null(f);
	assert_int_equal(f->type, NET_PROM_HISTOGRAM);
	f = net_prom_find(t, "vmact_vm_cpu_cores");
	assert_non_null(f);
	assert_int_equal(f->n_samples, 0); /* no VM, no series */
	/* Without a source of worker restarts: none, but the series is there. */
	f = net_prom_find(t, "vmact_guest_worker_restarts_total");
	assert_non_null(f);
	assert_int_equal(f->n_samples, 1);
	assert_true(f->samples[0].value == 0);
	net_prom_text_free(t);
	free(b.p);

	b = (struct buf){ 0 };
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", d.port);
	assert_int_equal(http("GET", url, &b, NULL, 0), 404);
	free(b.p);
	b = (struct buf){ 0 };
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics/x", d.port);
	assert_int_equal(http("GET", url, &b, NULL, 0), 404);
	free(b.p);
	b = (struct buf){ 0 };
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", d.port);
	assert_int_equal(http("POST", url, &b, NULL, 0), 405);
	free(b.p);
	stop(&d);
}

/* metrics.listen "" turns the endpoint off: no listener, no log line. */
static void test_disabled(void **state)
{
	struct daemon d = { 0 };

	(void)state;
	start(&d, "{\"listen\":\"\"}");
	assert_false(d.said_metrics);
	stop(&d);
}

/* Every per-VM family, for VMs whose names need escaping, with counters
 * and histograms filled: what promtool says of the writer's output beyond
 * an empty daemon. */
static void test_families(void **state)
{
	struct act_metrics m = { 0 };
	struct act_vm_metrics vms[3];
	struct net_prom_writer *w = NULL;
	struct vmact_err err = { 0 };
	struct net_prom_text *t = NULL;
	const struct net_prom_family *f;
	const char *text;
	size_t len;
	unsigned seen = 0;

	(void)state;
	static const char *const names[] = { "plain", "with \"quotes\" and \\", "new\nline é" };
	for (size_t i = 0; i < 3; i++) {
		vms[i] = (struct act_vm_metrics){
			.name = names[i],
			.uuid = "6f1e2d3c-0000-4000-8000-00000000000a",
			.paused = i == 1,
			.recommend = i == 2,
			.resizes = { [ACT_RESIZE_CPU_UP] = i + 1 },
			.failures = { [ACT_FAILURE_MONITOR] = 2 },
			.current = { 1250, 2ULL << 30 },
			.min = { 250, 1ULL << 30 },
			.max = { 4000, 8ULL << 30 },
			.has_desired = i != 1,
			.desired = { 1500, 2ULL << 30 },
			.has_permit = i == 0,
			.permit = { 2000, 3ULL << 30 },
			.quota_milli = 1250,
			.vcpus = 2,
			.has_load = true,
			.load1 = 1.5,
			.load5 = 0.25,
			.has_memory_usage = i == 2,
			.memory_usage_bytes = 123456789,
			.has_demand = i != 2,
			.demand = { .cls = ACT_CPU_SATURATED,
				    .demand = 1.2,
				    .busy = 0.96,
				    .goal_milli = 1500 },
			.has_threads = true,
			.run_delay_seconds = 0.5,
			.cpu_seconds = 10.25,
			.has_cpu_stat = i != 0,
			.nr_periods = 1000,
			.nr_throttled = 10,
			.throttled_seconds = 0.75,
		};
	}
	act_metrics_decision(&m, ACT_DECISION_CPU_UP);
	act_metrics_resize(&m, ACT_RESIZE_MEMORY_DOWN);
	act_metrics_failure(&m, ACT_FAILURE_HOTPLUG);
	m.worker_restarts = 2;
	act_metrics_observe(&m, ACT_LATENCY_PLUGIN, ACT_DIR_INC, 0.003);
	act_metrics_observe(&m, ACT_LATENCY_HOTPLUG, ACT_DIR_BOTH, 1.7);
	act_metrics_observe(&m, ACT_LATENCY_MONITOR, ACT_DIR_DEC, 100);
	assert_int_equal(net_prom_w_new(&w), 0);
	{
		const struct act_arbiter_metrics arb = {
			.capacity = { 1800, 7ULL << 30 },
			.watermark = { 1620, 6ULL << 30 },
			.reserved = { 1500, 3ULL << 30 },
			.pressure = { 250, 0 },
			.vms = 3,
			.requests = 40,
			.partial = 2,
			.refused = 1,
		};

		act_metrics_write(&m, 3, &arb, vms, 3, w);
	}
	assert_int_equal(net_prom_w_finish(w, &text, &len, &err), 0);
	assert_promtool_ok(text, len);
	assert_int_equal(net_prom_parse(text, len, &t, &err), 0);
	f = net_prom_find(t, "vmact_vm_cpu_cores");
	assert_non_null(f);
	/* current, min, max, quota each; desired for two; permit for one */
	assert_int_equal(f->n_samples, 3 * 4 + 2 + 1);
	for (size_t i = 0; i < f->n_samples; i++)
		if (!strcmp(net_prom_label(&f->samples[i], "vm"), names[1]) &&
		    !strcmp(net_prom_label(&f->samples[i], "value"), "current")) {
			assert_true(f->samples[i].value == 1.25);
			seen++;
		}
	assert_int_equal(seen, 1);
	f = net_prom_find(t, "vmact_vm_cpu_class");
	assert_int_equal(f->n_samples, 2 * 4);
	/* Joinable with the libvirt exporter's series: domain and uuid. */
	for (size_t i = 0; i < f->n_samples; i++) {
		assert_string_equal(net_prom_label(&f->samples[i], "domain"),
				    net_prom_label(&f->samples[i], "vm"));
		assert_string_equal(net_prom_label(&f->samples[i], "uuid"),
				    "6f1e2d3c-0000-4000-8000-00000000000a");
	}
	f = net_prom_find(t, "vmact_build_info");
	assert_non_null(f);
	assert_int_equal(f->n_samples, 1);
	assert_string_equal(net_prom_label(&f->samples[0], "version"), VMACT_VERSION);
	f = net_prom_find(t, "vmact_vm_paused");
	assert_int_equal(f->n_samples, 3);
	for (size_t i = 0; i < f->n_samples; i++)
		assert_true(f->samples[i].value ==
			    (strcmp(net_prom_label(&f->samples[i], "vm"), names[1]) == 0));
	/* Recommend mode: the desired size as the recommendation, with the
	 * VM's labels, for that VM only. */
	f = net_prom_find(t, "vmact_vm_recommended_cpu_cores");
	assert_non_null(f);
	assert_int_equal(f->n_samples, 1);
	assert_string_equal(net_prom_label(&f->samples[0], "vm"), names[2]);
	assert_string_equal(net_prom_label(&f->samples[0], "uuid"),
			    "6f1e2d3c-0000-4000-8000-00000000000a");
	assert_true(f->samples[0].value == 1.5);
	f = net_prom_find(t, "vmact_vm_recommended_memory_bytes");
	assert_non_null(f);
	assert_int_equal(f->n_samples, 1);
	assert_true(f->samples[0].value == (double)(2ULL << 30));
	f = net_prom_find(t, "vmact_vm_resizes_total");
	assert_int_equal(f->n_samples, 3 * ACT_RESIZE_N);
	f = net_prom_find(t, "vmact_vm_failures_total");
	assert_int_equal(f->n_samples, 3 * ACT_FAILURE_N);
	f = net_prom_find(t, "vmact_guest_worker_restarts_total");
	assert_non_null(f);
	assert_int_equal(f->type, NET_PROM_COUNTER);
	assert_true(f->n_samples == 1 && f->samples[0].value == 2);
	f = net_prom_find(t, "vmact_arbiter_cpu_cores");
	assert_int_equal(f->n_samples, 4);
	for (size_t i = 0; i < f->n_samples; i++)
		if (!strcmp(net_prom_label(&f->samples[i], "value"), "watermark"))
			assert_true(f->samples[i].value == 1.62);
	assert_non_null(net_prom_find(t, "vmact_arbiter_memory_bytes"));
	assert_non_null(net_prom_find(t, "vmact_arbiter_requests_total"));
	assert_int_equal(net_prom_find(t, "vmact_arbiter_vms")->n_samples, 1);
	f = net_prom_find(t, "vmact_hotplug_latency_seconds");
	/* 4 directions x (14 bounds + Inf + sum + count) */
	assert_int_equal(f->n_samples, 4 * 17);
	net_prom_text_free(t);
	net_prom_w_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_endpoint),
		cmocka_unit_test(test_disabled),
	};
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (access(PROMTOOL, X_OK) < 0) {
		fprintf(stderr,
			"%s missing: install the Debian package prometheus "
			"(tests/host/setup-host.sh)\n",
			PROMTOOL);
		return 1;
	}
	if (n <= 0)
		return 1;
	self[n] = '\0';
	/* build[/san]/tests/loopback/test_metrics -> build[/san]/vmactd */
	for (int i = 0; i < 3 && (slash = strrchr(self, '/')); i++)
		*slash = '\0';
	snprintf(vmactd_path, sizeof(vmactd_path), "%s/vmactd", self);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
