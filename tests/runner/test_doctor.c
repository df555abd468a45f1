/* Unit tests for the doctor's setuid scan of an image export (a tar), for
 * the image build's stripping of those bits from its tree, and for the
 * line of each image profile. */
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

#include "common/proc.h"
#include "common/util.h"
#include "runner/doctor.h"
#include "runner/image.h"

/* Makes a tar (format: tar's --format) of a temp tree holding files
 * named names[i] (NULL: f<i>) with the given modes; caller frees. */
static struct cbuf *
make_tar_as(const char *format, const char *const *names,
    const unsigned *modes, size_t n)
{
	char dir[] = "/tmp/cordon-doctor-XXXXXX", path[512], fmt[32];
	const char *argv[] = { "tar", "--numeric-owner", fmt, "-C", dir,
	    "-cf", "-", ".", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 20,
	    .stderr_max = 4096 };
	struct proc_result r;
	struct cbuf *out;

	snprintf(fmt, sizeof(fmt), "--format=%s", format);
	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; i < n; i++) {
		if (names != NULL && names[i] != NULL) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			*strrchr(path, '/') = '\0';
			assert_int_equal(util_mkdir_p(path, 0755), 0);
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		} else
			snprintf(path, sizeof(path), "%s/f%zu", dir, i);
		assert_int_equal(util_write_file_atomic(path, "x", 1, 0600), 0);
		assert_int_equal(chmod(path, modes[i]), 0);
	}
	assert_int_equal(proc_run(&o, 10000, &r), 0);
	assert_int_equal(r.exit_code, 0);
	out = r.out;
	r.out = NULL;
	proc_result_cleanup(&r);
	util_rm_rf(dir);
	return out;
}

static struct cbuf *
make_tar(const unsigned *modes, size_t n)
{
	return make_tar_as("gnu", NULL, modes, n);
}

static void
test_counts_setid(void **state)
{
	static const unsigned clean[] = { 0644, 0755, 01777 };
	static const unsigned dirty[] = { 0644, 04755, 02755, 0755 };
	char first[128];
	struct cbuf *t;
	(void)state;
	t = make_tar(clean, 3);
	assert_int_equal(doctor_tar_count_setid((const unsigned char *)cbuf_data(t),
	    cbuf_len(t), first, sizeof(first)), 0);
	assert_string_equal(first, "");
	cbuf_free(t);
	t = make_tar(dirty, 4);
	assert_int_equal(doctor_tar_count_setid((const unsigned char *)cbuf_data(t),
	    cbuf_len(t), first, sizeof(first)), 2);
	assert_non_null(strstr(first, "./f"));
	/* A truncated archive is malformed, not clean. */
	assert_int_equal(doctor_tar_count_setid((const unsigned char *)cbuf_data(t),
	    1000, NULL, 0), -EBADMSG);
	cbuf_free(t);
}

static long
count(const struct cbuf *t, char *first, size_t firstlen)
{
	return doctor_tar_count_setid((const unsigned char *)cbuf_data(t),
	    cbuf_len(t), first, firstlen);
}

/* Long names (GNU 'L' entries, ustar prefixes, pax headers) are walked
 * over, and the first path is the whole name. */
static void
test_long_names_and_formats(void **state)
{
	static const unsigned modes[] = { 0644, 04755 };
	static const char *const formats[] = { "gnu", "ustar", "pax" };
	char longname[160], first[256];
	const char *names[] = { "plain", longname };
	struct cbuf *t;

	(void)state;
	/* 121 bytes: over ustar's 100-byte name, split at the slash. */
	memset(longname, 'd', 60);
	longname[60] = '/';
	memset(longname + 61, 'n', 60);
	longname[121] = '\0';
	for (size_t i = 0; i < 3; i++) {
		t = make_tar_as(formats[i], names, modes, 2);
		assert_int_equal(count(t, first, sizeof(first)), 1);
		if (strcmp(formats[i], "pax") != 0)
			assert_string_equal(first + 2, longname);
		cbuf_free(t);
	}
}

/* Rewrites a header's checksum after an edit. */
static void
fix_sum(unsigned char *h)
{
	unsigned sum = 0;

	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* The doctor reads with the strict reader: a damaged header is malformed,
 * not clean. */
static void
test_damaged_headers(void **state)
{
	static const unsigned dirty[] = { 04755 };
	struct cbuf *t;
	unsigned char *copy;
	size_t len;

	(void)state;
	t = make_tar(dirty, 1);
	len = cbuf_len(t);
	assert_int_equal(count(t, NULL, 0), 1);
	copy = malloc(len);
	assert_non_null(copy);
	/* The second header (the file's): a flipped name byte breaks its
	 * checksum; a bad mode field is malformed too. */
	memcpy(copy, cbuf_data(t), len);
	copy[512] ^= 0x01;
	assert_int_equal(doctor_tar_count_setid(copy, len, NULL, 0), -EBADMSG);
	memcpy(copy, cbuf_data(t), len);
	copy[512 + 100] = '9';
	fix_sum(copy + 512);
	assert_int_equal(doctor_tar_count_setid(copy, len, NULL, 0), -EBADMSG);
	/* The same edit to a valid octal digit is read. */
	copy[512 + 100] = '0';
	fix_sum(copy + 512);
	assert_int_equal(doctor_tar_count_setid(copy, len, NULL, 0), 1);
	/* Cut inside a header. */
	assert_int_equal(doctor_tar_count_setid(copy, 700, NULL, 0), -EBADMSG);
	free(copy);
	cbuf_free(t);
}

static unsigned
mode_of(const char *dir, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void
put(const char *dir, const char *name, unsigned mode)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(util_write_file_atomic(path, "x", 1, 0600), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* Every set-id file below the root loses its bits, at any depth; a
 * symlink is never followed out of the tree; directories keep theirs. */
static void
test_strip_setid(void **state)
{
	char dir[] = "/tmp/cordon-strip-XXXXXX";
	char out[] = "/tmp/cordon-out-XXXXXX";
	char path[512], target[512];

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_non_null(mkdtemp(out));
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	assert_int_equal(util_mkdir_p(path, 0755), 0);
	put(dir, "a/b/c/deep", 04755);
	put(dir, "top", 02755);
	put(dir, "both", 06711);
	put(dir, "plain", 0644);
	snprintf(path, sizeof(path), "%s/sgid-dir", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(chmod(path, 02775), 0);
	put(out, "outside", 04755);
	snprintf(target, sizeof(target), "%s/outside", out);
	snprintf(path, sizeof(path), "%s/a/link", dir);
	assert_int_equal(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/a/dirlink", dir);
	assert_int_equal(symlink(out, path), 0);

	assert_int_equal(image_strip_setid(dir), 0);
	assert_int_equal(mode_of(dir, "a/b/c/deep"), 0755);
	assert_int_equal(mode_of(dir, "top"), 0755);
	assert_int_equal(mode_of(dir, "both"), 0711);
	assert_int_equal(mode_of(dir, "plain"), 0644);
	assert_int_equal(mode_of(dir, "sgid-dir"), 02775);
	assert_int_equal(mode_of(out, "outside"), 04755);
	/* Idempotent; a missing root is an error, not "clean". */
	assert_int_equal(image_strip_setid(dir), 0);
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(image_strip_setid(path), -EIO);
	util_rm_rf(dir);
	util_rm_rf(out);
}

/* One image profile's line: built or not, present, probed, aged. */
static void
test_profile_line(void **state)
{
	static const char *const A =
	    "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	static const char *const B =
	    "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
	const int64_t now = 1800000000000LL, day = 86400000LL;
	struct doctor_profile ok = { .name = "data", .langs =
	    CONFIG_LANG_PYTHON | CONFIG_LANG_BASH, .built = true, .id = A,
	    .present = true, .size_bytes = 1253000000, .made_ms = now - day,
	    .probe_rc = 0, .probe_pass = true, .probe_at_ms = now - 30000,
	    .probe_failed = "", .probe_image = A };
	static const struct {
		int what;		/* which change to ok */
		enum doctor_verdict v;
		const char *detail, *hint;
	} rows[] = {
		{ 0, DOCTOR_OK, "sha256:aaaaaaaaaaaa..., 1253 MB, packages 1 "
		  "days old, offers python, bash; probe passed 30s ago", "" },
		{ 1, DOCTOR_INFO, "not built (offers python, bash; 'cordon "
		  "image build --profile data' when you need it)", "" },
		{ 2, DOCTOR_FAIL, "missing: sha256:aaaaaaaaaaaa... is not "
		  "present in dockerd", "run 'cordon image build --profile NAME' "
		  "(it re-imports when the ID is gone)" },
		{ 3, DOCTOR_WARN, "sha256:aaaaaaaaaaaa..., 1253 MB, packages 1 "
		  "days old, offers python, bash; never probed", "run 'cordon "
		  "probe --profile data' (its runs are refused until it passes)" },
		{ 4, DOCTOR_FAIL, "sha256:aaaaaaaaaaaa..., 1253 MB, packages 1 "
		  "days old, offers python, bash; probe failed: no_setid_files",
		  "fix the failing controls, then rerun 'cordon probe --profile "
		  "data'" },
		{ 5, DOCTOR_WARN, "sha256:aaaaaaaaaaaa..., 1253 MB, packages 1 "
		  "days old, offers python, bash; probe stale (passed 30s ago in "
		  "another image)", "rerun 'cordon probe --profile data' (or let "
		  "the next run probe first: probe_auto)" },
		{ 6, DOCTOR_WARN, "sha256:aaaaaaaaaaaa..., 1253 MB, packages 40 "
		  "days old, offers python, bash; probe passed 30s ago", "run "
		  "'cordon image build --profile data --refresh' (security "
		  "updates come through the mirror)" },
		{ 7, DOCTOR_OK, "sha256:aaaaaaaaaaaa..., size unknown, offers "
		  "python, bash; probe passed 30s ago", "" },
	};
	struct config c;
	struct doctor_line l;

	(void)state;
	config_defaults(&c);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct doctor_profile p = ok;
		switch (rows[i].what) {
		case 1: p.built = false; break;
		case 2: p.present = false; break;
		case 3: p.probe_rc = -ENOENT; break;
		case 4: p.probe_pass = false;
			p.probe_failed = "no_setid_files"; break;
		case 5: p.probe_image = B; break;
		case 6: p.made_ms = now - 40 * day; break;
		case 7: p.size_bytes = -1; p.made_ms = -1; break;
		}
		memset(&l, 0, sizeof(l));
		doctor_profile_line(&c, &p, now, &l);
		assert_string_equal(l.what, "profile data");
		assert_int_equal(l.verdict, rows[i].v);
		assert_string_equal(l.detail, rows[i].detail);
		assert_string_equal(l.hint, rows[i].hint);
	}
	/* Without require_probe, a missing record is no warning. */
	c.require_probe = false;
	ok.probe_rc = -ENOENT;
	doctor_profile_line(&c, &ok, now, &l);
	assert_int_equal(l.verdict, DOCTOR_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_setid),
		cmocka_unit_test(test_long_names_and_formats),
		cmocka_unit_test(test_damaged_headers),
		cmocka_unit_test(test_strip_setid),
		cmocka_unit_test(test_profile_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
