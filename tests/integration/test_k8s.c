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
#include "tests/lib/k8senv.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

/* Bounds against a hung test, not figures: a TCG boot of a systemd
 * machine, and a kubelet's start under TCG. */
#define BOOT_LIMIT_S  "900"
#define JOIN_LIMIT_US (600ULL * VMACT_USEC_PER_SEC)

DEFINE_PTR_CLEANUP(jsonp, json_t, json_decref)

static struct th_k8senv F;

/* A group of the node image with a standby in its running tier. */
#define K8S_GROUP                                                                                      \
	"{\"id\": \"k8s\", \"min\": 0, \"max\": 2, \"hosts\": [\"h1\"],"                               \
	" \"labels\": {\"vmact.dev/pool\": \"k8s\", \"node.kubernetes.io/instance-type\": \"vm-1g\"}," \
	" \"taints\": [{\"key\": \"dedicated\", \"value\": \"k8s\", \"effect\": \"NoSchedule\"}],"     \
	" \"template\": @TEMPLATE@,"                                                                   \
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT-NODE \"},"                           \
	" \"claim\": {\"channel\": \"virtio:org.vmact.claim.0\", \"ack\": \"VMACT-NODE claimed\","     \
	" \"secret\": {\"kind\": \"kubeconfig\", \"file\": \"@SECRET@\"}},"                            \
	" \"pool\": {\"running\": 1},"                                                                 \
	" \"lifecycle\": {\"boot_timeout_s\": 900},"                                                   \
	" \"options\": {\"max_node_provision_time_s\": 900}}"

/* How long the bad group's node may go without a Node: short, the test
 * waits it out. */
#define BAD_PROVISION_S "60"

/* A group whose nodes' kubeconfig holds a token the API server refuses:
 * its kubelet never registers. */
#define BAD_GROUP                                                                                  \
	"{\"id\": \"k8s-bad\", \"min\": 0, \"max\": 1, \"hosts\": [\"h1\"],"                       \
	" \"template\": @TEMPLATE@,"                                                               \
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT-NODE \"},"                       \
	" \"claim\": {\"channel\": \"virtio:org.vmact.claim.0\", \"ack\": \"VMACT-NODE claimed\"," \
	" \"secret\": {\"kind\": \"kubeconfig\", \"file\": \"@BAD_SECRET@\"}},"                    \
	" \"lifecycle\": {\"boot_timeout_s\": 900},"                                               \
	" \"options\": {\"max_node_provision_time_s\": " BAD_PROVISION_S "}}"

/* A group whose nodes join by kubeadm: the claim's secret a
 * JoinConfiguration (the control plane made one kubeadm joins, by
 * kubeadm's own phases and a kube-controller-manager). No pool: a boot at
 * the increase. */
#define ADM_GROUP                                                                                      \
	"{\"id\": \"k8s-adm\", \"min\": 0, \"max\": 1, \"hosts\": [\"h1\"],"                           \
	" \"labels\": {\"vmact.dev/pool\": \"k8s-adm\"},"                                              \
	" \"taints\": [{\"key\": \"joined-by\", \"value\": \"kubeadm\", \"effect\": \"NoSchedule\"}]," \
	" \"template\": @TEMPLATE@,"                                                                   \
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT-NODE \"},"                           \
	" \"claim\": {\"channel\": \"virtio:org.vmact.claim.0\", \"ack\": \"VMACT-NODE claimed\","     \
	" \"secret\": {\"kind\": \"kubeadm\", \"file\": \"@KUBEADM@\"}},"                              \
	" \"lifecycle\": {\"boot_timeout_s\": 900},"                                                   \
	" \"options\": {\"max_node_provision_time_s\": 900}}"

static int setup(void **state)
{
	char msg[256];

	(void)state;
	if (th_k8senv_start(&F, K8S_GROUP ", " BAD_GROUP ", " ADM_GROUP, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = { "k8s", "k8s-bad", "k8s-adm", NULL };

	(void)state;
	th_k8senv_stop(&F, names);
	return 0;
}

static void group_client(const char *group, const char *scenario, const char *const *extra,
			 char *log, size_t len)
{
	int r = th_k8senv_client(&F, group, scenario, extra, log, len);

	if (r != 0)
		fail_msg("ca-client.js %s: exit %d", scenario, r);
}

static void client(const char *scenario, const char *const *extra, char *log, size_t len)
{
	group_client("k8s", scenario, extra, log, len);
}

#define event_of    th_cp_event
#define node_of(id) th_k8senv_node_of(&F, id)
#define node_ready  th_k8senv_node_ready

static bool pool_ready(void *unused)
{
	size_t n = th_k8senv_node_count(&F);

	(void)unused;
	/* While the standby boots: never a Node (a failed read says nothing). */
	if (n != (size_t)-1 && n != 0)
		fail_msg("a Node exists before any claim");
	return th_k8senv_running_ready(&F, "k8s") >= 1;
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
/* GET path of vmact-groupd's API (a new reference), NULL when it failed. */
static json_t *groupd_get(const char *path)
{
	struct vmact_err err = { 0 };
	json_t *doc = NULL;

	return cp_groupd_call(F.env.api, "GET", path, NULL, 10 * VMACT_USEC_PER_SEC, &doc, &err) < 0
		       ? NULL
		       : doc;
}

static bool reported_by(void *want)
{
	_cleanup_(jsonp) json_t *doc = groupd_get("/v1/groups/k8s");
	const char *by;

	by = json_string_value(json_object_get(json_object_get(doc, "template"), "reported_by"));
	return by && !strcmp(by, want);
}

/* NodeGroupIncreaseSize(+1) of group as the autoscaler calls it, then its
 * one member running: its provider ID in id. */
static void increase_one(const char *group, double t0, char *id, size_t len)
{
	const char *args[] = { "--delta", "1", NULL };
	_cleanup_(jsonp) json_t *ev = NULL;
	char log[256];

	group_client(group, "increase", args, log, sizeof(log));
	group_client(group, "settle", NULL, log, sizeof(log));
	ev = event_of(log, "settled");
	assert_non_null(ev);
	assert_int_equal(json_array_size(json_object_get(ev, "ids")), 1);
	snprintf(id, len, "%s", json_string_value(json_array_get(json_object_get(ev, "ids"), 0)));
	print_message("instance %s running %.1f s after the increase\n", id, th_now_s() - t0);
}

/* The Node the kubelet of instance id registers, and when it is Ready
 * (JOIN_LIMIT_US at most); with t_kubelet, also when the console said
 * vmact-node started the kubelet (the rest is the kubelet's own start
 * under TCG). The Node (a new reference) or NULL; the times 0 when not
 * seen. */
static json_t *wait_node(const char *id, double *t_kubelet, double *t_reg, double *t_ready)
{
	uint64_t end = vmact_now_usec() + JOIN_LIMIT_US;
	json_t *node = NULL;

	while (vmact_now_usec() < end) {
		if (t_kubelet && !*t_kubelet && th_k8senv_consoles_with(&F, "kubelet started") > 0)
			*t_kubelet = th_now_s();
		json_decref(node);
		node = node_of(id);
		if (node && !*t_reg)
			*t_reg = th_now_s();
		if (node && node_ready(node)) {
			*t_ready = th_now_s();
			break;
		}
		usleep(100000);
	}
	return node;
}

static void test_join(void **state)
{
	char log[256], id[256], name[128];
	_cleanup_(jsonp) json_t *node = NULL, *estimate = NULL, *tmpl = NULL;
	const json_t *labels, *taints, *t;
	double t0, t_reg = 0, t_ready = 0, t_kubelet = 0;
	bool dedicated = false;
	size_t i;

	(void)state;
	/* The standby: healthy in its tier, and no Node for it. */
	if (!th_wait_daemon(&F.env.groupd, pool_ready, NULL, 900))
		fail_msg("no ready standby in the running tier");
	assert_int_equal(th_k8senv_node_count(&F), 0);
	print_message("standby ready; no Node\n");
	/* What the autoscaler simulates on before any node registered: the
	 * estimate (compared below, once there is a Node). */
	estimate = template_node();
	assert_non_null(estimate);

	t0 = th_now_s();
	increase_one("k8s", t0, id, sizeof(id));

	node = wait_node(id, &t_kubelet, &t_reg, &t_ready);
	if (!node)
		fail_msg("no Node with spec.providerID %s", id);
	print_message("k8s running tier: kubelet started %.1f s, registered %.1f s, Ready %s%.1f s "
		      "after the increase\n",
		      t_kubelet ? t_kubelet - t0 : -1.0, t_reg - t0, t_ready ? "" : "never (",
		      t_ready ? t_ready - t0 : 0.0);
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
	_cleanup_(jsonp) json_t *doc = groupd_get("/v1/groups/k8s-bad/nodes");
	const json_t *n;
	size_t i;

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
	double t0;

	(void)state;
	t0 = th_now_s();
	increase_one("k8s-bad", t0, id, sizeof(id));
	if (!th_wait_daemon(&F.env.groupd, not_registered, id, atoi(BAD_PROVISION_S) + 300))
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

/* A Node as a kubelet of another would register it (the admin's
 * credentials: the API server takes any providerID from them). */
static void make_node(const char *name, const char *provider_id)
{
	_cleanup_(jsonp) json_t *doc = NULL;
	_cleanup_free_ char *body = NULL;
	long status = 0;

	assert_true(
		asprintf(&body,
			 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},"
			 "\"spec\":{%s%s%s}}",
			 name, provider_id ? "\"providerID\":\"" : "", provider_id ?: "",
			 provider_id ? "\"" : "") > 0);
	assert_int_equal(th_kube_call(&F.kube, "POST", "/api/v1/nodes", body, &status, &doc), 0);
	if (status != 201)
		fail_msg("POST Node %s: status %ld", name, status);
}

static bool node_named(const char *name)
{
	_cleanup_(jsonp) json_t *doc = NULL;
	char path[128];
	long status = 0;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
	assert_int_equal(th_kube_call(&F.kube, "GET", path, NULL, &status, &doc), 0);
	return status == 200;
}

static bool stale_gone(void *name)
{
	return !node_named(name);
}

/* Nodes left behind (a vmact-groupd killed between a removal and its
 * Node's deletion, a VM undefined by hand): at its start vmact-groupd
 * deletes the Node whose provider ID names its host and a domain that host
 * does not have, and leaves alone one of another host, one with no
 * provider ID, and one whose domain exists. */
static void test_stale_nodes(void **state)
{
	char msg[256], live[160];
	const char *pid;

	(void)state;
	/* the standby the first test's pool refilled: a domain h1 has */
	if (!th_wait_daemon(&F.env.groupd, pool_ready, NULL, 900))
		fail_msg("no ready standby in the running tier");
	{
		_cleanup_(jsonp) json_t *vms = groupd_get("/v1/groups/k8s/standby");

		pid = json_string_value(
			json_object_get(json_array_get(json_object_get(vms, "vms"), 0),
					"provider_id"));
		assert_non_null(pid);
		snprintf(live, sizeof(live), "%s", pid);
	}
	make_node("stale-1", "libvirt://h1/6b1d2f0a-0000-4000-8000-00000000dead");
	make_node("other-host-1", "libvirt://elsewhere/6b1d2f0a-0000-4000-8000-00000000beef");
	make_node("no-provider-1", NULL);
	make_node("live-1", live);
	th_proc_stop(&F.env.groupd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	if (th_cpenv_restart_groupd(&F.env, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	if (!th_wait_daemon(&F.env.groupd, stale_gone, "stale-1", 120))
		fail_msg("the Node of a domain h1 does not have is still there");
	assert_int_equal(th_count_in_file(F.env.groupd_log,
					  "Node stale-1: no host has the domain of"),
			 1);
	assert_true(node_named("other-host-1"));
	assert_true(node_named("no-provider-1"));
	assert_true(node_named("live-1"));
	for (const char *const *k =
		     (const char *const[]){ "other-host-1", "no-provider-1", "live-1", NULL };
	     *k; k++) {
		_cleanup_(jsonp) json_t *doc = NULL;
		char path[128];
		long status = 0;

		snprintf(path, sizeof(path), "/api/v1/nodes/%s", *k);
		th_kube_call(&F.kube, "DELETE", path, NULL, &status, &doc);
	}
}

/* A node that joins by kubeadm join (vmact-node runs it with the group's
 * JoinConfiguration, its nodeRegistration from the claim): kubeadm's
 * discovery by the bootstrap token with the CA pinned, the kubelet's TLS
 * bootstrap (its CSR approved and signed by kube-controller-manager), and
 * a Node with the instance's provider ID, the group's labels and taints;
 * the token nowhere it could be read; deleted with its VM. */
static void test_kubeadm_join(void **state)
{
	char log[256], id[256], name[128];
	_cleanup_(jsonp) json_t *node = NULL;
	const json_t *labels, *taints, *t;
	double t0, t_reg = 0, t_ready = 0;
	bool tainted = false;
	size_t i;

	(void)state;
	t0 = th_now_s();
	increase_one("k8s-adm", t0, id, sizeof(id));
	node = wait_node(id, NULL, &t_reg, &t_ready);
	if (!node) {
		th_print_log_tail(F.env.groupd_log, "vmact-groupd", 3000);
		th_k8senv_print_consoles(&F, "joining with kubeadm");
		fail_msg("no Node with spec.providerID %s (kubeadm join)", id);
	}
	print_message("k8s-adm cold boot, kubeadm join: registered %.1f s, Ready %s%.1f s after "
		      "the increase\n",
		      t_reg - t0, t_ready ? "" : "never (", t_ready ? t_ready - t0 : 0.0);
	/* Ready is asserted last, after the cleanup, so that a node that
	 * never goes Ready leaves no Node behind for test_stale_nodes; its
	 * conditions and the console say why (one run never went Ready
	 * before they were printed; every run since did). */
	if (!t_ready) {
		const json_t *c;

		json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"),
				   i, c)
			print_message("Node condition %s=%s: %s: %s\n",
				      json_string_value(json_object_get(c, "type")),
				      json_string_value(json_object_get(c, "status")),
				      json_string_value(json_object_get(c, "reason")) ?: "",
				      json_string_value(json_object_get(c, "message")) ?: "");
		th_k8senv_print_consoles(&F, "joining with kubeadm");
	}
	snprintf(name, sizeof(name), "%s",
		 json_string_value(json_object_get(json_object_get(node, "metadata"), "name")));
	labels = json_object_get(json_object_get(node, "metadata"), "labels");
	assert_string_equal(json_string_value(json_object_get(labels, "vmact.dev/pool")),
			    "k8s-adm");
	taints = json_object_get(json_object_get(node, "spec"), "taints");
	json_array_foreach(taints, i, t)
		tainted |=
			!strcmp(json_string_value(json_object_get(t, "key")) ?: "", "joined-by") &&
			!strcmp(json_string_value(json_object_get(t, "value")) ?: "", "kubeadm") &&
			!strcmp(json_string_value(json_object_get(t, "effect")) ?: "",
				"NoSchedule");
	assert_true(tainted);
	/* The kubelet's credentials are its own, from the TLS bootstrap: a
	 * kubelet client CSR, signed. */
	{
		_cleanup_(jsonp) json_t *csrs = NULL;
		long status = 0;
		bool signed_one = false;
		const json_t *c;

		assert_int_equal(
			th_kube_call(&F.kube, "GET",
				     "/apis/certificates.k8s.io/v1/certificatesigningrequests",
				     NULL, &status, &csrs),
			0);
		assert_int_equal(status, 200);
		json_array_foreach(json_object_get(csrs, "items"), i, c) {
			const char *cert = json_string_value(
				json_object_get(json_object_get(c, "status"), "certificate"));

			signed_one |= cert && *cert &&
				      !strcmp(json_string_value(
						      json_object_get(json_object_get(c, "spec"),
								      "signerName"))
						      ?: "",
					      "kubernetes.io/kube-apiserver-client-kubelet");
		}
		assert_true(signed_one);
	}
	/* The bootstrap token went nowhere it could be read: groupd's log,
	 * the domain XML, the provider's client logs, the consoles. */
	{
		char path[300];
		virDomainPtr d = th_cpenv_domain(&F.env, id);
		char *xml = d ? virDomainGetXMLDesc(d, 0) : NULL;
		const char *secret_part = strchr(F.kubeadm_token, '.') + 1;

		assert_non_null(xml);
		assert_null(strstr(xml, secret_part));
		free(xml);
		virDomainFree(d);
		assert_int_equal(th_count_in_file(F.env.groupd_log, secret_part), 0);
		snprintf(path, sizeof(path), "%s/client-k8s-adm-settle.log", F.env.dir);
		assert_int_equal(th_count_in_file(path, secret_part), 0);
		assert_int_equal(th_k8senv_consoles_with(&F, secret_part), 0);
		assert_true(th_k8senv_consoles_with(&F, "kubeadm join done") > 0);
	}
	{
		const char *args[] = { "--provider-id", id, "--name", name, NULL };

		group_client("k8s-adm", "delete-one", args, log, sizeof(log));
		group_client("k8s-adm", "settle", NULL, log, sizeof(log));
	}
	{
		virDomainPtr d = th_cpenv_domain(&F.env, id);
		uint64_t end = vmact_now_usec() + 60 * VMACT_USEC_PER_SEC;
		json_t *n;

		assert_null(d);
		while ((n = node_of(id)) && vmact_now_usec() < end) {
			json_decref(n);
			usleep(200000);
		}
		if (n)
			fail_msg("the Node of %s is still in the API server", id);
	}
	if (!t_ready)
		fail_msg("the Node of %s never went Ready (its conditions above)", id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_kubeadm_join),
		cmocka_unit_test(test_never_registers),
		cmocka_unit_test(test_stale_nodes),
	};

	/* VMACT_K8S_ONLY=test_kubeadm_join: one case (cmocka's pattern). */
	if (getenv("VMACT_K8S_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_K8S_ONLY"));

	return cmocka_run_group_tests(tests, setup, teardown);
}
