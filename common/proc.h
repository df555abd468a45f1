/*
 * Child processes from an argv (never a shell): close-on-exec pipes for
 * stdin/stdout/stderr, the child in its own process group, output kept up to
 * a cap per stream (the rest drained and counted), I/O pumped with poll()
 * against a monotonic deadline, kill of the whole group, always reaped.
 */
#ifndef CORDON_COMMON_PROC_H
#define CORDON_COMMON_PROC_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cbuf.h"

struct proc;

/* Gets each chunk read from the child's stdout (stream 1) or stderr
 * (stream 2) as it is read, before the stream's cap applies, on the thread
 * that runs proc_communicate. It must not block: the deadline and the
 * cancel flag are only looked at between chunks. */
typedef void (*proc_output_fn)(void *arg, int stream, const void *data,
    size_t len);

struct proc_opts {
	const char *const *argv;	/* argv[0] is looked up in PATH */
	const char *const *envp;	/* NULL: inherit the environment */
	const char *cwd;		/* NULL: inherit */
	const void *stdin_data;		/* written to the child's stdin, which */
	size_t stdin_len;		/*   is then closed (may be empty) */
	size_t stdout_max;		/* bytes kept per stream; the rest is */
	size_t stderr_max;		/*   read and discarded (never blocks) */
	enum cbuf_keep stdout_keep;	/* which part the caps keep (cbuf.h); */
	enum cbuf_keep stderr_keep;	/*   zero: the head */
	bool stdin_hold;		/* keep stdin open with nothing to write
					 * until proc_feed (stdin_data unused) */
	bool stop_at_cap;		/* a stream kept as CBUF_KEEP_HEAD that
					 * passes its cap is closed there (its
					 * writer gets EPIPE) and
					 * proc_communicate returns -EFBIG */
	struct cbuf **stderr_out;	/* proc_call only (NULL: not wanted):
					 * gets its stderr as its out gets
					 * the stdout; see proc_call */
};

/* Starts the child. Returns 0 and *out (caller frees with proc_free), or a
 * negative errno: -ENOENT/-EACCES when argv[0] cannot be executed (reported
 * back from the child), -ENOMEM, ... On failure nothing is left running. */
int proc_spawn(const struct proc_opts *opts, struct proc **out);

/* Pumps stdin/stdout/stderr until the child has closed both outputs and
 * exited (returns 0), until deadline_ms on CLOCK_MONOTONIC (see
 * time_mono_ms; <= 0 means none) passes (-ETIMEDOUT, child still running),
 * or until *cancel becomes non-zero (-EINTR; cancel may be NULL, and may
 * be set from another thread or a signal handler: atomic_int is lock-free
 * on every target, so a handler may store to it); with stop_at_cap, -EFBIG
 * as soon as a stream was closed at its cap (once per cut). May be called
 * again after -ETIMEDOUT/-EINTR/-EFBIG, e.g. after killing the child. */
int proc_communicate(struct proc *p, int64_t deadline_ms,
    const atomic_int *cancel);

/* For a child spawned with stdin_hold that nothing has read from yet:
 * sets the per-stream caps (both keeping as keep says) and what to write
 * to its stdin (then closed); the next proc_communicate writes it. 0, or
 * -EBUSY when the child was not held or output was already read,
 * -ENOMEM. */
int proc_feed(struct proc *p, const void *data, size_t len,
    size_t stdout_max, size_t stderr_max, enum cbuf_keep keep);

/* Like proc_communicate, but returns 0 as soon as the child has closed
 * both outputs (and stdin was written), without waiting for its exit:
 * for a caller that learns the outcome another way (the docker API's
 * wait) and reaps later. */
int proc_communicate_streams(struct proc *p, int64_t deadline_ms,
    const atomic_int *cancel);

/* When each end of the child came, on the monotonic clock in ms (0: not
 * yet): stdin fed (proc_feed), stdin closed, the first output byte read,
 * both outputs closed, reaped (seen by this side: proc_communicate polls
 * the exit in 10 ms ticks). */
struct proc_times {
	int64_t fed, stdin_closed, first_output, outputs_closed, exited;
};
void proc_get_times(const struct proc *p, struct proc_times *t);

/* Sets (fn non-NULL) or clears the chunk callback; arg is fn's. */
void proc_set_output(struct proc *p, proc_output_fn fn, void *arg);

/* Sets stop_at_cap (proc_opts) after the spawn: for a held child, whose
 * caps come with proc_feed. */
void proc_stop_at_cap(struct proc *p, bool on);

/* From now on every byte read is dropped unseen (not kept, not counted,
 * not shown to the output callback), and nothing more is written to the
 * child's stdin (closed): the drain while a stopped child's last output
 * is read so that its writer never blocks. */
void proc_discard(struct proc *p);

/* Stops reading: closes both output pipes (a writer then gets EPIPE) and
 * stdin. The child is not signalled, and proc_gone still tells whether it
 * exited. */
void proc_close_outputs(struct proc *p);

/* Without blocking: true when the child has exited or has closed its
 * stdout (an EOF read here, not proc_close_outputs). For a held child that should still be waiting. An exited child is
 * not reaped here (its pid stays reserved until proc_reap, proc_communicate
 * or proc_free reap it). */
bool proc_gone(struct proc *p);

/* Sends sig to the child's whole process group (no-op once reaped). */
void proc_kill(struct proc *p, int sig);

/* Waits for the child until deadline_ms; past it, SIGKILLs the group and
 * waits for good. Returns 0 (always reaps). */
int proc_reap(struct proc *p, int64_t deadline_ms);

pid_t proc_pid(const struct proc *p);
bool proc_reaped(const struct proc *p);
/* Exit code, or -1 when killed by a signal or not yet reaped. */
int proc_exit_code(const struct proc *p);
/* Terminating signal, or 0. */
int proc_term_signal(const struct proc *p);
/* Borrowed; valid until proc_free. */
struct cbuf *proc_stdout(struct proc *p);
struct cbuf *proc_stderr(struct proc *p);

/* Kills (SIGKILL to the group) and reaps the child if still running, then
 * frees. Accepts NULL. */
void proc_free(struct proc *p);

/* Convenience: spawn, pump, and at the timeout SIGKILL the group; always
 * reaps. */
struct proc_result {
	int exit_code;		/* -1 when signalled */
	int term_signal;	/* 0 when exited */
	bool timed_out;
	struct cbuf *out;	/* owned; freed by proc_result_cleanup */
	struct cbuf *err;
	int64_t duration_ms;
};

/* Returns 0 when the child ran (whatever its exit code), or a negative errno
 * when it could not be started. timeout_ms <= 0 means no timeout. */
int proc_run(const struct proc_opts *opts, int64_t timeout_ms,
    struct proc_result *res);
void proc_result_cleanup(struct proc_result *res);

/* The one way Cordon calls a tool (docker, iptables, ...) and judges the
 * outcome. Runs opts->argv to completion with a timeout (<= 0: none; at the
 * timeout the group is SIGKILLed and reaped). Returns:
 *   0          it exited 0;
 *   -EIO       it exited non-zero or was killed by a signal: err holds the
 *              first line of its stderr, else "ARGV0 exited with N";
 *   -ETIMEDOUT it ran past timeout_ms ("ARGV0 timed out after N ms");
 *   other < 0  it could not be started ("cannot run ARGV0: why").
 * *status (may be NULL) gets the exit code, 128 + signal, or -1 when it did
 * not run to an exit. *out (may be NULL) gets its stdout (caller
 * cbuf_frees) whenever it ran to an exit (0 or -EIO), else NULL; check
 * cbuf_truncated(*out) against opts->stdout_max when a cut matters.
 * *opts->stderr_out, when set, gets its whole stderr (up to stderr_max)
 * the same way: for a caller that wants what a tool said even when it
 * passed, beyond err's first line when it failed. */
int proc_call(const struct proc_opts *opts, int64_t timeout_ms,
    struct cbuf **out, int *status, char *err, size_t errlen);

#endif
