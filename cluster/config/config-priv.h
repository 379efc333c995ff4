/* SPDX-License-Identifier: Apache-2.0 */
/* The reading of groupd.json, shared by its files only, which call each
 * other one way (tests/checks/check-cycles.sh):
 *   load.c     the document's top: api, metrics, libvirt, lifecycle, hosts,
 *              scheduler, groups
 *     -> group.c   a group's section, and the lifecycle groups inherit
 *   both -> read.c     the typed readers, which name the key of any error
 *   both -> config.c   a loaded configuration's lookups and its end */
#pragma once

#ifndef CL_CONFIG_PRIV_ALLOW
#error "config-priv.h is private to cluster/config/: include cluster/config/config.h"
#endif

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cluster/config/config.h"

/* Where the reading is: the path of the object being read ("groups[2].
 * template"), which every error starts with. */
struct cl_read_ctx {
	char path[256];
	struct vmact_err *err;
};

/* -EINVAL with "PATH.KEY: MESSAGE" (KEY NULL: the object itself). */
int cl_read_bad(struct cl_read_ctx *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Refuses a non-object and members not in `known` (NULL-terminated). */
int cl_read_keys(struct cl_read_ctx *c, const json_t *obj, const char *const *known);
/* The members by type, each into *out (left as it is when the member is
 * absent and not required); 0 or -EINVAL naming the key. A string fits in
 * size with its NUL and holds none. */
int cl_read_str(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		bool empty_ok, char *buf, size_t size);
int cl_read_uint(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		 unsigned long long lo, unsigned long long hi, unsigned long long *out);
int cl_read_unsigned(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		     unsigned lo, unsigned hi, unsigned *out);
/* A number of seconds in [lo, hi], into microseconds. */
int cl_read_seconds(struct cl_read_ctx *c, const json_t *obj, const char *key, double lo, double hi,
		    uint64_t *usec);
/* A Kubernetes quantity as a string ("512Mi"), or a plain integer. */
int cl_read_bytes(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		  uint64_t *out);
/* CPUs as a quantity ("500m") or whole CPUs, into millicpus. */
int cl_read_milli(struct cl_read_ctx *c, const json_t *obj, const char *key, uint32_t *out);
/* Descends into a member (a '.' then the name, or "taints[3]"). */
void cl_read_push(struct cl_read_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Back to the path before the last push: len is strlen(c->path) then. */
void cl_read_pop(struct cl_read_ctx *c, size_t len);
/* A name of lower-case letters, digits and '-' (hosts, groups). */
bool cl_read_name_ok(const char *s);

/* group.c: the lifecycle object (the top's, or a group's over it). */
int cl_group_cfg_lifecycle(struct cl_read_ctx *c, const json_t *o, struct cl_lifecycle *l);
/* group.c: one of "groups", its hosts checked against cfg's. */
int cl_group_cfg_parse(struct cl_read_ctx *c, const json_t *o, const struct cl_config *cfg,
		       struct cl_group_cfg *g);
