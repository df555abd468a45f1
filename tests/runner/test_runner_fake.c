/* Unit tests of the runner's process handling against a fake docker CLI
 * (tests/runner/fake-docker.sh): a run that hangs before starting must hit
 * the deadline and be removed by name; exit 137 is oom only when inspect
 * says so; floods are capped; refusals are errors; cancel removes; gc
 * picks the right containers and says why docker would not remove one. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/container.h"
#include "runner/runner.h"
#define FAKE_DOCKER_SUITE NULL
#include "fake_docker.h"

static char *
read_log(void)
{
	return fake_docker_log(&fk);
}

static int
run_mode(const char *mode, struct runner_request *q,
    struct runner_result *res, char *err, size_t errlen)
{
	unlink(fk.log);
	setenv("FAKE_MODE", mode, 1);
	return runner_run(&fk.cfg, q, res, err, errlen);
}

static void
test_ok_code_on_stdin_only(void **state)
{
	static const char code[] = "print('MARKER-7f3a')\n";
	struct runner_request q = { .code = code, .code_len = strlen(code),
	    .session = "sess1" };
	struct runner_result res;
	char err[256], *log;

	(void)state;
	assert_int_equal(run_mode("ok", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 3);
	assert_string_equal(res.out, code);	/* the fake echoes stdin */
	assert_string_equal(res.err, "to-stderr\n");
	assert_int_equal(strncmp(res.container, "cordon-", 7), 0);
	assert_int_equal(strlen(res.container), 23);
	log = read_log();
	assert_null(strstr(log, "MARKER-7f3a"));	/* never on argv */
	assert_non_null(strstr(log, "cordon.session=sess1"));
	assert_true(fake_docker_removed(log, res.container));
	free(log);
	runner_result_cleanup(&res);
}

static void
test_hang_before_start_hits_deadline(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1,
	    .timeout_s = 1 };
	struct runner_result res;
	char err[256], *log;
	int64_t t0 = time_mono_ms();

	(void)state;
	assert_int_equal(run_mode("hang", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_TIMEOUT);
	assert_int_equal(res.exit_code, -1);
	assert_true(time_mono_ms() - t0 >= 1000);
	assert_true(time_mono_ms() - t0 < 5000);
	log = read_log();
	assert_true(fake_docker_removed(log, res.container));
	free(log);
	runner_result_cleanup(&res);
}

static void
test_closed_outputs_then_hang(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1,
	    .timeout_s = 1 };
	struct runner_result res;
	char err[256], *log;

	(void)state;
	assert_int_equal(run_mode("close", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_TIMEOUT);
	log = read_log();
	assert_true(fake_docker_removed(log, res.container));
	free(log);
	runner_result_cleanup(&res);
}

static void
test_oom_only_when_inspect_says(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1 };
	struct runner_result res;
	char err[256], *log;

	(void)state;
	assert_int_equal(run_mode("oom", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_OOM);
	assert_int_equal(res.exit_code, 137);
	log = read_log();
	/* Inspected before removal. */
	assert_true(strstr(log, "inspect") < strstr(log, "rm -f"));
	free(log);
	runner_result_cleanup(&res);
	assert_int_equal(run_mode("kill137", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 137);
	runner_result_cleanup(&res);
}

static void
test_flood_is_capped(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1,
	    .max_output = 4096, .timeout_s = 30 };
	struct runner_result res;
	struct rusage before, after;
	char err[256];

	(void)state;
	getrusage(RUSAGE_SELF, &before);
	assert_int_equal(run_mode("flood", &q, &res, err, sizeof(err)), 0);
	getrusage(RUSAGE_SELF, &after);
	assert_int_equal(res.status, RUNNER_OUTPUT_TRUNCATED);
	assert_int_equal(res.out_len, 4096);
	assert_int_equal(res.err_len, 4096);
	assert_true(res.out_truncated);
	assert_true(res.err_truncated);
	/* 400 MB went through; our peak grew by far less. */
	assert_true(after.ru_maxrss - before.ru_maxrss < 32 * 1024);
	runner_result_cleanup(&res);
}

/* The deadline under a flood the daemon relays (mode stuck: its kill
 * waits until the streams are read, as dockerd's does): the container is
 * killed while its streams are drained, then removed, and the run returns
 * within its timeout plus 2 s, saying where the time went. Before, the
 * removal waited with nobody reading: 15 s for the `docker rm -f`, then
 * retries until CONTAINER_ABORT_MS. */
static void
test_flood_deadline_holds(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1,
	    .max_output = 4096, .timeout_s = 1, .keep = "both" };
	struct runner_result res;
	char err[256], *log;
	int64_t t0 = time_mono_ms(), took;

	(void)state;
	assert_int_equal(run_mode("stuck", &q, &res, err, sizeof(err)), 0);
	took = time_mono_ms() - t0;
	assert_int_equal(res.status, RUNNER_TIMEOUT);
	assert_int_equal(res.exit_code, -1);
	assert_true(took >= 1000);
	assert_true(took < 3000);
	/* Head and tail read before the stop are kept. */
	assert_int_equal(res.out_len, 4096);
	assert_true(res.out_truncated);
	assert_non_null(memmem(res.out, res.out_len, "bytes dropped here]", 19));
	/* Every step that happened has its time; the job never exited by
	 * itself, and was not inspected. */
	assert_true(res.timing.stdin_ms >= 0);
	assert_true(res.timing.run_ms >= 0);
	assert_true(res.timing.exit_ms >= 0);
	assert_true(res.timing.stop_ms >= 0);
	assert_true(res.timing.remove_ms >= 0);
	assert_int_equal(res.timing.cli_ms, -1);
	assert_int_equal(res.timing.inspect_ms, -1);
	assert_true(res.timing.stdin_ms + res.timing.run_ms +
	    res.timing.exit_ms >= 900);
	log = read_log();
	/* Killed first, then removed by name. */
	assert_non_null(strstr(log, "kill cordon-"));
	assert_true(strstr(log, "kill cordon-") < strstr(log, "rm -f"));
	assert_true(fake_docker_removed(log, res.container));
	free(log);
	runner_result_cleanup(&res);
}

/* --keep head: a stream past its cap is closed, and the run ends there
 * with output_truncated, long before its deadline. Before, it ran to the
 * deadline and then waited on its removal as above. */
static void
test_keep_head_flood_ends_at_cap(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1,
	    .max_output = 4096, .timeout_s = 10, .keep = "head" };
	struct runner_result res;
	char err[256], *log;
	int64_t t0 = time_mono_ms();

	(void)state;
	assert_int_equal(run_mode("stuck", &q, &res, err, sizeof(err)), 0);
	assert_true(time_mono_ms() - t0 < 3000);
	assert_int_equal(res.status, RUNNER_OUTPUT_TRUNCATED);
	assert_int_equal(res.exit_code, -1);
	assert_int_equal(res.out_len, 4096);
	assert_true(res.out_truncated);
	assert_true(res.timing.stop_ms >= 0);
	log = read_log();
	assert_true(fake_docker_removed(log, res.container));
	free(log);
	runner_result_cleanup(&res);
	/* A flood that ends by itself is still read whole with tail. */
	q.keep = "tail";
	assert_int_equal(run_mode("flood", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_OUTPUT_TRUNCATED);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.timing.stop_ms, -1);
	runner_result_cleanup(&res);
}

static void
test_refusal_is_an_error(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1 };
	struct runner_result res;
	char err[256];

	(void)state;
	assert_int_equal(run_mode("refuse", &q, &res, err, sizeof(err)),
	    -ENOENT);
	/* The fake's `info` lists only runc: preflight names the runtime. */
	assert_non_null(strstr(err, "cordon-offline"));
	assert_non_null(strstr(err, "not registered"));
	assert_null(res.out);
	/* A job that itself exits 125 after starting is a result. */
	assert_int_equal(run_mode("user125", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 125);
	runner_result_cleanup(&res);
}

static void
test_cancel_removes(void **state)
{
	atomic_int cancel = 1;
	struct runner_request q = { .code = "x", .code_len = 1,
	    .timeout_s = 30, .cancel = &cancel };
	struct runner_result res;
	char err[256], *log;
	int64_t t0 = time_mono_ms();

	(void)state;
	assert_int_equal(run_mode("hang", &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_CLOSED_EARLY);
	assert_true(time_mono_ms() - t0 < 5000);
	log = read_log();
	assert_true(fake_docker_removed(log, res.container));
	free(log);
	runner_result_cleanup(&res);
}

static void
test_proxy_refused_and_preflight(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1,
	    .net = RUNNER_NET_PROXY };
	struct runner_result res;
	char err[256], *log;

	(void)state;
	/* No egress network in this test's config: refused before docker
	 * is ever asked to run anything. */
	assert_int_equal(run_mode("ok", &q, &res, err, sizeof(err)), -ENETDOWN);
	assert_non_null(strstr(err, "cordon net up"));
	log = read_log();
	assert_false(strncmp(log, "run ", 4) == 0 || strstr(log, "\nrun ") != NULL);
	free(log);
	assert_int_equal(runner_preflight(&fk.cfg, RUNNER_NET_NONE, err,
	    sizeof(err)), -ENOENT);
}

/* require_probe on and no probe recorded: refused, docker never called. */
static void
test_require_probe_fails_closed(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1 };
	struct runner_result res;
	char err[256], *log;

	(void)state;
	fk.cfg.require_probe = true;
	assert_int_equal(run_mode("ok", &q, &res, err, sizeof(err)), -ENOENT);
	fk.cfg.require_probe = false;
	assert_non_null(strstr(err, "cordon probe --net none"));
	log = read_log();
	assert_false(strncmp(log, "run ", 4) == 0 || strstr(log, "\nrun ") != NULL);
	free(log);
}

static void
test_gc_selects(void **state)
{
	char ps[128], text[512], *log, stage[4][320];
	struct timeval old[2] = { { 1000000, 0 }, { 1000000, 0 } };
	long now = (long)(time_wall_ms() / 1000);
	int removed;
	char err[256];

	(void)state;
	snprintf(ps, sizeof(ps), "%s/ps.txt", fk.dir);
	snprintf(text, sizeof(text),
	    "cordon-live\t%ld\t%ld\n"		/* owner alive, in time */
	    "cordon-expired\t%ld\t%ld\n"	/* deadline passed */
	    "cordon-orphan\t999999999\t%ld\n"	/* owner gone */
	    "cordon-nolabels\t\t\n"
	    "other-name\t1\t1\n",
	    (long)getpid(), now + 100, (long)getpid(), now - 5, now + 100);
	assert_int_equal(util_write_file_atomic(ps, text, strlen(text), 0600),
	    0);
	setenv("FAKE_PS", ps, 1);
	for (int i = 0; i < 4; i++) {
		static const char *const names[] = { "cordon-expired.a1",
		    "cordon-live.b2", "cordon-gone.c3", "cordon-fresh.d4" };
		snprintf(stage[i], sizeof(stage[i]), "%s/in/%s", fk.cfg.state_dir,
		    names[i]);
		assert_int_equal(util_mkdir_p(stage[i], 0755), 0);
	}
	assert_int_equal(utimes(stage[2], old), 0);
	unlink(fk.log);
	assert_int_equal(runner_gc(&fk.cfg, false, &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 3);
	log = read_log();
	assert_non_null(strstr(log,
	    "rm -f cordon-expired cordon-orphan cordon-nolabels\n"));
	assert_null(strstr(log, "cordon-live"));
	free(log);
	/* Staging dirs: of removed containers, and stale unlisted ones. */
	assert_int_equal(access(stage[0], F_OK), -1);	/* expired */
	assert_int_equal(access(stage[1], F_OK), 0);	/* live */
	assert_int_equal(access(stage[2], F_OK), -1);	/* stale, unlisted */
	assert_int_equal(access(stage[3], F_OK), 0);	/* fresh, unlisted */
	unlink(fk.log);
	assert_int_equal(runner_gc(&fk.cfg, true, &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 4);
	log = read_log();
	assert_non_null(strstr(log, "rm -f cordon-live cordon-expired"));
	free(log);
}

/* A removal docker refuses is reported with docker's own words: the
 * reason (a runtime that cannot kill its sandbox) is what a person needs,
 * and gc's err used to stop at "`docker rm -f` failed". */
static void
test_gc_rm_failure_says_why(void **state)
{
	char ps[128], text[128], want[512], err[512];
	long now = (long)(time_wall_ms() / 1000);
	int removed;

	(void)state;
	snprintf(ps, sizeof(ps), "%s/ps.txt", fk.dir);
	snprintf(text, sizeof(text), "cordon-stuck\t%ld\t%ld\n",
	    (long)getpid(), now - 5);
	assert_int_equal(util_write_file_atomic(ps, text, strlen(text), 0600),
	    0);
	setenv("FAKE_PS", ps, 1);
	setenv("FAKE_RM_FAIL", "cordon-stuck", 1);
	assert_int_equal(runner_gc(&fk.cfg, false, &removed, err, sizeof(err)),
	    -EIO);
	unsetenv("FAKE_RM_FAIL");
	assert_int_equal(removed, 0);
	snprintf(want, sizeof(want), "`%s rm -f` failed: Error response from "
	    "daemon: Could not kill running container cordon-stuck, cannot "
	    "remove", fk.cfg.docker);
	assert_string_equal(err, want);
}

static int
count_lines(const char *log, const char *line)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, line)) != NULL; p++)
		if ((p == log || p[-1] == '\n') && p[strlen(line)] == '\n')
			n++;
	return n;
}

/* A removal that finds another in progress (dockerd's 409) asks again
 * until it is done: the one in progress may fail and leave the container
 * running (a probe's warm container was left so in CI). Before, the first
 * "already in progress" counted as removed. */
static void
test_remove_busy_asks_again(void **state)
{
	static const char code[] = "print(1)\n";
	struct runner_request q = { .code = code, .code_len = strlen(code) };
	struct runner_result res;
	char err[256], line[64], *log;

	(void)state;
	unlink(fk.log);
	setenv("FAKE_RM_BUSY", "3", 1);
	assert_int_equal(container_remove(&fk.cfg, "cordon-busy1"), 0);
	log = read_log();
	assert_int_equal(count_lines(log, "rm -f cordon-busy1"), 4);
	free(log);
	/* A run's own removal, the same way. */
	setenv("FAKE_RM_BUSY", "2", 1);
	assert_int_equal(run_mode("ok", &q, &res, err, sizeof(err)), 0);
	unsetenv("FAKE_RM_BUSY");
	log = read_log();
	snprintf(line, sizeof(line), "rm -f %s", res.container);
	assert_int_equal(count_lines(log, line), 3);
	assert_true(fake_docker_removed(log, res.container));
	free(log);
	runner_result_cleanup(&res);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok_code_on_stdin_only),
		cmocka_unit_test(test_hang_before_start_hits_deadline),
		cmocka_unit_test(test_closed_outputs_then_hang),
		cmocka_unit_test(test_oom_only_when_inspect_says),
		cmocka_unit_test(test_flood_is_capped),
		cmocka_unit_test(test_flood_deadline_holds),
		cmocka_unit_test(test_keep_head_flood_ends_at_cap),
		cmocka_unit_test(test_refusal_is_an_error),
		cmocka_unit_test(test_cancel_removes),
		cmocka_unit_test(test_proxy_refused_and_preflight),
		cmocka_unit_test(test_require_probe_fails_closed),
		cmocka_unit_test(test_gc_selects),
		cmocka_unit_test(test_gc_rm_failure_says_why),
		cmocka_unit_test(test_remove_busy_asks_again),
	};
	return cmocka_run_group_tests(tests, fake_suite_setup,
	    fake_suite_teardown);
}
