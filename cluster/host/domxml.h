/* SPDX-License-Identifier: Apache-2.0 */
/* A node VM's domain XML and its cluster metadata (prefix cl_domxml_;
 * doc/cluster.md, "State in libvirt").
 *
 * Every VM a group owns carries one element in its domain's <metadata>,
 * in namespace CL_DOMXML_NS:
 *
 *   <cl:node xmlns:cl="https://vmact.dev/xmlns/cluster/1" group="workers"
 *            role="member" tier="saved" state="claimed" created="1732570000.1"
 *            booted="..." requested="..." in-service="..." attempts="1">
 *     <cl:error class="other" code="BOOT_TIMEOUT" at="..." message="..."/>
 *   </cl:node>
 *
 * It is written before each step it describes is taken, so that a
 * restarted vmact-groupd can tell what each VM was doing: the group's
 * membership (role), and with it its target size, lives only there. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "cluster/config/config.h"

#define CL_DOMXML_NS  "https://vmact.dev/xmlns/cluster/1"
#define CL_DOMXML_KEY "cl"

enum cl_role { CL_ROLE_POOL, CL_ROLE_MEMBER };

/* A VM's state, the phases of doc/cluster.md, "Pool lifecycle", as
 * recorded in libvirt ("State in libvirt"). */
enum cl_state {
	CL_ST_PENDING,  /* a member not placed: defined, never started, no disk */
	CL_ST_CREATING, /* disk made, domain defined and being started */
	CL_ST_BOOTING,  /* started; waiting to be healthy (BootTimeout) */
	CL_ST_READY,    /* standby, healthy, in its tier (paused, saved) */
	CL_ST_CLAIMING, /* a member taken from the pool, being woken */
	CL_ST_CLAIMED,  /* in service: the guest was told its claim */
	CL_ST_DELETING, /* being destroyed */
	CL_N_STATES,
};
const char *cl_domxml_state_name(enum cl_state s);
/* "running", "paused", "saved", "cold" (a VM booted for its claim). */
const char *cl_domxml_tier_name(enum cl_tier t);
int cl_domxml_tier_parse(const char *s, enum cl_tier *out);
const char *cl_domxml_role_name(enum cl_role r);

struct cl_meta {
	char group[CL_NAME_MAX];
	enum cl_role role;
	enum cl_tier tier;
	enum cl_state state;
	/* CLOCK_REALTIME seconds; 0 = not yet. */
	double created, booted, requested, in_service;
	unsigned attempts;
	/* The host its provider ID names ("libvirt://HOST/UUID"), when that
	 * is no longer the host it runs on: a Node's spec.providerID never
	 * changes, so a moved VM keeps the ID it was claimed with. "" = the
	 * host it is defined on. */
	char provider_host[CL_NAME_MAX];
	bool has_error;
	char err_class[32]; /* "other", "out-of-resources" */
	char err_code[64];
	char err_msg[256];
	double err_at;
};

/* The element above (without a trailing newline); malloc'd, NULL on
 * ENOMEM. in_domain: prefixed, with its namespace declared, for a domain
 * definition; otherwise bare, as virDomainSetMetadata wants it (libvirt
 * puts it into the namespace itself). */
char *cl_domxml_meta_format(const struct cl_meta *m, bool in_domain);
/* Parses it back (as libvirt returns it, prefixed or not); -EINVAL naming
 * what is wrong. */
int cl_domxml_meta_parse(const char *xml, struct cl_meta *m, struct vmact_err *err);

/* The whole domain definition for a group's VM. disk: with its overlay
 * volume (pool, volume) or without a disk at all (a placeholder). */
struct cl_domxml_spec {
	const struct cl_group_cfg *group;
	const char *name, *uuid;
	const char *pool, *volume; /* NULL: no disk */
	const struct cl_meta *meta;
	/* The host's channel_dir ("" or NULL: libvirt picks the sockets'
	 * paths). */
	const char *channel_dir;
};
char *cl_domxml_domain(const struct cl_domxml_spec *s, struct vmact_err *err);

/* The overlay volume's definition: a qcow2 named volume backed by
 * backing_path (the base volume's path), of backing_capacity bytes. */
char *cl_domxml_overlay(const char *volume, const char *backing_path,
			unsigned long long backing_capacity, const char *backing_format);

/* "<name>.qcow2": the overlay volume of a domain. */
int cl_domxml_volume_name(const char *domain, char *buf, size_t len);
