/* SPDX-License-Identifier: Apache-2.0 */
/* A relay between a unix socket of the test's and a daemon's (prefix
 * th_relay_): a client pointed at it talks to the daemon as before, until
 * the test freezes it; from then on nothing more passes either way, and
 * the daemon's side stays open, whatever the client does, until the test
 * cuts it. The migration tests put it between vmact-groupd and libvirtd
 * so that a move's last messages never arrive, and the daemons see the
 * connection go only when the test says (what a daemon killed or a
 * network lost at that moment leaves). One thread accepts, one per
 * connection relays. */
#pragma once

#include <stdbool.h>

struct th_relay;

/* Listens on path (mode 0666) and relays each connection to target.
 * 0 or -errno. */
int th_relay_start(const char *path, const char *target, struct th_relay **out);
/* From now on (frozen) nothing passes; unfrozen, new connections relay
 * again (those frozen stay so until cut). */
void th_relay_freeze(struct th_relay *r, bool frozen);
/* Closes the connections frozen so far, both sides. */
void th_relay_cut(struct th_relay *r);
/* Closes every connection and the socket; NULL is fine. */
void th_relay_stop(struct th_relay *r);
