/*
 * Running a tool to completion (proc.h): proc_run (spawn, pump, SIGKILL
 * the group at the timeout, always reap) and proc_call over it, the one
 * way Cordon calls docker, iptables and the other tools and words what
 * went wrong in one line. Apart from proc.c, which spawns and pumps:
 * this is policy over that mechanism, and its only user of a process's
 * internals is proc_take_outputs (proc_internal.h).
 */
#include "common/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/cbuf.h"
#include "common/proc_internal.h"
#include "common/util.h"

int
proc_run(const struct proc_opts *opts, int64_t timeout_ms,
    struct proc_result *res)
{
	int64_t start = time_mono_ms();
	int64_t deadline = timeout_ms > 0 ? start + timeout_ms : 0;
	struct proc *p;
	int rc;

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	rc = proc_spawn(opts, &p);
	if (rc < 0)
		return rc;
	rc = proc_communicate(p, deadline, NULL);
	if (rc == -ETIMEDOUT) {
		res->timed_out = true;
		proc_kill(p, SIGKILL);
	}
	(void)proc_reap(p, 0);
	res->exit_code = proc_exit_code(p);
	res->term_signal = proc_term_signal(p);
	res->duration_ms = time_mono_ms() - start;
	proc_take_outputs(p, &res->out, &res->err);
	proc_free(p);
	return 0;
}

void
proc_result_cleanup(struct proc_result *res)
{
	if (res == NULL)
		return;
	cbuf_free(res->out);
	cbuf_free(res->err);
	res->out = res->err = NULL;
}

/* First line of s, at most 300 bytes, into buf. */
static void
first_line(const char *s, char *buf, size_t len)
{
	size_t n = strcspn(s, "\n");

	snprintf(buf, len, "%.*s", (int)(n > 300 ? 300 : n), s);
}

int
proc_call(const struct proc_opts *opts, int64_t timeout_ms, struct cbuf **out,
    int *status, char *err, size_t errlen)
{
	struct proc_result r;
	char line[320];
	int rc;

	if (out != NULL)
		*out = NULL;
	if (opts->stderr_out != NULL)
		*opts->stderr_out = NULL;
	if (status != NULL)
		*status = -1;
	if (errlen > 0)
		err[0] = '\0';
	if ((rc = proc_run(opts, timeout_ms, &r)) < 0) {
		snprintf(err, errlen, "cannot run %s: %s", opts->argv[0],
		    strerror(-rc));
		return rc;
	}
	if (r.timed_out) {
		snprintf(err, errlen, "%s timed out after %lld ms",
		    opts->argv[0], (long long)timeout_ms);
		proc_result_cleanup(&r);
		return -ETIMEDOUT;
	}
	if (status != NULL)
		*status = r.exit_code >= 0 ? r.exit_code : 128 + r.term_signal;
	rc = 0;
	if (r.exit_code != 0) {
		first_line(cbuf_data(r.err), line, sizeof(line));
		if (line[0] != '\0')
			snprintf(err, errlen, "%s", line);
		else if (r.exit_code > 0)
			snprintf(err, errlen, "%s exited with %d",
			    opts->argv[0], r.exit_code);
		else
			snprintf(err, errlen, "%s killed by signal %d",
			    opts->argv[0], r.term_signal);
		rc = -EIO;
	}
	if (out != NULL) {
		*out = r.out;
		r.out = NULL;
	}
	if (opts->stderr_out != NULL) {
		*opts->stderr_out = r.err;
		r.err = NULL;
	}
	proc_result_cleanup(&r);
	return rc;
}
