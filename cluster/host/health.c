/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/host/health.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>

#include "base/endpoint.h"
#include "base/macro.h"
#include "cluster/host/console.h"

int cl_health_tcp(const char *addr, uint64_t timeout_usec, struct vmact_err *err)
{
	struct vmact_listen l;
	struct pollfd p;
	_cleanup_close_ int fd = -1;
	int soerr = 0, r;
	socklen_t len = sizeof(soerr);

	if ((r = vmact_listen_parse(addr, false, &l, err)) < 0)
		return r;
	fd = socket(l.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return vmact_err_set(err, errno, "socket: %m");
	if (connect(fd, (struct sockaddr *)&l.addr, l.addr_len) < 0 && errno != EINPROGRESS)
		return vmact_err_set(err, errno, "connect %s: %m", addr);
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	r = poll(&p, 1, (int)(timeout_usec / 1000));
	if (r == 0)
		return vmact_err_set(err, ETIMEDOUT, "connect %s: no answer within %.1f s", addr,
				     timeout_usec / 1e6);
	if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return vmact_err_set(err, errno, "connect %s: %m", addr);
	if (soerr)
		return vmact_err_set(err, soerr, "connect %s: %s", addr, strerror(soerr));
	return 0;
}

static int agent_ping(virConnectPtr c, const char *uuid, uint64_t timeout_usec,
		      struct vmact_err *err)
{
	virDomainPtr d = virDomainLookupByUUIDString(c, uuid);
	virErrorPtr e;
	char *out;
	int secs = (int)((timeout_usec + 999999) / 1000000);

	if (!d)
		return vmact_err_set(err, ENOENT, "no domain %s", uuid);
	out = virDomainQemuAgentCommand(d, "{\"execute\":\"guest-ping\"}", secs, 0);
	e = out ? NULL : virGetLastError();
	virDomainFree(d);
	if (!out)
		return vmact_err_set(err, ETIMEDOUT, "guest agent of %s: %s", uuid,
				     e && e->message ? e->message : "no answer");
	free(out);
	return 0;
}

int cl_health_probe(virConnectPtr c, const char *uuid, const struct cl_health *h,
		    struct vmact_err *err)
{
	char line[256];

	switch (h->kind) {
	case CL_HEALTH_SERIAL:
		return cl_console_expect(c, uuid, "serial0", h->pattern, NULL,
					 h->probe_timeout_usec, NULL, NULL, line, sizeof(line),
					 err);
	case CL_HEALTH_AGENT:
		return agent_ping(c, uuid, h->probe_timeout_usec, err);
	case CL_HEALTH_TCP:
		return cl_health_tcp(h->address, h->probe_timeout_usec, err);
	}
	return vmact_err_set(err, EINVAL, "unknown health kind");
}
