/* SPDX-License-Identifier: Apache-2.0 */
#include "base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static const char *log_ident = "vmact";
static int log_max = LOG_INFO;
static bool log_journal;

void vmact_log_init(const char *ident, int max_priority)
{
	log_ident = ident;
	log_max = max_priority;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

void vmact_log(int priority, const char *fmt, ...)
{
	static const char *const tags[] = {
		[LOG_EMERG] = "emergency: ",
		[LOG_ALERT] = "alert: ",
		[LOG_CRIT] = "critical: ",
		[LOG_ERR] = "error: ",
		[LOG_WARNING] = "warning: ",
		[LOG_NOTICE] = "",
		[LOG_INFO] = "",
		[LOG_DEBUG] = "debug: ",
	};
	char line[2048];
	va_list ap;

	if (priority > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_journal)
		fprintf(stderr, "<%d>%s\n", priority, line);
	else
		fprintf(stderr, "%s: %s%s\n", log_ident, tags[priority & 7], line);
}
