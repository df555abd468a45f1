/*
 * The cold CLI sandbox (sandbox.h): a fresh container run by a `docker
 * run -i` process whose pipes are the job's streams; in proxy mode sealed
 * once running, then registered. Its operations over that process are
 * also the warm way's, over its exec (sandbox_warm.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/proc.h"
#include "common/util.h"
#include "runner/container.h"
#include "runner/docker.h"
#include "runner/halt.h"
#include "runner/pool.h"
#include "runner/run_internal.h"
#include "runner/sandbox.h"

void
runner_sandbox_proc_set_output(struct runner_sandbox *sb, proc_output_fn fn,
    void *arg)
{
	proc_set_output(sb->p, fn, arg);
}

struct cbuf *
runner_sandbox_proc_out(struct runner_sandbox *sb)
{
	return proc_stdout(sb->p);
}

struct cbuf *
runner_sandbox_proc_err(struct runner_sandbox *sb)
{
	return proc_stderr(sb->p);
}

void
runner_sandbox_proc_get_times(const struct runner_sandbox *sb,
    struct proc_times *t)
{
	proc_get_times(sb->p, t);
}

int
runner_sandbox_proc_exit_code(const struct runner_sandbox *sb)
{
	return proc_exit_code(sb->p);
}

static int
drain_proc(void *arg, int64_t until_ms)
{
	return proc_communicate_streams(arg, until_ms, NULL);
}

void
runner_sandbox_proc_halt(struct run *r, const char *name, int64_t until_ms,
    struct proc_times *t)
{
	struct proc *p = r->sb.p;

	if (p == NULL)
		return;
	proc_get_times(p, t);
	proc_set_output(p, NULL, NULL);
	proc_discard(p);
	(void)container_halt(r->c, name, drain_proc, p, until_ms);
	proc_close_outputs(p);
}

void
runner_sandbox_proc_stop(struct run *r, const char *name)
{
	struct docker_state st;

	/* Its logs are named by its ID: learn it while it still exists. */
	if (r->req->debug && docker_inspect_state(r->c, name, &st) == 0)
		util_strlcpy(r->id, st.id, sizeof(r->id));
	(void)container_abort(r->c, name, r->sb.p, time_mono_ms() +
	    CONTAINER_ABORT_MS);
}

void
runner_sandbox_remove_now(struct run *r, const char *name)
{
	int64_t t0 = time_mono_ms();

	/* Still no one else's to remove: a kill-all or an operator that
	 * killed it (137) while the inspections still found it shows here,
	 * as a removal already done or in progress. */
	if (container_remove(r->c, name) == -ENOENT && r->cli_exit >= 125 &&
	    !r->oom)
		r->sandbox_error = true;
	r->tm->remove_ms = time_mono_ms() - t0;
}

/* Proxy mode: waits until the container runs, then seals it (the start's
 * and the seal's times), then registers it; the code is handed over from
 * there (timing_ms: start and seal are before). */
static int
cli_egress(struct run *r, const char *name, const char *policy, char *err,
    size_t errlen)
{
	int64_t running = 0;
	int rc;

	rc = container_seal(r->c, &r->ep, name, r->deadline, r->addr,
	    &running, err, errlen);
	if (running > 0) {
		r->tm->start_ms = running - r->t_begin;
		r->tm->seal_ms = time_mono_ms() - running;
	}
	if (rc < 0 || (rc = runner_run_register(r, name, r->addr, policy, err,
	    errlen)) < 0)
		return rc;
	r->t_begin = time_mono_ms();
	return 0;
}

static int
cli_communicate(struct run *r)
{
	return proc_communicate(r->sb.p, r->deadline, r->req->cancel);
}

static bool
cli_died(struct run *r)
{
	(void)r;
	return false;
}

static void
cli_release(struct run *r)
{
	proc_free(r->sb.p);
	r->sb.p = NULL;
}

static const struct runner_sandbox_ops cli_ops = {
	.egress = cli_egress,
	.communicate = cli_communicate,
	.set_output = runner_sandbox_proc_set_output,
	.out = runner_sandbox_proc_out,
	.err = runner_sandbox_proc_err,
	.get_times = runner_sandbox_proc_get_times,
	.exit_at_wait = false,
	.exit_code = runner_sandbox_proc_exit_code,
	.halt = runner_sandbox_proc_halt,
	.stop = runner_sandbox_proc_stop,
	.died = cli_died,
	.ended = runner_sandbox_remove_now,
	.release = cli_release,
};

int
runner_sandbox_cli_start(struct run *r, const struct container_start *cs,
    char *err, size_t errlen)
{
	int rc;

	r->sb.ops = &cli_ops;
	if ((rc = container_spawn(r->c, cs, &r->sb.p)) < 0)
		snprintf(err, errlen, "cannot run %s: %s", r->c->docker,
		    strerror(-rc));
	return rc;
}
