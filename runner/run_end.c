/*
 * How a run ends (run_internal.h): by itself (its end state inspected,
 * then its container removed), or stopped at the deadline, a cancel or
 * its cap (the container killed while its streams are still drained, then
 * no longer read, then removed: halt.h), or never started (removed by
 * name, even while its create may still be under way). And where its time
 * went (timing_ms).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "common/proc.h"
#include "common/util.h"
#include "runner/container.h"
#include "runner/docker.h"
#include "runner/oomlog.h"
#include "runner/run_internal.h"

/* A stopped run: how long the kill and the drain may take before the
 * streams are closed anyway (the removal then kills). */
#define RUN_HALT_MS 1200

void
runner_run_stop(struct run *r, const char *name)
{
	if (r->sb.ops != NULL)
		r->sb.ops->stop(r, name);
}

/* The times of a stopped run (runner_timing): the step under way at the
 * stop ends there. */
static void
halt_times(struct run *r, const struct proc_times *t)
{
	int64_t at = r->halt_at;

	if (t->fed > 0)
		r->t_begin = t->fed;
	if (r->t_begin <= 0)
		return;
	if (t->stdin_closed <= 0) {
		r->tm->stdin_ms = at - r->t_begin;
		return;
	}
	r->tm->stdin_ms = t->stdin_closed - r->t_begin;
	if (t->first_output <= 0) {
		r->tm->run_ms = at - t->stdin_closed;
		return;
	}
	r->tm->run_ms = t->first_output - t->stdin_closed;
	r->tm->exit_ms = at - t->first_output;
}

void
runner_run_halt(struct run *r, const char *name)
{
	struct proc_times t = { 0 };
	int64_t t0;

	r->halt_at = time_mono_ms();
	r->sb.ops->halt(r, name, r->halt_at + RUN_HALT_MS, &t);
	halt_times(r, &t);
	t0 = time_mono_ms();
	r->tm->stop_ms = t0 - r->halt_at;
	runner_run_stop(r, name);
	r->tm->remove_ms = time_mono_ms() - t0;
}

/* The steps' times of a run that ended by itself (runner_timing): the
 * program's run ends at its first output (print(1) in the benchmark) or,
 * with none, when its streams closed; the exit is known when the streams
 * closed (the attach ends with the container) or, over the API, when its
 * wait answered. */
static void
finish_times(struct run *r)
{
	struct proc_times t;
	int64_t ran, exit_at = 0;

	r->sb.ops->get_times(&r->sb, &t);
	if (r->sb.ops->exit_at_wait)
		exit_at = t.exited;
	if (t.fed > 0)
		r->t_begin = t.fed;
	if (exit_at <= 0)
		exit_at = t.outputs_closed;
	ran = t.first_output > 0 ? t.first_output : t.outputs_closed;
	if (t.stdin_closed > 0)
		r->tm->stdin_ms = t.stdin_closed - r->t_begin;
	if (ran > 0 && t.stdin_closed > 0)
		r->tm->run_ms = ran - t.stdin_closed;
	if (exit_at > 0 && ran > 0)
		r->tm->exit_ms = exit_at - ran;
	if (t.exited > 0 && exit_at > 0)
		r->tm->cli_ms = t.exited - exit_at;
}

void
runner_run_finish(struct run *r, const char *name)
{
	struct docker_state st = { 0 };
	int rc = -ENOENT;
	int64_t t0;
	bool died = false;

	finish_times(r);
	t0 = time_mono_ms();
	r->cli_exit = r->sb.ops->exit_code(&r->sb);
	if (r->cli_exit == 137 || r->cli_exit >= 125 || r->cli_exit < 0 ||
	    r->req->debug)
		rc = docker_inspect_state(r->c, name, &st);
	/* A warm run's job is an exec: 125 and up may also be the exec
	 * failing because its sandbox died under it (runsc exec: 128, "...
	 * WaitPID failed: EOF"), e.g. killed for memory. A sandbox still
	 * running after the exec ended did not; one that stopped did, and
	 * then its own end state says why, and the exit code is its. */
	if (r->sb.ops->died(r)) {
		died = true;
		rc = docker_inspect_state(r->c, name, &st);
		if (rc == 0)
			r->cli_exit = st.exit_code != 0 ? st.exit_code : 137;
	}
	if (rc == 0)
		util_strlcpy(r->id, st.id, sizeof(r->id));
	/* Docker misses some OOM kills under runsc (see oomlog.h); the
	 * kernel's record of this container's memory cgroup is proof. */
	if (r->cli_exit == 137 && rc == 0 && !st.oom_killed &&
	    runner_oomlog_find(st.id))
		st.oom_killed = true;
	/* The daemon may record the OOM kill a moment after the exit. */
	for (int i = 0; r->cli_exit == 137 && rc == 0 && !st.oom_killed &&
	    i < 4; i++) {
		(void)poll(NULL, 0, 250);
		rc = docker_inspect_state(r->c, name, &st);
	}
	if (r->cli_exit == 137 && rc == 0 && st.oom_killed)
		r->oom = true;
	else if (died)
		r->sandbox_error = true;
	/* 125-127 are also docker's own failures: trust them as the job's
	 * exit code only when the container really started. */
	r->not_started = r->cli_exit >= 125 && (rc < 0 || !st.started);
	if (r->cli_exit < 0 || (r->cli_exit != 137 && r->not_started))
		r->sandbox_error = true;
	/* We never remove a container before this point: gone means it was
	 * removed from outside (kill-all, an operator), not a job's exit. */
	if (rc == -ENOENT && r->cli_exit >= 125)
		r->sandbox_error = true;
	r->tm->inspect_ms = time_mono_ms() - t0;
	/* Removed now, or (warm) after the answer: everything the result
	 * says is known by now. */
	r->sb.ops->ended(r, name);
}
