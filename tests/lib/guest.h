/* SPDX-License-Identifier: Apache-2.0 */
/* Test-guest helpers shared by integration tests and benches (prefix tg_,
 * the guest part of the test helper library):
 * start a transient TCG domain from tests/guest/domain.xml.in, read what
 * the guest reports on its serial log, send it commands, destroy it.
 *
 * Guest protocol (tests/guest/init): the serial log gets a line
 * "VMACT seq=<n> cpus=<online> memtotal_kb=<kb> busy=<n>" every 200 ms,
 * followed by " avail_kb=<kb> alloc_mb=<MiB> oom=<n> majflt=<n>" once the
 * guest was told to allocate; the control socket accepts "busy <n>\n", "idle\n",
 * "cpu-online off|on\n", "mem-hold on|off\n", "alloc <MiB> [<MiB/s>]\n" and
 * "free\n" (tests/guest/init).
 *
 * Environment: VMACT_GUEST_DIR (default build/guest) holds vmlinuz and
 * initrd.img; VMACT_GUEST_TEMPLATE (default tests/guest/domain.xml.in);
 * VMACT_GUEST_CMDLINE is appended to the guest kernel command line (e.g.
 * "vmact.report=0.05"). */
#pragma once

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#define TG_RUNDIR "/run/vmact-test"

/* The bounds most tests give their guest, the children of its
 * <vmact:autoscaling> element: 1 to 4 CPUs, 512Mi to 1536Mi by
 * virtio-mem, compute units of 250m / 256Mi. */
#define TG_META_BOUNDS                                                 \
	"<vmact:cpu min='1' max='4'/>"                                 \
	"<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>" \
	"<vmact:compute-unit cpu='250m' memory='256Mi'/>"

struct tg_guest {
	char name[96];
	char uuid[VIR_UUID_STRING_BUFLEN];
	char log[256];
	char ctl[256];
	virDomainPtr dom;
};

struct tg_report {
	unsigned long seq;
	unsigned cpus;
	unsigned long memtotal_kb;
	unsigned busy;
	/* From the guest's first "alloc" on (has_mem): MemAvailable, the MiB
	 * its allocations hold, the OOM killer's kills and the major faults
	 * since boot. */
	bool has_mem;
	unsigned long avail_kb, alloc_mb, oom, majflt;
};

/* Replaces every @KEY@ of the template (kv: KEY, value, ..., NULL). */
char *tg_subst(const char *tpl, const char *const *kv);

/* Writes to out_path the domain template (tests/guest/domain.xml.in) with
 * its first `from` replaced by `to`; -EINVAL when it has no `from`. */
int tg_template_edit(const char *from, const char *to, const char *out_path);

/* Writes to out_path the domain template with a virtio balloon reporting
 * memory statistics every second (vmactd's source of guest memory usage)
 * instead of none; point VMACT_GUEST_TEMPLATE at it. 0 or -errno. */
int tg_balloon_template(const char *out_path);

/* Where the guest's kernel and initrd are (VMACT_GUEST_DIR). */
const char *tg_guest_dir(void);

/* Starts a transient guest named "<prefix>-<pid>-<n>". metadata: XML for
 * <metadata> (without the wrapper) or NULL. Returns 0 or -errno with a
 * message in msg. */
int tg_start(virConnectPtr vc, const char *prefix, const char *metadata, struct tg_guest *g,
	     char *msg, size_t msglen);

/* The same with `extra` (may be NULL) appended to the guest kernel's
 * command line instead of VMACT_GUEST_CMDLINE: for guests started side by
 * side with different command lines. */
int tg_start_cmdline(virConnectPtr vc, const char *prefix, const char *metadata, const char *extra,
		     struct tg_guest *g, char *msg, size_t msglen);

/* The same from the domain template tplpath (NULL or "": the default
 * one), for guests started side by side from different templates. */
int tg_start_template(virConnectPtr vc, const char *prefix, const char *metadata,
		      const char *tplpath, const char *extra, struct tg_guest *g, char *msg,
		      size_t msglen);

/* tg_start_template on a libvirt connection of its own, for a test's
 * set-up that has none; tpl and extra NULL: VMACT_GUEST_TEMPLATE and
 * VMACT_GUEST_CMDLINE, as tg_start. 0, or -errno with the reason on
 * stderr. */
int tg_start_standalone(const char *prefix, const char *metadata, const char *tplpath,
			const char *extra, struct tg_guest *g);

/* tg_start_template for benches on a host others share: *vc reopened when
 * libvirtd went away (another user restarted it), a few attempts, then
 * the guest's first report and two seconds more. 0, or -errno with msg. */
int tg_boot(virConnectPtr *vc, const char *prefix, const char *metadata, const char *tplpath,
	    const char *extra, struct tg_guest *g, char *msg, size_t msglen);

/* tg_boot without the two seconds: returns at the guest's first report,
 * which it leaves in *r, for a bench that lets the boot's tail pass its
 * own way. */
int tg_boot_first(virConnectPtr *vc, const char *prefix, const char *metadata, const char *tplpath,
		  const char *extra, struct tg_guest *g, struct tg_report *r, char *msg,
		  size_t msglen);

/* Runs start(0) .. start(n - 1) each in a thread of its own and waits for
 * all: libvirt starts the QEMUs side by side (one after the other, each
 * start waits for the one before). start must be safe to run beside
 * itself (tg_start is; setenv is not). 0, or the first negative result. */
int tg_start_each(unsigned n, int (*start)(unsigned i));

/* The guest's latest status line; false when there is none yet. */
bool tg_report(const struct tg_guest *g, struct tg_report *r);

/* Waits for a report fresher than `after` (seq) satisfying pred (NULL: any).
 * Returns false at the timeout, leaving the last report in *r. */
bool tg_wait(const struct tg_guest *g, unsigned long after,
	     bool (*pred)(const struct tg_report *, const void *), const void *arg,
	     double timeout_s, struct tg_report *r);

/* Predicates for tg_wait: online CPUs == *(unsigned *)arg, MemTotal ==
 * *(unsigned long *)arg kB, busy loops == *(unsigned *)arg. */
bool tg_cpus_eq(const struct tg_report *r, const void *arg);
bool tg_mem_eq(const struct tg_report *r, const void *arg);
bool tg_busy_eq(const struct tg_report *r, const void *arg);

/* Predicates on a guest (struct tg_guest *) for th_wait_daemon and the
 * like: it has reported at all (booted); it reports 2 CPUs or more. */
bool tg_booted(void *g);
bool tg_two_cpus(void *g);

/* The pid of a running domain's QEMU, from libvirt's pid file
 * (/run/libvirt/qemu/NAME.pid), to kill QEMU as a crash would; -errno when
 * the file is missing or holds no pid. */
pid_t tg_qemu_pid(const char *name);

/* The live vCPU count libvirt has for the domain `name`, on a fresh
 * connection (other tests on the host restart libvirtd); -1 when it
 * cannot be had. */
int tg_live_vcpus(const char *name);

/* Keeps libvirt's client from printing its errors on stderr: tests and
 * benches look up domains that may be gone, and report what matters
 * themselves. */
void tg_quiet_libvirt(void);

/* Sends one command line to the guest's control port and returns once
 * QEMU has taken it for the guest (its bytes read off the socket), or
 * -ETIMEDOUT after 120 s of a guest that does not read. */
int tg_cmd(const struct tg_guest *g, const char *line);

/* Destroys the domain (if running) and removes its log and socket. */
void tg_destroy(struct tg_guest *g);

/* The same, finding the domain by name on a fresh connection: g->dom may
 * be stale when libvirtd restarted since (tests restart it). */
void tg_destroy_by_name(struct tg_guest *g);

/* Names g for a domain the test defined from the template itself (its
 * serial log and control socket under TG_RUNDIR, as tg_start's), so that
 * tg_destroy_by_name and tg_destroy_all remove it and its files. */
void tg_guest_named(struct tg_guest *g, const char *name);

/* tg_destroy_by_name for n guests at once, each in a thread of its own
 * with its own connection (libvirt takes about 2 s to stop a QEMU here;
 * one after the other, a teardown waits for all of them in turn); with
 * undefine, their persistent domains are undefined as well. Returns when
 * all are done. */
void tg_destroy_all(struct tg_guest *const g[], size_t n, bool undefine);
