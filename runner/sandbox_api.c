/*
 * The cold Engine API sandbox (sandbox.h): a fresh container created,
 * attached and started over the daemon's socket (apirun.h), for every
 * cold run but a debug one. In proxy mode the job's stdin (its
 * credential line, then the code) is held on the attach until the
 * started container is sealed and registered: apirun_start writes
 * nothing, apirun_communicate does.
 */
#include <errno.h>
#include <stdio.h>

#include "common/util.h"
#include "runner/apirun.h"
#include "runner/container.h"
#include "runner/docker.h"
#include "runner/halt.h"
#include "runner/run_internal.h"
#include "runner/sandbox.h"

/* Proxy mode: the start was answered, so the container runs (its first
 * process waits for its stdin's first line): sealed at once, with no
 * poll for it to run, then registered. timing_ms: start is the create,
 * attach and start; seal the seal. */
static int
api_egress(struct run *r, const char *name, const char *policy, char *err,
    size_t errlen)
{
	int64_t started = time_mono_ms();
	int rc;

	r->tm->start_ms = started - r->t_begin;
	rc = container_api_seal(r->c, &r->ep, name, r->deadline, r->addr, err,
	    errlen);
	r->tm->seal_ms = time_mono_ms() - started;
	if (rc < 0 || (rc = runner_run_register(r, name, r->addr, policy, err,
	    errlen)) < 0)
		return rc;
	r->t_begin = time_mono_ms();
	return 0;
}

static int
api_communicate(struct run *r)
{
	return apirun_communicate(r->sb.api, r->deadline, r->req->cancel);
}

static void
api_set_output(struct runner_sandbox *sb, proc_output_fn fn, void *arg)
{
	apirun_set_output(sb->api, fn, arg);
}

static struct cbuf *
api_out(struct runner_sandbox *sb)
{
	return apirun_stdout(sb->api);
}

static struct cbuf *
api_err(struct runner_sandbox *sb)
{
	return apirun_stderr(sb->api);
}

static void
api_get_times(const struct runner_sandbox *sb, struct proc_times *t)
{
	apirun_get_times(sb->api, t);
}

static int
api_exit_code(const struct runner_sandbox *sb)
{
	return apirun_exit_code(sb->api);
}

static int
drain_api(void *arg, int64_t until_ms)
{
	return apirun_communicate(arg, until_ms, NULL);
}

static void
api_halt(struct run *r, const char *name, int64_t until_ms,
    struct proc_times *t)
{
	struct apirun *a = r->sb.api;

	if (a == NULL)
		return;
	apirun_get_times(a, t);
	apirun_set_output(a, NULL, NULL);
	apirun_discard(a);
	(void)container_halt(r->c, name, drain_api, a, until_ms);
	apirun_close(a);
}

static void
api_stop(struct run *r, const char *name)
{
	(void)container_api_abort(r->c, name, r->sb.api);
}

static bool
api_died(struct run *r)
{
	(void)r;
	return false;
}

static void
api_release(struct run *r)
{
	apirun_free(r->sb.api);
	r->sb.api = NULL;
}

static const struct runner_sandbox_ops api_ops = {
	.egress = api_egress,
	.communicate = api_communicate,
	.set_output = api_set_output,
	.out = api_out,
	.err = api_err,
	.get_times = api_get_times,
	.exit_at_wait = true,
	.exit_code = api_exit_code,
	.halt = api_halt,
	.stop = api_stop,
	.died = api_died,
	.ended = runner_sandbox_remove_now,
	.release = api_release,
};

/* A start cut short by the deadline or a cancel is a result (run_wait
 * stops it), as for the CLI; a refusal by the daemon is explained as the
 * CLI path's (run_explain_failure), with the daemon's own answer when
 * the preflight finds nothing wrong. */
int
runner_sandbox_api_start(struct run *r, const struct container_start *cs,
    const char *name, char *err, size_t errlen)
{
	char why[512];
	int rc, prc;

	r->sb.ops = &api_ops;
	rc = container_api_start(r->c, cs, r->deadline, r->req->cancel,
	    &r->sb.api, why, sizeof(why));
	if (rc == -ETIMEDOUT || rc == -EINTR) {
		r->timed_out = rc == -ETIMEDOUT;
		r->cancelled = rc == -EINTR;
		return 0;
	}
	if (rc < 0) {
		api_stop(r, name);
		/* A daemon gone meanwhile says so (docker-unavailable); a
		 * refusal is explained as the CLI path's. */
		if (rc != -EIO && (prc = runner_daemon_check(r->c, err,
		    errlen)) < 0)
			return prc;
		if (rc == -EIO && (prc = runner_preflight(r->c, r->req->net,
		    err, errlen)) < 0)
			return prc;
		snprintf(err, errlen, "%s", why);
	}
	return rc;
}
