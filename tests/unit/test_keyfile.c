/* SPDX-License-Identifier: Apache-2.0 */
/* shared/keyfile.c: secrets in files (the arbiter's lease key, a node
 * group's claim secret): refused when others may read or change them,
 * bounded, trailing line ends dropped. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shared/keyfile.h"

static char path[64];

static void put(const char *text, size_t len, mode_t mode)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_keyfile.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void lease_key(void **state)
{
	struct vmact_err err = { 0 };
	uint8_t *key = NULL;
	size_t len = 0;

	(void)state;
	put("0123456789abcdef\n\n", 18, 0600);
	assert_int_equal(vmact_keyfile_load(path, &key, &len, &err), 0);
	assert_int_equal(len, 16);
	assert_memory_equal(key, "0123456789abcdef", 16);
	free(key);
	put("short\n", 6, 0600);
	assert_int_equal(vmact_keyfile_load(path, &key, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shorter than 16 bytes"));
	vmact_err_reset(&err);
	put("0123456789abcdef", 16, 0644);
	assert_int_equal(vmact_keyfile_load(path, &key, &len, &err), -EPERM);
	assert_non_null(strstr(err.msg, "mode 0644 lets others read or change it"));
	vmact_err_reset(&err);
	put("0123456789abcdef", 16, 0620);
	assert_int_equal(vmact_keyfile_load(path, &key, &len, &err), -EPERM);
	vmact_err_reset(&err);
	/* Its group may read it (the arbiter's and vmact-cluster's). */
	put("0123456789abcdef", 16, 0640);
	assert_int_equal(vmact_keyfile_load(path, &key, &len, &err), 0);
	free(key);
}

/* A claim's secret: any size up to the bound, NUL-terminated. */
static void bounded_secret(void **state)
{
	struct vmact_err err = { 0 };
	char *big = malloc(40000);
	uint8_t *key = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(big);
	memset(big, 'k', 40000);
	put(big, 32768, 0600);
	assert_int_equal(vmact_keyfile_load_max(path, 32768, &key, &len, &err), 0);
	assert_int_equal(len, 32768);
	assert_int_equal(key[len], 0);
	free(key);
	put(big, 32769, 0600);
	assert_int_equal(vmact_keyfile_load_max(path, 32768, &key, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "longer than 32768 bytes"));
	vmact_err_reset(&err);
	put("x\n", 2, 0400);
	assert_int_equal(vmact_keyfile_load_max(path, 32768, &key, &len, &err), 0);
	assert_string_equal((char *)key, "x");
	free(key);
	put("\n", 1, 0600);
	assert_int_equal(vmact_keyfile_load_max(path, 32768, &key, &len, &err), -EINVAL);
	vmact_err_reset(&err);
	assert_int_equal(vmact_keyfile_load_max("/nonexistent/k", 10, &key, &len, &err), -ENOENT);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lease_key, setup, teardown),
		cmocka_unit_test_setup_teardown(bounded_secret, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
