/* SPDX-License-Identifier: Apache-2.0 */
/* What libbpf says when the kernel refuses a program: a load failure's
 * warning comes with the verifier's log, whose last line is the reason.
 * Read here so that a refusal names the program and that reason, not only
 * an errno ("Invalid argument"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* text: one message of libbpf's print callback, formatted. When it is a
 * program's load log ("prog 'NAME': -- BEGIN PROG LOAD LOG --\n...-- END
 * PROG LOAD LOG --"), writes "prog 'NAME': the verifier: LAST LINE" to out
 * and returns true; else false and out is untouched. */
bool smp_libbpf_log_reason(const char *text, char *out, size_t len);
