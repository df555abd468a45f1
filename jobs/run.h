/*
 * jobs_run: the one way a front end runs a parsed request (issue 35).
 * It stages the request's files, takes the warm pool of its language and
 * profile, puts the front end's own parts on the runner's request (cancel
 * flag, session label, note callback, live output stream), runs it and
 * removes the staging. serve/ and mcp/ call it; what they say about the
 * result stays theirs.
 */
#ifndef CORDON_JOBS_RUN_H
#define CORDON_JOBS_RUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"
#include "jobs/request.h"
#include "jobs/stream.h"
#include "runner/pool_conf.h"
#include "runner/runner.h"

/* Runs one staged request: runner_run's contract (res zeroed, filled on
 * 0; a negative errno with the reason in err), with arg passed through. */
typedef int (*jobs_run_fn)(const struct config *c,
    const struct runner_request *req, struct runner_result *res, char *err,
    size_t errlen, void *arg);

/* What a front end adds to a request; everything borrowed for the call. */
struct jobs_run_opts {
	const char *tmp_dir;		/* the staging's parent directory */
	const char *prefix;		/* its name: PREFIX.XXXXXX */
	const struct runner_pools *pools;	/* NULL: every run cold */
	const atomic_int *cancel;	/* NULL or the front end's flag */
	const char *session;		/* NULL or the run's label (its
					 * container and audit line) */
	void (*note)(void *note_arg, const char *msg);	/* NULL: none */
	void *note_arg;
	struct jobs_stream *stream;	/* NULL: no live output; else
					 * filled by jobs_stream_output, not
					 * closed here */
	jobs_run_fn run;		/* NULL: runner_run */
	void *run_arg;
};

/* Stages r (jobs_req_stage) under o->tmp_dir, sets the pool of its
 * language and profile and o's parts on the runner's request, calls o's
 * run function once and removes the staging. res is zeroed (exit_code -1)
 * first; the caller cleans it with runner_result_cleanup. Returns the run
 * function's result, or the staging's error (-EINVAL for the request's
 * files, else a negative errno) with the reason in err; *ran (may be
 * NULL) says whether the run function was called. */
int jobs_run(const struct config *c, const struct jobs_req *r,
    const struct jobs_run_opts *o, struct runner_result *res, bool *ran,
    char *err, size_t errlen);

#endif
