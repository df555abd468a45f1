/* Unit tests for log formatting and level parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "common/log.h"

static int
fmt(char *buf, size_t len, enum log_level lvl, int err, const char *f, ...)
    LOG_PRINTF(5, 6);

static int
fmt(char *buf, size_t len, enum log_level lvl, int err, const char *f, ...)
{
	va_list ap;
	int n;
	va_start(ap, f);
	n = log_format(buf, len, lvl, err, f, ap);
	va_end(ap);
	return n;
}

static void
test_format(void **state)
{
	char buf[128];
	(void)state;
	log_init("/usr/bin/cordon-test", LOG_LEVEL_INFO);
	fmt(buf, sizeof(buf), LOG_LEVEL_WARN, 0, "x=%d", 42);
	assert_string_equal(buf, "cordon-test: warn: x=42");
	fmt(buf, sizeof(buf), LOG_LEVEL_ERROR, ENOENT, "open %s", "f");
	assert_string_equal(buf, "cordon-test: error: open f: No such file or directory");
	/* Truncation never overruns. */
	fmt(buf, 10, LOG_LEVEL_INFO, 0, "%s", "0123456789abcdef");
	assert_int_equal(strlen(buf), 9);
}

static void
test_levels(void **state)
{
	enum log_level l = LOG_LEVEL_ERROR;
	(void)state;
	assert_int_equal(log_level_parse("debug", &l), 0);
	assert_int_equal(l, LOG_LEVEL_DEBUG);
	assert_int_equal(log_level_parse("loud", &l), -EINVAL);
	assert_int_equal(l, LOG_LEVEL_DEBUG);
	log_set_level(LOG_LEVEL_ERROR);
	assert_int_equal(log_get_level(), LOG_LEVEL_ERROR);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_levels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
