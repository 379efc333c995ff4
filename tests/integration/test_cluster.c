/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd (doc/cluster.md) on two libvirt hosts of this machine,
 * with the test guest as the node image:
 *
 *   h1  qemu:///system, its arbiter vmactd's embedded one (listening,
 *       with a lease key), which also scales a test guest of its own
 *   h2  the vmact-cluster user's qemu:///session, its arbiter a
 *       standalone vmact-arbiter run as that user
 *
 * vmact-groupd runs as vmact-cluster (never root), with the defaults but
 * for what each case is about; its API is driven with curl's library and
 * libvirt and the arbiters are looked at directly. The cases, in order:
 *
 *   cluster_bad_config   --check refuses bad files naming the key
 *   cluster_freeze       a moving lease at vmactd's arbiter freezes the
 *                        VM it scales: "frozen" once idle, no resize
 *                        for a load that would grow it; the mark
 *                        cleared, it grows
 *   cluster_scale        a group 0 -> 2 -> 1: VMs really booted, told
 *                        their claim, destroyed with their overlay
 *   cluster_tiers        one VM taken from each standby tier (running,
 *                        paused, saved) and the provisioning histogram
 *   cluster_unhealthy    a VM that never becomes healthy: destroyed,
 *                        reported (log, metric, the node's error),
 *                        replaced (booted again)
 *   cluster_agent        health kind agent: the guest's real qemu-ga
 *                        answers, the VM goes into service; the same
 *                        guest with its agent kept off never counts as
 *                        healthy (BOOT_TIMEOUT)
 *   cluster_full_host    h1 full at its arbiter: the member goes to h2
 *   cluster_permit       Permit waits (ManualApproval): listed, allowed,
 *                        rejected (the reservation given back)
 *   cluster_concurrent   concurrent increases while vmactd grows its VM:
 *                        the ledger never promises more than its
 *                        watermark
 *   cluster_kill_restart vmact-groupd SIGKILLed mid-increase: no VM
 *                        lost, none orphaned, the boot waits resumed
 *   cluster_lease_expiry its leases come back to the arbiter when it
 *                        dies, and are taken again when it returns
 *   cluster_metrics      the page passes promtool
 *
 * Guests boot side by side; every wait is for a state with a generous
 * safety limit, nothing is timed. VMACT_TEST_ONLY=NAME runs one case. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "cluster/host/host.h"
#include "shared/http-call.h"
#include "shared/keyfile.h"
#include "shared/lease.h"
#include "tests/lib/cluster.h"
#include "tests/lib/ctl.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define USER         "vmact-cluster"
#define PREFIX       "vmact-clt-"
#define GROWER       "vmact-clt-grow"
#define LIMIT_BOOT_S 240.0
#define LIMIT_S      60.0
#define MiB          (1024ULL * 1024)

static struct {
	struct th_cluster_stack s;
	struct th_vmactd d; /* h1's arbiter, scaling the grower */
	char cfg_short[128];
	char arb2[108];
	char sysimg[128], sesimg[128];
	char sys_pool[64], ses_pool[64], ses_uri[384];
	unsigned vmactd_port;
	struct th_proc ad;
	virConnectPtr sys, ses;
	struct cl_host *h1, *h2;
	struct tg_guest grower;
	bool have_grower;
} fx;

/* ---- small helpers ---- */

static int run(const char *const argv[])
{
	struct th_proc p = { 0 };
	const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_INHERIT };

	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	return th_proc_wait(&p);
}

/* ---- the API ---- */

struct want {
	const char *group;
	unsigned running; /* nodes in state running */
	unsigned total;   /* nodes at all */
};

static bool nodes_are(void *arg)
{
	const struct want *w = arg;
	json_t *n = th_cluster_stack_nodes(&fx.s, w->group), *it;
	unsigned running = 0;
	size_t i;
	bool ok;

	json_array_foreach(n, i, it)
		running += strcmp(json_string_value(json_object_get(it, "state")), "running") == 0;
	ok = running == w->running && json_array_size(n) == w->total;
	json_decref(n);
	return ok;
}

static void wait_nodes(const char *group, unsigned running, unsigned total, double limit)
{
	struct want w = { group, running, total };

	if (!th_wait_daemon(&fx.s.gd, nodes_are, &w, limit)) {
		json_t *n = th_cluster_stack_nodes(&fx.s, group);
		char *text = json_dumps(n, JSON_INDENT(1));

		json_decref(n);
		th_cluster_stack_fail(&fx.s, "group %s never had %u node(s) running of %u: %s",
				      group, running, total, text);
	}
}

static json_t *group_doc(const char *group)
{
	char path[256];

	snprintf(path, sizeof(path), "/v1/groups/%s", group);
	return th_cluster_stack_api(&fx.s, "GET", path, NULL, NULL);
}

/* Every VM vmact-groupd knows (array, owned), never NULL. */
static json_t *all_vms(void)
{
	json_t *j = th_cluster_stack_api(&fx.s, "GET", "/v1/vms", NULL, NULL),
	       *v = json_incref(json_object_get(j, "vms"));

	json_decref(j);
	return v ? v : json_array();
}

static void delete_all(const char *group)
{
	th_cluster_stack_delete_all(&fx.s, group);
	wait_nodes(group, 0, 0, LIMIT_S);
}

/* ---- libvirt ---- */

static virConnectPtr conn_of(const char *host)
{
	return strcmp(host, "h1") == 0 ? fx.sys : fx.ses;
}

static const char *pool_of(const char *host)
{
	return strcmp(host, "h1") == 0 ? fx.sys_pool : fx.ses_pool;
}

static bool domain_exists(const char *host, const char *uuid)
{
	virDomainPtr d = virDomainLookupByUUIDString(conn_of(host), uuid);

	if (!d)
		return false;
	virDomainFree(d);
	return true;
}

static int domain_state(const char *host, const char *uuid, bool *has_save)
{
	virDomainPtr d = virDomainLookupByUUIDString(conn_of(host), uuid);
	int state = -1, reason;

	if (!d)
		return -1;
	virDomainGetState(d, &state, &reason, 0);
	*has_save = virDomainHasManagedSaveImage(d, 0) == 1;
	virDomainFree(d);
	return state;
}

static bool volume_exists(const char *host, const char *name)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(conn_of(host), pool_of(host));
	virStorageVolPtr v;
	char vol[128];

	assert_non_null(p);
	virStoragePoolRefresh(p, 0);
	snprintf(vol, sizeof(vol), "%s.qcow2", name);
	v = virStorageVolLookupByName(p, vol);
	virStoragePoolFree(p);
	if (!v)
		return false;
	virStorageVolFree(v);
	return true;
}

/* Names of our domains on a host (array of strings, owned). */
static json_t *our_domains(const char *host)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(conn_of(host), &doms, 0);
	json_t *out = json_array();

	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);

		if (strncmp(name, PREFIX, strlen(PREFIX)) == 0 && strcmp(name, fx.grower.name) != 0)
			json_array_append_new(out, json_string(name));
		virDomainFree(doms[i]);
	}
	free(doms);
	return out;
}

/* Our overlay volumes on a host (array of names without .qcow2, owned). */
static json_t *our_volumes(const char *host)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(conn_of(host), pool_of(host));
	virStorageVolPtr *vols = NULL;
	json_t *out = json_array();
	int n;

	virStoragePoolRefresh(p, 0);
	n = virStoragePoolListAllVolumes(p, &vols, 0);
	for (int i = 0; i < n; i++) {
		const char *name = virStorageVolGetName(vols[i]);

		if (strncmp(name, PREFIX, strlen(PREFIX)) == 0)
			json_array_append_new(out, json_stringn(name, strlen(name) - 6));
		virStorageVolFree(vols[i]);
	}
	free(vols);
	virStoragePoolFree(p);
	return out;
}

/* The serial log of a node says its claim arrived: acknowledged, and
 * the guest's status since says so. */
static bool guest_claimed(const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s.log", fx.s.logs, name);
	/* (The serial line ends in "\r\n".) The guest answers the claim on
	 * its virtio port, which is what makes the node in service, and says
	 * so on its console after: on a busy host the console's line can
	 * reach the log after the API shows the node (a loaded run's "no node
	 * came from the saved tier" whose groupd log had it in service). */
	return TH_WAIT(NULL, th_count_in_file(path, "VMACT claimed\r") > 0, TH_SAFETY_USEC) &&
	       TH_WAIT(NULL, th_count_in_file(path, " claimed=1\r") > 0, TH_SAFETY_USEC);
}

/* ---- the arbiters' ledgers ---- */

static struct vmact_lease_ledger ledger(struct cl_host *h)
{
	struct vmact_lease_ledger l;
	struct vmact_err err = { 0 };

	if (cl_host_ledger(h, &l, &err) < 0)
		fail_msg("ledger: %s", err.msg);
	return l;
}

static long metric(const char *name_and_labels)
{
	char url[128], *page, *p;
	long v = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", fx.s.metrics_port);
	page = th_cluster_http_get(url);
	if (page && (p = strstr(page, name_and_labels)))
		v = strtol(p + strlen(name_and_labels) + 1, NULL, 10);
	free(page);
	return v;
}

/* ---- the programs ---- */

/* A group's template: the test guest as the node image. */
static json_t *template(const char *guest, const char *reserve_cpu)
{
	char kernel[600], initrd[600];
	json_t *t;

	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", guest);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", guest);
	t = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s}", "domain_type", "qemu", "vcpus", 1,
		      "memory", "256Mi", "kernel", kernel, "initrd", initrd, "cmdline",
		      "console=ttyS0 loglevel=1 panic=-1", "base_volume", "node-base.qcow2",
		      "serial_log_dir", fx.s.logs);
	if (reserve_cpu)
		json_object_set_new(t, "reserve", json_pack("{s:s}", "cpu", reserve_cpu));
	return t;
}

static void write_config(const char *path, double lease_s)
{
	char guest[512], real[PATH_MAX], h1_url[64], h2_url[160];
	json_t *ack = json_pack("{s:s}", "ack", "VMACT claimed"), *doc, *mute;
	char *text;

	if (!realpath(tg_guest_dir(), real) || strlen(real) >= sizeof(guest))
		fail_msg("guest dir: %s", strerror(errno));
	snprintf(guest, sizeof(guest), "%s", real);
	snprintf(h1_url, sizeof(h1_url), "http://127.0.0.1:%u", fx.vmactd_port);
	snprintf(h2_url, sizeof(h2_url), "unix:%s", fx.arb2);
	/* The guest with qemu-ga kept off (tests/guest/init): the port is
	 * there, nothing answers on it. */
	mute = template(guest, "500m");
	json_object_set_new(mute, "cmdline",
			    json_string("console=ttyS0 loglevel=1 panic=-1 vmact.agent=0"));
	doc = json_pack(
		"{s:{s:s},s:{s:s},s:{s:s},s:[{s:s,s:s,s:s,s:{s:s,s:s}},{s:s,s:s,s:s,s:{s:s,s:s}}],"
		"s:[{s:s,s:i,s:[s,s],s:o,s:O,s:{s:s}},"
		"{s:s,s:i,s:[s],s:o,s:O,s:{s:i,s:i,s:i}},"
		"{s:s,s:i,s:[s],s:o,s:{s:s},s:{s:i,s:i}},"
		"{s:s,s:i,s:[s],s:o,s:O},"
		"{s:s,s:i,s:[s],s:o,s:O},"
		"{s:s,s:i,s:[s],s:o,s:O,s:{s:s}},"
		"{s:s,s:i,s:[s],s:o,s:{s:s},s:{s:i,s:i}}],"
		"s:{s:[{s:{s:{s:[{s:s}]}},s:[{s:s,s:{s:[s],s:i}}]}]}}",
		"api", "socket", fx.s.sock, "metrics", "listen", "127.0.0.1:0", "libvirt",
		"name_prefix", PREFIX, "hosts", "name", "h1", "uri", "qemu:///system",
		"storage_pool", fx.sys_pool, "arbiter", "url", h1_url, "secret_file", fx.s.key,
		"name", "h2", "uri", "qemu:///session", "storage_pool", fx.ses_pool, "arbiter",
		"url", h2_url, "secret_file", fx.s.key, "groups",
		/* scale: 0 -> 2 -> 1 over both hosts */
		"id", "scale", "max", 4, "hosts", "h1", "h2", "template", template(guest, NULL),
		"claim", ack, "labels", "vmact.dev/test", "yes",
		/* tiers: one standby VM per tier on h2 */
		"id", "tiers", "max", 3, "hosts", "h2", "template", template(guest, NULL), "claim",
		ack, "pool", "running", 1, "paused", 1, "saved", 1,
		/* sick: never healthy; the case is about its boot timeout and
		 * back-off, short so that the test does not wait five minutes */
		"id", "sick", "max", 1, "hosts", "h1", "template", template(guest, NULL), "health",
		"pattern", "NEVER SAID", "lifecycle", "boot_timeout_s", 10, "retry_backoff_s", 3,
		/* gated: waits for ManualApproval */
		"id", "gated", "max", 2, "hosts", "h2", "template", template(guest, NULL), "claim",
		ack,
		/* conc: small VMs on h1 beside vmactd's growing one */
		"id", "conc", "max", 8, "hosts", "h1", "template", template(guest, "500m"), "claim",
		ack,
		/* agent: healthy when qemu-guest-agent answers guest-ping */
		"id", "agent", "max", 1, "hosts", "h1", "template", template(guest, "500m"),
		"claim", ack, "health", "kind", "agent",
		/* mute: the same check, the agent off; a boot timeout well past
		 * the agent group's boot, a back-off past the case. Both on h1
		 * with half a CPU each, side by side beside vmactd's VM: on h2,
		 * libvirt's session path for the agent's socket is too long
		 * (doc/cluster.md, "Health"). */
		"id", "mute", "max", 1, "hosts", "h1", "template", mute, "health", "kind", "agent",
		"lifecycle", "boot_timeout_s", 20, "retry_backoff_s", 600, "scheduler", "profiles",
		"plugins", "permit", "enabled", "name", "ManualApproval", "pluginConfig", "name",
		"ManualApproval", "args", "groups", "gated", "timeoutSeconds", 120);
	json_decref(ack);
	if (!doc)
		fail_msg("the configuration does not pack");
	if (lease_s > 0)
		json_object_set_new(doc, "lifecycle", json_pack("{s:f}", "lease_s", lease_s));
	text = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	assert_int_equal(th_write_file(path, text), 0);
	free(text);
	assert_int_equal(th_cluster_stack_own(&fx.s, path, false, 0644), 0);
}

static void start_groupd(const char *cfg)
{
	if (th_cluster_stack_start_groupd(&fx.s, cfg, LIMIT_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start, or never found its VMs");
}

static void start_vmactd(void)
{
	char text[512];

	/* The host's arbiter for h1: listening, with the lease key; 4 CPUs
	 * declared (2 here x 2) so that growth and leases have room to
	 * compete in. It scales one test guest of its own. */
	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"listen\":\"127.0.0.1:0\",\"overcommit_cpu\":2,\"lease_key\":\"%s\"},"
		 "\"control\":{\"state_dir\":\"%s\"},"
		 "\"metrics\":{\"listen\":\"\"}}",
		 fx.s.key, fx.d.dir);
	assert_int_equal(th_vmactd_config(&fx.d, GROWER, text), 0);
	assert_int_equal(th_vmactd_spawn(&fx.d, NULL), 0);
	if (!th_vmactd_wait_log(&fx.d, "leases for the cluster layer", LIMIT_S))
		fail_msg("vmactd did not start its arbiter");
	fx.vmactd_port = th_log_port(fx.d.log, "(port");
	assert_true(fx.vmactd_port > 0);
}

static int start_grower(unsigned i)
{
	char msg[256];
	static const char meta[] =
		"<vmact:autoscaling xmlns:vmact='https://vmact.dev/xmlns/vmact/1' enabled='true'>"
		"<vmact:cpu min='1' max='4'/>"
		"<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>"
		"<vmact:compute-unit cpu='250m' memory='256Mi'/></vmact:autoscaling>";

	if (tg_start(fx.sys, GROWER, meta, &fx.grower, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "grower: %s\n", msg);
		return -EIO;
	}
	return 0;
}

/* ---- set-up and tear-down ---- */

static int setup(void **state)
{
	char path[PATH_MAX + 64];

	tg_quiet_libvirt();
	/* libvirt's client writes to its sockets with write(): a daemon
	 * that closed one would kill the test with SIGPIPE before its
	 * teardown removes the domains (seen once, unexplained); an error
	 * return fails the case instead. */
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (th_cluster_stack_init(&fx.s, "vmact-clt") < 0) {
		fprintf(stderr, "no user " TH_CLUSTER_USER " (run tests/host/setup-host.sh), "
				"a program not built, or no scratch directory\n");
		return -1;
	}
	if (th_vmactd_init(&fx.d, "vmact-clt", &fx.grower) < 0)
		return -1;
#define P(f, name) snprintf(fx.f, sizeof(fx.f), "%s/" name, fx.s.dir)
	P(cfg_short, "groupd-short-leases.json");
	P(arb2, "arb2/arb.sock");
	P(sysimg, "sysimg");
	P(sesimg, "sesimg");
#undef P
	if (th_cluster_stack_user_dir(&fx.s, "arb2", path, sizeof(path)) < 0)
		return -1;

	/* Each host's storage pool with the base image: h1's by root, h2's
	 * by the cluster user's own libvirtd, in a directory of its own. */
	fx.sys = virConnectOpen("qemu:///system");
	if (!fx.sys)
		return -1;
	snprintf(fx.sys_pool, sizeof(fx.sys_pool), "vmact-clt-%d", (int)getpid());
	snprintf(fx.ses_pool, sizeof(fx.ses_pool), "vmact-clt-%d", (int)getpid());
	if (th_cluster_pool(fx.sys, NULL, fx.sys_pool, fx.sysimg) < 0 ||
	    th_cluster_pool(NULL, &fx.s.u, fx.ses_pool, fx.sesimg) < 0)
		return -1;
	th_cluster_session_uri(&fx.s.u, fx.ses_uri, sizeof(fx.ses_uri));
	fx.ses = virConnectOpen(fx.ses_uri);
	if (!fx.ses)
		return -1;

	/* The guest vmactd scales boots while the rest starts. */
	fx.have_grower = start_grower(0) == 0;
	start_vmactd();
	{
		/* 8 CPUs declared: room for the tiers' standby VMs with their
		 * headroom, and for the members placed there. */
		const char *args[] = { fx.s.arbiter, "--listen", NULL,  "--cpu",
				       "8",          "--memory", "8Gi", "--lease-key",
				       fx.s.key,     "-v",       NULL };
		char listen[PATH_MAX + 8];

		snprintf(listen, sizeof(listen), "unix:%s", fx.arb2);
		args[2] = listen;
		if (th_cluster_spawn(&fx.ad, &fx.s.u, args, fx.s.alog) < 0)
			return -1;
	}
	{
		struct cl_host_cfg h1 = { .name = "h1" }, h2 = { .name = "h2" };
		struct vmact_err err = { 0 };

		snprintf(h1.arbiter_url, sizeof(h1.arbiter_url), "http://127.0.0.1:%u",
			 fx.vmactd_port);
		snprintf(h2.arbiter_url, sizeof(h2.arbiter_url), "unix:%s", fx.arb2);
		snprintf(h1.arbiter_secret, sizeof(h1.arbiter_secret), "%s", fx.s.key);
		snprintf(h2.arbiter_secret, sizeof(h2.arbiter_secret), "%s", fx.s.key);
		if (cl_host_new(&h1, &fx.h1, &err) < 0 || cl_host_new(&h2, &fx.h2, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return -1;
		}
	}
	write_config(fx.s.cfg, 0);
	/* The lease case is about the lease's length. */
	write_config(fx.cfg_short, 4);
	start_groupd(fx.s.cfg);
	return 0;
}

static int teardown(void **state)
{
	th_cluster_stack_stop(&fx.s);
	th_vmactd_stop(&fx.d);
	th_proc_stop(&fx.ad, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	th_cluster_remove_domains(fx.sys, PREFIX);
	th_cluster_remove_domains(fx.ses, PREFIX);
	th_vmactd_teardown(&fx.d);
	th_cluster_pool_remove(fx.sys, fx.sys_pool);
	th_cluster_pool_remove(fx.ses, fx.ses_pool);
	if (fx.sys)
		virConnectClose(fx.sys);
	if (fx.ses)
		virConnectClose(fx.ses);
	cl_host_free(fx.h1);
	cl_host_free(fx.h2);
	th_cluster_stack_teardown(&fx.s);
	return 0;
}

/* ---- the cases ---- */

static void cluster_bad_config(void **state)
{
	static const struct {
		const char *doc, *want;
	} bad[] = {
		{ "{\"hosts\":[]}", "hosts: a list of 1 to" },
		{ "{\"hosts\":[{\"name\":\"h1\",\"uri\":\"qemu:///system\",\"arbiter\":{\"url\":"
		  "\"http://127.0.0.1:1\",\"secret_file\":\"/k\"}}],\"groups\":[{\"id\":\"g\",\"max\":1,"
		  "\"hosts\":[\"h1\"],\"template\":{\"memory\":\"1Gi\",\"base_volume\":\"b\","
		  "\"vcpus\":\"two\"}}]}",
		  "groups[0].template.vcpus: an integer" },
		{ "{\"hosts\":[{\"name\":\"h1\",\"uri\":\"qemu:///system\",\"arbiter\":{\"url\":"
		  "\"http://127.0.0.1:1\",\"secret_file\":\"/k\"}}],\"scheduler\":{\"profiles\":"
		  "[{\"plugins\":{\"score\":{\"enabled\":[{\"name\":\"Capacity\"}]}}}]}}",
		  "scheduler.profiles[0].plugins.score.enabled[0].name: plugin 'Capacity' has no score "
		  "extension point" },
	};
	char path[PATH_MAX + 16], out[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/bad.json", fx.s.dir);
	snprintf(out, sizeof(out), "%s/bad.out", fx.s.dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { fx.s.groupd, "--check", "-c", path, NULL };
		const struct th_spawn_opts o = { .out = TH_OUT_FILE,
						 .err = TH_OUT_FILE,
						 .out_path = out };
		struct th_proc p = { 0 };

		assert_int_equal(th_write_file(path, bad[i].doc), 0);
		assert_int_equal(th_spawn(&p, argv, &o), 0);
		assert_int_equal(th_proc_wait(&p), 2);
		if (th_count_in_file(out, bad[i].want) != 1) {
			th_print_log_tail(out, "vmact-groupd --check", 2000);
			fail_msg("want: %s", bad[i].want);
		}
	}
	/* The good one, and root refused. */
	{
		const char *argv[] = { fx.s.groupd, "--check", "-c", fx.s.cfg, NULL };
		const char *run_argv[] = { fx.s.groupd, "-c", fx.s.cfg, NULL };
		const struct th_spawn_opts o = { .out = TH_OUT_FILE,
						 .err = TH_OUT_FILE,
						 .out_path = out };
		struct th_proc p = { 0 };

		assert_int_equal(th_spawn(&p, argv, &o), 0);
		assert_int_equal(th_proc_wait(&p), 0);
		assert_int_equal(th_spawn(&p, run_argv, &o), 0);
		assert_int_equal(th_proc_wait(&p), 1);
		assert_int_equal(th_count_in_file(out, "refusing to run as root"), 1);
	}
}

/* ---- vmactd's freeze for a move (doc/cluster.md, "Capacity leases") ---- */

/* One request to h1's arbiter signed as vmact-groupd signs it (its own
 * code is not used: the test speaks the interface as documented). The
 * answer's JSON, *status its status. */
static json_t *arbiter_call(const char *method, const char *path, const char *body, long *status)
{
	_cleanup_(vmact_http_answer_free) struct vmact_http_answer a = { 0 };
	_cleanup_free_ uint8_t *key = NULL;
	char sig[VMACT_LEASE_SIG_HEX + 1], url[512];
	long long ts = (long long)time(NULL);
	struct vmact_err err = { 0 };
	size_t klen = 0;

	if (vmact_keyfile_load(fx.s.key, &key, &klen, &err) < 0)
		fail_msg("lease key: %s", err.msg);
	vmact_lease_sign(key, klen, method, path, ts, body ? body : "", body ? strlen(body) : 0,
			 sig);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s?ts=%lld&sig=%s", fx.vmactd_port, path, ts,
		 sig);
	if (vmact_http_call(&(struct vmact_http_req){ .url = url,
						      .method = method,
						      .body = body,
						      .timeout_usec = 10 * VMACT_USEC_PER_SEC,
						      .answer_max = 4096 },
			    &a, &err) < 0)
		fail_msg("arbiter %s %s: %s", method, path, err.msg);
	*status = a.status;
	return a.body.data ? json_loads(a.body.data, 0, NULL) : NULL;
}

static void mark_moving(bool moving)
{
	struct vmact_lease_request lr = {
		.ns = "default", .ttl_s = 600, .existing = true, .moving = moving
	};
	_cleanup_free_ char *body = NULL;
	long status = 0;
	json_t *j;

	/* The guest's name is a lease name (tests/lib/guest.c names it). */
	assert_true(strlen(fx.grower.name) < sizeof(lr.name));
	memcpy(lr.name, fx.grower.name, strlen(fx.grower.name) + 1);
	body = vmact_lease_request_encode(&lr);
	j = arbiter_call("POST", "/v1/leases", body, &status);
	if (status != 200)
		fail_msg("moving lease: %ld", status);
	json_decref(j);
}

/* The grower's entry at the arbiter; false when there is none. */
static bool grower_entry(struct vmact_lease_pod *p)
{
	struct vmact_err err = { 0 };
	long status = 0;
	char path[128];
	json_t *j;
	bool ok;

	snprintf(path, sizeof(path), "/v1/leases/default/%s", fx.grower.name);
	j = arbiter_call("GET", path, NULL, &status);
	ok = status == 200 && vmact_lease_pod_decode(j, p, &err) == 0;

	if (status == 200 && !ok)
		fail_msg("entry: %s", err.msg);
	json_decref(j);
	return ok;
}

static bool grower_spoken_for(void *arg)
{
	struct vmact_lease_pod p;

	return grower_entry(&p) && p.agent;
}

static bool grower_frozen(void *want)
{
	struct vmact_lease_pod p;

	return grower_entry(&p) && p.moving == (want != NULL) && p.frozen == (want != NULL);
}

/* The grower as vmactd's control API shows it. */
static json_t *grower_doc(void)
{
	char msg[256];
	json_t *doc = th_ctl_vm(fx.d.sock, fx.grower.name, msg, sizeof(msg));

	if (!doc)
		fail_msg("vmactd: %s", msg);
	return doc;
}

static double doc_number(const json_t *doc, const char *path)
{
	double v = 0;

	if (!th_ctl_number(doc, path, &v))
		fail_msg("vmactd: no %s", path);
	return v;
}

/* The load was seen and a bigger size decided, which a runner not frozen
 * would be resizing to. */
static bool grower_wants_more(void *arg)
{
	json_t *doc = grower_doc();
	double desired = 0, using_ = doc_number(doc, "using.milli_cpu");
	bool more = th_ctl_number(doc, "desired.milli_cpu", &desired) && desired > using_;

	json_decref(doc);
	return more;
}

static bool grower_grew(void *before)
{
	json_t *doc = grower_doc();
	bool grew = doc_number(doc, "using.milli_cpu") > *(double *)before;

	json_decref(doc);
	return grew;
}

static bool grower_back(void *before)
{
	json_t *doc = grower_doc();
	bool back = doc_number(doc, "using.milli_cpu") <= *(double *)before;

	json_decref(doc);
	return back;
}

static void cluster_freeze(void **state)
{
	struct th_vmactd_mark resizing;
	struct vmact_lease_pod p;
	double using0;
	json_t *doc;

	if (!fx.have_grower)
		fail_msg("the VM vmactd scales did not start");
	if (!th_wait_until(NULL, tg_booted, &fx.grower,
			   (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)) ||
	    !th_vmactd_wait(&fx.d, grower_spoken_for, NULL, LIMIT_S))
		fail_msg("the VM vmactd scales never spoke to its arbiter");
	/* Marked moving: frozen once no resize is in flight. */
	mark_moving(true);
	if (!th_vmactd_wait(&fx.d, grower_frozen, "", LIMIT_S))
		fail_msg("the arbiter never reported the moving VM frozen");
	th_vmactd_mark(&fx.d, &resizing, "%s: resizing from", fx.grower.name);
	doc = grower_doc();
	assert_string_equal(json_string_value(json_object_get(doc, "state")), "frozen");
	assert_non_null(
		strstr(json_string_value(json_object_get(json_object_get(doc, "frozen"), "reason")),
		       "marked pod default/" GROWER));
	using0 = doc_number(doc, "using.milli_cpu");
	json_decref(doc);
	/* A load that grows it: decided, not carried out. */
	assert_int_equal(tg_cmd(&fx.grower, "busy 2"), 0);
	if (!th_vmactd_wait(&fx.d, grower_wants_more, NULL, LIMIT_BOOT_S))
		fail_msg("vmactd never wanted to grow the busy VM");
	doc = grower_doc();
	assert_string_equal(json_string_value(json_object_get(doc, "state")), "frozen");
	assert_false(json_is_true(json_object_get(doc, "resizing")));
	assert_true(doc_number(doc, "using.milli_cpu") == using0);
	json_decref(doc);
	assert_false(th_vmactd_mark_grew(&fx.d, &resizing));
	assert_true(grower_entry(&p) && p.moving && p.frozen);
	/* The move given up: it grows. */
	mark_moving(false);
	if (!th_vmactd_wait(&fx.d, grower_frozen, NULL, LIMIT_S))
		fail_msg("the mark never cleared");
	if (!th_vmactd_wait(&fx.d, grower_grew, &using0, LIMIT_BOOT_S))
		fail_msg("the VM never grew once unfrozen");
	doc = grower_doc();
	assert_string_not_equal(json_string_value(json_object_get(doc, "state")), "frozen");
	json_decref(doc);
	/* The cases after find it as they would without this one: back at
	 * its size, its reservation with it. */
	assert_int_equal(tg_cmd(&fx.grower, "idle"), 0);
	if (!th_vmactd_wait(&fx.d, grower_back, &using0, LIMIT_BOOT_S))
		fail_msg("the VM never shrank back once idle");
}

/* The lease goes, whatever the case's outcome: a mark left behind would
 * freeze the grower for the cases after. */
static int cluster_freeze_teardown(void **state)
{
	long status = 0;
	char path[128];

	tg_cmd(&fx.grower, "idle");
	snprintf(path, sizeof(path), "/v1/leases/default/%s", fx.grower.name);
	json_decref(arbiter_call("DELETE", path, NULL, &status));
	return status == 200 ? 0 : -1;
}

static bool member_in(void *arg)
{
	const char *state = arg;
	json_t *n = th_cluster_stack_nodes(&fx.s, "scale"), *it;
	size_t i;
	bool ok = false;

	json_array_foreach(n, i, it)
		ok |= !strcmp(json_string_value(json_object_get(it, "vm_state")), state);
	json_decref(n);
	return ok;
}

static void cluster_scale(void **state)
{
	json_t *n, *it, *gone;
	size_t i;
	char body[512];

	assert_int_equal(th_cluster_stack_change(&fx.s, "scale", "increase", "{\"delta\":2}"), 2);
	wait_nodes("scale", 2, 2, LIMIT_BOOT_S);
	n = th_cluster_stack_nodes(&fx.s, "scale");
	json_array_foreach(n, i, it) {
		const char *host = json_string_value(json_object_get(it, "host"));
		const char *name = json_string_value(json_object_get(it, "name"));
		const char *id = json_string_value(json_object_get(it, "provider_id"));
		bool saved;
		char want[256];

		/* Really there and running, its overlay made through the
		 * storage API, and its guest told its claim. */
		assert_int_equal(domain_state(host, strrchr(id, '/') + 1, &saved),
				 VIR_DOMAIN_RUNNING);
		assert_true(volume_exists(host, name));
		assert_true(guest_claimed(name));
		snprintf(want, sizeof(want), "libvirt://%s/", host);
		assert_int_equal(strncmp(id, want, strlen(want)), 0);
		/* The provider ID maps back to its group. */
		{
			char q[256];
			json_t *j;

			snprintf(q, sizeof(q), "/v1/node-group?provider_id=%s", id);
			j = th_cluster_stack_api(&fx.s, "GET", q, NULL, NULL);
			assert_string_equal(json_string_value(json_object_get(j, "id")), "scale");
			json_decref(j);
		}
	}
	/* Down to 1: the first node deleted, domain and overlay gone. */
	gone = json_incref(json_array_get(n, 0));
	snprintf(body, sizeof(body), "{\"provider_ids\":[\"%s\"]}",
		 json_string_value(json_object_get(gone, "provider_id")));
	assert_int_equal(th_cluster_stack_change(&fx.s, "scale", "delete-nodes", body), 1);
	wait_nodes("scale", 1, 1, LIMIT_S);
	{
		const char *host = json_string_value(json_object_get(gone, "host"));
		const char *id = json_string_value(json_object_get(gone, "provider_id"));

		assert_false(domain_exists(host, strrchr(id, '/') + 1));
		assert_false(volume_exists(host, json_string_value(json_object_get(gone, "name"))));
	}
	/* Wrong requests, with their reasons. */
	{
		long st;
		json_t *j = th_cluster_stack_api(&fx.s, "POST", "/v1/groups/scale/delete-nodes",
						 body, &st);

		assert_int_equal(st, 404);
		assert_string_equal(json_string_value(json_object_get(j, "reason")), "not-found");
		json_decref(j);
		j = th_cluster_stack_api(&fx.s, "POST", "/v1/groups/scale/increase",
					 "{\"delta\":4}", &st);
		assert_int_equal(st, 409);
		assert_string_equal(json_string_value(json_object_get(j, "reason")),
				    "out-of-range");
		json_decref(j);
		/* The one left is in service: a decrease may not take it. */
		j = th_cluster_stack_api(&fx.s, "POST", "/v1/groups/scale/decrease-target",
					 "{\"delta\":-1}", &st);
		assert_int_equal(st, 409);
		assert_string_equal(json_string_value(json_object_get(j, "reason")),
				    "precondition");
		json_decref(j);
		j = th_cluster_stack_api(&fx.s, "GET",
					 "/v1/node-group?provider_id=libvirt://h9/nope", NULL, &st);
		assert_string_equal(json_string_value(json_object_get(j, "id")), "");
		json_decref(j);
	}
	json_decref(gone);
	json_decref(n);
	/* One more, deleted while it boots: never in service, it goes back to
	 * the pool (ReturnNode unused) instead of being destroyed, and the
	 * group's empty pool then lets it go. */
	assert_int_equal(th_cluster_stack_change(&fx.s, "scale", "increase", "{\"delta\":1}"), 2);
	if (!th_wait_daemon(&fx.s.gd, member_in, "booting", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the third member never booted");
	n = th_cluster_stack_nodes(&fx.s, "scale");
	json_array_foreach(n, i, it) {
		if (!strcmp(json_string_value(json_object_get(it, "vm_state")), "booting")) {
			snprintf(body, sizeof(body), "{\"provider_ids\":[\"%s\"]}",
				 json_string_value(json_object_get(it, "provider_id")));
			gone = json_incref(it);
		}
	}
	json_decref(n);
	assert_int_equal(th_cluster_stack_change(&fx.s, "scale", "delete-nodes", body), 1);
	if (!TH_WAIT(NULL, metric("vmact_cluster_returned_total{group=\"scale\"}") == 1,
		     TH_SAFETY_USEC))
		th_cluster_stack_fail(&fx.s, "the unused member was not returned to the pool");
	wait_nodes("scale", 1, 1, LIMIT_S);
	{
		const char *host = json_string_value(json_object_get(gone, "host"));
		const char *id = json_string_value(json_object_get(gone, "provider_id"));

		if (!TH_WAIT(NULL, !domain_exists(host, strrchr(id, '/') + 1), TH_SAFETY_USEC))
			th_cluster_stack_fail(&fx.s, "the returned VM outlived the empty pool");
	}
	json_decref(gone);
	delete_all("scale");
}

static bool pool_ready(void *arg)
{
	json_t *g = group_doc("tiers"), *pool = json_object_get(g, "pool");
	bool ok = true;

	for (int t = 0; t < 3; t++) {
		static const char *const tiers[] = { "running", "paused", "saved" };

		ok &= json_integer_value(
			      json_object_get(json_object_get(pool, tiers[t]), "ready")) == 1;
	}
	json_decref(g);
	return ok;
}

static void cluster_tiers(void **state)
{
	static const char *const tiers[] = { "running", "paused", "saved" };
	static const int states[] = { VIR_DOMAIN_RUNNING, VIR_DOMAIN_PAUSED, VIR_DOMAIN_SHUTOFF };
	json_t *vms, *it;
	size_t i;

	if (!th_wait_daemon(&fx.s.gd, pool_ready, NULL, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the standby pool of group tiers never filled");
	/* Each tier's VM is as libvirt says it should be. */
	vms = all_vms();
	json_array_foreach(vms, i, it) {
		bool saved = false;
		int t;

		if (strcmp(json_string_value(json_object_get(it, "group")), "tiers") ||
		    strcmp(json_string_value(json_object_get(it, "state")), "ready"))
			continue;
		for (t = 0; t < 3; t++)
			if (!strcmp(json_string_value(json_object_get(it, "tier")), tiers[t]))
				break;
		assert_int_equal(domain_state("h2",
					      json_string_value(json_object_get(it, "provider_id")) +
						      strlen("libvirt://h2/"),
					      &saved),
				 states[t]);
		assert_int_equal(saved, t == 2);
	}
	json_decref(vms);
	/* Three increases of one: the fastest first. */
	for (int t = 0; t < 3; t++) {
		json_t *n;
		bool found = false;

		assert_int_equal(th_cluster_stack_change(&fx.s, "tiers", "increase",
							 "{\"delta\":1}"),
				 t + 1);
		wait_nodes("tiers", (unsigned)t + 1, (unsigned)t + 1, LIMIT_BOOT_S);
		n = th_cluster_stack_nodes(&fx.s, "tiers");
		json_array_foreach(n, i, it)
			found |= strcmp(json_string_value(json_object_get(it, "tier")), tiers[t]) ==
					 0 &&
				 guest_claimed(json_string_value(json_object_get(it, "name")));
		json_decref(n);
		if (!found)
			th_cluster_stack_fail(&fx.s, "no node came from the %s tier", tiers[t]);
	}
	for (int t = 0; t < 3; t++) {
		char m[128];

		snprintf(m, sizeof(m),
			 "vmact_cluster_provision_seconds_count{group=\"tiers\",tier=\"%s\"}",
			 tiers[t]);
		assert_int_equal(metric(m), 1);
	}
	delete_all("tiers");
}

static bool attempts_at_least_2(void *arg)
{
	json_t *vms = all_vms(), *it;
	size_t i;
	bool ok = false;

	json_array_foreach(vms, i, it)
		ok |= !strcmp(json_string_value(json_object_get(it, "group")), "sick") &&
		      json_integer_value(json_object_get(it, "attempts")) >= 2 &&
		      !strcmp(json_string_value(json_object_get(it, "state")), "booting");
	json_decref(vms);
	return ok;
}

/* No VM of the group in vmact-groupd, members and standby alike (a VM
 * leaves GET /v1/vms once its removal, lease included, is done). */
static bool no_vms_of(void *group)
{
	json_t *vms = all_vms(), *v;
	size_t i;
	bool none = true;

	json_array_foreach(vms, i, v)
		none &= strcmp(json_string_value(json_object_get(v, "group")) ?: "", group) != 0;
	json_decref(vms);
	return none;
}

static void cluster_unhealthy(void **state)
{
	struct th_cluster_node_error w = { &fx.s, "sick", "BOOT_TIMEOUT" };
	json_t *n;
	const char *id;

	assert_int_equal(th_cluster_stack_change(&fx.s, "sick", "increase", "{\"delta\":1}"), 1);
	/* Reported: the node's error for the cloud provider... */
	if (!th_wait_daemon(&fx.s.gd, th_cluster_stack_node_error, &w, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the sick VM was never reported");
	n = th_cluster_stack_nodes(&fx.s, "sick");
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(json_array_get(n, 0), "error"),
						    "class")),
			    "other");
	id = json_string_value(json_object_get(json_array_get(n, 0), "provider_id"));
	/* ...the metric, the log... */
	assert_true(
		metric("vmact_cluster_failures_total{group=\"sick\",reason=\"boot_timeout\"}") >=
		1);
	assert_true(th_count_in_file(fx.s.glog, "BOOT_TIMEOUT: not healthy 10 s after its start") >=
		    1);
	/* ...destroyed (its member kept as a placeholder meanwhile)... */
	assert_true(th_count_in_file(fx.s.glog, "; destroyed, a new VM after the back-off") >= 1);
	assert_true(domain_exists("h1", strrchr(id, '/') + 1));
	/* ...and replaced: booted again after the back-off. */
	if (!th_wait_daemon(&fx.s.gd, attempts_at_least_2, NULL, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the sick VM was never booted again");
	json_decref(n);
	delete_all("sick");
	/* Its VM gone from vmact-groupd too, which is after its lease: the
	 * member list empties at the delete, the removal (domain, disk,
	 * lease) follows, and the next case places two VMs on h1's room. */
	if (!th_wait_daemon(&fx.s.gd, no_vms_of, "sick", LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the sick group's VM was never removed");
}

/* libvirt's own answer from a domain's guest agent (NULL when none),
 * beside vmact-groupd's: the agent really is the guest's qemu-ga. */
static char *agent_says(const char *host, const char *uuid, const char *cmd)
{
	virDomainPtr d = virDomainLookupByUUIDString(conn_of(host), uuid);
	char *out;

	if (!d)
		return NULL;
	out = virDomainQemuAgentCommand(d, cmd, 10, 0);
	virDomainFree(d);
	return out;
}

static bool domain_xml_has(const char *host, const char *uuid, const char *needle)
{
	virDomainPtr d = virDomainLookupByUUIDString(conn_of(host), uuid);
	char *xml = d ? virDomainGetXMLDesc(d, 0) : NULL;
	bool ok = xml && strstr(xml, needle);

	free(xml);
	if (d)
		virDomainFree(d);
	return ok;
}

static void cluster_agent(void **state)
{
	struct th_cluster_node_error silent = { &fx.s, "mute", "BOOT_TIMEOUT" };
	char log[PATH_MAX + 64], *out;
	const char *host, *uuid;
	json_t *n;

	/* Both boot side by side: the mute one's timeout runs meanwhile. */
	assert_int_equal(th_cluster_stack_change(&fx.s, "agent", "increase", "{\"delta\":1}"), 1);
	assert_int_equal(th_cluster_stack_change(&fx.s, "mute", "increase", "{\"delta\":1}"), 1);
	wait_nodes("agent", 1, 1, LIMIT_BOOT_S);
	n = th_cluster_stack_nodes(&fx.s, "agent");
	host = json_string_value(json_object_get(json_array_get(n, 0), "host"));
	uuid = strrchr(json_string_value(json_object_get(json_array_get(n, 0), "provider_id")),
		       '/') +
	       1;
	/* In service: its guest was told its claim... */
	assert_true(
		guest_claimed(json_string_value(json_object_get(json_array_get(n, 0), "name"))));
	/* ...its domain has the agent's channel (cluster/host/domxml.c), and on
	 * it Debian's qemu-ga, as libvirt sees it too. */
	assert_true(domain_xml_has(host, uuid, "name='org.qemu.guest_agent.0'"));
	out = agent_says(host, uuid, "{\"execute\":\"guest-info\"}");
	if (!out || !strstr(out, "\"guest-ping\""))
		th_cluster_stack_fail(&fx.s, "guest-info from the agent group's VM: %s",
				      out ? out : "no answer");
	free(out);
	json_decref(n);

	/* The agent kept off: the guest runs (its status lines would pass a
	 * serial check) but never counts as healthy. */
	if (!th_wait_daemon(&fx.s.gd, th_cluster_stack_node_error, &silent, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the VM whose agent never answers was not reported");
	n = th_cluster_stack_nodes(&fx.s, "mute");
	snprintf(log, sizeof(log), "%s/%s.log", fx.s.logs,
		 json_string_value(json_object_get(json_array_get(n, 0), "name")));
	assert_true(th_count_in_file(log, "VMACT seq=") > 0);
	assert_true(th_count_in_file(fx.s.glog, "BOOT_TIMEOUT: not healthy 20 s after its start") >=
		    1);
	json_decref(n);
	delete_all("agent");
	delete_all("mute");
}

static bool node_on(void *arg)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, "scale");
	const char *host = json_string_value(json_object_get(json_array_get(n, 0), "host"));
	const char *state = json_string_value(json_object_get(json_array_get(n, 0), "state"));
	bool ok = host && state && !strcmp(host, arg) && !strcmp(state, "running");

	json_decref(n);
	return ok;
}

static void cluster_full_host(void **state)
{
	struct vmact_err err = { 0 };
	struct vmact_lease_ledger l = ledger(fx.h1);
	struct vmact_resources all = l.watermark;

	/* Another holder takes every bit of h1's room. */
	assert_int_equal(cl_host_lease(fx.h1, "default", "filler", all, 600 * VMACT_USEC_PER_SEC,
				       true, &err),
			 0);
	assert_int_equal(th_cluster_stack_change(&fx.s, "scale", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, node_on, "h2", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the member did not go to h2");
	assert_int_equal(cl_host_release(fx.h1, "default", "filler", &err), 0);
	delete_all("scale");
}

static json_t *waiting(void)
{
	json_t *j = th_cluster_stack_api(&fx.s, "GET", "/v1/waiting", NULL, NULL),
	       *w = json_incref(json_object_get(j, "waiting"));

	json_decref(j);
	return w ? w : json_array();
}

static bool one_waits(void *arg)
{
	json_t *w = waiting();
	bool ok = json_array_size(w) == 1;

	json_decref(w);
	return ok;
}

static void cluster_permit(void **state)
{
	struct th_cluster_node_error rejected = { &fx.s, "gated", "PERMIT_REJECTED" };
	unsigned leases_before = ledger(fx.h2).leases;
	char path[256];
	json_t *w;
	long st;

	assert_int_equal(th_cluster_stack_change(&fx.s, "gated", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, one_waits, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "nothing waited for ManualApproval");
	w = waiting();
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "group")),
			    "gated");
	assert_string_equal(json_string_value(
				    json_array_get(json_object_get(json_array_get(w, 0), "pending"),
						   0)),
			    "ManualApproval");
	/* Reserved while it waits. */
	assert_int_equal(ledger(fx.h2).leases, leases_before + 1);
	snprintf(path, sizeof(path), "/v1/waiting/%s/allow",
		 json_string_value(json_object_get(json_array_get(w, 0), "uid")));
	json_decref(w);
	json_decref(th_cluster_stack_api(&fx.s, "POST", path, NULL, &st));
	assert_int_equal(st, 200);
	wait_nodes("gated", 1, 1, LIMIT_BOOT_S);

	/* The second is rejected: its reservation goes back. */
	assert_int_equal(th_cluster_stack_change(&fx.s, "gated", "increase", "{\"delta\":1}"), 2);
	if (!th_wait_daemon(&fx.s.gd, one_waits, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the second VM did not wait");
	w = waiting();
	snprintf(path, sizeof(path), "/v1/waiting/%s/reject",
		 json_string_value(json_object_get(json_array_get(w, 0), "uid")));
	json_decref(w);
	json_decref(th_cluster_stack_api(&fx.s, "POST", path, "{\"message\":\"not now\"}", &st));
	assert_int_equal(st, 200);
	if (!th_wait_daemon(&fx.s.gd, th_cluster_stack_node_error, &rejected, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the rejection was not reported");
	json_decref(th_cluster_stack_api(&fx.s, "POST", path, NULL, &st));
	assert_int_equal(st, 404);
	delete_all("gated");
}

struct sampler {
	pthread_t t;
	volatile bool stop;
	unsigned samples, over;
	uint32_t max_reserved, watermark;
};

static void *sample_ledger(void *arg)
{
	struct sampler *s = arg;

	while (!s->stop) {
		struct vmact_lease_ledger l;
		struct vmact_err err = { 0 };

		if (cl_host_ledger(fx.h1, &l, &err) == 0) {
			s->samples++;
			s->watermark = l.watermark.milli_cpu;
			if (l.reserved.milli_cpu > s->max_reserved)
				s->max_reserved = l.reserved.milli_cpu;
			s->over += l.reserved.milli_cpu > l.watermark.milli_cpu;
		}
		usleep(50000);
	}
	return NULL;
}

struct inc {
	pthread_t t;
	long status;
};

static void *increase_2(void *arg)
{
	struct inc *i = arg;

	json_decref(th_cluster_stack_api(&fx.s, "POST", "/v1/groups/conc/increase", "{\"delta\":2}",
					 &i->status));
	return NULL;
}

static bool conc_settled(void *arg)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, "conc"), *it;
	size_t i;
	unsigned done = 0;

	json_array_foreach(n, i, it)
		done += !strcmp(json_string_value(json_object_get(it, "state")), "running") ||
			json_object_get(it, "error") != NULL;
	json_decref(n);
	return done == 6;
}

static bool conc_placed(void *arg)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, "conc"), *it;
	size_t i;
	unsigned done = 0;

	json_array_foreach(n, i, it)
		done += strcmp(json_string_value(json_object_get(it, "vm_state")), "pending") !=
				0 ||
			json_object_get(it, "error") != NULL;
	json_decref(n);
	return done == 6;
}

/* The sampler outlives a failed assertion of cluster_concurrent (cmocka
 * leaves the test by longjmp): static, and stopped by the test's
 * teardown, never left reading a stack frame that is gone. */
static struct sampler conc_sampler;

static void sampler_stop(struct sampler *s)
{
	if (!s->t)
		return;
	s->stop = true;
	pthread_join(s->t, NULL);
	s->t = 0;
}

static int cluster_concurrent_teardown(void **state)
{
	sampler_stop(&conc_sampler);
	return 0;
}

static void cluster_concurrent(void **state)
{
	struct sampler *sp = &conc_sampler, s;
	struct inc inc[3];
	unsigned running = 0, capacity_errors = 0;
	json_t *n, *it;
	size_t i;

	if (!fx.have_grower)
		fail_msg("the VM vmactd scales did not start");
	/* The VM vmactd scales is busy and growing (its permits are in the
	 * ledger) when the increases come, and wants more all along. */
	*sp = (struct sampler){ 0 };
	assert_int_equal(pthread_create(&sp->t, NULL, sample_ledger, sp), 0);
	assert_int_equal(tg_cmd(&fx.grower, "busy 3"), 0);
	if (!TH_WAIT(NULL, ledger(fx.h1).reserved.milli_cpu >= 2000, 120 * VMACT_USEC_PER_SEC))
		fail_msg("the VM vmactd scales did not grow");
	for (int k = 0; k < 3; k++)
		assert_int_equal(pthread_create(&inc[k].t, NULL, increase_2, &inc[k]), 0);
	for (int k = 0; k < 3; k++) {
		pthread_join(inc[k].t, NULL);
		assert_int_equal(inc[k].status, 200);
	}
	/* Placed or refused, all of them: the guest may rest (the boots on
	 * two host CPUs are slow enough). */
	if (!th_wait_daemon(&fx.s.gd, conc_placed, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s,
				      "the concurrent increases were never all placed or refused");
	tg_cmd(&fx.grower, "idle");
	if (!th_wait_daemon(&fx.s.gd, conc_settled, NULL, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the concurrent increases never settled");
	sampler_stop(sp);
	s = *sp;
	n = th_cluster_stack_nodes(&fx.s, "conc");
	json_array_foreach(n, i, it) {
		const char *code = json_string_value(
			json_object_get(json_object_get(it, "error"), "code"));

		running += !strcmp(json_string_value(json_object_get(it, "state")), "running");
		capacity_errors += code && !strcmp(code, "HOST_CAPACITY");
	}
	json_decref(n);
	fprintf(stderr,
		"concurrent: %u of 6 placed on h1 beside the growing VM, %u refused for room; ledger "
		"peak %u of %u m over %u samples\n",
		running, capacity_errors, s.max_reserved, s.watermark, s.samples);
	/* Never more promised than the watermark, at any sample. */
	assert_true(s.samples > 10);
	assert_int_equal(s.over, 0);
	assert_true(s.max_reserved <= s.watermark);
	/* Not all fit beside the grown VM: the ledger refused some. */
	assert_int_equal(running + capacity_errors, 6);
	assert_true(capacity_errors >= 1);
	delete_all("conc");
}

static void cluster_kill_restart(void **state)
{
	json_t *before, *after, *it, *doms;
	size_t i;
	int st;

	assert_int_equal(th_cluster_stack_change(&fx.s, "scale", "increase", "{\"delta\":2}"), 2);
	if (!th_wait_daemon(&fx.s.gd, member_in, "booting", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "no member was booting");
	before = all_vms();
	st = th_proc_stop(&fx.s.gd, SIGKILL, 10 * VMACT_USEC_PER_SEC);
	assert_int_equal(st, 128 + SIGKILL);
	start_groupd(fx.s.cfg);
	/* Found again: the same two members, target kept. */
	{
		json_t *g = group_doc("scale");

		assert_int_equal(json_integer_value(json_object_get(g, "target")), 2);
		json_decref(g);
	}
	wait_nodes("scale", 2, 2, LIMIT_BOOT_S);
	after = all_vms();
	/* A member that was booting when it was killed was waited on, not
	 * booted again: same UUID, same boot time. */
	{
		unsigned resumed = 0;

		json_array_foreach(before, i, it) {
			json_t *a;
			size_t k;

			if (strcmp(json_string_value(json_object_get(it, "group")), "scale") ||
			    strcmp(json_string_value(json_object_get(it, "state")), "booting"))
				continue;
			json_array_foreach(after, k, a) {
				if (!strcmp(json_string_value(json_object_get(a, "name")),
					    json_string_value(json_object_get(it, "name"))) &&
				    fabs(json_real_value(json_object_get(a, "booted")) -
					 json_real_value(json_object_get(it, "booted"))) < 0.01 &&
				    json_integer_value(json_object_get(a, "attempts")) ==
					    json_integer_value(json_object_get(it, "attempts")))
					resumed++;
			}
		}
		assert_true(resumed >= 1);
	}
	/* None orphaned: every domain and overlay of ours is one it knows. */
	for (int h = 0; h < 2; h++) {
		const char *host = h ? "h2" : "h1";
		json_t *vols = our_volumes(host), *d;
		size_t k;

		doms = our_domains(host);
		json_array_foreach(doms, k, d) {
			bool known = false;

			json_array_foreach(after, i, it)
				known |= !strcmp(json_string_value(json_object_get(it, "name")),
						 json_string_value(d));
			if (!known)
				th_cluster_stack_fail(&fx.s, "domain %s on %s is nobody's",
						      json_string_value(d), host);
		}
		json_array_foreach(vols, k, d) {
			bool known = false;

			json_array_foreach(doms, i, it)
				known |= json_equal(it, d);
			if (!known)
				th_cluster_stack_fail(&fx.s, "overlay %s on %s has no domain",
						      json_string_value(d), host);
		}
		json_decref(vols);
		json_decref(doms);
	}
	json_decref(before);
	json_decref(after);
	delete_all("scale");
}

static bool no_leases_h2(void *arg)
{
	return ledger(fx.h2).leases == 0;
}

static bool leases_h2(void *arg)
{
	return ledger(fx.h2).leases >= 1;
}

static void cluster_lease_expiry(void **state)
{
	th_proc_stop(&fx.s.gd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	start_groupd(fx.cfg_short);
	/* The standby VMs of group tiers on h2 hold leases. */
	if (!th_wait_daemon(&fx.s.gd, leases_h2, NULL, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "no lease on h2");
	assert_int_equal(th_proc_stop(&fx.s.gd, SIGKILL, 10 * VMACT_USEC_PER_SEC), 128 + SIGKILL);
	/* Its holder dead, the room comes back once the lease ran out. */
	if (!TH_WAIT(NULL, no_leases_h2(NULL), 30 * VMACT_USEC_PER_SEC))
		fail_msg("h2's leases outlived their holder");
	/* Back (with the defaults): the VMs it finds are leased again. */
	start_groupd(fx.s.cfg);
	if (!th_wait_daemon(&fx.s.gd, leases_h2, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the leases were not taken again");
}

static void cluster_metrics(void **state)
{
	char url[128], page[PATH_MAX + 16], cmd[PATH_MAX + 64], *text;
	const char *argv[] = { "sh", "-c", cmd, NULL };

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", fx.s.metrics_port);
	text = th_cluster_http_get(url);
	assert_non_null(text);
	assert_non_null(
		strstr(text,
		       "vmact_cluster_pool_vms{group=\"tiers\",tier=\"saved\",state=\"ready\"}"));
	assert_non_null(strstr(text, "vmact_cluster_boots_total{group=\"scale\"}"));
	assert_non_null(
		strstr(text, "vmact_cluster_reservations_total{host=\"h1\",result=\"granted\"}"));
	snprintf(page, sizeof(page), "%s/metrics.txt", fx.s.dir);
	assert_int_equal(th_write_file(page, text), 0);
	free(text);
	/* An independent reader: Prometheus's own. */
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", page);
	assert_int_equal(run(argv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cluster_bad_config),
		cmocka_unit_test_teardown(cluster_freeze, cluster_freeze_teardown),
		cmocka_unit_test(cluster_scale),
		cmocka_unit_test(cluster_tiers),
		cmocka_unit_test(cluster_unhealthy),
		cmocka_unit_test(cluster_agent),
		cmocka_unit_test(cluster_full_host),
		cmocka_unit_test(cluster_permit),
		cmocka_unit_test_teardown(cluster_concurrent, cluster_concurrent_teardown),
		cmocka_unit_test(cluster_kill_restart),
		cmocka_unit_test(cluster_lease_expiry),
		cmocka_unit_test(cluster_metrics),
	};

	/* One case, as the other integration programs take it. */
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
