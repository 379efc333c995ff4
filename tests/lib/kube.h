/* SPDX-License-Identifier: Apache-2.0 */
/* A real Kubernetes control plane for the tests (issue 35; doc/testing.md,
 * "A real control plane"): etcd and kube-apiserver built from their own
 * Go modules (tests/peers/kube/control-plane, tests/k8s/build-bins.sh),
 * started as the test's children on loopback with certificates and a
 * kubelet token made here, and read through libcurl with an admin client
 * certificate. Prefix th_kube_. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "tests/lib/proc.h"

struct th_kube {
	char dir[200];  /* scratch: certificates, tokens, etcd's data, logs */
	char bin[200];  /* kube-apiserver and etcd */
	char url[80];   /* https://127.0.0.1:PORT */
	char token[65]; /* the kubelets' static token (group system:nodes) */
	/* a controller's (vmact-groupd's "kubernetes"): system:masters */
	char admin_token[65];
	/* The address the API server advertises (where guests reach it, e.g.
	 * QEMU's user network's 10.0.2.2); its certificate names it too. */
	char advertise[64];
	unsigned etcd_port, etcd_peer_port, api_port;
	struct th_proc etcd, api, kcm;
};

/* The directory th_kube_start looks in, $VMACT_K8S_BIN, else the build
 * cache's (tests/k8s/build-bins.sh); false when the binaries are not
 * there, with a line saying how to make them. */
bool th_kube_bin_dir(char *out, size_t len);

/* Makes the certificates and token, starts etcd and kube-apiserver, waits
 * for /readyz, and lets the token's group register and run nodes (a
 * ClusterRoleBinding of system:nodes to system:node). advertise: the
 * address guests use (NULL: 127.0.0.1). 0 or -errno with err; on failure
 * whatever started is stopped. */
int th_kube_start(struct th_kube *k, const char *bin, const char *advertise, struct vmact_err *err);

/* Makes the control plane one that kubeadm join joins, as kubeadm init
 * would leave it, by kubeadm's own phases against it (upload-config: the
 * kubeadm-config and kubelet-config ConfigMaps; bootstrap-token: the token,
 * cluster-info and the bootstrap RBAC), and starts kube-controller-manager
 * with the controllers a join needs (the CSR approver and signer, the
 * bootstrap signer that signs cluster-info for the token). Gives the
 * bootstrap token ("abcdef.0123456789abcdef", 24 bytes with its NUL) and
 * the CA's public key hash as kubeadm pins it ("sha256:HEX", 72 bytes). The
 * binaries' directory must hold kubeadm and kube-controller-manager. 0 or
 * -errno with err (whatever started is stopped by th_kube_stop). */
int th_kube_kubeadm(struct th_kube *k, char token[24], char ca_hash[72], struct vmact_err *err);

/* Stops the API server and etcd, removes the scratch directory. */
void th_kube_stop(struct th_kube *k);

/* One request with the admin certificate: its status and, for a JSON
 * answer, the document (json_decref it). body may be NULL. 0, or -errno
 * when no answer came. */
int th_kube_call(struct th_kube *k, const char *method, const char *path, const char *body,
		 long *status, json_t **doc);

/* A kubeconfig for a kubelet reaching the API server at server (NULL: its
 * advertised address) with the token: what a group's claim.secret file
 * holds. malloc'd. */
char *th_kube_kubeconfig(const struct th_kube *k, const char *server);
