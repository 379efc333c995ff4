/* SPDX-License-Identifier: Apache-2.0 */
/* hp_op_start: the public entry, which picks the operation for a request
 * kind and hands it to the framework. */
#include <errno.h>
#include <string.h>

#include "base/macro.h"
#include "hotplug/op.h"

static const hp_op_run_fn kinds[] = {
	[HP_OP_SET_VCPUS] = hp_op_vcpus,
	[HP_OP_VIRTIO_MEM] = hp_op_virtio_mem,
	[HP_OP_DIMM_ATTACH] = hp_op_dimm_attach,
	[HP_OP_DIMM_DETACH] = hp_op_dimm_detach,
};

int hp_op_start(struct hp_conn *c, const char *uuid, const struct hp_op_req *req, hp_op_fn fn,
		void *userdata, struct vmact_err *err)
{
	if (!uuid || strlen(uuid) >= HP_UUID_LEN)
		return vmact_err_set(err, EINVAL, "bad domain uuid");
	if ((unsigned)req->kind >= ARRAY_SIZE(kinds) || !kinds[req->kind])
		return vmact_err_set(err, EINVAL, "unknown operation %d", (int)req->kind);
	return hp_op_launch(c, uuid, req, kinds[req->kind], fn, userdata, err);
}
