/* SPDX-License-Identifier: Apache-2.0 */
/* The Node.js peers under tests/peers/: independent implementations of
 * the other side of each protocol. Every listening peer announces itself
 * with one JSON line on stdout, {"event":"listening","port":N} (TCP on
 * 127.0.0.1) or {"event":"listening","path":P} (unix socket), and ends
 * when its stdin closes. Peers that need npm modules (ws) find them under
 * build/npm/node_modules, or VMACT_NODE_PATH. Scripts are looked up under
 * $VMACT_TOP/tests/peers (default: the current directory's). */
#pragma once

#include <stddef.h>

#include "tests/lib/proc.h"

struct th_peer {
	struct th_proc proc; /* proc.in_fd: its commands; proc.out_fd: its events */
	unsigned port;       /* where it listens: a TCP port, */
	char path[108];      /* or a unix socket */
};

/* Runs `node tests/peers/<script> args...` with o's streams. */
int th_peer_spawn(struct th_proc *p, const char *script, const char *const *args,
		  const struct th_spawn_opts *o);

/* Starts a listening peer and waits for its listening line. Its stdin is
 * a pipe (p->proc.in_fd); its stdout a pipe left non-blocking after that
 * line (p->proc.out_fd), or, with log_path, a file (with its stderr) the
 * test reads later. 0, or -errno with a message in msg. */
int th_peer_start(struct th_peer *p, const char *script, const char *const *args,
		  const char *log_path, char *msg, size_t msglen);

/* Ends the peer (stdin EOF, then SIGTERM, then SIGKILL); its status. */
int th_peer_stop(struct th_peer *p);
