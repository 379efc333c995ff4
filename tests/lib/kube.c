/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/macro.h"
#include "base/time.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/wait.h"

/* The API server's first start on a busy 2-core machine: it builds its
 * caches and bootstrap policy before /readyz says ok. */
#define READY_LIMIT_USEC (180ULL * VMACT_USEC_PER_SEC)

bool th_kube_bin_dir(char *out, size_t len)
{
	const char *env = getenv("VMACT_K8S_BIN");
	const char *cache = getenv("VMACT_CACHE_DIR");
	char p[512];

	if (env && *env)
		snprintf(out, len, "%s", env);
	else
		snprintf(out, len, "%s/k8s/bin",
			 cache && *cache ? cache : "/var/cache/vmact-tests");
	snprintf(p, sizeof(p), "%s/kube-apiserver", out);
	if (access(p, X_OK) == 0) {
		snprintf(p, sizeof(p), "%s/etcd", out);
		if (access(p, X_OK) == 0)
			return true;
	}
	fprintf(stderr,
		"th_kube: no kube-apiserver and etcd in %s: tests/k8s/build-bins.sh builds them "
		"(or set VMACT_K8S_BIN)\n",
		out);
	return false;
}

/* Runs argv to the end; 0 or -EIO naming it, its output in the log file
 * name (in the scratch directory). */
static int run_log(struct th_kube *k, const char *const argv[], const char *name,
		   struct vmact_err *err)
{
	char log[300];
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };
	struct th_proc p = { 0 };
	int st;

	snprintf(log, sizeof(log), "%s/%s", k->dir, name);
	if (th_spawn(&p, argv, &o) < 0)
		return vmact_err_set(err, EIO, "cannot run %s", argv[0]);
	st = th_proc_wait(&p);
	if (st != 0) {
		th_print_log_tail(log, argv[0], 2000);
		return vmact_err_set(err, EIO, "%s %s failed (status %d)", argv[0], argv[1], st);
	}
	return 0;
}

/* openssl, its output in openssl.log. */
static int run(struct th_kube *k, const char *const argv[], struct vmact_err *err)
{
	return run_log(k, argv, "openssl.log", err);
}

static void path(const struct th_kube *k, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", k->dir, name);
}

/* A CA, the API server's serving certificate (for 127.0.0.1, the
 * advertised address and the in-cluster names), an admin client
 * certificate (system:masters) and the service-account key pair, all EC
 * P-256 but the service-account key (RSA, as kube-apiserver's default). */
static int certs(struct th_kube *k, struct vmact_err *err)
{
	char ca_key[256], ca_crt[256], api_key[256], api_csr[256], api_crt[256], adm_key[256],
		adm_csr[256], adm_crt[256], sa_key[256], sa_pub[256], ext[256], san[256];
	int r;

	path(k, "ca.key", ca_key, sizeof(ca_key));
	path(k, "ca.crt", ca_crt, sizeof(ca_crt));
	path(k, "apiserver.key", api_key, sizeof(api_key));
	path(k, "apiserver.csr", api_csr, sizeof(api_csr));
	path(k, "apiserver.crt", api_crt, sizeof(api_crt));
	path(k, "admin.key", adm_key, sizeof(adm_key));
	path(k, "admin.csr", adm_csr, sizeof(adm_csr));
	path(k, "admin.crt", adm_crt, sizeof(adm_crt));
	path(k, "sa.key", sa_key, sizeof(sa_key));
	path(k, "sa.pub", sa_pub, sizeof(sa_pub));
	path(k, "apiserver.ext", ext, sizeof(ext));
	snprintf(san, sizeof(san),
		 "subjectAltName=IP:127.0.0.1,IP:%s,DNS:localhost,DNS:kubernetes,"
		 "DNS:kubernetes.default\nextendedKeyUsage=serverAuth\n",
		 k->advertise);
	if (th_write_file(ext, san) < 0)
		return vmact_err_set(err, EIO, "cannot write %s", ext);
	{
		const char *const a[] = { "openssl", "ecparam", "-name", "prime256v1", "-genkey",
					  "-noout",  "-out",    ca_key,  NULL };
		const char *const b[] = { "openssl", "req",  "-x509", "-new",
					  "-key",    ca_key, "-subj", "/CN=vmact-test-ca",
					  "-days",   "2",    "-out",  ca_crt,
					  NULL };
		const char *const c[] = { "openssl", "ecparam", "-name", "prime256v1", "-genkey",
					  "-noout",  "-out",    api_key, NULL };
		const char *const d[] = {
			"openssl", "req",   "-new", "-key", api_key, "-subj", "/CN=kube-apiserver",
			"-out",    api_csr, NULL
		};
		const char *const e[] = { "openssl", "x509", "-req",     "-in",  api_csr,
					  "-CA",     ca_crt, "-CAkey",   ca_key, "-CAcreateserial",
					  "-days",   "2",    "-extfile", ext,    "-out",
					  api_crt,   NULL };
		const char *const f[] = { "openssl", "ecparam", "-name", "prime256v1", "-genkey",
					  "-noout",  "-out",    adm_key, NULL };
		const char *const g[] = { "openssl",
					  "req",
					  "-new",
					  "-key",
					  adm_key,
					  "-subj",
					  "/O=system:masters/CN=vmact-test-admin",
					  "-out",
					  adm_csr,
					  NULL };
		const char *const h[] = { "openssl", "x509", "-req",   "-in",   adm_csr,
					  "-CA",     ca_crt, "-CAkey", ca_key,  "-CAcreateserial",
					  "-days",   "2",    "-out",   adm_crt, NULL };
		const char *const i[] = { "openssl", "genpkey", "-algorithm", "RSA",
					  "-out",    sa_key,    NULL };
		const char *const j[] = { "openssl", "pkey", "-in",  sa_key,
					  "-pubout", "-out", sa_pub, NULL };

		if ((r = run(k, a, err)) < 0 || (r = run(k, b, err)) < 0 ||
		    (r = run(k, c, err)) < 0 || (r = run(k, d, err)) < 0 ||
		    (r = run(k, e, err)) < 0 || (r = run(k, f, err)) < 0 ||
		    (r = run(k, g, err)) < 0 || (r = run(k, h, err)) < 0 ||
		    (r = run(k, i, err)) < 0 || (r = run(k, j, err)) < 0)
			return r;
	}
	return 0;
}

static int random_hex(char *out)
{
	unsigned char raw[16];

	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* The kubelets' token: group system:nodes, which the binding below lets
 * register and run nodes; and a controller's, system:masters. */
static int token(struct th_kube *k, struct vmact_err *err)
{
	char line[320], file[256];

	if (random_hex(k->token) < 0 || random_hex(k->admin_token) < 0)
		return vmact_err_set(err, EIO, "getrandom failed");
	snprintf(line, sizeof(line),
		 "%s,kubelet-vmact,kubelet-vmact,system:nodes\n"
		 "%s,vmact-groupd,vmact-groupd,system:masters\n",
		 k->token, k->admin_token);
	path(k, "tokens.csv", file, sizeof(file));
	if (th_write_file(file, line) < 0 || chmod(file, 0600) < 0)
		return vmact_err_set(err, EIO, "cannot write %s", file);
	return 0;
}

static int start_etcd(struct th_kube *k, struct vmact_err *err)
{
	char prog[256], data[256], log[256], client[64], peer[64], initial[80];
	const char *const argv[] = { prog,          "--name",
				     "t",           "--data-dir",
				     data,          "--listen-client-urls",
				     client,        "--advertise-client-urls",
				     client,        "--listen-peer-urls",
				     peer,          "--initial-advertise-peer-urls",
				     peer,          "--initial-cluster",
				     initial,       "--unsafe-no-fsync",
				     "--log-level", "warn",
				     NULL };
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };

	snprintf(prog, sizeof(prog), "%s/etcd", k->bin);
	path(k, "etcd", data, sizeof(data));
	path(k, "etcd.log", log, sizeof(log));
	k->etcd_port = th_dead_port();
	k->etcd_peer_port = th_dead_port();
	snprintf(client, sizeof(client), "http://127.0.0.1:%u", k->etcd_port);
	snprintf(peer, sizeof(peer), "http://127.0.0.1:%u", k->etcd_peer_port);
	snprintf(initial, sizeof(initial), "t=%s", peer);
	if (th_spawn(&k->etcd, argv, &o) < 0)
		return vmact_err_set(err, EIO, "cannot start %s", prog);
	return 0;
}

static int start_api(struct th_kube *k, struct vmact_err *err)
{
	char prog[256], log[256], etcd[64], port[16], crt[256], key[256], ca[256], tokens[256],
		sa_pub[256], sa_key[256];
	const char *const argv[] = {
		prog, "--etcd-servers", etcd, "--bind-address=127.0.0.1", "--secure-port", port,
		"--advertise-address", k->advertise, "--tls-cert-file", crt,
		"--tls-private-key-file", key, "--client-ca-file", ca, "--token-auth-file", tokens,
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.96.0.0/16",
		/* kubeadm join's tokens (th_kube_kubeadm). */
		"--enable-bootstrap-token-auth",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file", sa_pub, "--service-account-signing-key-file", sa_key,
		/* No Endpoints for an address of QEMU's user network. */
		"--endpoint-reconciler-type=none",
		/* No controller manager removes not-ready taints. */
		"--disable-admission-plugins=TaintNodesByCondition",
		"--enable-priority-and-fairness=false", NULL
	};
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };

	snprintf(prog, sizeof(prog), "%s/kube-apiserver", k->bin);
	path(k, "apiserver.log", log, sizeof(log));
	snprintf(etcd, sizeof(etcd), "http://127.0.0.1:%u", k->etcd_port);
	k->api_port = th_dead_port();
	snprintf(port, sizeof(port), "%u", k->api_port);
	path(k, "apiserver.crt", crt, sizeof(crt));
	path(k, "apiserver.key", key, sizeof(key));
	path(k, "ca.crt", ca, sizeof(ca));
	path(k, "tokens.csv", tokens, sizeof(tokens));
	path(k, "sa.pub", sa_pub, sizeof(sa_pub));
	path(k, "sa.key", sa_key, sizeof(sa_key));
	snprintf(k->url, sizeof(k->url), "https://127.0.0.1:%u", k->api_port);
	if (th_spawn(&k->api, argv, &o) < 0)
		return vmact_err_set(err, EIO, "cannot start %s", prog);
	return 0;
}

int th_kube_call(struct th_kube *k, const char *method, const char *p, const char *body,
		 long *status, json_t **doc)
{
	char url[512], crt[256], key[256], ca[256];
	struct curl_slist *h = NULL;
	struct vmact_buf b = { .max = 16u << 20 };
	CURL *c = curl_easy_init();
	CURLcode rc;

	*status = 0;
	if (doc)
		*doc = NULL;
	if (!c)
		return -ENOMEM;
	snprintf(url, sizeof(url), "%s%s", k->url, p);
	path(k, "admin.crt", crt, sizeof(crt));
	path(k, "admin.key", key, sizeof(key));
	path(k, "ca.crt", ca, sizeof(ca));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_SSLCERT, crt);
	curl_easy_setopt(c, CURLOPT_SSLKEY, key);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vmact_buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (body) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	if (rc == CURLE_OK && doc && b.data)
		*doc = json_loads(b.data, 0, NULL);
	vmact_buf_free(&b);
	return rc == CURLE_OK ? 0 : -EIO;
}

static bool ready(void *ud)
{
	struct th_kube *k = ud;
	long status;

	return th_kube_call(k, "GET", "/readyz", NULL, &status, NULL) == 0 && status == 200;
}

/* Nodes of the token's group may register and run: the bootstrap policy's
 * system:node role, without the Node authorizer (it needs a node's own
 * name before the node exists). */
static int bind_nodes(struct th_kube *k, struct vmact_err *err)
{
	static const char body[] =
		"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
		"\"metadata\":{\"name\":\"vmact-test-nodes\"},\"roleRef\":{\"apiGroup\":"
		"\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"system:node\"},"
		"\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Group\","
		"\"name\":\"system:nodes\"}]}";
	long status;

	if (th_kube_call(k, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body,
			 &status, NULL) < 0 ||
	    (status != 201 && status != 409))
		return vmact_err_set(err, EIO, "binding system:nodes to system:node: status %ld",
				     status);
	return 0;
}

int th_kube_start(struct th_kube *k, const char *bin, const char *advertise, struct vmact_err *err)
{
	char log[256];
	int r;

	memset(k, 0, sizeof(*k));
	snprintf(k->bin, sizeof(k->bin), "%s", bin);
	snprintf(k->advertise, sizeof(k->advertise), "%s", advertise ? advertise : "127.0.0.1");
	if (th_scratch_dir("vmact-kube", k->dir, sizeof(k->dir)) < 0)
		return vmact_err_set(err, EIO, "no scratch directory");
	chmod(k->dir, 0700);
	if ((r = certs(k, err)) < 0 || (r = token(k, err)) < 0 || (r = start_etcd(k, err)) < 0 ||
	    (r = start_api(k, err)) < 0)
		goto fail;
	if (!th_wait_daemon(&k->api, ready, k, READY_LIMIT_USEC / 1e6)) {
		path(k, "apiserver.log", log, sizeof(log));
		th_print_log_tail(log, "kube-apiserver", 4000);
		path(k, "etcd.log", log, sizeof(log));
		th_print_log_tail(log, "etcd", 2000);
		r = vmact_err_set(err, ETIMEDOUT, "kube-apiserver not ready within %.0f s",
				  READY_LIMIT_USEC / 1e6);
		goto fail;
	}
	if ((r = bind_nodes(k, err)) < 0)
		goto fail;
	return 0;
fail:
	th_kube_stop(k);
	return r;
}

void th_kube_stop(struct th_kube *k)
{
	th_proc_stop(&k->kcm, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	th_proc_stop(&k->api, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	th_proc_stop(&k->etcd, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	if (k->dir[0] && !getenv("VMACT_TEST_KEEP_LOG"))
		th_rm_rf(k->dir);
	k->dir[0] = '\0';
}

/* file's bytes in base64 (malloc'd), NULL when unreadable. */
static char *file_base64(const char *file)
{
	_cleanup_free_ char *text = th_read_file(file);
	size_t n;
	char *b64;

	if (!text)
		return NULL;
	n = strlen(text);
	b64 = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);
	if (b64) {
		base64_encode_raw(b64, n, (const uint8_t *)text);
		b64[BASE64_ENCODE_RAW_LENGTH(n)] = '\0';
	}
	return b64;
}

char *th_kube_kubeconfig(const struct th_kube *k, const char *server)
{
	char ca[256], *b64, *out = NULL;

	path(k, "ca.crt", ca, sizeof(ca));
	b64 = file_base64(ca);
	if (b64 &&
	    asprintf(&out,
		     "apiVersion: v1\nkind: Config\nclusters:\n- name: vmact-test\n  cluster:\n"
		     "    server: %s\n    certificate-authority-data: %s\nusers:\n"
		     "- name: kubelet\n  user:\n    token: %s\ncontexts:\n- name: default\n"
		     "  context:\n    cluster: vmact-test\n    user: kubelet\n"
		     "current-context: default\n",
		     server ? server : k->url, b64, k->token) < 0)
		out = NULL;
	free(b64);
	return out;
}

/* admin.conf: the admin certificate's kubeconfig, data inlined (kubeadm
 * copies the cluster's CA from it into cluster-info). */
static int admin_conf(struct th_kube *k, const char *out, struct vmact_err *err)
{
	char ca[256], crt[256], key[256];
	_cleanup_free_ char *ca64 = NULL, *crt64 = NULL, *key64 = NULL, *text = NULL;

	path(k, "ca.crt", ca, sizeof(ca));
	path(k, "admin.crt", crt, sizeof(crt));
	path(k, "admin.key", key, sizeof(key));
	ca64 = file_base64(ca);
	crt64 = file_base64(crt);
	key64 = file_base64(key);
	if (!ca64 || !crt64 || !key64 ||
	    asprintf(&text,
		     "apiVersion: v1\nkind: Config\nclusters:\n- name: vmact-test\n  cluster:\n"
		     "    server: %s\n    certificate-authority-data: %s\nusers:\n"
		     "- name: admin\n  user:\n    client-certificate-data: %s\n"
		     "    client-key-data: %s\ncontexts:\n- name: default\n  context:\n"
		     "    cluster: vmact-test\n    user: admin\ncurrent-context: default\n",
		     k->url, ca64, crt64, key64) < 0)
		return vmact_err_set(err, EIO, "cannot read the admin certificate");
	if (th_write_file(out, text) < 0 || chmod(out, 0600) < 0)
		return vmact_err_set(err, EIO, "cannot write %s", out);
	return 0;
}

/* A bootstrap token as kubeadm's: [a-z0-9]{6}.[a-z0-9]{16}. */
static int bootstrap_token(char out[24])
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char raw[22];

	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
		return -EIO;
	for (size_t i = 0, o = 0; i < sizeof(raw); i++) {
		if (o == 6)
			out[o++] = '.';
		out[o++] = set[raw[i] % (sizeof(set) - 1)];
	}
	out[23] = '\0';
	return 0;
}

/* "sha256:" and the SHA-256 of the CA's SubjectPublicKeyInfo (DER), as
 * kubeadm's caCertHashes pin it. */
static int ca_hash_of(struct th_kube *k, char out[72], struct vmact_err *err)
{
	char ca[256], pem[256], der[256];
	uint8_t digest[SHA256_DIGEST_SIZE], buf[4096];
	struct sha256_ctx ctx;
	ssize_t n;
	int fd, r;

	path(k, "ca.crt", ca, sizeof(ca));
	path(k, "ca.pub.pem", pem, sizeof(pem));
	path(k, "ca.pub.der", der, sizeof(der));
	{
		const char *const a[] = { "openssl", "x509", "-in", ca,  "-pubkey",
					  "-noout",  "-out", pem,   NULL };
		const char *const b[] = { "openssl",  "pkey", "-pubin", "-in", pem,
					  "-outform", "DER",  "-out",   der,   NULL };

		if ((r = run(k, a, err)) < 0 || (r = run(k, b, err)) < 0)
			return r;
	}
	fd = open(der, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vmact_err_set(err, errno, "%s: %s", der, strerror(errno));
	sha256_init(&ctx);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sha256_update(&ctx, (size_t)n, buf);
	close(fd);
	if (n < 0)
		return vmact_err_set(err, EIO, "%s: read failed", der);
	sha256_digest(&ctx, sizeof(digest), digest);
	strcpy(out, "sha256:");
	for (size_t i = 0; i < sizeof(digest); i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", digest[i]);
	return 0;
}

/* The version kubeadm stamps (build-bins.sh sets it), for the
 * ClusterConfiguration: without one kubeadm asks the internet. */
static int kubeadm_version(struct th_kube *k, const char *kubeadm, char *out, size_t len,
			   struct vmact_err *err)
{
	const char *const a[] = { kubeadm, "version", "-o", "short", NULL };
	char log[256];
	_cleanup_free_ char *text = NULL;
	int r;

	if ((r = run_log(k, a, "kubeadm-version.log", err)) < 0)
		return r;
	path(k, "kubeadm-version.log", log, sizeof(log));
	text = th_read_file(log);
	if (!text || text[0] != 'v')
		return vmact_err_set(err, EIO, "kubeadm version: no version in %s", log);
	text[strcspn(text, "\n")] = '\0';
	snprintf(out, len, "%s", text);
	return 0;
}

/* kube-public's cluster-info with the address guests reach: kubeadm join
 * takes the API server's address from it, and kubeadm init writes its
 * controlPlaneEndpoint there, where the bootstrap-token phase run here
 * writes admin.conf's (loopback). Replaced after that phase (which
 * creates or updates it); the bootstrap signer signs it again. */
static int cluster_info(struct th_kube *k, struct vmact_err *err)
{
	static const char cm[] = "/api/v1/namespaces/kube-public/configmaps/cluster-info";
	char ca[256], server[96];
	_cleanup_free_ char *ca64 = NULL, *kubeconfig = NULL;
	long status = 0;

	path(k, "ca.crt", ca, sizeof(ca));
	ca64 = file_base64(ca);
	snprintf(server, sizeof(server), "https://%s:%u", k->advertise, k->api_port);
	if (!ca64 || asprintf(&kubeconfig,
			      "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n"
			      "    certificate-authority-data: %s\n    server: %s\n"
			      "contexts: null\ncurrent-context: \"\"\nusers: null\n",
			      ca64, server) < 0)
		return vmact_err_set(err, ENOMEM, "cannot make cluster-info");
	/* The signer writes its signature into the same object: a
	 * conflict is tried again with the fresh one. */
	for (int i = 0; i < 20 && status != 200; i++) {
		json_t *doc = NULL;
		char *body = NULL;

		if (th_kube_call(k, "GET", cm, NULL, &status, &doc) == 0 && status == 200 &&
		    json_is_object(json_object_get(doc, "data")) &&
		    json_object_set_new(json_object_get(doc, "data"), "kubeconfig",
					json_string(kubeconfig)) == 0)
			body = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		status = 0;
		if (body)
			th_kube_call(k, "PUT", cm, body, &status, NULL);
		free(body);
		if (status != 200)
			usleep(200 * 1000);
	}
	if (status != 200)
		return vmact_err_set(err, EIO, "replacing kube-public/cluster-info: status %ld",
				     status);
	return 0;
}

static int start_kcm(struct th_kube *k, const char *admin, struct vmact_err *err)
{
	char prog[256], log[256], ca[256], ca_key[256];
	const char *const argv[] = {
		prog, "--kubeconfig", admin,
		/* A join's controllers only: the bootstrap token's cluster-info
		 * signature, the kubelet's CSR approved and signed by the CA. */
		"--controllers=bootstrapsigner,tokencleaner,csrapproving,csrsigning,csrcleaner",
		"--cluster-signing-cert-file", ca, "--cluster-signing-key-file", ca_key,
		"--root-ca-file", ca, "--use-service-account-credentials=false",
		"--leader-elect=false", "--secure-port=0", NULL
	};
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };

	snprintf(prog, sizeof(prog), "%s/kube-controller-manager", k->bin);
	path(k, "controller-manager.log", log, sizeof(log));
	path(k, "ca.crt", ca, sizeof(ca));
	path(k, "ca.key", ca_key, sizeof(ca_key));
	if (th_spawn(&k->kcm, argv, &o) < 0)
		return vmact_err_set(err, EIO, "cannot start %s", prog);
	return 0;
}

int th_kube_kubeadm(struct th_kube *k, char token[24], char ca_hash[72], struct vmact_err *err)
{
	char kubeadm[256], admin[256], init[256], version[64];
	_cleanup_free_ char *text = NULL;
	int r;

	snprintf(kubeadm, sizeof(kubeadm), "%s/kubeadm", k->bin);
	if (access(kubeadm, X_OK) < 0)
		return vmact_err_set(err, ENOENT,
				     "no kubeadm in %s: tests/k8s/build-bins.sh builds it", k->bin);
	path(k, "admin.conf", admin, sizeof(admin));
	path(k, "kubeadm-init.yaml", init, sizeof(init));
	if ((r = admin_conf(k, admin, err)) < 0 || (r = ca_hash_of(k, ca_hash, err)) < 0 ||
	    (r = kubeadm_version(k, kubeadm, version, sizeof(version), err)) < 0)
		return r;
	if (bootstrap_token(token) < 0)
		return vmact_err_set(err, EIO, "getrandom failed");
	/* What kubeadm init would have been given: the token, this API
	 * server as the guests reach it (a loopback address makes kubeadm look
	 * for the host's own), the runtime's socket (set, so that kubeadm does
	 * not look for one on this host). */
	if (asprintf(&text,
		     "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"
		     "bootstrapTokens:\n- token: %s\n  ttl: 2h0m0s\n"
		     "localAPIEndpoint:\n  advertiseAddress: %s\n  bindPort: %u\n"
		     "nodeRegistration:\n  name: vmact-test-control-plane\n"
		     "  criSocket: unix:///run/containerd/containerd.sock\n---\n"
		     "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
		     "kubernetesVersion: %s\ncontrolPlaneEndpoint: %s:%u\n"
		     "networking:\n  serviceSubnet: 10.96.0.0/16\n",
		     token, k->advertise, k->api_port, version, k->advertise, k->api_port) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if (th_write_file(init, text) < 0 || chmod(init, 0600) < 0)
		return vmact_err_set(err, EIO, "cannot write %s", init);
	{
		const char *const up[] = { kubeadm, "init",     "phase", "upload-config",
					   "all",   "--config", init,    "--kubeconfig",
					   admin,   NULL };
		const char *const bt[] = {
			kubeadm, "init",         "phase", "bootstrap-token",    "--config",
			init,    "--kubeconfig", admin,   "--skip-token-print", NULL
		};

		if ((r = run_log(k, up, "kubeadm-upload-config.log", err)) < 0 ||
		    (r = run_log(k, bt, "kubeadm-bootstrap-token.log", err)) < 0)
			return r;
	}
	if ((r = cluster_info(k, err)) < 0)
		return r;
	return start_kcm(k, admin, err);
}
