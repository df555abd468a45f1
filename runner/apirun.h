/*
 * One cold run's container driven over the Engine API socket instead of a
 * `docker run -i` process (issue 16): create, attach (hijacked, stdin
 * half-closed after the job's input), wait?condition=next-exit on its own
 * connection, start; then the attach stream is demultiplexed
 * (dockerframe.h) into capped buffers exactly as the CLI's pipes fill
 * them (proc.h), and the wait's answer is the exit code. Removal and the
 * end-state inspection stay with the caller (runner.c), by name.
 * Internal to the runner.
 */
#ifndef CORDON_RUNNER_APIRUN_H
#define CORDON_RUNNER_APIRUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cbuf.h"
#include "common/config.h"
#include "common/proc.h"
#include "runner/docker_argv.h"

/* The create body for s: JSON (caller frees), the same container as
 * docker_run_argv(c, s) makes, proxy mode's included. 0, -EINVAL
 * (docker_spec_check), -ENOTSUP (an extra option other than --dns=ADDR
 * and --env K=V) or -ENOMEM. Pure. */
int dockerapi_create_body(const struct config *c, const struct docker_spec *s,
    char **out);

struct apirun;

struct apirun_opts {
	const char *sock;		/* DOCKERAPI_SOCKET, or a test's */
	const char *name;		/* the container's */
	const char *body;		/* dockerapi_create_body's */
	const void *input;		/* stdin, then half-closed */
	size_t input_len;
	size_t stdout_max, stderr_max;
	enum cbuf_keep stdout_keep, stderr_keep;
	bool stop_at_cap;		/* as proc_opts': a stream kept as
					 * CBUF_KEEP_HEAD past its cap ends the
					 * reading (one connection carries both:
					 * it is shut) and apirun_communicate
					 * returns -EFBIG */
	bool hold_input;		/* no byte of input before
					 * apirun_communicate (proxy mode:
					 * not before the container is sealed
					 * and registered); else what the
					 * socket takes is written before the
					 * start, as `docker run -i` does */
};

/* A session holding copies of what it needs from o (caller frees with
 * apirun_free). 0 or -ENOMEM/-EINVAL. */
int apirun_new(const struct apirun_opts *o, struct apirun **out);

/* Creates, attaches, asks for the wait, starts; every step before
 * deadline_ms (monotonic). 0 (started; apirun_communicate writes what
 * of the input the socket did not take before the start: all of it with
 * hold_input); -ETIMEDOUT; -EINTR (*cancel set; cancel may be
 * NULL); -EIO with the daemon's answer in err (refused create or start:
 * apirun_http_status says which status, apirun_created whether the
 * container exists); another errno for the socket (err says which step). */
int apirun_start(struct apirun *a, int64_t deadline_ms,
    const atomic_int *cancel, char *err, size_t errlen);

/* Writes the input, reads both streams into the capped buffers, until
 * the attach stream ended and the wait answered (or its connection
 * ended: then apirun_exit_code is -1): 0; -ETIMEDOUT at deadline_ms;
 * -EINTR when *cancel is set; -EFBIG when stop_at_cap shut the attach
 * stream at a cap (once). May be called again after those. */
int apirun_communicate(struct apirun *a, int64_t deadline_ms,
    const atomic_int *cancel);

/* As proc_discard: from now on what the attach stream carries is read
 * and dropped unseen, and no more input is written (stdin half-closed). */
void apirun_discard(struct apirun *a);

/* Stops reading: closes the attach and wait connections (the daemon's
 * writes to them fail instead of blocking). */
void apirun_close(struct apirun *a);

/* The wait's StatusCode; -1 when there was none (a wait that failed, a
 * malformed stream: the run cannot be trusted). */
int apirun_exit_code(const struct apirun *a);

/* Whether the create was answered 201 (a container by that name exists
 * unless removed since). */
bool apirun_created(const struct apirun *a);
int apirun_http_status(const struct apirun *a);

/* Borrowed; valid until apirun_free. */
struct cbuf *apirun_stdout(struct apirun *a);
struct cbuf *apirun_stderr(struct apirun *a);

/* As proc_get_times: stdin half-closed, first output byte, attach stream
 * ended; exited = the wait's answer. */
void apirun_get_times(const struct apirun *a, struct proc_times *t);

/* Live output, as proc_set_output (fn NULL clears). */
void apirun_set_output(struct apirun *a, proc_output_fn fn, void *arg);

/* Closes the connections (the container is the caller's to remove).
 * Accepts NULL. */
void apirun_free(struct apirun *a);

#endif
