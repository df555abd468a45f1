/* Unit tests: the strict tar reader with hostile entries, the safe
 * unpacker (links in the way, limits), the --out marker split, and --in
 * staging refusals. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/files.h"
#include "runner/outwrap.h"
#include "runner/tar.h"
#include "tests/runner/tar_build.h"
#include "tmpdir.h"

static void
test_reader_plain(void **state)
{
	static unsigned char buf[8192];
	struct tar_reader r;
	struct tar_entry e;
	size_t off = 0;

	(void)state;
	put_entry(buf, &off, "dir", '5', NULL, NULL);
	put_entry(buf, &off, "dir/a.txt", '0', "hello", NULL);
	put_entry(buf, &off, "b.txt", '0', "x", "deep/er");
	memset(buf + off, 0, 1024);
	off += 1024;
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_int_equal(e.type, TAR_DIR);
	assert_null(runner_tar_entry_refusal(&e));
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_string_equal(e.name, "dir/a.txt");
	assert_int_equal(e.mode, 0644);
	assert_int_equal(e.size, 5);
	assert_memory_equal(e.data, "hello", 5);
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_string_equal(e.name, "deep/er/b.txt");
	assert_int_equal(runner_tar_next(&r, &e), 0);
}

static void
test_refusals(void **state)
{
	static const struct { const char *name; char type; const char *why; }
	t[] = {
		{ "ok.txt", '0', NULL },
		{ "./ok2.txt", '0', NULL },
		{ "..dots", '0', NULL },
		{ "sub/", '5', NULL },
		{ "/etc/passwd", '0', "absolute path" },
		{ ".//etc/cron.d/x", '0', "absolute path" },
		{ "././/etc/x", '0', "absolute path" },
		{ "..", '0', "'.' or '..' component" },
		{ "../escape", '0', "'.' or '..' component" },
		{ "a/../../b", '0', "'.' or '..' component" },
		{ "a/..", '5', "'.' or '..' component" },
		{ "a//b", '0', "empty path component" },
		{ "a/./b", '0', "'.' or '..' component" },
		{ "link", '2', "link" },
		{ "hard", '1', "link" },
		{ "chr", '3', "not a regular file or directory" },
		{ "blk", '4', "not a regular file or directory" },
		{ "fifo", '6', "not a regular file or directory" },
		{ "pax_global_header", 'g', "pax global header" },
		{ "longname", 'L', "not a regular file or directory" },
		{ "esc\x1b[2J", '0', "control character in name" },
		{ "./", '5', "empty name" },
		{ ".", '5', "empty name" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		static unsigned char buf[2048];
		struct tar_reader r;
		struct tar_entry e;
		const char *why;
		size_t off = 0;
		put_entry(buf, &off, t[i].name, t[i].type, NULL, NULL);
		runner_tar_reader_init(&r, buf, off);
		assert_int_equal(runner_tar_next(&r, &e), 1);
		why = runner_tar_entry_refusal(&e);
		if ((why == NULL) != (t[i].why == NULL) ||
		    (why != NULL && strcmp(why, t[i].why) != 0))
			fail_msg("%s: got %s, want %s", t[i].name,
			    why ? why : "(ok)", t[i].why ? t[i].why : "(ok)");
	}
}

/* The mode is reported, never judged: a bad one reads as -1 and the
 * entry is still read (the unpacker writes 0644 whatever it says). */
static void
test_mode_field(void **state)
{
	static unsigned char buf[2048];
	struct tar_reader r;
	struct tar_entry e;
	size_t off = 0;
	unsigned sum = 0;

	(void)state;
	put_entry(buf, &off, "s", '0', "x", NULL);
	memcpy(buf + 100, "0006755", 7);
	memset(buf + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += buf[i];
	snprintf((char *)buf + 148, 8, "%06o", sum);
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_int_equal(e.mode, 06755);
	memcpy(buf + 100, "00x6755", 7);
	sum = 0;
	memset(buf + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += buf[i];
	snprintf((char *)buf + 148, 8, "%06o", sum);
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), 1);
	assert_int_equal(e.mode, -1);
	assert_null(runner_tar_entry_refusal(&e));
}

static void
test_malformed(void **state)
{
	static unsigned char buf[4096];
	struct tar_reader r;
	struct tar_entry e;
	size_t off = 0;

	(void)state;
	/* Bad checksum. */
	put_entry(buf, &off, "a", '0', "data", NULL);
	buf[0] = 'b';
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), -EBADMSG);
	/* Cut short: header claims more data than there is. */
	off = 0;
	put_entry(buf, &off, "a", '0', "data", NULL);
	runner_tar_reader_init(&r, buf, 600);
	assert_int_equal(runner_tar_next(&r, &e), 1);	/* data fits in 600 */
	runner_tar_reader_init(&r, buf, 515);
	assert_int_equal(runner_tar_next(&r, &e), -EPIPE);
	runner_tar_reader_init(&r, buf, 100);
	assert_int_equal(runner_tar_next(&r, &e), -EPIPE);
	/* Huge size field. */
	off = 0;
	put_entry(buf, &off, "a", '0', NULL, NULL);
	memcpy(buf + 124, "77777777777", 11);
	{
		unsigned sum = 0;
		memset(buf + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += buf[i];
		snprintf((char *)buf + 148, 8, "%06o", sum);
	}
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), -EPIPE);
	/* Non-octal size. */
	off = 0;
	put_entry(buf, &off, "a", '0', NULL, NULL);
	buf[124] = '9';
	runner_tar_reader_init(&r, buf, off);
	assert_int_equal(runner_tar_next(&r, &e), -EBADMSG);
}

static void
test_unpack(void **state)
{
	static unsigned char buf[16384];
	struct runner_result res = { 0 };
	struct config c;
	char path[256], *data;
	size_t off = 0, len;

	(void)state;
	config_defaults(&c);
	c.limits.out_max_files = 4;
	c.limits.out_max_bytes = 10;
	/* A symlink planted where an entry wants to go must not be followed. */
	snprintf(path, sizeof(path), "%s/out", tmpdir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/out/evil", tmpdir);
	assert_int_equal(symlink("/etc", path), 0);
	put_entry(buf, &off, "good.txt", '0', "12345", NULL);
	put_entry(buf, &off, "evil/passwd", '0', "x", NULL);
	put_entry(buf, &off, "../up.txt", '0', "x", NULL);
	put_entry(buf, &off, "ln", '2', NULL, NULL);
	put_entry(buf, &off, "big.txt", '0', "123456", NULL);	/* > 10 */
	put_entry(buf, &off, "d", '5', NULL, NULL);
	put_entry(buf, &off, "d/small", '0', "abc", NULL);
	put_entry(buf, &off, "good.txt", '0', "a", NULL);
	memset(buf + off, 0, 1024);
	off += 1024;
	off += (size_t)sprintf((char *)buf + off, "CORDON-UNPACKED []\n");
	snprintf(path, sizeof(path), "%s/out", tmpdir);
	assert_int_equal(files_unpack_out(&c, buf, off, path, &res), 0);
	assert_string_equal(res.files_error, "");
	assert_int_equal(res.nfiles, 7);
	assert_string_equal(res.files[0].path, "good.txt");
	assert_null(res.files[0].refused);
	assert_string_equal(res.files[1].refused, "could not be written");
	assert_string_equal(res.files[2].refused, "'.' or '..' component");
	assert_string_equal(res.files[3].refused, "link");
	assert_string_equal(res.files[4].refused, "over the size limit");
	assert_string_equal(res.files[5].path, "d/small");
	assert_null(res.files[5].refused);
	assert_string_equal(res.files[6].refused, "already exists");
	snprintf(path, sizeof(path), "%s/out/good.txt", tmpdir);
	assert_int_equal(util_read_file(path, 100, &data, &len), 0);
	assert_string_equal(data, "12345");
	free(data);
	assert_int_equal(access("/etc/passwd-cordon", F_OK), -1);
	snprintf(path, sizeof(path), "%s/up.txt", tmpdir);
	assert_int_equal(access(path, F_OK), -1);
	runner_result_cleanup(&res);
	/* Count limit, and a cut-short archive is reported. */
	c.limits.out_max_bytes = 1000;
	c.limits.out_max_files = 1;
	off = 0;
	put_entry(buf, &off, "n1", '0', "a", NULL);
	put_entry(buf, &off, "n2", '0', "b", NULL);
	put_entry(buf, &off, "n3", '0', "hello", NULL);
	snprintf(path, sizeof(path), "%s/out2", tmpdir);
	assert_int_equal(files_unpack_out(&c, buf, off - 600, path, &res), 0);
	assert_int_equal(res.nfiles, 2);
	assert_null(res.files[0].refused);
	assert_string_equal(res.files[1].refused, "over the file count limit");
	assert_non_null(strstr(res.files_error, "cut short"));
	runner_result_cleanup(&res);
}

static void
test_outwrap_split(void **state)
{
	static const char nonce[] = "0123456789abcdef0123456789abcdef";
	char buf[512];
	struct outwrap_split sp;
	size_t n = 0;

	(void)state;
	/* A forged marker with another nonce, then the real one. */
	n += (size_t)sprintf(buf + n, "hello\n");
	memcpy(buf + n, "\0CORDON-OUT-ffffffffffffffffffffffffffffffff\0" "1 2\nX",
	    50);
	n += 50;
	memcpy(buf + n, "\0CORDON-OUT-", 12);
	n += 12;
	memcpy(buf + n, nonce, 32);
	n += 32;
	memcpy(buf + n, "\0" "123 4\nTAR", 10);
	n += 10;
	assert_int_equal(outwrap_split(buf, n, nonce, &sp), 0);
	assert_int_equal(sp.stdout_len, 56);
	assert_int_equal(sp.out_seen, 123);
	assert_int_equal(sp.err_seen, 4);
	assert_int_equal(sp.tar_len, 3);
	assert_memory_equal(sp.tar, "TAR", 3);
	assert_int_equal(outwrap_split(buf, 6, nonce, &sp), -ENOENT);
	/* Marker but a damaged count line. */
	memcpy(buf + n - 6, "12x4\n", 5);
	assert_int_equal(outwrap_split(buf, n, nonce, &sp), -ENOENT);
	assert_int_equal(outwrap_split(buf, n, "short", &sp), -EINVAL);
}

static void
test_stage_in(void **state)
{
	struct config c;
	char src[256], p[1024], dir[512], err[256], *data;
	const char *paths[2];
	size_t len;

	(void)state;
	config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s/state", tmpdir);
	snprintf(src, sizeof(src), "%s/src", tmpdir);
	assert_int_equal(mkdir(src, 0700), 0);
	snprintf(p, sizeof(p), "%s/data.txt", src);
	assert_int_equal(util_write_file_atomic(p, "abc", 3, 0600), 0);
	paths[0] = src;
	err[0] = '\0';
	assert_int_equal(files_stage_in(&c, "cordon-t", paths, 1, dir,
	    sizeof(dir), err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/src/data.txt", dir);
	assert_int_equal(util_read_file(p, 10, &data, &len), 0);
	assert_string_equal(data, "abc");
	free(data);
	assert_int_equal(util_rm_rf(dir), 0);
	/* A symlink anywhere inside is refused and nothing is left. */
	snprintf(p, sizeof(p), "%s/ln", src);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	err[0] = '\0';
	assert_int_equal(files_stage_in(&c, "cordon-t", paths, 1, dir,
	    sizeof(dir), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "symbolic link"));
	assert_string_equal(dir, "");
	assert_int_equal(unlink(p), 0);
	/* Size and count limits. */
	c.limits.in_max_bytes = 2;
	err[0] = '\0';
	assert_int_equal(files_stage_in(&c, "cordon-t", paths, 1, dir,
	    sizeof(dir), err, sizeof(err)), -EFBIG);
	assert_string_equal(err, "--in: more than 2 bytes, the maximum "
	    "(config limits.in_max_bytes)");
	c.limits.in_max_bytes = 100;
	c.limits.in_max_files = 1;
	err[0] = '\0';
	assert_int_equal(files_stage_in(&c, "cordon-t", paths, 1, dir,
	    sizeof(dir), err, sizeof(err)), -EMFILE);
	assert_string_equal(err, "--in: more than 1 files, the maximum "
	    "(config limits.in_max_files)");
	/* Special files refused; same base name twice refused. */
	c.limits.in_max_files = 10;
	paths[0] = "/dev/null";
	err[0] = '\0';
	assert_int_equal(files_stage_in(&c, "cordon-t", paths, 1, dir,
	    sizeof(dir), err, sizeof(err)), -EPERM);
	paths[0] = src;
	paths[1] = src;
	err[0] = '\0';
	assert_int_equal(files_stage_in(&c, "cordon-t", paths, 2, dir,
	    sizeof(dir), err, sizeof(err)), -EEXIST);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_plain),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_mode_field),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test_setup_teardown(test_unpack,
		    tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test(test_outwrap_split),
		cmocka_unit_test_setup_teardown(test_stage_in,
		    tmpdir_setup, tmpdir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
