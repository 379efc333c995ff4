/* SPDX-License-Identifier: Apache-2.0 */
/* footprint-bench: what vmactd costs the host per VM it manages (issue 28),
 * beside libvirtd's own cost in the same run.
 *
 * For each count N of managed guests (default 0, 1, 10 and 30; 0 is
 * vmactd's fixed cost) the bench boots tiny, mostly idle TCG guests from
 * the test guest (tests/guest: 256 MiB, 1 of 4 vCPUs, a virtio balloon
 * reporting its statistics every second as vmactd's memory source, the
 * guest's status line every 5 s and no guest agent, so that the guests
 * load the 2-CPU host as little as they can), adding to those of the
 * count before, and starts a fresh vmactd with its defaults (the
 * configuration sets only its name prefix, control socket, state
 * directory and BPF pin directory) managing all of them: bounds 1..2 CPUs,
 * 256Mi..256Mi, no vm-monitor. Once vmactd said "ready: managing N VMs",
 * and after a settling time, it measures over a window (SECONDS, default
 * 30):
 *
 *   vmactd  resident memory (VmRSS), proportional set size, threads,
 *           open descriptors, CPU time (utime + stime of vmactd and its
 *           children, the guest workers) per second of the window;
 *   libvirtd its resident memory and CPU time over the same window;
 *   QEMU    the guests' resident memory, summed (context);
 *
 * and where vmactd's memory goes, from /proc/PID/smaps: its heap, other
 * anonymous memory (allocator arenas, thread stacks), BPF maps mapped into
 * it, its own binary, the shared libraries, the rest.
 *
 * The last lines are for scripts:
 *   rss_1vm_mib: X          vmactd's VmRSS with one managed VM (MiB)
 *   uss_1vm_mib: X          its private memory (USS: Private_Clean +
 *                           Private_Dirty of its smaps) with one VM
 *   wakeups_1vm_per_s: X    its threads' wake-ups a second (voluntary
 *                           context switches) with one VM
 *   uss_per_vm_kib: X       USS at the largest count less USS with one,
 *                           per further VM
 *   wakeups_NVM_per_s: X    the wake-ups a second at the largest count N
 *   wakeups_ratio: R        wakeups_NVM_per_s / wakeups_1vm_per_s (issue
 *                           36: at most 1); the table's loop/s column is
 *                           the main thread's share
 *   cpu_per_idle_vm_pct: Y  what each idle VM adds to vmactd's CPU, in %
 *                           of one core: (CPU at the largest N - CPU at 0
 *                           VMs) / N, or CPU / N without a 0 run
 *
 * With VMACT_FP_BASELINE=PATH another vmactd binary (e.g. main's) is
 * measured the same way right after each of this build's, on the same
 * guests, and printed as a second table: compare the two within a run.
 *
 * Booting many TCG guests on a small host is slow and gets slower with
 * each guest already running: at most FOOTPRINT_BATCH (3) boot at once, a
 * new one starting as soon as one reports (its first status line) and
 * only while the host has memory for it, each within a generous safety
 * limit (VMACT_FP_BOOT_LIMIT, 900 s); a line says each guest's progress.
 * Every guest and vmactd go at the end, on any failure and on SIGINT,
 * SIGTERM or SIGHUP; guests a killed run left behind (their bench's pid is
 * gone) go when the next run starts.
 *
 * Usage: footprint-bench [SECONDS [N...]] (root, make guest). Plain build:
 * an ASan build's memory says nothing about vmactd's. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"
#include "tests/lib/cpu-use.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX   "vmact-fp"
#define MAX_VMS  64
#define MAX_RUNS 8
#define SETTLE_S 10
/* The guest's status line every 5 s, no qemu-ga: as little idle load as
 * the test guest can have under TCG. */
#define GUEST_CMDLINE "vmact.report=5 vmact.agent=0"
#define META                                                             \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" \
	"<vmact:cpu min='1' max='2'/>"                                   \
	"<vmact:memory min='256Mi' max='256Mi' method='virtio-mem'/>"    \
	"<vmact:compute-unit cpu='250m' memory='128Mi'/></vmact:autoscaling>"

/* Where a process's resident memory is, from its smaps (KiB). */
enum { M_HEAP, M_ANON, M_BPF, M_BINARY, M_LIBS, M_OTHER, N_MEM };
static const char *const mem_names[N_MEM] = {
	"heap",          "anonymous (arenas, stacks)", "BPF maps",
	"vmactd binary", "shared libraries",           "other"
};

struct usage {
	double rss_mib, pss_mib;
	/* Private memory (USS: pages no other process maps, what vmactd's
	 * exit would free), and of it the dirty part (what only swap could
	 * reclaim). */
	double uss_mib, uss_dirty_mib;
	long threads, fds;
	double cpu_pct;                        /* % of one core over the window */
	double wakeups;                        /* per second over the window, all threads */
	double wakeups_loop;                   /* of them, the main thread's (the loop) */
	double mem_rss[N_MEM], mem_pss[N_MEM]; /* KiB */
	double mem_uss[N_MEM];                 /* KiB */
};

struct run {
	unsigned vms;
	struct usage vmactd, libvirtd;
	double qemu_rss_mib, load1;
};

static virConnectPtr vc;
static struct tg_guest guests[MAX_VMS];
static unsigned booted;
/* The signal that asked the bench to stop: every wait ends, the teardown
 * runs. */
static volatile sig_atomic_t stopping;
/* vmactd's files, the guests' template among them; no guest: the bench
 * destroys its own. */
static struct th_vmactd fp;
static char vmactd_path[PATH_MAX], tpl[160];

/* ---- /proc ---- */

static bool read_cpu(pid_t pid, double *secs)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	return cpu_use_read(p, secs);
}

/* The parent of pid, from /proc/PID/stat (the field after the command's
 * closing parenthesis and the state); 0 when unknown. */
static pid_t parent_of(pid_t pid)
{
	char p[64], buf[512], *rp;
	int ppid = 0;
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	rp = strrchr(buf, ')');
	if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

/* CPU seconds of pid and its children (vmactd's guest workers). */
static double tree_cpu(pid_t pid)
{
	double total = 0, s;
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (read_cpu(pid, &s))
		total += s;
	if (!d)
		return total;
	while ((e = readdir(d))) {
		pid_t p = (pid_t)atoi(e->d_name);

		if (p > 0 && parent_of(p) == pid && read_cpu(p, &s))
			total += s;
	}
	closedir(d);
	return total;
}

/* The resident memory of every QEMU of this bench's guests (MiB). */
static double qemu_rss_mib(void)
{
	double kib = 0;

	for (unsigned i = 0; i < booted; i++) {
		pid_t p = tg_qemu_pid(guests[i].name);
		long r = p > 0 ? th_proc_rss_kib(p) : -1;

		if (r > 0)
			kib += (double)r;
	}
	return kib / 1024.0;
}

static int mem_class(const char *path, const char *exe)
{
	if (!path[0])
		return M_ANON;
	if (!strcmp(path, "[heap]"))
		return M_HEAP;
	if (strstr(path, "bpf-map") || strstr(path, "bpf_map"))
		return M_BPF;
	if (!strcmp(path, exe))
		return M_BINARY;
	if (strstr(path, ".so"))
		return M_LIBS;
	return M_OTHER;
}

/* Rss and Pss of pid's mappings by class, from /proc/PID/smaps. */
static void read_smaps(pid_t pid, struct usage *u)
{
	char p[64], line[1024], exe[PATH_MAX] = "", path[PATH_MAX] = "";
	int cls = M_OTHER;
	ssize_t n;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	n = readlink(p, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	snprintf(p, sizeof(p), "/proc/%d/smaps", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, kib;
		int off = 0;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &a, &b, &off) == 2 && off > 0) {
			snprintf(path, sizeof(path), "%s", line + off);
			path[strcspn(path, "\n")] = 0;
			cls = mem_class(path, exe);
		} else if (sscanf(line, "Rss: %lu kB", &kib) == 1) {
			u->mem_rss[cls] += (double)kib;
		} else if (sscanf(line, "Pss: %lu kB", &kib) == 1) {
			u->mem_pss[cls] += (double)kib;
		} else if (sscanf(line, "Private_Clean: %lu kB", &kib) == 1) {
			u->mem_uss[cls] += (double)kib;
			u->uss_mib += (double)kib / 1024.0;
		} else if (sscanf(line, "Private_Dirty: %lu kB", &kib) == 1) {
			u->mem_uss[cls] += (double)kib;
			u->uss_mib += (double)kib / 1024.0;
			u->uss_dirty_mib += (double)kib / 1024.0;
		}
	}
	fclose(f);
}

static void snapshot(pid_t pid, struct usage *u, bool smaps)
{
	char v[64];

	u->rss_mib = (double)th_proc_rss_kib(pid) / 1024.0;
	u->fds = th_proc_fds(pid);
	u->threads = th_proc_status(pid, "Threads", v, sizeof(v)) ? atol(v) : -1;
	if (smaps) {
		read_smaps(pid, u);
		for (int i = 0; i < N_MEM; i++)
			u->pss_mib += u->mem_pss[i] / 1024.0;
	}
}

/* The times pid's threads were woken so far: their voluntary context
 * switches (each a sleep the thread was woken from), summed over
 * /proc/PID/task. -1 when unknown. */
static double wakeups_of(pid_t pid)
{
	char p[64], v[64];
	struct dirent *e;
	double sum = 0;
	DIR *dir;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	dir = opendir(p);
	if (!dir)
		return -1;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		/* /proc/TID is the thread's own, as /proc/PID/task/TID. */
		if (th_proc_status((pid_t)atoi(e->d_name), "voluntary_ctxt_switches", v, sizeof(v)))
			sum += atof(v);
	}
	closedir(dir);
	return sum;
}

/* The main thread's alone (sd-event's loop; the others are libvirt's
 * event thread and passing workers). -1 when unknown. */
static double loop_wakeups_of(pid_t pid)
{
	char v[64];

	return th_proc_status(pid, "voluntary_ctxt_switches", v, sizeof(v)) ? atof(v) : -1;
}

static pid_t libvirtd_pid(void)
{
	char *s = th_read_file("/run/libvirtd.pid");
	pid_t p = s ? (pid_t)atoi(s) : 0;

	free(s);
	return p;
}

static double load1(void)
{
	char *s = th_read_file("/proc/loadavg");
	double l = s ? atof(s) : -1;

	free(s);
	return l;
}

/* ---- guests ---- */

/* A small guest: 256 MiB (of the template's 512 MiB; at 128 MiB its
 * kernel ran out of memory while booting: about 100 MiB of the test
 * guest's memory is its kernel's own), a virtio-mem device of 128 MiB that
 * vmactd never uses (min = max), the balloon's statistics every second. */
static int write_template(void)
{
	static const char *const edits[][2] = {
		{ "<memory unit='KiB'>524288</memory>", "<memory unit='KiB'>262144</memory>" },
		{ "<currentMemory unit='KiB'>524288</currentMemory>",
		  "<currentMemory unit='KiB'>262144</currentMemory>" },
		{ "memory='524288' unit='KiB'", "memory='262144' unit='KiB'" },
		{ "<size unit='KiB'>1048576</size>", "<size unit='KiB'>131072</size>" },
		{ "<memballoon model='none'/>",
		  "<memballoon model='virtio'><stats period='1'/></memballoon>" },
	};
	char *text = th_read_file("tests/guest/domain.xml.in");
	int ret;

	if (!text)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		const char *at = strstr(text, edits[i][0]);
		size_t from = strlen(edits[i][0]), to = strlen(edits[i][1]);
		char *next;

		if (!at) {
			fprintf(stderr, "footprint-bench: the template has no %s\n", edits[i][0]);
			free(text);
			return -EINVAL;
		}
		next = malloc(strlen(text) - from + to + 1);
		if (!next) {
			free(text);
			return -ENOMEM;
		}
		memcpy(next, text, (size_t)(at - text));
		memcpy(next + (at - text), edits[i][1], to);
		strcpy(next + (at - text) + to, at + from);
		free(text);
		text = next;
	}
	ret = th_write_file(tpl, text);
	free(text);
	return ret;
}

/* Host memory that can still be had (MemAvailable, MiB); -1 when unknown. */
static long mem_available_mib(void)
{
	char *s = th_read_file("/proc/meminfo"), *at = s ? strstr(s, "MemAvailable:") : NULL;
	long kib = at ? atol(at + strlen("MemAvailable:")) : -1;

	free(s);
	return kib < 0 ? -1 : kib / 1024;
}

/* Waits out secs in short steps; false as soon as a signal asked the bench
 * to stop (the measuring window and the polls between checks of a state). */
static bool pause_s(double secs)
{
	for (double end = th_now_s() + secs, left; !stopping && (left = end - th_now_s()) > 0;)
		cpu_use_window(left < 0.2 ? left : 0.2);
	return !stopping;
}

static bool connected(void)
{
	if (vc && virConnectIsAlive(vc) == 1)
		return true;
	if (vc)
		virConnectClose(vc);
	vc = virConnectOpen(HP_URI_DEFAULT);
	return vc != NULL;
}

/* Starts guest i (synchronous: libvirt returns once its QEMU runs). */
static int start_one(unsigned i)
{
	char msg[512];
	int ret = -EIO;

	for (int attempt = 0; attempt < 3 && ret < 0; attempt++) {
		/* libvirtd may have been restarted under the bench (the lock
		 * says it should not be; a fresh connection copes with it). */
		if (!connected()) {
			snprintf(msg, sizeof(msg), "cannot connect to libvirtd");
			pause_s(1);
			continue;
		}
		ret = tg_start_template(vc, PREFIX, META, tpl, GUEST_CMDLINE, &guests[i], msg,
					sizeof(msg));
		if (ret < 0 && connected()) {
			virDomainPtr d = virDomainLookupByName(vc, guests[i].name);

			/* Started after all: destroyed by name at the end. */
			if (d) {
				virDomainFree(d);
				break;
			}
		}
	}
	if (ret < 0)
		fprintf(stderr, "footprint-bench: starting guest %u: %s\n", i + 1, msg);
	return ret;
}

/* Guests destroyed by name at the end: all started ones, including one
 * whose start failed half-way. */
static void destroy_guests(void)
{
	struct tg_guest *all[MAX_VMS];
	unsigned n = 0;

	for (unsigned i = 0; i < booted; i++)
		if (guests[i].name[0])
			all[n++] = &guests[i];
	if (n)
		fprintf(stderr, "  destroying %u guests\n", n);
	tg_destroy_all(all, n, false);
	booted = 0;
}

/* Guests of earlier runs of this bench whose process is gone (killed, so
 * no teardown ran): their names are PREFIX-PID-N. */
static void sweep_stale(void)
{
	virDomainPtr *doms = NULL;
	int n;

	if (!connected())
		return;
	n = virConnectListAllDomains(vc, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);
		int pid = 0;

		if (name && sscanf(name, PREFIX "-%d-", &pid) == 1 && pid > 0 && kill(pid, 0) < 0 &&
		    errno == ESRCH) {
			fprintf(stderr, "  destroying %s, left by a run that is gone\n", name);
			virDomainDestroy(doms[i]);
		}
		virDomainFree(doms[i]);
	}
	free(doms);
}

/* Boots guests until `want` run and report: at most `batch` booting at
 * once, each within limit_s of its start. 0, or -1 having said why. */
static int boot_to(unsigned want, unsigned batch, double limit_s)
{
	double started[MAX_VMS] = { 0 }, t0 = th_now_s();
	bool up[MAX_VMS] = { false };
	unsigned nup = booted, from = booted;

	for (unsigned i = 0; i < booted; i++)
		up[i] = true;
	while (nup < want) {
		unsigned booting = booted - nup;

		if (stopping)
			return -1;
		/* A guest needs its 256 MiB and QEMU's own; the host is shared. */
		while (booting < batch && booted < want) {
			long avail = mem_available_mib();

			if (avail >= 0 && avail < 1536) {
				if (booting)
					break;
				fprintf(stderr,
					"footprint-bench: only %ld MiB of memory available, "
					"guest %u not started\n",
					avail, booted + 1);
				return -1;
			}
			started[booted] = th_now_s();
			if (start_one(booted++) < 0)
				return -1;
			booting++;
		}
		for (unsigned i = from; i < booted; i++) {
			struct tg_report r;

			if (up[i])
				continue;
			if (tg_report(&guests[i], &r)) {
				up[i] = true;
				nup++;
				fprintf(stderr,
					"  guest %2u of %u up after %3.0f s (%u booting, load %.1f, "
					"%ld MiB free)\n",
					i + 1, want, th_now_s() - started[i], booted - nup, load1(),
					mem_available_mib());
				continue;
			}
			/* A guest that panics is destroyed (on_crash): stop at once. */
			if (guests[i].dom && virDomainIsActive(guests[i].dom) == 0) {
				fprintf(stderr,
					"footprint-bench: guest %s stopped while booting (its log: "
					"%s)\n",
					guests[i].name, guests[i].log);
				return -1;
			}
			if (th_now_s() - started[i] > limit_s) {
				fprintf(stderr,
					"footprint-bench: guest %s did not report within %.0f s "
					"(VMACT_FP_BOOT_LIMIT; its log: %s, load %.1f)\n",
					guests[i].name, limit_s, guests[i].log, load1());
				return -1;
			}
		}
		if (nup < want && !pause_s(0.5))
			return -1;
	}
	if (want > from)
		fprintf(stderr, "  %u guests running (%.0f s to boot the %u new ones)\n", booted,
			th_now_s() - t0, want - from);
	return 0;
}

/* The guests that are no longer running; 0 when all are. */
static unsigned guests_gone(void)
{
	unsigned gone = 0;

	for (unsigned i = 0; i < booted; i++)
		if (guests[i].dom && virDomainIsActive(guests[i].dom) == 0) {
			fprintf(stderr, "footprint-bench: guest %s stopped (its log: %s)\n",
				guests[i].name, guests[i].log);
			gone++;
		}
	return gone;
}

/* ---- vmactd ---- */

/* The BPF pin directories of runs that are gone (see sweep_stale). */
static void unpin_stale(void)
{
	DIR *d = opendir("/sys/fs/bpf");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int pid = 0;
		char dir[300];

		if (sscanf(e->d_name, "vmact-fp-%d", &pid) == 1 && pid > 0 && kill(pid, 0) < 0 &&
		    errno == ESRCH) {
			snprintf(dir, sizeof(dir), "/sys/fs/bpf/%s", e->d_name);
			th_remove_pins(dir);
		}
	}
	if (d)
		closedir(d);
}

/* The count in vmactd's "ready: managing N VMs" line; -1 while there is
 * none. */
static long ready_count(void)
{
	char *s = th_read_file(fp.log), *at = s ? strstr(s, "ready: managing ") : NULL;
	long n = at ? atol(at + strlen("ready: managing ")) : -1;

	free(s);
	return n;
}

/* One measurement with the guests booted so far: 0, 1 to measure again
 * (libvirtd was restarted during it), or -1. */
static int measure_once(const char *prog, unsigned secs, struct run *run)
{
	struct th_proc *d = &fp.proc;
	pid_t lv = libvirtd_pid();
	double end, c0, c1, w0, w1, m0, m1, l0 = 0, l1 = 0, t0, t1;
	long ready;
	int rc = -1;

	memset(run, 0, sizeof(*run));
	run->vms = booted;
	snprintf(fp.prog, sizeof(fp.prog), "%s", prog);
	if (th_vmactd_spawn(&fp, NULL) < 0) {
		fprintf(stderr, "footprint-bench: cannot start %s\n", prog);
		return -1;
	}
	/* A safety limit: vmactd with many VMs on a loaded host is slow to
	 * take them all in, never this slow. */
	end = th_now_s() + 600;
	while ((ready = ready_count()) < 0) {
		if (th_now_s() > end || th_proc_exited(d) || guests_gone()) {
			fprintf(stderr,
				"footprint-bench: vmactd did not say it is ready (log %s)\n",
				fp.log);
			goto out;
		}
		if (!pause_s(0.1))
			goto out;
	}
	if (ready != (long)booted) {
		fprintf(stderr, "footprint-bench: vmactd is managing %ld of %u VMs (log %s)\n",
			ready, booted, fp.log);
		goto out;
	}
	/* Start-up (the BPF programs, the first readings) is not the steady
	 * cost. */
	if (!pause_s(SETTLE_S) || th_proc_exited(d))
		goto out;
	c0 = tree_cpu(d->pid);
	w0 = wakeups_of(d->pid);
	m0 = loop_wakeups_of(d->pid);
	if (lv > 0)
		read_cpu(lv, &l0);
	t0 = th_now_s();
	run->load1 = load1();
	if (!pause_s(secs))
		goto out;
	c1 = tree_cpu(d->pid);
	w1 = wakeups_of(d->pid);
	m1 = loop_wakeups_of(d->pid);
	if (lv > 0)
		read_cpu(lv, &l1);
	t1 = th_now_s();
	if (th_proc_exited(d) || guests_gone())
		goto out;
	if (libvirtd_pid() != lv) {
		fprintf(stderr,
			"footprint-bench: libvirtd was restarted during the window (pid %d, now "
			"%d): measuring again\n",
			(int)lv, (int)libvirtd_pid());
		rc = 1;
		goto out;
	}
	run->vmactd.cpu_pct = (c1 - c0) / (t1 - t0) * 100.0;
	run->vmactd.wakeups = w0 >= 0 && w1 >= w0 ? (w1 - w0) / (t1 - t0) : -1;
	run->vmactd.wakeups_loop = m0 >= 0 && m1 >= m0 ? (m1 - m0) / (t1 - t0) : -1;
	run->libvirtd.cpu_pct = lv > 0 ? (l1 - l0) / (t1 - t0) * 100.0 : -1;
	run->load1 = (run->load1 + load1()) / 2;
	snapshot(d->pid, &run->vmactd, true);
	if (lv > 0)
		snapshot(lv, &run->libvirtd, false);
	run->qemu_rss_mib = qemu_rss_mib();
	rc = 0;
out:
	if (th_vmactd_stop(&fp) != 0)
		fprintf(stderr, "footprint-bench: vmactd did not exit cleanly (log %s)\n", fp.log);
	/* The next vmactd's sampler starts from an empty pin root. */
	th_remove_pins(fp.pins);
	return rc;
}

static int measure(const char *prog, unsigned secs, struct run *run)
{
	int rc;

	for (int attempt = 0; (rc = measure_once(prog, secs, run)) > 0 && attempt < 2; attempt++)
		;
	return rc == 0 ? 0 : -1;
}

static void print_runs(const char *title, const struct run *runs, unsigned n)
{
	printf("\n%s\n%5s %10s %10s %10s %10s %8s %5s %9s %12s %10s %7s %12s %12s %11s %7s\n",
	       title, "VMs", "vmactd RSS", "PSS (MiB)", "USS (MiB)", "dirty", "threads", "fds",
	       "CPU (%)", "CPU/VM (%)", "wakeups/s", "loop/s", "libvirtd RSS", "libvirtd CPU",
	       "QEMUs (MiB)", "load1");
	for (unsigned i = 0; i < n; i++) {
		const struct run *r = &runs[i];
		char per[32];

		if (r->vms)
			snprintf(per, sizeof(per), "%.4f", r->vmactd.cpu_pct / r->vms);
		else
			snprintf(per, sizeof(per), "-");
		printf("%5u %10.1f %10.1f %10.2f %10.2f %8ld %5ld %9.3f %12s %10.1f %7.1f %12.1f "
		       "%11.3f%% %11.0f %7.2f\n",
		       r->vms, r->vmactd.rss_mib, r->vmactd.pss_mib, r->vmactd.uss_mib,
		       r->vmactd.uss_dirty_mib, r->vmactd.threads, r->vmactd.fds, r->vmactd.cpu_pct,
		       per, r->vmactd.wakeups, r->vmactd.wakeups_loop, r->libvirtd.rss_mib,
		       r->libvirtd.cpu_pct, r->qemu_rss_mib, r->load1);
	}
	printf("\nwhere vmactd's memory is (RSS / PSS / USS, MiB):\n%-28s", "");
	for (unsigned i = 0; i < n; i++)
		printf("   %3u VMs RSS   PSS   USS", runs[i].vms);
	printf("\n");
	for (int m = 0; m < N_MEM; m++) {
		printf("%-28s", mem_names[m]);
		for (unsigned i = 0; i < n; i++)
			printf(" %13.2f %5.2f %5.2f", runs[i].vmactd.mem_rss[m] / 1024.0,
			       runs[i].vmactd.mem_pss[m] / 1024.0,
			       runs[i].vmactd.mem_uss[m] / 1024.0);
		printf("\n");
	}
}

static void on_signal(int sig)
{
	stopping = sig;
}

/* An environment variable's value in [lo, hi], or def. */
static double env_num(const char *name, double def, double lo, double hi)
{
	const char *s = getenv(name);
	char *e;
	double v;

	if (!s || !s[0])
		return def;
	v = strtod(s, &e);
	if (*e || v < lo || v > hi) {
		fprintf(stderr, "footprint-bench: %s=%s is not in %g..%g, using %g\n", name, s, lo,
			hi, def);
		return def;
	}
	return v;
}

int main(int argc, char **argv)
{
	unsigned secs = argc > 1 ? (unsigned)atoi(argv[1]) : 30, counts[MAX_RUNS], n = 0;
	struct run runs[MAX_RUNS], base[MAX_RUNS];
	const char *baseline = getenv("VMACT_FP_BASELINE");
	unsigned batch = (unsigned)env_num("FOOTPRINT_BATCH", 3, 1, MAX_VMS), done = 0;
	double boot_limit = env_num("VMACT_FP_BOOT_LIMIT", 900, 30, 7200), start = th_now_s();
	const struct run *zero = NULL, *last = NULL, *one = NULL;
	int rc = 1;
	struct sigaction sa = { .sa_handler = on_signal };
	char prefix[64], text[256], keep[64];

	for (int i = 2; i < argc && n < MAX_RUNS; i++)
		counts[n++] = (unsigned)atoi(argv[i]);
	if (!n) {
		static const unsigned def[] = { 0, 1, 10, 30 };

		memcpy(counts, def, sizeof(def));
		n = 4;
	}
	if (secs < 1 || secs > 3600) {
		fprintf(stderr, "usage: footprint-bench [SECONDS 1..3600 [N...]]\n");
		return 2;
	}
	for (unsigned i = 0; i < n; i++)
		if (counts[i] > MAX_VMS || (i && counts[i] < counts[i - 1])) {
			fprintf(stderr, "footprint-bench: counts go up, at most %d\n", MAX_VMS);
			return 2;
		}
	if (!th_root_test("footprint-bench", "libvirt, BPF, cgroups"))
		return 1;
	/* No SA_RESTART: a signal ends the waits, and the teardown runs. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The configuration is the same for every vmactd of the run: its
	 * name prefix, control socket, state directory and pin root. */
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	if (th_vmactd_init(&fp, PREFIX, NULL) < 0) {
		fprintf(stderr, "footprint-bench: cannot set up vmactd's files\n");
		th_vmactd_teardown(&fp);
		return 1;
	}
	snprintf(vmactd_path, sizeof(vmactd_path), "%s", fp.prog);
	snprintf(tpl, sizeof(tpl), "%s/domain.xml", fp.dir);
	snprintf(text, sizeof(text), "{\"control\":{\"state_dir\":\"%s\"}}", fp.dir);
	if (th_vmactd_config(&fp, prefix, text) < 0 || write_template() < 0) {
		fprintf(stderr, "footprint-bench: cannot write %s or %s\n", fp.cfg, tpl);
		th_vmactd_teardown(&fp);
		return 1;
	}
	sweep_stale();
	unpin_stale();

	printf("footprint-bench: vmactd (defaults) managing N small idle TCG guests (256 MiB, "
	       "1 vCPU, balloon statistics every second), %u s windows after %d s of settling\n",
	       secs, SETTLE_S);
	fflush(stdout);
	for (unsigned i = 0; i < n && !stopping; i++) {
		if (counts[i] > booted)
			fprintf(stderr, "  booting guests %u..%u, at most %u at once\n", booted + 1,
				counts[i], batch);
		if (boot_to(counts[i], batch, boot_limit) < 0)
			break;
		fprintf(stderr, "  %u VMs: measuring this build's vmactd\n", booted);
		if (measure(vmactd_path, secs, &runs[done]) < 0)
			break;
		fprintf(stderr,
			"  %u VMs: vmactd RSS %.1f MiB, %ld threads, %ld fds, CPU %.3f %%; "
			"libvirtd RSS %.1f MiB, CPU %.3f %%; load %.2f\n",
			booted, runs[done].vmactd.rss_mib, runs[done].vmactd.threads,
			runs[done].vmactd.fds, runs[done].vmactd.cpu_pct,
			runs[done].libvirtd.rss_mib, runs[done].libvirtd.cpu_pct, runs[done].load1);
		if (baseline && baseline[0]) {
			if (measure(baseline, secs, &base[done]) < 0)
				break;
			fprintf(stderr, "  %u VMs: baseline RSS %.1f MiB, CPU %.3f %%\n", booted,
				base[done].vmactd.rss_mib, base[done].vmactd.cpu_pct);
		}
		done++;
	}
	if (stopping)
		fprintf(stderr, "footprint-bench: stopped by signal %d\n", (int)stopping);
	destroy_guests();
	if (done)
		print_runs("this build's vmactd:", runs, done);
	if (done && baseline && baseline[0])
		print_runs(
			"baseline vmactd (VMACT_FP_BASELINE), measured right after it on the same "
			"guests:",
			base, done);
	for (unsigned i = 0; i < done; i++) {
		if (runs[i].vms == 0)
			zero = &runs[i];
		if (runs[i].vms == 1)
			one = &runs[i];
		if (runs[i].vms && (!last || runs[i].vms > last->vms))
			last = &runs[i];
	}
	printf("\n");
	if (done < n)
		printf("incomplete: %u of %u counts measured\n", done, n);
	if (one) {
		printf("rss_1vm_mib: %.1f\n", one->vmactd.rss_mib);
		printf("uss_1vm_mib: %.2f\n", one->vmactd.uss_mib);
		printf("wakeups_1vm_per_s: %.1f\n", one->vmactd.wakeups);
	}
	if (one && last && last->vms > 1) {
		printf("uss_per_vm_kib: %.1f\n",
		       (last->vmactd.uss_mib - one->vmactd.uss_mib) * 1024.0 / (last->vms - 1));
		printf("wakeups_%uvm_per_s: %.1f\n", last->vms, last->vmactd.wakeups);
		/* Issue 36's goal: no more wake-ups with N idle VMs than with one. */
		if (one->vmactd.wakeups > 0 && last->vmactd.wakeups >= 0)
			printf("wakeups_ratio: %.2f\n", last->vmactd.wakeups / one->vmactd.wakeups);
	}
	if (zero && last)
		printf("rss_per_vm_kib: %.0f\n",
		       (last->vmactd.rss_mib - zero->vmactd.rss_mib) * 1024.0 / last->vms);
	if (last) {
		double idle0 = zero ? zero->vmactd.cpu_pct : 0;

		printf("cpu_per_idle_vm_pct: %.4f\n", (last->vmactd.cpu_pct - idle0) / last->vms);
	}
	if (done == n)
		rc = 0;
	fprintf(stderr, "footprint-bench: %.0f s in all\n", th_now_s() - start);
	if (vc)
		virConnectClose(vc);
	/* The last vmactd's log, where it always was. */
	snprintf(keep, sizeof(keep), "/tmp/vmact-fp-%d.log", (int)getpid());
	if (getenv("VMACT_BENCH_KEEP_LOG") && rename(fp.log, keep) < 0)
		fprintf(stderr, "footprint-bench: cannot keep %s: %s\n", fp.log, strerror(errno));
	th_vmactd_teardown(&fp);
	return rc;
}
