/* Sessions (runner/session.h): the result-frame parser by a table of
 * edge cases (every proper prefix of a frame asks for more; a wrong nonce,
 * kind, number form or length is refused), the request header, and the
 * whole host side against the fake docker CLI running the real driver
 * program with this host's python3 (FAKE_MODE=python): state across
 * calls, an exception, SystemExit, caps with head and tail, a timeout
 * that ends the session and removes its container, a write into the
 * result stream that ends it, and the code never on argv. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/runner.h"
#include "runner/session.h"
#include "fake_docker.h"

#define NONCE "0123456789abcdef0123456789abcdef"
#define HDR(rest) "\0CSF1 " NONCE " " rest

static struct fake_docker fk;

/* A frame literal may hold NULs: its length is sizeof - 1. */
#define FRAME(s) s, sizeof(s) - 1

static void
test_frame_ok(void **state)
{
	static const char f[] = HDR("3 ok 0 2 2 3 10\n") "hiERR" "NEXT";
	struct runner_session_frame fr;

	(void)state;
	assert_int_equal(runner_session_frame_parse(f, sizeof(f) - 1, NONCE,
	    100, &fr), 0);
	assert_int_equal(fr.seq, 3);
	assert_int_equal(fr.kind, RUNNER_SESSION_OK);
	assert_int_equal(fr.exit_code, 0);
	assert_memory_equal(f + fr.out_off, "hi", 2);
	assert_int_equal(fr.out_len, 2);
	assert_int_equal(fr.out_seen, 2);
	assert_memory_equal(f + fr.err_off, "ERR", 3);
	assert_int_equal(fr.err_seen, 10);
	/* What follows the frame is not part of it. */
	assert_int_equal(fr.total, sizeof(f) - 1 - 4);
}

static void
test_frame_prefixes_want_more(void **state)
{
	static const char f[] = HDR("12 exc 1 3 3 0 0\n") "abc";
	struct runner_session_frame fr;

	(void)state;
	for (size_t n = 0; n < sizeof(f) - 1; n++)
		assert_int_equal(runner_session_frame_parse(f, n, NONCE, 100,
		    &fr), -EAGAIN);
	assert_int_equal(runner_session_frame_parse(f, sizeof(f) - 1, NONCE,
	    100, &fr), 0);
	assert_int_equal(fr.kind, RUNNER_SESSION_EXC);
	assert_int_equal(fr.exit_code, 1);
}

static void
test_frame_refused(void **state)
{
	static const struct { const char *s; size_t n; } bad[] = {
		{ FRAME("x") },
		{ FRAME("\0CSF2 ") },
		{ FRAME("\0CSF1 0123456789abcdef0123456789abcdeX") },
		{ FRAME("\0CSF1 " NONCE "x1 ok 0 0 0 0 0\n") },
		{ FRAME(HDR("1 maybe 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 256 0 0 0 0\n")) },
		{ FRAME(HDR("01 ok 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok -1 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok +1 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0 0 \n")) },
		{ FRAME(HDR("1 ok 0  0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 101 101 0 0\n")) },	/* over max */
		{ FRAME(HDR("1 ok 0 5 4 0 0\n")) },	/* more than seen */
		{ FRAME(HDR("1 ok 0 0 0 7 6\n")) },
		{ FRAME(HDR("0 ready 0 1 1 0 0\n")) },	/* ready carries nothing */
		{ FRAME(HDR("1 ready 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 99999999999999999999 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0 0\r\n")) },
	};
	struct runner_session_frame fr;
	char longhdr[RUNNER_SESSION_HDR_MAX + 10];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = runner_session_frame_parse(bad[i].s, bad[i].n, NONCE,
		    100, &fr);

		if (rc != -EPROTO)
			fail_msg("row %zu: %d", i, rc);
	}
	/* No '\n' within the header's maximum. */
	memcpy(longhdr, HDR("1 ok 0 0 0 0 0"), sizeof(HDR("")) - 1);
	memset(longhdr + sizeof(HDR("")) - 1, '1', sizeof(longhdr) -
	    sizeof(HDR("")) + 1);
	assert_int_equal(runner_session_frame_parse(longhdr, sizeof(longhdr),
	    NONCE, 100, &fr), -EPROTO);
	/* A bad nonce argument. */
	assert_int_equal(runner_session_frame_parse(FRAME(HDR("0 ready 0 0 0 "
	    "0 0\n")), "short", 100, &fr), -EPROTO);
}

static void
test_frame_ready(void **state)
{
	struct runner_session_frame fr;

	(void)state;
	assert_int_equal(runner_session_frame_parse(FRAME(HDR("0 ready 0 0 0 "
	    "0 0\n")), NONCE, 0, &fr), 0);
	assert_int_equal(fr.kind, RUNNER_SESSION_READY);
	assert_int_equal(fr.total, sizeof(HDR("0 ready 0 0 0 0 0\n")) - 1);
}

static void
test_call_header(void **state)
{
	char b[64], small[8];

	(void)state;
	assert_int_equal(runner_session_call_header(b, sizeof(b), 7, 12, 5, 5),
	    9);
	assert_string_equal(b, "7 12 5 5\n");
	assert_int_equal(runner_session_call_header(small, sizeof(small), 7,
	    123456, 5, 5), -ENOSPC);
}

static int
setup(void **state)
{
	(void)state;
	if (fake_docker_setup(&fk) < 0)
		return -1;
	setenv("FAKE_MODE", "python", 1);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return fake_docker_teardown(&fk);
}

static int
call(struct runner_session *s, const char *code, int64_t timeout_s,
    uint64_t max_output, struct runner_result *res)
{
	struct runner_request q = { .code = code, .code_len = strlen(code),
	    .timeout_s = timeout_s, .max_output = max_output };
	char err[256];
	int rc = runner_session_call(s, &q, res, err, sizeof(err));

	if (rc < 0)
		print_message("call: %s\n", err);
	return rc;
}

/* Entries of dir (not . and ..); -1 when it cannot be read. */
static int
dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static struct runner_session *
start(void)
{
	struct runner_session_opts o = { .label = "t.ses_1" };
	struct runner_session *s = NULL;
	char err[256];

	if (runner_session_start(&fk.cfg, &o, &s, err, sizeof(err)) < 0)
		fail_msg("start: %s", err);
	return s;
}

static void
test_state_across_calls(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char name[RUNNER_NAME_MAX], *log;

	(void)state;
	util_strlcpy(name, runner_session_container(s), sizeof(name));
	assert_int_equal(call(s, "x = 40 # MARKER-91c2\n", 10, 0, &res), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "");
	/* A call has none of a run's steps: -1, not 0. */
	assert_int_equal(res.timing.run_ms, -1);
	assert_int_equal(res.timing.stop_ms, -1);
	runner_result_cleanup(&res);
	assert_int_equal(call(s, "x += 1\n", 10, 0, &res), 0);
	runner_result_cleanup(&res);
	assert_int_equal(call(s, "import sys\nprint(x + 1)\n"
	    "print('e', file=sys.stderr)\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "42\n");
	assert_string_equal(res.err, "e\n");
	assert_string_equal(res.container, runner_session_container(s));
	runner_result_cleanup(&res);
	/* An exception: exit 1, the traceback, and the session goes on. */
	assert_int_equal(call(s, "1/0\n", 10, 0, &res), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 1);
	assert_non_null(strstr(res.err, "ZeroDivisionError"));
	assert_null(strstr(res.err, "exec("));	/* the driver's frame cut */
	runner_result_cleanup(&res);
	assert_int_equal(call(s, "raise SystemExit(7)\n", 10, 0, &res), 0);
	assert_int_equal(res.exit_code, 7);
	runner_result_cleanup(&res);
	/* stdin is /dev/null, not the next request. */
	assert_int_equal(call(s, "import sys\nprint(repr(sys.stdin.read()), "
	    "x)\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "'' 41\n");
	runner_result_cleanup(&res);
	assert_false(runner_session_ended(s));
	log = fake_docker_log(&fk);
	assert_null(strstr(log, "MARKER-91c2"));	/* never on argv */
	assert_non_null(strstr(log, "cordon.session=t.ses_1"));
	assert_non_null(strstr(log, "--network=none"));
	free(log);
	runner_session_free(s);
	log = fake_docker_log(&fk);
	assert_true(fake_docker_removed(log, name));
	free(log);
}

static void
test_caps_head_and_tail(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;

	(void)state;
	assert_int_equal(call(s, "print('H' + 'x' * 5000 + 'T')\n", 10, 100,
	    &res), 0);
	assert_int_equal(res.status, RUNNER_OUTPUT_TRUNCATED);
	assert_true(res.out_truncated);
	assert_int_equal(res.out[0], 'H');
	assert_non_null(strstr(res.out, "bytes dropped"));
	assert_non_null(strstr(res.out, "T\n"));
	runner_result_cleanup(&res);
	/* The session is fine after a flood. */
	assert_int_equal(call(s, "print('ok')\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "ok\n");
	assert_false(res.out_truncated);
	runner_result_cleanup(&res);
	runner_session_free(s);
}

static void
test_timeout_ends_session(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char name[RUNNER_NAME_MAX], err[128], *log;
	struct runner_request q = { .code = "1", .code_len = 1 };

	(void)state;
	util_strlcpy(name, runner_session_container(s), sizeof(name));
	assert_int_equal(call(s, "import time\ntime.sleep(30)\n", 1, 0, &res),
	    0);
	assert_int_equal(res.status, RUNNER_TIMEOUT);
	assert_true(runner_session_ended(s));
	runner_result_cleanup(&res);
	log = fake_docker_log(&fk);
	assert_true(fake_docker_removed(log, name));
	free(log);
	assert_int_equal(runner_session_call(s, &q, &res, err, sizeof(err)),
	    -ESHUTDOWN);
	runner_session_free(s);
}

static void
test_forged_bytes_end_session(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;

	(void)state;
	/* Every fd the code can write to, the driver's result stream too. */
	assert_int_equal(call(s, "import os\nfor fd in range(3, 64):\n try:\n"
	    "  os.write(fd, b'\\0CSF1 forged\\n')\n except OSError:\n  pass\n",
	    10, 0, &res), 0);
	assert_int_equal(res.status, RUNNER_SANDBOX_ERROR);
	assert_true(runner_session_ended(s));
	runner_result_cleanup(&res);
	runner_session_free(s);
}

static void
test_driver_exit_ends_session(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;

	(void)state;
	assert_int_equal(call(s, "import os\nos._exit(5)\n", 10, 0, &res), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 5);
	assert_true(runner_session_ended(s));
	runner_result_cleanup(&res);
	runner_session_free(s);
}

/* A container gone between calls (its `docker run` killed, as when
 * dockerd stops): seen without a call, with why; a live one is not. */
static void
test_gone_between_calls(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char why[160] = "";
	long pid;
	int64_t t0;

	(void)state;
	assert_false(runner_session_gone(s, why, sizeof(why)));
	/* FAKE_MODE=python: the driver is the `docker run` process. */
	assert_int_equal(call(s, "import os\nprint(os.getpid())\n", 10, 0,
	    &res), 0);
	pid = strtol(res.out, NULL, 10);
	runner_result_cleanup(&res);
	assert_true(pid > 1);
	assert_false(runner_session_gone(s, why, sizeof(why)));
	assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
	t0 = time_mono_ms();
	while (!runner_session_gone(s, why, sizeof(why)) &&
	    time_mono_ms() - t0 < 5000)
		usleep(20000);
	assert_non_null(strstr(why, "its container is gone"));
	assert_false(runner_session_ended(s));
	runner_session_end(s);
	assert_true(runner_session_ended(s));
	assert_false(runner_session_gone(s, why, sizeof(why)));
	runner_session_free(s);
}

/* --in paths are copied under the state dir, mounted read-only at /in,
 * and removed with the session. */
static void
test_in_files(void **state)
{
	char src[PATH_MAX], staged[PATH_MAX + 64], *log;
	const char *in[1] = { src };
	struct runner_session_opts o = { .label = "t.ses_in", .in = in,
	    .nin = 1 };
	struct runner_session *s = NULL;
	char err[256];

	(void)state;
	snprintf(src, sizeof(src), "%s/data.csv", fk.dir);
	assert_int_equal(util_write_file_atomic(src, "x,1\n", 4, 0644), 0);
	if (runner_session_start(&fk.cfg, &o, &s, err, sizeof(err)) < 0)
		fail_msg("start: %s", err);
	log = fake_docker_log(&fk);
	assert_non_null(strstr(log, ",dst=/in,readonly"));
	free(log);
	snprintf(staged, sizeof(staged), "%s/in", fk.cfg.state_dir);
	assert_true(dir_entries(staged) == 1);
	runner_session_free(s);
	assert_true(dir_entries(staged) == 0);
}

/* Net proxy needs the egress network up: without it the start is refused
 * before any container exists (the proxy-mode flow itself runs against a
 * real proxy in tests/netsetup/e2e_egress.sh). */
static void
test_proxy_needs_egress(void **state)
{
	struct runner_session_opts o = { .net = RUNNER_NET_PROXY };
	struct runner_session *s = NULL;
	char err[256], *log;

	(void)state;
	assert_true(runner_session_start(&fk.cfg, &o, &s, err,
	    sizeof(err)) < 0);
	assert_null(s);
	assert_non_null(strstr(err, "cordon net up"));
	log = fake_docker_log(&fk);
	assert_null(strstr(log, "run "));
	free(log);
}

/* A policy without net proxy is refused. */
static void
test_policy_needs_proxy(void **state)
{
	struct runner_session_opts o = { .net = RUNNER_NET_NONE,
	    .policy = "default" };
	struct runner_session *s = NULL;
	char err[256];

	(void)state;
	assert_int_equal(runner_session_start(&fk.cfg, &o, &s, err,
	    sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "only for net proxy"));
}

/* An unknown profile is refused by name. */
static void
test_unknown_profile(void **state)
{
	struct runner_session_opts o = { .profile = "nosuch" };
	struct runner_session *s = NULL;
	char err[256];

	(void)state;
	assert_int_equal(runner_session_start(&fk.cfg, &o, &s, err,
	    sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "nosuch"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_ok),
		cmocka_unit_test(test_frame_prefixes_want_more),
		cmocka_unit_test(test_frame_refused),
		cmocka_unit_test(test_frame_ready),
		cmocka_unit_test(test_call_header),
		cmocka_unit_test_setup_teardown(test_state_across_calls, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_caps_head_and_tail, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_timeout_ends_session,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_bytes_end_session,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_exit_ends_session,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_gone_between_calls, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_in_files, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_proxy_needs_egress, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_policy_needs_proxy, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_unknown_profile, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
