/* SPDX-License-Identifier: Apache-2.0 */
/* provision-bench (make bench-provision): how long vmact-groupd takes from
 * an increase to a healthy VM in service (its guest told its claim and
 * acknowledging it), for a VM taken from each standby tier and for a cold
 * boot (doc/cluster.md, "Pool lifecycle").
 *
 * One host, qemu:///system, its arbiter a standalone vmact-arbiter (root,
 * 8 CPUs and 16Gi declared so that room never decides); vmact-groupd as
 * the cluster user with its defaults, the test guest as the node image.
 * Each phase has a vmact-groupd of its own whose one group keeps one
 * standby VM of the phase's tier (none for the cold boots), so that no
 * other tier's refill boots beside the measurement. A run: wait until the
 * pool's VM is ready (and nothing else boots), then clock the increase of
 * 1 as a client sees it, from sending the request to the first
 * GET /v1/groups/G/nodes that shows the node running (polled every 5 ms);
 * then delete it and wait until it is gone. vmact-groupd's own figure
 * (in_service - requested, from its metadata) is shown beside it.
 *
 * Usage: provision-bench [RUNS]  (default 10 per tier; root, make guest)
 * Ends with "ratio: X" = running-tier p50 / cold-boot p50 (client side). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"
#include "tests/lib/samples.h"
#include "tests/lib/wait.h"

#define PREFIX    "vmact-pb-"
#define LIMIT_S   300.0
#define POLL_USEC 5000

static struct {
	struct th_cluster_stack s; /* vmact-groupd itself started here (no -v) */
	char glog[128], img[128];
	char pool[64], guest[512];
	unsigned arb_port;
	virConnectPtr c;
	struct th_proc gd, ad;
} b;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "provision-bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	th_print_log_tail(b.glog, "vmact-groupd", 4000);
	th_proc_stop(&b.gd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	th_proc_stop(&b.ad, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	th_cluster_remove_domains(b.c, PREFIX);
	th_cluster_pool_remove(b.c, b.pool);
	th_cluster_stack_teardown(&b.s);
	exit(1);
}

static json_t *api(const char *method, const char *path, const char *body, long *status)
{
	return th_cluster_api(b.s.sock, method, path, body, status);
}

static bool log_has(void *needle)
{
	return th_count_in_file(b.glog, needle) > 0;
}

static bool ready(void *arg)
{
	json_t *j = api("GET", "/v1/vms", NULL, NULL);
	bool ok = json_is_true(json_object_get(j, "ready"));

	json_decref(j);
	return ok;
}

static void start_groupd(const char *tier)
{
	const char *args[] = { b.s.groupd, "-c", b.s.cfg, NULL };
	char text[8192];

	snprintf(text, sizeof(text),
		 "{\"api\":{\"socket\":\"%s\"},\"metrics\":{\"listen\":\"\"},"
		 "\"libvirt\":{\"name_prefix\":\"" PREFIX "\"},"
		 "\"hosts\":[{\"name\":\"h1\",\"uri\":\"qemu:///system\",\"storage_pool\":\"%s\","
		 "\"arbiter\":{\"url\":\"http://127.0.0.1:%u\",\"secret_file\":\"%s\"}}],"
		 "\"groups\":[{\"id\":\"b\",\"max\":1,\"hosts\":[\"h1\"],"
		 "\"template\":{\"domain_type\":\"qemu\",\"vcpus\":1,\"memory\":\"256Mi\","
		 "\"kernel\":\"%s/vmlinuz\",\"initrd\":\"%s/initrd.img\","
		 "\"cmdline\":\"console=ttyS0 loglevel=1 panic=-1\",\"base_volume\":\"node-base.qcow2\","
		 "\"serial_log_dir\":\"%s\"},"
		 "\"claim\":{\"ack\":\"VMACT claimed\"},\"pool\":{\"%s\":%d}}]}",
		 b.s.sock, b.pool, b.arb_port, b.s.key, b.guest, b.guest, b.s.logs,
		 tier ? tier : "running", tier ? 1 : 0);
	if (th_write_file(b.s.cfg, text) < 0)
		die("cannot write the configuration");
	unlink(b.glog);
	if (th_cluster_spawn(&b.gd, &b.s.u, args, b.glog) < 0)
		die("cannot start vmact-groupd");
	if (!th_wait_daemon(&b.gd, log_has, "serving on", 60) ||
	    !th_wait_daemon(&b.gd, ready, NULL, 60))
		die("vmact-groupd did not become ready");
}

/* The tier's standby VM ready and nothing booting beside it. */
static bool pool_ready(void *arg)
{
	const char *tier = arg;
	json_t *g = api("GET", "/v1/groups/b", NULL, NULL);
	json_t *t = json_object_get(json_object_get(g, "pool"), tier);
	bool ok = json_integer_value(json_object_get(t, "ready")) == 1 &&
		  json_integer_value(json_object_get(t, "starting")) == 0;

	json_decref(g);
	return ok;
}

static const char *node_state(double *served_s)
{
	static char state[32];
	json_t *j = api("GET", "/v1/groups/b/nodes", NULL, NULL);
	json_t *n = json_array_get(json_object_get(j, "nodes"), 0);

	snprintf(state, sizeof(state), "%s",
		 n ? json_string_value(json_object_get(n, "state")) : "");
	json_decref(j);
	if (served_s && !strcmp(state, "running")) {
		json_t *vms = api("GET", "/v1/vms", NULL, NULL), *v;
		size_t i;

		json_array_foreach(json_object_get(vms, "vms"), i, v) {
			if (!strcmp(json_string_value(json_object_get(v, "role")), "member"))
				*served_s = json_real_value(json_object_get(v, "in_service")) -
					    json_real_value(json_object_get(v, "requested"));
		}
		json_decref(vms);
	}
	return state;
}

static bool no_node(void *arg)
{
	json_t *j = api("GET", "/v1/groups/b/nodes", NULL, NULL);
	bool ok = j && json_array_size(json_object_get(j, "nodes")) == 0;

	json_decref(j);
	return ok;
}

/* One increase, clocked until its node runs; then it is deleted. */
static double one_run(double *served_s)
{
	json_t *j, *n;
	long st;
	double t0, t1;
	char body[512];

	t0 = th_now_s();
	j = api("POST", "/v1/groups/b/increase", "{\"delta\":1}", &st);
	json_decref(j);
	if (st != 200)
		die("increase answered %ld", st);
	while (strcmp(node_state(NULL), "running") != 0) {
		if (th_now_s() - t0 > LIMIT_S)
			die("no node in service after %.0f s", LIMIT_S);
		usleep(POLL_USEC);
	}
	t1 = th_now_s();
	node_state(served_s);
	j = api("GET", "/v1/groups/b/nodes", NULL, NULL);
	n = json_array_get(json_object_get(j, "nodes"), 0);
	snprintf(body, sizeof(body), "{\"provider_ids\":[\"%s\"]}",
		 json_string_value(json_object_get(n, "provider_id")));
	json_decref(j);
	json_decref(api("POST", "/v1/groups/b/delete-nodes", body, &st));
	if (st != 200)
		die("delete answered %ld", st);
	if (!th_wait_daemon(&b.gd, no_node, NULL, LIMIT_S))
		die("the node was not deleted");
	return t1 - t0;
}

struct phase {
	const char *name, *tier; /* tier NULL: cold boots */
	struct th_samples client, server;
};

static void run_phase(struct phase *p, unsigned runs)
{
	start_groupd(p->tier);
	for (unsigned i = 0; i < runs; i++) {
		double served = -1, t;

		if (p->tier && !th_wait_daemon(&b.gd, pool_ready, (void *)p->tier, LIMIT_S))
			die("the %s tier never got ready", p->tier);
		t = one_run(&served);
		th_samples_add(&p->client, t * 1000);
		th_samples_add(&p->server, served * 1000);
		fprintf(stderr, "  %-8s run %2u: %8.0f ms (vmact-groupd: %.0f ms)\n", p->name,
			i + 1, t * 1000, served * 1000);
	}
	if (th_proc_stop(&b.gd, SIGTERM, 60 * VMACT_USEC_PER_SEC) != 0)
		die("vmact-groupd did not stop cleanly");
	/* vmact-groupd's own account of each claim (VMACT_BENCH_VERBOSE). */
	if (getenv("VMACT_BENCH_VERBOSE")) {
		char *log = th_read_file(b.glog), *line;

		for (line = log ? strtok(log, "\n") : NULL; line; line = strtok(NULL, "\n"))
			if (strstr(line, "in service on"))
				fprintf(stderr, "    %s\n", line);
		free(log);
	}
	/* The standby VM left by the phase goes with the next phase's set-up. */
	th_cluster_remove_domains(b.c, PREFIX);
}

int main(int argc, char **argv)
{
	struct phase phases[] = {
		{ .name = "running", .tier = "running" },
		{ .name = "paused", .tier = "paused" },
		{ .name = "saved", .tier = "saved" },
		{ .name = "cold", .tier = NULL },
	};
	unsigned runs = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
	char real[PATH_MAX];

	if (!runs)
		runs = 10;
	tg_quiet_libvirt();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (getuid() != 0)
		die("run as root (it starts an arbiter and makes a storage pool)");
	if (!realpath(tg_guest_dir(), real) || strlen(real) >= sizeof(b.guest))
		die("no guest in %s (make guest)", tg_guest_dir());
	snprintf(b.guest, sizeof(b.guest), "%s", real);
	if (th_cluster_stack_init(&b.s, "vmact-pb") < 0)
		die("no user " TH_CLUSTER_USER " (tests/host/setup-host.sh), vmact-groupd and "
		    "vmact-arbiter not built, or no scratch directory");
	snprintf(b.glog, sizeof(b.glog), "%s/groupd.log", b.s.dir);
	snprintf(b.img, sizeof(b.img), "%s/img", b.s.dir);
	b.c = virConnectOpen("qemu:///system");
	snprintf(b.pool, sizeof(b.pool), "vmact-pb-%d", (int)getpid());
	if (!b.c || th_cluster_pool(b.c, NULL, b.pool, b.img) < 0)
		die("cannot make the storage pool");
	b.arb_port = th_dead_port();
	{
		char listen[64];
		const char *argv2[] = { b.s.arbiter, "--listen", listen,        "--cpu", "8",
					"--memory",  "16Gi",     "--lease-key", b.s.key, NULL };
		const struct th_spawn_opts o = { .out = TH_OUT_FILE,
						 .err = TH_OUT_FILE,
						 .out_path = b.s.alog };

		snprintf(listen, sizeof(listen), "127.0.0.1:%u", b.arb_port);
		if (th_spawn(&b.ad, argv2, &o) < 0)
			die("cannot start vmact-arbiter");
	}
	printf("provision-bench: %u runs per tier; increase -> node in service (ms), client side\n",
	       runs);
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		run_phase(&phases[i], runs);
	printf("\n%-10s %5s %10s %10s %18s\n", "tier", "runs", "p50", "p90", "vmact-groupd p50");
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		printf("%-10s %5zu %10.0f %10.0f %18.0f\n", phases[i].name, phases[i].client.n,
		       th_samples_pct(&phases[i].client, 50), th_samples_pct(&phases[i].client, 90),
		       th_samples_pct(&phases[i].server, 50));
	th_proc_stop(&b.ad, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	th_cluster_remove_domains(b.c, PREFIX);
	th_cluster_pool_remove(b.c, b.pool);
	virConnectClose(b.c);
	th_cluster_stack_teardown(&b.s);
	printf("ratio: %.3f\n",
	       th_samples_pct(&phases[0].client, 50) / th_samples_pct(&phases[3].client, 50));
	return 0;
}
