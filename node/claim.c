/* SPDX-License-Identifier: Apache-2.0 */
#include "node/claim.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "shared/json-desc.h"

#define PREFIX "claim "

/* Longer than anything this file accepts below, so that the table's
 * bound never speaks first and the checks name the rule. */
#define TEXT_MAX 1024

#define FIELD(st, m, k, kind_, ...)                                                  \
	{                                                                            \
		.key = (k), .kind = VMACT_JSON_DESC_##kind_, .off = offsetof(st, m), \
		.text_max = TEXT_MAX, __VA_ARGS__                                    \
	}

static const struct vmact_json_desc_field taint_fields[] = {
	FIELD(struct nd_taint, key, "key", TEXT, .flags = VMACT_JSON_DESC_REQUIRED),
	FIELD(struct nd_taint, value, "value", TEXT, .text_dflt = ""),
	FIELD(struct nd_taint, effect, "effect", TEXT, .flags = VMACT_JSON_DESC_REQUIRED),
};
static const struct vmact_json_desc taint_desc = VMACT_JSON_DESC(struct nd_taint, taint_fields);

_Static_assert(sizeof(struct nd_label) == sizeof(struct vmact_json_desc_pair) &&
		       offsetof(struct nd_label, value) ==
			       offsetof(struct vmact_json_desc_pair, value),
	       "a label is a vmact_json_desc_pair");

static const struct vmact_json_desc_field claim_fields[] = {
	FIELD(struct nd_claim, group, "group", TEXT, .flags = VMACT_JSON_DESC_REQUIRED),
	FIELD(struct nd_claim, name, "name", TEXT, .flags = VMACT_JSON_DESC_REQUIRED),
	FIELD(struct nd_claim, provider_id, "provider_id", TEXT, .flags = VMACT_JSON_DESC_REQUIRED),
	FIELD(struct nd_claim, labels, "labels", MAP,
	      .count_off = offsetof(struct nd_claim, nlabels), .max = ND_LABELS_MAX),
	FIELD(struct nd_claim, taints, "taints", ARRAY,
	      .count_off = offsetof(struct nd_claim, ntaints), .max = ND_TAINTS_MAX,
	      .desc = &taint_desc),
};
static const struct vmact_json_desc claim_desc = VMACT_JSON_DESC(struct nd_claim, claim_fields);

static bool alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

/* An RFC 1123 label: what a Node's name and a hostname may be. */
static bool dns_label(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max || !alnum_lower(s[0]) || !alnum_lower(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum_lower(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* An RFC 1123 subdomain (a label key's prefix). */
static bool dns_subdomain(const char *s, size_t n)
{
	size_t start = 0;

	if (!n || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (i == start || !alnum_lower(s[start]) || !alnum_lower(s[i - 1]))
			return false;
		for (size_t k = start; k < i; k++)
			if (!alnum_lower(s[k]) && s[k] != '-')
				return false;
		start = i + 1;
	}
	return true;
}

/* A label's name or value: up to 63 of [A-Za-z0-9-_.], alphanumeric at
 * both ends (a value may also be empty). */
static bool label_word(const char *s, size_t n, bool empty_ok)
{
	if (!n)
		return empty_ok;
	if (n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* A qualified name: [PREFIX/]NAME, as Kubernetes takes label and taint
 * keys. */
static bool qualified_name(const char *k)
{
	const char *slash = strchr(k, '/');

	if (!slash)
		return label_word(k, strlen(k), false);
	return dns_subdomain(k, (size_t)(slash - k)) &&
	       label_word(slash + 1, strlen(slash + 1), false);
}

static bool ns_is(const char *ns, size_t n, const char *dom)
{
	size_t d = strlen(dom);

	return (n == d && !memcmp(ns, dom, n)) ||
	       (n > d && ns[n - d - 1] == '.' && !memcmp(ns + n - d, dom, d));
}

/* The kubelet exits at start on a --node-labels key in the kubernetes.io
 * or k8s.io namespaces (or below them) that it may not set on its own
 * Node: only these keys, and the kubelet.kubernetes.io and
 * node.kubernetes.io namespaces (and below them), are allowed
 * (Kubernetes' ValidateKubeletFlags and IsKubeletLabel). */
static bool kubelet_may_set(const char *k)
{
	static const char *const keys[] = {
		"kubernetes.io/hostname",
		"kubernetes.io/arch",
		"kubernetes.io/os",
		"beta.kubernetes.io/arch",
		"beta.kubernetes.io/os",
		"beta.kubernetes.io/instance-type",
		"node.kubernetes.io/instance-type",
		"failure-domain.beta.kubernetes.io/region",
		"failure-domain.beta.kubernetes.io/zone",
		"topology.kubernetes.io/region",
		"topology.kubernetes.io/zone",
	};
	const char *slash = strchr(k, '/');
	size_t n = slash ? (size_t)(slash - k) : 0;

	if (!slash || (!ns_is(k, n, "kubernetes.io") && !ns_is(k, n, "k8s.io")))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(k, keys[i]))
			return true;
	return ns_is(k, n, "kubelet.kubernetes.io") || ns_is(k, n, "node.kubernetes.io");
}

/* libvirt://HOST/UUID, as vmact-groupd names its VMs (doc/cluster.md,
 * "State in libvirt"). */
static bool provider_id(const char *p)
{
	static const char scheme[] = "libvirt://";
	const char *host = p + sizeof(scheme) - 1, *slash, *u;

	if (strncmp(p, scheme, sizeof(scheme) - 1))
		return false;
	slash = strchr(host, '/');
	if (!slash || slash == host || slash - host > 253)
		return false;
	for (const char *c = host; c < slash; c++)
		if (!alnum(*c) && *c != '-' && *c != '.' && *c != '_')
			return false;
	u = slash + 1;
	if (strlen(u) != 36)
		return false;
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? u[i] != '-'
			 : !((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f') ||
			     (u[i] >= 'A' && u[i] <= 'F')))
			return false;
	}
	return true;
}

/* The claim's "secret": {"kubeconfig": TEXT} or {"bootstrap_kubeconfig":
 * TEXT}. A refusal names keys and sizes, never the text. */
static int read_secret(struct nd_claim *c, struct vmact_err *err)
{
	json_t *s = json_object_get(c->doc, "secret"), *v;
	const char *key;

	if (!s || json_is_null(s))
		return 0;
	if (!json_is_object(s))
		return vmact_err_set(err, EPROTO, "secret: not an object");
	json_object_foreach(s, key, v) {
		const char **dst = !strcmp(key, "kubeconfig")             ? &c->kubeconfig
				   : !strcmp(key, "bootstrap_kubeconfig") ? &c->bootstrap_kubeconfig
				   : !strcmp(key, "kubeadm")              ? &c->kubeadm
									  : NULL;
		size_t len;

		if (!dst)
			return vmact_err_set(err, EPROTO,
					     "secret: \"%.64s\" is not a kind this vmact-node "
					     "takes (kubeconfig, bootstrap_kubeconfig, kubeadm)",
					     key);
		if (!json_is_string(v))
			return vmact_err_set(err, EPROTO, "secret: %s: not a string", key);
		len = json_string_length(v);
		if (!len || len > ND_SECRET_MAX)
			return vmact_err_set(err, EPROTO, "secret: %s: %zu bytes (1 to %d)", key,
					     len, ND_SECRET_MAX);
		*dst = json_string_value(v);
	}
	if (!!c->kubeconfig + !!c->bootstrap_kubeconfig + !!c->kubeadm > 1)
		return vmact_err_set(err, EPROTO,
				     "secret: kubeconfig, bootstrap_kubeconfig and kubeadm are "
				     "exclusive");
	return 0;
}

/* What the table cannot say. Values are quoted only where they are
 * names (a refusal goes to the console). */
static int check(const struct nd_claim *c, struct vmact_err *err)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };

	if (strlen(c->group) > 40 || !dns_label(c->group, 40))
		return vmact_err_set(
			err, EPROTO,
			"group: \"%.64s\" is not a group's name ([a-z0-9-], 40 at most)", c->group);
	if (!dns_label(c->name, 63))
		return vmact_err_set(
			err, EPROTO,
			"name: \"%.64s\" is not a Node's name (an RFC 1123 label: [a-z0-9-], "
			"63 at most)",
			c->name);
	if (!provider_id(c->provider_id))
		return vmact_err_set(err, EPROTO,
				     "provider_id: \"%.64s\" is not libvirt://HOST/UUID",
				     c->provider_id);
	for (size_t i = 0; i < c->nlabels; i++) {
		const struct nd_label *l = &c->labels[i];

		if (!qualified_name(l->key))
			return vmact_err_set(err, EPROTO,
					     "labels: \"%.64s\" is not a label key ([PREFIX/]NAME)",
					     l->key);
		if (!label_word(l->value, strlen(l->value), true))
			return vmact_err_set(err, EPROTO,
					     "labels: %.64s: the value is not a label value "
					     "(63 at most of [A-Za-z0-9-_.])",
					     l->key);
		if (!kubelet_may_set(l->key))
			return vmact_err_set(err, EPROTO,
					     "labels: %.64s cannot be set by a kubelet on its own "
					     "Node; set it after registration",
					     l->key);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(c->labels[k].key, l->key))
				return vmact_err_set(err, EPROTO, "labels: %.64s: twice", l->key);
	}
	for (size_t i = 0; i < c->ntaints; i++) {
		const struct nd_taint *t = &c->taints[i];
		bool known = false;

		if (!qualified_name(t->key))
			return vmact_err_set(err, EPROTO,
					     "taints[%zu]: key: \"%.64s\" is not a taint key "
					     "([PREFIX/]NAME)",
					     i, t->key);
		if (!label_word(t->value, strlen(t->value), true))
			return vmact_err_set(err, EPROTO,
					     "taints[%zu]: value: not a taint value (63 at most of "
					     "[A-Za-z0-9-_.])",
					     i);
		for (size_t k = 0; k < ARRAY_SIZE(effects); k++)
			known |= !strcmp(t->effect, effects[k]);
		if (!known)
			return vmact_err_set(err, EPROTO,
					     "taints[%zu]: effect: \"%.64s\" is not NoSchedule, "
					     "PreferNoSchedule or NoExecute",
					     i, t->effect);
	}
	return 0;
}

int nd_claim_parse(const char *line, size_t len, struct nd_claim *out, struct vmact_err *err)
{
	json_error_t je;
	json_t *doc;
	int r;

	*out = (struct nd_claim){ 0 };
	if (len && line[len - 1] == '\n')
		len--;
	if (len && line[len - 1] == '\r')
		len--;
	if (len >= ND_CLAIM_LINE_MAX)
		return vmact_err_set(err, EPROTO, "the line is longer than %d bytes",
				     ND_CLAIM_LINE_MAX - 1);
	if (memchr(line, '\0', len))
		return vmact_err_set(err, EPROTO, "the line has a NUL byte");
	if (len < sizeof(PREFIX) - 1 || memcmp(line, PREFIX, sizeof(PREFIX) - 1))
		return vmact_err_set(err, EPROTO, "not a claim (a line \"claim {...}\")");
	doc = json_loadb(line + sizeof(PREFIX) - 1, len - (sizeof(PREFIX) - 1),
			 JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		/* jansson quotes the text near the fault: cut, since it may be
		 * a secret's. */
		char *near = strstr(je.text, " near ");

		if (near)
			*near = '\0';
		return vmact_err_set(err, EPROTO, "the claim is not JSON: %s (column %d)", je.text,
				     je.column);
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		return vmact_err_set(err, EPROTO, "the claim is not a JSON object");
	}
	/* The decoder zeroes the struct: the document joins it after. */
	r = vmact_json_desc_decode(&claim_desc, doc, out, err);
	out->doc = doc;
	if (r >= 0)
		r = check(out, err);
	if (r >= 0)
		r = read_secret(out, err);
	if (r < 0)
		nd_claim_clear(out);
	return r;
}

/* A secret's bytes, where the document holds them. */
static void wipe(const char *s)
{
	if (s)
		explicit_bzero((char *)s, strlen(s));
}

void nd_claim_forget_secret(struct nd_claim *c)
{
	wipe(c->kubeconfig);
	wipe(c->bootstrap_kubeconfig);
	wipe(c->kubeadm);
	wipe(c->kubeadm);
	c->kubeconfig = c->bootstrap_kubeconfig = c->kubeadm = NULL;
}

void nd_claim_clear(struct nd_claim *c)
{
	json_t *doc = c->doc;

	wipe(c->kubeconfig);
	wipe(c->bootstrap_kubeconfig);
	vmact_json_desc_clear(&claim_desc, c);
	json_decref(doc);
	*c = (struct nd_claim){ 0 };
}

/* Wipes a JSON document's strings before it is freed: a join
 * configuration holds a bootstrap token. */
static void wipe_json(json_t *j)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_string(j))
		explicit_bzero((char *)json_string_value(j), json_string_length(j));
	else if (json_is_object(j))
		json_object_foreach(j, key, v)
			wipe_json(v);
	else if (json_is_array(j))
		json_array_foreach(j, i, v)
			wipe_json(v);
}

char *nd_claim_labels_arg(const struct nd_claim *c)
{
	char *labels = strdup("");

	for (size_t i = 0; labels && i < c->nlabels; i++) {
		char *l = NULL;

		if (asprintf(&l, "%s%s%s=%s", labels, i ? "," : "", c->labels[i].key,
			     c->labels[i].value) < 0)
			l = NULL;
		free(labels);
		labels = l;
	}
	return labels;
}

json_t *nd_claim_taints_json(const struct nd_claim *c)
{
	json_t *taints = json_array();

	for (size_t i = 0; taints && i < c->ntaints; i++)
		if (json_array_append_new(taints,
					  json_pack("{s:s,s:s,s:s}", "key", c->taints[i].key,
						    "value", c->taints[i].value, "effect",
						    c->taints[i].effect)) < 0) {
			json_decref(taints);
			return NULL;
		}
	return taints;
}

int nd_kubeadm_config(const struct nd_claim *c, char **out, struct vmact_err *err)
{
	json_t *j, *reg, *taints = nd_claim_taints_json(c), *args;
	const char *api, *kind;
	char *labels = nd_claim_labels_arg(c), *dump = NULL;
	bool v1beta4;
	int r = 0;

	*out = NULL;
	j = c->kubeadm ? json_loads(c->kubeadm, JSON_REJECT_DUPLICATES, NULL) : NULL;
	api = json_string_value(json_object_get(j, "apiVersion"));
	kind = json_string_value(json_object_get(j, "kind"));
	if (!j || !json_is_object(j) || !kind || strcmp(kind, "JoinConfiguration") || !api ||
	    (strcmp(api, "kubeadm.k8s.io/v1beta4") && strcmp(api, "kubeadm.k8s.io/v1beta3"))) {
		r = vmact_err_set(err, EPROTO,
				  "secret: kubeadm: not a JoinConfiguration (apiVersion "
				  "kubeadm.k8s.io/v1beta3 or v1beta4) in JSON");
		goto out;
	}
	v1beta4 = !strcmp(api, "kubeadm.k8s.io/v1beta4");
	reg = json_object_get(j, "nodeRegistration");
	if (!reg) {
		reg = json_object();
		json_object_set_new(j, "nodeRegistration", reg);
	}
	if (!json_is_object(reg)) {
		r = vmact_err_set(err, EPROTO, "secret: kubeadm: nodeRegistration: not an object");
		goto out;
	}
	/* The kubelet's flags: a list of {name, value} from v1beta4 on, a map
	 * before. */
	args = v1beta4 ? json_pack("[{s:s,s:s}]", "name", "provider-id", "value", c->provider_id)
		       : json_pack("{s:s}", "provider-id", c->provider_id);
	if (args && labels && c->nlabels) {
		if (v1beta4)
			json_array_append_new(args, json_pack("{s:s,s:s}", "name", "node-labels",
							      "value", labels));
		else
			json_object_set_new(args, "node-labels", json_string(labels));
	}
	if (!taints || !labels || !args) {
		json_decref(args);
		r = vmact_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	/* set_new takes each reference, also when it fails. */
	r = json_object_set_new(reg, "taints", taints);
	taints = NULL;
	if (r < 0 || json_object_set_new(reg, "kubeletExtraArgs", args) < 0 ||
	    json_object_set_new(reg, "name", json_string(c->name)) < 0) {
		r = vmact_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	dump = json_dumps(j, JSON_COMPACT);
	if (!dump)
		r = vmact_err_set(err, ENOMEM, "out of memory");
	*out = dump;
out:
	json_decref(taints);
	if (j) {
		wipe_json(j);
		json_decref(j);
	}
	free(labels);
	return r;
}

char *nd_claim_json(const struct nd_claim *c)
{
	json_t *o = vmact_json_desc_encode(&claim_desc, c);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

bool nd_claim_same(const struct nd_claim *a, const struct nd_claim *b)
{
	char *x = nd_claim_json(a), *y = nd_claim_json(b);
	bool same = x && y && !strcmp(x, y);

	free(x);
	free(y);
	return same;
}
