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
#include <sys/resource.h>
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

struct seen_chunks {
	struct cbuf *all[3];		/* by stream */
	int calls;
};

static void
on_chunk(void *arg, int stream, const void *data, size_t len)
{
	struct seen_chunks *c = arg;

	assert_true(stream == 1 || stream == 2);
	assert_true(len > 0);
	assert_true(cbuf_append(c->all[stream], data, len) >= 0);
	c->calls++;
}

/* Caps that keep both ends, and the chunk callback: every byte of each
 * stream reaches the callback in order, whatever the cap keeps. */
static void
test_keep_both_and_output_callback(void **state)
{
	const char *argv[] = { "sh", "-c", "printf 'first\\n'; "
	    "head -c 200000 /dev/zero | tr '\\0' x; printf '\\nlast\\n'; "
	    "printf 'e1\\n' >&2; head -c 5000 /dev/zero | tr '\\0' y >&2; "
	    "printf '\\ne2\\n' >&2", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 1000,
	    .stderr_max = 100, .stdout_keep = CBUF_KEEP_BOTH,
	    .stderr_keep = CBUF_KEEP_TAIL };
	struct seen_chunks c = { .all = { NULL, cbuf_new(1 << 20),
	    cbuf_new(1 << 20) } };
	const char *out, *err;
	struct proc *p;

	(void)state;
	assert_int_equal(proc_spawn(&o, &p), 0);
	proc_set_output(p, on_chunk, &c);
	assert_int_equal(proc_communicate(p, time_mono_ms() + 10000, NULL), 0);
	out = cbuf_data(proc_stdout(p));
	err = cbuf_data(proc_stderr(p));
	assert_true(cbuf_len(proc_stdout(p)) <= 1000);
	assert_int_equal(strncmp(out, "first\nxxx", 9), 0);
	assert_non_null(strstr(out, "\n[cordon: "));
	assert_non_null(strstr(out, " bytes dropped here]\nxxx"));
	assert_int_equal(strcmp(out + strlen(out) - 6, "\nlast\n"), 0);
	assert_true(cbuf_truncated(proc_stdout(p)));
	assert_int_equal(strncmp(err, "[cordon: ", 9), 0);
	assert_int_equal(strcmp(err + strlen(err) - 5, "y\ne2\n"), 0);
	assert_int_equal(cbuf_len(c.all[1]), 6 + 200000 + 6);
	assert_int_equal(cbuf_len(c.all[2]), 3 + 5000 + 4);
	assert_int_equal(strncmp(cbuf_data(c.all[1]), "first\nx", 7), 0);
	assert_true(c.calls >= 2);
	proc_free(p);
	cbuf_free(c.all[1]);
	cbuf_free(c.all[2]);
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

/* stop_at_cap: a head-kept stream past its cap is closed there, so its
 * writer gets EPIPE at once (Python's write raises BrokenPipeError and it
 * says so on stderr), and communicate says -EFBIG once; without it, the
 * same flood is read to its end. */
static void
test_stop_at_cap_closes_the_pipe(void **state)
{
	const char *argv[] = { "python3", "-c", "import sys\n"
	    "try:\n"
	    "    while True: sys.stdout.write('y' * 65536)\n"
	    "except BrokenPipeError:\n"
	    "    sys.stderr.write('EPIPE'); sys.stderr.flush(); sys.exit(7)\n",
	    NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 1000,
	    .stderr_max = 100, .stop_at_cap = true };
	const char *tail[] = { "sh", "-c", "head -c 3000000 /dev/zero", NULL };
	struct proc *p;
	int64_t t0 = time_mono_ms();

	(void)state;
	assert_int_equal(proc_spawn(&o, &p), 0);
	assert_int_equal(proc_communicate(p, t0 + 20000, NULL), -EFBIG);
	assert_int_equal(cbuf_len(proc_stdout(p)), 1000);
	assert_true(cbuf_truncated(proc_stdout(p)));
	/* The stopped stream does not make the child look gone. */
	assert_int_equal(proc_communicate(p, t0 + 20000, NULL), 0);
	assert_int_equal(proc_exit_code(p), 7);
	assert_string_equal(cbuf_data(proc_stderr(p)), "EPIPE");
	assert_true(time_mono_ms() - t0 < 10000);
	proc_free(p);
	/* A tail-kept stream is never cut: read to the end. */
	o.argv = tail;
	o.stdout_keep = CBUF_KEEP_TAIL;
	assert_int_equal(proc_spawn(&o, &p), 0);
	assert_int_equal(proc_communicate(p, time_mono_ms() + 20000, NULL), 0);
	assert_int_equal(cbuf_seen(proc_stdout(p)), 3000000);
	assert_int_equal(proc_exit_code(p), 0);
	proc_free(p);
}

/* The drain of a stopped child: discard drops what comes (not kept, not
 * counted, not shown), close_outputs stops reading without making a
 * running child look gone. */
static void
test_discard_and_close_outputs(void **state)
{
	const char *argv[] = { "sh", "-c", "printf first; sleep 0.3; "
	    "head -c 500000 /dev/zero; sleep 30", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 20,
	    .stderr_max = 100 };
	struct proc *p;
	int64_t t0 = time_mono_ms();

	(void)state;
	assert_int_equal(proc_spawn(&o, &p), 0);
	while (cbuf_len(proc_stdout(p)) < 5 && time_mono_ms() - t0 < 5000)
		(void)proc_communicate(p, time_mono_ms() + 50, NULL);
	assert_string_equal(cbuf_data(proc_stdout(p)), "first");
	proc_discard(p);
	assert_int_equal(proc_communicate_streams(p, time_mono_ms() + 1500,
	    NULL), -ETIMEDOUT);
	assert_int_equal(cbuf_seen(proc_stdout(p)), 5);
	proc_close_outputs(p);
	assert_false(proc_gone(p));
	proc_kill(p, SIGKILL);
	assert_int_equal(proc_communicate(p, time_mono_ms() + 5000, NULL), 0);
	assert_true(proc_gone(p));
	proc_free(p);
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
	atomic_int cancel = 1;
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

/* --- stdin_hold / proc_feed / proc_gone (the warm pool's primitives) --- */

static struct proc *
spawn_held(const char *const *argv)
{
	struct proc_opts o = { .argv = argv, .stdout_max = 4096,
	    .stderr_max = 4096, .stdin_hold = true,
	    /* Ignored with stdin_hold: must never reach the child. */
	    .stdin_data = "IGNORED", .stdin_len = 7 };
	struct proc *p = NULL;

	assert_int_equal(proc_spawn(&o, &p), 0);
	assert_non_null(p);
	return p;
}

/* Polls proc_gone until it says true or ms pass. */
static bool
gone_within(struct proc *p, int64_t ms)
{
	int64_t end = time_mono_ms() + ms;

	while (!proc_gone(p)) {
		if (time_mono_ms() >= end)
			return false;
		usleep(10000);
	}
	return true;
}

static int64_t
cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static void
test_held_cat_waits(void **state)
{
	const char *argv[] = { "cat", NULL };
	struct proc *p = spawn_held(argv);

	(void)state;
	usleep(100000);
	assert_false(proc_gone(p));
	assert_false(proc_reaped(p));
	/* Still waiting, repeatedly, and proc_gone has no side effect. */
	usleep(50000);
	assert_false(proc_gone(p));
	proc_free(p);
}

static void
test_feed_caps_and_closes_stdin(void **state)
{
	const char *argv[] = { "cat", NULL };
	struct proc *p = spawn_held(argv);
	int64_t t0;

	(void)state;
	usleep(50000);
	assert_false(proc_gone(p));
	assert_int_equal(proc_feed(p, "hello", 5, 3, 100, CBUF_KEEP_HEAD), 0);
	/* Fed once: the proc is no longer held. */
	assert_int_equal(proc_feed(p, "again", 5, 3, 100, CBUF_KEEP_HEAD),
	    -EBUSY);
	t0 = time_mono_ms();
	assert_int_equal(proc_communicate(p, time_mono_ms() + 5000, NULL), 0);
	/* cat saw EOF after the fed bytes: well before the deadline. */
	assert_true(time_mono_ms() - t0 < 3000);
	assert_true(proc_reaped(p));
	assert_int_equal(proc_exit_code(p), 0);
	assert_string_equal(cbuf_data(proc_stdout(p)), "hel");
	assert_int_equal(cbuf_len(proc_stdout(p)), 3);
	assert_true(cbuf_truncated(proc_stdout(p)));
	assert_int_equal(cbuf_seen(proc_stdout(p)), 5);
	assert_int_equal(cbuf_len(proc_stderr(p)), 0);
	assert_int_equal(proc_feed(p, "again", 5, 3, 100, CBUF_KEEP_HEAD),
	    -EBUSY);
	proc_free(p);
}

static void
test_feed_empty_closes_stdin(void **state)
{
	const char *argv[] = { "cat", NULL };
	struct proc *p = spawn_held(argv);

	(void)state;
	assert_int_equal(proc_feed(p, NULL, 0, 10, 10, CBUF_KEEP_HEAD), 0);
	assert_int_equal(proc_communicate(p, time_mono_ms() + 5000, NULL), 0);
	assert_int_equal(proc_exit_code(p), 0);
	assert_int_equal(cbuf_len(proc_stdout(p)), 0);
	proc_free(p);
}

/* What a held child wrote to stderr while waiting (docker's warnings) is
 * kept under the caps given to proc_feed, as for a run started cold. */
static void
test_feed_keeps_early_stderr(void **state)
{
	const char *argv[] = { "sh", "-c", "echo early >&2; cat", NULL };
	struct proc *p = spawn_held(argv);

	(void)state;
	usleep(100000);
	assert_false(proc_gone(p));
	assert_int_equal(proc_feed(p, "abc", 3, 100, 100, CBUF_KEEP_HEAD), 0);
	assert_int_equal(proc_communicate(p, time_mono_ms() + 5000, NULL), 0);
	assert_string_equal(cbuf_data(proc_stdout(p)), "abc");
	assert_string_equal(cbuf_data(proc_stderr(p)), "early\n");
	proc_free(p);
}

static void
test_feed_not_held_is_busy(void **state)
{
	const char *argv[] = { "cat", NULL };
	struct proc_opts o = { .argv = argv, .stdin_data = "xy",
	    .stdin_len = 2, .stdout_max = 10, .stderr_max = 10 };
	struct proc *p;

	(void)state;
	assert_int_equal(proc_spawn(&o, &p), 0);
	assert_int_equal(proc_feed(p, "hello", 5, 10, 10, CBUF_KEEP_HEAD),
	    -EBUSY);
	assert_int_equal(proc_communicate(p, time_mono_ms() + 5000, NULL), 0);
	/* The refused feed changed nothing. */
	assert_string_equal(cbuf_data(proc_stdout(p)), "xy");
	assert_int_equal(proc_exit_code(p), 0);
	proc_free(p);
}

/* Output already read: too late to feed (the caps would be wrong). */
static void
test_feed_after_output_is_busy(void **state)
{
	const char *argv[] = { "sh", "-c", "echo out; exec cat", NULL };
	struct proc *p = spawn_held(argv);

	(void)state;
	assert_true(gone_within(p, 5000));	/* stdout readable */
	assert_int_equal(proc_communicate(p, time_mono_ms() + 300, NULL),
	    -ETIMEDOUT);
	assert_string_equal(cbuf_data(proc_stdout(p)), "out\n");
	assert_int_equal(proc_feed(p, "x", 1, 10, 10, CBUF_KEEP_HEAD), -EBUSY);
	proc_free(p);
}

static void
test_held_child_exiting_is_gone(void **state)
{
	const char *argv[] = { "sh", "-c", "exit 0", NULL };
	struct proc *p = spawn_held(argv);

	(void)state;
	assert_true(gone_within(p, 5000));
	assert_true(proc_gone(p));	/* and stays so */
	assert_int_equal(proc_reap(p, time_mono_ms() + 5000), 0);
	assert_int_equal(proc_exit_code(p), 0);
	proc_free(p);
}

/* A held child that closes stdout but lives on is no longer waiting. */
static void
test_held_child_closing_stdout_is_gone(void **state)
{
	const char *argv[] = { "sh", "-c", "exec >&-; exec sleep 30", NULL };
	struct proc *p = spawn_held(argv);

	(void)state;
	assert_true(gone_within(p, 5000));
	assert_false(proc_reaped(p));
	proc_free(p);
}

/* Until proc_reap/proc_communicate/proc_free, the exited child stays a
 * zombie: its pid (and so its process group id) cannot be reused by a
 * new process that a later group kill would then hit. */
static void
test_gone_keeps_pid_reserved(void **state)
{
	const char *argv[] = { "sh", "-c", "exit 5", NULL };
	struct proc *p = spawn_held(argv);
	char path[64];

	(void)state;
	assert_true(gone_within(p, 5000));
	assert_false(proc_reaped(p));
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)proc_pid(p));
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(proc_reap(p, time_mono_ms() + 5000), 0);
	assert_true(proc_reaped(p));
	assert_int_equal(proc_exit_code(p), 5);
	proc_free(p);
}

/* A held child that exits by itself: proc_communicate returns 0 once it
 * has exited, without writing to, or spinning on, the held stdin. */
static void
test_communicate_held_exit_no_spin(void **state)
{
	const char *argv[] = { "sh", "-c", "sleep 0.5; printf bye; exit 4",
	    NULL };
	struct proc *p = spawn_held(argv);
	int64_t t0 = time_mono_ms(), c0 = cpu_ms();

	(void)state;
	assert_int_equal(proc_communicate(p, time_mono_ms() + 10000, NULL), 0);
	assert_true(time_mono_ms() - t0 < 5000);
	/* Half a second of waiting: a busy loop would burn about that much
	 * CPU; poll()ing costs next to nothing. */
	assert_true(cpu_ms() - c0 < 250);
	assert_true(proc_reaped(p));
	assert_int_equal(proc_exit_code(p), 4);
	assert_string_equal(cbuf_data(proc_stdout(p)), "bye");
	proc_free(p);
}

/* A held child that waits: proc_communicate honours the deadline and
 * leaves it held (stdin not closed), so it can still be fed. */
static void
test_communicate_held_waiting_times_out(void **state)
{
	const char *argv[] = { "cat", NULL };
	struct proc *p = spawn_held(argv);
	int64_t c0 = cpu_ms();

	(void)state;
	assert_int_equal(proc_communicate(p, time_mono_ms() + 400, NULL),
	    -ETIMEDOUT);
	assert_true(cpu_ms() - c0 < 250);
	assert_false(proc_gone(p));
	assert_int_equal(proc_feed(p, "late", 4, 10, 10, CBUF_KEEP_HEAD), 0);
	assert_int_equal(proc_communicate(p, time_mono_ms() + 5000, NULL), 0);
	assert_string_equal(cbuf_data(proc_stdout(p)), "late");
	proc_free(p);
}

/* proc_call: one error convention for every tool Cordon calls. */
static void
test_call_conventions(void **state)
{
	const char *ok[] = { "sh", "-c", "echo out; echo noise >&2", NULL };
	const char *fail[] = { "sh", "-c", "echo partial; echo 'boom: why' >&2; "
	    "echo second >&2; exit 3", NULL };
	const char *silent[] = { "sh", "-c", "exit 4", NULL };
	const char *slow[] = { "sleep", "5", NULL };
	const char *none[] = { "/nonexistent/cordon-tool", NULL };
	struct proc_opts o = { .stdout_max = 4096, .stderr_max = 4096 };
	struct cbuf *out;
	char err[128];
	int status;

	(void)state;
	o.argv = ok;
	assert_int_equal(proc_call(&o, 5000, &out, &status, err, sizeof(err)), 0);
	assert_int_equal(status, 0);
	assert_string_equal(cbuf_data(out), "out\n");
	assert_string_equal(err, "");
	cbuf_free(out);

	o.argv = fail;
	assert_int_equal(proc_call(&o, 5000, &out, &status, err, sizeof(err)),
	    -EIO);
	assert_int_equal(status, 3);
	assert_string_equal(err, "boom: why");
	assert_string_equal(cbuf_data(out), "partial\n");
	cbuf_free(out);

	o.argv = silent;
	assert_int_equal(proc_call(&o, 5000, NULL, &status, err, sizeof(err)),
	    -EIO);
	assert_int_equal(status, 4);
	assert_string_equal(err, "sh exited with 4");

	o.argv = slow;
	assert_int_equal(proc_call(&o, 200, &out, &status, err, sizeof(err)),
	    -ETIMEDOUT);
	assert_null(out);
	assert_int_equal(status, -1);
	assert_string_equal(err, "sleep timed out after 200 ms");

	o.argv = none;
	assert_int_equal(proc_call(&o, 5000, &out, NULL, err, sizeof(err)),
	    -ENOENT);
	assert_null(out);
	assert_non_null(strstr(err, "cannot run /nonexistent/cordon-tool"));
}

/* proc_call's stderr_out: the whole stderr, on a pass as on a failure
 * (err keeps only its first line), capped as stderr_max says; NULL when
 * the tool did not run to an exit. */
static void
test_call_stderr_out(void **state)
{
	const char *ok[] = { "sh", "-c", "echo out; echo said >&2; "
	    "echo more >&2", NULL };
	const char *fail[] = { "sh", "-c", "echo 'boom: why' >&2; "
	    "echo second >&2; exit 3", NULL };
	const char *slow[] = { "sh", "-c", "echo early >&2; sleep 5", NULL };
	const char *none[] = { "/nonexistent/cordon-tool", NULL };
	struct cbuf *out, *e = NULL, *held;
	struct proc_opts o = { .stdout_max = 4096, .stderr_max = 4096,
	    .stderr_out = &e };
	char err[128];
	int status;

	(void)state;
	o.argv = ok;
	assert_int_equal(proc_call(&o, 5000, &out, &status, err, sizeof(err)), 0);
	assert_string_equal(cbuf_data(out), "out\n");
	assert_non_null(e);
	assert_string_equal(cbuf_data(e), "said\nmore\n");
	assert_string_equal(err, "");
	cbuf_free(out);
	cbuf_free(e);

	o.argv = fail;
	assert_int_equal(proc_call(&o, 5000, NULL, &status, err, sizeof(err)),
	    -EIO);
	assert_int_equal(status, 3);
	assert_string_equal(err, "boom: why");
	assert_non_null(e);
	assert_string_equal(cbuf_data(e), "boom: why\nsecond\n");
	cbuf_free(e);

	/* Kept as the cap says. */
	o.argv = ok;
	o.stderr_max = 4;
	assert_int_equal(proc_call(&o, 5000, NULL, NULL, err, sizeof(err)), 0);
	assert_non_null(e);
	assert_string_equal(cbuf_data(e), "said");
	assert_true(cbuf_truncated(e));
	cbuf_free(e);
	o.stderr_max = 4096;

	/* Not run to an exit: NULL, whatever *stderr_out held. */
	assert_non_null(held = cbuf_new(16));
	e = held;
	o.argv = slow;
	assert_int_equal(proc_call(&o, 200, NULL, NULL, err, sizeof(err)),
	    -ETIMEDOUT);
	assert_null(e);
	e = held;
	o.argv = none;
	assert_int_equal(proc_call(&o, 5000, NULL, NULL, err, sizeof(err)),
	    -ENOENT);
	assert_null(e);
	cbuf_free(held);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stdout_and_exit_code),
		cmocka_unit_test(test_stdin_roundtrip),
		cmocka_unit_test(test_cap_drains_without_blocking),
		cmocka_unit_test(test_keep_both_and_output_callback),
		cmocka_unit_test(test_stop_at_cap_closes_the_pipe),
		cmocka_unit_test(test_discard_and_close_outputs),
		cmocka_unit_test(test_timeout_kills_group),
		cmocka_unit_test(test_exec_failure_reported),
		cmocka_unit_test(test_cancel_and_manual_kill),
		cmocka_unit_test(test_child_closing_stdin_early),
		cmocka_unit_test(test_env_is_exactly_given),
		cmocka_unit_test(test_held_cat_waits),
		cmocka_unit_test(test_feed_caps_and_closes_stdin),
		cmocka_unit_test(test_feed_empty_closes_stdin),
		cmocka_unit_test(test_feed_keeps_early_stderr),
		cmocka_unit_test(test_feed_not_held_is_busy),
		cmocka_unit_test(test_feed_after_output_is_busy),
		cmocka_unit_test(test_held_child_exiting_is_gone),
		cmocka_unit_test(test_held_child_closing_stdout_is_gone),
		cmocka_unit_test(test_gone_keeps_pid_reserved),
		cmocka_unit_test(test_communicate_held_exit_no_spin),
		cmocka_unit_test(test_communicate_held_waiting_times_out),
		cmocka_unit_test(test_call_conventions),
		cmocka_unit_test(test_call_stderr_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
