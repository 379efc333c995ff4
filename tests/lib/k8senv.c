/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/k8senv.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/time.h"
#include "cloudprovider/groupd.h"
#include "tests/lib/cloudprov.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"

DEFINE_PTR_CLEANUP(k8senv_jsonp, json_t, json_decref)

/* The node image's template: its own kernel and disk, QEMU's user network
 * (the control plane on the host's loopback is 10.0.2.2), its console
 * logged for a failure's post-mortem. */
static const char template_fmt[] =
	"{\"domain_type\": \"qemu\", \"vcpus\": 2, \"max_vcpus\": 2, \"memory\": \"1Gi\","
	" \"max_memory\": \"1Gi\", \"kernel\": \"%s/vmlinuz\", \"initrd\": \"%s/initrd.img\","
	" \"cmdline\": \"root=/dev/vda rw console=ttyS0 quiet systemd.show_status=error\","
	" \"base_volume\": \"node-base.qcow2\", \"nic\": \"user\","
	" \"serial_log_dir\": \"%s\", \"reserve\": {\"cpu\": \"500m\", \"memory\": \"1Gi\"}}";

static int owned_file(const char *path, const char *text, mode_t mode, const struct passwd *pw)
{
	return th_write_file(path, text) < 0 || chmod(path, mode) < 0 ||
			       (pw && chown(path, pw->pw_uid, pw->pw_gid) < 0)
		       ? -1
		       : 0;
}

/* The groups' secrets, vmact-cluster's alone (the key file's rules), and
 * vmact-groupd's own access to the API server (its "kubernetes"). */
static int write_secrets(struct th_k8senv *k)
{
	struct passwd *pw = getpwnam(TH_CPENV_USER);
	_cleanup_free_ char *kc = NULL, *ca = NULL;
	char server[80], src[300], *at;

	if (!pw || th_scratch_dir("vmact-k8s-secret", k->secret_dir, sizeof(k->secret_dir)) < 0)
		return -1;
	snprintf(k->secret, sizeof(k->secret), "%s/k8s.kubeconfig", k->secret_dir);
	snprintf(k->bad_secret, sizeof(k->bad_secret), "%s/bad.kubeconfig", k->secret_dir);
	snprintf(server, sizeof(server), "https://10.0.2.2:%u", k->kube.api_port);
	kc = th_kube_kubeconfig(&k->kube, server);
	if (!kc || owned_file(k->secret, kc, 0600, pw) < 0)
		return -1;
	/* The same with a token nobody issued. */
	if (!(at = strstr(kc, k->kube.token)))
		return -1;
	memset(at, 'x', strlen(k->kube.token));
	if (owned_file(k->bad_secret, kc, 0600, pw) < 0)
		return -1;
	snprintf(src, sizeof(src), "%s/ca.crt", k->kube.dir);
	snprintf(k->ca, sizeof(k->ca), "%s/ca.crt", k->secret_dir);
	snprintf(k->token_file, sizeof(k->token_file), "%s/groupd.token", k->secret_dir);
	ca = th_read_file(src);
	if (!ca || owned_file(k->ca, ca, 0644, NULL) < 0 ||
	    owned_file(k->token_file, k->kube.admin_token, 0600, pw) < 0)
		return -1;
	snprintf(k->kube_extra, sizeof(k->kube_extra),
		 "\"kubernetes\": {\"server\": \"%s\", \"ca_file\": \"%s\", \"token_file\": \"%s\"}",
		 k->kube.url, k->ca, k->token_file);
	return 0;
}

/* The JoinConfiguration a kubeadm group's claim sends: discovery by the
 * bootstrap token with the CA pinned, as `kubeadm token create
 * --print-join-command` gives it, through QEMU's user network. The test
 * image has no bridge netfilter or IP forwarding (its CNI network is
 * point-to-point, without iptables): kubeadm's preflight checks of those
 * are errors, so they are ignored; and a kubelet's start under TCG takes
 * longer than kubeadm's 4 minutes by default on a busy host. */
static int write_kubeadm_secret(struct th_k8senv *k)
{
	struct passwd *pw = getpwnam(TH_CPENV_USER);
	struct vmact_err err = { 0 };
	_cleanup_free_ char *text = NULL;
	char hash[72];

	if (!pw || th_kube_kubeadm(&k->kube, k->kubeadm_token, hash, &err) < 0) {
		fprintf(stderr, "th_k8senv: kubeadm: %s\n", err.msg);
		return -1;
	}
	snprintf(k->kubeadm_secret, sizeof(k->kubeadm_secret), "%s/kubeadm-join.json",
		 k->secret_dir);
	if (asprintf(
		    &text,
		    "{\"apiVersion\": \"kubeadm.k8s.io/v1beta4\", \"kind\": \"JoinConfiguration\","
		    " \"discovery\": {\"bootstrapToken\": {\"apiServerEndpoint\": \"10.0.2.2:%u\","
		    " \"token\": \"%s\", \"caCertHashes\": [\"%s\"]}},"
		    " \"nodeRegistration\": {\"criSocket\": \"unix:///run/containerd/containerd.sock\","
		    " \"ignorePreflightErrors\": [\"all\"]},"
		    " \"timeouts\": {\"kubeletHealthCheck\": \"10m0s\", \"tlsBootstrap\": \"10m0s\","
		    " \"discovery\": \"10m0s\"}}",
		    k->kube.api_port, k->kubeadm_token, hash) < 0)
		return -1;
	return owned_file(k->kubeadm_secret, text, 0600, pw);
}

/* The consoles that hold needle, counted and, with print, their tails
 * printed. */
static unsigned consoles_with(struct th_k8senv *k, const char *needle, bool print)
{
	DIR *d = k->logs[0] ? opendir(k->logs) : NULL;
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d))) {
		char p[512];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", k->logs, e->d_name);
		if (th_count_in_file(p, needle) == 0)
			continue;
		n++;
		if (print)
			th_print_log_tail(p, e->d_name, 6000);
	}
	if (d)
		closedir(d);
	return n;
}

unsigned th_k8senv_consoles_with(struct th_k8senv *k, const char *needle)
{
	return consoles_with(k, needle, false);
}

void th_k8senv_print_consoles(struct th_k8senv *k, const char *needle)
{
	consoles_with(k, needle, true);
}

/* text with every mark replaced by with; malloc'd. */
static char *replace(const char *text, const char *mark, const char *with)
{
	size_t n = 0, ml = strlen(mark), wl = strlen(with);
	const char *p;
	char *out, *o;

	for (p = text; (p = strstr(p, mark)); p += ml)
		n++;
	out = malloc(strlen(text) + n * wl + 1);
	if (!out)
		return NULL;
	for (o = out, p = text;;) {
		const char *m = strstr(p, mark);

		if (!m) {
			strcpy(o, p);
			return out;
		}
		memcpy(o, p, (size_t)(m - p));
		o += m - p;
		memcpy(o, with, wl);
		o += wl;
		p = m + ml;
	}
}

int th_k8senv_start(struct th_k8senv *k, const char *groups, char *msg, size_t msglen)
{
	struct vmact_err err = { 0 };
	_cleanup_free_ char *tpl = NULL, *g1 = NULL, *g2 = NULL, *g3 = NULL;
	struct th_cpenv_opts o = { 0 };
	const char *node = getenv("VMACT_K8S_NODE");
	char bin[256], base[300];

	memset(k, 0, sizeof(*k));
	tg_quiet_libvirt();
	if (!node || !*node || !th_kube_bin_dir(bin, sizeof(bin))) {
		snprintf(msg, msglen,
			 "needs VMACT_K8S_NODE (tests/k8s/build-node-image.sh) and the binaries "
			 "(make k8s-bins)");
		return -1;
	}
	snprintf(k->node_dir, sizeof(k->node_dir), "%s", node);
	if (th_kube_start(&k->kube, bin, "10.0.2.2", &err) < 0) {
		snprintf(msg, msglen, "control plane: %s", err.msg);
		return -1;
	}
	k->kube_up = true;
	if (write_secrets(k) < 0) {
		snprintf(msg, msglen, "cannot write the groups' secrets: %s", strerror(errno));
		return -1;
	}
	if (strstr(groups, "@KUBEADM@") && write_kubeadm_secret(k) < 0) {
		snprintf(msg, msglen, "cannot make the control plane one kubeadm joins");
		return -1;
	}
	snprintf(base, sizeof(base), "%s/node.qcow2", node);
	snprintf(k->logs, sizeof(k->logs), "/tmp/vmact-k8s-logs-%d", (int)getpid());
	if (mkdir(k->logs, 0777) < 0 || chmod(k->logs, 0777) < 0 ||
	    asprintf(&tpl, template_fmt, node, node, k->logs) < 0 ||
	    !(g1 = replace(groups, "@BAD_SECRET@", k->bad_secret)) ||
	    !(g2 = replace(g1, "@SECRET@", k->secret)) ||
	    !(g3 = replace(g2, "@KUBEADM@", k->kubeadm_secret))) {
		snprintf(msg, msglen, "the groups: %s", strerror(errno));
		return -1;
	}
	o.template_json = tpl;
	o.base_image = base;
	o.arbiter_cpu = "4";
	o.arbiter_memory = "8Gi";
	o.top_extra = k->kube_extra;
	k->started = true;
	return th_cpenv_start_opts(&k->env, g3, &o, msg, msglen);
}

void th_k8senv_stop(struct th_k8senv *k, const char *const *groups)
{
	if (k->started)
		th_cpenv_stop(&k->env, groups);
	if (k->kube_up)
		th_kube_stop(&k->kube);
	if (k->secret_dir[0])
		th_rm_rf(k->secret_dir);
	if (k->logs[0] && !getenv("VMACT_TEST_KEEP_LOG"))
		th_rm_rf(k->logs);
	k->started = k->kube_up = false;
	k->secret_dir[0] = k->logs[0] = 0;
}

int th_k8senv_client(struct th_k8senv *k, const char *group, const char *scenario,
		     const char *const *extra, char *log, size_t len)
{
	const char *args[24] = { "--groupd", k->env.api, "--group", group, "--wait-s", "900" };
	size_t n = 6;
	int r;

	for (; extra && *extra && n < ARRAY_SIZE(args) - 1; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	snprintf(log, len, "%s/client-%s-%s.log", k->env.dir, group, scenario);
	r = th_cp_client(k->env.cp.port, scenario, args, log);
	if (r != 0)
		th_cp_print_log(&k->env.cp);
	return r;
}

json_t *th_k8senv_nodes(struct th_k8senv *k)
{
	json_t *doc = NULL;
	long status;

	if (th_kube_call(&k->kube, "GET", "/api/v1/nodes", NULL, &status, &doc) < 0 ||
	    status != 200) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

size_t th_k8senv_node_count(struct th_k8senv *k)
{
	_cleanup_(k8senv_jsonp) json_t *doc = th_k8senv_nodes(k);

	return doc ? json_array_size(json_object_get(doc, "items")) : (size_t)-1;
}

json_t *th_k8senv_node_where(struct th_k8senv *k, bool (*match)(const char *provider_id, void *ud),
			     void *ud)
{
	_cleanup_(k8senv_jsonp) json_t *doc = th_k8senv_nodes(k);
	json_t *n;
	size_t i;

	json_array_foreach(json_object_get(doc, "items"), i, n) {
		const char *p = json_string_value(
			json_object_get(json_object_get(n, "spec"), "providerID"));

		if (p && match(p, ud))
			return json_incref(n);
	}
	return NULL;
}

static bool is_id(const char *provider_id, void *id)
{
	return strcmp(provider_id, id) == 0;
}

json_t *th_k8senv_node_of(struct th_k8senv *k, const char *id)
{
	return th_k8senv_node_where(k, is_id, (void *)id);
}

bool th_k8senv_node_ready(const json_t *node)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));

		if (t && s && !strcmp(t, "Ready"))
			return !strcmp(s, "True");
	}
	return false;
}

unsigned th_k8senv_running_ready(struct th_k8senv *k, const char *group)
{
	_cleanup_(k8senv_jsonp) json_t *doc = NULL;
	struct vmact_err err = { 0 };
	char path[128];

	snprintf(path, sizeof(path), "/v1/groups/%s", group);
	if (cp_groupd_call(k->env.api, "GET", path, NULL, 10 * VMACT_USEC_PER_SEC, &doc, &err) < 0)
		return 0;
	return (unsigned)json_integer_value(
		json_object_get(json_object_get(json_object_get(doc, "pool"), "running"), "ready"));
}
