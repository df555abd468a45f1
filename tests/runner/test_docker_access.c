/* A docker that cannot be reached, and the audit rule. The sorting of
 * docker's errors (permission denied, not running, anything else) by a
 * table of the CLI's real messages and of socket errnos, and the one line
 * said for each; then, against the fake docker CLI (FAKE_MODE=denied /
 * down): a run is an error naming the cause and the fix, never a
 * sandbox_error result; gc says the same in full; the doctor tells
 * permission denied from not running. The audit rule: a run whose audit
 * log cannot be written is refused before docker is asked anything
 * (unless audit_required is false: then it runs, and says so), and a
 * line that cannot be written after the run withholds the result. */
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
#include "runner/docker.h"
#include "runner/doctor.h"
#include "runner/runner.h"
#define FAKE_DOCKER_SUITE NULL
#include "fake_docker.h"

static void
test_fault_text_table(void **state)
{
	static const struct {
		const char *text;
		enum docker_fault want;
	} rows[] = {
		/* docker 28.2 (measured here as a user outside `docker`). */
		{ "docker: permission denied while trying to connect to the "
		  "Docker daemon socket at unix:///var/run/docker.sock: Head "
		  "\"http://%2Fvar%2Frun%2Fdocker.sock/_ping\": dial unix "
		  "/var/run/docker.sock: connect: permission denied",
		  DOCKER_FAULT_DENIED },
		/* docker 20.10's. */
		{ "Got permission denied while trying to connect to the Docker "
		  "daemon socket at unix:///var/run/docker.sock: Get \"http://"
		  "%2Fvar%2Frun%2Fdocker.sock/v1.24/containers/json\": dial "
		  "unix /var/run/docker.sock: connect: permission denied",
		  DOCKER_FAULT_DENIED },
		/* Later clients say "API" for "daemon socket". */
		{ "permission denied while trying to connect to the docker API "
		  "at unix:///var/run/docker.sock", DOCKER_FAULT_DENIED },
		{ "error during connect: dial unix /run/user/1000/docker.sock: "
		  "connect: permission denied", DOCKER_FAULT_DENIED },
		{ "Cannot connect to the Docker daemon at unix:///var/run/"
		  "docker.sock. Is the docker daemon running?",
		  DOCKER_FAULT_DOWN },
		{ "docker: Cannot connect to the Docker daemon at unix:///tmp/x."
		  "sock. Is the docker daemon running?", DOCKER_FAULT_DOWN },
		{ "failed to connect to the docker API at unix:///var/run/"
		  "docker.sock; check if the path is correct and if the daemon "
		  "is running: dial unix /var/run/docker.sock: connect: no such "
		  "file or directory", DOCKER_FAULT_DOWN },
		{ "error during connect: dial unix /x.sock: connect: connection "
		  "refused", DOCKER_FAULT_DOWN },
		/* Not about reaching the daemon: a runtime's own permission
		 * error, refusals, and nothing at all. */
		{ "docker: Error response from daemon: OCI runtime create "
		  "failed: creating container: cannot set up cgroup for root: "
		  "configuring cgroup: mkdir /sys/fs/cgroup/cpu/x: permission "
		  "denied", DOCKER_FAULT_OTHER },
		{ "docker: Error response from daemon: Unknown runtime "
		  "specified cordon-offline.", DOCKER_FAULT_OTHER },
		{ "Error: No such container: cordon-x", DOCKER_FAULT_OTHER },
		{ "open /etc/x: permission denied", DOCKER_FAULT_OTHER },
		{ "", DOCKER_FAULT_OTHER },
		{ NULL, DOCKER_FAULT_OTHER },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum docker_fault got = docker_fault_text(rows[i].text);
		if (got != rows[i].want)
			fail_msg("row %zu (%s): got %d, want %d", i,
			    rows[i].text != NULL ? rows[i].text : "NULL",
			    (int)got, (int)rows[i].want);
	}
}

static void
test_fault_errno(void **state)
{
	(void)state;
	assert_int_equal(docker_fault_errno(-EACCES), DOCKER_FAULT_DENIED);
	assert_int_equal(docker_fault_errno(EACCES), DOCKER_FAULT_DENIED);
	assert_int_equal(docker_fault_errno(-EPERM), DOCKER_FAULT_DENIED);
	assert_int_equal(docker_fault_errno(-ENOENT), DOCKER_FAULT_DOWN);
	assert_int_equal(docker_fault_errno(-ECONNREFUSED), DOCKER_FAULT_DOWN);
	assert_int_equal(docker_fault_errno(-ETIMEDOUT), DOCKER_FAULT_OTHER);
	assert_int_equal(docker_fault_errno(-EIO), DOCKER_FAULT_OTHER);
	assert_int_equal(docker_fault_errno(0), DOCKER_FAULT_OTHER);
}

static void
test_fault_say(void **state)
{
	char err[512];

	(void)state;
	assert_int_equal(docker_fault_say(DOCKER_FAULT_DENIED,
	    "/var/run/docker.sock", NULL, err, sizeof(err)), -EHOSTUNREACH);
	assert_non_null(strstr(err, "docker-unavailable: cannot reach docker: "
	    "permission denied on /var/run/docker.sock: run cordon as root, "
	    "or as a member of the `docker` group"));
	assert_int_equal(strncmp(err, "docker-unavailable: ", 20), 0);
	assert_non_null(strstr(err, "audit"));
	assert_null(strchr(err, '\n'));
	assert_int_equal(docker_fault_say(DOCKER_FAULT_DOWN,
	    "/var/run/docker.sock", "no /var/run/docker.sock", err,
	    sizeof(err)), -EHOSTUNREACH);
	assert_string_equal(err, "docker-unavailable: cannot reach docker: "
	    "dockerd is not running (no /var/run/docker.sock): start it "
	    "(scripts/setup)");
	/* Only the detail's first line. */
	assert_int_equal(docker_fault_say(DOCKER_FAULT_OTHER, "docker",
	    "first\nsecond", err, sizeof(err)), -EHOSTUNREACH);
	assert_string_equal(err, "docker-unavailable: cannot reach docker "
	    "via docker: first");
	/* A short buffer is cut, never overrun. */
	assert_int_equal(docker_fault_say(DOCKER_FAULT_DENIED, NULL, NULL,
	    err, 16), -EHOSTUNREACH);
	assert_string_equal(err, "docker-unavaila");
}

static bool
log_has_run(void)
{
	char *log = fake_docker_log(&fk);
	bool ran = strncmp(log, "run ", 4) == 0 || strstr(log, "\nrun ") !=
	    NULL;

	free(log);
	return ran;
}

/* The docker CLI may not use the socket: before, this was exit 0 with a
 * sandbox_error result holding docker's message in the job's stderr. */
static void
test_run_denied_is_an_error(void **state)
{
	struct runner_request q = { .code = "print(1)", .code_len = 8 };
	struct runner_result res;
	char err[512];

	(void)state;
	unlink(fk.log);
	setenv("FAKE_MODE", "denied", 1);
	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)),
	    -EHOSTUNREACH);
	assert_non_null(strstr(err, "docker-unavailable: cannot reach docker: "
	    "permission denied"));
	assert_non_null(strstr(err, "run cordon as root"));
	assert_null(res.out);
	assert_null(res.err);
	setenv("FAKE_MODE", "down", 1);
	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)),
	    -EHOSTUNREACH);
	assert_non_null(strstr(err, "dockerd is not running (docker: Cannot "
	    "connect to the Docker daemon"));
	assert_non_null(strstr(err, "start it (scripts/setup)"));
	assert_null(res.out);
}

static void
test_gc_denied_says_it_whole(void **state)
{
	char err[512];
	int removed = -1;

	(void)state;
	setenv("FAKE_MODE", "denied", 1);
	assert_int_equal(runner_gc(&fk.cfg, false, &removed, err,
	    sizeof(err)), -EHOSTUNREACH);
	assert_int_equal(removed, 0);
	assert_non_null(strstr(err, "permission denied on the Docker socket: "
	    "run cordon as root"));
	assert_non_null(strstr(err, "audit rule)"));	/* the line's end */
}

static void
test_doctor_tells_denied_from_down(void **state)
{
	struct doctor_line lines[DOCTOR_MAX_LINES];

	(void)state;
	setenv("FAKE_MODE", "denied", 1);
	assert_int_equal(doctor_run(&fk.cfg, NULL, lines, DOCTOR_MAX_LINES), 1);
	assert_int_equal(lines[0].verdict, DOCTOR_FAIL);
	assert_non_null(strstr(lines[0].detail, "permission denied on the "
	    "Docker socket"));
	assert_null(strstr(lines[0].detail, "not running"));
	assert_non_null(strstr(lines[0].hint, "as root"));
	assert_non_null(strstr(lines[0].hint, "`docker` group"));
	setenv("FAKE_MODE", "down", 1);
	assert_int_equal(doctor_run(&fk.cfg, NULL, lines, DOCTOR_MAX_LINES), 1);
	assert_int_equal(lines[0].verdict, DOCTOR_FAIL);
	assert_non_null(strstr(lines[0].detail, "dockerd is not running"));
	assert_non_null(strstr(lines[0].hint, "start dockerd"));
}

/* The audit log's directory is a regular file: it cannot be written
 * (as root too, which the suite runs as). */
static void
audit_unwritable(char *path, size_t len)
{
	char file[160];

	snprintf(file, sizeof(file), "%s/not-a-dir", fk.dir);
	assert_int_equal(util_write_file_atomic(file, "x", 1, 0600), 0);
	snprintf(path, len, "%s/audit.log", file);
}

static void
test_audit_unwritable_refuses(void **state)
{
	struct runner_request q = { .code = "print(1)", .code_len = 8 };
	struct runner_result res;
	char err[512], saved[sizeof(fk.cfg.audit_log)];

	(void)state;
	setenv("FAKE_MODE", "ok", 1);
	memcpy(saved, fk.cfg.audit_log, sizeof(saved));
	audit_unwritable(fk.cfg.audit_log, sizeof(fk.cfg.audit_log));
	assert_true(fk.cfg.audit_required);	/* the default */
	assert_true(runner_audit_check(&fk.cfg, err, sizeof(err)) < 0);
	unlink(fk.log);
	assert_true(runner_run(&fk.cfg, &q, &res, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "cannot write the audit log"));
	assert_non_null(strstr(err, fk.cfg.audit_log));
	assert_non_null(strstr(err, "audit_required"));
	assert_null(res.out);
	assert_false(log_has_run());	/* refused before any container */
	/* audit_required false: the run goes ahead, its result says why it
	 * has no audit line. */
	fk.cfg.audit_required = false;
	assert_int_equal(runner_audit_check(&fk.cfg, err, sizeof(err)), 0);
	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)), 0);
	assert_true(log_has_run());
	assert_non_null(strstr(res.audit_error, "audit log"));
	runner_result_cleanup(&res);
	fk.cfg.audit_required = true;
	memcpy(fk.cfg.audit_log, saved, sizeof(saved));
}

/* Writable when the run was admitted, not after it: the result is
 * withheld (audit_required), or kept with audit_error (false). */
static void
test_audit_lost_after_the_run(void **state)
{
	struct runner_request q = { .code = "print(1)", .code_len = 8 };
	struct runner_result res;
	char err[512];

	(void)state;
	setenv("FAKE_MODE", "ok", 1);
	setenv("FAKE_BREAK_AUDIT", fk.cfg.audit_log, 1);
	assert_true(runner_run(&fk.cfg, &q, &res, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "audit line could not be written"));
	assert_non_null(strstr(err, "withheld"));
	assert_null(res.out);
	assert_int_equal(res.exit_code, -1);
	fk.cfg.audit_required = false;
	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)), 0);
	fk.cfg.audit_required = true;
	assert_non_null(strstr(res.audit_error, strerror(EISDIR)));
	assert_int_equal(res.status, RUNNER_OK);
	runner_result_cleanup(&res);
	unsetenv("FAKE_BREAK_AUDIT");
	assert_int_equal(util_rm_rf(fk.cfg.audit_log), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_text_table),
		cmocka_unit_test(test_fault_errno),
		cmocka_unit_test(test_fault_say),
		cmocka_unit_test(test_run_denied_is_an_error),
		cmocka_unit_test(test_gc_denied_says_it_whole),
		cmocka_unit_test(test_doctor_tells_denied_from_down),
		cmocka_unit_test(test_audit_unwritable_refuses),
		cmocka_unit_test(test_audit_lost_after_the_run),
	};
	return cmocka_run_group_tests(tests, fake_suite_setup,
	    fake_suite_teardown);
}
