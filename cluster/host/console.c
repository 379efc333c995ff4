/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/host/console.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <libvirt/virterror.h>

#include "base/macro.h"
#include "base/time.h"

DEFINE_PTR_CLEANUP(con_dom_freep, struct _virDomain, virDomainFree)

#define LINE_MAX_BYTES 1024
#define POLL_USEC      10000

static int fail(struct vmact_err *err, const char *what, const char *uuid)
{
	virErrorPtr e = virGetLastError();

	return vmact_err_set(err, EIO, "%s of %s: %s", what, uuid,
			     e && e->message ? e->message : "unknown libvirt error");
}

static void stream_close(virStreamPtr s, bool ok)
{
	if (!s)
		return;
	if (ok)
		virStreamFinish(s);
	else
		virStreamAbort(s);
	virStreamFree(s);
}

static virStreamPtr open_dev(virConnectPtr c, virDomainPtr d, const char *dev, bool nonblock,
			     const char *uuid, struct vmact_err *err)
{
	virStreamPtr s = virStreamNew(c, nonblock ? VIR_STREAM_NONBLOCK : 0);

	if (!s) {
		fail(err, "stream", uuid);
		return NULL;
	}
	if (virDomainOpenConsole(d, dev, s, VIR_DOMAIN_CONSOLE_FORCE) < 0) {
		fail(err, dev, uuid);
		virStreamFree(s);
		return NULL;
	}
	return s;
}

static void sleep_usec(uint64_t usec)
{
	struct timespec ts = { .tv_sec = (time_t)(usec / 1000000),
			       .tv_nsec = (long)(usec % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static int write_all(virStreamPtr s, const char *text, const char *uuid, struct vmact_err *err)
{
	size_t len = strlen(text), done = 0;

	while (done < len) {
		int n = virStreamSend(s, text + done, len - done);

		if (n == -2) {
			/* A non-blocking stream with its buffer full. */
			sleep_usec(POLL_USEC);
			continue;
		}
		if (n < 0)
			return fail(err, "write", uuid);
		done += (size_t)n;
	}
	return 0;
}

/* Reads s until a line starting with prefix arrives (0, the line in
 * line) or end passes (-ETIMEDOUT). Bytes of any value are read; a line is
 * cut at LINE_MAX_BYTES. */
static int read_line(virStreamPtr s, uint64_t end, const char *prefix, const char *refuse,
		     const char *uuid, char *line, size_t line_len, struct vmact_err *err)
{
	char cur[LINE_MAX_BYTES + 1];
	size_t cur_len = 0, plen = strlen(prefix), rlen = refuse ? strlen(refuse) : 0;

	while (vmact_now_usec() < end) {
		char buf[512];
		int n = virStreamRecv(s, buf, sizeof(buf));

		if (n == -2) {
			sleep_usec(POLL_USEC);
			continue;
		}
		if (n < 0)
			return fail(err, "read", uuid);
		if (n == 0)
			return vmact_err_set(err, EPIPE,
					     "the port of %s closed (the guest stopped)", uuid);
		for (int i = 0; i < n; i++) {
			if (buf[i] == '\n' || buf[i] == '\r' || cur_len == LINE_MAX_BYTES) {
				cur[cur_len] = 0;
				/* A NUL from the guest ends the text strncmp sees:
				 * that line does not match, nothing worse. */
				if (cur_len >= plen && strncmp(cur, prefix, plen) == 0) {
					snprintf(line, line_len, "%s", cur);
					return 0;
				}
				/* The guest's own words, cut and made printable:
				 * they go into a log and an API answer. */
				if (rlen && cur_len >= rlen && strncmp(cur, refuse, rlen) == 0) {
					const char *why = cur + rlen;

					while (*why == ':' || *why == ' ')
						why++;
					for (char *p = (char *)why; *p; p++)
						if ((unsigned char)*p < 0x20 ||
						    (unsigned char)*p > 0x7e)
							*p = '?';
					return vmact_err_set(err, EPROTO,
							     "the guest refused it: %.300s", why);
				}
				cur_len = 0;
				if (buf[i] != '\n' && buf[i] != '\r')
					cur[cur_len++] = buf[i];
				continue;
			}
			cur[cur_len++] = buf[i];
		}
	}
	return -ETIMEDOUT;
}

int cl_console_expect(virConnectPtr c, const char *uuid, const char *dev, const char *prefix,
		      const char *refuse, uint64_t timeout_usec, const char *send_dev,
		      const char *send, char *line, size_t line_len, struct vmact_err *err)
{
	_cleanup_(con_dom_freep) virDomainPtr d = virDomainLookupByUUIDString(c, uuid);
	uint64_t end = vmact_now_usec() + timeout_usec;
	virStreamPtr s, out = NULL;
	int r;

	if (!d)
		return fail(err, "lookup", uuid);
	s = open_dev(c, d, dev, true, uuid, err);
	if (!s)
		return -EIO;
	/* The port that carries the request stays open until the answer:
	 * a pty's data reaches the guest only while its other end is open
	 * (QEMU drops what is left when it closes). */
	if (send) {
		out = open_dev(c, d, send_dev, false, uuid, err);
		if (!out || write_all(out, send, uuid, err) < 0) {
			stream_close(out, false);
			stream_close(s, false);
			return -EIO;
		}
	}
	r = read_line(s, end, prefix, refuse, uuid, line, line_len, err);
	if (r == -ETIMEDOUT)
		vmact_err_set(err, ETIMEDOUT, "no line starting '%s' on %s of %s within %.1f s",
			      prefix, dev, uuid, timeout_usec / 1e6);
	stream_close(out, false);
	stream_close(s, false);
	return r;
}

int cl_console_send(virConnectPtr c, const char *uuid, const char *dev, const char *text,
		    uint64_t linger_usec, struct vmact_err *err)
{
	_cleanup_(con_dom_freep) virDomainPtr d = virDomainLookupByUUIDString(c, uuid);
	virStreamPtr s;

	if (!d)
		return fail(err, "lookup", uuid);
	s = open_dev(c, d, dev, false, uuid, err);
	if (!s)
		return -EIO;
	if (write_all(s, text, uuid, err) < 0) {
		stream_close(s, false);
		return -EIO;
	}
	/* Nothing says when the guest has read it: the port stays open a
	 * while (see cl_console_expect). */
	sleep_usec(linger_usec);
	stream_close(s, true);
	return 0;
}

int cl_console_channel(virConnectPtr c, const char *uuid, const char *name, const char *send,
		       const char *prefix, const char *refuse, uint64_t timeout_usec, char *line,
		       size_t line_len, struct vmact_err *err)
{
	_cleanup_(con_dom_freep) virDomainPtr d = virDomainLookupByUUIDString(c, uuid);
	uint64_t end = vmact_now_usec() + timeout_usec;
	virStreamPtr s;
	int r;

	if (!d)
		return fail(err, "lookup", uuid);
	s = virStreamNew(c, VIR_STREAM_NONBLOCK);
	if (!s)
		return fail(err, "stream", uuid);
	if (virDomainOpenChannel(d, name, s, VIR_DOMAIN_CHANNEL_FORCE) < 0) {
		virStreamFree(s);
		return fail(err, name, uuid);
	}
	r = write_all(s, send, uuid, err);
	if (r >= 0)
		r = read_line(s, end, prefix, refuse, uuid, line, line_len, err);
	if (r == -ETIMEDOUT)
		vmact_err_set(err, ETIMEDOUT,
			      "no line starting '%s' on channel %s of %s within %.1f s", prefix,
			      name, uuid, timeout_usec / 1e6);
	stream_close(s, false);
	return r;
}
