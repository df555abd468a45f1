/* Unit tests: PAX extended headers in the strict tar reader (long names,
 * sizes, unknown and malformed records, global headers), an archive made
 * by Python's tarfile as the --out wrapper makes it, and the wrapper's
 * report of files it could not pack, parsed and unpacked into "files". */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/files.h"
#include "runner/outwrap.h"
#include "runner/tar.h"
#include "tests/runner/tar_build.h"
#include "tmpdir.h"

static unsigned char buf[256 * 1024];

/* Reads one entry of the stream [0..off) and returns runner_tar_next's
 * answer. */
static int
read_one(size_t off, struct tar_entry *e)
{
	struct tar_reader r;

	runner_tar_reader_init(&r, buf, off);
	return runner_tar_next(&r, e);
}

static void
test_pax_path_size(void **state)
{
	struct tar_reader r;
	struct tar_entry e;
	char name[200], r1[64], r2[200], r3[64], rec[64], recs[400];
	size_t off = 0;

	(void)state;
	memset(name, 'n', 150);
	name[150] = '\0';
	/* A 150-byte name, ignored records around it. */
	snprintf(recs, sizeof(recs), "%s%s%s",
	    pax_record(r1, sizeof(r1), "mtime", "1700000000.25"),
	    pax_record(r2, sizeof(r2), "path", name),
	    pax_record(r3, sizeof(r3), "hdrcharset", "BINARY"));
	put_pax(buf, &off, recs);
	put_entry(buf, &off, "short", '0', "hello", NULL);
	/* A size record replaces the header's. */
	put_pax(buf, &off, pax_record(rec, sizeof(rec), "size", "3"));
	put_raw(buf, &off, "sized", '0', "abcdef", 3, NULL);
	put_entry(buf, &off, "after", '0', "z", NULL);
	memset(buf + off, 0, 1024);
	runner_tar_reader_init(&r, buf, off + 1024);
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_string_equal(e.name, name);
	assert_int_equal(e.type, TAR_FILE);
	assert_int_equal(e.size, 5);
	assert_memory_equal(e.data, "hello", 5);
	assert_false(e.pax_unknown);
	assert_null(runner_tar_entry_refusal(&e));
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_string_equal(e.name, "sized");
	assert_int_equal(e.size, 3);
	assert_memory_equal(e.data, "abc", 3);
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_string_equal(e.name, "after");	/* PAX applies to one entry */
	assert_int_equal(runner_tar_next(&r, &e), 0);
	assert_int_equal(r.off, off);
}

/* A PAX path goes through the same refusal rules as a ustar name. */
static void
test_pax_refusals(void **state)
{
	static const struct { const char *path; char type; const char *why; }
	t[] = {
		{ "ok/long", '0', NULL },
		{ "../escape", '0', "'.' or '..' component" },
		{ "/etc/passwd", '0', "absolute path" },
		{ "a/../../b", '0', "'.' or '..' component" },
		{ "esc\x1b[2J", '0', "control character in name" },
		{ "a//b", '0', "empty path component" },
		{ "ln", '2', "link" },
		{ "fifo", '6', "not a regular file or directory" },
		{ "longname", 'L', "not a regular file or directory" },
	};
	struct tar_entry e;
	char rec[200];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *why;
		size_t off = 0;
		put_pax(buf, &off, pax_record(rec, sizeof(rec), "path",
		    t[i].path));
		put_entry(buf, &off, "harmless", t[i].type, NULL, NULL);
		assert_int_equal(read_one(off, &e), 1);
		assert_string_equal(e.name, t[i].path);
		why = runner_tar_entry_refusal(&e);
		if ((why == NULL) != (t[i].why == NULL) ||
		    (why != NULL && strcmp(why, t[i].why) != 0))
			fail_msg("%s: got %s, want %s", t[i].path,
			    why ? why : "(ok)", t[i].why ? t[i].why : "(ok)");
	}
}

/* Records this reader does not know refuse the entry (they might change
 * its meaning); a global header is an entry of its own, refused. */
static void
test_pax_unknown_global(void **state)
{
	struct tar_reader r;
	struct tar_entry e;
	char rec[200];
	size_t off = 0;

	(void)state;
	put_pax(buf, &off, pax_record(rec, sizeof(rec), "GNU.sparse.size",
	    "99"));
	put_entry(buf, &off, "sparse", '0', "x", NULL);
	put_raw(buf, &off, "pax_global_header", 'g', "9 path=x\n", 9, NULL);
	put_entry(buf, &off, "plain", '0', "y", NULL);
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_string_equal(e.name, "sparse");
	assert_true(e.pax_unknown);
	assert_string_equal(runner_tar_entry_refusal(&e),
	    "unsupported pax record");
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_int_equal(e.typeflag, 'g');
	assert_string_equal(runner_tar_entry_refusal(&e), "pax global header");
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_string_equal(e.name, "plain");
	assert_false(e.pax_unknown);
	assert_null(runner_tar_entry_refusal(&e));
}

static void
test_pax_malformed(void **state)
{
	static const struct { const char *records; int want; } t[] = {
		{ "", 1 },				/* empty: no records */
		{ "12 path=abc\n", 1 },
		{ "13 path=abc\n", -EBADMSG },		/* length too long */
		{ "11 path=abc\n", -EBADMSG },		/* too short */
		{ "12 path=abcX", -EBADMSG },		/* no newline */
		{ "x2 path=abc\n", -EBADMSG },
		{ "12path=abcd\n", -EBADMSG },		/* no space */
		{ "12 pathXabc\n", -EBADMSG },		/* no '=' */
		{ "9 =value\n", -EBADMSG },		/* empty key */
		{ "8 path=\n", -EBADMSG },		/* empty path */
		{ "12 path=a\0c\n", -EBADMSG },		/* NUL in path */
		{ "8 size=\n", -EBADMSG },
		{ "10 size=x\n", -EBADMSG },
		{ "10 size=-\n", -EBADMSG },
		{ "29 size=99999999999999999999\n", -EBADMSG },
		{ "99999999999 path=a\n", -EBADMSG },
		{ "12 path=abc\n9 path=", -EBADMSG },	/* cut record */
		{ "18 size=999999999\n", -EPIPE },	/* beyond the data */
	};
	struct tar_reader r;
	struct tar_entry e;
	size_t off;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t len = strlen(t[i].records);
		int got;
		if (i == 10)
			len = 12;	/* the one with a NUL inside */
		off = 0;
		put_raw(buf, &off, "././@PaxHeader", 'x', t[i].records, len,
		    NULL);
		put_entry(buf, &off, "f", '0', "data", NULL);
		runner_tar_reader_init(&r, buf, off);
		got = runner_tar_next(&r, &e);
		if (got != t[i].want)
			fail_msg("row %zu: got %d, want %d", i, got, t[i].want);
		/* The reader stays at the error. */
		if (got < 0)
			assert_int_equal(runner_tar_next(&r, &e), got);
	}
	/* An extended header must describe a following entry. */
	off = 0;
	put_pax(buf, &off, "12 path=abc\n");
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), -EBADMSG);
	memset(buf + off, 0, 1024);
	runner_tar_reader_init(&r, buf, off + 1024);
	assert_int_equal(runner_tar_next(&r, &e), -EBADMSG);
	off = 0;
	put_pax(buf, &off, "12 path=abc\n");
	put_pax(buf, &off, "12 path=def\n");
	put_entry(buf, &off, "f", '0', NULL, NULL);
	assert_int_equal(read_one(off, &e), -EBADMSG);
	off = 0;
	put_pax(buf, &off, "12 path=abc\n");
	put_raw(buf, &off, "g", 'g', NULL, 0, NULL);
	assert_int_equal(read_one(off, &e), -EBADMSG);
	/* Cut inside the entry after the extended header. */
	off = 0;
	put_pax(buf, &off, "12 path=abc\n");
	put_entry(buf, &off, "f", '0', "data", NULL);
	assert_int_equal(read_one(off - 512 - 100, &e), -EPIPE);
	/* Oversized extended header. */
	{
		static char big[TAR_PAX_MAX + 2];
		memset(big, 'c', sizeof(big) - 1);
		off = 0;
		put_raw(buf, &off, "././@PaxHeader", 'x', big,
		    sizeof(big) - 1, NULL);
		put_entry(buf, &off, "f", '0', NULL, NULL);
		assert_int_equal(read_one(off, &e), -EBADMSG);
	}
	/* A path as long as a name may be, and one byte longer. */
	{
		static char path[TAR_NAME_MAX + 1], recs[TAR_NAME_MAX + 32];
		memset(path, 'p', TAR_NAME_MAX - 1);
		path[TAR_NAME_MAX - 1] = '\0';
		off = 0;
		put_pax(buf, &off, pax_record(recs, sizeof(recs), "path",
		    path));
		put_entry(buf, &off, "f", '0', NULL, NULL);
		assert_int_equal(read_one(off, &e), 1);
		assert_int_equal(strlen(e.name), TAR_NAME_MAX - 1);
		path[TAR_NAME_MAX - 1] = 'p';
		path[TAR_NAME_MAX] = '\0';
		off = 0;
		put_pax(buf, &off, pax_record(recs, sizeof(recs), "path",
		    path));
		put_entry(buf, &off, "f", '0', NULL, NULL);
		assert_int_equal(read_one(off, &e), -EBADMSG);
	}
}

/* The stream Python's tarfile writes for the wrapper (PAX_FORMAT, whole
 * mtimes), kept as a fuzz seed: made by the same calls as outwrap.c. */
static void
test_python_archive(void **state)
{
	const char *root = getenv("CORDON_SOURCE_ROOT");
	char path[512], *data, longname[151], ddir[123], deep[300];
	const char *want[6];
	struct tar_reader r;
	struct tar_entry e;
	cJSON *rep;
	size_t len;

	(void)state;
	memset(longname, 'L', 150);
	longname[150] = '\0';
	memcpy(ddir, "d/", 2);
	memset(ddir + 2, 'D', 120);
	ddir[122] = '\0';
	snprintf(deep, sizeof(deep), "%s/%0150d", ddir, 0);
	memset(deep + 123, 'f', 150);
	want[0] = "d";
	want[1] = longname;
	want[2] = "small.txt";
	want[3] = ddir;
	want[4] = "d/caf\xc3\xa9.txt";	/* the ustar field says "d/caf?" */
	want[5] = deep;
	assert_non_null(root);
	snprintf(path, sizeof(path), "%s/runner/fuzz/corpus_tar/pax_python",
	    root);
	assert_int_equal(util_read_file(path, 1 << 20, &data, &len), 0);
	runner_tar_reader_init(&r, data, len);
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(runner_tar_next(&r, &e), 1);
		assert_null(runner_tar_entry_refusal(&e));
		assert_string_equal(e.name, want[i]);
	}
	assert_int_equal(runner_tar_next(&r, &e), 0);
	assert_int_equal(outwrap_report_parse(data + r.off, len - r.off, 10,
	    &rep), 0);
	assert_int_equal(cJSON_GetArraySize(rep), 2);
	cJSON_Delete(rep);
	free(data);
}

static void
test_report_parse(void **state)
{
	static const struct { const char *text; size_t max; int want; } t[] = {
		{ "CORDON-UNPACKED []\n", 0, 0 },
		{ "\0\0\0CORDON-UNPACKED []\n", 0, 0 },
		{ "CORDON-UNPACKED [{\"path\":\"a\",\"size\":1,\"why\":\"x\"}]\n",
		  1, 0 },
		{ "CORDON-UNPACKED [{\"path\":\"a\",\"size\":1,\"why\":\"x\"}]\n",
		  0, -E2BIG },
		{ "", 5, -ENOENT },
		{ "\0\0\0\0", 5, -ENOENT },
		{ "CORDON-UNPACKED [", 5, -ENOENT },	/* cut short */
		{ "CORDON-UNPACKED []", 5, -ENOENT },
		{ "CORDON-UNPACKED []\nX\n", 5, -EBADMSG },
		{ "CORDON-FORGED []\n", 5, -EBADMSG },
		{ "x CORDON-UNPACKED []\n", 5, -EBADMSG },
		{ "CORDON-UNPACKED {}\n", 5, -EBADMSG },
		{ "CORDON-UNPACKED [1]\n", 5, -EBADMSG },
		{ "CORDON-UNPACKED [\n", 5, -EBADMSG },
		{ "CORDON-UNPACKED [{\"path\":\"\",\"size\":1,\"why\":\"x\"}]\n",
		  5, -EBADMSG },
		{ "CORDON-UNPACKED [{\"path\":\"a\",\"size\":-1,\"why\":\"x\"}]\n",
		  5, -EBADMSG },
		{ "CORDON-UNPACKED [{\"path\":\"a\",\"size\":1.5,\"why\":\"x\"}]\n",
		  5, -EBADMSG },
		{ "CORDON-UNPACKED [{\"path\":\"a\",\"size\":1e300,\"why\":\"x\"}]"
		  "\n", 5, -EBADMSG },
		{ "CORDON-UNPACKED [{\"path\":\"a\",\"size\":\"1\",\"why\":\"x\"}]"
		  "\n", 5, -EBADMSG },
		{ "CORDON-UNPACKED [{\"path\":\"a\",\"size\":1}]\n", 5, -EBADMSG },
		{ "CORDON-UNPACKED [{\"path\":7,\"size\":1,\"why\":\"x\"}]\n", 5,
		  -EBADMSG },
	};
	cJSON *arr;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t len = strlen(t[i].text);
		int got;
		if (i == 1)
			len = 3 + 19;
		if (i == 5)
			len = 4;
		got = outwrap_report_parse(t[i].text, len, t[i].max, &arr);
		if (got != t[i].want)
			fail_msg("row %zu: got %d, want %d", i, got, t[i].want);
		assert_true((got == 0) == (arr != NULL));
		cJSON_Delete(arr);
	}
	assert_string_equal(outwrap_report_reason("unreadable"),
	    "could not be read in the sandbox");
	assert_string_equal(outwrap_report_reason("unlistable"),
	    "directory could not be listed in the sandbox");
	assert_string_equal(outwrap_report_reason("vanished"),
	    "vanished before it was packed");
	assert_string_equal(outwrap_report_reason("unsupported"),
	    "not a regular file or directory");
	assert_string_equal(outwrap_report_reason("\x1b[2J anything"),
	    "could not be packed in the sandbox");
}

/* Unpacking: a long PAX name is written, and the report's files are
 * listed after the archive's, with mapped reasons; a missing or bad
 * report is said in files_error. */
static void
test_unpack_report(void **state)
{
	struct runner_result res = { 0 };
	struct config c;
	char path[512], name[160], rec[300], *data;
	size_t off = 0, len;

	(void)state;
	config_defaults(&c);
	memset(name, 'q', 150);
	name[150] = '\0';
	put_pax(buf, &off, pax_record(rec, sizeof(rec), "path", name));
	put_entry(buf, &off, "ignored", '0', "long", NULL);
	memset(buf + off, 0, 1024);
	off += 1024;
	off += (size_t)sprintf((char *)buf + off, "CORDON-UNPACKED ["
	    "{\"path\":\"secret.txt\",\"size\":7,\"why\":\"unreadable\"},"
	    "{\"path\":\"x\\u001b\",\"size\":0,\"why\":\"?\"}]\n");
	snprintf(path, sizeof(path), "%s/out", tmpdir);
	assert_int_equal(files_unpack_out(&c, buf, off, path, &res), 0);
	assert_string_equal(res.files_error, "");
	assert_int_equal(res.nfiles, 3);
	assert_string_equal(res.files[0].path, name);
	assert_null(res.files[0].refused);
	assert_string_equal(res.files[1].path, "secret.txt");
	assert_int_equal(res.files[1].size, 7);
	assert_string_equal(res.files[1].refused,
	    "could not be read in the sandbox");
	assert_string_equal(res.files[2].path, "x\x1b");
	assert_string_equal(res.files[2].refused,
	    "could not be packed in the sandbox");
	snprintf(path, sizeof(path), "%s/out/%s", tmpdir, name);
	assert_int_equal(util_read_file(path, 100, &data, &len), 0);
	assert_string_equal(data, "long");
	free(data);
	runner_result_cleanup(&res);
	/* No report after a complete archive. */
	off = 0;
	put_entry(buf, &off, "n1", '0', "a", NULL);
	memset(buf + off, 0, 1024);
	off += 1024;
	snprintf(path, sizeof(path), "%s/out2", tmpdir);
	assert_int_equal(files_unpack_out(&c, buf, off, path, &res), 0);
	assert_int_equal(res.nfiles, 1);
	assert_string_equal(res.files_error, "no report of the files the "
	    "sandbox could not pack (output cap?)");
	runner_result_cleanup(&res);
	/* A malformed one, and one over the file count limit. */
	off += (size_t)sprintf((char *)buf + off, "CORDON-UNPACKED [1]\n");
	snprintf(path, sizeof(path), "%s/out3", tmpdir);
	assert_int_equal(files_unpack_out(&c, buf, off, path, &res), 0);
	assert_string_equal(res.files_error, "the report of files the "
	    "sandbox could not pack was malformed");
	runner_result_cleanup(&res);
	off -= strlen("CORDON-UNPACKED [1]\n");
	off += (size_t)sprintf((char *)buf + off, "CORDON-UNPACKED ["
	    "{\"path\":\"a\",\"size\":0,\"why\":\"x\"},"
	    "{\"path\":\"b\",\"size\":0,\"why\":\"x\"}]\n");
	c.limits.out_max_files = 1;
	snprintf(path, sizeof(path), "%s/out4", tmpdir);
	assert_int_equal(files_unpack_out(&c, buf, off, path, &res), 0);
	assert_int_equal(res.nfiles, 1);
	assert_string_equal(res.files_error, "the sandbox could not pack "
	    "more files than the file count limit");
	runner_result_cleanup(&res);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pax_path_size),
		cmocka_unit_test(test_pax_refusals),
		cmocka_unit_test(test_pax_unknown_global),
		cmocka_unit_test(test_pax_malformed),
		cmocka_unit_test(test_python_archive),
		cmocka_unit_test(test_report_parse),
		cmocka_unit_test_setup_teardown(test_unpack_report,
		    tmpdir_setup, tmpdir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
