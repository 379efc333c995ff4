/* SPDX-License-Identifier: Apache-2.0 */
/* The libvirt operations on a node VM (prefix cl_virt_): blocking, on a
 * connection the caller holds (cluster/host/host.h), from a job thread.
 * Domains are found by UUID; "not there" is no error where the purpose
 * is to make something not be there (destroy, undefine, delete). */
#pragma once

#include <libvirt/libvirt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cluster/host/domxml.h"

/* What a domain of ours is doing, as libvirt says. */
enum cl_virt_run {
	CL_VIRT_GONE, /* no such domain */
	CL_VIRT_OFF,  /* defined, not running (saved when has_save) */
	CL_VIRT_RUNNING,
	CL_VIRT_PAUSED,
	CL_VIRT_OTHER, /* crashed, shutting down, ... */
};

struct cl_virt_dom {
	char name[CL_NAME_MAX];
	char uuid[VIR_UUID_STRING_BUFLEN];
	enum cl_virt_run run;
	bool move_paused; /* paused by a migration (libvirt's reason) */
	bool has_save;
	struct cl_meta meta;
};

/* Every domain carrying our metadata, its persistent definition's copy.
 * fn gets each (and domains whose metadata does not parse, with bad set
 * and the reason); 0 or -EIO. */
int cl_virt_list(virConnectPtr c,
		 void (*fn)(void *ud, const struct cl_virt_dom *d, bool bad, const char *why),
		 void *ud, struct vmact_err *err);

/* The volumes of pool whose name starts with prefix (our overlays);
 * -ENOENT when there is no such pool. */
int cl_virt_list_volumes(virConnectPtr c, const char *pool, const char *prefix,
			 void (*fn)(void *ud, const char *volume), void *ud, struct vmact_err *err);

int cl_virt_state(virConnectPtr c, const char *uuid, enum cl_virt_run *run, bool *has_save,
		  struct vmact_err *err);

/* Defines (or redefines: same name and UUID) the domain. */
int cl_virt_define(virConnectPtr c, const char *xml, struct vmact_err *err);
/* Starts it (restoring its managed save when it has one). */
int cl_virt_start(virConnectPtr c, const char *uuid, struct vmact_err *err);
int cl_virt_suspend(virConnectPtr c, const char *uuid, struct vmact_err *err);
int cl_virt_resume(virConnectPtr c, const char *uuid, struct vmact_err *err);
int cl_virt_managed_save(virConnectPtr c, const char *uuid, struct vmact_err *err);
/* Stops it if it runs; the definition stays. */
int cl_virt_destroy(virConnectPtr c, const char *uuid, struct vmact_err *err);
/* Stops it and removes its definition and its managed save. */
int cl_virt_remove(virConnectPtr c, const char *uuid, struct vmact_err *err);
/* Writes our metadata element (the definition, and the running domain's
 * too when it runs). */
int cl_virt_set_meta(virConnectPtr c, const char *uuid, const struct cl_meta *m,
		     struct vmact_err *err);

/* Creates the overlay volume `volume` in pool, backed by base_volume of
 * the same pool (a stale volume of that name is deleted first). */
/* The virtual size of base_volume (a node image's disk: what its root
 * filesystem can hold at most); -ENOENT, -EIO. */
int cl_virt_volume_capacity(virConnectPtr c, const char *pool, const char *base_volume,
			    uint64_t *bytes, struct vmact_err *err);
int cl_virt_overlay_create(virConnectPtr c, const char *pool, const char *base_volume,
			   const char *volume, struct vmact_err *err);
int cl_virt_overlay_delete(virConnectPtr c, const char *pool, const char *volume,
			   struct vmact_err *err);
/* Where volume of pool is on the host (its file); -ENOENT, -EIO. */
int cl_virt_volume_path(virConnectPtr c, const char *pool, const char *volume, char *buf,
			size_t len, struct vmact_err *err);
