/* Unit tests for the doctor's setuid scan of an image export (a tar). */
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

#include "common/proc.h"
#include "common/util.h"
#include "runner/doctor.h"

/* Makes a tar of a temp tree holding the given modes; caller frees. */
static struct cbuf *
make_tar(const unsigned *modes, size_t n)
{
	char dir[] = "/tmp/cordon-doctor-XXXXXX", path[256];
	const char *argv[] = { "tar", "--numeric-owner", "-C", dir, "-cf", "-",
	    ".", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 20,
	    .stderr_max = 4096 };
	struct proc_result r;
	struct cbuf *out;

	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; i < n; i++) {
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_setid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
