/*
 * A run's sandbox: one set of operations over the container a job runs
 * in, whichever way it came: started cold by a `docker run -i` CLI
 * (sandbox_cli.c), started cold over the Engine API (sandbox_api.c), or
 * taken warm from the pool (sandbox_warm.c). runner_run acquires one,
 * hands it the code, waits, collects and releases it through these, with
 * no test of which it is. Internal to the runner.
 */
#ifndef CORDON_RUNNER_SANDBOX_H
#define CORDON_RUNNER_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cbuf.h"
#include "common/proc.h"
#include "runner/result.h"

struct apirun;
struct container_start;
struct run;
struct runner_sandbox;

struct runner_sandbox_ops {
	/* Proxy mode, once started: sealed (if it is not yet) and
	 * registered with the proxy under NAME with POLICY; no code is
	 * written before. 0 or a negative errno (the caller stops it). */
	int (*egress)(struct run *r, const char *name, const char *policy,
	    char *err, size_t errlen);
	/* Feeds stdin and reads the capped streams until the job ends (0),
	 * the deadline (-ETIMEDOUT), a cancel (-EINTR), a --keep head cap
	 * (-EFBIG) or a broken stream (another negative errno). */
	int (*communicate)(struct run *r);
	/* Live output: each chunk as it is read (fn NULL clears). */
	void (*set_output)(struct runner_sandbox *sb, proc_output_fn fn,
	    void *arg);
	struct cbuf *(*out)(struct runner_sandbox *sb);
	struct cbuf *(*err)(struct runner_sandbox *sb);
	void (*get_times)(const struct runner_sandbox *sb,
	    struct proc_times *t);
	/* Whether the exit is known when its wait answered (t.exited: the
	 * API) rather than when its streams closed (a CLI's attach ends
	 * with the container). */
	bool exit_at_wait;
	/* The job's exit code, once communicate returned 0. */
	int (*exit_code)(const struct runner_sandbox *sb);
	/* A job that did not end by itself: its step times so far into t,
	 * no more reading into the result, the container killed while its
	 * streams are still drained until UNTIL_MS, then the streams
	 * closed. */
	void (*halt)(struct run *r, const char *name, int64_t until_ms,
	    struct proc_times *t);
	/* Removes, now, a container that never ran the code or was halted
	 * (even while its create may still be under way); kills and reaps
	 * the CLI. */
	void (*stop)(struct run *r, const char *name);
	/* A job that ended by itself with r->cli_exit: whether its sandbox
	 * died under it (warm: the job was an exec), false for a container
	 * that is the job's own. */
	bool (*died)(struct run *r);
	/* An ended job's container, once its end state is known: removed
	 * now (cold; timing_ms and a removal from outside say so) or at
	 * release, after the answer (warm). */
	void (*ended)(struct run *r, const char *name);
	/* Last: removes what is left (a warm one's container, off the
	 * answer's path), frees the CLIs, gives back the pool's count of
	 * runs in flight. */
	void (*release)(struct run *r);
};

struct runner_sandbox {
	const struct runner_sandbox_ops *ops;	/* NULL: none acquired */
	struct proc *p;			/* the job's CLI: run, or (warm) exec */
	struct proc *holder;		/* warm: the container's `docker run` */
	struct apirun *api;		/* cold over the Engine API */
	bool missed;			/* it missed req->pool (counted there
					 * until released) */
	bool exec_lost;			/* warm: its sandbox died, the exec's
					 * CLI was killed */
	bool remove_later;		/* warm, ended by itself: removed at
					 * release, by this name */
	char name[RUNNER_NAME_MAX];
};

/* Acquires the run's sandbox (sandbox.c): a warm one from req->pool when
 * the run can use one, else a cold one over the Engine API (offline,
 * not debug, the API usable) or by the CLI; in proxy mode sealed and
 * registered. NAME is the cold container's name (res->container, which
 * a warm take replaces with its own). 0 or a negative errno with err
 * set; r->sb is then released by run_cleanup. A start cut short by the
 * deadline or a cancel is 0 with r->timed_out or r->cancelled set. */
int runner_sandbox_acquire(struct run *r, struct runner_result *res,
    char *err, size_t errlen);

/* Releases r->sb, acquired or not (ops->release, then a pool miss's
 * count given back); the sandbox is empty afterwards. */
void runner_sandbox_release(struct run *r);

/* Each way's start (sandbox_warm.c, sandbox_api.c, sandbox_cli.c). warm:
 * 1 taken, with res->container its name; 0 to start cold; or a negative
 * errno. */
int runner_sandbox_warm_take(struct run *r, struct runner_result *res,
    char *err, size_t errlen);
int runner_sandbox_api_start(struct run *r, const struct container_start *cs,
    const char *name, char *err, size_t errlen);
int runner_sandbox_cli_start(struct run *r, const struct container_start *cs,
    char *err, size_t errlen);

/* The operations over a CLI's process (sb->p), which the cold CLI and
 * the warm way (its exec) share (sandbox_cli.c), and the cold ways'
 * ended: removed now. */
void runner_sandbox_proc_set_output(struct runner_sandbox *sb,
    proc_output_fn fn, void *arg);
struct cbuf *runner_sandbox_proc_out(struct runner_sandbox *sb);
struct cbuf *runner_sandbox_proc_err(struct runner_sandbox *sb);
void runner_sandbox_proc_get_times(const struct runner_sandbox *sb,
    struct proc_times *t);
int runner_sandbox_proc_exit_code(const struct runner_sandbox *sb);
void runner_sandbox_proc_halt(struct run *r, const char *name,
    int64_t until_ms, struct proc_times *t);
void runner_sandbox_proc_stop(struct run *r, const char *name);
void runner_sandbox_remove_now(struct run *r, const char *name);

/* The run's stdin (sandbox.c): the proxy credential line (proxy mode),
 * the --out wrapper's line, the code, into r->input. 0 or -errno. */
int runner_sandbox_input(struct run *r, const char *name);
/* Bytes of stdout to keep: the job's cap, plus the --out archive. */
size_t runner_sandbox_stdout_cap(const struct run *r);

#endif
