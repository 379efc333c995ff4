/* SPDX-License-Identifier: Apache-2.0 */
/* A node VM's serial ports through libvirt's console streams (prefix
 * cl_console_): they reach a remote host's guests the way `virsh console`
 * does. Health reads a line on the console; the claim is a line written to
 * a second port (doc/cluster.md, "The claim").
 *
 * The streams need libvirt's event loop running (cl_host_event_loop_start).
 * A console is opened with VIR_DOMAIN_CONSOLE_FORCE: a session left open
 * (an operator's virsh console, a crashed vmact-groupd) is taken over. */
#pragma once

#include <libvirt/libvirt.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Reads dev (an alias: "serial0") until a line starting with prefix
 * arrives, at most timeout_usec; the line (without its end) in line.
 * -ETIMEDOUT when none came; -EPROTO when a line starting with refuse
 * (NULL or "": none) came first, the rest of it (printable, cut) in err
 * as the guest's reason. Bytes of any value are read; a line is cut
 * at 1 KiB. If send is not NULL it is written to send_dev (another port)
 * once the console is open, so that an answer cannot be missed, and
 * send_dev stays open until the answer came. */
int cl_console_expect(virConnectPtr c, const char *uuid, const char *dev, const char *prefix,
		      const char *refuse, uint64_t timeout_usec, const char *send_dev,
		      const char *send, char *line, size_t line_len, struct vmact_err *err);

/* A request and its answer on a virtio-serial channel (a unix-socket
 * <channel> the domain has, reached with virDomainOpenChannel): writes
 * send, then reads the channel until a line starting with prefix, at most
 * timeout_usec (-ETIMEDOUT), or one starting with refuse (-EPROTO, as
 * above). Unlike a pty, the channel is there for the
 * guest the moment libvirt connects to it. */
int cl_console_channel(virConnectPtr c, const char *uuid, const char *name, const char *send,
		       const char *prefix, const char *refuse, uint64_t timeout_usec, char *line,
		       size_t line_len, struct vmact_err *err);

/* Writes text to dev and keeps it open linger_usec more: a pty's data
 * reaches the guest only while the port is open, and without an answer
 * nothing says when the guest has read it. */
int cl_console_send(virConnectPtr c, const char *uuid, const char *dev, const char *text,
		    uint64_t linger_usec, struct vmact_err *err);
