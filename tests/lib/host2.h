/* SPDX-License-Identifier: Apache-2.0 */
/* A second libvirt host on this machine for migration tests and benches
 * (prefix th_host2_; doc/testing.md, "Two libvirt hosts on one machine"):
 * tests/host/host2.sh's privileged libvirtd B in its own mount and cgroup
 * namespaces, and what the tests ask of a host's arbiter. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "shared/lease.h"
#include "tests/lib/guest.h"
#include "tests/lib/vmactd.h"

/* B's libvirt, as root reaches it. */
#define TH_HOST2_SOCKET "/run/vmact-mig/h2/run/libvirt-sock"
#define TH_HOST2_URI    "qemu+unix:///system?socket=" TH_HOST2_SOCKET

/* host2.sh up: B running (started, or found running), its libvirtd's pid
 * in pid (for nsenter -t PID -m -C). 0, or -1 with host2.sh's reason on
 * stderr. */
int th_host2_up(char *pid, size_t len);

struct th_cluster_stack;

/* The two hosts' tests' common set-up: libvirt's error printing quiet,
 * SIGPIPE ignored, curl ready, B up (th_host2_up), a connection to each
 * daemon (*vca A, *vcb B), the cluster stack (th_cluster_stack_init)
 * and a vmactd fixture per host (th_vmactd_init, PREFIX "a" and "b",
 * without a guest). 0, or -1 with what failed on stderr. */
int th_host2_fixture(char *pid, size_t len, virConnectPtr *vca, virConnectPtr *vcb,
		     struct th_cluster_stack *s, const char *prefix, struct th_vmactd *a,
		     struct th_vmactd *b);
/* host2.sh restart: B's libvirtd SIGKILLed and started again, its QEMUs
 * left running; the new pid in pid (B's namespaces are the new one's:
 * a vmactd started in B from then on enters them). 0 or -1. */
int th_host2_restart(char *pid, size_t len);
/* host2.sh down, unless VMACT_TEST_HOST2_KEEP is set. */
void th_host2_down(void);

/* GET /v1/leases/NS/NAME at the arbiter listening on 127.0.0.1:port,
 * signed with the lease key in key_file: the HTTP status (0: no answer),
 * the entry in *pod (when not NULL) on 200. */
long th_host2_arbiter_pod(const char *key_file, unsigned port, const char *ns, const char *name,
			  struct vmact_lease_pod *pod);

/* GET /v1/leases there: the ledger's totals; the HTTP status. */
long th_host2_arbiter_ledger(const char *key_file, unsigned port, struct vmact_lease_ledger *l);

/* Takes (milli_cpu > 0) or releases (0) the lease ns/name of that size
 * (memory 1 byte: CPU alone) for ttl_s at the arbiter on port, signed:
 * the room it holds is what a test takes from a host. The HTTP status. */
long th_host2_arbiter_lease(const char *key_file, unsigned port, const char *ns, const char *name,
			    uint32_t milli_cpu, uint32_t ttl_s);

/* After a move the guest's control socket is gone (the source's QEMU
 * unlinks its path as it exits, after the destination bound it): once
 * the source's QEMU is gone, the QEMU that runs the guest now binds a new
 * one (QEMU's chardev-change of serial port 1's chardev, through libvirt
 * at uri) under TG_RUNDIR/qemu-ctl, and g->ctl names it, so tg_cmd
 * reaches the guest again. 0, or -1 with the reason on stderr. */
int th_host2_rebind_ctl(const char *uri, struct tg_guest *g);

/* Starts d's vmactd for a migration test's host (b_pid NULL: A, the
 * system libvirt; else B's, inside B's namespaces): --verbose, its
 * arbiter on 127.0.0.1 with the lease key and CPU overcommitted
 * overcommit times, its own metrics port. Its arbiter's port in
 * *arbiter_port. 0, or -1 with the reason on stderr. */
int th_host2_vmactd(struct th_vmactd *d, const char *prefix, const char *key_file,
		    const char *b_pid, double overcommit, unsigned *arbiter_port);

/* th_vmactd_respawn for such a vmactd (b_pid as given to it): SIGKILLs
 * the one running, starts its successor on the same ports, waits for its
 * arbiter. 0 or -1. */
int th_host2_vmactd_respawn(struct th_vmactd *d, const char *b_pid);

/* vmact-groupd's configuration for hosts a (qemu:///system) and b (B),
 * both taking moved VMs on 127.0.0.1, moves to b at most b_bandwidth MiB/s
 * (0: libvirt's own), with more top-level members (extra: "" or
 * ",\"migration\":{...}"), written to path. 0 or -errno. */
int th_host2_groupd_cfg(const char *path, const char *api_socket, const char *key_file,
			unsigned port_a, unsigned port_b, unsigned b_bandwidth, const char *extra);
/* The same with the hosts reached at a_uri and b_uri (relays' sockets,
 * tests/lib/relay.h). */
int th_host2_groupd_cfg_uri(const char *path, const char *api_socket, const char *key_file,
			    const char *a_uri, const char *b_uri, unsigned port_a, unsigned port_b,
			    unsigned b_bandwidth, const char *extra);

/* The domain called name on c: running; defined at all (running or not). */
bool th_host2_runs_on(virConnectPtr c, const char *name);
bool th_host2_defined_on(virConnectPtr c, const char *name);
/* libvirt on c has an outgoing migration of name under way. */
bool th_host2_leaving(virConnectPtr c, const char *name);

/* A move vmact-groupd lists (GET /v1/migrations on its API socket): the
 * last of vm with an id above after_id (and that reason, unless NULL)
 * that ended. */
struct th_host2_move {
	const char *vm, *reason;
	uint64_t after_id;
	/* filled: */
	uint64_t id;
	char result[16], error[512], from[64], to[64], why[512];
	double started, duration_s;
	int64_t downtime_ms;
};
/* A predicate for th_wait_until on a struct th_host2_move whose socket is
 * th_host2_move_socket's. */
bool th_host2_move_ended(void *move);
void th_host2_move_socket(const char *api_socket);

/* A test guest that moves: its serial log opened in append mode (both
 * QEMUs write it in turn during a move), reporting (vmact.report=1),
 * started on c with metadata and, with persistent, made persistent (its
 * definition moves too); the template is written into dir. 0, or -1 with
 * the reason in msg. */
int th_host2_guest(virConnectPtr c, const char *prefix, const char *metadata, const char *dir,
		   bool persistent, struct tg_guest *g, char *msg, size_t len);
/* Destroys and undefines the guest on each of the n connections (NULL
 * ones skipped), then tg_destroy. */
void th_host2_guest_remove(virConnectPtr *c, size_t n, struct tg_guest *g);
/* A move vmact-groupd lists as not ended, of vm (NULL: any) in phase
 * (NULL: any): 1 (its id in *id when not NULL), 0 none, -1 no answer. */
int th_host2_move_under_way(const char *vm, const char *phase, uint64_t *id);
