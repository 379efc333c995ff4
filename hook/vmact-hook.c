/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-hook: libvirt runs it as /etc/libvirt/hooks/qemu.d/vmact with
 *   DOMAIN-NAME OPERATION SUB-OPERATION EXTRA
 * and the domain XML on stdin (doc/hook.md). It tells vmactd about the
 * lifecycle steps vmact cares for and, at prepare, refuses the start of a
 * domain whose vmact metadata is invalid and says refuse-invalid="true".
 * Whatever else happens it exits 0 at once: a hook that fails or hangs
 * stops libvirtd's domain start.
 *
 * stdout stays empty: for migrate and restore libvirt takes a hook's
 * output as a replacement domain XML and uses the original when there is
 * none, which is what vmact wants. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <libxml/parser.h>

#include "base/macro.h"
#include "hook/hook.h"
#include "shared/hook-msg.h"

/* A domain XML is a few KiB; anything above this is not one, but the rest
 * is still read, so that libvirtd never writes into a closed pipe. */
#define XML_MAX (16u << 20)
/* How long a hung vmactd may hold a start up: once, when its queue is
 * full (hook.h). */
#define WAIT_MS 100

static void usage(FILE *f)
{
	fprintf(f, "Usage: vmact-hook DOMAIN OPERATION SUB-OPERATION EXTRA < DOMAIN-XML\n"
		   "libvirt's qemu hook for vmact; install it as /etc/libvirt/hooks/qemu.d/vmact.\n"
		   "It never writes to stdout and exits 0 unless it refuses a start.\n");
}

/* libvirtd keeps a hook's stderr only when the hook fails (it becomes the
 * start's error message): a warning of a hook that exits 0 would be lost.
 * Each line goes to syslog too (the journal on a systemd host, with its
 * priority, as "vmact-hook"), and stays on stderr for the refusal's error
 * message and for an operator running the hook by hand. */
static void __attribute__((format(printf, 2, 3))) report(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsyslog(priority, fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	fputs("vmact-hook: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* All of stdin, at most XML_MAX bytes kept; *len 0 when nothing came. */
static char *read_stdin(size_t *len)
{
	size_t cap = 64 << 10, n = 0;
	char *buf = malloc(cap + 1), sink[4096];

	*len = 0;
	if (!buf)
		return NULL;
	for (;;) {
		ssize_t r;

		if (n == cap && cap < XML_MAX) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = n < cap ? read(STDIN_FILENO, buf + n, cap - n)
			    : read(STDIN_FILENO, sink, sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (n < cap)
			n += (size_t)r;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	struct vmact_err err = { 0 };
	struct hk_domain d = { 0 };
	struct vmact_hook_msg m = { 0 };
	_cleanup_free_ char *xml = NULL;
	size_t len = 0;
	int rc = 0;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		puts("vmact-hook " VMACT_VERSION);
		return 0;
	}
	if (argc != 5) {
		usage(stderr);
		return 2;
	}
	if (isatty(STDIN_FILENO)) {
		fprintf(stderr, "vmact-hook: the domain XML is read from stdin\n");
		return 2;
	}
	openlog("vmact-hook", LOG_PID, LOG_DAEMON);
	xml = read_stdin(&len);
	/* Operations vmact does not listen to (start, attach...): nothing. */
	if (vmact_hook_op_parse(argv[2], &m.op) < 0 ||
	    vmact_hook_subop_parse(argv[3], &m.subop) < 0)
		return 0;
	if (!xml || hk_domain_parse(xml, len, &d, &err) < 0) {
		report(LOG_WARNING, "%s: %s; vmactd not told", argv[1],
		       xml ? err.msg : "out of memory");
		goto out;
	}
	/* Only domains with vmact metadata concern vmactd. */
	if (!d.meta)
		goto out;
	if (m.op == VMACT_HOOK_PREPARE && hk_domain_check(&d, &err) < 0) {
		if (d.refuse_invalid) {
			report(LOG_ERR, "%s: %s; start refused (refuse-invalid=\"true\")", d.name,
			       err.msg);
			rc = 1;
			goto out;
		}
		report(LOG_WARNING, "%s: %s; vmactd will not manage it", d.name, err.msg);
		vmact_err_reset(&err);
	}
	snprintf(m.uuid, sizeof(m.uuid), "%s", d.uuid);
	snprintf(m.name, sizeof(m.name), "%s", d.name);
	if (hk_notify(VMACT_HOOK_SOCKET, &m, WAIT_MS, &err) < 0 && err.code != ENOENT &&
	    err.code != ECONNREFUSED)
		/* vmactd not running is normal; other failures are worth a
		 * line in libvirtd's log. */
		report(LOG_WARNING, "%s: %s", d.name, err.msg);
out:
	hk_domain_free(&d);
	xmlCleanupParser();
	closelog();
	return rc;
}
