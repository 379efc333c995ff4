/* SPDX-License-Identifier: Apache-2.0 */
/* Any string as an endpoint (ws://, http://, unix:) or a listen address
 * (base/endpoint.c), as the configuration file and the VM metadata give
 * them. Byte 0 picks the flags. A failure must say why; a success must
 * hold terminated fields within their sizes, respect the flags, and a
 * listen address must be ready for bind(). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/endpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct vmact_endpoint ep;
	struct vmact_listen l;
	unsigned flags;
	char *s;

	if (size < 1 || size > 4096)
		return 0;
	flags = (data[0] & 7u) | (data[0] & 8u ? VMACT_EP_NEED_PORT : 0) |
		(data[0] & 16u ? VMACT_EP_NO_PATH : 0);
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	memset(&ep, 0xa5, sizeof(ep));
	if (vmact_endpoint_parse(s, flags, &ep, &err) == 0) {
		if (!(ep.kind & flags & 7u) || !memchr(ep.host, 0, sizeof(ep.host)) ||
		    !memchr(ep.path, 0, sizeof(ep.path)))
			abort();
		if (ep.kind != VMACT_EP_UNIX) {
			if (!ep.host[0] || ((flags & VMACT_EP_NEED_PORT) && !ep.port) ||
			    ((flags & VMACT_EP_NO_PATH) && ep.path[0]) ||
			    (ep.path[0] && ep.path[0] != '/'))
				abort();
		} else if (!ep.path[0]) {
			abort();
		}
	} else if (err.code == 0 || !err.msg[0]) {
		abort();
	}
	memset(&err, 0, sizeof(err));
	memset(&l, 0xa5, sizeof(l));
	if (vmact_listen_parse(s, data[0] & 32u, &l, &err) == 0) {
		if (l.family != AF_INET && l.family != AF_INET6 && l.family != AF_UNIX)
			abort();
		if (l.family == AF_UNIX && (!(data[0] & 32u) || !l.path[0]))
			abort();
		if (l.addr_len == 0 || l.addr_len > sizeof(l.addr) ||
		    l.addr.ss_family != (sa_family_t)l.family ||
		    !memchr(l.host, 0, sizeof(l.host)) || !memchr(l.path, 0, sizeof(l.path)))
			abort();
	} else if (err.code == 0 || !err.msg[0]) {
		abort();
	}
	free(s);
	return 0;
}
