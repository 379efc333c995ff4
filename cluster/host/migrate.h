/* SPDX-License-Identifier: Apache-2.0 */
/* The libvirt side of a live migration between two hosts (prefix
 * cl_migrate_; doc/cluster.md, "Live migration"): what a running domain
 * says of itself (its size, whether it opted in, the key its host's
 * arbiter knows it by), the move itself (libvirt's managed direct
 * migration over the two connections the caller holds) and what the move
 * cost. Blocking, from a job thread. */
#pragma once

#include <libvirt/libvirt.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/resources.h"
#include "cluster/config/config.h"
#include "shared/lease.h"

/* A running domain as a move needs it. */
struct cl_migrate_dom {
	char name[CL_NAME_MAX];
	char uuid[VIR_UUID_STRING_BUFLEN];
	bool persistent;
	bool opted_in;  /* <vmact:migration enabled='true'/> */
	bool ours;      /* a VM of vmact-groupd's groups (cluster metadata) */
	bool has_disks; /* a disk or filesystem with a source on the host */
	/* The key its host's arbiter knows it by: <vmact:pod>'s, else
	 * "default" and the domain's name (vmactd's runner's own). */
	char pod_ns[VMACT_LEASE_NAME_MAX + 1];
	char pod_name[VMACT_LEASE_NAME_MAX + 1];
	/* What it runs with: live vCPUs x 1000, current memory. */
	struct vmact_resources size;
};

/* The domain called name on c: -ENOENT when there is none, -ESRCH when it
 * does not run, -EIO. */
int cl_migrate_inspect(virConnectPtr c, const char *name, struct cl_migrate_dom *out,
		       struct vmact_err *err);

/* Every running domain on c, as cl_migrate_inspect reads it (those that
 * stop or go meanwhile are skipped); 0 or -EIO. */
int cl_migrate_list(virConnectPtr c, void (*fn)(void *ud, const struct cl_migrate_dom *d), void *ud,
		    struct vmact_err *err);

struct cl_migrate_result {
	double seconds;      /* the call, start to end */
	int64_t downtime_ms; /* as libvirt measured it; -1: not reported */
	uint64_t bytes;      /* memory sent; 0: not reported */
};

/* A move that takes the VM's disk along (a group's VM): the top of its
 * chain is copied (VIR_MIGRATE_NON_SHARED_INC, over the target's NBD
 * server at its migration address) into the volume the caller made on the
 * target beforehand (volume, in to_pool, at volume_path), over the same
 * base, from_volume_path its file on the source; the definition names
 * the target's pool and, for its channels' sockets, the target's channel
 * directory ("" = libvirt's own place). */
struct cl_migrate_disks {
	const char *from_pool, *to_pool;
	const char *volume, *volume_path, *from_volume_path;
	const char *from_channel_dir, *to_channel_dir;
};

/* A domain definition as the target takes it: its disk (`volume` of
 * from_pool, or the file from_volume_path: a VM that moved before runs
 * from the file) as `volume` of to_pool (persistent), or, live, as the
 * file volume_path (libvirt's target looks for a copied disk's file
 * before it starts, and knows no path of a pool's volume then); any other
 * volume of from_pool in to_pool; each channel socket under
 * from_channel_dir under to_channel_dir (its path dropped when that is
 * "": libvirt names it there). malloc'd; NULL with err. */
char *cl_migrate_rewrite_xml(const char *xml, const struct cl_migrate_disks *k, bool live,
			     struct vmact_err *err);

/* Moves the running domain `name` from src to dst, live: the memory to
 * tcp://to->migration_address (where dst's QEMU listens), its definition
 * with it (a persistent domain is defined on dst and undefined on src
 * once it runs there; a transient one stays transient), its disks too
 * when disks is not NULL. Auto-converge keeps a busy guest's move finite.
 * libvirt cancels the move when the caller dies mid-way (its connection
 * closes). -EIO with libvirt's reason.
 *
 * A move cancelled as the guest pauses for its switch-over (an abort,
 * virsh domjobabort; a move with disks pauses before it, for libvirt to
 * finish the disks' copy) can stick for good, libvirt's job and this call
 * with it, in one of two ways (libvirt 9.0, QEMU 7.2): QEMU's status
 * "cancelled", the guest running again, and libvirt waiting for a pause
 * that never comes; or QEMU's status "cancelling" for ever, the guest
 * paused. Watched for meanwhile: libvirt's job going on, no copy of the
 * VM on dst, no byte sent for CL_MIGRATE_WEDGE_S seconds. Running, the VM
 * is paused (virDomainSuspend: libvirt's wait ends, the move fails, and
 * the guest runs on, resumed); paused by the move, a group's VM (disks:
 * vmact-groupd owns it) is stopped on src (virDomainDestroy: it stays
 * defined there, as a VM whose QEMU died), any other left as it is.
 * Either way the error says so ("the move stuck"). */
#define CL_MIGRATE_WEDGE_S 30
int cl_migrate_live(virConnectPtr src, virConnectPtr dst, const char *name,
		    const struct cl_host_cfg *to, const struct cl_migrate_disks *disks,
		    struct cl_migrate_result *res, struct vmact_err *err);

/* After a move whose call failed (a daemon died between the target's
 * start and the source's confirmation, libvirt's own corner): where the
 * domain runs now. 1 when it runs on dst, the source's stale definition
 * then removed (what UNDEFINE_SOURCE would have done), moved to dst first
 * when dst's copy runs transient (what PERSIST_DEST would have done); 0
 * when it runs on src (or
 * nowhere: the move did not happen); -EAGAIN while either daemon cannot
 * be asked. */
int cl_migrate_settle(virConnectPtr src, virConnectPtr dst, const char *name,
		      struct vmact_err *err);

/* Every domain on c that a move left paused with nobody to finish it
 * (libvirt's "migration of domain X finished but we don't know if the
 * domain was successfully started on destination": the connection that
 * drove the move closed between the end of QEMU's sending and the
 * source's confirmation; libvirt then ends the job and leaves the domain
 * paused, for "higher levels" to decide). Only opted-in VMs that are not
 * nodes of a group, paused by a migration, with no job under way; fn gets
 * each (its size not read). 0 or -EIO. */
int cl_migrate_list_orphans(virConnectPtr c, void (*fn)(void *ud, const struct cl_migrate_dom *d),
			    void *ud, struct vmact_err *err);

/* Decides for an orphan on here (cl_migrate_list_orphans) against the
 * other hosts' daemons: where one runs the VM, the copy here goes (as
 * cl_migrate_settle) and *ran_at says where (returns 1); where none does
 * and every one could be asked, the copy here is resumed (returns 0).
 * -EAGAIN while a daemon cannot be asked or the domain changed meanwhile:
 * nothing is done, resuming a copy that runs elsewhere too being the
 * worse mistake. */
int cl_migrate_recover(virConnectPtr here, virConnectPtr *others, const char *const *other_names,
		       size_t n, const char *name, const char **ran_at, struct vmact_err *err);
