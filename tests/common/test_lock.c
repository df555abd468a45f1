/* Unit tests for the file locks: exclusive between open files (so between
 * processes and between threads of one), a deadline and a cancel flag for
 * waiters, release on close and when the holder is SIGKILLed. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/lock.h"
#include "common/util.h"
#include "tmpdir.h"

static char path[128];

static int
setup(void **state)
{
	if (tmpdir_setup(state) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/x.lock", tmpdir);
	return 0;
}

static void
test_exclusive_and_release(void **state)
{
	int a, b;
	(void)state;
	a = util_lock_try(path);
	assert_true(a >= 0);
	/* A second open file of the same process conflicts too. */
	assert_int_equal(util_lock_try(path), -EWOULDBLOCK);
	close(a);
	b = util_lock_try(path);
	assert_true(b >= 0);
	close(b);
}

static void
test_wait_deadline_and_cancel(void **state)
{
	atomic_int cancel = 1;
	int64_t t0;
	int a;
	(void)state;
	a = util_lock_try(path);
	assert_true(a >= 0);
	t0 = time_mono_ms();
	assert_int_equal(util_lock_wait(path, t0 + 200, NULL), -ETIMEDOUT);
	assert_true(time_mono_ms() - t0 >= 200);
	assert_true(time_mono_ms() - t0 < 2000);
	assert_int_equal(util_lock_wait(path, t0 + 60000, &cancel), -EINTR);
	close(a);
	/* Free: taken at once even with the deadline already past. */
	a = util_lock_wait(path, 0, NULL);
	assert_true(a >= 0);
	close(a);
}

static void
test_symlink_refused(void **state)
{
	char link[160];
	(void)state;
	snprintf(link, sizeof(link), "%s/l.lock", tmpdir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(util_lock_try(link), -ELOOP);
	assert_int_equal(util_lock_try("/nonexistent-tmpdir/x.lock"), -ENOENT);
}

/* A holder killed by SIGKILL frees the lock: the kernel closes its files.
 * The waiter gets it within a poll interval or so of the death. */
static void
test_sigkill_frees(void **state)
{
	int p[2], fd, status;
	int64_t t0;
	pid_t pid;
	char ch;
	(void)state;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (util_lock_try(path) < 0)
			_exit(1);
		(void)write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &ch, 1), 1);
	close(p[0]);
	assert_int_equal(util_lock_try(path), -EWOULDBLOCK);
	assert_int_equal(kill(pid, SIGKILL), 0);
	t0 = time_mono_ms();
	fd = util_lock_wait(path, t0 + 5000, NULL);
	assert_true(fd >= 0);
	assert_true(time_mono_ms() - t0 < 1000);
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exclusive_and_release),
		cmocka_unit_test(test_wait_deadline_and_cancel),
		cmocka_unit_test(test_symlink_refused),
		cmocka_unit_test(test_sigkill_frees),
	};
	return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
