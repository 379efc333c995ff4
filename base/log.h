/* SPDX-License-Identifier: Apache-2.0 */
/* Logging for component boundaries (the daemon, the CLI, tools). Library
 * code returns errors instead of logging. Lines go to stderr; under systemd
 * (JOURNAL_STREAM set) they carry the <N> priority prefix that journald
 * understands, otherwise a readable "error:"/"warning:" tag. */
#pragma once

#include <syslog.h>

void vmact_log_init(const char *ident, int max_priority);
void vmact_log(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...)   vmact_log(LOG_ERR, __VA_ARGS__)
#define log_warning(...) vmact_log(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)  vmact_log(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)    vmact_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...)   vmact_log(LOG_DEBUG, __VA_ARGS__)
