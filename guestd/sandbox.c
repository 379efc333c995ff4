/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-guestd's sandbox (sandbox.h, doc/privsep.md). */
#include "guestd/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/macro.h"

int act_sandbox_drop_privileges(bool change, uid_t uid, gid_t gid, struct vmact_err *err)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	/* The bounding set needs CAP_SETPCAP to shrink: vmactd.service does
	 * not give it, and with no_new_privs and no root uid nothing in it
	 * can be gained back; dropped where possible. */
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EPERM && errno != EINVAL)
			return vmact_err_set(err, errno, "PR_CAPBSET_DROP: %s", strerror(errno));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return vmact_err_set(err, errno, "PR_CAP_AMBIENT: %s", strerror(errno));
	if (change) {
		if (setgroups(0, NULL) < 0)
			return vmact_err_set(err, errno, "setgroups: %s", strerror(errno));
		if (setresgid(gid, gid, gid) < 0)
			return vmact_err_set(err, errno, "setresgid %u: %s", (unsigned)gid,
					     strerror(errno));
		/* Leaving uid 0 clears the permitted and effective sets. */
		if (setresuid(uid, uid, uid) < 0)
			return vmact_err_set(err, errno, "setresuid %u: %s", (unsigned)uid,
					     strerror(errno));
		if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 || ru != uid ||
		    eu != uid || su != uid || rg != gid || eg != gid || sg != gid)
			return vmact_err_set(err, EPERM, "the user did not change");
		if (setresuid(0, 0, 0) == 0)
			return vmact_err_set(err, EPERM, "root could be regained");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return vmact_err_set(err, errno, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	/* No core dump with the guest's bytes; no ptrace by the other
	 * workers, which run as the same user. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return vmact_err_set(err, errno, "PR_SET_DUMPABLE: %s", strerror(errno));
	if (syscall(SYS_capget, &h, d) < 0)
		return vmact_err_set(err, errno, "capget: %s", strerror(errno));
	if (change && (d[0].effective || d[1].effective || d[0].permitted || d[1].permitted))
		return vmact_err_set(err, EPERM, "capabilities left after the change of user");
	if (d[0].inheritable || d[1].inheritable) {
		memset(d, 0, sizeof(d));
		if (syscall(SYS_capset, &h, d) < 0)
			return vmact_err_set(err, errno, "capset: %s", strerror(errno));
	}
	if (chdir("/") < 0)
		return vmact_err_set(err, errno, "chdir /: %s", strerror(errno));
	return 0;
}

/* What the worker's loop, the websocket client, the informant's and the
 * metrics worker's HTTP client (libcurl on a socket vmactd dialled), the
 * informant's server (libmicrohttpd on a listening socket vmactd bound)
 * and malloc call. No socket(),
 * connect(), bind(), listen(), open() or exec: vmactd dials and listens
 * for it and it never opens a file. accept4 only takes a connection
 * from the listening socket vmactd gave it: it reaches nothing new.
 * sysinfo: glibc's qsort asks for the machine's memory once, the first
 * time it sorts more than 1 KiB (the exporter's 360 windows), to choose
 * where to merge; with libcurl's OpenSSL flavour OpenSSL's start-up had
 * sorted first, before the filter, which hid it. */
static const int allowed[] = {
	SCMP_SYS(read),
	SCMP_SYS(write),
	SCMP_SYS(readv),
	SCMP_SYS(writev),
	SCMP_SYS(close),
	SCMP_SYS(recvmsg),
	SCMP_SYS(sendmsg),
	SCMP_SYS(recvfrom),
	SCMP_SYS(sendto),
	SCMP_SYS(shutdown),
	SCMP_SYS(getsockopt),
	SCMP_SYS(setsockopt),
	SCMP_SYS(getsockname),
	SCMP_SYS(getpeername),
	SCMP_SYS(fcntl),
	SCMP_SYS(poll),
	SCMP_SYS(ppoll),
	SCMP_SYS(epoll_create1),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_pwait2),
	SCMP_SYS(timerfd_create),
	SCMP_SYS(timerfd_settime),
	SCMP_SYS(timerfd_gettime),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_getres),
	SCMP_SYS(gettimeofday),
	SCMP_SYS(nanosleep),
	SCMP_SYS(clock_nanosleep),
	SCMP_SYS(brk),
	SCMP_SYS(mmap),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(madvise),
	SCMP_SYS(futex),
	SCMP_SYS(getrandom),
	SCMP_SYS(getpid),
	SCMP_SYS(gettid),
	SCMP_SYS(getuid),
	SCMP_SYS(geteuid),
	SCMP_SYS(getgid),
	SCMP_SYS(getegid),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(restart_syscall),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
	SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
	SCMP_SYS(lseek),
	SCMP_SYS(sched_yield),
	SCMP_SYS(eventfd2),
	SCMP_SYS(pipe2),
	SCMP_SYS(sigaltstack),
	SCMP_SYS(accept4),
	SCMP_SYS(sysinfo),
};

int act_sandbox_seccomp(struct vmact_err *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int r = 0;

	if (!ctx)
		return vmact_err_set(err, ENOMEM, "seccomp_init failed");
	for (size_t i = 0; i < ARRAY_SIZE(allowed) && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* mprotect without PROT_EXEC: malloc grows its arenas with it; no
	 * executable memory. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* connect() is answered "in progress" without running: the worker
	 * connects nothing. libcurl 7.88 (Debian 12) calls it even on the
	 * socket vmactd connected, which its CURLOPT_SOCKOPTFUNCTION declared
	 * connected (fixed in curl 8.0); to curl the connection is then under
	 * way, and it waits for the socket to be writable and reads SO_ERROR
	 * as for its own (doc/privsep.md). */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINPROGRESS), SCMP_SYS(connect), 0);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0)
		return vmact_err_set(err, -r, "seccomp: %s", strerror(-r));
	return 0;
}
