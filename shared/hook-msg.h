/* SPDX-License-Identifier: Apache-2.0 */
/* The notice vmact-hook (hook/) sends vmactd when libvirt runs it for a
 * domain's lifecycle step (doc/hook.md): one unix datagram of text,
 *
 *   vmact-hook/1 OPERATION SUB-OPERATION UUID NAME
 *
 * single spaces, no newline; OPERATION one of libvirt's qemu hook
 * operations vmact listens to, SUB-OPERATION libvirt's ("begin", "end" or
 * "-"), UUID the domain's, NAME its name (printable, no control bytes, may
 * contain spaces: it is the rest of the datagram). Both sides use this
 * codec; the decoder is strict because any local root process could write
 * to the socket, and a daemon must give a clear error for bytes it did not
 * expect. */
#pragma once

#include <stddef.h>

#include "base/error.h"

#define VMACT_HOOK_SOCKET "/run/vmact/hook.sock"
/* Where libvirt runs the hook from (make install, the package). */
#define VMACT_HOOK_PATH     "/etc/libvirt/hooks/qemu.d/vmact"
#define VMACT_HOOK_MAGIC    "vmact-hook/1"
#define VMACT_HOOK_UUID_LEN 36
#define VMACT_HOOK_NAME_MAX 255
/* Magic, two words of at most 9 bytes, the uuid, the name, 4 spaces. */
#define VMACT_HOOK_MSG_MAX 320

enum vmact_hook_op {
	VMACT_HOOK_PREPARE,
	VMACT_HOOK_STARTED,
	VMACT_HOOK_STOPPED,
	VMACT_HOOK_RELEASE,
	VMACT_HOOK_MIGRATE,
	VMACT_HOOK_RESTORE,
	VMACT_HOOK_RECONNECT,
	VMACT_HOOK_OP_COUNT,
};

enum vmact_hook_subop { VMACT_HOOK_BEGIN, VMACT_HOOK_END, VMACT_HOOK_NONE };

struct vmact_hook_msg {
	enum vmact_hook_op op;
	enum vmact_hook_subop subop;
	char uuid[VMACT_HOOK_UUID_LEN + 1];
	char name[VMACT_HOOK_NAME_MAX + 1];
};

/* libvirt's words for them ("prepare", "begin", "-"). */
const char *vmact_hook_op_name(enum vmact_hook_op op);
const char *vmact_hook_subop_name(enum vmact_hook_subop s);
/* -ENOENT for an operation or sub-operation vmact does not listen to. */
int vmact_hook_op_parse(const char *s, enum vmact_hook_op *op);
int vmact_hook_subop_parse(const char *s, enum vmact_hook_subop *s_out);

/* Checks a uuid in libvirt's text form (8-4-4-4-12 hex digits). */
int vmact_hook_uuid_check(const char *s, struct vmact_err *err);

/* Writes the datagram (not NUL-terminated) into buf; its length or
 * -EINVAL / -ENAMETOOLONG when a field cannot be sent. */
int vmact_hook_msg_encode(const struct vmact_hook_msg *m, char *buf, size_t cap,
			  struct vmact_err *err);
/* Parses exactly len bytes; -EINVAL with the reason otherwise. */
int vmact_hook_msg_decode(const char *buf, size_t len, struct vmact_hook_msg *m,
			  struct vmact_err *err);
