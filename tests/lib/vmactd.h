/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd run by an integration test (prefix th_vmactd_): a scratch
 * directory for its configuration, log and control socket, a BPF pin root
 * of its own, the test guest it manages, and one teardown that leaves none
 * of them behind, whatever state a failed test left them in. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "tests/lib/cg-limit.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"

/* The guests one fixture can have (a test's, a soak's). */
#define TH_VMACTD_GUESTS 8

struct th_vmactd {
	/* /tmp/PREFIX-XXXXXX, 0755 (a read_group member reaches the socket
	 * through it); the test may put files of its own there. */
	char dir[64];
	char cfg[128], log[128], sock[128];
	char pins[128];                        /* /sys/fs/bpf/PREFIX-PID */
	char prog[PATH_MAX], vmactl[PATH_MAX]; /* vmactd and vmactl of this build */
	struct th_proc proc;
	/* The test's guest (NULL: none), destroyed by th_vmactd_teardown;
	 * undefined as well when `persistent`. */
	struct tg_guest *guest;
	bool persistent;
	/* The guests after the first (th_vmactd_add_guest), handled as it. */
	struct tg_guest *more[TH_VMACTD_GUESTS - 1];
	size_t n_more;
	/* vmactds started by th_vmactd_respawn so far. */
	unsigned spawns;
	/* Set by the test: its teardown leaves the scratch directory, as
	 * VMACT_TEST_KEEP_LOG does (a failure whose logs are worth reading). */
	bool keep;
	/* The vm-monitor peer of th_vmactd_monitor (not started: zero). */
	struct th_peer monitor;
};

/* The scratch directory, the paths, the pin root and vmactd's path (the
 * build this test or bench belongs to), and the guest the teardown
 * destroys (NULL: none; the test starts it); nothing is started. 0 or
 * -errno. */
int th_vmactd_init(struct th_vmactd *d, const char *prefix, struct tg_guest *guest);
/* The same with the scratch directory under parent instead of /tmp (for a
 * vmactd that does not see the host's /tmp). */
int th_vmactd_init_at(struct th_vmactd *d, const char *parent, const char *prefix,
		      struct tg_guest *guest);

/* Starts the vm-monitor peer (tests/peers/vm-monitor.js, approving every
 * downscale: --no-cgroup) on the unix socket DIR/monitor.sock, its output
 * in DIR/monitor.log, and writes into meta (len bytes) the metadata of a
 * guest it serves: <vmact:autoscaling> with TG_META_BOUNDS and a
 * <vmact:monitor> naming the socket. The teardown stops it. 0, or -errno
 * said on stderr. */
int th_vmactd_monitor(struct th_vmactd *d, char *meta, size_t len);

/* Writes vmactd's configuration: libvirt.name_prefix, control.socket and
 * sampler.pin_root the fixture's, policy.events false when the poll is
 * forced (th_vmactd_poll_forced), with extra (JSON object text, NULL:
 * none) merged over them key by key. 0, or -EINVAL when extra is not a
 * JSON object, or -errno. */
int th_vmactd_config(struct th_vmactd *d, const char *name_prefix, const char *extra);
/* VMACT_TEST_EVENTS=off (make check-poll): the reactive policy's tests
 * run on the poll, not the kernel's watch. */
bool th_vmactd_poll_forced(void);
/* Whether the running vmactd finds load on the path the test asked for:
 * the kernel's watch, or the poll when forced (its start line says which);
 * false, with the line it printed instead on stderr. */
bool th_vmactd_on_detection_path(const struct th_vmactd *d);

/* Starts vmactd --config CFG and the options args (NULL-terminated, NULL:
 * none), its stdout and stderr in the log. 0 or -errno. */
int th_vmactd_spawn(struct th_vmactd *d, const char *const *args);
/* The same run by wrapper (a NULL-terminated command line that ends by
 * executing the command after it: unshare, setpriv, a seccomp launcher),
 * so that d->proc is vmactd once the wrapper has executed it. A test may
 * point d->prog at another vmactd first (a copy the sandbox can reach). */
int th_vmactd_spawn_under(struct th_vmactd *d, const char *const *wrapper, const char *const *args);

/* Waits up to boot_s for each guest's first report (no guest: no wait),
 * starts vmactd with args (th_vmactd_spawn) and waits up to ready_s for
 * its line "ready: managing VMS VM(s)". 0; -ETIMEDOUT, which of the two
 * never came said on stderr; or -errno. */
int th_vmactd_start(struct th_vmactd *d, const char *const *args, unsigned vms, double boot_s,
		    double ready_s);

/* True once needle is in vmactd's log. */
bool th_vmactd_log_has(const struct th_vmactd *d, const char *needle);

/* Prints the tail of vmactd's log on stderr (what th_vmactd_wait prints
 * when it gives up), for a test's other failures. */
void th_vmactd_dump_log(const struct th_vmactd *d);

/* th_wait_daemon on vmactd: false at the limit or when vmactd exited, its
 * log's tail then printed on stderr. */
bool th_vmactd_wait(struct th_vmactd *d, bool (*pred)(void *), void *arg, double limit_s);
/* The same waiting for needle in its log. */
bool th_vmactd_wait_log(struct th_vmactd *d, const char *needle, double limit_s);

/* The CPU limit vmactd wrote for its VM, in milli-CPUs (-1: unlimited):
 * th_vmactd_quota_milli of its log, failing the cmocka test (include
 * cmocka.h first) when it cannot be read. */
#define TH_VMACTD_QUOTA_OR_FAIL(d)                                                             \
	({                                                                                     \
		long th_q_ = th_vmactd_quota_milli((d)->log);                                  \
		if (th_q_ == TH_CG_UNKNOWN)                                                    \
			fail_msg("no readable CPU limit for the VM's cgroup in %s", (d)->log); \
		th_q_;                                                                         \
	})

/* Stops vmactd (SIGTERM, 30 s, then SIGKILL); its exit status. */
int th_vmactd_stop(struct th_vmactd *d);

/* One more guest for the fixture (the first, when init had none):
 * th_vmactd_start waits for its boot as well, th_vmactd_teardown destroys
 * it with the others, all at once. 0, or -E2BIG past TH_VMACTD_GUESTS. */
int th_vmactd_add_guest(struct th_vmactd *d, struct tg_guest *g);

/* A new vmactd in place of the last (a crash's or a kill's successor; a
 * vmactd still running is SIGKILLed first, as a crash would end it), with
 * args as th_vmactd_spawn's and a log of its own, vmactd.N.log in the
 * scratch directory (N counting the respawns from 1; d->log names it from
 * then on): the logs of the ones before stay for the story of a failure.
 * 0 or -errno. */
int th_vmactd_respawn(struct th_vmactd *d, const char *const *args);

/* How often the printf-formatted text is in vmactd's log. */
unsigned th_vmactd_log_count(const struct th_vmactd *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A line awaited in vmactd's log: its text and how often it was there
 * when the test marked it, before doing what should log it once more. */
struct th_vmactd_mark {
	char needle[256];
	unsigned before;
};

/* Marks the printf-formatted text in the log as it is now. */
void th_vmactd_mark(const struct th_vmactd *d, struct th_vmactd_mark *m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The log has the mark's text once more than when it was marked. */
bool th_vmactd_mark_grew(const struct th_vmactd *d, const struct th_vmactd_mark *m);

/* th_vmactd_wait for th_vmactd_mark_grew. */
bool th_vmactd_wait_mark(struct th_vmactd *d, const struct th_vmactd_mark *m, double limit_s);

/* The CPU limit of the VM `vm` in milli-CPUs (TH_CG_UNLIMITED), read from
 * the cgroup of vmactd's last "VM: managing (" line for it; TH_CG_UNKNOWN
 * when there is none or the kernel's figures cannot be read. */
long th_vmactd_vm_quota(const struct th_vmactd *d, const char *vm);

/* Stops vmactd and the vm-monitor peer, removes its pins, destroys (and
 * undefines) the guests and removes the scratch directory (kept with
 * VMACT_TEST_KEEP_LOG or keep). Safe on a fixture in any state, zeroed
 * included. */
void th_vmactd_teardown(struct th_vmactd *d);
