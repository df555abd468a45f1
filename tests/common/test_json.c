/* Unit tests for JSON helpers: UTF-8 repair and strict field access. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/json.h"

#define FFFD "\xEF\xBF\xBD"

static void
check_sanitize(const char *in, size_t len, const char *want)
{
	size_t n = 0;
	char *s = json_utf8_sanitize(in, len, &n);
	assert_non_null(s);
	assert_string_equal(s, want);
	assert_int_equal(n, strlen(want));
	free(s);
}

static void
test_utf8_sanitize(void **state)
{
	(void)state;
	check_sanitize("plain", 5, "plain");
	check_sanitize("h\xC3\xA9llo", 6, "h\xC3\xA9llo");	/* valid 2-byte */
	check_sanitize("\xF0\x9F\x98\x80", 4, "\xF0\x9F\x98\x80");	/* emoji */
	check_sanitize("a\xFF" "b", 3, "a" FFFD "b");		/* invalid byte */
	check_sanitize("\xC0\xAF", 2, FFFD FFFD);		/* overlong '/' */
	check_sanitize("\xED\xA0\x80", 3, FFFD FFFD FFFD);	/* surrogate */
	check_sanitize("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD); /* > U+10FFFF */
	check_sanitize("\xE2\x82", 2, FFFD FFFD);		/* truncated */
	check_sanitize("a\0b", 3, "a" FFFD "b");		/* NUL */
	check_sanitize("", 0, "");
}

static void
test_sanitized_bytes_make_valid_json(void **state)
{
	unsigned char all[256];
	cJSON *o = cJSON_CreateObject(), *back;
	char *line;
	(void)state;
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	assert_int_equal(json_add_bytes(o, "stdout", all, sizeof(all)), 0);
	line = json_print_line(o);
	assert_non_null(line);
	assert_int_equal(line[strlen(line) - 1], '\n');
	back = cJSON_Parse(line);
	assert_non_null(back);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(back, "stdout")));
	cJSON_Delete(back);
	cJSON_Delete(o);
	free(line);
}

static void
test_strict_getters(void **state)
{
	cJSON *o = cJSON_Parse("{\"s\":\"x\",\"b\":true,\"i\":7,\"f\":1.5,"
	    "\"big\":1e30,\"o\":{},\"a\":[]}");
	const char *s = NULL;
	bool b = false;
	int64_t i = -1;
	const cJSON *sub = NULL;
	(void)state;
	assert_non_null(o);
	assert_int_equal(json_get_string(o, "s", &s), 0);
	assert_string_equal(s, "x");
	assert_int_equal(json_get_string(o, "b", &s), -EINVAL);
	assert_int_equal(json_get_string(o, "missing", &s), -ENOENT);
	assert_int_equal(json_get_bool(o, "b", &b), 0);
	assert_true(b);
	assert_int_equal(json_get_bool(o, "i", &b), -EINVAL);
	assert_int_equal(json_get_int(o, "i", 0, 10, &i), 0);
	assert_int_equal(i, 7);
	assert_int_equal(json_get_int(o, "i", 0, 5, &i), -EINVAL);
	assert_int_equal(json_get_int(o, "f", 0, 5, &i), -EINVAL);
	assert_int_equal(json_get_int(o, "big", 0, INT64_MAX, &i), -EINVAL);
	assert_int_equal(i, 7);
	assert_int_equal(json_get_object(o, "o", &sub), 0);
	assert_int_equal(json_get_object(o, "a", &sub), -EINVAL);
	assert_int_equal(json_get_array(o, "a", &sub), 0);
	assert_int_equal(json_get_string(NULL, "s", &s), -ENOENT);
	cJSON_Delete(o);
}

static void
test_get_keep(void **state)
{
	static const struct {
		const char *json;
		int rc;
		const char *name;	/* NULL: *out NULL */
	} t[] = {
		{ "{}", 0, NULL },
		{ "{\"keep\":\"head\"}", 0, "head" },
		{ "{\"keep\":\"tail\"}", 0, "tail" },
		{ "{\"keep\":\"both\"}", 0, "both" },
		{ "{\"keep\":\"Head\"}", -EINVAL, NULL },
		{ "{\"keep\":\"\"}", -EINVAL, NULL },
		{ "{\"keep\":\"head \"}", -EINVAL, NULL },
		{ "{\"keep\":1}", -EINVAL, NULL },
		{ "{\"keep\":null}", -EINVAL, NULL },
		{ "{\"keep\":[\"head\"]}", -EINVAL, NULL },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cJSON *o = cJSON_Parse(t[i].json);
		const char *out = "unset";

		assert_non_null(o);
		assert_int_equal(json_get_keep(o, "keep", &out), t[i].rc);
		if (t[i].name == NULL)
			assert_null(out);
		else
			assert_string_equal(out, t[i].name);
		cJSON_Delete(o);
	}
}

static void
test_parse_file(void **state)
{
	char path[] = "/tmp/cordon-json-XXXXXX";
	char err[256];
	cJSON *o = NULL;
	int fd = mkstemp(path);
	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\n\"a\": 1,\n oops\n}", 17), 17);
	close(fd);
	assert_int_equal(json_parse_file(path, 4096, &o, err, sizeof(err)), -EBADMSG);
	assert_null(o);
	assert_non_null(strstr(err, ":3: invalid JSON"));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{\"a\": 1}", 8), 8);
	close(fd);
	assert_int_equal(json_parse_file(path, 4096, &o, err, sizeof(err)), 0);
	assert_non_null(o);
	cJSON_Delete(o);
	assert_int_equal(json_parse_file(path, 4, &o, err, sizeof(err)), -EFBIG);
	unlink(path);
	assert_int_equal(json_parse_file(path, 4096, &o, err, sizeof(err)), -ENOENT);
}

/* json_scan: NULs that cJSON would cut a string at (raw, or escaped in
 * any case of hex digits, not an escaped backslash before "u0000"), the
 * top-level member that holds the first, and the value/depth bounds. */
static void
test_scan(void **state)
{
	static const struct {
		const char *text;
		size_t len;		/* 0: strlen */
		bool nul;
		const char *member;
		size_t values, depth;
	} rows[] = {
		{ "{\"code\":\"print(1)\"}", 0, false, "", 2, 1 },
		{ "{\"code\":\"print(1)\\u0000x\"}", 0, true, "code", 2, 1 },
		{ "{\"code\":\"a\\u0000\"}", 0, true, "code", 2, 1 },
		{ "{\"a\":1,\"b\":\"\\U0000\"}", 0, false, "", 3, 1 },
		{ "{\"a\":\"\\u000a\\u0000\"}", 0, true, "a", 2, 1 },
		{ "{\"a\":\"\\u00\"}", 0, false, "", 2, 1 },
		/* An escaped backslash, then the text u0000: no NUL. */
		{ "{\"a\":\"\\\\u0000\"}", 0, false, "", 2, 1 },
		{ "{\"a\":\"\\\\\\u0000\"}", 0, true, "a", 2, 1 },
		/* Deeper: the top-level member holding it. */
		{ "{\"id\":1,\"params\":{\"arguments\":{\"code\":"
		  "\"\\u0000\"}}}", 0, true, "params", 5, 3 },
		{ "{\"id\":\"a\\u0000b\",\"method\":\"ping\"}", 0, true,
		  "id", 3, 1 },
		/* In a name. */
		{ "{\"x\\u0000y\":1}", 0, true, "x\\u0000y", 2, 1 },
		/* Raw NUL bytes, in a string and outside. */
		{ "{\"a\":\"x\0y\"}", 11, true, "a", 2, 1 },
		{ "{\"a\":1}\0", 8, true, "", 2, 1 },
		/* Top-level array: no member. */
		{ "[\"\\u0000\"]", 0, true, "", 2, 1 },
		/* Structure inside strings does not count. */
		{ "{\"a\":\"{[,,,]}\"}", 0, false, "", 2, 1 },
		{ "[0,0,0,[0,[0]]]", 0, false, "", 8, 3 },
		{ "", 0, false, "", 1, 0 },
		/* Cut short inside a string or an escape. */
		{ "{\"a\":\"\\u00", 0, false, "", 2, 1 },
		{ "{\"a\":\"\\", 0, false, "", 2, 1 },
	};
	struct json_scan sc;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t len = rows[i].len ? rows[i].len : strlen(rows[i].text);

		json_scan(rows[i].text, len, &sc);
		if (sc.nul != rows[i].nul || strcmp(sc.nul_member,
		    rows[i].member) != 0 || sc.values != rows[i].values ||
		    sc.depth != rows[i].depth)
			fail_msg("row %zu: nul %d member '%s' values %zu depth "
			    "%zu", i, sc.nul, sc.nul_member, sc.values,
			    sc.depth);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_sanitize),
		cmocka_unit_test(test_sanitized_bytes_make_valid_json),
		cmocka_unit_test(test_strict_getters),
		cmocka_unit_test(test_get_keep),
		cmocka_unit_test(test_parse_file),
		cmocka_unit_test(test_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
