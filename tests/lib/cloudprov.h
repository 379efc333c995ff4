/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-cloudprovider in tests: the build's program started as an
 * unprivileged user (it refuses root), its port read from its first log
 * line, and tests/peers/ca-client.js (@grpc/grpc-js) run against it. */
#pragma once

#include <jansson.h>

#include <stddef.h>

#include "tests/lib/proc.h"

struct th_cp {
	struct th_proc proc;
	char log[128]; /* its stderr */
	unsigned port; /* where it serves (TCP on 127.0.0.1) */
};

/* Starts vmact-cloudprovider with args (NULL-terminated; --listen
 * 127.0.0.1:0 unless args give --listen) as user `as` (NULL: nobody when
 * the test runs as root, else the test's own user), its stderr in a file
 * under dir, and waits for it to serve. 0, or -errno with msg. */
int th_cp_start(struct th_cp *cp, const char *dir, const char *as, const char *const *args,
		char *msg, size_t msglen);
/* The same under a launcher (wrap: its argv, NULL-terminated, run after
 * the switch of user and before the program: a sandbox). */
int th_cp_start_wrapped(struct th_cp *cp, const char *dir, const char *as, const char *const *wrap,
			const char *const *args, char *msg, size_t msglen);
/* SIGTERM, then its exit status (0: a clean shutdown). */
int th_cp_stop(struct th_cp *cp);
/* Prints the last lines of its log (for a failed test). */
void th_cp_print_log(const struct th_cp *cp);

/* Runs ca-client.js SCENARIO against 127.0.0.1:port with extra args,
 * its output in log_path (printed when it fails); its exit status. */
int th_cp_client(unsigned port, const char *scenario, const char *const *args,
		 const char *log_path);
/* The last {"event":EVENT,...} line of a client's log, parsed (a new
 * reference); NULL when there is none. */
json_t *th_cp_event(const char *log_path, const char *event);
/* The same, started and left running (the "watch" scenario): stdin is a
 * pipe; the caller ends it with th_peer_stop-like th_proc_stop. */
int th_cp_client_start(struct th_proc *p, unsigned port, const char *scenario,
		       const char *const *args, const char *log_path);

/* In dir, openssl-made: ca.crt, server.key/.crt (for 127.0.0.1 and
 * localhost, signed by ca), client.key/.crt (signed by ca) and
 * rogue.key/.crt (signed by another CA); readable by all (tests only).
 * 0 or -1. */
int th_cp_make_certs(const char *dir);

/* A program of this build: $VMACT_CP_BUILD/prog when set (benches, which
 * do not sit where th_build_prog looks), else th_build_prog's. */
int th_cp_prog(const char *prog, char *out, size_t len);

/* The uid/gid tests run vmact-cloudprovider under: `as`, or nobody. */
int th_cp_user(const char *as, unsigned *uid, unsigned *gid);
