/* SPDX-License-Identifier: Apache-2.0 */
/* PrioritySort (cluster/plugins.h): the QueueSort of the default profile.
 * Members before standby VMs of a refill (a node cluster-autoscaler asked
 * for comes before the pool that makes the next one fast), then the VM
 * that has waited longest first. */
#include "cluster/plugins/plugins.h"

static bool priority_less(void *p, const struct cl_fw_queued *a, const struct cl_fw_queued *b)
{
	if (a->vm->standby != b->vm->standby)
		return !a->vm->standby;
	return a->queued_usec < b->queued_usec;
}

const struct cl_fw_plugin_ops cl_plugin_queue_priority_sort = {
	.name = "PrioritySort",
	.less = priority_less,
};
