/*
 * Loading policy sets from files and directories: named policies, no
 * default.list means no default policy, errors in any file reject the whole
 * set, and a loaded set answers from many threads at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allowlist/allowlist.h"
#include "common/util.h"
#include "tmpdir.h"


/* Creates tmpdir/sub/name with text (sub is created when missing). */
static void
put(const char *sub, const char *name, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, sub);
	assert_int_equal(util_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, sub, name);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text),
	    0600), 0);
}

static void
sub_path(char *out, size_t len, const char *sub)
{
	snprintf(out, len, "%s/%s", tmpdir, sub);
}

static void
test_data_dir(void **state)
{
	const char *dir = ALLOWLIST_TEST_DATA "/policies";
	struct allowlist_diag diag;
	struct allowlist_set *set;
	const struct allowlist *def, *strict;
	struct allowlist_decision d;
	char want[512];

	(void)state;
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_load(dir, &set, &diag), 0);
	assert_int_equal(allowlist_set_count(set), 2);
	assert_string_equal(allowlist_set_name(set, 0), "default");
	assert_string_equal(allowlist_set_name(set, 1), "strict");
	def = allowlist_set_policy(set, NULL);
	strict = allowlist_set_policy(set, "strict");
	assert_non_null(def);
	assert_non_null(strict);
	assert_ptr_equal(allowlist_set_policy(set, "default"), def);
	assert_null(allowlist_set_policy(set, "nope"));
	assert_null(allowlist_set_policy(set, "strict.list"));
	/* The default allows the wildcard; strict only api on 443. */
	assert_true(allowlist_match(def, "www.example.com", 443, &d));
	snprintf(want, sizeof(want), "%s/default.list", dir);
	assert_string_equal(d.file, want);
	assert_int_equal(d.line, 2);
	assert_false(allowlist_match(strict, "www.example.com", 443, &d));
	assert_string_equal(d.reason, "no-match");
	assert_true(allowlist_match(strict, "api.example.com", 443, &d));
	snprintf(want, sizeof(want), "%s/strict.list", dir);
	assert_string_equal(d.file, want);
	assert_false(allowlist_match(strict, "api.example.com", 80, &d));
	assert_string_equal(d.reason, "port-not-allowed");
	/* README.txt is skipped, loudly. */
	assert_int_equal(diag.errors, 0);
	assert_int_equal(diag.count, 1);
	snprintf(want, sizeof(want), "%s: warning: skipping 'README.txt' "
	    "(policies are NAME.list files)", dir);
	assert_string_equal(diag.items[0].text, want);
	assert_true(diag.items[0].warning);
	allowlist_diag_cleanup(&diag);
	allowlist_set_free(set);
}

static void
test_no_default(void **state)
{
	struct allowlist_set *set;
	struct allowlist_decision d;

	(void)state;
	assert_int_equal(allowlist_set_load(ALLOWLIST_TEST_DATA "/nodefault",
	    &set, NULL), 0);
	assert_int_equal(allowlist_set_count(set), 1);
	/* No policy named and no default.list: nothing is allowed. */
	assert_null(allowlist_set_policy(set, NULL));
	assert_false(allowlist_match(allowlist_set_policy(set, NULL),
	    "team.example.com", 443, &d));
	assert_string_equal(d.reason, "no-policy");
	assert_true(allowlist_match(allowlist_set_policy(set, "team"),
	    "team.example.com", 443, &d));
	allowlist_set_free(set);
}

static void
test_single_file(void **state)
{
	struct allowlist_set *set;
	struct allowlist_decision d;

	(void)state;
	assert_int_equal(allowlist_set_load(ALLOWLIST_TEST_DATA "/good.list",
	    &set, NULL), 0);
	assert_int_equal(allowlist_set_count(set), 1);
	assert_string_equal(allowlist_set_name(set, 0), "default");
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "[2001:db8::2]", 8443, &d));
	assert_string_equal(d.file, ALLOWLIST_TEST_DATA "/good.list");
	assert_int_equal(d.line, 7);
	assert_null(allowlist_set_policy(set, "good"));
	allowlist_set_free(set);
}

static void
test_broken_dir(void **state)
{
	struct allowlist_diag diag;
	struct allowlist_set *set = (void *)1;
	char dir[512], want[600];

	(void)state;
	put("broken", "a.list", "ok.example\n*.com\n");
	put("broken", "b.list", "fine.example\n");
	put("broken", "c.list", "\n\nx..y\n");
	sub_path(dir, sizeof(dir), "broken");
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_load(dir, &set, &diag), -EINVAL);
	assert_null(set);
	/* Every file is checked; every error is listed. */
	assert_int_equal(diag.errors, 2);
	assert_int_equal(diag.count, 2);
	snprintf(want, sizeof(want), "%s/a.list:2: '*.com' would allow every "
	    "name under the public suffix 'com'", dir);
	assert_string_equal(diag.items[0].text, want);
	snprintf(want, sizeof(want), "%s/c.list:3: empty label in 'x..y'",
	    dir);
	assert_string_equal(diag.items[1].text, want);
	allowlist_diag_cleanup(&diag);
}

static void
test_bad_policy_name(void **state)
{
	struct allowlist_diag diag;
	struct allowlist_set *set;
	char dir[512], want[600];

	(void)state;
	put("badname", "default.list", "ok.example\n");
	put("badname", "two words.list", "ok.example\n");
	put("badname", ".hidden.list", "*\n");
	sub_path(dir, sizeof(dir), "badname");
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_load(dir, &set, &diag), -EINVAL);
	assert_null(set);
	assert_int_equal(diag.count, 1);
	snprintf(want, sizeof(want), "%s/two words.list: policy names use "
	    "letters, digits, '-' and '_' (at most 64)", dir);
	assert_string_equal(diag.items[0].text, want);
	allowlist_diag_cleanup(&diag);
}

static void
test_empty_dir_and_missing(void **state)
{
	struct allowlist_diag diag;
	struct allowlist_set *set;
	char dir[512], want[600];

	(void)state;
	sub_path(dir, sizeof(dir), "empty");
	assert_int_equal(util_mkdir_p(dir, 0700), 0);
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_load(dir, &set, &diag), 0);
	assert_int_equal(allowlist_set_count(set), 0);
	assert_null(allowlist_set_policy(set, NULL));
	assert_int_equal(diag.warnings, 1);
	snprintf(want, sizeof(want), "%s: warning: no NAME.list files: every "
	    "request will be denied", dir);
	assert_string_equal(diag.items[0].text, want);
	allowlist_set_free(set);
	allowlist_diag_cleanup(&diag);

	sub_path(dir, sizeof(dir), "missing.list");
	assert_int_equal(allowlist_set_load(dir, &set, &diag), -ENOENT);
	assert_null(set);
	assert_int_equal(diag.errors, 1);
	snprintf(want, sizeof(want), "%s: cannot read: %s", dir,
	    strerror(ENOENT));
	assert_string_equal(diag.items[0].text, want);
	allowlist_diag_cleanup(&diag);
	/* diag is optional. */
	assert_int_equal(allowlist_set_load(dir, &set, NULL), -ENOENT);

	/* Devices and FIFOs are not read. */
	assert_int_equal(allowlist_set_load("/dev/null", &set, &diag), -EINVAL);
	assert_null(set);
	assert_string_equal(diag.items[0].text, "/dev/null: not a regular file "
	    "or a directory");
	allowlist_diag_cleanup(&diag);
}

static void
test_dir_order(void **state)
{
	struct allowlist_diag diag;
	struct allowlist_set *set;
	char dir[512], want[600];

	(void)state;
	/* Policies come out in name order whatever the file names sort
	 * as; skipped files are reported in name order too. */
	put("order", "a.list", "a.example\n");
	put("order", "a-b.list", "ab.example\n");
	put("order", "Z_upper.list", "z.example\n");
	put("order", "zz.txt", "");
	put("order", "b.list~", "");
	sub_path(dir, sizeof(dir), "order/sub.list");
	assert_int_equal(util_mkdir_p(dir, 0700), 0);
	sub_path(dir, sizeof(dir), "order");
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_load(dir, &set, &diag), 0);
	assert_int_equal(allowlist_set_count(set), 3);
	assert_string_equal(allowlist_set_name(set, 0), "Z_upper");
	assert_string_equal(allowlist_set_name(set, 1), "a");
	assert_string_equal(allowlist_set_name(set, 2), "a-b");
	assert_true(allowlist_match(allowlist_set_policy(set, "a-b"),
	    "ab.example", 443, NULL));
	assert_false(allowlist_match(allowlist_set_policy(set, "a"),
	    "ab.example", 443, NULL));
	assert_int_equal(diag.count, 3);
	snprintf(want, sizeof(want), "%s: warning: skipping 'b.list~' "
	    "(policies are NAME.list files)", dir);
	assert_string_equal(diag.items[0].text, want);
	snprintf(want, sizeof(want), "%s/sub.list: warning: skipping a "
	    "directory", dir);
	assert_string_equal(diag.items[1].text, want);
	snprintf(want, sizeof(want), "%s: warning: skipping 'zz.txt' "
	    "(policies are NAME.list files)", dir);
	assert_string_equal(diag.items[2].text, want);
	allowlist_diag_cleanup(&diag);
	allowlist_set_free(set);
}

struct worker {
	const struct allowlist *al;
	long hits;
};

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	char host[64];

	for (int i = 0; i < 20000; i++) {
		struct allowlist_decision d;
		snprintf(host, sizeof(host), "h%d.example.com", i % 100);
		if (allowlist_match(w->al, host, 443, &d) &&
		    strcmp(d.entry, "*.example.com") == 0)
			w->hits++;
		if (allowlist_match(w->al, "internal.example.com", 443, &d))
			w->hits = -1000000;
	}
	return NULL;
}

static void
test_threads(void **state)
{
	struct allowlist_set *set;
	struct worker w[4];
	pthread_t t[4];

	(void)state;
	assert_int_equal(allowlist_set_load(ALLOWLIST_TEST_DATA "/good.list",
	    &set, NULL), 0);
	for (int i = 0; i < 4; i++) {
		w[i].al = allowlist_set_policy(set, NULL);
		w[i].hits = 0;
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]),
		    0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].hits, 20000);
	}
	allowlist_set_free(set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data_dir),
		cmocka_unit_test(test_no_default),
		cmocka_unit_test(test_single_file),
		cmocka_unit_test(test_broken_dir),
		cmocka_unit_test(test_bad_policy_name),
		cmocka_unit_test(test_empty_dir_and_missing),
		cmocka_unit_test(test_dir_order),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
