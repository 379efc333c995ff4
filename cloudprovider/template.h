/* SPDX-License-Identifier: Apache-2.0 */
/* NodeGroupTemplateNodeInfo's node: a core/v1 Node in Kubernetes' protobuf
 * encoding, as a VM of the group looks once its kubelet has registered
 * (doc/cloudprovider.md, "The template node"). cluster-autoscaler fits
 * pending pods onto it to decide whether growing a group with no nodes
 * would help. */
#pragma once

#include <protobuf-c/protobuf-c.h>

#include "base/error.h"
#include "cloudprovider/arena.h"
#include "cloudprovider/group.h"

/* The encoded node, in arena memory. */
int cp_template_node(const struct vmact_gapi_group *g, struct cp_arena *a, ProtobufCBinaryData *out,
		     struct vmact_err *err);
