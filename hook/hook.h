/* SPDX-License-Identifier: Apache-2.0 */
/* hook/: vmact-hook, the libvirt qemu hook (prefix hk_; doc/hook.md).
 *
 * libvirtd runs it synchronously, in the middle of a domain's start or
 * stop, with the domain's XML on stdin. So it never calls libvirt (that
 * would deadlock libvirtd: it waits for the hook) and never waits on
 * vmactd: its notice is one non-blocking datagram (shared/hook-msg.h), and
 * whatever happens to it the hook exits 0. It refuses a start only when
 * the domain's own metadata asks for that (refuse-invalid="true") and
 * that metadata is invalid.
 *
 * domain.c: what the hook needs from the domain XML; notify.c: the
 * datagram. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "shared/hook-msg.h"

struct hk_domain {
	char name[VMACT_HOOK_NAME_MAX + 1];
	char uuid[VMACT_HOOK_UUID_LEN + 1];
	/* The <vmact:autoscaling> element as a document of its own (the form
	 * hp_meta_parse reads), malloc'd; NULL when the domain has none. */
	char *meta;
	/* Its refuse-invalid attribute is exactly "true". Read apart from the
	 * metadata's parse, which may fail: then this decides. */
	bool refuse_invalid;
};

/* Reads name, uuid and the vmact metadata from a domain XML (len bytes).
 * -EINVAL when it is not a domain XML with a name and a uuid. */
int hk_domain_parse(const char *xml, size_t len, struct hk_domain *d, struct vmact_err *err);
void hk_domain_free(struct hk_domain *d);

/* Validates the domain's vmact metadata as vmactd will (hp_meta_parse):
 * 0 when valid or absent, else -EINVAL naming the element. */
int hk_domain_check(const struct hk_domain *d, struct vmact_err *err);

/* Sends m to the unix datagram socket at path without blocking: when
 * vmactd's queue is full (a hung vmactd) it waits for room at most
 * wait_ms, once. 0 when the notice is queued; -ENOENT / -ECONNREFUSED
 * (no vmactd), -EAGAIN (no room in time), or another -errno. */
int hk_notify(const char *path, const struct vmact_hook_msg *m, unsigned wait_ms,
	      struct vmact_err *err);
