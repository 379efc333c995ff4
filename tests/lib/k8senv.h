/* SPDX-License-Identifier: Apache-2.0 */
/* Node VMs joining a real control plane (issue 35; make check-k8s and
 * make bench-provision-k8s): the control plane of tests/lib/kube.h, the
 * groups' kubeconfigs for their claims, and vmact-groupd with
 * vmact-cloudprovider on real libvirt (tests/lib/cpenv.h) with the node
 * image tests/k8s/build-node-image.sh makes; the autoscaler's calls through
 * tests/peers/ca-client.js, and the Nodes read from the API server. One
 * teardown leaves nothing behind, after a failure too. Prefix th_k8senv_. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "tests/lib/cpenv.h"
#include "tests/lib/kube.h"

struct th_k8senv {
	struct th_kube kube;
	struct th_cpenv env;
	/* the groups' claim secrets: a kubeconfig the API server takes, and
	 * one whose token it refuses (vmact-cluster's, mode 0600) */
	char secret_dir[64], secret[128], bad_secret[128];
	/* With @KUBEADM@ in the groups: a JoinConfiguration (JSON, vmact-
	 * cluster's, mode 0600) for a join by kubeadm, its bootstrap token */
	char kubeadm_secret[128], kubeadm_token[24];
	char node_dir[256], ca[128], token_file[128], logs[64];
	char kube_extra[512];
	bool kube_up, started;
};

/* groups: the "groups" array's items (tests/lib/cpenv.h), where
 * @TEMPLATE@ is the node image's template (TCG, 2 vCPUs, 1Gi, its kernel,
 * initrd and disk, QEMU's user network), @SECRET@ the kubeconfig's path,
 * @BAD_SECRET@ the refused one's and @KUBEADM@ a kubeadm JoinConfiguration's
 * (the control plane then made one kubeadm joins: th_kube_kubeadm). Needs VMACT_K8S_NODE (the image)
 * and the binaries (th_kube_bin_dir). 0, or -1 with msg; th_k8senv_stop
 * after either. */
int th_k8senv_start(struct th_k8senv *k, const char *groups, char *msg, size_t msglen);
void th_k8senv_stop(struct th_k8senv *k, const char *const *groups);

/* ca-client.js SCENARIO for group, with more arguments (NULL-ended, or
 * NULL); its log's path in log. 0, or its exit status with the provider's
 * log printed. */
int th_k8senv_client(struct th_k8senv *k, const char *group, const char *scenario,
		     const char *const *extra, char *log, size_t len);

/* GET /api/v1/nodes (a new reference), NULL when it failed. */
json_t *th_k8senv_nodes(struct th_k8senv *k);
/* The Nodes; (size_t)-1 when they could not be read. */
size_t th_k8senv_node_count(struct th_k8senv *k);
/* The first Node whose spec.providerID match() takes (a new reference),
 * else NULL. */
json_t *th_k8senv_node_where(struct th_k8senv *k, bool (*match)(const char *provider_id, void *ud),
			     void *ud);
/* The Node whose spec.providerID is id (a new reference), else NULL. */
json_t *th_k8senv_node_of(struct th_k8senv *k, const char *id);
/* Its Ready condition is True. */
bool th_k8senv_node_ready(const json_t *node);
/* The files in the node VMs' console log directory that hold needle. */
unsigned th_k8senv_consoles_with(struct th_k8senv *k, const char *needle);
/* The tails of the consoles that hold needle, printed. */
void th_k8senv_print_consoles(struct th_k8senv *k, const char *needle);
/* The group's running-tier standby VMs ready, from vmact-groupd. */
unsigned th_k8senv_running_ready(struct th_k8senv *k, const char *group);
