/* SPDX-License-Identifier: Apache-2.0 */
/* base/list.h: every VMACT_LIST_* and VMACT_QUEUE_* macro, checked by
 * walking the links both ways after each change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/list.h"

struct item {
	int v;
	VMACT_LIST_FIELDS(struct item, it);
};

/* Asserts that the list from head holds exactly want[0..n) in order, with
 * the back links matching the forward ones. */
static void check(struct item *head, const int *want, size_t n)
{
	struct item *i, *prev = NULL;
	size_t k = 0;

	VMACT_LIST_FOREACH(it, i, head) {
		assert_true(k < n);
		assert_int_equal(i->v, want[k]);
		assert_ptr_equal(i->it_prev, prev);
		prev = i;
		k++;
	}
	assert_int_equal(k, n);
	assert_int_equal(VMACT_LIST_IS_EMPTY(head), n == 0);
}

static void list_prepend_append_remove(void **state)
{
	struct item a = { .v = 1 }, b = { .v = 2 }, c = { .v = 3 }, d = { .v = 4 };
	struct item *head = NULL;

	(void)state;
	VMACT_LIST_INIT(it, &a);
	assert_null(a.it_next);
	assert_null(a.it_prev);
	check(head, NULL, 0);

	VMACT_LIST_APPEND(it, head, &b);
	check(head, (int[]){ 2 }, 1);
	VMACT_LIST_PREPEND(it, head, &a);
	check(head, (int[]){ 1, 2 }, 2);
	VMACT_LIST_APPEND(it, head, &c);
	VMACT_LIST_APPEND(it, head, &d);
	check(head, (int[]){ 1, 2, 3, 4 }, 4);

	/* Middle, head, tail, last. */
	VMACT_LIST_REMOVE(it, head, &b);
	assert_null(b.it_next);
	assert_null(b.it_prev);
	check(head, (int[]){ 1, 3, 4 }, 3);
	VMACT_LIST_REMOVE(it, head, &a);
	check(head, (int[]){ 3, 4 }, 2);
	VMACT_LIST_REMOVE(it, head, &d);
	check(head, (int[]){ 3 }, 1);
	VMACT_LIST_REMOVE(it, head, &c);
	check(head, NULL, 0);

	/* Prepending to an empty list. */
	VMACT_LIST_PREPEND(it, head, &d);
	check(head, (int[]){ 4 }, 1);
}

static void list_foreach_safe_removes(void **state)
{
	struct item items[6];
	struct item *head = NULL, *i, *n;

	(void)state;
	for (int k = 0; k < 6; k++) {
		items[k].v = k;
		VMACT_LIST_APPEND(it, head, &items[k]);
	}
	/* Removing the current item inside the loop: the odd ones go. */
	VMACT_LIST_FOREACH_SAFE(it, i, n, head) {
		if (i->v % 2)
			VMACT_LIST_REMOVE(it, head, i);
	}
	check(head, (int[]){ 0, 2, 4 }, 3);
	VMACT_LIST_FOREACH_SAFE(it, i, n, head)
		VMACT_LIST_REMOVE(it, head, i);
	check(head, NULL, 0);
}

static void queue_order_and_count(void **state)
{
	struct item a = { .v = 1 }, b = { .v = 2 }, c = { .v = 3 };
	VMACT_QUEUE(struct item) q = { 0 };

	(void)state;
	check(q.head, NULL, 0);
	assert_null(q.tail);

	VMACT_QUEUE_APPEND(it, q, &a);
	assert_ptr_equal(q.tail, &a);
	VMACT_QUEUE_APPEND(it, q, &b);
	VMACT_QUEUE_APPEND(it, q, &c);
	check(q.head, (int[]){ 1, 2, 3 }, 3);
	assert_ptr_equal(q.tail, &c);
	assert_int_equal(q.n, 3);

	/* Moving the head to the back, as a keep-alive request does. */
	VMACT_QUEUE_REMOVE(it, q, &a);
	VMACT_QUEUE_APPEND(it, q, &a);
	check(q.head, (int[]){ 2, 3, 1 }, 3);
	assert_ptr_equal(q.tail, &a);

	/* The tail: the one before it becomes the tail. */
	VMACT_QUEUE_REMOVE(it, q, &a);
	assert_ptr_equal(q.tail, &c);
	assert_int_equal(q.n, 2);
	/* The middle is not there now; the head. */
	VMACT_QUEUE_REMOVE(it, q, &b);
	check(q.head, (int[]){ 3 }, 1);
	assert_ptr_equal(q.tail, &c);
	VMACT_QUEUE_REMOVE(it, q, &c);
	check(q.head, NULL, 0);
	assert_null(q.tail);
	assert_int_equal(q.n, 0);

	/* Usable again once empty; a middle removal keeps the tail. */
	VMACT_QUEUE_APPEND(it, q, &b);
	VMACT_QUEUE_APPEND(it, q, &a);
	VMACT_QUEUE_APPEND(it, q, &c);
	VMACT_QUEUE_REMOVE(it, q, &a);
	check(q.head, (int[]){ 2, 3 }, 2);
	assert_ptr_equal(q.tail, &c);
	assert_int_equal(q.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(list_prepend_append_remove),
		cmocka_unit_test(list_foreach_safe_removes),
		cmocka_unit_test(queue_order_and_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
