/* SPDX-License-Identifier: Apache-2.0 */
/* Raw loopback sockets for tests whose peer misbehaves on purpose (slow,
 * garbage, silent, absent). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

/* Non-blocking TCP connection to 127.0.0.1:port (connect completes on
 * loopback at once or shortly; writes before then fail EAGAIN); the fd or
 * -errno. */
int th_connect(unsigned port);

/* Pumps ev while reading fd into buf (see th_read_some) until EOF (the
 * server closed) or TH_SAFETY_USEC; true on EOF. */
bool th_read_until_eof(sd_event *ev, int fd, char *buf, size_t cap, size_t *len);

/* A listening socket that accepts nothing: connections complete in the
 * kernel backlog and then hear nothing ("peer never answers"). The fd or
 * -errno; *port its port. */
int th_silent_listener(unsigned *port);

/* A port nothing listens on (bound, then closed). */
unsigned th_dead_port(void);
