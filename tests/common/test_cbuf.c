/* Unit tests for the capped buffer: the limit is never exceeded. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"

static void
test_append_within_limit(void **state)
{
	struct cbuf *b = cbuf_new(16);
	(void)state;
	assert_non_null(b);
	assert_int_equal(cbuf_append(b, "hello", 5), 5);
	assert_int_equal(cbuf_len(b), 5);
	assert_string_equal(cbuf_data(b), "hello");
	assert_false(cbuf_truncated(b));
	cbuf_free(b);
}

static void
test_refuses_past_limit(void **state)
{
	struct cbuf *b = cbuf_new(8);
	(void)state;
	assert_int_equal(cbuf_append(b, "0123456", 7), 7);
	assert_int_equal(cbuf_append(b, "789abc", 6), 1);
	assert_int_equal(cbuf_len(b), 8);
	assert_memory_equal(cbuf_data(b), "01234567", 8);
	assert_true(cbuf_truncated(b));
	assert_int_equal(cbuf_seen(b), 13);
	assert_int_equal(cbuf_append(b, "x", 1), 0);
	assert_int_equal(cbuf_seen(b), 14);
	assert_int_equal(cbuf_len(b), 8);
	assert_int_equal(cbuf_append_str(b, "y"), -ENOSPC);
	cbuf_free(b);
}

static void
test_zero_limit(void **state)
{
	struct cbuf *b = cbuf_new(0);
	(void)state;
	assert_int_equal(cbuf_append(b, "abc", 3), 0);
	assert_int_equal(cbuf_len(b), 0);
	assert_string_equal(cbuf_data(b), "");
	assert_true(cbuf_truncated(b));
	cbuf_free(b);
}

static void
test_large_flood_stays_capped(void **state)
{
	char chunk[4096];
	struct cbuf *b = cbuf_new(100000);
	(void)state;
	memset(chunk, 'a', sizeof(chunk));
	for (int i = 0; i < 1000; i++)
		assert_true(cbuf_append(b, chunk, sizeof(chunk)) >= 0);
	assert_int_equal(cbuf_len(b), 100000);
	assert_int_equal(cbuf_seen(b), 4096000ULL);
	cbuf_free(b);
}

static void
test_reset_and_steal(void **state)
{
	struct cbuf *b = cbuf_new(4);
	size_t n = 99;
	char *s;
	(void)state;
	cbuf_append(b, "abcdef", 6);
	cbuf_reset(b);
	assert_int_equal(cbuf_len(b), 0);
	assert_false(cbuf_truncated(b));
	cbuf_append(b, "xy", 2);
	s = cbuf_steal(b, &n);
	assert_int_equal(n, 2);
	assert_string_equal(s, "xy");
	assert_int_equal(cbuf_len(b), 0);
	free(s);
	cbuf_free(b);
	cbuf_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_within_limit),
		cmocka_unit_test(test_refuses_past_limit),
		cmocka_unit_test(test_zero_limit),
		cmocka_unit_test(test_large_flood_stays_capped),
		cmocka_unit_test(test_reset_and_steal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
