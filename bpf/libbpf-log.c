/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/libbpf-log.h"

#include <stdio.h>
#include <string.h>

#define LOG_BEGIN "-- BEGIN PROG LOAD LOG --"
#define LOG_END   "-- END PROG LOAD LOG --"

bool smp_libbpf_log_reason(const char *text, char *out, size_t len)
{
	const char *begin = strstr(text, LOG_BEGIN);
	const char *end = begin ? strstr(begin, LOG_END) : NULL;
	const char *name = strstr(text, "prog '"), *line, *p;
	int name_len = 0;

	if (!end)
		return false;
	begin += strlen(LOG_BEGIN);
	if (name && name < begin) {
		const char *q = strchr(name + strlen("prog '"), '\'');

		if (q && q < begin)
			name_len = (int)(q - name + 1);
	}
	/* The last line with something on it: the verifier ends its log
	 * with the reason, then (newer kernels) a line of totals, which
	 * says nothing of why. */
	p = end;
	for (;;) {
		while (p > begin && (p[-1] == '\n' || p[-1] == ' '))
			p--;
		line = p;
		while (line > begin && line[-1] != '\n')
			line--;
		if (line >= p)
			return false;
		if (strncmp(line, "processed ", strlen("processed ")) &&
		    strncmp(line, "verification time ", strlen("verification time ")) &&
		    strncmp(line, "stack depth ", strlen("stack depth ")))
			break;
		p = line;
	}
	snprintf(out, len, "%.*s%sthe verifier: %.*s", name_len, name_len ? name : "",
		 name_len ? ": " : "", (int)(p - line), line);
	return true;
}
