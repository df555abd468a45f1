/* Unit tests for the shared helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

static void
test_parse_size(void **state)
{
	static const struct { const char *in; int rc; uint64_t v; } rows[] = {
		{ "0", 0, 0 }, { "1024", 0, 1024 }, { "64m", 0, 64ULL << 20 },
		{ "64M", 0, 64ULL << 20 }, { "1g", 0, 1ULL << 30 },
		{ "512k", 0, 512 << 10 }, { "2mb", 0, 2ULL << 20 },
		{ "", -EINVAL, 0 }, { "m", -EINVAL, 0 }, { "-1", -EINVAL, 0 },
		{ "12x", -EINVAL, 0 }, { "1 m", -EINVAL, 0 },
		{ "99999999999999999999", -ERANGE, 0 },
		{ "17179869184g", -ERANGE, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t v = 12345;
		int rc = util_parse_size(rows[i].in, &v);
		assert_int_equal(rc, rows[i].rc);
		if (rc == 0)
			assert_int_equal(v, rows[i].v);
		else
			assert_int_equal(v, 12345);
	}
}

static void
test_parse_i64(void **state)
{
	int64_t v = 0;
	(void)state;
	assert_int_equal(util_parse_i64("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(util_parse_i64("-3", -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(util_parse_i64("101", 0, 100, &v), -ERANGE);
	assert_int_equal(util_parse_i64("4x", 0, 100, &v), -EINVAL);
	assert_int_equal(util_parse_i64(" 4", 0, 100, &v), -EINVAL);
	assert_int_equal(util_parse_i64("", 0, 100, &v), -EINVAL);
}

/* The one port parser of the proxy and the allowlist (issue 20): each
 * port has one spelling. */
static void
test_port_parse(void **state)
{
	static const struct {
		const char *s;
		int rc;
		uint16_t port;
	} rows[] = {
		{ "443", 0, 443 }, { "1", 0, 1 }, { "80", 0, 80 },
		{ "65535", 0, 65535 }, { "8080", 0, 8080 }, { "10", 0, 10 },
		{ "0443", -EDOM, 0 }, { "00443", -EDOM, 0 },
		{ "000443", -EDOM, 0 }, { "00", -EDOM, 0 }, { "01", -EDOM, 0 },
		{ "065536", -EDOM, 0 },
		{ "0", -ERANGE, 0 }, { "65536", -ERANGE, 0 },
		{ "99999", -ERANGE, 0 }, { "4294967297", -ERANGE, 0 },
		{ "99999999999999999999999999", -ERANGE, 0 },
		{ "", -EINVAL, 0 }, { "+443", -EINVAL, 0 }, { "-1", -EINVAL, 0 },
		{ " 443", -EINVAL, 0 }, { "443 ", -EINVAL, 0 },
		{ "0x1bb", -EINVAL, 0 }, { "44 3", -EINVAL, 0 },
		{ "443a", -EINVAL, 0 },
		{ "\xd9\xa3", -EINVAL, 0 },	/* an Arabic-Indic digit */
	};
	uint16_t port;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		port = 7;
		if (util_port_parse(rows[i].s, strlen(rows[i].s), &port) !=
		    rows[i].rc)
			fail_msg("'%s': want %d", rows[i].s, rows[i].rc);
		assert_int_equal(port, rows[i].rc == 0 ? rows[i].port : 7);
	}
	/* The length bounds it: "4431" read as its first three bytes; a NUL
	 * inside is a byte like any other. */
	assert_int_equal(util_port_parse("4431", 3, &port), 0);
	assert_int_equal(port, 443);
	assert_int_equal(util_port_parse("4\0" "43", 4, &port), -EINVAL);
}

static void
test_random_hex(void **state)
{
	char a[33], b[33];
	(void)state;
	assert_int_equal(util_random_hex(a, 16), 0);
	assert_int_equal(util_random_hex(b, 16), 0);
	assert_int_equal(strlen(a), 32);
	assert_int_equal(strspn(a, "0123456789abcdef"), 32);
	assert_string_not_equal(a, b);
	assert_int_equal(util_random_hex(a, 65), -EINVAL);
}

static void
test_files(void **state)
{
	char dir[] = "/tmp/cordon-util-XXXXXX";
	char path[256], *data = NULL;
	size_t len = 0;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	assert_int_equal(util_mkdir_p(path, 0700), 0);
	assert_int_equal(util_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/a/b/c/f", dir);
	assert_int_equal(util_write_file_atomic(path, "hello", 5, 0600), 0);
	assert_int_equal(util_read_file(path, 100, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(data, "hello");
	free(data);
	assert_int_equal(util_read_file(path, 4, &data, &len), -EFBIG);
	assert_null(data);
	snprintf(path, sizeof(path), "%s/a/link", dir);
	assert_int_equal(symlink("/etc", path), 0);
	assert_int_equal(util_rm_rf(dir), 0);
	{
		struct stat st;
		assert_int_equal(stat("/etc/hostname", &st) == 0 ||
		    stat("/etc/passwd", &st) == 0, 1);
		assert_int_equal(lstat(dir, &st), -1);
	}
	assert_int_equal(util_rm_rf(dir), 0);
}

static void
test_strlcpy_and_time(void **state)
{
	char buf[4], ts[32];
	(void)state;
	assert_true(util_strlcpy(buf, "abc", sizeof(buf)));
	assert_false(util_strlcpy(buf, "abcd", sizeof(buf)));
	assert_string_equal(buf, "abc");
	time_format_utc(0, ts);
	assert_string_equal(ts, "1970-01-01T00:00:00.000Z");
	time_format_utc(1764413460123LL, ts);
	assert_string_equal(ts, "2025-11-29T10:51:00.123Z");
	assert_true(time_mono_ms() > 0);
}

/* The published FNV-1a (32-bit) vectors, and the lowercasing variant
 * agreeing with them on the lowercased text; every hex digit and its
 * neighbours. */
static void
test_fnv1a_and_hexval(void **state)
{
	static const char hex[] = "0123456789abcdef";
	(void)state;
	assert_int_equal(util_fnv1a("", 0), 0x811c9dc5u);
	assert_int_equal(util_fnv1a("a", 1), 0xe40c292cu);
	assert_int_equal(util_fnv1a("foobar", 6), 0xbf9cf968u);
	assert_int_equal(util_fnv1a_lower(""), 0x811c9dc5u);
	assert_int_equal(util_fnv1a_lower("FooBar"), 0xbf9cf968u);
	assert_int_equal(util_fnv1a_lower("a.EXAMPLE"),
	    util_fnv1a("a.example", 9));
	assert_int_not_equal(util_fnv1a_lower("[@"), util_fnv1a_lower("{`"));
	for (int i = 0; i < 16; i++) {
		assert_int_equal(util_hexval(hex[i]), i);
		assert_int_equal(util_hexval((char)(hex[i] >= 'a' ?
		    hex[i] - 32 : hex[i])), i);
	}
	assert_int_equal(util_hexval('/'), -1);
	assert_int_equal(util_hexval(':'), -1);
	assert_int_equal(util_hexval('@'), -1);
	assert_int_equal(util_hexval('G'), -1);
	assert_int_equal(util_hexval('`'), -1);
	assert_int_equal(util_hexval('g'), -1);
	assert_int_equal(util_hexval('\0'), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_i64),
		cmocka_unit_test(test_port_parse),
		cmocka_unit_test(test_random_hex),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_strlcpy_and_time),
		cmocka_unit_test(test_fnv1a_and_hexval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
