/* SPDX-License-Identifier: Apache-2.0 */
/* base/buf: a peer's answer kept up to its bound, never beyond. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <string.h>

#include "base/buf.h"
#include "base/macro.h"

static void test_appends_within_bound(void **state)
{
	_cleanup_(vmact_buf_free) struct vmact_buf b = { .max = 8 };

	assert_int_equal(vmact_buf_write((char *)"abc", 1, 3, &b), 3);
	assert_int_equal(vmact_buf_write((char *)"defgh", 5, 1, &b), 5);
	assert_int_equal(b.len, 8);
	assert_string_equal(b.data, "abcdefgh");
	assert_false(b.too_big);
}

static void test_beyond_bound_cut_off(void **state)
{
	_cleanup_(vmact_buf_free) struct vmact_buf b = { .max = 8 };

	assert_true(vmact_buf_append(&b, "abcdef", 6));
	/* 3 more would make 9: refused whole, the first 6 kept as they were */
	assert_int_equal(vmact_buf_write((char *)"ghi", 1, 3, &b), 0);
	assert_true(b.too_big);
	assert_int_equal(b.len, 6);
	assert_string_equal(b.data, "abcdef");
	/* a length that would wrap around is refused too */
	assert_false(vmact_buf_append(&b, "x", SIZE_MAX));
	assert_int_equal(vmact_buf_write((char *)"x", SIZE_MAX / 2, 3, &b), 0);
	assert_int_equal(b.len, 6);
}

static void test_empty_answer(void **state)
{
	_cleanup_(vmact_buf_free) struct vmact_buf b = { .max = 4 };

	assert_null(b.data);
	assert_true(vmact_buf_append(&b, "", 0));
	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	vmact_buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_appends_within_bound),
		cmocka_unit_test(test_beyond_bound_cut_off),
		cmocka_unit_test(test_empty_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
