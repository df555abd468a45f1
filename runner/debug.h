/*
 * `cordon run --debug` and `cordon probe --debug` (root only, never from
 * `cordon serve` or `cordon mcp`): the run goes to the debug twin of its
 * runtime (config runtime_debug / runtime_debug_egress: the same runsc and
 * network mode plus --debug --strace, registered by scripts/setup through
 * its %ID% wrapper, scripts/runsc-debug), with the same argv otherwise, and
 * its result names the directory its runsc logs went to.
 */
#ifndef CORDON_RUNNER_DEBUG_H
#define CORDON_RUNNER_DEBUG_H

#include <stddef.h>

#include "common/config.h"
#include "runner/result.h"

#define RUNNER_DEBUG_PAT_MAX 200	/* the --debug-log pattern */

/* The debug runtime's name for a net mode (a string of c). */
const char *runner_debug_runtime(const struct config *c, enum runner_net net);

/* Checks a debug runtime's arguments (struct docker_runtime's args: the
 * runtimeArgs joined by spaces): --debug and --strace are there, and
 * --debug-log=PATTERN, an absolute path with %ID% as one whole path
 * component (DIR/%ID%/ as scripts/setup writes it), which goes into pat.
 * 0; -ENOENT when there is no --debug-log; -EINVAL with a reason in why
 * (may be NULL) for anything else amiss; -ENAMETOOLONG. Pure. */
int runner_debug_pattern(const char *args, char *pat, size_t patlen,
    const char **why);

/* The directory of the logs of container id (its full ID, 1-64 of
 * [0-9a-f]) for pattern pat: %ID% replaced, no trailing slash. 0, -EINVAL
 * or -ENAMETOOLONG (out is then ""). Pure. */
int runner_debug_dir(const char *pat, const char *id, char *out,
    size_t outlen);

/* 0 when the caller may ask for a debug run or probe (euid 0), else
 * -EPERM with the reason in err. */
int runner_debug_allowed(char *err, size_t errlen);

/* Before a debug run: the caller must be root (-EPERM), and the debug
 * runtime of net registered with dockerd with runsc's debug flags
 * (-ENOENT/-EINVAL, -EHOSTUNREACH when `docker info` fails); its log
 * pattern goes into pat. A reason in err. */
int runner_debug_admit(const struct config *c, enum runner_net net,
    char *pat, size_t patlen, char *err, size_t errlen);

/* After a debug run whose container had the full ID id ("" when it never
 * existed): res->debug_log is its log directory when that exists; else
 * res->debug_log_error says why there is none. */
void runner_debug_result(const char *pat, const char *id,
    struct runner_result *res);

#endif
