/* SPDX-License-Identifier: Apache-2.0 */
/* LibvirtBind (cluster/plugins/plugins.h): makes the VM on the chosen
 * host through cl_create_vm (cluster/host/create.h: the overlay, the
 * definition, the start, each step recorded), and leaves in the cycle
 * state the metadata it recorded last and the host the VM's definition
 * moved to. No libvirt call of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "cluster/host/create.h"
#include "cluster/plugins/plugins.h"

static void bind(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm, const char *host,
		 struct cl_fw_status *st)
{
	const struct cl_fw_handle *handle = p;
	const struct cl_bind_spec *spec = vm->spec;
	struct cl_host *h = handle->host(handle->ud, host);
	_cleanup_free_ char *where = NULL;
	struct cl_meta *m;
	struct vmact_err err = { 0 };
	bool defined = false;
	int r;

	if (!h || !spec)
		return cl_fw_status_set(st, CL_FW_ERROR, "no host %s", host);
	m = malloc(sizeof(*m));
	if (!m || cl_fw_cycle_write(cs, CL_PLUGINS_BIND_META, m, free) < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
	*m = spec->meta;
	/* The host's entry made now, empty, so that filling it once the VM
	 * is defined cannot fail. */
	where = strdup(host);
	if (!where || cl_fw_cycle_write(cs, CL_PLUGINS_BIND_HOST, NULL, NULL) < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "out of memory");
	r = cl_create_vm(
		&(struct cl_create){
			.host = h,
			.old_host = vm->defined_on[0] && strcmp(vm->defined_on, host) != 0
					    ? handle->host(handle->ud, vm->defined_on)
					    : NULL,
			.group = spec->group,
			.name = vm->name,
			.uuid = vm->uid,
			.standby = vm->standby,
			.meta = m,
		},
		&defined, &err);
	if (defined)
		cl_fw_cycle_write(cs, CL_PLUGINS_BIND_HOST, TAKE_PTR(where), free);
	if (r < 0)
		return cl_fw_status_set(st, CL_FW_ERROR, "%s", err.msg);
}

const struct cl_fw_plugin_ops cl_plugin_bind_libvirt = {
	.name = "LibvirtBind",
	.init = cl_fw_init_handle_only,
	.fini = free,
	.bind = bind,
};
