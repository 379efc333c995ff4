/* SPDX-License-Identifier: Apache-2.0 */
/* node/: vmact-node's reading of the claim (untrusted bytes from the
 * host) and the kubelet's files it writes from one. The program itself,
 * on a serial line, is tests/loopback/test_vmact_node.c. */
#include <errno.h>
#include <setjmp.h>
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

#include "node/claim.h"
#include "node/kubelet.h"

#define UUID "4f0c1a2b-9d3e-4c5f-8a6b-7c8d9e0f1a2b"
#define FULL                                                                                  \
	"claim {\"group\":\"workers\",\"name\":\"vmact-workers-4f0c1a2b\","                   \
	"\"provider_id\":\"libvirt://h1/" UUID "\",\"labels\":{\"pool\":\"a\","               \
	"\"node.kubernetes.io/pool\":\"fast\",\"topology.kubernetes.io/zone\":\"z1\","        \
	"\"example.com/tier\":\"\"},\"taints\":[{\"key\":\"dedicated\",\"value\":\"db\","     \
	"\"effect\":\"NoSchedule\"},{\"key\":\"example.com/gpu\",\"effect\":\"NoExecute\"}]," \
	"\"future\":{\"field\":1}}\n"

static void parse_ok(const char *line, struct nd_claim *c)
{
	struct vmact_err err = { 0 };

	if (nd_claim_parse(line, strlen(line), c, &err) < 0)
		fail_msg("refused: %s (%s)", err.msg, line);
}

static void full_claim(void **state)
{
	struct nd_claim c;

	(void)state;
	parse_ok(FULL, &c);
	assert_string_equal(c.group, "workers");
	assert_string_equal(c.name, "vmact-workers-4f0c1a2b");
	assert_string_equal(c.provider_id, "libvirt://h1/" UUID);
	assert_int_equal(c.nlabels, 4);
	assert_string_equal(c.labels[0].key, "pool");
	assert_string_equal(c.labels[1].value, "fast");
	assert_string_equal(c.labels[3].key, "example.com/tier");
	assert_string_equal(c.labels[3].value, "");
	assert_int_equal(c.ntaints, 2);
	assert_string_equal(c.taints[0].effect, "NoSchedule");
	assert_string_equal(c.taints[1].key, "example.com/gpu");
	assert_string_equal(c.taints[1].value, "");
	nd_claim_clear(&c);
	nd_claim_clear(&c);
}

/* What vmact-groupd writes for a group without labels or taints, and a
 * line ended CRLF (a serial line's). */
static void minimal_claim(void **state)
{
	struct nd_claim c;

	(void)state;
	parse_ok("claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://host-2.lab/" UUID
		 "\",\"labels\":{},\"taints\":[]}\r\n",
		 &c);
	assert_int_equal(c.nlabels, 0);
	assert_int_equal(c.ntaints, 0);
	nd_claim_clear(&c);
	parse_ok("claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID "\"}",
		 &c);
	nd_claim_clear(&c);
}

struct bad {
	const char *line;
	const char *want;
};

#define C(body) \
	"claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID "\"" body "}"

static const struct bad bad[] = {
	{ "", "not a claim" },
	{ "claim", "not a claim" },
	{ "claims {}", "not a claim" },
	{ "CLAIM {}", "not a claim" },
	{ "claim {", "not JSON" },
	{ "claim []", "not a JSON object" },
	{ "claim {\"group\":\"g\",\"group\":\"h\",\"name\":\"n\",\"provider_id\":\"x\"}",
	  "not JSON" },
	{ "claim {\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID "\"}", "group: missing" },
	{ "claim {\"group\":\"g\",\"provider_id\":\"libvirt://h/" UUID "\"}", "name: missing" },
	{ "claim {\"group\":7,\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID "\"}", "group" },
	{ "claim {\"group\":\"Workers\",\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID "\"}",
	  "group: \"Workers\" is not a group's name" },
	{ "claim {\"group\":\"g\",\"name\":\"n_1\",\"provider_id\":\"libvirt://h/" UUID "\"}",
	  "name: \"n_1\" is not a Node's name" },
	{ "claim {\"group\":\"g\",\"name\":\"-n\",\"provider_id\":\"libvirt://h/" UUID "\"}",
	  "is not a Node's name" },
	{ "claim {\"group\":\"g\",\"name\":\"n1234567890123456789012345678901234567890123456789012"
	  "345678901234\",\"provider_id\":\"libvirt://h/" UUID "\"}",
	  "is not a Node's name" },
	{ "claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"aws:///i-0\"}",
	  "provider_id: \"aws:///i-0\" is not libvirt://HOST/UUID" },
	{ "claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt:///" UUID "\"}",
	  "provider_id" },
	{ "claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://h/4f0c1a2b\"}",
	  "provider_id" },
	{ "claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://h h/" UUID "\"}",
	  "provider_id" },
	{ "claim {\"group\":\"g\",\"name\":\"n\\u0000x\",\"provider_id\":\"x\"}", "not JSON" },
	/* The labels a kubelet may not set on its own Node: it would exit. */
	{ C(",\"labels\":{\"node-role.kubernetes.io/worker\":\"\"}"),
	  "labels: node-role.kubernetes.io/worker cannot be set by a kubelet on its own Node; "
	  "set it after registration" },
	{ C(",\"labels\":{\"kubernetes.io/role\":\"x\"}"), "cannot be set by a kubelet" },
	{ C(",\"labels\":{\"k8s.io/x\":\"y\"}"), "cannot be set by a kubelet" },
	{ C(",\"labels\":{\"a.k8s.io/x\":\"y\"}"), "cannot be set by a kubelet" },
	{ C(",\"labels\":{\"node-restriction.kubernetes.io/x\":\"y\"}"),
	  "cannot be set by a kubelet" },
	{ C(",\"labels\":{\"a b\":\"y\"}"), "labels: \"a b\" is not a label key" },
	{ C(",\"labels\":{\"a/b/c\":\"y\"}"), "is not a label key" },
	{ C(",\"labels\":{\"Example.com/x\":\"y\"}"), "is not a label key" },
	{ C(",\"labels\":{\"x\":\"two words\"}"), "labels: x: the value is not a label value" },
	{ C(",\"labels\":{\"x\":\"$(id)\"}"), "the value is not a label value" },
	{ C(",\"labels\":{\"x\":7}"), "labels" },
	{ C(",\"taints\":[{\"key\":\"a\",\"effect\":\"Evict\"}]"),
	  "taints[0]: effect: \"Evict\" is not NoSchedule, PreferNoSchedule or NoExecute" },
	{ C(",\"taints\":[{\"effect\":\"NoSchedule\"}]"), "taints[0]: key: missing" },
	{ C(",\"taints\":[{\"key\":\"a\",\"value\":\"b c\",\"effect\":\"NoSchedule\"}]"),
	  "taints[0]: value: not a taint value" },
	{ C(",\"taints\":{}"), "taints" },
};

static void refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nd_claim c;
		struct vmact_err err = { 0 };
		int r = nd_claim_parse(bad[i].line, strlen(bad[i].line), &c, &err);

		if (r != -EPROTO)
			fail_msg("case %zu (%s): rc %d (%s)", i, bad[i].line, r, err.msg);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want);
		assert_null(c.doc);
		nd_claim_clear(&c);
	}
}

/* Bytes no JSON has, too many entries, an overlong line. */
static void hostile_bytes(void **state)
{
	struct nd_claim c;
	struct vmact_err err = { 0 };
	static const char nul[] = "claim {\"group\":\"g\0\"}";
	char *line;
	size_t len = 0;

	(void)state;
	assert_int_equal(nd_claim_parse(nul, sizeof(nul) - 1, &c, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "NUL"));
	line = malloc(ND_CLAIM_LINE_MAX + 16);
	assert_non_null(line);
	len = (size_t)sprintf(line, "claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":"
				    "\"libvirt://h/" UUID "\",\"taints\":[");
	for (int i = 0; i <= ND_TAINTS_MAX; i++)
		len += (size_t)sprintf(line + len, "%s{\"key\":\"k\",\"effect\":\"NoSchedule\"}",
				       i ? "," : "");
	len += (size_t)sprintf(line + len, "]}");
	vmact_err_reset(&err);
	assert_int_equal(nd_claim_parse(line, len, &c, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "taints"));
	memset(line, 'x', ND_CLAIM_LINE_MAX + 1);
	vmact_err_reset(&err);
	assert_int_equal(nd_claim_parse(line, ND_CLAIM_LINE_MAX + 1, &c, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "longer than"));
	free(line);
}

/* The same claim told twice is the same; another is not. Its JSON reads
 * back as itself. */
static void same_and_json(void **state)
{
	struct nd_claim a, b, c;
	char *json, *line = NULL;

	(void)state;
	parse_ok(FULL, &a);
	parse_ok(FULL, &b);
	assert_true(nd_claim_same(&a, &b));
	json = nd_claim_json(&a);
	assert_non_null(json);
	assert_true(asprintf(&line, "claim %s", json) > 0);
	parse_ok(line, &c);
	assert_true(nd_claim_same(&a, &c));
	nd_claim_clear(&c);
	free(line);
	free(json);
	line = strdup(FULL);
	*strstr(line, "\"fast\"") = '"';
	memcpy(strstr(line, "fast"), "slow", 4);
	parse_ok(line, &c);
	assert_false(nd_claim_same(&a, &c));
	nd_claim_clear(&c);
	free(line);
	nd_claim_clear(&a);
	nd_claim_clear(&b);
}

#define SECRET_TEXT "apiVersion: v1\\nkind: Config\\nusers:\\n- user:\\n    token: s3cr3t-t0ken\\n"

/* The claim's secret: one kind, a string, within its size; a refusal
 * never quotes it; the JSON kept and the comparison leave it out. */
static void secret(void **state)
{
	static const struct bad refused[] = {
		{ C(",\"secret\":{\"kubeconfig\":\"a\",\"bootstrap_kubeconfig\":\"b\"}"),
		  "secret: kubeconfig, bootstrap_kubeconfig and kubeadm are exclusive" },
		{ C(",\"secret\":{\"kubeadm\":{}}"), "secret: kubeadm: not a string" },
		{ C(",\"secret\":{\"token\":\"x\"}"),
		  "secret: \"token\" is not a kind this vmact-node takes" },
		{ C(",\"secret\":{\"kubeconfig\":7}"), "secret: kubeconfig: not a string" },
		{ C(",\"secret\":{\"kubeconfig\":\"\"}"), "secret: kubeconfig: 0 bytes" },
		{ C(",\"secret\":\"" SECRET_TEXT "\""), "secret: not an object" },
		/* Broken JSON inside the secret: where, never what. */
		{ C(",\"secret\":{\"kubeconfig\":\"s3cr3t-t0ken\\q\"}"), "not JSON" },
	};
	struct nd_claim c, plain;
	struct vmact_err err = { 0 };
	char *json;

	(void)state;
	parse_ok(C(",\"secret\":{\"kubeconfig\":\"" SECRET_TEXT "\"}"), &c);
	assert_non_null(c.kubeconfig);
	assert_non_null(strstr(c.kubeconfig, "token: s3cr3t-t0ken\n"));
	assert_null(c.bootstrap_kubeconfig);
	json = nd_claim_json(&c);
	assert_null(strstr(json, "s3cr3t"));
	assert_null(strstr(json, "secret"));
	free(json);
	parse_ok(C(""), &plain);
	assert_true(nd_claim_same(&c, &plain));
	nd_claim_clear(&plain);
	nd_claim_clear(&c);
	parse_ok(C(",\"secret\":{\"bootstrap_kubeconfig\":\"" SECRET_TEXT "\"}"), &c);
	assert_null(c.kubeconfig);
	assert_non_null(c.bootstrap_kubeconfig);
	nd_claim_clear(&c);
	parse_ok(C(",\"secret\":null"), &c);
	assert_null(c.kubeconfig);
	nd_claim_clear(&c);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		int r;

		vmact_err_reset(&err);
		r = nd_claim_parse(refused[i].line, strlen(refused[i].line), &c, &err);
		if (r != -EPROTO || !strstr(err.msg, refused[i].want))
			fail_msg("case %zu: rc %d '%s', want '%s'", i, r, err.msg, refused[i].want);
		if (strstr(err.msg, "s3cr3t"))
			fail_msg("case %zu: the message quotes the secret: %s", i, err.msg);
	}
}

static char *slurp(const char *root, const char *path, mode_t *mode)
{
	char p[1024];
	struct stat st;
	FILE *f;
	char *text;
	long n;

	snprintf(p, sizeof(p), "%s%s", root, path);
	f = fopen(p, "re");
	if (!f)
		return NULL;
	assert_int_equal(fstat(fileno(f), &st), 0);
	if (mode)
		*mode = st.st_mode & 07777;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

/* The scratch root's directories, each empty by now: a file left behind
 * fails the test. */
static void rm_root(const char *root)
{
	static const char *const dirs[] = { ND_KUBELET_CONFDIR, ND_RUN_DIR, "/run", ND_STATE_DIR,
					    "/var/lib",         "/var",     "" };
	char p[1024];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", root, dirs[i]);
		assert_int_equal(rmdir(p), 0);
	}
}

/* The files a claim becomes, under a scratch root. */
static void kubelet_files(void **state)
{
	char root[] = "/tmp/test_nd_claim.XXXXXX";
	struct nd_claim c, kept;
	struct vmact_err err = { 0 };
	json_t *conf, *t;
	char *text;
	mode_t mode;

	(void)state;
	assert_non_null(mkdtemp(root));
	assert_int_equal(nd_kubelet_kept(root, &kept, &err), -ENOENT);
	parse_ok(FULL, &c);
	if (nd_kubelet_write(root, &c, &err) < 0)
		fail_msg("%s", err.msg);
	text = slurp(root, ND_KUBELET_CONF, &mode);
	assert_non_null(text);
	assert_int_equal(mode, 0644);
	conf = json_loads(text, 0, NULL);
	assert_non_null(conf);
	assert_string_equal(json_string_value(json_object_get(conf, "kind")),
			    "KubeletConfiguration");
	assert_string_equal(json_string_value(json_object_get(conf, "apiVersion")),
			    "kubelet.config.k8s.io/v1beta1");
	assert_string_equal(json_string_value(json_object_get(conf, "providerID")),
			    "libvirt://h1/" UUID);
	t = json_object_get(conf, "registerWithTaints");
	assert_int_equal(json_array_size(t), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(t, 0), "value")),
			    "db");
	assert_string_equal(json_string_value(json_object_get(json_array_get(t, 1), "effect")),
			    "NoExecute");
	json_decref(conf);
	free(text);
	text = slurp(root, ND_KUBELET_ENV, &mode);
	assert_non_null(text);
	assert_non_null(strstr(text, "\nKUBELET_EXTRA_ARGS=--config-dir=" ND_KUBELET_CONFDIR
				     " --hostname-override=vmact-workers-4f0c1a2b --node-labels="
				     "pool=a,node.kubernetes.io/pool=fast,"
				     "topology.kubernetes.io/zone=z1,example.com/tier=\n"));
	/* No credentials in the claim: the unit's own stay. */
	assert_null(strstr(text, "KUBELET_KUBECONFIG_ARGS"));
	free(text);
	text = slurp(root, ND_CLAIM_KEPT, &mode);
	assert_non_null(text);
	assert_int_equal(mode, 0600);
	free(text);
	text = slurp(root, ND_CLAIM_RUN, &mode);
	assert_int_equal(mode, 0644);
	free(text);
	/* After a reboot: the kept claim is the claim. */
	if (nd_kubelet_kept(root, &kept, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(nd_claim_same(&c, &kept));
	nd_claim_clear(&kept);
	nd_kubelet_remove(root);
	assert_null(slurp(root, ND_KUBELET_ENV, NULL));
	assert_null(slurp(root, ND_CLAIM_KEPT, NULL));
	assert_int_equal(nd_kubelet_kept(root, &kept, &err), -ENOENT);
	nd_claim_clear(&c);
	/* A kept file that is not a claim: said, never applied. */
	{
		char p[1024];
		FILE *f;

		snprintf(p, sizeof(p), "%s" ND_CLAIM_KEPT, root);
		f = fopen(p, "we");
		assert_non_null(f);
		fputs("{\"group\":\"Bad\"}\n", f);
		fclose(f);
		assert_int_equal(nd_kubelet_kept(root, &kept, &err), -EPROTO);
		assert_non_null(strstr(err.msg, ND_CLAIM_KEPT));
		unlink(p);
	}
	rm_root(root);
}

/* A claim's secret: its file (0600), the kubelet's arguments naming it,
 * kept across a reboot (the kept claim has no secret, the file has), and
 * gone with the claim. */
static void kubelet_secret(void **state)
{
	char root[] = "/tmp/test_nd_claim.XXXXXX";
	struct nd_claim c, kept;
	struct vmact_err err = { 0 };
	char *text;
	mode_t mode;

	(void)state;
	assert_non_null(mkdtemp(root));
	parse_ok(C(",\"secret\":{\"kubeconfig\":\"" SECRET_TEXT "\"}"), &c);
	if (nd_kubelet_write(root, &c, &err) < 0)
		fail_msg("%s", err.msg);
	text = slurp(root, ND_KUBECONFIG, &mode);
	assert_non_null(text);
	assert_int_equal(mode, 0600);
	assert_non_null(strstr(text, "token: s3cr3t-t0ken\n"));
	free(text);
	text = slurp(root, ND_KUBELET_ENV, NULL);
	assert_non_null(strstr(text, " --kubeconfig=" ND_KUBECONFIG));
	assert_null(strstr(text, "bootstrap"));
	/* A kubeadm-packaged unit's own credentials set aside. */
	assert_non_null(strstr(text, "\nKUBELET_KUBECONFIG_ARGS=\nKUBELET_EXTRA_ARGS="));
	free(text);
	text = slurp(root, ND_CLAIM_KEPT, NULL);
	assert_null(strstr(text, "s3cr3t"));
	free(text);
	nd_claim_clear(&c);
	/* A reboot: the kept claim, no secret in it, the file still named. */
	assert_int_equal(nd_kubelet_kept(root, &kept, &err), 0);
	assert_null(kept.kubeconfig);
	if (nd_kubelet_write(root, &kept, &err) < 0)
		fail_msg("%s", err.msg);
	text = slurp(root, ND_KUBELET_ENV, NULL);
	assert_non_null(strstr(text, " --kubeconfig=" ND_KUBECONFIG));
	free(text);
	nd_claim_clear(&kept);
	/* A bootstrap kubeconfig instead: the other file goes. */
	parse_ok(C(",\"secret\":{\"bootstrap_kubeconfig\":\"" SECRET_TEXT "\"}"), &c);
	if (nd_kubelet_write(root, &c, &err) < 0)
		fail_msg("%s", err.msg);
	assert_null(slurp(root, ND_KUBECONFIG, NULL));
	text = slurp(root, ND_KUBELET_ENV, NULL);
	assert_non_null(strstr(text, " --bootstrap-kubeconfig=" ND_BOOTSTRAP_KUBECONFIG
				     " --kubeconfig=" ND_KUBELET_KUBECONFIG));
	free(text);
	nd_claim_clear(&c);
	nd_kubelet_remove(root);
	assert_null(slurp(root, ND_BOOTSTRAP_KUBECONFIG, NULL));
	rm_root(root);
}

#define JOIN4                                                                                            \
	"{\\\"apiVersion\\\":\\\"kubeadm.k8s.io/v1beta4\\\",\\\"kind\\\":\\\"JoinConfiguration\\\","     \
	"\\\"discovery\\\":{\\\"bootstrapToken\\\":{\\\"token\\\":\\\"abcdef.s3cr3t0123456789\\\","      \
	"\\\"apiServerEndpoint\\\":\\\"10.0.2.2:6443\\\"}},\\\"nodeRegistration\\\":{\\\"criSocket\\\":" \
	"\\\"unix:///run/containerd/containerd.sock\\\",\\\"name\\\":\\\"other\\\"}}"

/* A kubeadm claim: its JoinConfiguration with the claim's name, taints,
 * provider ID and labels, the rest as given; v1beta3's map of kubelet
 * flags too; anything else refused without a word of it. */
static void kubeadm_join_config(void **state)
{
	struct nd_claim c;
	struct vmact_err err = { 0 };
	json_t *j, *reg, *args;
	char *out = NULL;

	(void)state;
	parse_ok(C(",\"labels\":{\"pool\":\"a\",\"zone\":\"z\"},\"taints\":[{\"key\":\"d\","
		   "\"value\":\"k\",\"effect\":\"NoSchedule\"}],\"secret\":{\"kubeadm\":\"" JOIN4
		   "\"}"),
		 &c);
	assert_non_null(c.kubeadm);
	assert_int_equal(nd_kubeadm_config(&c, &out, &err), 0);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	reg = json_object_get(j, "nodeRegistration");
	assert_string_equal(json_string_value(json_object_get(reg, "name")), "n1");
	assert_string_equal(json_string_value(json_object_get(reg, "criSocket")),
			    "unix:///run/containerd/containerd.sock");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(reg, "taints"), 0), "effect")),
			    "NoSchedule");
	args = json_object_get(reg, "kubeletExtraArgs");
	assert_int_equal(json_array_size(args), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(args, 0), "name")),
			    "provider-id");
	assert_string_equal(json_string_value(json_object_get(json_array_get(args, 0), "value")),
			    "libvirt://h/" UUID);
	assert_string_equal(json_string_value(json_object_get(json_array_get(args, 1), "value")),
			    "pool=a,zone=z");
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(json_object_get(j, "discovery"),
								    "bootstrapToken"),
						    "apiServerEndpoint")),
			    "10.0.2.2:6443");
	json_decref(j);
	free(out);
	/* The claim's JSON never holds it. */
	out = nd_claim_json(&c);
	assert_null(strstr(out, "s3cr3t"));
	free(out);
	nd_claim_clear(&c);
	/* v1beta3: the flags as a map. */
	parse_ok(C(",\"secret\":{\"kubeadm\":\"{\\\"apiVersion\\\":\\\"kubeadm.k8s.io/v1beta3\\\","
		   "\\\"kind\\\":\\\"JoinConfiguration\\\"}\"}"),
		 &c);
	assert_int_equal(nd_kubeadm_config(&c, &out, &err), 0);
	j = json_loads(out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_object_get(j, "nodeRegistration"),
						    "kubeletExtraArgs"),
				    "provider-id")),
			    "libvirt://h/" UUID);
	json_decref(j);
	free(out);
	nd_claim_clear(&c);
	/* Not a JoinConfiguration: refused, the text not quoted. */
	parse_ok(C(",\"secret\":{\"kubeadm\":\"{\\\"kind\\\":\\\"InitConfiguration\\\","
		   "\\\"token\\\":\\\"s3cr3t\\\"}\"}"),
		 &c);
	assert_int_equal(nd_kubeadm_config(&c, &out, &err), -EPROTO);
	assert_null(out);
	assert_non_null(strstr(err.msg, "not a JoinConfiguration"));
	assert_null(strstr(err.msg, "s3cr3t"));
	nd_claim_clear(&c);
	vmact_err_reset(&err);
	parse_ok(C(",\"secret\":{\"kubeadm\":\"s3cr3t not json\"}"), &c);
	assert_int_equal(nd_kubeadm_config(&c, &out, &err), -EPROTO);
	assert_null(strstr(err.msg, "s3cr3t"));
	nd_claim_clear(&c);
	/* One kind of secret only. */
	vmact_err_reset(&err);
	assert_int_equal(nd_claim_parse(C(",\"secret\":{\"kubeadm\":\"{}\",\"kubeconfig\":\"x\"}"),
					strlen(C(",\"secret\":{\"kubeadm\":\"{}\",\"kubeconfig\":"
						 "\"x\"}")),
					&c, &err),
			 -EPROTO);
	assert_non_null(strstr(err.msg, "exclusive"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_claim),
		cmocka_unit_test(minimal_claim),
		cmocka_unit_test(refusals),
		cmocka_unit_test(hostile_bytes),
		cmocka_unit_test(same_and_json),
		cmocka_unit_test(kubelet_files),
		cmocka_unit_test(secret),
		cmocka_unit_test(kubelet_secret),
		cmocka_unit_test(kubeadm_join_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
