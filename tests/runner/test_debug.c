/* Unit tests of debug runs (runner/debug.h): the debug runtime's
 * arguments as dockerd reports them, a run's log directory from the
 * pattern and the container ID, the result's and the audit line's
 * debug_log, the container spec's runtime, and the doctor's line. */
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
#include "common/json.h"
#include "runner/container.h"
#include "runner/debug.h"
#include "runner/doctor.h"

#define ID64 "f0040461f3646cff77f3938c7e4ef45a29689acb952390593b90ed2d2d3ba420"

static void
test_pattern(void **state)
{
	static const struct { const char *args; int rc; const char *pat;
	    const char *why; } rows[] = {
		{ "--network=none --debug --strace "
		  "--debug-log=/var/log/cordon/runsc-debug/%ID%/", 0,
		  "/var/log/cordon/runsc-debug/%ID%/", NULL },
		{ "--debug-log=/d/%ID% --strace=true --debug=true", 0,
		  "/d/%ID%", NULL },
		{ "--debug-log=/d/%ID%/x/ --debug --strace", 0, "/d/%ID%/x/",
		  NULL },
		{ "--network=none", -ENOENT, "", "no --debug-log" },
		{ "", -ENOENT, "", "no --debug-log" },
		{ "--debug --strace --debug-log-fd=3", -ENOENT, "",
		  "no --debug-log" },
		{ "--strace --debug-log=/d/%ID%/", -EINVAL, "", "no --debug" },
		{ "--debug --debug-log=/d/%ID%/", -EINVAL, "", "no --strace" },
		{ "--debugx --strace --debug-log=/d/%ID%/", -EINVAL, "",
		  "no --debug" },
		{ "--debug --strace --debug-log=/d/", -EINVAL, "",
		  "--debug-log does not name %ID% (one directory per "
		  "container)" },
		{ "--debug --strace --debug-log=d/%ID%/", -EINVAL, "",
		  "--debug-log is not an absolute path" },
		{ "--debug --strace --debug-log=/d/x%ID%/", -EINVAL, "",
		  "%ID% is not a whole path component of --debug-log" },
		{ "--debug --strace --debug-log=/d/%ID%x/", -EINVAL, "",
		  "%ID% is not a whole path component of --debug-log" },
		{ "--debug --strace --debug-log=/d/%ID%/%ID%/", -EINVAL, "",
		  "--debug-log names %ID% twice" },
		{ "--debug --strace --debug-log=/d/../%ID%/", -EINVAL, "",
		  "--debug-log has . or .. components" },
		{ "--debug --strace --debug-log=/d/./%ID%/", -EINVAL, "",
		  "--debug-log has . or .. components" },
	};
	char pat[RUNNER_DEBUG_PAT_MAX];
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = runner_debug_pattern(rows[i].args, pat, sizeof(pat),
		    &why);
		if (rc != rows[i].rc)
			fail_msg("row %zu: rc %d, want %d", i, rc, rows[i].rc);
		assert_string_equal(pat, rows[i].pat);
		if (rows[i].why == NULL)
			assert_null(why);
		else
			assert_string_equal(why, rows[i].why);
	}
	/* Too long for the buffer: refused, never cut. */
	assert_int_equal(runner_debug_pattern("--debug --strace "
	    "--debug-log=/0123456789/%ID%/", pat, 16, NULL), -ENAMETOOLONG);
	assert_string_equal(pat, "");
}

static void
test_dir(void **state)
{
	static const struct { const char *pat, *id; int rc;
	    const char *dir; } rows[] = {
		{ "/var/log/cordon/runsc-debug/%ID%/", ID64, 0,
		  "/var/log/cordon/runsc-debug/" ID64 },
		{ "/d/%ID%", "abc", 0, "/d/abc" },
		{ "/d/%ID%/x/", "0", 0, "/d/0/x" },
		{ "/d/%ID%//", "0", 0, "/d/0" },
		{ "/d/%ID%/", "", -EINVAL, "" },
		{ "/d/%ID%/", "../x", -EINVAL, "" },
		{ "/d/%ID%/", "ABC", -EINVAL, "" },
		{ "/d/%ID%/", "a/b", -EINVAL, "" },
		{ "/d/%ID%/", ID64 "0", -EINVAL, "" },
		{ "/d/", "abc", -EINVAL, "" },
	};
	char dir[320];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = runner_debug_dir(rows[i].pat, rows[i].id, dir,
		    sizeof(dir));
		if (rc != rows[i].rc)
			fail_msg("row %zu: rc %d, want %d", i, rc, rows[i].rc);
		assert_string_equal(dir, rows[i].dir);
	}
	assert_int_equal(runner_debug_dir("/d/%ID%/", ID64, dir, 20),
	    -ENAMETOOLONG);
	assert_string_equal(dir, "");
}

static void
test_result(void **state)
{
	struct runner_result r;
	char dir[] = "/tmp/cordon-test-debug-XXXXXX", pat[64], sub[96];
	cJSON *o;
	char *line;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pat, sizeof(pat), "%s/%%ID%%/", dir);
	snprintf(sub, sizeof(sub), "%s/abc", dir);
	assert_int_equal(mkdir(sub, 0700), 0);

	/* Not a debug run: neither field. */
	memset(&r, 0, sizeof(r));
	o = runner_result_to_json(&r);
	assert_null(cJSON_GetObjectItem(o, "debug_log"));
	assert_null(cJSON_GetObjectItem(o, "debug_log_error"));
	cJSON_Delete(o);

	/* The directory exists: debug_log names it. */
	runner_debug_result(pat, "abc", &r);
	assert_true(r.debug);
	assert_string_equal(r.debug_log, sub);
	o = runner_result_to_json(&r);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o,
	    "debug_log")), sub);
	assert_null(cJSON_GetObjectItem(o, "debug_log_error"));
	line = json_print_line(o);
	assert_non_null(strstr(line, "\"debug_log\":\""));
	free(line);
	cJSON_Delete(o);

	/* No such directory, or no ID: why, never a path. */
	memset(&r, 0, sizeof(r));
	runner_debug_result(pat, "abd", &r);
	assert_string_equal(r.debug_log, "");
	assert_non_null(strstr(r.debug_log_error, "runsc wrote no logs to"));
	o = runner_result_to_json(&r);
	assert_null(cJSON_GetObjectItem(o, "debug_log"));
	assert_non_null(cJSON_GetObjectItem(o, "debug_log_error"));
	cJSON_Delete(o);
	memset(&r, 0, sizeof(r));
	runner_debug_result(pat, "", &r);
	assert_non_null(strstr(r.debug_log_error, "ID is unknown"));
	rmdir(sub);
	rmdir(dir);
}

static void
test_spec_runtime(void **state)
{
	struct config c;
	struct runner_limits lim = { .timeout_s = 1, .max_output = 1,
	    .memory = 1 << 28, .cpus = 1 };
	struct container_start s = { .name = "cordon-00", .image = "sha256:1",
	    .lim = &lim };
	struct docker_spec spec;

	(void)state;
	config_defaults(&c);
	container_spec(&c, &s, &spec);
	assert_string_equal(spec.runtime, "cordon-offline");
	s.runtime = runner_debug_runtime(&c, RUNNER_NET_NONE);
	container_spec(&c, &s, &spec);
	assert_string_equal(spec.runtime, "cordon-debug");
	assert_string_equal(spec.network, "none");
	assert_string_equal(runner_debug_runtime(&c, RUNNER_NET_PROXY),
	    "cordon-debug-egress");
}

static void
test_doctor_line(void **state)
{
	struct docker_runtime rt = { .path = "/usr/local/libexec/cordon/"
	    "runsc-debug", .args = "--network=none --debug --strace "
	    "--debug-log=/var/log/cordon/runsc-debug/%ID%/" };
	struct stat dir = { .st_uid = 0, .st_mode = S_IFDIR | 0700 };
	struct doctor_line l;

	(void)state;
	doctor_debug_line("cordon-debug", 0, &rt, &dir, &l);
	assert_int_equal(l.verdict, DOCTOR_OK);
	assert_non_null(strstr(l.detail, "logs in "
	    "/var/log/cordon/runsc-debug/, root only"));
	doctor_debug_line("cordon-debug", -ENOENT, &rt, &dir, &l);
	assert_int_equal(l.verdict, DOCTOR_INFO);
	assert_non_null(strstr(l.detail, "not registered"));
	doctor_debug_line("cordon-debug", 0, &rt, NULL, &l);
	assert_int_equal(l.verdict, DOCTOR_WARN);
	assert_non_null(strstr(l.detail, "is missing"));
	dir.st_mode = S_IFDIR | 0755;
	doctor_debug_line("cordon-debug", 0, &rt, &dir, &l);
	assert_int_equal(l.verdict, DOCTOR_WARN);
	assert_non_null(strstr(l.detail, "readable by others than root"));
	dir.st_mode = S_IFDIR | 0700;
	dir.st_uid = 1000;
	doctor_debug_line("cordon-debug", 0, &rt, &dir, &l);
	assert_int_equal(l.verdict, DOCTOR_WARN);
	dir.st_uid = 0;
	strcpy(rt.args, "--network=none --debug --debug-log=/d/%ID%/");
	doctor_debug_line("cordon-debug", 0, &rt, &dir, &l);
	assert_int_equal(l.verdict, DOCTOR_WARN);
	assert_non_null(strstr(l.detail, "no --strace"));
	assert_non_null(strstr(l.hint, "scripts/setup"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_dir),
		cmocka_unit_test(test_result),
		cmocka_unit_test(test_spec_runtime),
		cmocka_unit_test(test_doctor_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
