/* SPDX-License-Identifier: Apache-2.0 */
/* The guest worker's message format (privsep.h, doc/privsep.md). */
#include "guestd/privsep.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/macro.h"
#include "guestd/approver.h"

/* Which fields a type carries. */
enum {
	F_SEQ = 1 << 0,
	F_CODE = 1 << 1,
	F_RES = 1 << 2, /* milli_cpu, mem_bytes */
	F_TEXT = 1 << 3,
	F_SPARE = 1 << 4, /* spare[]: checked per type below */
};

struct type_info {
	const char *name;
	bool from_worker;
	unsigned fields;
	uint16_t flags; /* allowed */
};

static const struct type_info *info(unsigned type)
{
	static const struct type_info daemon[] = {
		[ACT_PRIVSEP_PING] = { "ping", false, F_SEQ, 0 },
		[ACT_PRIVSEP_REQUEST] = { "request", false, F_SEQ | F_RES, ACT_PRIVSEP_F_UP },
		[ACT_PRIVSEP_DIAL_REPLY] = { "dial-reply", false, F_CODE | F_TEXT, 0 },
		[ACT_PRIVSEP_SCRAPE] = { "scrape", false, F_SEQ, ACT_PRIVSEP_F_LFC },
		[ACT_PRIVSEP_LISTEN_REPLY] = { "listen-reply", false, F_CODE | F_TEXT, 0 },
		[ACT_PRIVSEP_STOP] = { "stop", false, 0, 0 },
	};
	static const struct type_info worker[] = {
		[ACT_PRIVSEP_PONG - ACT_PRIVSEP_PONG] = { "pong", true, F_SEQ, 0 },
		[ACT_PRIVSEP_DONE - ACT_PRIVSEP_PONG] = { "done", true, F_SEQ | F_CODE, 0 },
		[ACT_PRIVSEP_CONNECTED - ACT_PRIVSEP_PONG] = { "connected", true, 0, 0 },
		[ACT_PRIVSEP_LOST - ACT_PRIVSEP_PONG] = { "lost", true, 0, ACT_PRIVSEP_F_DROPPED },
		[ACT_PRIVSEP_CHANGED -
			ACT_PRIVSEP_PONG] = { "changed", true, 0,
					      ACT_PRIVSEP_F_MAY_RESIZE | ACT_PRIVSEP_F_APPROVES },
		[ACT_PRIVSEP_UPSCALE -
			ACT_PRIVSEP_PONG] = { "upscale", true, 0,
					      ACT_PRIVSEP_F_CPU | ACT_PRIVSEP_F_MEMORY },
		[ACT_PRIVSEP_DIAL - ACT_PRIVSEP_PONG] = { "dial", true, 0, ACT_PRIVSEP_F_LFC },
		[ACT_PRIVSEP_METRICS -
			ACT_PRIVSEP_PONG] = { "metrics", true,
					      F_SEQ | F_CODE | F_RES | F_TEXT | F_SPARE,
					      ACT_PRIVSEP_F_LFC },
		[ACT_PRIVSEP_WINDOWS - ACT_PRIVSEP_PONG] = { "windows", true, F_SEQ | F_SPARE, 0 },
		[ACT_PRIVSEP_LISTEN - ACT_PRIVSEP_PONG] = { "listen", true, 0, 0 },
	};

	if (type < sizeof(daemon) / sizeof(daemon[0]) && daemon[type].name)
		return &daemon[type];
	if (type >= ACT_PRIVSEP_PONG &&
	    type - ACT_PRIVSEP_PONG < sizeof(worker) / sizeof(worker[0]) &&
	    worker[type - ACT_PRIVSEP_PONG].name)
		return &worker[type - ACT_PRIVSEP_PONG];
	return NULL;
}

const char *act_privsep_type_name(unsigned type)
{
	const struct type_info *t = info(type);

	return t ? t->name : NULL;
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* A METRICS record: which fields it carries depends on its outcome and
 * its kind (privsep.h). */
static int decode_metrics(const struct act_privsep_msg *m, struct act_privsep_msg *out,
			  struct vmact_err *err)
{
	if (m->code > 0 || m->code < -4095)
		return vmact_err_set(err, EBADMSG, "metrics: code %d out of range", m->code);
	if (m->milli_cpu)
		return vmact_err_set(err, EBADMSG, "metrics: milli_cpu set");
	if (m->code < 0) {
		if (!m->text[0])
			return vmact_err_set(err, EBADMSG, "metrics: an error without a text");
		if (m->spare[0] > 999 || (m->spare[0] && m->spare[0] < 100))
			return vmact_err_set(err, EBADMSG, "metrics: HTTP status %llu out of range",
					     (unsigned long long)m->spare[0]);
		if (m->mem_bytes || m->spare[1] || m->spare[2] || m->spare[3])
			return vmact_err_set(err, EBADMSG, "metrics: figures with an error");
	} else if (m->text[0]) {
		return vmact_err_set(err, EBADMSG, "metrics: text set without an error");
	} else if (m->flags & ACT_PRIVSEP_F_LFC) {
		if (!m->spare[0] || m->spare[0] > ACT_PRIVSEP_MAX_WINDOWS)
			return vmact_err_set(err, EBADMSG,
					     "metrics: %llu LFC windows, 1 to %u "
					     "accepted",
					     (unsigned long long)m->spare[0],
					     ACT_PRIVSEP_MAX_WINDOWS);
		if (m->mem_bytes || m->spare[1] || m->spare[2] || m->spare[3])
			return vmact_err_set(err, EBADMSG,
					     "metrics: system figures in an LFC answer");
	} else {
		if (m->spare[0] > ACT_PRIVSEP_MAX_LOAD_MILLI ||
		    m->spare[1] > ACT_PRIVSEP_MAX_LOAD_MILLI)
			return vmact_err_set(
				err, EBADMSG, "metrics: load %llu/1000 out of range",
				(unsigned long long)(m->spare[0] > ACT_PRIVSEP_MAX_LOAD_MILLI
							     ? m->spare[0]
							     : m->spare[1]));
		if (m->spare[2] > ACT_PRIVSEP_MAX_MEM_BYTES)
			return vmact_err_set(err, EBADMSG,
					     "metrics: cached memory %llu out of range",
					     (unsigned long long)m->spare[2]);
		if (m->spare[3])
			return vmact_err_set(err, EBADMSG, "metrics: reserved field set");
	}
	*out = *m;
	return 0;
}

static int decode(const void *buf, size_t len, bool from_worker, struct act_privsep_msg *out,
		  struct vmact_err *err)
{
	const struct type_info *t;
	struct act_privsep_msg m;
	size_t tl;

	if (len != sizeof(m))
		return vmact_err_set(err, EMSGSIZE, "message of %zu bytes, not %zu", len,
				     sizeof(m));
	memcpy(&m, buf, sizeof(m));
	t = info(m.type);
	if (!t)
		return vmact_err_set(err, EBADMSG, "unknown message type %u", m.type);
	if (t->from_worker != from_worker)
		return vmact_err_set(err, EBADMSG, "%s message in the wrong direction", t->name);
	if (m.flags & ~t->flags)
		return vmact_err_set(err, EBADMSG, "%s: unknown flags 0x%x", t->name,
				     m.flags & ~t->flags);
	if (!(t->fields & F_SEQ) && m.seq)
		return vmact_err_set(err, EBADMSG, "%s: seq set", t->name);
	if (!(t->fields & F_CODE) && m.code)
		return vmact_err_set(err, EBADMSG, "%s: code set", t->name);
	if (m.reserved || (!(t->fields & F_SPARE) && !all_zero(m.spare, sizeof(m.spare))))
		return vmact_err_set(err, EBADMSG, "%s: reserved field set", t->name);
	if (!(t->fields & F_RES) && (m.milli_cpu || m.mem_bytes))
		return vmact_err_set(err, EBADMSG, "%s: resources set", t->name);
	if (t->fields & F_RES) {
		if (m.milli_cpu > ACT_PRIVSEP_MAX_MILLI_CPU)
			return vmact_err_set(err, EBADMSG, "%s: milli_cpu %llu out of range",
					     t->name, (unsigned long long)m.milli_cpu);
		if (m.mem_bytes > ACT_PRIVSEP_MAX_MEM_BYTES)
			return vmact_err_set(err, EBADMSG, "%s: mem_bytes %llu out of range",
					     t->name, (unsigned long long)m.mem_bytes);
	}
	tl = strnlen(m.text, sizeof(m.text));
	if (tl == sizeof(m.text))
		return vmact_err_set(err, EBADMSG, "%s: text not terminated", t->name);
	if (!(t->fields & F_TEXT) && !all_zero(m.text, sizeof(m.text)))
		return vmact_err_set(err, EBADMSG, "%s: text set", t->name);
	if (!all_zero(m.text + tl, sizeof(m.text) - tl))
		return vmact_err_set(err, EBADMSG, "%s: bytes after the text", t->name);
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)m.text[i] < 0x20 || (unsigned char)m.text[i] == 0x7f)
			return vmact_err_set(err, EBADMSG, "%s: control character in the text",
					     t->name);
	switch (m.type) {
	case ACT_PRIVSEP_DONE:
		if (m.code != ACT_APPROVAL_OK && m.code != ACT_APPROVAL_DENIED &&
		    m.code != ACT_APPROVAL_FAILED)
			return vmact_err_set(err, EBADMSG, "done: outcome %d out of range", m.code);
		break;
	case ACT_PRIVSEP_UPSCALE:
		if (!m.flags)
			return vmact_err_set(err, EBADMSG, "upscale: neither CPU nor memory");
		break;
	case ACT_PRIVSEP_DIAL_REPLY:
	case ACT_PRIVSEP_LISTEN_REPLY:
		if (m.code > 0 || m.code < -4095)
			return vmact_err_set(err, EBADMSG, "%s: code %d out of range", t->name,
					     m.code);
		break;
	case ACT_PRIVSEP_METRICS:
		return decode_metrics(&m, out, err);
	case ACT_PRIVSEP_WINDOWS:
		for (size_t i = 0; i < ARRAY_SIZE(m.spare); i++)
			if (m.spare[i] > ACT_PRIVSEP_MAX_PAGE_MILLI)
				return vmact_err_set(err, EBADMSG,
						     "windows: window of %llu "
						     "thousandths of a page out of range",
						     (unsigned long long)m.spare[i]);
		break;
	default:
		break;
	}
	*out = m;
	return 0;
}

int act_privsep_decode_from_worker(const void *buf, size_t len, struct act_privsep_msg *out,
				   struct vmact_err *err)
{
	return decode(buf, len, true, out, err);
}

int act_privsep_decode_from_daemon(const void *buf, size_t len, struct act_privsep_msg *out,
				   struct vmact_err *err)
{
	return decode(buf, len, false, out, err);
}

void act_privsep_set_text(struct act_privsep_msg *m, const char *s)
{
	size_t n = 0;

	memset(m->text, 0, sizeof(m->text));
	/* Printable only, as the decoder wants. */
	for (; s && s[n] && n < sizeof(m->text) - 1; n++)
		m->text[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
}
