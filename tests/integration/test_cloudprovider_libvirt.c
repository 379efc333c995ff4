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
 * run as vmact-cluster (tests/lib/cpenv.c). Root; run under
 * /work/itest.lock like every integration test. */
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
#include "tests/lib/cpenv.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

/* Booting a TCG guest and its first health lines: tens of seconds here;
 * a bound against a hung test, not a figure. */
#define WAIT_S "600"

/* web: the defaults; warm: one VM in the running tier; sick: a health
 * line the guest never prints, 20 s to be healthy and 5 s before the next
 * boot (the test is about that error). */
static const char groups[] =
	"{\"id\": \"web\", \"min\": 0, \"max\": 3, \"hosts\": [\"h1\"],"
	" \"labels\": {\"vmact.io/group\": \"web\"},"
	" \"taints\": [{\"key\": \"dedicated\", \"value\": \"web\", \"effect\": \"NoSchedule\"}],"
	" \"template\": @TEMPLATE@, \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT seq=\"},"
	" \"claim\": {\"channel\": \"serial1\", \"ack\": \"VMACT claimed\"},"
	" \"options\": {\"max_node_provision_time_s\": 600}},"
	"{\"id\": \"warm\", \"min\": 0, \"max\": 2, \"hosts\": [\"h1\"],"
	" \"labels\": {\"vmact.io/group\": \"warm\"}, \"template\": @TEMPLATE@,"
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT seq=\"},"
	" \"claim\": {\"channel\": \"serial1\", \"ack\": \"VMACT claimed\"},"
	" \"pool\": {\"running\": 1}},"
	"{\"id\": \"sick\", \"min\": 0, \"max\": 1, \"hosts\": [\"h1\"], \"template\": @TEMPLATE@,"
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"NEVER PRINTED\"},"
	" \"lifecycle\": {\"boot_timeout_s\": 20, \"retry_backoff_s\": 5}}";

static struct th_cpenv E;

DEFINE_PTR_CLEANUP(jsonp, json_t, json_decref)

static int setup(void **state)
{
	char msg[256];

	(void)state;
	tg_quiet_libvirt();
	if (th_cpenv_start(&E, groups, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = { "web", "warm", "sick", NULL };

	(void)state;
	th_cpenv_stop(&E, names);
	return 0;
}

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", E.dir, name);
}

/* The client's own notes ("# ..." and event lines): the figures of a run. */
static void print_notes(const char *log)
{
	_cleanup_free_ char *text = th_read_file(log);

	for (char *l = text, *nl; l && *l; l = nl + 1) {
		nl = strchr(l, '\n');
		if (nl)
			*nl = 0;
		if ((l[0] == '#' && strncmp(l, "# template node", 15)) || l[0] == '{')
			print_message("  %s\n", l);
		if (!nl)
			break;
	}
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
	print_notes(log);
}

/* The value of "key":"..." in the last line of log holding event. */
static bool event_field(const char *log, const char *event, const char *key, int index, char *out,
			size_t len)
{
	json_t *j = th_cp_event(log, event);
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
		"--group",
		"web",
		"--groupd",
		E.api,
		"--wait-s",
		WAIT_S,
		"--capacity",
		"{\"cpu\":\"1\",\"ephemeral-storage\":\"1Gi\",\"memory\":\"256Mi\",\"pods\":\"110\"}",
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
		d = th_cpenv_domain(&E, i ? b : a);
		assert_non_null(d);
		assert_int_equal(virDomainIsActive(d), 1);
		virDomainFree(d);
	}
	vols = th_cpenv_volumes(&E);
	print_message("running: %s %s; %d volumes in the pool\n", a, b, vols);
	assert_true(vols >= 3);
	assert_int_equal(write(p.in_fd, "go\n", 3), 3);
	if (!TH_WAIT(NULL, th_count_in_file(log, "\"event\":\"deleted\"") || th_proc_exited(&p),
		     600 * VMACT_USEC_PER_SEC)) {
		th_print_log_tail(log, "real-scale", 60);
		fail_msg("the deletion was not seen");
	}
	/* the deleted VM is gone, domain and overlay; the other runs */
	assert_true(TH_WAIT(NULL, !(d = th_cpenv_domain(&E, b)) || (virDomainFree(d), false),
			    60 * VMACT_USEC_PER_SEC));
	d = th_cpenv_domain(&E, a);
	assert_non_null(d);
	assert_int_equal(virDomainIsActive(d), 1);
	virDomainFree(d);
	assert_true(TH_WAIT(NULL, th_cpenv_volumes(&E) == vols - 1, 60 * VMACT_USEC_PER_SEC));
	assert_int_equal(write(p.in_fd, "go\n", 3), 3);
	if (th_proc_wait(&p) != 0) {
		th_print_log_tail(log, "real-scale", 60);
		fail_msg("real-scale failed");
	}
	print_notes(log);
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

/* Whether no VM of groupd's has a job in flight ("busy"): a member
 * failed at its boot deadline is destroyed by a job while its state still
 * reads booting (CI saw test_sick's VM so, its domain gone, after the
 * restart of test_killed_mid_increase). */
static bool none_busy(json_t **doc)
{
	struct vmact_err err = { 0 };
	const json_t *v;
	size_t i;

	json_decref(*doc);
	*doc = NULL;
	if (cp_groupd_call(E.api, "GET", "/v1/vms", NULL, 10 * VMACT_USEC_PER_SEC, doc, &err) < 0 ||
	    !json_is_array(json_object_get(*doc, "vms")))
		return false;
	json_array_foreach(json_object_get(*doc, "vms"), i, v)
		if (json_is_true(json_object_get(v, "busy")))
			return false;
	return true;
}

/* groupd's list of its VMs, members and standby, by domain name, once no
 * job is in flight (60 s at most): every PREFIX* domain must be in it
 * (none orphaned) and every VM in it a domain (none lost). */
static void check_no_orphans(void)
{
	_cleanup_(jsonp) json_t *doc = NULL;
	const json_t *vms, *v;
	double end = th_now_s() + 60;
	char **names;
	size_t i;
	int n;

	while (!none_busy(&doc) && th_now_s() < end)
		usleep(200 * 1000);
	assert_non_null(doc);
	vms = json_object_get(doc, "vms");
	assert_true(json_is_array(vms));
	n = th_cpenv_domains(&E, &names);
	for (int k = 0; k < n; k++) {
		bool known = false;

		json_array_foreach(vms, i, v)
			known |= !strcmp(json_string_value(json_object_get(v, "name")) ?: "",
					 names[k]);
		if (!known)
			fail_msg("domain %s is not one of groupd's VMs: orphaned", names[k]);
	}
	json_array_foreach(vms, i, v) {
		const char *pid = json_string_value(json_object_get(v, "provider_id"));
		const char *st = json_string_value(json_object_get(v, "state"));
		virDomainPtr d;

		/* A placeholder has no domain yet, and one being deleted may
		 * have none any more (its domain goes first, then its disk
		 * and its lease: CI saw test_sick's replaced VM still
		 * deleting here): nothing is lost there. */
		if (!pid || (st && (!strcmp(st, "pending") || !strcmp(st, "deleting"))))
			continue;
		d = th_cpenv_domain(&E, pid);
		if (!d)
			fail_msg("groupd's VM %s (%s) has no domain: lost", pid,
				 st ? st : "no state");
		virDomainFree(d);
	}
	print_message("%d domains, %zu VMs known to groupd\n", n, json_array_size(vms));
	th_cpenv_free_names(names);
}

/* vmact-cloudprovider SIGKILLed by the client itself 0 and 1 ms after
 * its increase went out (groupd answers in 2-3 ms here: the kill lands
 * while the provider waits for groupd, or before the request reached it),
 * then started again; after each, the group settles at its target with
 * every member running, and libvirt holds exactly groupd's VMs. */
static void test_killed_mid_increase(void **state)
{
	const char *settle[] = { "--group", "web", NULL };

	(void)state;
	for (int round = 0; round < 2; round++) {
		char pid[16], after[16], log[160];
		const char *args[] = { "--group",         "web", "--delta", "1", "--kill-pid", pid,
				       "--kill-after-ms", after, NULL };
		_cleanup_free_ char *said = NULL;

		snprintf(pid, sizeof(pid), "%d", (int)E.cp.proc.pid);
		snprintf(after, sizeof(after), "%d", round);
		path_in(log, sizeof(log), "client-increase.log");
		assert_int_equal(th_cp_client(E.cp.port, "increase", args, log), 0);
		said = th_read_file(log);
		print_message("round %d, killed %d ms after the call went out; the client saw: %s",
			      round, round, said ? said : "");
		assert_true(TH_WAIT(NULL, th_proc_exited(&E.cp.proc), TH_SAFETY_USEC));
		assert_int_equal(E.cp.proc.status, 128 + SIGKILL);
		assert_int_equal(th_cpenv_restart_cp(&E), 0);
		client("settle", settle);
		check_no_orphans();
	}
}

/* mTLS in front of the real groupd: the autoscaler's certificate is
 * served its groups, a client without one is refused; then plaintext on
 * loopback again for the rest. */
static void test_mtls(void **state)
{
	char key[160], cert[160], ca[160], ckey[160], ccert[160], log[160];
	const char *tls[] = { "--groupd-socket", E.api, "--key", key, "--cert", cert,
			      "--cacert",        ca,    NULL };
	const char *good[] = { "--cacert", ca, "--cert", ccert, "--key", ckey, NULL };
	const char *none[] = { "--cacert", ca, NULL };
	char msg[256];

	(void)state;
	path_in(key, sizeof(key), "server.key");
	path_in(cert, sizeof(cert), "server.crt");
	path_in(ca, sizeof(ca), "ca.crt");
	path_in(ckey, sizeof(ckey), "client.key");
	path_in(ccert, sizeof(ccert), "client.crt");
	path_in(log, sizeof(log), "client-mtls.log");
	assert_int_equal(th_cp_make_certs(E.dir), 0);
	assert_int_equal(th_cp_stop(&E.cp), 0);
	if (th_cp_start(&E.cp, E.dir, TH_CPENV_USER, tls, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	assert_int_equal(th_cp_client(E.cp.port, "served", good, log), 0);
	assert_int_equal(th_cp_client(E.cp.port, "refused", none, log), 0);
	assert_int_equal(th_cp_client(E.cp.port, "refused", NULL, log), 0);
	assert_int_equal(th_cp_stop(&E.cp), 0);
	assert_int_equal(th_cpenv_restart_cp(&E), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale),        cmocka_unit_test(test_mtls),
		cmocka_unit_test(test_bad_requests), cmocka_unit_test(test_warm),
		cmocka_unit_test(test_sick),         cmocka_unit_test(test_killed_mid_increase),
	};

	/* libvirt asks its clients to ignore SIGPIPE: a libvirtd that
	 * restarts under the test's own connection must be an error of the
	 * next call, not the end of the test program. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
