/* Unit tests for subprocess handling, against real small programs. */
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
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"

static void
test_stdout_and_exit_code(void **state)
{
	const char *argv[] = { "sh", "-c", "printf out; printf err >&2; exit 3", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 100, .stderr_max = 100 };
	struct proc_result r;
	(void)state;
	assert_int_equal(proc_run(&o, 5000, &r), 0);
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.term_signal, 0);
	assert_false(r.timed_out);
	assert_string_equal(cbuf_data(r.out), "out");
	assert_string_equal(cbuf_data(r.err), "err");
	proc_result_cleanup(&r);
}

static void
test_stdin_roundtrip(void **state)
{
	static char big[300000];
	const char *argv[] = { "cat", NULL };
	struct proc_opts o = { .argv = argv, .stdin_data = big,
	    .stdin_len = sizeof(big), .stdout_max = sizeof(big), .stderr_max = 10 };
	struct proc_result r;
	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(proc_run(&o, 5000, &r), 0);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(cbuf_len(r.out), sizeof(big));
	assert_memory_equal(cbuf_data(r.out), big, sizeof(big));
	proc_result_cleanup(&r);
}

static void
test_cap_drains_without_blocking(void **state)
{
	/* 64 MiB of output with a 1 KiB cap: must finish, not deadlock. */
	const char *argv[] = { "head", "-c", "67108864", "/dev/zero", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 1024, .stderr_max = 1024 };
	struct proc_result r;
	(void)state;
	assert_int_equal(proc_run(&o, 20000, &r), 0);
	assert_false(r.timed_out);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(cbuf_len(r.out), 1024);
	assert_true(cbuf_truncated(r.out));
	assert_int_equal(cbuf_seen(r.out), 67108864ULL);
	proc_result_cleanup(&r);
}

static bool
alive(pid_t pid)
{
	char path[64], *stat = NULL;
	const char *paren;
	bool live;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (util_read_file(path, 4096, &stat, NULL) < 0)
		return false;
	paren = strrchr(stat, ')');
	live = paren != NULL && paren[1] == ' ' && paren[2] != 'Z';
	free(stat);
	return live;
}

static void
test_timeout_kills_group(void **state)
{
	char pidfile[] = "/tmp/cordon-proc-XXXXXX";
	char script[512], *text = NULL;
	int fd = mkstemp(pidfile);
	struct proc_result r;
	int64_t t0;
	long gpid;
	(void)state;
	assert_true(fd >= 0);
	close(fd);
	/* The grandchild must die with the group, not be orphaned. */
	snprintf(script, sizeof(script), "sleep 30 & echo $! > %s; wait", pidfile);
	{
		const char *argv[] = { "sh", "-c", script, NULL };
		struct proc_opts o = { .argv = argv, .stdout_max = 10, .stderr_max = 10 };
		t0 = time_mono_ms();
		assert_int_equal(proc_run(&o, 300, &r), 0);
	}
	assert_true(time_mono_ms() - t0 < 3000);
	assert_true(r.timed_out);
	assert_int_equal(r.exit_code, -1);
	assert_int_equal(r.term_signal, SIGKILL);
	assert_int_equal(util_read_file(pidfile, 64, &text, NULL), 0);
	gpid = strtol(text, NULL, 10);
	assert_true(gpid > 1);
	/* Give the kernel a moment to deliver the group SIGKILL. The orphan
	 * may linger as a zombie if init is slow to reap: that counts as dead. */
	for (int i = 0; i < 200 && alive((pid_t)gpid); i++)
		usleep(10000);
	assert_false(alive((pid_t)gpid));
	free(text);
	unlink(pidfile);
	proc_result_cleanup(&r);
}

static void
test_exec_failure_reported(void **state)
{
	const char *argv[] = { "/nonexistent/cordon-no-such-program", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 10, .stderr_max = 10 };
	struct proc *p = (struct proc *)0x1;
	(void)state;
	assert_int_equal(proc_spawn(&o, &p), -ENOENT);
	assert_null(p);
}

static void
test_cancel_and_manual_kill(void **state)
{
	const char *argv[] = { "sleep", "30", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 10, .stderr_max = 10 };
	volatile sig_atomic_t cancel = 1;
	struct proc *p;
	(void)state;
	assert_int_equal(proc_spawn(&o, &p), 0);
	assert_int_equal(proc_communicate(p, 0, &cancel), -EINTR);
	assert_false(proc_reaped(p));
	proc_kill(p, SIGTERM);
	assert_int_equal(proc_reap(p, time_mono_ms() + 5000), 0);
	assert_true(proc_reaped(p));
	assert_int_equal(proc_term_signal(p), SIGTERM);
	assert_int_equal(proc_exit_code(p), -1);
	proc_free(p);
}

static void
test_child_closing_stdin_early(void **state)
{
	/* The child exits without reading 1 MiB of stdin: no SIGPIPE death. */
	static char big[1 << 20];
	const char *argv[] = { "true", NULL };
	struct proc_opts o = { .argv = argv, .stdin_data = big,
	    .stdin_len = sizeof(big), .stdout_max = 10, .stderr_max = 10 };
	struct proc_result r;
	(void)state;
	assert_int_equal(proc_run(&o, 5000, &r), 0);
	assert_int_equal(r.exit_code, 0);
	proc_result_cleanup(&r);
}

static void
test_env_is_exactly_given(void **state)
{
	const char *argv[] = { "/usr/bin/env", NULL };
	const char *envp[] = { "ONLY=1", NULL };
	struct proc_opts o = { .argv = argv, .envp = envp, .stdout_max = 100,
	    .stderr_max = 100 };
	struct proc_result r;
	(void)state;
	assert_int_equal(proc_run(&o, 5000, &r), 0);
	assert_string_equal(cbuf_data(r.out), "ONLY=1\n");
	proc_result_cleanup(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stdout_and_exit_code),
		cmocka_unit_test(test_stdin_roundtrip),
		cmocka_unit_test(test_cap_drains_without_blocking),
		cmocka_unit_test(test_timeout_kills_group),
		cmocka_unit_test(test_exec_failure_reported),
		cmocka_unit_test(test_cancel_and_manual_kill),
		cmocka_unit_test(test_child_closing_stdin_early),
		cmocka_unit_test(test_env_is_exactly_given),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
