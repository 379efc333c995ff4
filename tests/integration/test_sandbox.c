/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd inside what vmactd.service allows (doc/reliability.md, "Sandbox"). PID 1 is not
 * systemd on the test hosts, so the unit's restrictions are applied by
 * hand, read from actuator/daemon/vmactd.service itself:
 *
 *   CapabilityBoundingSet=    setpriv --bounding-set (root: the bounding set
 *                             is what it gets on exec), no inheritable or
 *                             ambient capabilities;
 *   NoNewPrivileges=yes       setpriv --no-new-privs;
 *   LimitRTPRIO=              prlimit --rtprio (before setpriv: raising the
 *                             hard limit takes CAP_SYS_RESOURCE; where the
 *                             test's root has none, as in some containers,
 *                             it is not applied and vmactd's loop must say
 *                             it waits in SCHED_OTHER);
 *   SystemCallFilter=         tests/sandbox/seccomp-exec with the list
 *                             tests/sandbox/unit-syscalls.sh expands from the unit
 *                             (systemd's own groups), default action kill;
 *   RestrictAddressFamilies=, RestrictNamespaces=yes, LockPersonality=yes,
 *   MemoryDenyWriteExecute=yes, SystemCallArchitectures=native
 *                             the same launcher's rules (tests/sandbox/seccomp-exec.c).
 *
 *   ProtectSystem=strict, ReadWritePaths=, PrivateTmp=, PrivateDevices=,
 *   ProtectHome=, ReadOnlyPaths= (/sys, /proc/sys), ProtectKernelModules/Logs=,
 *   ProtectHostname=,
 *   PrivateMounts=, RuntimeDirectory=, StateDirectory=
 *                             unshare --mount --uts and tests/sandbox/unit-mounts.sh
 *                             (the test's own directories bound on /run/vmact
 *                             and /var/lib/vmact, which it creates if the host
 *                             has none and removes after).
 *
 * The daemon is the plain build's (VMACT_PLAIN_BUILD, make check sets it;
 * the sanitizers need calls the filter forbids). First the filter is shown
 * live: under the same launcher a forbidden call (mount) kills the caller
 * with SIGSYS, socket(AF_PACKET) fails with EAFNOSUPPORT, getpid() works.
 * Then vmactd with its defaults (the BPF sampler, the embedded arbiter)
 * manages a real TCG guest: busy -> a second vCPU and a quota above 1
 * CPU; its /proc status shows exactly the unit's capabilities, no_new_privs
 * and a seccomp filter; SIGTERM -> exit 0, pins removed. Then the taskstats
 * sampler (sampler.mode, the fallback without BPF) under the same sandbox
 * measures the VM's load.
 *
 * Conditions are awaited with generous safety limits; nothing is timed. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/macro.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"

#define PREFIX        "vmactd-sbx"
#define UNIT          "actuator/daemon/vmactd.service"
#define LIMIT_BOOT_S  180.0
#define LIMIT_SCALE_S 300.0

static char plain_dir[PATH_MAX - 64];

struct fixture {
	virConnectPtr vc;
	struct tg_guest a;
	/* vmactd with guest A and its vm-monitor (the fixture's, on a unix
	 * socket in its directory: vmactd's guest worker is spawned inside
	 * the sandbox). The directory is under /run, not /tmp: PrivateTmp=
	 * hides /tmp from vmactd. */
	struct th_vmactd d;
	char probe_log[128], syscalls[128];
	char rundir[128], statedir[128], bindir[128];
	bool made_run, made_state; /* /run/vmact, /var/lib/vmact created here */
	char caps_arg[256], families[256], rtprio_arg[32];
	bool rtprio; /* LimitRTPRIO= applied (prlimit) */
	uint64_t cap_mask;
};

static struct fixture fx;

/* The value of the unit's first KEY= line, or NULL. */
static char *unit_value(const char *key)
{
	_cleanup_free_ char *text = th_read_file(UNIT);
	char needle[64], *p, *end;

	if (!text)
		return NULL;
	snprintf(needle, sizeof(needle), "\n%s=", key);
	p = strstr(text, needle);
	if (!p)
		return NULL;
	p += strlen(needle);
	end = strchr(p, '\n');
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

static const struct {
	const char *name;
	int cap;
} caps[] = {
	{ "CAP_BPF", CAP_BPF },
	{ "CAP_PERFMON", CAP_PERFMON },
	{ "CAP_NET_ADMIN", CAP_NET_ADMIN },
	{ "CAP_SETUID", CAP_SETUID },
	{ "CAP_SETGID", CAP_SETGID },
	{ "CAP_NET_BIND_SERVICE", CAP_NET_BIND_SERVICE },
	{ "CAP_SYS_RESOURCE", CAP_SYS_RESOURCE },
	{ "CAP_SYS_PTRACE", CAP_SYS_PTRACE },
	{ "CAP_SYS_ADMIN", CAP_SYS_ADMIN },
	{ "CAP_DAC_OVERRIDE", CAP_DAC_OVERRIDE },
	{ "CAP_DAC_READ_SEARCH", CAP_DAC_READ_SEARCH },
	{ "CAP_KILL", CAP_KILL },
};

/* CapabilityBoundingSet= -> setpriv's "-all,+bpf,..." and the mask
 * /proc/PID/status must show. */
static int read_caps(void)
{
	_cleanup_free_ char *v = unit_value("CapabilityBoundingSet");
	char *save = NULL, *tok;
	size_t n;

	if (!v)
		return -1;
	n = (size_t)snprintf(fx.caps_arg, sizeof(fx.caps_arg), "-all");
	for (tok = strtok_r(v, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(caps); i++)
			if (strcmp(tok, caps[i].name) == 0)
				break;
		if (i == ARRAY_SIZE(caps)) {
			print_error("unit: capability %s unknown to this test\n", tok);
			return -1;
		}
		fx.cap_mask |= 1ULL << caps[i].cap;
		n += (size_t)snprintf(fx.caps_arg + n, sizeof(fx.caps_arg) - n, ",+");
		for (const char *c = tok + 4; *c && n + 1 < sizeof(fx.caps_arg); c++)
			fx.caps_arg[n++] = (char)tolower((unsigned char)*c); /* setpriv's names */
		fx.caps_arg[n] = 0;
	}
	return 0;
}

/* The unit line KEY=VALUE the launcher's flag stands for. */
static bool unit_says(const char *key, const char *value)
{
	_cleanup_free_ char *v = unit_value(key);

	return v && strcmp(v, value) == 0;
}

/* Copies the file at from to to with mode 0755; 0 or -errno. */
static int copy_program(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out, r = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			r = -EIO;
			break;
		}
	if (n < 0)
		r = -errno;
	close(in);
	if (close(out) < 0 && !r)
		r = -errno;
	return r;
}

/* The rest of the set-up, while the guest boots. */
static int setup_host(void)
{
	char cmd[512];
	_cleanup_free_ char *fam = NULL;
	_cleanup_free_ char *rtprio = NULL;
	struct th_proc sh = { 0 };

	snprintf(fx.probe_log, sizeof(fx.probe_log), "%s/probe.log", fx.d.dir);
	snprintf(fx.syscalls, sizeof(fx.syscalls), "%s/syscalls", fx.d.dir);
	snprintf(fx.rundir, sizeof(fx.rundir), "%s/run", fx.d.dir);
	snprintf(fx.statedir, sizeof(fx.statedir), "%s/state", fx.d.dir);
	if (mkdir(fx.rundir, 0700) < 0 || mkdir(fx.statedir, 0700) < 0)
		return -1;
	/* vmactd's control socket where the unit puts it (below), as the
	 * host sees it. */
	snprintf(fx.d.sock, sizeof(fx.d.sock), "%s/run/vmactd.sock", fx.d.dir);
	/* The programs too: the build directory may itself be under /tmp
	 * (or /root, /home), which the sandbox hides, as a checkout there
	 * would be from an installed vmactd. */
	{
		char from[PATH_MAX], to[PATH_MAX];

		snprintf(fx.bindir, sizeof(fx.bindir), "%s/bin", fx.d.dir);
		if (mkdir(fx.bindir, 0755) < 0)
			return -1;
		snprintf(from, sizeof(from), "%s/vmactd", plain_dir);
		snprintf(fx.d.prog, sizeof(fx.d.prog), "%s/vmactd", fx.bindir);
		if (copy_program(from, fx.d.prog) < 0)
			return fprintf(stderr, "cannot copy %s\n", from), -1;
		snprintf(from, sizeof(from), "%s/vmact-guestd", plain_dir);
		snprintf(to, sizeof(to), "%s/vmact-guestd", fx.bindir);
		if (copy_program(from, to) < 0)
			return fprintf(stderr, "cannot copy %s\n", from), -1;
		snprintf(from, sizeof(from), "%s/tests/sandbox/seccomp-exec", plain_dir);
		snprintf(to, sizeof(to), "%s/seccomp-exec", fx.bindir);
		if (copy_program(from, to) < 0)
			return fprintf(stderr, "cannot copy %s\n", from), -1;
	}
	/* Mount points for them (systemd creates these for the unit). */
	fx.made_run = mkdir("/run/vmact", 0700) == 0;
	fx.made_state = mkdir("/var/lib/vmact", 0700) == 0;

	/* What the unit says, as this test applies it. */
	if (read_caps() < 0)
		return -1;
	fam = unit_value("RestrictAddressFamilies");
	rtprio = unit_value("LimitRTPRIO");
	/* Not applied here: the unit must not say it (it would refuse the
	 * loop's SCHED_FIFO that LimitRTPRIO= allows). */
	if (unit_says("RestrictRealtime", "yes")) {
		print_error("unit: RestrictRealtime=yes, which this test does not apply\n");
		return -1;
	}
	if (!fam || !rtprio || !unit_says("NoNewPrivileges", "yes") ||
	    !unit_says("RestrictNamespaces", "yes") || !unit_says("LockPersonality", "yes") ||
	    !unit_says("MemoryDenyWriteExecute", "yes") ||
	    !unit_says("SystemCallArchitectures", "native") ||
	    !unit_says("ProtectSystem", "strict") ||
	    !unit_says("ReadWritePaths", "/sys/fs/cgroup /sys/fs/bpf") ||
	    !unit_says("PrivateTmp", "yes") || !unit_says("PrivateDevices", "yes") ||
	    !unit_says("ReadOnlyPaths", "/sys /proc/sys -/proc/sysrq-trigger") ||
	    !unit_says("ProtectHome", "yes") || !unit_says("ProtectKernelModules", "yes") ||
	    !unit_says("ProtectKernelLogs", "yes") || !unit_says("ProtectHostname", "yes") ||
	    !unit_says("PrivateMounts", "yes")) {
		print_error("unit: a restriction this test applies is not in " UNIT "\n");
		return -1;
	}
	snprintf(fx.families, sizeof(fx.families), "%s", fam);
	snprintf(fx.rtprio_arg, sizeof(fx.rtprio_arg), "--rtprio=%s", rtprio);
	{
		char v[64];

		fx.rtprio = th_proc_status(getpid(), "CapEff", v, sizeof(v)) &&
			    (strtoull(v, NULL, 16) >> CAP_SYS_RESOURCE & 1);
		if (!fx.rtprio)
			print_message("unit: LimitRTPRIO=%s not applied: this test's root has no "
				      "CAP_SYS_RESOURCE to raise the limit\n",
				      rtprio);
	}
	snprintf(cmd, sizeof(cmd), "tests/sandbox/unit-syscalls.sh " UNIT " > %s", fx.syscalls);
	{
		const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		const struct th_spawn_opts o = { .out = TH_OUT_INHERIT, .err = TH_OUT_INHERIT };

		if (th_spawn(&sh, argv, &o) < 0 || th_proc_wait(&sh) != 0) {
			print_error("tests/sandbox/unit-syscalls.sh failed\n");
			return -1;
		}
	}
	print_message("unit: capabilities %s, families %s, %u system calls\n", fx.caps_arg,
		      fx.families, th_count_in_file(fx.syscalls, "\n"));
	return 0;
}

static int setup(void **state)
{
	char msg[512], meta[1024];

	(void)state;
	if (th_vmactd_init_at(&fx.d, "/run", PREFIX, &fx.a) < 0 ||
	    th_vmactd_monitor(&fx.d, meta, sizeof(meta)) < 0)
		return -1;
	/* The guest first: it boots (TCG, seconds) while the rest is set up. */
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	fx.vc = virConnectOpen("qemu:///system");
	if (!fx.vc)
		return -1;
	if (tg_start(fx.vc, PREFIX, meta, &fx.a, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		return -1;
	}
	return setup_host();
}

static int teardown(void **state)
{
	(void)state;
	th_vmactd_teardown(&fx.d);
	if (fx.vc)
		virConnectClose(fx.vc);
	if (fx.made_run)
		rmdir("/run/vmact");
	if (fx.made_state)
		rmdir("/var/lib/vmact");
	return 0;
}

/* argv for PROGRAM under the unit's sandbox: the mount namespace, setpriv,
 * then the launcher. */
static void sandbox_argv(const char **argv, size_t cap, const char *const *prog, char *launcher,
			 size_t launcher_len)
{
	size_t n = 0;

	snprintf(launcher, launcher_len, "%s/seccomp-exec", fx.bindir);
	const char *pre[] = { "unshare",
			      "--mount",
			      "--uts",
			      "--",
			      "tests/sandbox/unit-mounts.sh",
			      fx.rundir,
			      fx.statedir,
			      "--",
			      "prlimit",
			      fx.rtprio ? fx.rtprio_arg : "--rtprio=0",
			      "--",
			      "setpriv",
			      "--bounding-set",
			      fx.caps_arg,
			      "--inh-caps",
			      "-all",
			      "--ambient-caps",
			      "-all",
			      "--no-new-privs",
			      "--",
			      launcher,
			      "--syscalls",
			      fx.syscalls,
			      "--families",
			      fx.families,
			      "--restrict-namespaces",
			      "--lock-personality",
			      "--mdwe" };

	for (size_t i = 0; i < ARRAY_SIZE(pre); i++)
		argv[n++] = pre[i];
	if (getenv("VMACT_SANDBOX_LOG_ONLY")) /* finding what vmactd needs */
		argv[n++] = "--log-only";
	for (; *prog && n + 1 < cap; prog++)
		argv[n++] = *prog;
	argv[n] = NULL;
}

/* Runs a probe of the launcher; its status, its output in probe_log. */
static int probe(const char *call, const char *arg)
{
	const char *prog[] = { "--probe", call, arg, NULL };
	const char *argv[40];
	char launcher[PATH_MAX];
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = fx.probe_log };
	struct th_proc p = { 0 };

	sandbox_argv(argv, ARRAY_SIZE(argv), prog, launcher, sizeof(launcher));
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	return th_proc_wait(&p);
}

static void filter_is_live(void **state)
{
	(void)state;
	/* Allowed: returns. */
	assert_int_equal(probe("getpid", "0"), 0);
	assert_int_equal(th_count_in_file(fx.probe_log, "probe getpid(0): "), 1);
	/* Not in the unit's list (@mount): killed, as systemd's default. */
	assert_int_equal(probe("mount", "0"), 128 + SIGSYS);
	/* bpf() is, though @privileged is taken away. */
	assert_int_equal(probe("bpf", "9999"), 0);
	assert_int_equal(th_count_in_file(fx.probe_log, "Bad system call"), 0);
	/* RestrictAddressFamilies=: AF_PACKET (17) refused, AF_NETLINK not. */
	assert_int_equal(probe("socket", "17"), 0);
	assert_int_equal(th_count_in_file(fx.probe_log, "errno 97 "), 1);
	/* RestrictNamespaces=: unshare(CLONE_NEWNET) refused. */
	assert_int_equal(probe("unshare", "0x40000000"), 0);
	assert_int_equal(th_count_in_file(fx.probe_log, "-1 errno 1 "), 1);
}

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_vmactd_wait(&fx.d, pred, arg, limit_s);
}

static long quota_milli(void)
{
	return TH_VMACTD_QUOTA_OR_FAIL(&fx.d);
}

static bool scaled_up(void *unused)
{
	struct tg_report r;

	return tg_report(&fx.a, &r) && r.cpus >= 2 && quota_milli() > 1000;
}

/* vmactd under the unit's sandbox with its defaults, but for the test's
 * isolation: its own VMs and pins (its /run/vmact and /var/lib/vmact are
 * the test's, above), and the sampler's mode (NULL: the default). */
static void start_daemon(const char *sampler_mode)
{
	static const char *const args[] = { "--verbose", NULL };
	const char *const prog[] = { "--", NULL };
	const char *argv[40];
	char launcher[PATH_MAX], prefix[64], extra[256];

	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	/* The control socket where it is by default, in the unit's
	 * RuntimeDirectory=: the fixture's directory is read-only there. */
	snprintf(extra, sizeof(extra),
		 "{\"control\":{\"socket\":\"/run/vmact/vmactd.sock\"}%s%s%s}",
		 sampler_mode ? ",\"sampler\":{\"mode\":\"" : "", sampler_mode ? sampler_mode : "",
		 sampler_mode ? "\"}" : "");
	assert_int_equal(th_vmactd_config(&fx.d, prefix, extra), 0);
	th_vmactd_stop(&fx.d); /* one a failed test before left running */
	sandbox_argv(argv, ARRAY_SIZE(argv), prog, launcher, sizeof(launcher));
	assert_int_equal(th_vmactd_spawn_under(&fx.d, argv, args), 0);
	if (!th_vmactd_wait_log(&fx.d, "ready: managing 1 VM", 120))
		fail_msg("vmactd in the sandbox did not become ready managing the guest");
}

/* The mount options of the mount at path in /proc/PID/mountinfo. */
static bool mount_opts(pid_t pid, const char *path, char *opts, size_t len)
{
	char file[64], line[1024];
	bool found = false;
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(file, sizeof(file), "/proc/%d/mountinfo", (int)pid);
	f = fopen(file, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char mp[512], o[256];

		/* id parent major:minor root mountpoint options ... */
		if (sscanf(line, "%*s %*s %*s %*s %511s %255s", mp, o) == 2 &&
		    strcmp(mp, path) == 0) {
			snprintf(opts, len, "%s", o); /* the last one stacked there wins */
			found = true;
		}
	}
	return found;
}

static bool opt_ro(const char *opts)
{
	return strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || !opts[2]);
}

/* ProtectSystem=strict and the rest, as vmactd sees its file system:
 * each path a mount of its own, read-only or writable where that is said. */
static void check_mounts(void)
{
	enum { ANY, RO, RW };
	static const struct {
		const char *path;
		int mode;
	} want[] = {
		{ "/", RO },           { "/sys", RO },       { "/sys/fs/cgroup", RW },
		{ "/sys/fs/bpf", RW }, { "/run/vmact", RW }, { "/var/lib/vmact", RW },
		{ "/tmp", ANY }, /* PrivateTmp */
		{ "/dev", ANY }, /* PrivateDevices */
		{ "/proc/sys", RO },
	};
	char o[256];

	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		if (!mount_opts(fx.d.proc.pid, want[i].path, o, sizeof(o)))
			fail_msg("vmactd has no mount of its own at %s", want[i].path);
		if (want[i].mode != ANY && opt_ro(o) != (want[i].mode == RO))
			fail_msg("vmactd's %s is mounted %s, not %s", want[i].path, o,
				 want[i].mode == RO ? "read-only" : "writable");
	}
}

/* Its capabilities, no_new_privs and filter, as the kernel shows them. */
static void check_confined(void)
{
	char v[64];
	unsigned long long eff, bnd, inh, amb;

	assert_true(th_proc_status(fx.d.proc.pid, "CapEff", v, sizeof(v)));
	eff = strtoull(v, NULL, 16);
	assert_true(th_proc_status(fx.d.proc.pid, "CapBnd", v, sizeof(v)));
	bnd = strtoull(v, NULL, 16);
	assert_true(th_proc_status(fx.d.proc.pid, "CapInh", v, sizeof(v)));
	inh = strtoull(v, NULL, 16);
	assert_true(th_proc_status(fx.d.proc.pid, "CapAmb", v, sizeof(v)));
	amb = strtoull(v, NULL, 16);
	print_message("vmactd: CapEff %016llx CapBnd %016llx (unit: %016llx)\n", eff, bnd,
		      (unsigned long long)fx.cap_mask);
	assert_int_equal(eff, fx.cap_mask);
	assert_int_equal(bnd, fx.cap_mask);
	assert_int_equal(inh, 0);
	assert_int_equal(amb, 0);
	assert_true(th_proc_status(fx.d.proc.pid, "NoNewPrivs", v, sizeof(v)));
	assert_string_equal(v, "1");
	assert_true(th_proc_status(fx.d.proc.pid, "Seccomp", v, sizeof(v)));
	assert_string_equal(v, "2"); /* a filter */
	check_mounts();
}

static bool monitor_connected(void *unused)
{
	char needle[160];

	(void)unused;
	snprintf(needle, sizeof(needle), "%s: vm-monitor connected", fx.a.name);
	return th_count_in_file(fx.d.log, needle) > 0;
}

/* The VM's guest worker (doc/privsep.md), started by the sandboxed vmactd
 * under the unit's bounding set, no_new_privs and system-call filter: it
 * reached the vm-monitor, runs as the workers' user with no capability
 * left in its effective and permitted sets, and added its own filter
 * (Seccomp 2 is inherited too; the connection shows it ran to the end of
 * its set-up, which loads the filter last). */
static void check_worker(void)
{
	struct passwd *pw = getpwnam("vmact");
	char v[160], uid[32];
	pid_t pid;

	if (!wait_until(monitor_connected, NULL, LIMIT_SCALE_S))
		fail_msg("the VM's vm-monitor never connected through a guest worker");
	pid = th_log_guest_worker(fx.d.log, fx.a.name);
	assert_true(pid > 0);
	if (!pw)
		pw = getpwnam("nobody");
	assert_non_null(pw);
	snprintf(uid, sizeof(uid), "%u", (unsigned)pw->pw_uid);
	assert_true(th_proc_status(pid, "Uid", v, sizeof(v)));
	assert_true(strncmp(v, uid, strlen(uid)) == 0 && (v[strlen(uid)] == '\t'));
	assert_true(th_proc_status(pid, "CapEff", v, sizeof(v)));
	assert_string_equal(v, "0000000000000000");
	assert_true(th_proc_status(pid, "CapPrm", v, sizeof(v)));
	assert_string_equal(v, "0000000000000000");
	assert_true(th_proc_status(pid, "NoNewPrivs", v, sizeof(v)));
	assert_string_equal(v, "1");
	assert_true(th_proc_status(pid, "Seccomp", v, sizeof(v)));
	assert_string_equal(v, "2");
	/* One worker all along: its "started" line and no death or restart. */
	snprintf(v, sizeof(v), "%s: guest worker ", fx.a.name);
	assert_int_equal(th_count_in_file(fx.d.log, v), 1);
	print_message("sandboxed vmactd: guest worker %d as %s, vm-monitor connected\n", (int)pid,
		      pw->pw_name);
}

static void stop_daemon(void)
{
	struct stat sb;
	int status = th_vmactd_stop(&fx.d);

	if (status != 0) {
		th_vmactd_dump_log(&fx.d);
		fail_msg("vmactd exited with status %d", status);
	}
	assert_int_equal(stat(fx.d.pins, &sb), -1);
	assert_int_equal(th_count_in_file(fx.d.log, "Operation not permitted"), 0);
}

static void sandboxed_vmactd_scales(void **state)
{
	(void)state;
	if (!wait_until(tg_booted, &fx.a, LIMIT_BOOT_S))
		fail_msg("the guest did not boot");
	start_daemon(NULL);
	check_confined();
	/* The BPF sampler, not the fallback; the kernel's watch, its loop
	 * waiting in SCHED_FIFO 1 within the unit's LimitRTPRIO=, or saying
	 * why not where that could not be applied. */
	assert_int_equal(th_count_in_file(fx.d.log, "sampler: BPF, maps pinned under"), 1);
	assert_int_equal(th_count_in_file(fx.d.log, "sampler: using taskstats"), 0);
	assert_int_equal(th_count_in_file(fx.d.log, fx.rtprio
							    ? "the loop waits for the watch's "
							      "windows in SCHED_FIFO at priority 1"
							    : "the loop waits in SCHED_OTHER (the "
							      "real-time class is not allowed"),
			 1);
	assert_true(th_vmactd_on_detection_path(&fx.d));
	assert_int_equal(quota_milli(), 1000);

	assert_int_equal(tg_cmd(&fx.a, "busy 2"), 0);
	if (!wait_until(scaled_up, NULL, LIMIT_SCALE_S))
		fail_msg("the guest never got a second vCPU and its quota");
	print_message("sandboxed vmactd: guest at 2+ vCPUs, quota %ldm\n", quota_milli());
	check_worker();
	assert_int_equal(tg_cmd(&fx.a, "idle"), 0);
	stop_daemon();
	if (getenv("VMACT_TEST_VERBOSE"))
		th_vmactd_dump_log(&fx.d);
}

/* The fallback sampler's netlink socket and CAP_NET_ADMIN: the busy VM's
 * load is read under the same sandbox (a 1-minute load of 1 or more in the
 * readings --verbose logs). */
static bool load_seen(void *unused)
{
	_cleanup_free_ char *buf = th_read_file(fx.d.log);
	char needle[128];
	double load1;

	snprintf(needle, sizeof(needle), "%s: load1 ", fx.a.name);
	for (char *p = buf; p && (p = strstr(p, needle)); p++)
		if (sscanf(p + strlen(needle), "%lf", &load1) == 1 && load1 >= 1.0)
			return true;
	return false;
}

static void sandboxed_taskstats(void **state)
{
	(void)state;
	/* Busy from the start: the sampler's load average starts at its first
	 * reading, instead of climbing from an idle one for most of a minute
	 * (what is shown is that it reads the load at all). */
	assert_int_equal(tg_cmd(&fx.a, "busy 2"), 0);
	start_daemon("taskstats");
	check_confined();
	assert_int_equal(th_count_in_file(fx.d.log, "sampler: using taskstats"), 1);
	if (!wait_until(load_seen, NULL, LIMIT_SCALE_S))
		fail_msg("the taskstats sampler never saw the guest's load");
	stop_daemon();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(filter_is_live),
		cmocka_unit_test(sandboxed_vmactd_scales),
		cmocka_unit_test(sandboxed_taskstats),
	};
	const char *env = getenv("VMACT_PLAIN_BUILD");
	char self[PATH_MAX], *dir;
	ssize_t n;
	size_t len;

	if (!th_root_test("test_sandbox", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	if (env) {
		snprintf(plain_dir, sizeof(plain_dir), "%s", env);
	} else {
		/* build[/san]/tests/integration/test_sandbox -> build/ */
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return 1;
		self[n] = '\0';
		dir = dirname(dirname(dirname(self)));
		len = strlen(dir);
		if (len >= 4 && strcmp(dir + len - 4, "/san") == 0)
			dir[len - 4] = '\0';
		snprintf(plain_dir, sizeof(plain_dir), "%s", dir);
	}
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("sandbox", tests, setup, teardown);
}
