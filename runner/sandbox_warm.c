/*
 * The warm sandbox (sandbox.h): a container taken from the pool, started
 * by the same argv as a cold one with python (proxy mode: the prelude)
 * already waiting on stdin in an exec, and (egress mode) sealed. Its job
 * is that exec, watched with the sandbox's holder (its `docker run`);
 * its container is removed after the answer, on the pool's thread.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/proc.h"
#include "common/util.h"
#include "runner/container.h"
#include "runner/docker.h"
#include "runner/pool.h"
#include "runner/run_internal.h"
#include "runner/sandbox.h"

/* Proxy mode: sealed by the pool; registered under the address its seal
 * learned. proc_feed only queued the input: nothing is written before
 * communicate, so the proxy knows the run before the code runs. */
static int
warm_egress(struct run *r, const char *name, const char *policy, char *err,
    size_t errlen)
{
	return runner_run_register(r, name, r->addr, policy, err, errlen);
}

/* The exec, watched with its sandbox: when the sandbox dies (memory),
 * runsc's exec may never end. Once the holder's `docker run` has ended,
 * the exec gets RUN_HOLDER_GRACE_MS to end too, then its CLI is killed,
 * and the run is judged by the container's end state (runner_run_finish).
 * proc_communicate's result. */
static int
warm_communicate(struct run *r)
{
	struct runner_sandbox *sb = &r->sb;
	int64_t slice;
	int rc;

	for (;;) {
		slice = time_mono_ms() + 100;
		rc = proc_communicate(sb->p, slice < r->deadline ? slice :
		    r->deadline, r->req->cancel);
		if (rc != -ETIMEDOUT || time_mono_ms() >= r->deadline)
			return rc;
		if (proc_gone(sb->holder))
			break;
	}
	slice = time_mono_ms() + RUN_HOLDER_GRACE_MS;
	rc = proc_communicate(sb->p, slice < r->deadline ? slice :
	    r->deadline, r->req->cancel);
	if (rc != -ETIMEDOUT || time_mono_ms() >= r->deadline)
		return rc;
	sb->exec_lost = true;
	proc_kill(sb->p, SIGKILL);
	(void)proc_reap(sb->p, time_mono_ms() + 5000);
	return 0;
}

/* An exec that ended with 125 or more (or was lost): whether its sandbox
 * died (the holder's `docker run` ends with it) rather than the job
 * exiting, e.g. killed for memory (runsc exec: 128, "... WaitPID failed:
 * EOF"). The exec may see the sandbox go a moment before the holder's CLI
 * does: that moment is waited for, here only. */
static bool
warm_died(struct run *r)
{
	int64_t end = time_mono_ms() + RUN_HOLDER_GRACE_MS;

	if (r->cli_exit < 125 && !r->sb.exec_lost)
		return false;
	while (!proc_gone(r->sb.holder)) {
		if (time_mono_ms() >= end)
			return docker_wait_running(r->c, r->sb.name) != 0;
		(void)poll(NULL, 0, 20);
	}
	return true;
}

/* Everything the result says is known by now: the container is removed
 * after the answer (warm_release). */
static void
warm_ended(struct run *r, const char *name)
{
	(void)name;
	r->sb.remove_later = true;
}

/* Off the answer's path: the removal, the CLIs, the slot, the pool's
 * count, all on a thread of the pool's (a thread that cannot start: here
 * and now). */
static void
warm_release(struct run *r)
{
	struct runner_sandbox *sb = &r->sb;

	if (sb->remove_later && runner_pool_remove_later(r->req->pool,
	    sb->name, sb->p, sb->holder, &r->slot) == 0) {
		sb->p = NULL;
		sb->holder = NULL;
		sb->remove_later = false;
		return;
	}
	if (sb->remove_later)
		(void)container_remove(r->c, sb->name);
	sb->remove_later = false;
	proc_free(sb->p);
	sb->p = NULL;
	proc_free(sb->holder);		/* its container is gone */
	sb->holder = NULL;
	runner_pool_run_done(r->req->pool);
}

static const struct runner_sandbox_ops warm_ops = {
	.egress = warm_egress,
	.communicate = warm_communicate,
	.set_output = runner_sandbox_proc_set_output,
	.out = runner_sandbox_proc_out,
	.err = runner_sandbox_proc_err,
	.get_times = runner_sandbox_proc_get_times,
	.exit_at_wait = false,
	.exit_code = runner_sandbox_proc_exit_code,
	.halt = runner_sandbox_proc_halt,
	.stop = runner_sandbox_proc_stop,
	.died = warm_died,
	.ended = warm_ended,
	.release = warm_release,
};

/* The run misses the pool and starts its own container: counted there
 * (against the refill's starts) until it ends. 0: start cold. */
static int
warm_miss(struct run *r)
{
	runner_pool_count_miss(r->req->pool);
	r->sb.missed = true;
	return 0;
}

int
runner_sandbox_warm_take(struct run *r, struct runner_result *res,
    char *err, size_t errlen)
{
	const struct runner_request *q = r->req;
	struct pool_entry e;
	int64_t t0 = time_mono_ms();

	(void)err;
	(void)errlen;
	/* A debug run always starts its own container, in the debug
	 * runtime; pooled ones run in the mode's. */
	if (q->pool == NULL || q->debug)
		return 0;
	/* Pooled containers wait in their language's command line (the
	 * pool's image, its profile: the image ID below must match too). */
	if (r->lang != runner_pool_lang(q->pool))
		return warm_miss(r);
	if (q->nin > 0 || q->out_dir != NULL || runner_pool_take(q->pool,
	    q->net, r->image, &r->lim, r->proxy ? &r->ep : NULL, &e) < 0)
		return warm_miss(r);
	r->tm->start_ms = time_mono_ms() - t0;
	if (runner_sandbox_input(r, e.name) < 0 || proc_feed(e.x, r->input,
	    r->input_len, runner_sandbox_stdout_cap(r),
	    (size_t)r->lim.max_output, r->keep) < 0) {
		/* Cannot happen for a fresh entry; never use it half-way. */
		(void)container_remove(r->c, e.name);
		proc_free(e.x);
		proc_free(e.p);
		free(r->input);
		r->input = NULL;
		runner_pool_run_done(q->pool);
		return warm_miss(r);
	}
	proc_stop_at_cap(e.x, r->keep == CBUF_KEEP_HEAD);
	r->sb.ops = &warm_ops;
	r->sb.p = e.x;
	r->sb.holder = e.p;
	util_strlcpy(r->sb.name, e.name, sizeof(r->sb.name));
	util_strlcpy(r->addr, e.addr, sizeof(r->addr));
	util_strlcpy(res->container, e.name, sizeof(res->container));
	res->warm = true;
	return 1;
}
