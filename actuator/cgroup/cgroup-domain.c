/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/cgroup/cgroup-domain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/pidfile.h"

int act_cg_domain_pid(virDomainPtr dom, const char *run_dir, pid_t *pid, struct vmact_err *err)
{
	const char *name = virDomainGetName(dom);
	if (!name)
		return vmact_err_set(err, EINVAL, "domain: no name");
	if (virDomainGetID(dom) == (unsigned int)-1)
		return vmact_err_set(err, ESRCH, "domain %s: not running", name);

	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.pid",
			     run_dir ? run_dir : ACT_LIBVIRT_QEMU_RUN_DIR, name) >= sizeof(path))
		return vmact_err_set(err, ENAMETOOLONG, "domain %s: pid file path too long", name);
	if (vmact_pidfile_read(path, pid, err) < 0)
		return vmact_err_prefix(err, "domain %s", name);
	return 0;
}

int act_cg_domain_group(const struct act_cg *cg, virDomainPtr dom, const char *run_dir,
			char **group, pid_t *pid, struct vmact_err *err)
{
	pid_t p;
	int r = act_cg_domain_pid(dom, run_dir, &p, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *g = NULL;
	r = act_cg_vm_group(cg, p, &g, err);
	if (r < 0)
		return vmact_err_prefix(err, "domain %s", virDomainGetName(dom));

	/* A stale pid file could name a recycled pid in another VM's group. */
	char v1[32], v2[40];
	unsigned int id = virDomainGetID(dom);
	snprintf(v1, sizeof(v1), "qemu-%u-", id);
	snprintf(v2, sizeof(v2), "qemu\\x2d%u\\x2d", id);
	/* v1 puts it in the last component, a systemd scope one level up
	 * (…scope/libvirt). */
	if (!strstr(g, v1) && !strstr(g, v2))
		return vmact_err_set(
			err, ESRCH,
			"domain %s (id %u): QEMU pid %d is in %s, not this domain's group",
			virDomainGetName(dom), id, (int)p, g);
	if (pid)
		*pid = p;
	*group = TAKE_PTR(g);
	return 0;
}
