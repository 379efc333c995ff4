/* SPDX-License-Identifier: Apache-2.0 */
/* The Grafana dashboard monitoring/vmact-dashboard.json (doc/metrics.md,
 * "Alerts and dashboard") against a real scrape: Debian's Prometheus
 * scrapes, every second, a real vmactd managing a real TCG guest (with a
 * balloon reporting its memory, its embedded arbiter listening for leases)
 * and a real vmact-groupd (as the cluster user, one group of none on
 * qemu:///system, vmactd as its host's arbiter). Once the guest's load has
 * made vmactd resize it, every target of every panel, its variables given
 * their "All" value and $__rate_interval 10m (the whole run: a latency's
 * quantile over a window without a resize in it is rightly empty), is
 * evaluated through
 * Prometheus's /api/v1/query: none may fail, and each must return at least
 * one series with a number (not NaN). The dashboard must also have a panel
 * for each family both pages export.
 *
 * After the resize the guest is put in recommend mode, so that the
 * recommendation panel (vmact_vm_recommended_*) has its series too.
 *
 * Conditions are awaited with generous safety limits; nothing is timed. */
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "hotplug/hotplug.h"
#include "net/prom-text.h"
#include "tests/lib/cluster.h"
#include "tests/lib/ctl.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/prom.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-dash"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S      120.0
/* A host shared with other work can keep the busy guest "contended" (its
 * vCPUs waiting for host CPUs) for a while before it is "saturated". */
#define LIMIT_LOAD_S 400.0

static struct {
	virConnectPtr vc;
	struct th_cluster_user u;
	struct tg_guest g;
	struct th_vmactd d; /* its directory holds groupd's and Prometheus's files too */
	struct th_prom prom;
	struct th_proc groupd;
	char groupd_path[PATH_MAX];
	char gcfg[128], glog[128], key[128], sock[128];
	char tpl[128], pool[64], img[128];
	unsigned metrics_port, arbiter_port, groupd_port;
	json_t *dash;
} fx;

/* ---- Prometheus ---- */

/* The instant query's answer: its result array (new reference), or NULL
 * with the error in err. */
static json_t *query(const char *promql, char *err, size_t errlen)
{
	return th_prom_query(&fx.prom, promql, err, errlen);
}

/* Series in the result with a number for a value (NaN is no data). */
static size_t series_with_numbers(json_t *res)
{
	size_t i, n = 0;
	json_t *s;

	json_array_foreach(res, i, s) {
		const char *v = json_string_value(json_array_get(json_object_get(s, "value"), 1));

		n += v && !isnan(strtod(v, NULL));
	}
	return n;
}

/* A target's expression with the dashboard's variables as Grafana fills
 * them with "All" (.*), and a rate interval as long as the run. */
static void substitute(const char *expr, char *out, size_t len)
{
	static const struct {
		const char *from, *to;
	} vars[] = { { "$__rate_interval", "10m" },
		     { "$instance", ".*" },
		     { "$groupd", ".*" },
		     { "$vm", ".*" } };
	size_t o = 0;

	while (*expr && o + 1 < len) {
		size_t i;

		for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
			if (!strncmp(expr, vars[i].from, strlen(vars[i].from)))
				break;
		if (i < sizeof(vars) / sizeof(vars[0])) {
			o += (size_t)snprintf(out + o, len - o, "%s", vars[i].to);
			expr += strlen(vars[i].from);
		} else {
			out[o++] = *expr++;
		}
	}
	out[o < len ? o : len - 1] = 0;
}

struct eval {
	bool active_only; /* leave out the recommend mode's targets */
	unsigned targets, empty;
	char first[3072]; /* the first target without data, and why */
};

/* Evaluates every target of every panel; true when all have data. */
static bool all_targets_have_data(void *arg)
{
	struct eval *e = arg;
	json_t *panels = json_object_get(fx.dash, "panels"), *p;
	size_t i;

	e->targets = e->empty = 0;
	e->first[0] = 0;
	json_array_foreach(panels, i, p) {
		json_t *targets = json_object_get(p, "targets"), *t;
		size_t j;

		json_array_foreach(targets, j, t) {
			char expr[2048], err[256] = "";
			json_t *res;

			substitute(json_string_value(json_object_get(t, "expr")) ?: "", expr,
				   sizeof(expr));
			if (e->active_only && strstr(expr, "vmact_vm_recommended_"))
				continue;
			e->targets++;
			res = query(expr, err, sizeof(err));
			if (res && series_with_numbers(res) > 0) {
				json_decref(res);
				continue;
			}
			e->empty++;
			if (!e->first[0])
				snprintf(e->first, sizeof(e->first), "panel \"%s\": %s: %s",
					 json_string_value(json_object_get(p, "title")) ?: "?",
					 expr, res ? "no series with a number" : err);
			json_decref(res);
		}
	}
	return e->targets > 0 && e->empty == 0;
}

/* Every family of the page at url is named in some panel's target. */
static void every_family_has_a_panel(const char *url, const char *what)
{
	char *page = th_cluster_http_get(url), *all;
	struct net_prom_text *t = NULL;
	json_t *panels = json_object_get(fx.dash, "panels"), *p;
	size_t i, len = 0;

	assert_non_null(page);
	assert_int_equal(net_prom_parse(page, strlen(page), &t, NULL), 0);
	/* Every target's expression, end to end. */
	all = calloc(1, 1);
	json_array_foreach(panels, i, p) {
		json_t *targets = json_object_get(p, "targets"), *tg;
		size_t j;

		json_array_foreach(targets, j, tg) {
			const char *e = json_string_value(json_object_get(tg, "expr")) ?: "";
			char *n = realloc(all, len + strlen(e) + 2);

			assert_non_null(n);
			all = n;
			len += (size_t)sprintf(all + len, "%s\n", e);
		}
	}
	for (size_t f = 0; f < t->n_families; f++)
		if (!strstr(all, t->families[f].name))
			fail_msg("%s's family %s has no panel in the dashboard", what,
				 t->families[f].name);
	print_message("%s: %zu families, each in a panel\n", what, t->n_families);
	net_prom_text_free(t);
	free(all);
	free(page);
}

/* ---- the daemons ---- */

/* Resizes as Prometheus has scraped them (the hotplug latency's count,
 * every direction), -1 while it has none. The load's resize is awaited
 * there, not in vmactd's log: the boot's resizes may come before
 * Prometheus's first scrape, and a rate() over a counter that never
 * changed in its window is no data. */
static double scraped_resizes(void)
{
	char err[256];
	json_t *res = query("sum(vmact_hotplug_latency_seconds_count)", err, sizeof(err));
	const char *v = json_string_value(
		json_array_get(json_object_get(json_array_get(res, 0), "value"), 1));
	double n = v ? strtod(v, NULL) : -1;

	json_decref(res);
	return n;
}

static double resizes_before;

static bool resized_again(void *arg)
{
	(void)arg;
	return scraped_resizes() > resizes_before;
}

static bool resizes_scraped(void *arg)
{
	(void)arg;
	return scraped_resizes() >= 0;
}

static bool groupd_log_has(void *needle)
{
	return th_count_in_file(fx.glog, needle) > 0;
}

static void start_vmactd(void)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"listen\":\"127.0.0.1:0\",\"lease_key\":\"%s\"},"
		 "\"control\":{\"state_dir\":\"%s\"},"
		 "\"metrics\":{\"listen\":\"127.0.0.1:0\"}}",
		 fx.key, fx.d.dir);
	assert_int_equal(th_vmactd_config(&fx.d, fx.g.name, text), 0);
	assert_int_equal(th_vmactd_spawn(&fx.d, NULL), 0);
	if (!th_vmactd_wait_log(&fx.d, "ready: managing 1 VM", LIMIT_BOOT_S))
		fail_msg("vmactd did not become ready managing the guest");
	fx.metrics_port = th_log_port(fx.d.log, "metrics: serving /metrics");
	fx.arbiter_port = th_log_port(fx.d.log, "arbiter: in-process, and listening");
	assert_true(fx.metrics_port > 0 && fx.arbiter_port > 0);
}

static void start_groupd(void)
{
	const char *args[] = { fx.groupd_path, "-c", fx.gcfg, NULL };
	char guest[PATH_MAX], kernel[PATH_MAX + 16], initrd[PATH_MAX + 16], url[64];
	json_t *doc;
	char *text;

	assert_non_null(realpath(tg_guest_dir(), guest));
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", guest);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", guest);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", fx.arbiter_port);
	/* One group of none (min 0, no standby pool): every family has its
	 * series, no VM is booted. */
	doc = json_pack("{s:{s:s},s:{s:s},s:{s:s},s:[{s:s,s:s,s:s,s:{s:s,s:s}}],"
			"s:[{s:s,s:i,s:[s],s:{s:s,s:i,s:s,s:s,s:s,s:s,s:s}}]}",
			"api", "socket", fx.sock, "metrics", "listen", "127.0.0.1:0", "libvirt",
			"name_prefix", PREFIX "-g-", "hosts", "name", "h1", "uri", "qemu:///system",
			"storage_pool", fx.pool, "arbiter", "url", url, "secret_file", fx.key,
			"groups", "id", "dash", "max", 2, "hosts", "h1", "template", "domain_type",
			"qemu", "vcpus", 1, "memory", "256Mi", "kernel", kernel, "initrd", initrd,
			"cmdline", "console=ttyS0 loglevel=1 panic=-1", "base_volume",
			"node-base.qcow2");
	assert_non_null(doc);
	text = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	assert_int_equal(th_write_file(fx.gcfg, text), 0);
	free(text);
	assert_int_equal(chmod(fx.gcfg, 0644), 0);
	assert_int_equal(th_cluster_spawn(&fx.groupd, &fx.u, args, fx.glog), 0);
	if (!th_wait_daemon(&fx.groupd, groupd_log_has, "metrics on", LIMIT_S)) {
		th_print_log_tail(fx.glog, "vmact-groupd", 4000);
		fail_msg("vmact-groupd did not start");
	}
	fx.groupd_port = th_log_port(fx.glog, "metrics on");
	assert_true(fx.groupd_port > 0);
}

static void start_prometheus(void)
{
	const struct th_prom_job jobs[] = { { "vmactd", fx.metrics_port },
					    { "vmact-groupd", fx.groupd_port } };

	if (th_prom_start(&fx.prom, fx.d.dir, jobs, 2, LIMIT_S) < 0)
		fail_msg("Prometheus never became ready");
}

/* ---- the test ---- */

/* The guest put in recommend mode through vmactd's control API
 * (doc/control-api.md, "Recommend mode"), so that the recommendation's
 * families have a series: a VM in active mode has none. */
static void set_recommend_mode(void)
{
	char path[256], msg[512];

	snprintf(path, sizeof(path), "/v1/vms/%s/bounds", fx.g.name);
	if (th_ctl_post(fx.d.sock, path, "{\"mode\":\"recommend\"}", msg, sizeof(msg)) != 200)
		fail_msg("%s", msg);
}

static void dashboard(void **state)
{
	char meta[1024], msg[512], url[64];
	struct eval e = { 0 };

	(void)state;
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS
		 "</vmact:autoscaling>");
	assert_int_equal(tg_balloon_template(fx.tpl), 0);
	if (tg_start_template(fx.vc, PREFIX, meta, fx.tpl, NULL, &fx.g, msg, sizeof(msg)) < 0)
		fail_msg("guest: %s", msg);
	start_vmactd();
	start_groupd();
	start_prometheus();

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", fx.metrics_port);
	every_family_has_a_panel(url, "vmactd");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", fx.groupd_port);
	every_family_has_a_panel(url, "vmact-groupd");

	/* Load: a decision, a resize and its scheduler request, so that the
	 * latencies have something to show. The resize waited for is the
	 * memory's: on a busy host the idle guest's CPU may already have been
	 * plugged up to what the arbiter permits (CI once saw it asking 2250m,
	 * permitted 1750m, its two vCPUs already there, and no plug to come),
	 * whereas its memory stays at its minimum until it allocates. */
	if (!th_wait_until(NULL, tg_booted, &fx.g, (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
		fail_msg("the guest did not boot");
	if (!th_wait_until(NULL, resizes_scraped, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("Prometheus has no vmact_hotplug_latency_seconds_count of vmactd");
	resizes_before = scraped_resizes();
	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	assert_int_equal(tg_cmd(&fx.g, "alloc 300"), 0);
	if (!th_vmactd_wait(&fx.d, resized_again, NULL, LIMIT_LOAD_S))
		fail_msg("vmactd never resized the busy guest");
	/* Every panel of a VM in active mode first (the VM still resizing:
	 * a quota change has no hotplug latency, a vCPU plug has), then
	 * recommend mode, the busy guest still deciding: the recommendation
	 * panel's series. */
	e.active_only = true;
	if (!th_wait_until(NULL, all_targets_have_data, &e,
			   (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("%u of %u dashboard targets return no data; the first: %s", e.empty,
			 e.targets, e.first);
	set_recommend_mode();
	e.active_only = false;
	if (!th_wait_until(NULL, all_targets_have_data, &e,
			   (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("%u of %u dashboard targets return no data; the first: %s", e.empty,
			 e.targets, e.first);
	print_message("every one of the dashboard's %u targets returns data\n", e.targets);
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);
}

static int setup(void **state)
{
	int pid = (int)getpid();
	const char *top = getenv("VMACT_TOP");
	char path[PATH_MAX];

	(void)state;
	if (th_cluster_user(&fx.u) < 0) {
		fprintf(stderr, "no user " TH_CLUSTER_USER " (run tests/host/setup-host.sh)\n");
		return -1;
	}
	if (th_vmactd_init(&fx.d, PREFIX, &fx.g) < 0 ||
	    th_build_prog("vmact-groupd", fx.groupd_path, sizeof(fx.groupd_path)) < 0) {
		fprintf(stderr, "test_dashboard: vmactd or vmact-groupd not built\n");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/monitoring/vmact-dashboard.json",
		 top && top[0] ? top : ".");
	fx.dash = json_load_file(path, 0, NULL);
	if (!fx.dash) {
		fprintf(stderr, "cannot read %s\n", path);
		return -1;
	}
	/* The cluster user reads its configuration and the key in the
	 * fixture's directory (0755). */
#define P(f, name) snprintf(fx.f, sizeof(fx.f), "%s/" name, fx.d.dir)
	P(gcfg, "groupd.json");
	P(glog, "groupd.log");
	P(key, "lease.key");
	P(tpl, "domain.xml.in");
	P(img, "img");
#undef P
	snprintf(path, sizeof(path), "%s/api", fx.d.dir);
	if (mkdir(path, 0700) < 0 || chown(path, fx.u.uid, fx.u.gid) < 0)
		return -1;
	snprintf(fx.sock, sizeof(fx.sock), "%s/api/api.sock", fx.d.dir);
	snprintf(fx.pool, sizeof(fx.pool), "vmact-dash-%d", pid);
	if (th_cluster_key(&fx.u, fx.key) < 0) {
		fprintf(stderr, "test_dashboard: cannot make the lease key %s\n", fx.key);
		return -1;
	}
	fx.vc = virConnectOpen("qemu:///system");
	if (!fx.vc || th_cluster_pool(fx.vc, NULL, fx.pool, fx.img) < 0) {
		fprintf(stderr, "test_dashboard: %s\n",
			fx.vc ? "cannot make the storage pool" : "no libvirtd on qemu:///system");
		return -1;
	}
	/* th_cluster_spawn logs into a file the user may write. */
	if (th_write_file(fx.glog, "") < 0 || chown(fx.glog, fx.u.uid, fx.u.gid) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	th_prom_stop(&fx.prom);
	th_proc_stop(&fx.groupd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	th_vmactd_stop(&fx.d);
	if (fx.vc) {
		th_cluster_remove_domains(fx.vc, PREFIX "-g-");
		th_cluster_pool_remove(fx.vc, fx.pool);
	}
	th_vmactd_teardown(&fx.d);
	if (fx.vc)
		virConnectClose(fx.vc);
	json_decref(fx.dash);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dashboard),
	};

	if (!th_root_test("test_dashboard", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	if (access(TH_PROM_PROGRAM, X_OK) < 0) {
		printf("test_dashboard: %s is needed: the Debian package prometheus "
		       "(tests/host/setup-host.sh)\n",
		       TH_PROM_PROGRAM);
		return 1;
	}
	tg_quiet_libvirt();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests_name("dashboard", tests, setup, teardown);
}
