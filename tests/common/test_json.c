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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_sanitize),
		cmocka_unit_test(test_sanitized_bytes_make_valid_json),
		cmocka_unit_test(test_strict_getters),
		cmocka_unit_test(test_get_keep),
		cmocka_unit_test(test_parse_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
