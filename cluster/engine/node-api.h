/* SPDX-License-Identifier: Apache-2.0 */
/* The Node a removed VM leaves in the cluster's API server (the
 * configuration's "kubernetes", doc/cluster.md "Nodes in the API
 * server"): deleted when its spec.providerID is the VM's, as a cloud's
 * controller manager deletes the Node of an instance that is gone and as
 * cluster-autoscaler expects after it deleted one. Blocking: from a job's
 * thread. Prefix cl_node_api_. */
#pragma once

#include "base/error.h"
#include "cluster/config/config.h"

/* 1: the Node name was the VM's (spec.providerID provider_id) and is
 * deleted; 0: there is none by that name, or it is another's (left
 * alone); -errno with err: the server could not be asked or refused. */
int cl_node_api_delete(const struct cl_kube *k, const char *name, const char *provider_id,
		       struct vmact_err *err);
