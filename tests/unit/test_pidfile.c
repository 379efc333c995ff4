/* SPDX-License-Identifier: Apache-2.0 */
/* base/pidfile: the one QEMU pid-file reader, table-driven. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/pidfile.h"

struct pf_case {
	const char *name;
	const char *content; /* NULL: no file at all */
	size_t len;          /* 0: strlen(content) */
	int rc;
	pid_t pid;
	const char *msg; /* substring of the error */
};

static const struct pf_case cases[] = {
	{ "plain", "1234", 0, 0, 1234, NULL },
	{ "newline", "1234\n", 0, 0, 1234, NULL },
	{ "largest", "2147483647\n", 0, 0, 2147483647, NULL },
	{ "missing file", NULL, 0, -ENOENT, 0, "No such file" },
	{ "empty", "", 0, -EPROTO, 0, "empty" },
	{ "only a newline", "\n", 0, -EPROTO, 0, "empty" },
	{ "garbage", "12ab\n", 0, -EPROTO, 0, "\"12ab\" is not a pid" },
	{ "words", "qemu\n", 0, -EPROTO, 0, "is not a pid" },
	{ "two lines", "12\n34\n", 0, -EPROTO, 0, "is not a pid" },
	{ "two newlines", "12\n\n", 0, -EPROTO, 0, "is not a pid" },
	{ "leading space", " 12\n", 0, -EPROTO, 0, "is not a pid" },
	{ "plus sign", "+12\n", 0, -EPROTO, 0, "is not a pid" },
	{ "negative", "-5\n", 0, -EPROTO, 0, "\"-5\" is not a pid" },
	{ "zero", "0\n", 0, -EPROTO, 0, "\"0\" is not a pid" },
	{ "huge", "99999999999\n", 0, -EPROTO, 0, "is not a pid" },
	{ "above pid_t", "2147483648\n", 0, -EPROTO, 0, "is not a pid" },
	{ "embedded NUL", "12\0003\n", 5, -EPROTO, 0, "is not a pid" },
	{ "longer than a pid file", "1234567890123456789012345678901234567890\n", 0, -EPROTO, 0,
	  "longer than" },
};

static void pidfile_table(void **state)
{
	char dir[] = "/tmp/vmact-pidfile-XXXXXX", path[PATH_MAX];

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vm.pid", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pf_case *c = &cases[i];
		struct vmact_err err = { 0 };
		pid_t pid = -1;
		int r;

		unlink(path);
		if (c->content) {
			FILE *f = fopen(path, "we");

			assert_non_null(f);
			fwrite(c->content, 1, c->len ? c->len : strlen(c->content), f);
			fclose(f);
		}
		r = vmact_pidfile_read(path, &pid, &err);
		if (r != c->rc)
			fail_msg("%s: rc %d, want %d (%s)", c->name, r, c->rc, err.msg);
		if (c->rc == 0) {
			assert_int_equal(pid, c->pid);
			continue;
		}
		assert_int_equal(pid, -1); /* untouched on error */
		if (!strstr(err.msg, c->msg) || !strstr(err.msg, path))
			fail_msg("%s: message '%s' lacks '%s' or the path", c->name, err.msg,
				 c->msg);
	}
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pidfile_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
