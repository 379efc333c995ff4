/* SPDX-License-Identifier: Apache-2.0 */
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/proc.h"
#include "tests/lib/worker.h"

static void status_is(pid_t pid, const char *key, const char *want)
{
	char v[128];

	if (!th_proc_status(pid, key, v, sizeof(v)))
		fail_msg("worker %d: no %s in its /proc status", (int)pid, key);
	/* Uid and Gid list four ids: the first is enough here. */
	v[strcspn(v, "\t")] = 0;
	if (strcmp(v, want))
		fail_msg("worker %d: %s %s, not %s", (int)pid, key, v, want);
}

void th_check_worker_sandbox(pid_t pid)
{
	struct passwd *pw;
	char uid[16];

	status_is(pid, "NoNewPrivs", "1");
	status_is(pid, "Seccomp", "2");
	if (geteuid() != 0)
		return;
	pw = getpwnam("vmact");
	if (!pw)
		pw = getpwnam("nobody");
	assert_non_null(pw);
	snprintf(uid, sizeof(uid), "%u", (unsigned)pw->pw_uid);
	status_is(pid, "Uid", uid);
	status_is(pid, "CapEff", "0000000000000000");
	status_is(pid, "CapPrm", "0000000000000000");
}
