/* SPDX-License-Identifier: Apache-2.0 */
/* What a claim makes of the node (vmact-node(8), "Files"): the kubelet's
 * configuration from the claim, and the claim itself kept for a reboot.
 * Every path is under root ("" on a node; a directory in tests); the
 * files name each other by their paths on the node. Each file is written
 * whole or not at all (a temporary file, fsync, rename). */
#pragma once

#include "base/error.h"
#include "node/claim.h"

/* The kubelet's drop-in directory (its --config-dir), the environment
 * file of its unit's drop-in, the claim as applied, and the claim kept
 * across reboots. */
#define ND_RUN_DIR         "/run/vmact-node"
#define ND_KUBELET_CONFDIR ND_RUN_DIR "/kubelet.conf.d"
#define ND_KUBELET_CONF    ND_KUBELET_CONFDIR "/50-claim.conf"
#define ND_KUBELET_ENV     ND_RUN_DIR "/kubelet.env"
#define ND_CLAIM_RUN       ND_RUN_DIR "/claim.json"
#define ND_STATE_DIR       "/var/lib/vmact-node"
#define ND_CLAIM_KEPT      ND_STATE_DIR "/claim.json"
/* The claim's secret (mode 0600), kept for the kubelet after a reboot;
 * the kubelet writes its own kubeconfig after a TLS bootstrap. */
#define ND_KUBECONFIG           ND_STATE_DIR "/kubeconfig"
#define ND_BOOTSTRAP_KUBECONFIG ND_STATE_DIR "/bootstrap-kubeconfig"
#define ND_KUBELET_KUBECONFIG   "/var/lib/kubelet/kubeconfig"
/* A kubeadm claim's JoinConfiguration, while kubeadm join runs (0600). */
#define ND_KUBEADM_JOIN ND_RUN_DIR "/join.json"

/* Writes the kubelet's files for c: the claim's secret, if it has one
 * (ND_KUBECONFIG or ND_BOOTSTRAP_KUBECONFIG, the other removed); its
 * KubeletConfiguration drop-in (providerID, registerWithTaints) and the
 * environment its unit reads (KUBELET_EXTRA_ARGS: --config-dir,
 * --hostname-override, --node-labels, and --kubeconfig or
 * --bootstrap-kubeconfig for the secret kept, if any: a kept claim
 * applied after a reboot has no secret, the file does); then the claim,
 * without its secret, in ND_CLAIM_RUN and ND_CLAIM_KEPT. */
int nd_kubelet_write(const char *root, const struct nd_claim *c, struct vmact_err *err);

/* Writes text (the JoinConfiguration) to ND_KUBEADM_JOIN, mode 0600. */
int nd_kubelet_write_join(const char *root, const char *text, struct vmact_err *err);

/* Removes what nd_kubelet_write wrote (a claim that could not be carried
 * out is not kept). */
void nd_kubelet_remove(const char *root);

/* The claim kept across reboots: 0 with *c, -ENOENT when there is none,
 * -EPROTO when it does not read as a claim. */
int nd_kubelet_kept(const char *root, struct nd_claim *c, struct vmact_err *err);
