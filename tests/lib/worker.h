/* SPDX-License-Identifier: Apache-2.0 */
/* The guest workers (doc/privsep.md) as the kernel shows them, for the
 * tests of vmactd's side (cmocka). */
#pragma once

#include <sys/types.h>

/* Fails the test unless worker pid runs with no_new_privs and seccomp
 * mode 2, and, the test being root, as the workers' user (vmact, else
 * nobody) with no effective or permitted capability. */
void th_check_worker_sandbox(pid_t pid);
