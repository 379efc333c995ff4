/* SPDX-License-Identifier: Apache-2.0 */
/* Test-guest helpers shared by integration tests and benches (prefix tg_,
 * the guest part of the test helper library):
 * start a transient TCG domain from tests/guest/domain.xml.in, read what
 * the guest reports on its serial log, send it commands, destroy it.
 *
 * Guest protocol (tests/guest/init): the serial log gets a line
 * "VMACT seq=<n> cpus=<online> memtotal_kb=<kb> busy=<n>" every 200 ms;
 * the control socket accepts "busy <n>\n", "idle\n", "cpu-online off|on\n" and
 * "mem-hold on|off\n" (tests/guest/init).
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
};

/* Replaces every @KEY@ of the template (kv: KEY, value, ..., NULL). */
char *tg_subst(const char *tpl, const char *const *kv);

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

/* The guest's latest status line; false when there is none yet. */
bool tg_report(const struct tg_guest *g, struct tg_report *r);

/* Waits for a report fresher than `after` (seq) satisfying pred (NULL: any).
 * Returns false at the timeout, leaving the last report in *r. */
bool tg_wait(const struct tg_guest *g, unsigned long after,
	     bool (*pred)(const struct tg_report *, const void *), const void *arg,
	     double timeout_s, struct tg_report *r);

/* Predicates for tg_wait: online CPUs == *(unsigned *)arg, MemTotal ==
 * *(unsigned long *)arg kB. */
bool tg_cpus_eq(const struct tg_report *r, const void *arg);
bool tg_mem_eq(const struct tg_report *r, const void *arg);

/* Predicates on a guest (struct tg_guest *) for th_wait_daemon and the
 * like: it has reported at all (booted); it reports 2 CPUs or more. */
bool tg_booted(void *g);
bool tg_two_cpus(void *g);

/* The pid of a running domain's QEMU, from libvirt's pid file
 * (/run/libvirt/qemu/NAME.pid), to kill QEMU as a crash would; -errno when
 * the file is missing or holds no pid. */
pid_t tg_qemu_pid(const char *name);

/* Sends one command line to the guest's control port. */
int tg_cmd(const struct tg_guest *g, const char *line);

/* Destroys the domain (if running) and removes its log and socket. */
void tg_destroy(struct tg_guest *g);

/* The same, finding the domain by name on a fresh connection: g->dom may
 * be stale when libvirtd restarted since (tests restart it). */
void tg_destroy_by_name(struct tg_guest *g);
