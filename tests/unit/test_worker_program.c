/* SPDX-License-Identifier: Apache-2.0 */
/* Where vmactd finds vmact-guestd when guest_worker.program is "": an
 * installed vmactd (PREFIX/sbin) in PREFIX/libexec/vmact, where make install
 * and the package put it; a build tree's beside vmactd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator/worker/worker.h"
#include "base/error.h"

struct tree {
	char root[64];
	char sbin[96];
	char libexec[128];
	char guestd[160];
};

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	snprintf(t->root, sizeof(t->root), "/tmp/vmact-worker-XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->sbin, sizeof(t->sbin), "%s/sbin", t->root);
	snprintf(t->libexec, sizeof(t->libexec), "%s/libexec", t->root);
	assert_int_equal(mkdir(t->sbin, 0755), 0);
	assert_int_equal(mkdir(t->libexec, 0755), 0);
	strcat(t->libexec, "/vmact");
	assert_int_equal(mkdir(t->libexec, 0755), 0);
	snprintf(t->guestd, sizeof(t->guestd), "%s/vmact-guestd", t->libexec);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;

	unlink(t->guestd);
	rmdir(t->libexec);
	*strrchr(t->libexec, '/') = 0;
	rmdir(t->libexec);
	rmdir(t->sbin);
	rmdir(t->root);
	free(t);
	return 0;
}

static void make_file(const char *path, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_installed_in_libexec(void **state)
{
	struct tree *t = *state;
	struct vmact_err err = { 0 };
	char buf[PATH_MAX];

	make_file(t->guestd, 0755);
	assert_int_equal(act_worker_program_near(t->sbin, buf, sizeof(buf), &err), 0);
	/* the real path: no "sbin/.." in what vmactd execs and logs */
	assert_string_equal(buf, t->guestd);
}

static void test_build_tree_beside(void **state)
{
	struct tree *t = *state;
	struct vmact_err err = { 0 };
	char buf[PATH_MAX], want[PATH_MAX];

	snprintf(want, sizeof(want), "%s/vmact-guestd", t->sbin);
	assert_int_equal(act_worker_program_near(t->sbin, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, want);
	/* one there that cannot run is not taken */
	make_file(t->guestd, 0644);
	assert_int_equal(act_worker_program_near(t->sbin, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, want);
}

static void test_too_long(void **state)
{
	struct tree *t = *state;
	struct vmact_err err = { 0 };
	char buf[16];

	assert_int_equal(act_worker_program_near(t->sbin, buf, sizeof(buf), &err), -ENAMETOOLONG);
	make_file(t->guestd, 0755);
	assert_int_equal(act_worker_program_near(t->sbin, buf, sizeof(buf), &err), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_installed_in_libexec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build_tree_beside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_long, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
