/* Unit tests for the host-wide run slots: the bound, the wait and its
 * deadline, cancel, a slot freed by its holder's exit or SIGKILL, and
 * slot files left over from a larger bound. Real files and processes; no
 * container. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "runner/slot.h"
#include "tmpdir.h"

static struct config cfg;

static int
setup(void **state)
{
	if (tmpdir_setup(state) != 0)
		return -1;
	config_defaults(&cfg);
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/state", tmpdir);
	cfg.limits.max_concurrent_runs = 2;
	cfg.limits.queue_timeout_s = 0;
	return 0;
}

static void
test_bound(void **state)
{
	struct runner_slot a, b, c;
	char err[256] = "";
	(void)state;
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &a, err,
	    sizeof(err)), 0);
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &b, err,
	    sizeof(err)), 0);
	assert_int_equal(a.index, 0);
	assert_int_equal(b.index, 1);
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &c, err,
	    sizeof(err)), -EBUSY);
	assert_int_equal(c.fd, -1);
	assert_string_equal(err, "no run slot became free within 0s: 2 runs "
	    "are going on this host (limits.max_concurrent_runs)");
	runner_slot_release(&a);
	assert_int_equal(a.fd, -1);
	runner_slot_release(&a);	/* twice: harmless */
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &c, err,
	    sizeof(err)), 0);
	assert_int_equal(c.index, 0);
	runner_slot_release(&b);
	runner_slot_release(&c);
}

static void
test_deadline_and_cancel(void **state)
{
	struct runner_slot a, b, c;
	atomic_int cancel = 1;
	char err[256] = "";
	int64_t t0;
	(void)state;
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &a, err,
	    sizeof(err)), 0);
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &b, err,
	    sizeof(err)), 0);
	cfg.limits.queue_timeout_s = 1;
	t0 = time_mono_ms();
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &c, err,
	    sizeof(err)), -EBUSY);
	assert_true(time_mono_ms() - t0 >= 1000);
	assert_true(time_mono_ms() - t0 < 2500);
	assert_non_null(strstr(err, "within 1s"));
	assert_int_equal(runner_slot_acquire(&cfg, &cancel, &c, err,
	    sizeof(err)), -EINTR);
	assert_string_equal(err, "cancelled while waiting for a run slot");
	cfg.limits.queue_timeout_s = 0;
	runner_slot_release(&a);
	runner_slot_release(&b);
}

/* A child takes both slots, says so, then exits after hold_ms or waits
 * to be killed (hold_ms < 0). */
static pid_t
holder(int hold_ms)
{
	int p[2];
	pid_t pid;
	char ch;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct runner_slot a, b;
		char err[256];
		close(p[0]);
		if (runner_slot_acquire(&cfg, NULL, &a, err, sizeof(err)) < 0 ||
		    runner_slot_acquire(&cfg, NULL, &b, err, sizeof(err)) < 0)
			_exit(1);
		(void)write(p[1], "x", 1);
		if (hold_ms < 0)
			pause();
		(void)poll(NULL, 0, hold_ms);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &ch, 1), 1);
	close(p[0]);
	return pid;
}

static void
test_waits_for_holder_exit(void **state)
{
	struct runner_slot s;
	char err[256] = "";
	int status;
	pid_t pid;
	(void)state;
	pid = holder(400);
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &s, err,
	    sizeof(err)), -EBUSY);
	cfg.limits.queue_timeout_s = 10;
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &s, err,
	    sizeof(err)), 0);
	cfg.limits.queue_timeout_s = 0;
	assert_true(s.waited_ms >= 300);
	assert_true(s.waited_ms < 3000);
	runner_slot_release(&s);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void
test_sigkill_frees(void **state)
{
	struct runner_slot s;
	char err[256] = "";
	int status;
	pid_t pid;
	(void)state;
	pid = holder(-1);
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &s, err,
	    sizeof(err)), -EBUSY);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	/* Free as soon as the holder is gone: no wait needed. */
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &s, err,
	    sizeof(err)), 0);
	runner_slot_release(&s);
}

/* A lower bound ignores the slot files of a higher one, held or not. */
static void
test_lower_bound(void **state)
{
	struct runner_slot a, b, c;
	char err[256] = "";
	(void)state;
	cfg.limits.max_concurrent_runs = 3;
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &a, err,
	    sizeof(err)), 0);
	cfg.limits.max_concurrent_runs = 1;
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &b, err,
	    sizeof(err)), -EBUSY);
	cfg.limits.max_concurrent_runs = 3;
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &b, err,
	    sizeof(err)), 0);
	assert_int_equal(runner_slot_acquire(&cfg, NULL, &c, err,
	    sizeof(err)), 0);
	assert_int_equal(c.index, 2);
	runner_slot_release(&a);
	runner_slot_release(&b);
	runner_slot_release(&c);
	cfg.limits.max_concurrent_runs = 2;
}

static void
test_unusable_state_dir(void **state)
{
	struct config c = cfg;
	struct runner_slot s;
	char err[256] = "";
	(void)state;
	snprintf(c.state_dir, sizeof(c.state_dir), "/proc/self/cordon");
	assert_true(runner_slot_acquire(&c, NULL, &s, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "/proc/self/cordon/slots"));
	assert_int_equal(s.fd, -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_deadline_and_cancel),
		cmocka_unit_test(test_waits_for_holder_exit),
		cmocka_unit_test(test_sigkill_frees),
		cmocka_unit_test(test_lower_bound),
		cmocka_unit_test(test_unusable_state_dir),
	};
	return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
