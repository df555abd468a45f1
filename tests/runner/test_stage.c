/* Unit tests for the one check of a request's `files` (runner/stage.h),
 * shared by MCP (text content) and the service (base64 content): a table
 * of arrays and the outcome and message each must get, strict base64, the
 * safe-path rule, and a staged round trip. */
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

#include "common/config.h"
#include "common/util.h"
#include "runner/stage.h"

#define T STAGE_CONTENT_TEXT
#define B STAGE_CONTENT_BASE64
#define UNSAFE(i) "'files'[" i "]: unsafe path (a relative path of " \
	"printable ASCII, no '..', '.' or empty components, at most 255 bytes)"

static struct config cfg;

static int
setup(void **state)
{
	(void)state;
	config_defaults(&cfg);
	cfg.limits.in_max_bytes = 16;
	cfg.limits.in_max_files = 3;
	return 0;
}

static void
test_files_parse(void **state)
{
	static const struct {
		enum stage_content how;
		const char *json;
		int rc;
		const char *msg;	/* "" when rc is 0 */
		size_t n;
	} rows[] = {
		{ T, "[]", 0, "", 0 },
		{ B, "[]", 0, "", 0 },
		{ T, "[{\"path\":\"a\",\"content\":\"x\"}]", 0, "", 1 },
		{ T, "[{\"content\":\"\",\"path\":\"d/e/f\"},"
		    "{\"path\":\"..a\",\"content\":\"\"}]", 0, "", 2 },
		{ B, "[{\"path\":\"a\",\"content_b64\":\"AAEC\"},"
		    "{\"path\":\"b\",\"content_b64\":\"\"}]", 0, "", 2 },
		/* Exactly at the caps. */
		{ T, "[{\"path\":\"a\",\"content\":\"0123456789abcdef\"}]", 0,
		    "", 1 },
		{ T, "[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"b\","
		    "\"content\":\"\"},{\"path\":\"c\",\"content\":\"\"}]", 0,
		    "", 3 },
		/* The array itself. */
		{ T, "{}", -EINVAL, "'files' must be an array", 0 },
		{ B, "\"a\"", -EINVAL, "'files' must be an array", 0 },
		{ T, "[{},{},{},{}]", -EINVAL, "'files': at most 3 entries (config "
		  "limits.in_max_files)",
		    0 },
		{ B, "[1,2,3,4]", -EINVAL, "'files': at most 3 entries (config "
		  "limits.in_max_files)", 0 },
		/* The shape of an entry, named by its index. */
		{ T, "[1]", -EINVAL, "'files'[0] must be an object with string "
		    "'path' and 'content'", 0 },
		{ B, "[1]", -EINVAL, "'files'[0] must be an object with string "
		    "'path' and 'content_b64'", 0 },
		{ T, "[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"b\"}]",
		    -EINVAL, "'files'[1] must be an object with string 'path' "
		    "and 'content'", 0 },
		{ T, "[{\"path\":\"a\",\"content\":1}]", -EINVAL, "'files'[0] "
		    "must be an object with string 'path' and 'content'", 0 },
		{ T, "[{\"path\":\"a\",\"content_b64\":\"\"}]", -EINVAL,
		    "'files'[0] must be an object with string 'path' and "
		    "'content'", 0 },
		{ B, "[{\"path\":\"a\",\"content\":\"x\"}]", -EINVAL,
		    "'files'[0] must be an object with string 'path' and "
		    "'content_b64'", 0 },
		{ T, "[{\"path\":\"a\",\"content\":\"\",\"mode\":\"4755\"}]",
		    -EINVAL, "'files'[0]: only 'path' and 'content' are "
		    "allowed", 0 },
		{ B, "[{\"path\":\"a\",\"content_b64\":\"\",\"mode\":1}]",
		    -EINVAL, "'files'[0]: only 'path' and 'content_b64' are "
		    "allowed", 0 },
		/* Paths. */
		{ T, "[{\"path\":\"../a\",\"content\":\"\"}]", -EINVAL,
		    UNSAFE("0"), 0 },
		{ B, "[{\"path\":\"/etc/x\",\"content_b64\":\"\"}]", -EINVAL,
		    UNSAFE("0"), 0 },
		{ T, "[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"a//b\","
		    "\"content\":\"\"}]", -EINVAL, UNSAFE("1"), 0 },
		{ B, "[{\"path\":\"a/../../x\",\"content_b64\":\"\"}]", -EINVAL,
		    UNSAFE("0"), 0 },
		{ T, "[{\"path\":\"\",\"content\":\"\"}]", -EINVAL,
		    UNSAFE("0"), 0 },
		/* Base64, for the service only: text is taken as is. */
		{ B, "[{\"path\":\"a\",\"content_b64\":\"YQ\"}]", -EINVAL,
		    "'files'[0]: 'content_b64' is not canonical base64", 0 },
		{ B, "[{\"path\":\"a\",\"content_b64\":\"\"},{\"path\":\"b\","
		    "\"content_b64\":\"Y Q==\"}]", -EINVAL, "'files'[1]: "
		    "'content_b64' is not canonical base64", 0 },
		{ T, "[{\"path\":\"a\",\"content\":\"YQ\"}]", 0, "", 1 },
		/* The byte cap counts decoded bytes, over all entries. */
		{ B, "[{\"path\":\"a\",\"content_b64\":"
		    "\"AAAAAAAAAAAAAAAAAAAAAAAA\"}]", -EFBIG,
		    "'files': more than 16 bytes in total, the "
		    "maximum (config limits.in_max_bytes)", 0 },
		{ T, "[{\"path\":\"a\",\"content\":\"123456789\"},{\"path\":"
		    "\"b\",\"content\":\"12345678\"}]", -EFBIG,
		    "'files': more than 16 bytes in total, the "
		    "maximum (config limits.in_max_bytes)", 0 },
		{ B, "[{\"path\":\"a\",\"content_b64\":\"AAAAAAAAAAAAAAAA\"}]",
		    0, "", 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *j = cJSON_Parse(rows[i].json);
		static struct stage_file sentinel;
		struct stage_file *f = &sentinel;
		size_t n = 99;
		char err[256] = "";
		int rc;

		assert_non_null(j);
		rc = stage_files_parse(&cfg, j, rows[i].how, &f, &n, err,
		    sizeof(err));
		if (rc != rows[i].rc || strcmp(err, rows[i].msg) != 0 ||
		    n != rows[i].n)
			fail_msg("row %zu: rc %d n %zu '%s'", i, rc, n, err);
		if (n == 0)
			assert_null(f);
		for (size_t k = 0; k < n; k++)
			assert_true(stage_path_safe(f[k].path));
		stage_files_free(f, n);
		cJSON_Delete(j);
	}
}

/* What comes out: owned copies, decoded for base64. */
static void
test_files_copy(void **state)
{
	cJSON *j = cJSON_Parse("[{\"path\":\"d/x.bin\",\"content_b64\":"
	    "\"AAEC\"},{\"path\":\"y\",\"content_b64\":\"\"}]");
	struct stage_file *f;
	size_t n;
	char err[256];

	(void)state;
	assert_int_equal(stage_files_parse(&cfg, j, B, &f, &n, err,
	    sizeof(err)), 0);
	cJSON_Delete(j);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].path, "d/x.bin");
	assert_int_equal(f[0].len, 3);
	assert_memory_equal(f[0].data, "\0\1\2", 3);
	assert_string_equal(f[1].path, "y");
	assert_int_equal(f[1].len, 0);
	stage_files_free(f, n);

	j = cJSON_Parse("[{\"path\":\"a.csv\",\"content\":\"x,y\\n\"}]");
	assert_int_equal(stage_files_parse(&cfg, j, T, &f, &n, err,
	    sizeof(err)), 0);
	cJSON_Delete(j);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].path, "a.csv");
	assert_int_equal(f[0].len, 4);
	assert_memory_equal(f[0].data, "x,y\n", 4);
	stage_files_free(f, n);
	stage_files_free(NULL, 0);
}

static void
test_base64(void **state)
{
	static const struct { const char *in, *out; size_t len; } ok[] = {
		{ "", "", 0 }, { "Zg==", "f", 1 }, { "Zm8=", "fo", 2 },
		{ "Zm9v", "foo", 3 }, { "Zm9vYg==", "foob", 4 },
		{ "+/8=", "\xfb\xff", 2 },
	};
	static const char *const bad[] = {
		"Z", "Zg=", "Zg===", "Z===", "====", "Zh==", "Zm9=", "Zg==Zg==",
		"Zm9v\n", "Zm-v", "Zm_v", "=Zm9",
	};
	unsigned char *out;
	size_t len;
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(stage_base64_decode(ok[i].in, strlen(ok[i].in),
		    &out, &len), 0);
		assert_int_equal(len, ok[i].len);
		assert_memory_equal(out, ok[i].out, len);
		free(out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (stage_base64_decode(bad[i], strlen(bad[i]), &out, &len) !=
		    -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_null(out);
	}
}

static void
test_path_safe(void **state)
{
	static const struct {
		const char *path;
		bool ok;
	} p[] = {
		{ "a", true }, { "a.csv", true }, { "data/x.csv", true },
		{ "a b/c d.txt", true }, { "...", true }, { "..a", true },
		{ "a..", true }, { ".hidden", true }, { "-rf", true },
		{ "", false }, { "/", false }, { "/a", false }, { "a/", false },
		{ "a//b", false }, { ".", false }, { "..", false },
		{ "./a", false }, { "a/.", false }, { "../a", false },
		{ "a/..", false }, { "a/../b", false }, { "a\\b", false },
		{ "..\\a", false }, { "a\tb", false }, { "a\nb", false },
		{ "caf\xc3\xa9", false }, { "\x7f", false },
		{ "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p", true },	/* depth 16 */
		{ "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", false },
	};
	char longp[STAGE_PATH_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		print_message("path %zu: '%s'\n", i, p[i].path);
		assert_int_equal(stage_path_safe(p[i].path), p[i].ok);
	}
	memset(longp, 'x', sizeof(longp));
	longp[STAGE_PATH_MAX] = '\0';
	assert_true(stage_path_safe(longp));
	longp[STAGE_PATH_MAX] = 'x';
	longp[STAGE_PATH_MAX + 1] = '\0';
	assert_false(stage_path_safe(longp));
}

/* Parsed files staged and removed: one --in path per top-level name. */
static void
test_stage_write(void **state)
{
	cJSON *j = cJSON_Parse("[{\"path\":\"d/x\",\"content\":\"abc\"},"
	    "{\"path\":\"d/y\",\"content\":\"\"},{\"path\":\"z\","
	    "\"content\":\"z\"}]");
	struct stage_file *f;
	struct stage_dir st;
	char err[256] = "", path[PATH_MAX + 8], *data, dir[PATH_MAX];
	size_t n, len;
	struct stat sb;

	(void)state;
	assert_int_equal(stage_files_parse(&cfg, j, T, &f, &n, err,
	    sizeof(err)), 0);
	cJSON_Delete(j);
	assert_int_equal(stage_write("/tmp", "cordon-test", f, n, &st, err,
	    sizeof(err)), 0);
	stage_files_free(f, n);
	assert_int_equal(st.nin, 2);
	snprintf(path, sizeof(path), "%s/d/x", st.dir);
	assert_int_equal(util_read_file(path, 100, &data, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(data, "abc", 3);
	free(data);
	assert_string_equal(strrchr(st.in[0], '/'), "/d");
	assert_string_equal(strrchr(st.in[1], '/'), "/z");
	util_strlcpy(dir, st.dir, sizeof(dir));
	stage_dir_cleanup(&st);
	assert_int_equal(stat(dir, &sb), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_files_parse, setup),
		cmocka_unit_test_setup(test_files_copy, setup),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_path_safe),
		cmocka_unit_test_setup(test_stage_write, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
