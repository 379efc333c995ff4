/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/hook-msg.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"

static const char *const ops[] = {
	[VMACT_HOOK_PREPARE] = "prepare",     [VMACT_HOOK_STARTED] = "started",
	[VMACT_HOOK_STOPPED] = "stopped",     [VMACT_HOOK_RELEASE] = "release",
	[VMACT_HOOK_MIGRATE] = "migrate",     [VMACT_HOOK_RESTORE] = "restore",
	[VMACT_HOOK_RECONNECT] = "reconnect",
};
static const char *const subops[] = {
	[VMACT_HOOK_BEGIN] = "begin",
	[VMACT_HOOK_END] = "end",
	[VMACT_HOOK_NONE] = "-",
};

const char *vmact_hook_op_name(enum vmact_hook_op op)
{
	return (unsigned)op < ARRAY_SIZE(ops) ? ops[op] : "?";
}

const char *vmact_hook_subop_name(enum vmact_hook_subop s)
{
	return (unsigned)s < ARRAY_SIZE(subops) ? subops[s] : "?";
}

int vmact_hook_op_parse(const char *s, enum vmact_hook_op *op)
{
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		if (strcmp(s, ops[i]) == 0) {
			*op = (enum vmact_hook_op)i;
			return 0;
		}
	return -ENOENT;
}

int vmact_hook_subop_parse(const char *s, enum vmact_hook_subop *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(subops); i++)
		if (strcmp(s, subops[i]) == 0) {
			*out = (enum vmact_hook_subop)i;
			return 0;
		}
	return -ENOENT;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int vmact_hook_uuid_check(const char *s, struct vmact_err *err)
{
	size_t n = strnlen(s, VMACT_HOOK_UUID_LEN + 1);

	if (n != VMACT_HOOK_UUID_LEN)
		return vmact_err_set(err, EINVAL, "uuid: %zu%s characters, expected 36", n,
				     n > VMACT_HOOK_UUID_LEN ? " or more" : "");
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !is_hex(s[i]))
			return vmact_err_set(err, EINVAL, "uuid: unexpected character at %zu", i);
	}
	return 0;
}

/* Printable bytes only (UTF-8 sequences pass): a name goes into vmactd's
 * log. */
static int name_check(const char *s, size_t n, struct vmact_err *err)
{
	if (n == 0)
		return vmact_err_set(err, EINVAL, "name: empty");
	if (n > VMACT_HOOK_NAME_MAX)
		return vmact_err_set(err, ENAMETOOLONG, "name: longer than %d bytes",
				     VMACT_HOOK_NAME_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return vmact_err_set(err, EINVAL, "name: control byte 0x%02x at %zu",
					     (unsigned char)s[i], i);
	return 0;
}

int vmact_hook_msg_encode(const struct vmact_hook_msg *m, char *buf, size_t cap,
			  struct vmact_err *err)
{
	int n, r;

	if ((unsigned)m->op >= VMACT_HOOK_OP_COUNT || (unsigned)m->subop > VMACT_HOOK_NONE)
		return vmact_err_set(err, EINVAL, "operation out of range");
	if ((r = vmact_hook_uuid_check(m->uuid, err)) < 0 ||
	    (r = name_check(m->name, strnlen(m->name, sizeof(m->name)), err)) < 0)
		return r;
	n = snprintf(buf, cap, VMACT_HOOK_MAGIC " %s %s %s %s", ops[m->op], subops[m->subop],
		     m->uuid, m->name);
	if (n < 0 || (size_t)n >= cap)
		return vmact_err_set(err, ENAMETOOLONG, "notice longer than %zu bytes", cap);
	return n;
}

/* The next space-terminated word of [*p, end) into w (NUL-terminated). */
static int word(const char **p, const char *end, char *w, size_t cap, const char *what,
		struct vmact_err *err)
{
	const char *sp = memchr(*p, ' ', (size_t)(end - *p));
	size_t n;

	if (!sp)
		return vmact_err_set(err, EINVAL, "%s: missing (the notice ends early)", what);
	n = (size_t)(sp - *p);
	if (n == 0)
		return vmact_err_set(err, EINVAL, "%s: empty (two spaces)", what);
	if (n >= cap)
		return vmact_err_set(err, EINVAL, "%s: too long", what);
	memcpy(w, *p, n);
	w[n] = 0;
	*p = sp + 1;
	return 0;
}

int vmact_hook_msg_decode(const char *buf, size_t len, struct vmact_hook_msg *m,
			  struct vmact_err *err)
{
	const char *p = buf, *end = buf + len;
	char w[VMACT_HOOK_UUID_LEN + 1];
	int r;

	memset(m, 0, sizeof(*m));
	if (len > VMACT_HOOK_MSG_MAX)
		return vmact_err_set(err, EMSGSIZE, "notice of %zu bytes, at most %d", len,
				     VMACT_HOOK_MSG_MAX);
	if (memchr(buf, 0, len))
		return vmact_err_set(err, EINVAL, "NUL byte in the notice");
	if ((r = word(&p, end, w, sizeof(w), "magic", err)) < 0)
		return r;
	if (strcmp(w, VMACT_HOOK_MAGIC) != 0)
		return vmact_err_set(err, EINVAL, "magic: '%.16s' is not " VMACT_HOOK_MAGIC, w);
	if ((r = word(&p, end, w, sizeof(w), "operation", err)) < 0)
		return r;
	if (vmact_hook_op_parse(w, &m->op) < 0)
		return vmact_err_set(err, EINVAL, "operation: unknown '%s'", w);
	if ((r = word(&p, end, w, sizeof(w), "sub-operation", err)) < 0)
		return r;
	if (vmact_hook_subop_parse(w, &m->subop) < 0)
		return vmact_err_set(err, EINVAL, "sub-operation: unknown '%s'", w);
	if ((r = word(&p, end, m->uuid, sizeof(m->uuid), "uuid", err)) < 0 ||
	    (r = vmact_hook_uuid_check(m->uuid, err)) < 0)
		return r;
	if ((r = name_check(p, (size_t)(end - p), err)) < 0)
		return r;
	memcpy(m->name, p, (size_t)(end - p));
	m->name[end - p] = 0;
	return 0;
}
