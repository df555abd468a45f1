/* Unit tests for image freshness: RFC 3339 times as Docker and Cordon
 * write them, the age check against image.max_age_days, the doctor's
 * image-age and probe lines (a probe record made in another image, stale
 * with and without probe_auto), and the build record's rootfs time. */
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

#include "common/util.h"
#include "runner/doctor.h"
#include "runner/image.h"

#define DAY 86400000LL
#define IMG_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define IMG_B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static void
test_time_parse(void **state)
{
	static const struct { const char *in; int rc; int64_t ms; } rows[] = {
		{ "1970-01-01T00:00:00Z", 0, 0 },
		{ "2026-12-01T04:29:59.297Z", 0, 1796099399297LL },
		{ "2026-12-01T04:29:59.283215775Z", 0, 1796099399283LL },
		{ "2026-12-01T04:29:59.2Z", 0, 1796099399200LL },
		{ "2026-12-01t04:29:59z", 0, 1796099399000LL },
		{ "2026-12-01T06:29:59+02:00", 0, 1796099399000LL },
		{ "2026-11-30T23:29:59-05:00", 0, 1796099399000LL },
		{ "2024-02-29T00:00:00Z", 0, 1709164800000LL },
		{ "", -EINVAL, 0 },
		{ "2026-12-01", -EINVAL, 0 },
		{ "2026-12-01 04:29:59Z", -EINVAL, 0 },
		{ "2026-12-01T04:29:59", -EINVAL, 0 },
		{ "2026-12-01T04:29:59.Z", -EINVAL, 0 },
		{ "2026-13-01T04:29:59Z", -EINVAL, 0 },
		{ "2026-12-01T24:00:00Z", -EINVAL, 0 },
		{ "2026-12-01T04:29:59Zjunk", -EINVAL, 0 },
		{ "2026-12-01T04:29:59+2:00", -EINVAL, 0 },
		{ "+026-12-01T04:29:59Z", -EINVAL, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int64_t ms = -1;
		int rc = image_time_parse(rows[i].in, &ms);
		if (rc != rows[i].rc)
			fail_msg("'%s': rc %d, expected %d", rows[i].in, rc,
			    rows[i].rc);
		if (rc == 0 && ms != rows[i].ms)
			fail_msg("'%s': %lld, expected %lld", rows[i].in,
			    (long long)ms, (long long)rows[i].ms);
	}
}

static void
test_too_old(void **state)
{
	struct config c;
	int64_t now = 1796099399297LL, days;
	(void)state;
	config_defaults(&c);
	assert_int_equal(c.image.max_age_days, 30);
	assert_false(image_too_old(&c, now - 3 * DAY, now, &days));
	assert_int_equal(days, 3);
	assert_false(image_too_old(&c, now - 30 * DAY, now, &days));
	assert_true(image_too_old(&c, now - 30 * DAY - 1, now, &days));
	assert_int_equal(days, 30);
	assert_true(image_too_old(&c, now - 400 * DAY, now, &days));
	assert_int_equal(days, 400);
	/* Made "in the future" (clock skew): not old, 0 days. */
	assert_false(image_too_old(&c, now + DAY, now, &days));
	assert_int_equal(days, 0);
	c.image.max_age_days = 0;
	assert_false(image_too_old(&c, now - 4000 * DAY, now, &days));
}

static void
test_doctor_image_age(void **state)
{
	struct config c;
	struct doctor_line l;
	int64_t now = 1796099399297LL;
	(void)state;
	config_defaults(&c);
	doctor_image_age(&c, now - 2 * DAY, now, &l);
	assert_int_equal(l.verdict, DOCTOR_OK);
	assert_string_equal(l.what, "image age");
	assert_string_equal(l.detail, "packages fetched 2 days ago "
	    "(image.max_age_days 30)");
	doctor_image_age(&c, now - 45 * DAY, now, &l);
	assert_int_equal(l.verdict, DOCTOR_WARN);
	assert_string_equal(doctor_verdict_name(l.verdict), "WARN");
	assert_string_equal(l.detail, "packages fetched 45 days ago: older "
	    "than image.max_age_days (30)");
	assert_non_null(strstr(l.hint, "cordon image build --refresh"));
	doctor_image_age(&c, -1, now, &l);
	assert_int_equal(l.verdict, DOCTOR_INFO);
	assert_string_equal(l.hint, "");
	c.image.max_age_days = 0;
	doctor_image_age(&c, now - 45 * DAY, now, &l);
	assert_int_equal(l.verdict, DOCTOR_INFO);
	assert_non_null(strstr(l.detail, "not checked"));
}

static void
test_doctor_probe_line(void **state)
{
	static const struct {
		bool require, autop;
		int rc; bool pass; int64_t age_s;
		const char *rec, *pinned;
		enum doctor_verdict v;
		const char *detail;
	} rows[] = {
		{ true, true, 0, true, 10, IMG_A, IMG_A, DOCTOR_OK,
		  "passed 10s ago" },
		/* Callers that do not know the pinned image: no compare. */
		{ true, true, 0, true, 10, IMG_A, "", DOCTOR_OK,
		  "passed 10s ago" },
		{ true, true, 0, true, 10, IMG_A, IMG_B, DOCTOR_WARN,
		  "passed 10s ago in image sha256:aaaaaaaaaaaa, not the pinned "
		  "sha256:bbbbbbbbbbbb; the next run probes first (probe_auto)" },
		{ true, false, 0, true, 10, "", IMG_B, DOCTOR_FAIL,
		  "passed 10s ago in image (none recorded), not the pinned "
		  "sha256:bbbbbbbbbbbb" },
		{ false, false, 0, true, 10, IMG_A, IMG_B, DOCTOR_INFO,
		  "passed 10s ago in image sha256:aaaaaaaaaaaa, not the pinned "
		  "sha256:bbbbbbbbbbbb" },
		{ true, true, 0, true, 7200, IMG_A, IMG_A, DOCTOR_WARN,
		  "passed 7200s ago: older than 3600s; the next run probes "
		  "first (probe_auto)" },
		{ true, false, 0, true, 7200, IMG_A, IMG_A, DOCTOR_FAIL,
		  "passed 7200s ago: older than 3600s" },
		/* Failed stays a failure, whatever the image or probe_auto. */
		{ true, true, 0, false, 10, IMG_A, IMG_B, DOCTOR_FAIL,
		  "failed 10s ago: capabilities" },
		{ true, true, -ENOENT, false, 0, "", IMG_A, DOCTOR_FAIL,
		  "never run (jobs refused until it passes)" },
	};
	int64_t now = 1796099399297LL;
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct doctor_line l;
		struct config c;
		config_defaults(&c);
		c.require_probe = rows[i].require;
		c.probe_auto = rows[i].autop;
		doctor_probe_line(&c, "none", rows[i].rc, rows[i].pass,
		    now - rows[i].age_s * 1000, "capabilities", rows[i].rec,
		    rows[i].pinned, now, &l);
		if (l.verdict != rows[i].v || strcmp(l.detail,
		    rows[i].detail) != 0)
			fail_msg("row %zu: %s '%s', expected %s '%s'", i,
			    doctor_verdict_name(l.verdict), l.detail,
			    doctor_verdict_name(rows[i].v), rows[i].detail);
		assert_string_equal(l.what, "probe --net none");
	}
}

/* The build record keeps when the rootfs was made; an older record
 * without it still reads, and its age falls back to built_at. */
static void
test_record_rootfs_at(void **state)
{
	char dir[] = "/tmp/cordon-image-age-XXXXXX", path[128];
	struct image_record rec;
	struct config c;
	int64_t ms;
	const char *with = "{\"id\":\"" IMG_A "\",\"inputs\":\"ff\",\"name\":"
	    "\"cordon-sandbox:ff\",\"built_at\":\"2026-12-01T04:29:59.297Z\","
	    "\"rootfs_at\":\"2026-11-01T00:00:00.000Z\"}\n";
	const char *without = "{\"id\":\"" IMG_A "\",\"inputs\":\"ff\","
	    "\"name\":\"cordon-sandbox:ff\",\"built_at\":"
	    "\"2026-12-01T04:29:59.297Z\"}\n";
	(void)state;
	assert_non_null(mkdtemp(dir));
	config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/image.json", dir);
	assert_int_equal(util_write_file_atomic(path, with, strlen(with),
	    0644), 0);
	assert_int_equal(image_record_read(&c, &rec), 0);
	assert_string_equal(rec.rootfs_at, "2026-11-01T00:00:00.000Z");
	assert_int_equal(image_record_made_ms(&rec, &ms), 0);
	assert_int_equal(ms, 1793491200000LL);
	assert_int_equal(util_write_file_atomic(path, without,
	    strlen(without), 0644), 0);
	assert_int_equal(image_record_read(&c, &rec), 0);
	assert_string_equal(rec.rootfs_at, "");
	assert_int_equal(image_record_made_ms(&rec, &ms), 0);
	assert_int_equal(ms, 1796099399297LL);
	assert_int_equal(util_rm_rf(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_too_old),
		cmocka_unit_test(test_doctor_image_age),
		cmocka_unit_test(test_doctor_probe_line),
		cmocka_unit_test(test_record_rootfs_at),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
