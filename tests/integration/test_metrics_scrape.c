/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's metrics (doc/metrics.md) as an operator gets them: a real
 * Prometheus server (Debian's /usr/bin/prometheus, its own temporary
 * storage, a generated configuration scraping vmactd every second on
 * 127.0.0.1) against the real vmactd managing a real TCG guest (1 of 4
 * vCPUs, bounds 1..4 CPUs / 512Mi..1536Mi, no vm-monitor).
 * Through Prometheus's HTTP API (/api/v1/query):
 *
 *   - up{job="vmactd"} is 1: Prometheus took the page;
 *   - the VM's bounds, its vCPUs and CPU are what libvirt says, before and
 *     after the guest's load makes vmactd plug a vCPU, and the decision,
 *     resize and hotplug latency counters moved;
 *   - the vCPU threads' CPU time and the cgroup's CFS periods are there.
 *
 * `promtool check metrics` judges the page with the VM on it. When the
 * guest is destroyed, its series leave vmactd's page.
 *
 * vmactd runs with its defaults except for what isolates the test (its
 * domain prefix, pin root, and metrics.listen on port 0). Conditions are
 * awaited with generous safety limits; nothing is timed. */
#include <errno.h>
#include <libgen.h>
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
#include <jansson.h>

#include "hotplug/hotplug.h"
#include "net/prom-text.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-prom"
#define PROMETHEUS   "/usr/bin/prometheus"
#define PROMTOOL     "/usr/bin/promtool"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S      120.0
#define MiB          (1024ULL * 1024ULL)

static char vmactd_path[PATH_MAX];

static struct {
	virConnectPtr vc;
	struct tg_guest g;
	struct th_proc daemon, prom;
	char dir[64], cfg[128], log[128], prom_cfg[128], prom_log[128], pins[128];
	unsigned metrics_port, prom_port;
	char group[512]; /* the VM's cpu cgroup, as vmactd logged it */
} fx;

/* ---- HTTP ---- */

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

/* GET url; the status (0: no answer) and the body in *b (caller frees). */
static long get(const char *url, struct buf *b)
{
	CURL *c = curl_easy_init();
	long status = 0;

	*b = (struct buf){ 0 };
	if (!c)
		return 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	return status;
}

/* ---- Prometheus's API ---- */

/* The instant query's result vector (a new reference), or NULL when the
 * server did not answer with success. */
static json_t *query(const char *promql)
{
	CURL *c = curl_easy_init();
	char *esc = c ? curl_easy_escape(c, promql, 0) : NULL;
	char url[1024];
	struct buf b;
	json_t *doc, *res = NULL;
	long status;

	if (c)
		curl_easy_cleanup(c);
	if (!esc)
		return NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/query?query=%s", fx.prom_port, esc);
	curl_free(esc);
	status = get(url, &b);
	doc = status == 200 && b.p ? json_loads(b.p, 0, NULL) : NULL;
	free(b.p);
	if (doc && !strcmp(json_string_value(json_object_get(doc, "status")) ?: "", "success"))
		res = json_incref(json_object_get(json_object_get(doc, "data"), "result"));
	json_decref(doc);
	return json_is_array(res) ? res : (json_decref(res), NULL);
}

/* The value of a query that yields exactly one series; false otherwise. */
static bool query_one(const char *promql, double *v)
{
	json_t *r = query(promql);
	const char *s;
	bool ok = false;

	if (r && json_array_size(r) == 1) {
		s = json_string_value(
			json_array_get(json_object_get(json_array_get(r, 0), "value"), 1));
		if (s) {
			*v = strtod(s, NULL);
			ok = true;
		}
	}
	json_decref(r);
	return ok;
}

struct expect {
	char promql[256];
	double want;
	double got;
	bool seen;
};

static bool query_equals(void *arg)
{
	struct expect *e = arg;

	e->seen = query_one(e->promql, &e->got);
	return e->seen && e->got == e->want;
}

static bool query_at_least(void *arg)
{
	struct expect *e = arg;

	e->seen = query_one(e->promql, &e->got);
	return e->seen && e->got >= e->want;
}

static void prom_expect(bool (*pred)(void *), const char *fmt, double want, ...)
	__attribute__((format(printf, 2, 4)));

/* Waits until Prometheus's answer to the query satisfies pred. */
static void prom_expect(bool (*pred)(void *), const char *fmt, double want, ...)
{
	struct expect e = { .want = want };
	va_list ap;

	va_start(ap, want);
	vsnprintf(e.promql, sizeof(e.promql), fmt, ap);
	va_end(ap);
	if (!th_wait_until(NULL, pred, &e, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("Prometheus: %s: %s %g, want %s%g", e.promql,
			 e.seen ? "last value" : "no single series", e.seen ? e.got : NAN,
			 pred == query_at_least ? ">= " : "", want);
}

/* ---- libvirt, vmactd ---- */

static int live_vcpus(void)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, fx.g.name) : NULL;
	int n = d ? virDomainGetVcpusFlags(d, VIR_DOMAIN_AFFECT_LIVE) : -1;

	if (d)
		virDomainFree(d);
	if (vc)
		virConnectClose(vc);
	return n;
}

/* The memory the guest has now (base + DIMMs + virtio-mem plugged), from
 * libvirt's live XML. */
static double live_mem_bytes(void)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, fx.g.name) : NULL;
	char *xml = d ? virDomainGetXMLDesc(d, 0) : NULL;
	struct hp_state st;
	double v = -1;

	if (xml && hp_state_parse(xml, &st, NULL) == 0)
		v = (double)hp_state_mem_kib(&st) * 1024.0;
	free(xml);
	if (d)
		virDomainFree(d);
	if (vc)
		virConnectClose(vc);
	return v;
}

static double live_vcpus_d(void)
{
	return live_vcpus();
}

/* The VM's CFS quota in cores, from its cgroup (v1 cpu.cfs_quota_us /
 * cpu.cfs_period_us, or v2 cpu.max); -1 when unreadable or unlimited. */
static double live_quota_cores(void)
{
	char path[700], *text;
	long long quota = -1, period = 0;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu%s/cpu.cfs_quota_us", fx.group);
	if ((text = th_read_file(path))) {
		quota = strtoll(text, NULL, 10);
		free(text);
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu%s/cpu.cfs_period_us", fx.group);
		if ((text = th_read_file(path))) {
			period = strtoll(text, NULL, 10);
			free(text);
		}
	} else {
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max", fx.group);
		if ((text = th_read_file(path))) {
			if (sscanf(text, "%lld %lld", &quota, &period) != 2)
				quota = -1;
			free(text);
		}
	}
	return quota > 0 && period > 0 ? (double)quota / (double)period : -1;
}

/* What the VM is granted: its vCPUs, held to its quota. */
static double live_current_cores(void)
{
	double v = live_vcpus(), q = live_quota_cores();

	return q > 0 && q < v ? q : v;
}

struct agree {
	const char *promql;
	double (*live)(void);
	double prom, real;
};

static bool agrees(void *arg)
{
	struct agree *a = arg;

	a->real = a->live();
	return query_one(a->promql, &a->prom) && a->prom == a->real;
}

/* Waits until Prometheus's value and libvirt's agree (both may move while
 * vmactd resizes); returns the value. */
static double prom_agrees(const char *promql, double (*live)(void), const char *what)
{
	struct agree a = { .promql = promql, .live = live, .prom = NAN };

	if (!th_wait_until(NULL, agrees, &a, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("Prometheus says %s = %g, libvirt %g", promql, a.prom, a.real);
	print_message("%s: Prometheus and libvirt agree: %g %s\n", promql, a.real, what);
	return a.real;
}

/* The growth done: the second vCPU plugged and the quota written above
 * the one CPU it had (vmactd plugs first, then writes the quota). */
static bool grown_past_one_cpu(void *arg)
{
	(void)arg;
	return live_vcpus() >= 2 && live_quota_cores() > 1;
}

static bool guest_reports(void *arg)
{
	struct tg_report r;

	(void)arg;
	return tg_report(&fx.g, &r);
}

static bool log_has(void *needle)
{
	return th_count_in_file(fx.log, needle) > 0;
}

static void dump(const char *what, const char *path)
{
	char *buf = th_read_file(path);

	if (buf) {
		size_t len = strlen(buf);

		print_error("---- %s (tail) ----\n%s\n", what, len > 4000 ? buf + len - 4000 : buf);
		free(buf);
	}
}

/* The number of samples of vmactd's page whose label vm is the guest's,
 * or -1 when the page could not be had or parsed. */
static int vm_series_on_page(struct buf *page)
{
	char url[64];
	struct net_prom_text *t = NULL;
	int n = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", fx.metrics_port);
	if (get(url, page) != 200 || net_prom_parse(page->p, page->len, &t, NULL) < 0)
		return -1;
	for (size_t f = 0; f < t->n_families; f++)
		for (size_t i = 0; i < t->families[f].n_samples; i++) {
			const char *vm = net_prom_label(&t->families[f].samples[i], "vm");

			n += vm && !strcmp(vm, fx.g.name);
		}
	net_prom_text_free(t);
	return n;
}

static bool vm_series_gone(void *arg)
{
	struct buf page;
	int n = vm_series_on_page(&page);

	(void)arg;
	free(page.p);
	return n == 0;
}

static void promtool_check(const char *text, size_t len)
{
	static const struct th_spawn_opts o = { .stdin_pipe = true,
						.out = TH_OUT_PIPE,
						.err = TH_OUT_PIPE };
	const char *argv[] = { PROMTOOL, "check", "metrics", NULL };
	struct th_proc p = { 0 };
	char out[4096];
	size_t got = 0;
	ssize_t n;
	int status;

	assert_int_equal(th_spawn(&p, argv, &o), 0);
	for (size_t off = 0; off < len; off += (size_t)n) {
		n = write(p.in_fd, text + off, len - off);
		assert_true(n > 0);
	}
	close(p.in_fd);
	p.in_fd = -1;
	while (got + 1 < sizeof(out) && (n = read(p.out_fd, out + got, sizeof(out) - got - 1)) > 0)
		got += (size_t)n;
	out[got] = 0;
	status = th_proc_wait(&p);
	if (status != 0 || out[0])
		fail_msg("promtool check metrics: status %d: %s\n--- page:\n%s", status, out, text);
}

static void spawn_to(struct th_proc *p, const char *const argv[], const char *out_path)
{
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = out_path };

	assert_int_equal(th_spawn(p, argv, &o), 0);
}

static bool prom_ready(void *arg)
{
	char url[64];
	struct buf b;
	long status;

	(void)arg;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/-/ready", fx.prom_port);
	status = get(url, &b);
	free(b.p);
	return status == 200;
}

/* ---- the test ---- */

static void scrape(void **state)
{
	const char *argv[] = { vmactd_path, "--config", fx.cfg, NULL };
	char text[1024], meta[1024], msg[512], flag[3][192];
	const char *pargv[] = { PROMETHEUS, flag[0], flag[1], flag[2], NULL };
	const char *name = fx.g.name;
	struct buf page;
	char promql[256];
	char *at;
	double t0 = th_now_s();

	(void)state;
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		 "<vmact:cpu min='1' max='4'/>"
		 "<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>"
		 "<vmact:compute-unit cpu='250m' memory='256Mi'/>"
		 "</vmact:autoscaling>");
	if (tg_start(fx.vc, PREFIX, meta, &fx.g, msg, sizeof(msg)) < 0)
		fail_msg("guest: %s", msg);
	name = fx.g.name;

	/* vmactd: its defaults, isolated from the host's other domains and
	 * pins; the metrics endpoint on a free port (its log names it). */
	snprintf(text, sizeof(text),
		 "{\"libvirt\":{\"name_prefix\":\"%s\"},"
		 "\"sampler\":{\"pin_root\":\"%s\"},"
		 "\"metrics\":{\"listen\":\"127.0.0.1:0\"}}",
		 name, fx.pins);
	assert_int_equal(th_write_file(fx.cfg, text), 0);
	spawn_to(&fx.daemon, argv, fx.log);
	if (!th_wait_until(NULL, log_has, "ready: managing 1 VM",
			   (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC))) {
		dump("vmactd", fx.log);
		fail_msg("vmactd did not become ready managing the guest");
	}
	{
		char *log = th_read_file(fx.log);

		assert_non_null(log);
		at = strstr(log, "metrics: serving /metrics on 127.0.0.1:0 (port ");
		assert_non_null(at);
		assert_int_equal(sscanf(at, "metrics: serving /metrics on 127.0.0.1:0 (port %u)",
					&fx.metrics_port),
				 1);
		at = strstr(log, ", cgroup ");
		assert_non_null(at);
		assert_int_equal(sscanf(at, ", cgroup %511[^,]", fx.group), 1);
		free(log);
	}

	/* Prometheus, scraping vmactd every second. */
	fx.prom_port = th_dead_port();
	assert_true(fx.prom_port > 0);
	snprintf(text, sizeof(text),
		 "global:\n"
		 "  scrape_interval: 1s\n"
		 "  scrape_timeout: 1s\n"
		 "scrape_configs:\n"
		 "  - job_name: vmactd\n"
		 "    static_configs:\n"
		 "      - targets: ['127.0.0.1:%u']\n",
		 fx.metrics_port);
	assert_int_equal(th_write_file(fx.prom_cfg, text), 0);
	snprintf(flag[0], sizeof(flag[0]), "--config.file=%s", fx.prom_cfg);
	snprintf(flag[1], sizeof(flag[1]), "--storage.tsdb.path=%s/data", fx.dir);
	snprintf(flag[2], sizeof(flag[2]), "--web.listen-address=127.0.0.1:%u", fx.prom_port);
	spawn_to(&fx.prom, pargv, fx.prom_log);
	if (!th_wait_until(NULL, prom_ready, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC))) {
		dump("prometheus", fx.prom_log);
		fail_msg("Prometheus never became ready");
	}

	/* It scrapes vmactd, and sees the VM as libvirt and its metadata
	 * describe it. */
	prom_expect(query_equals, "up{job=\"vmactd\"}", 1);
	prom_expect(query_equals, "vmact_managed_vms", 1);
	/* (The guest's boot may already have made vmactd grow it.) */
	snprintf(promql, sizeof(promql), "vmact_vm_vcpus{vm=\"%s\"}", name);
	prom_agrees(promql, live_vcpus_d, "vCPUs");
	snprintf(promql, sizeof(promql), "vmact_vm_cpu_cores{vm=\"%s\",value=\"quota\"}", name);
	prom_agrees(promql, live_quota_cores, "cores of CFS quota");
	snprintf(promql, sizeof(promql), "vmact_vm_cpu_cores{vm=\"%s\",value=\"current\"}", name);
	prom_agrees(promql, live_current_cores, "cores");
	/* Memory follows the compute units (1 CPU = 4 x 256Mi), so vmactd may
	 * have grown it: whatever it is, the page says what libvirt has. */
	snprintf(promql, sizeof(promql), "vmact_vm_memory_bytes{vm=\"%s\",value=\"current\"}",
		 name);
	prom_agrees(promql, live_mem_bytes, "bytes");
	prom_expect(query_equals, "vmact_vm_cpu_cores{vm=\"%s\",value=\"min\"}", 1, name);
	prom_expect(query_equals, "vmact_vm_cpu_cores{vm=\"%s\",value=\"max\"}", 4, name);
	prom_expect(query_equals, "vmact_vm_memory_bytes{vm=\"%s\",value=\"min\"}", 512.0 * MiB,
		    name);
	prom_expect(query_equals, "vmact_vm_memory_bytes{vm=\"%s\",value=\"max\"}", 1536.0 * MiB,
		    name);
	prom_expect(query_at_least, "vmact_vm_cpu_periods_total{vm=\"%s\"}", 1, name);
	prom_expect(query_at_least, "vmact_vm_vcpu_cpu_seconds_total{vm=\"%s\"}", 0.001, name);
	/* The reactive policy's signal: one class is 1. */
	prom_expect(query_equals, "sum(vmact_vm_cpu_class{vm=\"%s\"})", 1, name);

	/* Load: vmactd plugs a vCPU; Prometheus sees what libvirt then has. */
	if (!th_wait_until(NULL, guest_reports, NULL,
			   (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
		fail_msg("the guest did not boot");
	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	if (!th_wait_until(NULL, grown_past_one_cpu, NULL,
			   (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC))) {
		dump("vmactd", fx.log);
		fail_msg("vmactd never grew the VM past 1 CPU (vCPUs %d, quota %g)", live_vcpus(),
			 live_quota_cores());
	}
	/* Once the resize settled, the page and libvirt agree. The guest
	 * stays busy meanwhile, so whatever the host's other work makes of
	 * its figures (saturated, throttled or contended), the policy holds
	 * at least what it grew to: no shrink but in the ok class, and none
	 * within 15 s of a growth (doc/policy.md, "What a decision never
	 * does"). A quota back at 1 CPU here is that promise broken, not a
	 * busy machine. */
	snprintf(promql, sizeof(promql), "vmact_vm_vcpus{vm=\"%s\"}", name);
	assert_true(prom_agrees(promql, live_vcpus_d, "vCPUs") >= 2);
	snprintf(promql, sizeof(promql), "vmact_vm_cpu_cores{vm=\"%s\",value=\"quota\"}", name);
	if (!(prom_agrees(promql, live_quota_cores, "cores of CFS quota") > 1)) {
		dump("vmactd", fx.log);
		fail_msg("the busy VM's quota went back to %g CPU after its growth",
			 live_quota_cores());
	}
	snprintf(promql, sizeof(promql), "vmact_vm_cpu_cores{vm=\"%s\",value=\"current\"}", name);
	prom_agrees(promql, live_current_cores, "cores");
	snprintf(promql, sizeof(promql), "vmact_vm_memory_bytes{vm=\"%s\",value=\"current\"}",
		 name);
	prom_agrees(promql, live_mem_bytes, "bytes");
	prom_expect(query_at_least, "vmact_decisions_total{kind=\"cpu_up\"}", 1);
	prom_expect(query_at_least, "vmact_resizes_total{kind=\"cpu_up\"}", 1);
	prom_expect(query_at_least, "sum(vmact_hotplug_latency_seconds_count)", 1);
	prom_expect(query_at_least, "vmact_hotplug_latency_seconds_count{direction=\"inc\"}", 1);
	prom_expect(query_at_least, "sum(vmact_plugin_latency_seconds_count)", 1);
	prom_expect(query_at_least, "vmact_vm_cpu_cores{vm=\"%s\",value=\"permit\"}", 1.25, name);
	prom_expect(query_equals, "vmact_failures_total{kind=\"hotplug\"}", 0);

	/* The page with the VM on it, by promtool. */
	assert_true(vm_series_on_page(&page) > 10);
	promtool_check(page.p, page.len);
	free(page.p);
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);

	/* The guest goes: so do its series. */
	{
		virDomainPtr d = virDomainLookupByName(fx.vc, name);

		assert_non_null(d);
		assert_int_equal(virDomainDestroy(d), 0);
		virDomainFree(d);
	}
	if (!th_wait_until(NULL, vm_series_gone, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC))) {
		dump("vmactd", fx.log);
		fail_msg("the destroyed VM's series are still on vmactd's page");
	}
	prom_expect(query_equals, "vmact_managed_vms", 0);
	prom_expect(query_equals, "up{job=\"vmactd\"}", 1);

	assert_int_equal(th_proc_stop(&fx.prom, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);
	assert_int_equal(th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);
	print_message("test_metrics_scrape: %.1f s from the guest's start\n", th_now_s() - t0);
}

static int setup(void **state)
{
	int pid = (int)getpid();

	(void)state;
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/vmact-prom-XXXXXX");
	if (!mkdtemp(fx.dir))
		return -1;
	snprintf(fx.cfg, sizeof(fx.cfg), "%s/vmactd.json", fx.dir);
	snprintf(fx.log, sizeof(fx.log), "%s/vmactd.log", fx.dir);
	snprintf(fx.prom_cfg, sizeof(fx.prom_cfg), "%s/prometheus.yml", fx.dir);
	snprintf(fx.prom_log, sizeof(fx.prom_log), "%s/prometheus.log", fx.dir);
	snprintf(fx.pins, sizeof(fx.pins), "/sys/fs/bpf/vmact-prom-%d", pid);
	fx.vc = virConnectOpen("qemu:///system");
	return fx.vc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	th_proc_stop(&fx.prom, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	{
		virConnectPtr vc = virConnectOpen("qemu:///system");
		virDomainPtr d = vc && fx.g.name[0] ? virDomainLookupByName(vc, fx.g.name) : NULL;

		if (d) {
			virDomainDestroy(d);
			virDomainFree(d);
		}
		if (vc)
			virConnectClose(vc);
	}
	if (fx.g.dom) {
		virDomainFree(fx.g.dom);
		fx.g.dom = NULL;
	}
	tg_destroy(&fx.g);
	th_remove_pins(fx.pins);
	if (fx.vc)
		virConnectClose(fx.vc);
	if (!getenv("VMACT_TEST_KEEP_LOG"))
		th_rm_rf(fx.dir);
	return 0;
}

static void quiet(void *ud, virErrorPtr e)
{
	(void)ud;
	(void)e;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scrape),
	};
	char self[PATH_MAX];
	ssize_t n;

	if (geteuid() != 0) {
		printf("test_metrics_scrape: needs root (libvirt qemu:///system, BPF, cgroups)\n");
		return 1;
	}
	if (access(PROMETHEUS, X_OK) < 0 || access(PROMTOOL, X_OK) < 0) {
		printf("test_metrics_scrape: %s and %s are needed: the Debian package prometheus "
		       "(tests/host/setup-host.sh)\n",
		       PROMETHEUS, PROMTOOL);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Looking up a guest that is already gone is expected in teardown. */
	virSetErrorFunc(NULL, quiet);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	/* build[/san]/tests/integration/test_metrics_scrape -> build[/san]/vmactd */
	snprintf(vmactd_path, sizeof(vmactd_path), "%s/../../vmactd", dirname(self));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests_name("metrics", tests, setup, teardown);
}
