/* SPDX-License-Identifier: Apache-2.0 */
/* A second libvirt host on this machine for migration tests and benches
 * (prefix th_host2_; doc/testing.md, "Two libvirt hosts on one machine"):
 * tests/host/host2.sh's privileged libvirtd B in its own mount and cgroup
 * namespaces, and what the tests ask of a host's arbiter. */
#pragma once

#include <stddef.h>

#include "shared/lease.h"

/* B's libvirt, as root reaches it. */
#define TH_HOST2_URI "qemu+unix:///system?socket=/run/vmact-mig/h2/run/libvirt-sock"

/* host2.sh up: B running (started, or found running), its libvirtd's pid
 * in pid (for nsenter -t PID -m -C). 0, or -1 with host2.sh's reason on
 * stderr. */
int th_host2_up(char *pid, size_t len);
/* host2.sh down, unless VMACT_TEST_HOST2_KEEP is set. */
void th_host2_down(void);

/* GET /v1/leases/NS/NAME at the arbiter listening on 127.0.0.1:port,
 * signed with the lease key in key_file: the HTTP status (0: no answer),
 * the entry in *pod (when not NULL) on 200. */
long th_host2_arbiter_pod(const char *key_file, unsigned port, const char *ns, const char *name,
			  struct vmact_lease_pod *pod);
