/* SPDX-License-Identifier: Apache-2.0 */
/* seccomp-exec: loads the system-call filter vmactd.service describes, then
 * execs a program under it (test_sandbox runs vmactd so; doc/reliability.md, "Sandbox").
 * PID 1 is not systemd on the test hosts, so this stands in for what
 * systemd would load from the unit:
 *
 *   --syscalls FILE     the allow list, one name a line (tests/sandbox/unit-syscalls.sh
 *                       expands the unit's SystemCallFilter= lines); any
 *                       other call kills the process, systemd's default
 *                       action (no SystemCallErrorNumber=);
 *   --families "AF_.."  RestrictAddressFamilies=: socket() of another
 *                       family fails with EAFNOSUPPORT, as under systemd;
 *   --restrict-namespaces  RestrictNamespaces=yes: clone()/unshare() with a
 *                       CLONE_NEW* flag and setns() fail with EPERM, clone3()
 *                       with ENOSYS (its flags are behind a pointer, so
 *                       glibc falls back to clone(), as under systemd);
 *   --lock-personality  LockPersonality=yes: personality() cannot change it;
 *   --mdwe              MemoryDenyWriteExecute=yes, by the kernel's own
 *                       PR_SET_MDWE (Linux 6.3), kept across execve;
 *   --log-only          calls outside the list are allowed and logged by the
 *                       kernel's audit (dmesg: "type=1326 ... syscall=N"),
 *                       to find what a program needs (test_sandbox passes
 *                       it when VMACT_SANDBOX_LOG_ONLY is set);
 *   --probe NAME [ARG]  instead of a program: call NAME(ARG, 0, ...) under
 *                       the filter and print what it returned (the test's
 *                       proof that the filter is live: a forbidden call
 *                       kills the probe with SIGSYS).
 *
 * no_new_privs must already be set (setpriv --no-new-privs) unless the
 * caller has CAP_SYS_ADMIN; the filter is loaded with it set anyway. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seccomp.h>

#include "base/macro.h"

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#endif
#ifndef PR_MDWE_REFUSE_EXEC_GAIN
#define PR_MDWE_REFUSE_EXEC_GAIN 1UL
#endif

#define CLONE_NEW_ALL                                                                             \
	((uint64_t)(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
		    CLONE_NEWPID | CLONE_NEWNET))

DEFINE_PTR_CLEANUP(sx_ctx_releasep, void, seccomp_release)

static const struct {
	const char *name;
	int family;
} sx_families[] = {
	{ "AF_UNIX", AF_UNIX },       { "AF_INET", AF_INET },     { "AF_INET6", AF_INET6 },
	{ "AF_NETLINK", AF_NETLINK }, { "AF_PACKET", AF_PACKET },
};

static int sx_family(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(sx_families); i++)
		if (strcmp(sx_families[i].name, name) == 0)
			return sx_families[i].family;
	return -1;
}

static int sx_nr(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	return nr == __NR_SCMP_ERROR ? -1 : nr;
}

/* Every name of the list this libseccomp knows; names it does not know
 * (calls newer than it) are reported and skipped: the kernel then has
 * them killed, the stricter side. */
static int sx_allow_file(scmp_filter_ctx ctx, const char *path, bool restrict_ns, bool lock_pers,
			 bool families)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[128];
	unsigned n = 0;

	if (!f) {
		fprintf(stderr, "seccomp-exec: %s: %m\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		int nr, r;

		line[strcspn(line, "\r\n")] = 0;
		if (!line[0])
			continue;
		nr = seccomp_syscall_resolve_name(line);
		if (nr == __NR_SCMP_ERROR) {
			fprintf(stderr, "seccomp-exec: libseccomp does not know %s: left out\n",
				line);
			continue;
		}
		if (nr < 0) /* a call of another architecture (mmap2, ...) */
			continue;
		/* These get their rules below. */
		if ((restrict_ns && (nr == sx_nr("clone") || nr == sx_nr("clone3") ||
				     nr == sx_nr("unshare") || nr == sx_nr("setns"))) ||
		    (lock_pers && nr == sx_nr("personality")) ||
		    (families && nr == sx_nr("socket")))
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (r < 0 && r != -EEXIST) {
			fprintf(stderr, "seccomp-exec: allow %s: %s\n", line, strerror(-r));
			return -1;
		}
		n++;
	}
	fprintf(stderr, "seccomp-exec: %u system calls allowed\n", n);
	return 0;
}

static bool sx_listed(const char *path, const char *name)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[128];

	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (strcmp(line, name) == 0)
			return true;
	}
	return false;
}

/* RestrictAddressFamilies=: socket(F, ...) allowed for the listed F, fails
 * with EAFNOSUPPORT for every other one. */
static int sx_families_rules(scmp_filter_ctx ctx, const char *list)
{
	bool allowed[AF_MAX + 1] = { false };
	char buf[256], *save = NULL, *tok;
	int nr = sx_nr("socket"), r;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
		int fam = sx_family(tok);

		if (fam < 0) {
			fprintf(stderr, "seccomp-exec: unknown address family %s\n", tok);
			return -1;
		}
		allowed[fam] = true;
	}
	for (int fam = 0; fam <= AF_MAX; fam++) {
		r = seccomp_rule_add(ctx,
				     allowed[fam] ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EAFNOSUPPORT),
				     nr, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam));
		if (r < 0)
			return r;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
				SCMP_A0(SCMP_CMP_GT, (scmp_datum_t)AF_MAX));
}

/* RestrictNamespaces=yes: no new namespace, no joining one. */
static int sx_namespace_rules(scmp_filter_ctx ctx, const char *allow_path)
{
	int r;

	if (sx_listed(allow_path, "clone") &&
	    ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sx_nr("clone"), 1,
				   SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEW_ALL, 0))) < 0 ||
	     (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sx_nr("clone"), 1,
				   SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEW_ALL, CLONE_NEW_ALL))) < 0))
		return r;
	if (sx_listed(allow_path, "unshare") &&
	    ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sx_nr("unshare"), 1,
				   SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEW_ALL, 0))) < 0 ||
	     (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sx_nr("unshare"), 1,
				   SCMP_A0(SCMP_CMP_GT, 0))) < 0))
		return r;
	if (sx_listed(allow_path, "clone3") &&
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), sx_nr("clone3"), 0)) < 0)
		return r;
	if (sx_listed(allow_path, "setns") &&
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sx_nr("setns"), 0)) < 0)
		return r;
	return 0;
}

/* LockPersonality=yes: personality() may only set the personality already
 * in force; anything else fails with EPERM. */
static int sx_personality_rules(scmp_filter_ctx ctx)
{
	int cur = personality(0xffffffff), r;

	if (cur < 0)
		return -errno;
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sx_nr("personality"), 1,
				  SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)cur))) < 0)
		return r;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sx_nr("personality"), 1,
				SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)cur));
}

static void sx_usage(void)
{
	fprintf(stderr, "usage: seccomp-exec --syscalls FILE [--families LIST] "
			"[--restrict-namespaces] [--lock-personality] [--mdwe] [--log-only] "
			"(-- PROGRAM [ARG...] | --probe NAME [ARG])\n");
}

int main(int argc, char **argv)
{
	_cleanup_(sx_ctx_releasep) void *ctx = NULL;
	const char *syscalls = NULL, *families = NULL, *probe = NULL;
	unsigned long probe_arg = 0;
	bool restrict_ns = false, lock_pers = false, mdwe = false, log_only = false;
	int i, r;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "--syscalls") == 0 && i + 1 < argc) {
			syscalls = argv[++i];
		} else if (strcmp(argv[i], "--families") == 0 && i + 1 < argc) {
			families = argv[++i];
		} else if (strcmp(argv[i], "--restrict-namespaces") == 0) {
			restrict_ns = true;
		} else if (strcmp(argv[i], "--lock-personality") == 0) {
			lock_pers = true;
		} else if (strcmp(argv[i], "--log-only") == 0) {
			log_only = true;
		} else if (strcmp(argv[i], "--mdwe") == 0) {
			mdwe = true;
		} else if (strcmp(argv[i], "--probe") == 0 && i + 1 < argc) {
			probe = argv[++i];
			if (i + 1 < argc)
				probe_arg = strtoul(argv[++i], NULL, 0);
			i++;
			break;
		} else {
			sx_usage();
			return 2;
		}
	}
	if (!syscalls || (!probe && i >= argc)) {
		sx_usage();
		return 2;
	}

	ctx = seccomp_init(log_only ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS);
	if (!ctx) {
		fprintf(stderr, "seccomp-exec: seccomp_init failed\n");
		return 1;
	}
	/* SystemCallArchitectures=native: libseccomp's filter holds only the
	 * native architecture and kills calls of any other ABI. */
	if (sx_allow_file(ctx, syscalls, restrict_ns, lock_pers, families != NULL) < 0)
		return 1;
	if ((families && (r = sx_families_rules(ctx, families)) < 0) ||
	    (restrict_ns && (r = sx_namespace_rules(ctx, syscalls)) < 0) ||
	    (lock_pers && (r = sx_personality_rules(ctx)) < 0)) {
		fprintf(stderr, "seccomp-exec: rules: %s\n", strerror(-r));
		return 1;
	}
	if (mdwe && prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0L, 0L, 0L) < 0) {
		fprintf(stderr, "seccomp-exec: PR_SET_MDWE: %m\n");
		return 1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0) {
		fprintf(stderr, "seccomp-exec: PR_SET_NO_NEW_PRIVS: %m\n");
		return 1;
	}
	r = seccomp_load(ctx);
	if (r < 0) {
		fprintf(stderr, "seccomp-exec: seccomp_load: %s\n", strerror(-r));
		return 1;
	}
	if (probe) {
		int nr = sx_nr(probe);
		long ret;

		if (nr < 0) {
			fprintf(stderr, "seccomp-exec: unknown call %s\n", probe);
			return 2;
		}
		errno = 0;
		ret = syscall(nr, probe_arg, 0UL, 0UL, 0UL, 0UL, 0UL);
		printf("probe %s(%lu): %ld errno %d (%s)\n", probe, probe_arg, ret, errno,
		       ret < 0 ? strerror(errno) : "ok");
		return 0;
	}
	execv(argv[i], argv + i);
	fprintf(stderr, "seccomp-exec: %s: %m\n", argv[i]);
	return 127;
}
