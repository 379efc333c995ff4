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
#include "tests/lib/cg-limit.h"
#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/prom.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-prom"
#define PROMTOOL     "/usr/bin/promtool"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S      120.0
#define MiB          (1024ULL * 1024ULL)

static struct {
	virConnectPtr vc;
	struct tg_guest g;
	struct th_vmactd d;
	struct th_prom prom;
	unsigned metrics_port;
	char group[256]; /* the VM's cpu cgroup, as vmactd logged it */
} fx;

/* A page of vmactd's metrics (body malloc'd). */
struct buf {
	char *p;
	size_t len;
};

/* ---- Prometheus's API ---- */

/* The value of a query that yields exactly one series; false otherwise. */
static bool query_one(const char *promql, double *v)
{
	return th_prom_query_one(&fx.prom, promql, v);
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
	return tg_live_vcpus(fx.g.name);
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
	long quota, period;

	if (th_cg_limit(fx.group, &quota, &period) < 0)
		return -1;
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
	(void)arg;
	return tg_booted(&fx.g);
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
	page->p = th_cluster_http_get(url);
	page->len = page->p ? strlen(page->p) : 0;
	if (!page->p || net_prom_parse(page->p, page->len, &t, NULL) < 0)
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

/* ---- the test ---- */

static void scrape(void **state)
{
	char meta[1024], msg[512];
	struct th_prom_job job = { "vmactd", 0 };
	const char *name = fx.g.name;
	struct buf page;
	char promql[256];
	double t0 = th_now_s();

	(void)state;
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS
		 "</vmact:autoscaling>");
	if (tg_start(fx.vc, PREFIX, meta, &fx.g, msg, sizeof(msg)) < 0)
		fail_msg("guest: %s", msg);
	name = fx.g.name;

	/* vmactd: its defaults, isolated from the host's other domains and
	 * pins; the metrics endpoint on a free port (its log names it). */
	assert_int_equal(th_vmactd_config(&fx.d, name,
					  "{\"metrics\":{\"listen\":\"127.0.0.1:0\"}}"),
			 0);
	assert_int_equal(th_vmactd_spawn(&fx.d, NULL), 0);
	if (!th_vmactd_wait_log(&fx.d, "ready: managing 1 VM", LIMIT_BOOT_S))
		fail_msg("vmactd did not become ready managing the guest");
	fx.metrics_port = th_log_port(fx.d.log, "metrics: serving /metrics on 127.0.0.1:0");
	assert_true(fx.metrics_port > 0);
	assert_int_equal(th_log_vm_cgroup(fx.d.log, fx.group, sizeof(fx.group)), 0);

	/* Prometheus, scraping vmactd every second. */
	job.port = fx.metrics_port;
	if (th_prom_start(&fx.prom, fx.d.dir, &job, 1, LIMIT_S) < 0)
		fail_msg("Prometheus never became ready");

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
		dump("vmactd", fx.d.log);
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
		dump("vmactd", fx.d.log);
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
		dump("vmactd", fx.d.log);
		fail_msg("the destroyed VM's series are still on vmactd's page");
	}
	prom_expect(query_equals, "vmact_managed_vms", 0);
	prom_expect(query_equals, "up{job=\"vmactd\"}", 1);

	assert_int_equal(th_prom_stop(&fx.prom), 0);
	assert_int_equal(th_vmactd_stop(&fx.d), 0);
	print_message("test_metrics_scrape: %.1f s from the guest's start\n", th_now_s() - t0);
}

static int setup(void **state)
{
	(void)state;
	if (th_vmactd_init(&fx.d, PREFIX, &fx.g) < 0)
		return -1;
	fx.vc = virConnectOpen("qemu:///system");
	return fx.vc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	th_prom_stop(&fx.prom);
	th_vmactd_teardown(&fx.d);
	if (fx.vc)
		virConnectClose(fx.vc);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scrape),
	};

	if (!th_root_test("test_metrics_scrape", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	if (access(TH_PROM_PROGRAM, X_OK) < 0 || access(PROMTOOL, X_OK) < 0) {
		printf("test_metrics_scrape: %s and %s are needed: the Debian package prometheus "
		       "(tests/host/setup-host.sh)\n",
		       TH_PROM_PROGRAM, PROMTOOL);
		return 1;
	}
	/* Looking up a guest that is already gone is expected in teardown. */
	tg_quiet_libvirt();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests_name("metrics", tests, setup, teardown);
}
