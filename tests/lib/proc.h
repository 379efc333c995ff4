/* SPDX-License-Identifier: Apache-2.0 */
/* Child processes of a test (vmactd, vmact-arbiter, the Node peers,
 * virsh, libvirtd): started with their standard streams where the test
 * wants them and no other descriptor of the test, and never outliving the
 * test (a daemon that detaches itself excepted): each gets PR_SET_PDEATHSIG, so a test
 * that crashes or is killed takes its children with it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a child's stdout or stderr goes. */
enum th_out {
	TH_OUT_INHERIT, /* the test's own */
	TH_OUT_NULL,    /* /dev/null */
	TH_OUT_PIPE,    /* a pipe the test reads (th_proc.out_fd; one pipe for both) */
	TH_OUT_FILE,    /* th_spawn_opts.out_path, truncated (one file for both) */
};

struct th_spawn_opts {
	bool stdin_pipe; /* stdin from th_proc.in_fd; otherwise inherited */
	enum th_out out, err;
	const char *out_path;   /* for TH_OUT_FILE */
	const char *const *env; /* "NAME=VALUE" set in the child; NULL-terminated */
};

/* All zero (as in a static or calloc'd fixture): never started, and the
 * functions below leave it alone. */
struct th_proc {
	bool spawned; /* th_spawn() succeeded and th_proc_wait/stop not yet run */
	pid_t pid;    /* 0: not running (never started, or reaped) */
	int in_fd;    /* writes the child's stdin (closing it gives it EOF), or -1 */
	int out_fd;   /* reads the child's stdout/stderr pipe, or -1 */
	int status;   /* after it was reaped: exit code, or 128 + signal */
};

/* Starts argv[0] (looked up in PATH) with argv; 0 or -errno. A child that
 * cannot exec exits 127 after saying why on its stderr. */
int th_spawn(struct th_proc *p, const char *const argv[], const struct th_spawn_opts *o);

/* True once the child has exited (reaps it and records its status). */
bool th_proc_exited(struct th_proc *p);

/* Waits until pred(arg) holds or limit_s passed; false at the limit, or
 * as soon as the daemon p (not started: pid 0, never counts) exits, which
 * it then says on stderr with the status. */
bool th_wait_daemon(struct th_proc *p, bool (*pred)(void *), void *arg, double limit_s);

/* Waits for the child to exit by itself; its status (exit code, or 128 +
 * signal). Closes the pipes. */
int th_proc_wait(struct th_proc *p);

/* Ends the child: closes its stdin, sends sig (0: none, rely on the EOF),
 * waits up to grace_usec, then SIGKILLs it. Its status; closes the pipes.
 * A child not running: its recorded status. */
int th_proc_stop(struct th_proc *p, int sig, uint64_t grace_usec);

/* What another process holds, read from /proc: its open descriptors, its
 * resident memory in KiB (VmRSS); -1 when it is gone. */
long th_proc_fds(pid_t pid);
long th_proc_rss_kib(pid_t pid);
/* The value of /proc/PID/status's field `key` (after its tabs); false
 * when there is no such process or field. */
bool th_proc_status(pid_t pid, const char *key, char *out, size_t len);

/* The first process whose command line (its arguments joined by spaces)
 * contains needle, and also `also` unless that is NULL; 0 when there is
 * none. */
pid_t th_proc_find(const char *needle, const char *also);

/* For an integration test's main(): false, having said on stdout that
 * `test` needs root for `why`, unless it runs as root; SIGPIPE ignored
 * (libvirtd or a peer that closes its socket mid-write must be an error
 * of the call, not the test's death). */
bool th_root_test(const char *test, const char *why);

/* The program `prog` of the build this test belongs to:
 * build[/san]/tests/<kind>/<test> -> build[/san]/<prog>. 0 or -errno. */
int th_build_prog(const char *prog, char *out, size_t len);
/* The same for a benchmark: build[/san]/bench/<bench> -> build[/san]/<prog>. */
int th_bench_prog(const char *prog, char *out, size_t len);
/* th_build_prog or th_bench_prog, whichever this program is: for the
 * helpers both use (the fixtures). */
int th_prog(const char *prog, char *out, size_t len);
