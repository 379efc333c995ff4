/* SPDX-License-Identifier: Apache-2.0 */
/* A VM's Node in the cluster's API server (the configuration's
 * "kubernetes", doc/cluster.md "Nodes in the API server"): read once its
 * kubelet registered, for what the kubelet reports (the group's template
 * node then says the same), and deleted when the VM is removed, as a
 * cloud's controller manager deletes the Node of an instance that is gone
 * and as cluster-autoscaler expects after it deleted one. Only a Node whose
 * spec.providerID is the VM's is either. Blocking: from a job's thread.
 * Prefix cl_node_api_. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "cluster/config/config.h"

/* Resources as a kubelet reports them in a Node's status. */
struct cl_node_resources {
	uint64_t milli_cpu;
	uint64_t memory;    /* bytes */
	uint64_t ephemeral; /* bytes; 0: not reported */
	uint64_t pods;
};

struct cl_node_report {
	struct cl_node_resources capacity, allocatable;
};

/* 1: the Node name is the VM's and its kubelet reported cpu, memory and
 * pods (out filled); 0: no such Node yet, another's, or one whose status
 * says nothing yet; -errno with err: the server could not be asked,
 * refused, or answered what is no Node (-EPROTO naming the field). */
int cl_node_api_report(const struct cl_kube *k, const char *name, const char *provider_id,
		       struct cl_node_report *out, struct vmact_err *err);
/* The resources of a Node's status.capacity or status.allocatable (a
 * JSON object); what cl_node_api_report reads, for its tests. 1: read;
 * 0: cpu, memory or pods missing; -EPROTO: a value that is no quantity. */
int cl_node_api_resources(const json_t *map, const char *what, struct cl_node_resources *out,
			  struct vmact_err *err);

/* 1: the Node name was the VM's (spec.providerID provider_id) and is
 * deleted; 0: there is none by that name, or it is another's (left
 * alone); -errno with err: the server could not be asked or refused. */
int cl_node_api_delete(const struct cl_kube *k, const char *name, const char *provider_id,
		       struct vmact_err *err);

/* Every Node with a spec.providerID, page by page: fn(ud, name,
 * provider_id). 0, or -errno with err (the pages before were given). */
typedef void cl_node_api_list_fn(void *ud, const char *name, const char *provider_id);
int cl_node_api_list(const struct cl_kube *k, cl_node_api_list_fn *fn, void *ud,
		     struct vmact_err *err);
