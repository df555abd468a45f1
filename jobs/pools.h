/*
 * The warm pools of a front end (issue 35: the job layer owns the pools):
 * their sizes and options from the front end's own config section
 * (serve.pool*, mcp.pool*, with pool_profiles: a language kept warm in
 * another profile than its default one; the max age and starts in flight
 * are serve's for both; the starts limit holds for all of them together:
 * runner_pool_gate), and their notes logged one line each at the level
 * runner_pool_conf_note gives. `cordon serve` and `cordon
 * mcp` both start theirs here, so they keep the same pools the same way.
 */
#ifndef CORDON_JOBS_POOLS_H
#define CORDON_JOBS_POOLS_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "runner/pool.h"
#include "runner/pool_conf.h"

enum jobs_front {
	JOBS_FRONT_SERVE,	/* the config's "serve" section */
	JOBS_FRONT_MCP,		/* its "mcp" section */
};

/* size[] (index as runner_pools_new's: python, bash, node): python's is
 * python when that is >= 0 (a --pool N given on the command line), else
 * the section's pool; bash's and node's are the section's. */
void jobs_pools_sizes(const struct config *c, enum jobs_front f,
    int64_t python, int64_t size[RUNNER_POOLS_LANGS]);

/* Containers per net mode of all f's pools: jobs_pools_sizes' and those
 * of the section's pool_profiles. */
int64_t jobs_pools_total(const struct config *c, enum jobs_front f,
    int64_t python);

/* *o for f's pools: runner_pool_conf_opts, with f's own idle time
 * (serve.pool_idle_s, mcp.pool_idle_s) and notes logged (jobs_pools_log). */
void jobs_pools_opts(const struct config *c, enum jobs_front f,
    struct runner_pool_opts *o);

/* runner_pool_opts.on_note: the note's one line, logged at its level. */
void jobs_pools_log(void *arg, const struct runner_pool_note *n);

/* f's pools (jobs_pools_sizes, jobs_pools_opts): runner_pools_new's
 * result; *out NULL when every size is 0. */
int jobs_pools_start(const struct config *c, enum jobs_front f,
    int64_t python, struct runner_pools **out, char *err, size_t errlen);

#endif
