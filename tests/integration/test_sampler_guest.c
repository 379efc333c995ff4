/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler on a real TCG guest (tests/guest, built by `make guest`): the
 * QEMU process's load rises when a busy loop runs inside the guest and
 * falls when it stops; the busy vCPU thread shows in the per-thread split;
 * the VM's cgroup cpu.stat is read from libvirt's own cgroup. Run as root
 * with libvirtd up. The guest's second serial port takes "busy <n>" and
 * "idle"; its first reports "VMACT seq=.. busy=<n>" every 200 ms. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "bpf/sampler.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/wait.h"

#define PHASE_S 6

struct fixture {
	virConnectPtr conn;
	virDomainPtr dom;
	char name[32], rundir[40], log[80], ctl[80];
	struct smp_sampler *s;
};

static const char *const domain_xml =
	"<domain type='qemu'>"
	"<name>%s</name>"
	"<memory unit='KiB'>262144</memory>"
	"<vcpu placement='static'>1</vcpu>"
	"<os><type arch='x86_64' machine='pc'>hvm</type>"
	"<kernel>%s/vmlinuz</kernel><initrd>%s/initrd.img</initrd>"
	"<cmdline>console=ttyS0 loglevel=1 panic=-1</cmdline></os>"
	"<features><acpi/><apic/></features>"
	"<cpu mode='custom' match='exact' check='none'><model fallback='forbid'>qemu64</model></cpu>"
	"<on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot>"
	"<on_crash>destroy</on_crash>"
	"<devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
	"<controller type='usb' model='none'/>"
	"<serial type='file'><source path='%s'/><target port='0'/></serial>"
	"<serial type='unix'><source mode='bind' path='%s'/><target port='1'/></serial>"
	"<memballoon model='none'/></devices></domain>";

/* Guests of earlier runs that died before their teardown (killed by a
 * timeout, say): their test process is gone, so nothing else removes them. */
static void reap_dead_runs(void)
{
	virConnectPtr c = virConnectOpen("qemu:///system");
	virDomainPtr *doms = NULL;
	int n;

	if (!c)
		return;
	n = virConnectListAllDomains(c, &doms, 0);
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);
		char rundir[64], path[96];
		int pid;

		if (name && sscanf(name, "vmact-smp-%d", &pid) == 1 && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH) {
			virDomainDestroy(doms[i]);
			snprintf(rundir, sizeof(rundir), "/run/vmact-smp-%d", pid);
			snprintf(path, sizeof(path), "%s/guest.log", rundir);
			unlink(path);
			snprintf(path, sizeof(path), "%s/guest.ctl", rundir);
			unlink(path);
			rmdir(rundir);
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	virConnectClose(c);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	reap_dead_runs();
	*state = f;
	return 0;
}

static void quiet(void *data, virErrorPtr e)
{
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	smp_close(f->s);
	if (f->dom) {
		virDomainDestroy(f->dom);
		virDomainFree(f->dom);
	}
	if (f->conn)
		virConnectClose(f->conn);
	/* Other jobs on this host restart libvirtd: if our connection died
	 * with it (even in the middle of creating the guest), find the guest
	 * by name on a fresh connection. */
	if (f->name[0]) {
		virConnectPtr c = virConnectOpen("qemu:///system");
		virDomainPtr d;

		if (c)
			virConnSetErrorFunc(c, NULL, quiet); /* "not found" is the norm */
		d = c ? virDomainLookupByName(c, f->name) : NULL;

		if (d) {
			virDomainDestroy(d);
			virDomainFree(d);
		}
		if (c)
			virConnectClose(c);
	}
	if (f->rundir[0]) {
		unlink(f->log);
		unlink(f->ctl);
		rmdir(f->rundir);
	}
	free(f);
	return 0;
}

/* Does the serial log show want (n < 0: anywhere; otherwise in the last
 * status line, which decides)? */
static bool log_shows(const struct fixture *f, const char *want, int n)
{
	_cleanup_free_ char *log = th_read_file(f->log);
	char *last = NULL, *p;

	if (log && n < 0 && strstr(log, want))
		return true;
	for (p = log; p && (p = strstr(p, "VMACT seq=")); p++)
		last = p;
	if (!last || n < 0)
		return false;
	/* The busy field, wherever it stands in the line: more fields follow
	 * it (claimed=, and the memory figures once the guest allocates). */
	p = strpbrk(last, "\r\n");
	if (p)
		*p = 0; /* the last line only */
	p = strstr(last, " busy=");
	return p && strtol(p + strlen(" busy="), NULL, 10) == n;
}

/* Waits until the serial log's last status line reports busy=<n> (or, with
 * n < 0, until the guest says it is ready). */
static void wait_log(struct fixture *f, int n, int timeout_s)
{
	char want[32];

	if (n < 0)
		snprintf(want, sizeof(want), "VMACT ready");
	else
		snprintf(want, sizeof(want), " busy=%d", n);
	if (TH_WAIT(NULL, log_shows(f, want, n), (uint64_t)timeout_s * VMACT_USEC_PER_SEC))
		return;
	fail_msg("guest %s: no \"%s\" in %s after %d s", f->name, want, f->log, timeout_s);
}

static void guest_cmd(struct fixture *f, const char *cmd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = strlen(cmd);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->ctl);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		fail_msg("connect %s: %s", f->ctl, strerror(errno));
	assert_int_equal(write(fd, cmd, len), (ssize_t)len);
}

static pid_t qemu_pid(struct fixture *f)
{
	pid_t pid = tg_qemu_pid(f->name);

	if (pid < 0)
		fail_msg("%s: no QEMU pid file: %s", f->name, strerror(-pid));
	return pid;
}

/* The VM's directory in the v1 cpu hierarchy: libvirt puts the QEMU main
 * thread in <vm>/emulator. */
static void cpu_cgroup(pid_t pid, char *out, size_t size)
{
	char path[64], line[512];
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fp = fopen(path, "r");
	assert_non_null(fp);
	out[0] = '\0';
	while (fgets(line, sizeof(line), fp)) {
		char *ctrl = strchr(line, ':'), *rel, *nl;

		if (!ctrl || !(rel = strchr(ctrl + 1, ':')))
			continue;
		*rel++ = '\0';
		if ((nl = strchr(rel, '\n')))
			*nl = '\0';
		/* "cpu" alone or in a list such as "cpu,cpuacct". */
		char *tok, *save = NULL;
		for (tok = strtok_r(ctrl + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (strcmp(tok, "cpu"))
				continue;
			size_t l = strlen(rel);

			if (l > 9 && !strcmp(rel + l - 9, "/emulator"))
				rel[l - 9] = '\0';
			snprintf(out, size, "/sys/fs/cgroup/cpu%s", rel);
		}
	}
	fclose(fp);
	if (!out[0])
		fail_msg("no cpu controller line in %s", path);
}

static void measure(struct fixture *f, const char *tag, struct smp_reading *r)
{
	struct vmact_err err = { 0 };

	if (smp_read(f->s, f->name, r, &err) < 0)
		fail_msg("smp_read: %s", err.msg);
	sleep(PHASE_S);
	if (smp_read(f->s, f->name, r, &err) < 0)
		fail_msg("smp_read: %s", err.msg);
	printf("  %-5s %.2fs load %.3f loadavg %.3f util %.3f delay %.3f wakeups %lu switches %lu"
	       " cpu.stat periods %lu throttled %lu\n",
	       tag, r->interval_s, r->load, r->loadavg[0], r->cpu_util, r->delay_frac,
	       (unsigned long)r->wakeups, (unsigned long)r->switches, (unsigned long)r->nr_periods,
	       (unsigned long)r->nr_throttled);
}

static void test_guest_busy_loop(void **state)
{
	struct fixture *f = *state;
	const char *guestdir = getenv("VMACT_GUEST_DIR");
	struct smp_config cfg = { .backend = SMP_BACKEND_BPF };
	struct vmact_err err = { 0 };
	struct smp_reading idle, busy, idle2;
	struct smp_thread th[64];
	char pin_root[64], cg[512], gdir[PATH_MAX], *xml = NULL;
	struct passwd *pw;
	pid_t pid;
	int n, vcpu_busy = 0;

	if (!guestdir)
		guestdir = "build/guest";
	if (!realpath(guestdir, gdir))
		fail_msg("guest directory %s: %s (run `make guest`)", guestdir, strerror(errno));
	if (strlen(gdir) > 400)
		fail_msg("guest directory path too long: %s", gdir);
	snprintf(cg, sizeof(cg), "%.400s/stamp", gdir);
	if (access(cg, R_OK) < 0)
		fail_msg("%s missing: run `make guest`", cg);

	snprintf(f->name, sizeof(f->name), "vmact-smp-%d", (int)getpid() & 0xffffff);
	snprintf(f->rundir, sizeof(f->rundir), "/run/vmact-smp-%d", (int)getpid() & 0xffffff);
	snprintf(f->log, sizeof(f->log), "%s/guest.log", f->rundir);
	snprintf(f->ctl, sizeof(f->ctl), "%s/guest.ctl", f->rundir);
	if (mkdir(f->rundir, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", f->rundir, strerror(errno));
	/* QEMU binds the control socket itself, as libvirt's QEMU user. */
	pw = getpwnam("libvirt-qemu");
	if (pw && chown(f->rundir, pw->pw_uid, pw->pw_gid) < 0)
		fail_msg("chown %s: %s", f->rundir, strerror(errno));

	f->conn = virConnectOpen("qemu:///system");
	if (!f->conn)
		fail_msg("libvirt: %s", virGetLastErrorMessage());
	assert_true(asprintf(&xml, domain_xml, f->name, gdir, gdir, f->log, f->ctl) > 0);
	f->dom = virDomainCreateXML(f->conn, xml, 0);
	free(xml);
	if (!f->dom)
		fail_msg("starting %s: %s", f->name, virGetLastErrorMessage());
	wait_log(f, -1, 180);
	wait_log(f, 0, 30);
	pid = qemu_pid(f);
	cpu_cgroup(pid, cg, sizeof(cg));

	snprintf(pin_root, sizeof(pin_root), "/sys/fs/bpf/vmact-smp-%d", (int)getpid());
	cfg.pin_root = pin_root;
	if (smp_open(&cfg, &f->s, &err) < 0)
		fail_msg("smp_open: %s", err.msg);
	if (smp_register(f->s, f->name, pid, cg, &err) < 0)
		fail_msg("smp_register: %s", err.msg);
	printf("  guest %s: qemu pid %d, cgroup %s\n", f->name, (int)pid, cg);

	measure(f, "idle", &idle);
	guest_cmd(f, "busy 1\n");
	wait_log(f, 1, 30);
	measure(f, "busy", &busy);
	n = smp_read_threads(f->s, f->name, th, ARRAY_SIZE(th), &err);
	if (n < 0)
		fail_msg("smp_read_threads: %s", err.msg);
	for (int i = 0; i < n; i++) {
		printf("    tid %d %-15s vcpu %d runnable %.2fs oncpu %.2fs\n", (int)th[i].tid,
		       th[i].comm, th[i].vcpu, th[i].runnable_ns / 1e9, th[i].oncpu_ns / 1e9);
		/* The vCPU thread was runnable for most of the busy phase. */
		if (th[i].vcpu == 0 && th[i].runnable_ns > (uint64_t)(PHASE_S * 0.8e9))
			vcpu_busy = 1;
	}
	guest_cmd(f, "idle\n");
	wait_log(f, 0, 30);
	measure(f, "idle", &idle2);

	assert_true(busy.has_cpu_stat);
	if (busy.load < 0.8 || busy.load < idle.load + 0.5)
		fail_msg("busy guest: load %.3f, idle before %.3f", busy.load, idle.load);
	if (idle2.load > busy.load - 0.5)
		fail_msg("after the busy loop stopped: load %.3f, busy %.3f", idle2.load,
			 busy.load);
	assert_true(busy.cpu_util > idle.cpu_util);
	assert_true(vcpu_busy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_guest_busy_loop, setup, teardown),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A libvirtd restarted under us (other jobs do that) must give an
	 * error on our connection, not kill the test with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("sampler_guest", tests, NULL, NULL);
}
