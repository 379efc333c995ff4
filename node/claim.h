/* SPDX-License-Identifier: Apache-2.0 */
/* The claim a node VM's guest is told by vmact-groupd (doc/cluster.md,
 * "The claim"), as vmact-node reads it: one line,
 *
 *   claim {"group":G,"name":N,"provider_id":P,"labels":{...},"taints":[...]}
 *
 * from a port the host writes and the guest cannot trust more than any
 * peer's bytes: every refusal is -EPROTO with a message naming the field
 * (never a value of a secret), and nothing is acted on until the whole
 * claim passed. What is refused is what the kubelet itself would refuse
 * after it started (it exits, and a node that never registers says
 * nothing on the console): names and label keys Kubernetes would not
 * take, and the labels a kubelet may not set on its own Node. Keys the
 * claim has and this version does not know are ignored, so that
 * vmact-groupd can add fields. Prefix nd_. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* The longest claim line, its newline included (room for a secret). */
#define ND_CLAIM_LINE_MAX 65536
/* The longest secret (a kubeconfig). */
#define ND_SECRET_MAX 32768
#define ND_LABELS_MAX 64
#define ND_TAINTS_MAX 64

struct nd_label {
	const char *key, *value;
};

struct nd_taint {
	const char *key, *value, *effect;
};

struct nd_claim {
	const char *group;
	const char *name;        /* the Node's name and the guest's hostname */
	const char *provider_id; /* libvirt://HOST/UUID */
	struct nd_label *labels; /* in the claim's order */
	size_t nlabels;
	struct nd_taint *taints;
	size_t ntaints;
	/* The node's credentials for the API server, from the claim's
	 * "secret" (vmact-groupd's claim.secret), at most one: a kubeconfig,
	 * or a bootstrap kubeconfig for the kubelet's TLS bootstrap; NULL
	 * when the claim has none (the image has its own). Never in
	 * nd_claim_json, nd_claim_same or a message; wiped by
	 * nd_claim_clear. */
	const char *kubeconfig, *bootstrap_kubeconfig;
	/* Or a kubeadm JoinConfiguration (JSON text, kubeadm.k8s.io v1beta3
	 * or v1beta4): the node joins by `kubeadm join` (nd_kubeadm_config). */
	const char *kubeadm;
	json_t *doc; /* the strings point into it */
};

/* Parses one line (len bytes, the newline optional) into *out; on a
 * refusal *out holds nothing (nd_claim_clear is harmless either way). */
int nd_claim_parse(const char *line, size_t len, struct nd_claim *out, struct vmact_err *err);
void nd_claim_clear(struct nd_claim *c);
/* Wipes the claim's secret, once it is written where the kubelet reads
 * it: the claim kept in memory holds none. */
void nd_claim_forget_secret(struct nd_claim *c);

/* The claim's JoinConfiguration with the claim's name, taints, provider
 * ID and labels in its nodeRegistration (the rest as given), as JSON text
 * (malloc'd; the caller wipes and frees it); -EPROTO naming what is wrong
 * with the one given (not JSON, not a JoinConfiguration of a version it
 * knows). */
int nd_kubeadm_config(const struct nd_claim *c, char **out, struct vmact_err *err);

/* The claim's labels as the kubelet's --node-labels takes them
 * ("k=v,k2=v2", "" for none), and its taints as a KubeletConfiguration's
 * or a JoinConfiguration's list ({key, value, effect}); NULL when out of
 * memory. */
char *nd_claim_labels_arg(const struct nd_claim *c);
json_t *nd_claim_taints_json(const struct nd_claim *c);

/* The claim as JSON (what vmact-node keeps in claim.json), written in a
 * fixed order; NULL when out of memory. */
char *nd_claim_json(const struct nd_claim *c);

/* Whether two claims say the same: a claim told again (vmact-groupd
 * resumes a half-done claim after a restart) is acknowledged again,
 * another one refused. */
bool nd_claim_same(const struct nd_claim *a, const struct nd_claim *b);
