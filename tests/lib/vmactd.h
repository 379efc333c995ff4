/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd run by an integration test (prefix th_vmactd_): a scratch
 * directory for its configuration, log and control socket, a BPF pin root
 * of its own, the test guest it manages, and one teardown that leaves none
 * of them behind, whatever state a failed test left them in. */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "tests/lib/cg-limit.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"

/* Guests beyond the first a fixture can hold (th_vmactd_add_guest). */
#define TH_VMACTD_MORE_GUESTS 4

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
	/* The test's other guests (th_vmactd_add_guest), treated as guest. */
	struct tg_guest *more[TH_VMACTD_MORE_GUESTS];
	unsigned n_more;
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

/* One more guest of the test, which th_vmactd_start waits for and the
 * teardown destroys with the first. 0, or -ENOSPC beyond
 * TH_VMACTD_MORE_GUESTS. */
int th_vmactd_add_guest(struct th_vmactd *d, struct tg_guest *g);

/* Starts the vm-monitor peer (tests/peers/vm-monitor.js, approving every
 * downscale: --no-cgroup) on the unix socket DIR/monitor.sock, its output
 * in DIR/monitor.log, and writes into meta (len bytes) the metadata of a
 * guest it serves: <vmact:autoscaling> with TG_META_BOUNDS and a
 * <vmact:monitor> naming the socket. The teardown stops it. 0, or -errno
 * said on stderr. */
int th_vmactd_monitor(struct th_vmactd *d, char *meta, size_t len);

/* Writes vmactd's configuration: libvirt.name_prefix, control.socket and
 * sampler.pin_root the fixture's, with extra (JSON object text, NULL:
 * none) merged over them key by key. 0, or -EINVAL when extra is not a
 * JSON object, or -errno. */
int th_vmactd_config(struct th_vmactd *d, const char *name_prefix, const char *extra);

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

/* Stops vmactd and the vm-monitor peer, removes its pins, destroys (and
 * undefines) the guests and removes the scratch directory (kept with
 * VMACT_TEST_KEEP_LOG). Safe on a fixture in any state, zeroed included. */
void th_vmactd_teardown(struct th_vmactd *d);
