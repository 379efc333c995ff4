/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-cloudprovider against the real vmact-groupd on real libvirt, with
 * the test guest as the node image, driven by tests/peers/ca-client.js
 * (@grpc/grpc-js) as cluster-autoscaler would call it: a group scaled
 * 0 -> 2 -> 1 (VMs created, Running, deleted: checked in libvirt), its
 * template node at size 0, a VM taken from a warm pool, a VM that never
 * becomes healthy reported with its error and replaced, the refusals with
 * their codes, and the provider killed mid-increase and restarted with no
 * VM lost or orphaned. One host (qemu:///system) with a standalone
 * vmact-arbiter holding the leases; vmact-groupd and vmact-cloudprovider
 * run as vmact-cluster. Root; run under /work/itest.lock like every
 * integration test. */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
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
#include <jansson.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "base/time.h"
#include "cloudprovider/groupd.h"
#include "tests/lib/cloudprov.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define USER   "vmact-cluster"
#define PREFIX "cpi-"
/* Booting a TCG guest and its first health lines: tens of seconds here;
 * a bound against a hung test, not a figure. */
#define WAIT_S "600"

struct env {
	char dir[64], pool[64], api[128], key_arbiter[128], key_groupd[128], config[128];
	char guest[256];
	unsigned arbiter_port;
	struct th_proc arbiter, groupd;
	struct th_cp cp;
	virConnectPtr vc;
	uid_t uid;
	gid_t gid;
};

static struct env E;

DEFINE_PTR_CLEANUP(jsonp, json_t, json_decref)

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", E.dir, name);
}

static int sh(const char *script)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	static const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };

	return th_spawn(&p, argv, &o) < 0 ? -1 : th_proc_wait(&p);
}

/* Three groups on host h1: web (defaults), warm (one VM in the running
 * tier), sick (a health line the guest never prints, 20 s to be healthy,
 * 5 s before the next boot: the test is about that error). */
static int write_config(void)
{
	char g[2048], cfg[16384];
	FILE *f;
	int n;

	n = snprintf(
		g, sizeof(g),
		"\"domain_type\": \"qemu\", \"vcpus\": 1, \"max_vcpus\": 2, \"memory\": \"256Mi\","
		" \"max_memory\": \"512Mi\", \"kernel\": \"%s/vmlinuz\", \"initrd\": \"%s/initrd.img\","
		" \"cmdline\": \"console=ttyS0 loglevel=1 panic=-1 memhp_default_state=online_movable"
		" lpj=8000000 tsc=reliable\", \"base_volume\": \"node-base.qcow2\","
		" \"serial_log_dir\": \"%s/logs\", \"reserve\": {\"cpu\": \"250m\", \"memory\": \"256Mi\"}",
		E.guest, E.guest, E.dir);

	if (n < 0 || (size_t)n >= sizeof(g))
		return -1;
	n = snprintf(
		cfg, sizeof(cfg),
		"{\"api\": {\"socket\": \"%s\"}, \"metrics\": {\"listen\": \"\"},"
		" \"libvirt\": {\"name_prefix\": \"" PREFIX "\"},"
		" \"hosts\": [{\"name\": \"h1\", \"uri\": \"qemu:///system\", \"storage_pool\": \"%s\","
		"   \"arbiter\": {\"url\": \"http://127.0.0.1:%u\", \"secret_file\": \"%s\"}}],"
		" \"groups\": ["
		"  {\"id\": \"web\", \"min\": 0, \"max\": 3, \"hosts\": [\"h1\"],"
		"   \"labels\": {\"vmact.io/group\": \"web\"},"
		"   \"taints\": [{\"key\": \"dedicated\", \"value\": \"web\", \"effect\": \"NoSchedule\"}],"
		"   \"template\": {%s}, \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT seq=\"},"
		"   \"claim\": {\"channel\": \"serial1\", \"ack\": \"VMACT claimed\"},"
		"   \"options\": {\"max_node_provision_time_s\": 600}},"
		"  {\"id\": \"warm\", \"min\": 0, \"max\": 2, \"hosts\": [\"h1\"],"
		"   \"labels\": {\"vmact.io/group\": \"warm\"}, \"template\": {%s},"
		"   \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT seq=\"},"
		"   \"claim\": {\"channel\": \"serial1\", \"ack\": \"VMACT claimed\"},"
		"   \"pool\": {\"running\": 1}},"
		"  {\"id\": \"sick\", \"min\": 0, \"max\": 1, \"hosts\": [\"h1\"], \"template\": {%s},"
		"   \"health\": {\"kind\": \"serial\", \"pattern\": \"NEVER PRINTED\"},"
		"   \"lifecycle\": {\"boot_timeout_s\": 20, \"retry_backoff_s\": 5}}]}",
		E.api, E.pool, E.arbiter_port, E.key_groupd, g, g, g);
	if (n < 0 || (size_t)n >= sizeof(cfg))
		return -1;
	f = fopen(E.config, "we");
	if (!f)
		return -1;
	fputs(cfg, f);
	return fclose(f);
}

static int start_groupd(void)
{
	char prog[PATH_MAX], reuid[32], regid[32], log[160];
	const char *argv[] = {
		"setpriv", reuid, regid, "--init-groups", prog, "-c", E.config, NULL
	};
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };

	path_in(log, sizeof(log), "groupd.log");
	snprintf(reuid, sizeof(reuid), "--reuid=%u", (unsigned)E.uid);
	snprintf(regid, sizeof(regid), "--regid=%u", (unsigned)E.gid);
	if (th_build_prog("vmact-groupd", prog, sizeof(prog)) < 0 ||
	    th_spawn(&E.groupd, argv, &o) < 0)
		return -1;
	if (!TH_WAIT(NULL, th_count_in_file(log, "ready:") > 0 || th_proc_exited(&E.groupd),
		     TH_SAFETY_USEC) ||
	    th_proc_exited(&E.groupd)) {
		th_print_log_tail(log, "vmact-groupd", 40);
		return -1;
	}
	return 0;
}

static int start_cp(void)
{
	const char *args[] = { "--groupd-socket", E.api, NULL };
	char msg[256];

	if (th_cp_start(&E.cp, E.dir, USER, args, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	return 0;
}

static int setup(void **state)
{
	char prog[PATH_MAX], cmd[2048], log[160];
	const char *guest = getenv("VMACT_GUEST_DIR");
	struct passwd *pw = getpwnam(USER);
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };
	const char *argv[] = { prog,    "--listen", NULL,       "--lease-key", E.key_arbiter,
			       "--cpu", "16",       "--memory", "32Gi",        NULL };
	char listen[64];

	(void)state;
	if (!pw || !guest) {
		print_error("needs user " USER " (tests/host/setup-host.sh) and VMACT_GUEST_DIR\n");
		return -1;
	}
	E.uid = pw->pw_uid;
	E.gid = pw->pw_gid;
	snprintf(E.guest, sizeof(E.guest), "%s", guest);
	snprintf(E.dir, sizeof(E.dir), "/tmp/vmact-cpi.XXXXXX");
	if (!mkdtemp(E.dir) || chmod(E.dir, 0755) < 0)
		return -1;
	snprintf(E.pool, sizeof(E.pool), "vmact-cpi-%d", (int)getpid());
	path_in(E.api, sizeof(E.api), "api/groupd.sock");
	path_in(E.key_arbiter, sizeof(E.key_arbiter), "arbiter.key");
	path_in(E.key_groupd, sizeof(E.key_groupd), "groupd.key");
	path_in(E.config, sizeof(E.config), "groupd.json");
	/* the overlays' pool (the base image in it), groupd's socket
	 * directory, the serial logs, and one lease key each, 0600 */
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; mkdir pool logs api; chmod 0755 pool; chmod 0777 logs;"
		 " chown %s: api; cp %s/node-base.qcow2 pool/;"
		 " head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > arbiter.key;"
		 " chmod 0600 arbiter.key; cp arbiter.key groupd.key; chown %s: groupd.key;"
		 " virsh -q -c qemu:///system pool-create-as %s dir --target %s/pool >/dev/null",
		 E.dir, USER, E.guest, USER, E.pool, E.dir);
	if (sh(cmd) != 0)
		return -1;
	E.arbiter_port = th_dead_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", E.arbiter_port);
	argv[2] = listen;
	path_in(log, sizeof(log), "arbiter.log");
	if (th_build_prog("vmact-arbiter", prog, sizeof(prog)) < 0 ||
	    th_spawn(&E.arbiter, argv, &o) < 0 ||
	    !TH_WAIT(NULL, th_count_in_file(log, "listening") > 0, TH_SAFETY_USEC))
		return -1;
	if (write_config() < 0 || chmod(E.config, 0644) < 0 || start_groupd() < 0 || start_cp() < 0)
		return -1;
	E.vc = virConnectOpen("qemu:///system");
	return E.vc ? 0 : -1;
}

/* Every domain named PREFIX*: what groupd made. */
static int our_domains(char ***names)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(E.vc, &doms, 0), k = 0;

	*names = calloc(n > 0 ? (size_t)n + 1 : 1, sizeof(char *));
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);

		if (name && !strncmp(name, PREFIX, strlen(PREFIX)))
			(*names)[k++] = strdup(name);
		virDomainFree(doms[i]);
	}
	free(doms);
	return k;
}

static void free_names(char **names)
{
	for (char **p = names; p && *p; p++)
		free(*p);
	free(names);
}

static int teardown(void **state)
{
	static const char *const groups[] = { "web", "warm", "sick" };
	char **names;
	char cmd[512];
	int left;

	(void)state;
	for (size_t i = 0; E.cp.proc.spawned && i < ARRAY_SIZE(groups); i++) {
		const char *args[] = { "--group", groups[i], "--wait-s", "120", NULL };
		char log[160];

		path_in(log, sizeof(log), "client-drain.log");
		th_cp_client(E.cp.port, "drain", args, log);
	}
	if (E.cp.proc.spawned && th_cp_stop(&E.cp) != 0)
		th_cp_print_log(&E.cp);
	th_proc_stop(&E.groupd, SIGTERM, 20 * VMACT_USEC_PER_SEC);
	th_proc_stop(&E.arbiter, SIGTERM, 5 * VMACT_USEC_PER_SEC);
	/* what groupd left (standby VMs stay recorded for its next start:
	 * a test ends with none of its domains) */
	left = E.vc ? our_domains(&names) : 0;
	for (int i = 0; i < left; i++) {
		virDomainPtr d = virDomainLookupByName(E.vc, names[i]);

		if (d) {
			virDomainDestroy(d);
			virDomainUndefineFlags(d, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE |
							  VIR_DOMAIN_UNDEFINE_NVRAM);
			virDomainFree(d);
		}
	}
	if (left)
		free_names(names);
	snprintf(cmd, sizeof(cmd), "virsh -q -c qemu:///system pool-destroy %s >/dev/null 2>&1",
		 E.pool);
	sh(cmd);
	if (E.vc)
		virConnectClose(E.vc);
	th_rm_rf(E.dir);
	return 0;
}

static void client(const char *scenario, const char *const *extra)
{
	const char *args[24] = { "--groupd", E.api, "--wait-s", WAIT_S };
	char log[160];
	size_t n = 4;
	int r;

	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	snprintf(log, sizeof(log), "%s/client-%s.log", E.dir, scenario);
	r = th_cp_client(E.cp.port, scenario, args, log);
	if (r != 0) {
		th_cp_print_log(&E.cp);
		fail_msg("ca-client.js %s: exit %d", scenario, r);
	}
}

/* The domain of libvirt://HOST/UUID, NULL when there is none. */
static virDomainPtr domain_of(const char *provider_id)
{
	const char *uuid = strrchr(provider_id, '/');

	return uuid ? virDomainLookupByUUIDString(E.vc, uuid + 1) : NULL;
}

static int pool_volumes(void)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(E.vc, E.pool);
	int n;

	if (!p)
		return -1;
	virStoragePoolRefresh(p, 0);
	n = virStoragePoolNumOfVolumes(p);
	virStoragePoolFree(p);
	return n;
}

/* The value of "key":"..." in the last line of log holding event. */
static bool event_field(const char *log, const char *event, const char *key, int index, char *out,
			size_t len)
{
	_cleanup_free_ char *text = th_read_file(log);
	char needle[64];
	const char *line = NULL;

	snprintf(needle, sizeof(needle), "{\"event\":\"%s\"", event);
	for (char *p = text; p && (p = strstr(p, needle)); p++)
		line = p;
	if (!line)
		return false;
	json_t *j = json_loadb(line, strcspn(line, "\n"), 0, NULL);
	json_t *v = json_object_get(j, key);
	bool ok;

	if (json_is_array(v))
		v = json_array_get(v, (size_t)index);
	ok = json_is_string(v);
	if (ok)
		snprintf(out, len, "%s", json_string_value(v));
	json_decref(j);
	return ok;
}

/* 0 -> 2 -> 1, looked at in libvirt at 2 and at 1. */
static void test_scale(void **state)
{
	const char *args[] = {
		"--group",    "web",
		"--groupd",   E.api,
		"--wait-s",   WAIT_S,
		"--capacity", "{\"cpu\":\"1\",\"memory\":\"256Mi\",\"pods\":\"110\"}",
		NULL
	};
	struct th_proc p = { 0 };
	char log[160], a[160], b[160];
	virDomainPtr d;
	int vols;

	(void)state;
	path_in(log, sizeof(log), "client-real-scale.log");
	assert_int_equal(th_cp_client_start(&p, E.cp.port, "real-scale", args, log), 0);
	if (!TH_WAIT(NULL, th_count_in_file(log, "\"event\":\"running\"") || th_proc_exited(&p),
		     600 * VMACT_USEC_PER_SEC) ||
	    !event_field(log, "running", "ids", 0, a, sizeof(a)) ||
	    !event_field(log, "running", "ids", 1, b, sizeof(b))) {
		th_print_log_tail(log, "real-scale", 60);
		fail_msg("no two running instances");
	}
	/* both VMs exist and run; each has its overlay in the pool */
	for (int i = 0; i < 2; i++) {
		d = domain_of(i ? b : a);
		assert_non_null(d);
		assert_int_equal(virDomainIsActive(d), 1);
		virDomainFree(d);
	}
	vols = pool_volumes();
	print_message("running: %s %s; %d volumes in the pool\n", a, b, vols);
	assert_true(vols >= 3);
	assert_int_equal(write(p.in_fd, "go\n", 3), 3);
	if (!TH_WAIT(NULL, th_count_in_file(log, "\"event\":\"deleted\"") || th_proc_exited(&p),
		     600 * VMACT_USEC_PER_SEC)) {
		th_print_log_tail(log, "real-scale", 60);
		fail_msg("the deletion was not seen");
	}
	/* the deleted VM is gone, domain and overlay; the other runs */
	assert_true(TH_WAIT(NULL, !(d = domain_of(b)) || (virDomainFree(d), false),
			    60 * VMACT_USEC_PER_SEC));
	d = domain_of(a);
	assert_non_null(d);
	assert_int_equal(virDomainIsActive(d), 1);
	virDomainFree(d);
	assert_true(TH_WAIT(NULL, pool_volumes() == vols - 1, 60 * VMACT_USEC_PER_SEC));
	assert_int_equal(write(p.in_fd, "go\n", 3), 3);
	if (th_proc_wait(&p) != 0) {
		th_print_log_tail(log, "real-scale", 60);
		fail_msg("real-scale failed");
	}
}

static void test_warm(void **state)
{
	const char *args[] = { "--group", "warm", NULL };

	(void)state;
	client("real-warm", args);
}

static void test_sick(void **state)
{
	const char *args[] = { "--group", "sick", NULL };

	(void)state;
	client("real-sick", args);
}

static void test_bad_requests(void **state)
{
	const char *args[] = { "--group", "web", "--other", "warm", NULL };

	(void)state;
	client("real-bad", args);
}

/* groupd's list of its VMs, members and standby, by domain name: every
 * PREFIX* domain must be in it (none orphaned) and every VM in it a
 * domain (none lost). */
static void check_no_orphans(void)
{
	_cleanup_(jsonp) json_t *doc = NULL;
	struct vmact_err err = { 0 };
	const json_t *vms, *v;
	char **names;
	size_t i;
	int n;

	assert_int_equal(cp_groupd_call(E.api, "GET", "/v1/vms", NULL, 10 * VMACT_USEC_PER_SEC,
					&doc, &err),
			 0);
	vms = json_object_get(doc, "vms");
	assert_true(json_is_array(vms));
	n = our_domains(&names);
	for (int k = 0; k < n; k++) {
		bool known = false;

		json_array_foreach(vms, i, v) known |=
			!strcmp(json_string_value(json_object_get(v, "name")) ?: "", names[k]);
		if (!known)
			fail_msg("domain %s is not one of groupd's VMs: orphaned", names[k]);
	}
	json_array_foreach(vms, i, v)
	{
		const char *pid = json_string_value(json_object_get(v, "provider_id"));
		const char *st = json_string_value(json_object_get(v, "state"));
		virDomainPtr d;

		/* a placeholder has no domain yet, nothing is lost there */
		if (!pid || (st && !strcmp(st, "pending")))
			continue;
		d = domain_of(pid);
		if (!d)
			fail_msg("groupd's VM %s has no domain: lost", pid);
		virDomainFree(d);
	}
	print_message("%d domains, %zu VMs known to groupd\n", n, json_array_size(vms));
	free_names(names);
}

/* vmact-cloudprovider SIGKILLed while an increase is in flight, at a
 * random moment of the call, then started again: the group settles at
 * its target with every member running, and libvirt holds exactly
 * groupd's VMs. */
static void test_killed_mid_increase(void **state)
{
	const char *args[] = { "--group", "web", "--delta", "2", NULL };
	const char *settle[] = { "--group", "web", NULL };
	struct th_proc p = { 0 };
	_cleanup_free_ char *said = NULL;
	char log[160];
	unsigned delay_ms = (unsigned)(vmact_now_usec() % 200);

	(void)state;
	path_in(log, sizeof(log), "client-increase.log");
	assert_int_equal(th_cp_client_start(&p, E.cp.port, "increase", args, log), 0);
	/* the client's start (node, grpc-js) takes longer than this: the
	 * kill lands before, during or after the call, and each must hold */
	usleep((useconds_t)(300 + delay_ms) * 1000);
	th_proc_stop(&E.cp.proc, SIGKILL, 0);
	th_proc_wait(&p);
	said = th_read_file(log);
	print_message("killed %u ms into the client's start; the call: %s\n", 300 + delay_ms,
		      said ? said : "");
	assert_int_equal(start_cp(), 0);
	client("settle", settle);
	check_no_orphans();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_warm),
		cmocka_unit_test(test_sick),
		cmocka_unit_test(test_killed_mid_increase),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
