/*
 * jobs_run (run.h): a parsed request staged, given the front end's pool,
 * cancel flag, label, note and live output, run and unstaged, the same
 * steps for serve's jobs and MCP's run_code calls.
 */
#include <string.h>

#include "jobs/run.h"
#include "runner/stage.h"

static int
run_runner(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	(void)arg;
	return runner_run(c, req, res, err, errlen);
}

int
jobs_run(const struct config *c, const struct jobs_req *r,
    const struct jobs_run_opts *o, struct runner_result *res, bool *ran,
    char *err, size_t errlen)
{
	struct runner_request rq = { 0 };
	struct stage_dir st = { .nin = 0 };
	jobs_run_fn run = o->run != NULL ? o->run : run_runner;
	int rc;

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	if (ran != NULL)
		*ran = false;
	if (errlen > 0)
		err[0] = '\0';
	if ((rc = jobs_req_stage(r, o->tmp_dir, o->prefix, &st, &rq, err,
	    errlen)) < 0)
		return rc;
	rq.pool = runner_pools_get(o->pools, rq.lang, rq.profile);
	rq.cancel = o->cancel;
	rq.session = o->session;
	rq.note = o->note;
	rq.note_arg = o->note_arg;
	if (o->stream != NULL) {
		rq.output = jobs_stream_output;
		rq.output_arg = o->stream;
	}
	if (ran != NULL)
		*ran = true;
	rc = run(c, &rq, res, err, errlen, o->run_arg);
	stage_dir_cleanup(&st);
	return rc;
}
