/* SPDX-License-Identifier: Apache-2.0 */
/* A node VM joins a real Kubernetes control plane from its claim (issue
 * 35; make check-k8s): etcd and kube-apiserver built from their own Go
 * modules on loopback (tests/lib/kube.c), vmact-groupd and
 * vmact-cloudprovider on real libvirt (tests/lib/cpenv.c) with a group of
 * the node image tests/k8s/build-node-image.sh makes (Debian 12, systemd,
 * containerd, the kubelet of k8s.io/kubernetes, vmact-node) and a standby
 * in its running tier, driven by tests/peers/ca-client.js as
 * cluster-autoscaler would. It shows: no Node while the VM is a standby;
 * after NodeGroupIncreaseSize, a Node whose spec.providerID is the
 * instance the provider lists, with the group's labels and taints, that
 * NodeGroupForNode maps back to the group; the kubeconfig the group's
 * claim.secret sends in none of groupd's log, the domain XML, the console
 * or the API; the VM deleted as the autoscaler deletes it, nothing left in
 * libvirt. The figures (increase -> claimed, -> registered, -> Ready) are
 * printed. Root; needs VMACT_GUEST_DIR (make guest), the binaries
 * (VMACT_K8S_BIN) and the image (VMACT_K8S_NODE). */
#include <errno.h>
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

#include "base/macro.h"
#include "base/quantity.h"
#include "base/time.h"
#include "cloudprovider/groupd.h"
#include "tests/lib/cloudprov.h"
#include "tests/lib/cpenv.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/kube.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

/* Bounds against a hung test, not figures: a TCG boot of a systemd
 * machine, and a kubelet's start under TCG. */
#define BOOT_LIMIT_S  "900"
#define JOIN_LIMIT_US (600ULL * VMACT_USEC_PER_SEC)

DEFINE_PTR_CLEANUP(jsonp, json_t, json_decref)

static struct fx {
	struct th_kube kube;
	struct th_cpenv env;
	char secret_dir[64], secret[128], bad_secret[128], node_dir[256], ca[128], token_file[128];
	char kube_extra[512];
	bool kube_up;
} F;

static const char group_fmt[] =
	"{\"id\": \"k8s\", \"min\": 0, \"max\": 2, \"hosts\": [\"h1\"],"
	" \"labels\": {\"vmact.dev/pool\": \"k8s\", \"node.kubernetes.io/instance-type\": \"vm-1g\"},"
	" \"taints\": [{\"key\": \"dedicated\", \"value\": \"k8s\", \"effect\": \"NoSchedule\"}],"
	" \"template\": @TEMPLATE@,"
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT-NODE \"},"
	" \"claim\": {\"channel\": \"virtio:org.vmact.claim.0\", \"ack\": \"VMACT-NODE claimed\","
	" \"secret\": {\"kind\": \"kubeconfig\", \"file\": \"%s\"}},"
	" \"pool\": {\"running\": 1},"
	" \"lifecycle\": {\"boot_timeout_s\": 900},"
	" \"options\": {\"max_node_provision_time_s\": 900}}";

/* A group whose nodes' kubeconfig holds a token the API server refuses:
 * its kubelet never registers. */
static const char bad_group_fmt[] =
	"{\"id\": \"k8s-bad\", \"min\": 0, \"max\": 1, \"hosts\": [\"h1\"],"
	" \"template\": @TEMPLATE@,"
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT-NODE \"},"
	" \"claim\": {\"channel\": \"virtio:org.vmact.claim.0\", \"ack\": \"VMACT-NODE claimed\","
	" \"secret\": {\"kind\": \"kubeconfig\", \"file\": \"%s\"}},"
	" \"lifecycle\": {\"boot_timeout_s\": 900},"
	" \"options\": {\"max_node_provision_time_s\": %d}}";
/* How long the bad group's node may go without a Node: short, the test
 * waits it out. */
#define BAD_PROVISION_S 60

static const char template_fmt[] =
	"{\"domain_type\": \"qemu\", \"vcpus\": 2, \"max_vcpus\": 2, \"memory\": \"1Gi\","
	" \"max_memory\": \"1Gi\", \"kernel\": \"%s/vmlinuz\", \"initrd\": \"%s/initrd.img\","
	" \"cmdline\": \"root=/dev/vda rw console=ttyS0 quiet systemd.show_status=error\","
	" \"base_volume\": \"node-base.qcow2\", \"nic\": \"user\","
	" \"serial_log_dir\": \"%s\", \"reserve\": {\"cpu\": \"500m\", \"memory\": \"1Gi\"}}";

/* The group's secret: the kubeconfig for the API server as guests reach
 * it, vmact-cluster's alone (the key file's rules). */
static int write_secret(void)
{
	struct passwd *pw = getpwnam(TH_CPENV_USER);
	_cleanup_free_ char *kc = NULL;
	char server[80];

	if (!pw || th_scratch_dir("vmact-k8s-secret", F.secret_dir, sizeof(F.secret_dir)) < 0)
		return -1;
	snprintf(F.secret, sizeof(F.secret), "%s/k8s.kubeconfig", F.secret_dir);
	snprintf(server, sizeof(server), "https://10.0.2.2:%u", F.kube.api_port);
	kc = th_kube_kubeconfig(&F.kube, server);
	if (!kc || th_write_file(F.secret, kc) < 0 || chmod(F.secret, 0600) < 0 ||
	    chown(F.secret, pw->pw_uid, pw->pw_gid) < 0)
		return -1;
	/* The bad group's: the same with a token nobody issued. */
	{
		char *at = strstr(kc, F.kube.token);

		if (!at)
			return -1;
		memset(at, 'x', strlen(F.kube.token));
		snprintf(F.bad_secret, sizeof(F.bad_secret), "%s/bad.kubeconfig", F.secret_dir);
		if (th_write_file(F.bad_secret, kc) < 0 || chmod(F.bad_secret, 0600) < 0 ||
		    chown(F.bad_secret, pw->pw_uid, pw->pw_gid) < 0)
			return -1;
	}
	/* groupd's own access to the API server (its "kubernetes"): the CA
	 * and a controller's token. */
	{
		char src[300];
		_cleanup_free_ char *ca = NULL;

		snprintf(src, sizeof(src), "%s/ca.crt", F.kube.dir);
		snprintf(F.ca, sizeof(F.ca), "%s/ca.crt", F.secret_dir);
		snprintf(F.token_file, sizeof(F.token_file), "%s/groupd.token", F.secret_dir);
		ca = th_read_file(src);
		if (!ca || th_write_file(F.ca, ca) < 0 || chmod(F.ca, 0644) < 0 ||
		    th_write_file(F.token_file, F.kube.admin_token) < 0 ||
		    chmod(F.token_file, 0600) < 0 ||
		    chown(F.token_file, pw->pw_uid, pw->pw_gid) < 0)
			return -1;
		snprintf(F.kube_extra, sizeof(F.kube_extra),
			 "\"kubernetes\": {\"server\": \"%s\", \"ca_file\": \"%s\","
			 " \"token_file\": \"%s\"}",
			 F.kube.url, F.ca, F.token_file);
	}
	return 0;
}

static int setup(void **state)
{
	struct vmact_err err = { 0 };
	_cleanup_free_ char *groups = NULL, *tpl = NULL, *good = NULL, *bad = NULL;
	struct th_cpenv_opts o = { 0 };
	const char *node = getenv("VMACT_K8S_NODE");
	char bin[256], base[300], logs[300], msg[256];

	(void)state;
	tg_quiet_libvirt();
	if (!node || !*node || !th_kube_bin_dir(bin, sizeof(bin))) {
		print_error("needs VMACT_K8S_NODE (tests/k8s/build-node-image.sh) and the binaries "
			    "(make k8s-bins)\n");
		return -1;
	}
	snprintf(F.node_dir, sizeof(F.node_dir), "%s", node);
	if (th_kube_start(&F.kube, bin, "10.0.2.2", &err) < 0) {
		print_error("control plane: %s\n", err.msg);
		return -1;
	}
	F.kube_up = true;
	if (write_secret() < 0) {
		print_error("cannot write the group's secret\n");
		return -1;
	}
	snprintf(base, sizeof(base), "%s/node.qcow2", node);
	snprintf(logs, sizeof(logs), "/tmp/vmact-k8s-logs-%d", (int)getpid());
	if (mkdir(logs, 0777) < 0 || chmod(logs, 0777) < 0 ||
	    asprintf(&tpl, template_fmt, node, node, logs) < 0 ||
	    asprintf(&good, group_fmt, F.secret) < 0 ||
	    asprintf(&bad, bad_group_fmt, F.bad_secret, BAD_PROVISION_S) < 0 ||
	    asprintf(&groups, "%s, %s", good, bad) < 0)
		return -1;
	o.template_json = tpl;
	o.base_image = base;
	o.arbiter_cpu = "4";
	o.arbiter_memory = "8Gi";
	o.top_extra = F.kube_extra;
	if (th_cpenv_start_opts(&F.env, groups, &o, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = { "k8s", "k8s-bad", NULL };

	(void)state;
	th_cpenv_stop(&F.env, names);
	if (F.kube_up)
		th_kube_stop(&F.kube);
	if (F.secret_dir[0])
		th_rm_rf(F.secret_dir);
	return 0;
}

/* ca-client.js SCENARIO of group with args; its log's path in log. */
static void group_client(const char *group, const char *scenario, const char *const *extra,
			 char *log, size_t len)
{
	const char *args[24] = { "--groupd", F.env.api, "--group", group, "--wait-s", BOOT_LIMIT_S };
	size_t n = 6;
	int r;

	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	snprintf(log, len, "%s/client-%s-%s.log", F.env.dir, group, scenario);
	r = th_cp_client(F.env.cp.port, scenario, args, log);
	if (r != 0) {
		th_cp_print_log(&F.env.cp);
		fail_msg("ca-client.js %s: exit %d", scenario, r);
	}
}

static void client(const char *scenario, const char *const *extra, char *log, size_t len)
{
	group_client("k8s", scenario, extra, log, len);
}

/* The last {"event":EVENT,...} line of a client's log, parsed. */
static json_t *event_of(const char *log, const char *event)
{
	_cleanup_free_ char *text = th_read_file(log);
	char needle[64];
	const char *line = NULL;

	snprintf(needle, sizeof(needle), "{\"event\":\"%s\"", event);
	for (char *p = text; p && (p = strstr(p, needle)); p++)
		line = p;
	return line ? json_loadb(line, strcspn(line, "\n"), 0, NULL) : NULL;
}

static json_t *nodes(void)
{
	json_t *doc = NULL;
	long status;

	if (th_kube_call(&F.kube, "GET", "/api/v1/nodes", NULL, &status, &doc) < 0 ||
	    status != 200) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

static size_t node_count(void)
{
	_cleanup_(jsonp) json_t *doc = nodes();

	return doc ? json_array_size(json_object_get(doc, "items")) : (size_t)-1;
}

static bool pool_ready(void *unused)
{
	_cleanup_(jsonp) json_t *doc = NULL;
	struct vmact_err err = { 0 };
	const json_t *tier;

	(void)unused;
	if (cp_groupd_call(F.env.api, "GET", "/v1/groups/k8s", NULL, 10 * VMACT_USEC_PER_SEC, &doc,
			   &err) < 0)
		return false;
	tier = json_object_get(json_object_get(doc, "pool"), "running");
	/* While the standby boots: never a Node (a failed read says nothing). */
	{
		size_t n = node_count();

		if (n != (size_t)-1 && n != 0)
			fail_msg("a Node exists before any claim");
	}
	return json_integer_value(json_object_get(tier, "ready")) >= 1;
}

/* The Node whose spec.providerID is id (a new reference), else NULL. */
static json_t *node_of(const char *id)
{
	_cleanup_(jsonp) json_t *doc = nodes();
	json_t *n;
	size_t i;

	json_array_foreach(json_object_get(doc, "items"), i, n) {
		const char *p = json_string_value(
			json_object_get(json_object_get(n, "spec"), "providerID"));

		if (p && !strcmp(p, id))
			return json_incref(n);
	}
	return NULL;
}

static bool node_ready(const json_t *n)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));

		if (t && s && !strcmp(t, "Ready"))
			return !strcmp(s, "True");
	}
	return false;
}

/* The template node the provider gives now (its event, a new reference). */
static json_t *template_node(void)
{
	char log[256];

	client("template", NULL, log, sizeof(log));
	return event_of(log, "template");
}

static bool same_amount(const char *k, const char *a, const char *b)
{
	struct vmact_err err = { 0 };
	uint64_t x, y;

	if (!a || !b)
		return false;
	if (!strcmp(k, "cpu"))
		return vmact_quantity_parse_milli(a, &x, &err) == 0 &&
		       vmact_quantity_parse_milli(b, &y, &err) == 0 && x == y;
	return vmact_quantity_parse_value(a, &x, &err) == 0 &&
	       vmact_quantity_parse_value(b, &y, &err) == 0 && x == y;
}

/* The template node's capacity and allocatable against the Node's, each
 * printed; with must, every one the same amount. */
static void compare(const json_t *tmpl, const json_t *node, const char *when, bool must)
{
	static const char *const sides[] = { "capacity", "allocatable" };
	static const char *const keys[] = { "cpu", "memory", "ephemeral-storage", "pods" };
	const json_t *status = json_object_get(node, "status");

	for (size_t s = 0; s < 2; s++)
		for (size_t k = 0; k < 4; k++) {
			const char *t = json_string_value(
				json_object_get(json_object_get(tmpl, sides[s]), keys[k]));
			const char *n = json_string_value(
				json_object_get(json_object_get(status, sides[s]), keys[k]));
			bool same = same_amount(keys[k], t, n);

			print_message("template node %s: %s %s %s, the Node's %s%s\n", when,
				      sides[s], keys[k], t ?: "(none)", n ?: "(none)",
				      same ? "" : " (differs)");
			if (must && !same)
				fail_msg("template node %s: %s %s is %s, the Node's %s", when,
					 sides[s], keys[k], t ?: "(none)", n ?: "(none)");
		}
}

/* The Node the group's template node says it was measured on, "" when
 * estimated. */
static bool reported_by(void *want)
{
	_cleanup_(jsonp) json_t *doc = NULL;
	struct vmact_err err = { 0 };
	const char *by;

	if (cp_groupd_call(F.env.api, "GET", "/v1/groups/k8s", NULL, 10 * VMACT_USEC_PER_SEC, &doc,
			   &err) < 0)
		return false;
	by = json_string_value(json_object_get(json_object_get(doc, "template"), "reported_by"));
	return by && !strcmp(by, want);
}

static void test_join(void **state)
{
	char log[256], id[256], name[128];
	_cleanup_(jsonp) json_t *ev = NULL, *node = NULL, *estimate = NULL, *tmpl = NULL;
	const json_t *labels, *taints, *t;
	double t0, t_reg = 0, t_ready = 0;
	bool dedicated = false;
	size_t i;

	(void)state;
	/* The standby: healthy in its tier, and no Node for it. */
	if (!th_wait_daemon(&F.env.groupd, pool_ready, NULL, 900))
		fail_msg("no ready standby in the running tier");
	assert_int_equal(node_count(), 0);
	print_message("standby ready; no Node\n");
	/* What the autoscaler simulates on before any node registered: the
	 * estimate (compared below, once there is a Node). */
	estimate = template_node();
	assert_non_null(estimate);

	t0 = th_now_s();
	{
		const char *args[] = { "--delta", "1", NULL };

		client("increase", args, log, sizeof(log));
	}
	client("settle", NULL, log, sizeof(log));
	ev = event_of(log, "settled");
	assert_non_null(ev);
	assert_int_equal(json_array_size(json_object_get(ev, "ids")), 1);
	snprintf(id, sizeof(id), "%s",
		 json_string_value(json_array_get(json_object_get(ev, "ids"), 0)));
	print_message("instance %s running %.1f s after the increase\n", id, th_now_s() - t0);

	/* The Node the kubelet registers, and when it is Ready. */
	{
		uint64_t end = vmact_now_usec() + JOIN_LIMIT_US;

		while (vmact_now_usec() < end) {
			json_decref(node);
			node = node_of(id);
			if (node && !t_reg)
				t_reg = th_now_s();
			if (node && node_ready(node)) {
				t_ready = th_now_s();
				break;
			}
			usleep(100000);
		}
	}
	if (!node)
		fail_msg("no Node with spec.providerID %s", id);
	print_message("k8s running tier: registered %.1f s, Ready %s%.1f s after the increase\n",
		      t_reg - t0, t_ready ? "" : "never (", t_ready ? t_ready - t0 : 0.0);
	assert_true(t_ready > 0);
	snprintf(name, sizeof(name), "%s",
		 json_string_value(json_object_get(json_object_get(node, "metadata"), "name")));
	/* The group's labels and taints, as the claim gave them. */
	labels = json_object_get(json_object_get(node, "metadata"), "labels");
	assert_string_equal(json_string_value(json_object_get(labels, "vmact.dev/pool")), "k8s");
	assert_string_equal(json_string_value(
				    json_object_get(labels, "node.kubernetes.io/instance-type")),
			    "vm-1g");
	taints = json_object_get(json_object_get(node, "spec"), "taints");
	json_array_foreach(taints, i, t)
		dedicated |= !strcmp(json_string_value(json_object_get(t, "key")) ?: "",
				     "dedicated") &&
			     !strcmp(json_string_value(json_object_get(t, "value")) ?: "", "k8s") &&
			     !strcmp(json_string_value(json_object_get(t, "effect")) ?: "",
				     "NoSchedule");
	assert_true(dedicated);
	/* The template node says what this Node's kubelet reports, once
	 * vmact-groupd read it; its labels are the Node's but the hostname
	 * (the template's own name). */
	compare(estimate, node, "estimated", false);
	if (!th_wait_daemon(&F.env.groupd, reported_by, name, 120))
		fail_msg("the group's template never said what Node %s reports", name);
	tmpl = template_node();
	assert_non_null(tmpl);
	compare(tmpl, node, "reported", true);
	{
		const json_t *tl = json_object_get(tmpl, "labels"), *v;
		const char *k;

		json_object_foreach((json_t *)tl, k, v)
			if (strcmp(k, "kubernetes.io/hostname") &&
			    !json_equal(v, json_object_get(labels, k)))
				fail_msg("template node's label %s=%s, the Node's %s", k,
					 json_string_value(v),
					 json_string_value(json_object_get(labels, k)) ?: "(none)");
	}
	/* The autoscaler's question for every Node it lists. */
	{
		const char *args[] = { "--provider-id", id, "--name", name, NULL };
		_cleanup_(jsonp) json_t *fe = NULL;

		client("for-node", args, log, sizeof(log));
		fe = event_of(log, "for-node");
		assert_non_null(fe);
		assert_string_equal(json_string_value(json_object_get(fe, "group")), "k8s");
	}
	/* The kubeconfig's token went nowhere it could be read. */
	{
		char path[300];
		virDomainPtr d = th_cpenv_domain(&F.env, id);
		char *xml = d ? virDomainGetXMLDesc(d, 0) : NULL;

		assert_non_null(xml);
		assert_null(strstr(xml, F.kube.token));
		free(xml);
		virDomainFree(d);
		assert_int_equal(th_count_in_file(F.env.groupd_log, F.kube.token), 0);
		snprintf(path, sizeof(path), "%s/client-k8s-settle.log", F.env.dir);
		assert_int_equal(th_count_in_file(path, F.kube.token), 0);
	}
	/* Deleted as the autoscaler deletes it: nothing left in libvirt. */
	{
		const char *args[] = { "--provider-id", id, "--name", name, NULL };

		client("delete-one", args, log, sizeof(log));
		client("settle", NULL, log, sizeof(log));
	}
	{
		virDomainPtr d = th_cpenv_domain(&F.env, id);

		assert_null(d);
	}
	/* And its Node, deleted by vmact-groupd as a cloud's controller
	 * manager would (no controller manager runs here). */
	{
		uint64_t end = vmact_now_usec() + 60 * VMACT_USEC_PER_SEC;
		json_t *n;

		while ((n = node_of(id)) && vmact_now_usec() < end) {
			json_decref(n);
			usleep(200000);
		}
		if (n)
			fail_msg("the Node of %s is still in the API server", id);
		assert_int_equal(th_count_in_file(F.env.groupd_log,
						  "and its Node from the API server"),
				 1);
	}
	/* At zero and restarted, the group still says what its node
	 * reported: the autoscaler's next scale-up from zero simulates on it. */
	{
		char msg[256];

		json_decref(tmpl);
		th_proc_stop(&F.env.groupd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
		if (th_cpenv_restart_groupd(&F.env, msg, sizeof(msg)) < 0)
			fail_msg("%s", msg);
		assert_true(reported_by(name));
		tmpl = template_node();
		assert_non_null(tmpl);
		compare(tmpl, node, "after a restart at zero", true);
	}
}

/* The bad group's member: its error NOT_REGISTERED in the nodes groupd
 * lists (what NodeGroupNodes gives the autoscaler), "" while none. */
static bool not_registered(void *id)
{
	_cleanup_(jsonp) json_t *doc = NULL;
	struct vmact_err err = { 0 };
	const json_t *n;
	size_t i;

	if (cp_groupd_call(F.env.api, "GET", "/v1/groups/k8s-bad/nodes", NULL,
			   10 * VMACT_USEC_PER_SEC, &doc, &err) < 0)
		return false;
	json_array_foreach(json_object_get(doc, "nodes"), i, n) {
		const char *p = json_string_value(json_object_get(n, "provider_id"));
		const char *code = json_string_value(
			json_object_get(json_object_get(n, "error"), "code"));

		if (p && !strcmp(p, id))
			return code && !strcmp(code, "NOT_REGISTERED");
	}
	return false;
}

/* A node VM whose kubelet never registers (the API server refuses its
 * token): in service, listed to the autoscaler, reported NOT_REGISTERED
 * once max_node_provision_time_s passed, and deleted as the autoscaler
 * deletes an instance that never registered: nothing left in libvirt. */
static void test_never_registers(void **state)
{
	char log[256], id[256];
	_cleanup_(jsonp) json_t *ev = NULL;
	double t0;

	(void)state;
	t0 = th_now_s();
	{
		const char *args[] = { "--delta", "1", NULL };

		group_client("k8s-bad", "increase", args, log, sizeof(log));
	}
	group_client("k8s-bad", "settle", NULL, log, sizeof(log));
	ev = event_of(log, "settled");
	assert_non_null(ev);
	assert_int_equal(json_array_size(json_object_get(ev, "ids")), 1);
	snprintf(id, sizeof(id), "%s",
		 json_string_value(json_array_get(json_object_get(ev, "ids"), 0)));
	print_message("instance %s running %.1f s after the increase\n", id, th_now_s() - t0);
	if (!th_wait_daemon(&F.env.groupd, not_registered, id, BAD_PROVISION_S + 300))
		fail_msg("%s never reported NOT_REGISTERED", id);
	print_message("reported NOT_REGISTERED %.1f s after the increase\n", th_now_s() - t0);
	{
		json_t *n = node_of(id);

		if (n) {
			json_decref(n);
			fail_msg("a Node of %s, whose token is refused", id);
		}
	}
	assert_int_equal(th_count_in_file(F.env.groupd_log, "s after its claim: reported"), 1);
	{
		const char *args[] = { "--provider-id", id, "--name", id, NULL };

		group_client("k8s-bad", "delete-one", args, log, sizeof(log));
		group_client("k8s-bad", "settle", NULL, log, sizeof(log));
	}
	{
		virDomainPtr d = th_cpenv_domain(&F.env, id);

		assert_null(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_never_registers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
