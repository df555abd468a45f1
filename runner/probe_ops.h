/*
 * `cordon probe` on the runner's side: runs the probe program (probe_run
 * in probe/) through the real runner, the same path as a user's job,
 * optionally in a warm pool's container, while a thread inspects that
 * container from the host.
 */
#ifndef CORDON_RUNNER_PROBE_OPS_H
#define CORDON_RUNNER_PROBE_OPS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "probe/probe.h"

struct runner_request;
struct runner_result;

/* How `cordon probe` (cli/cmd_probe.c) starts a line on stderr that calls
 * for a warning where it is logged: a leftover container of the probe
 * still there after the wait, one whose removal failed, no way to look
 * for them, or runner_probe's warning with a report (its result could not
 * be recorded). Its other lines start "cordon probe: ". cordon serve logs a
 * passing scheduled probe's stderr, as a warning when a line starts so
 * (serve/probe_sched.c): a fixed prefix, not the words of the lines. */
#define RUNNER_PROBE_WARNING "cordon probe: warning: "

/* The run a probe goes through: runner_run (runner/runner.h), passed in by
 * the caller. runner_run itself calls runner_probe_ensure, whose automatic
 * probe runs the probe program through runner_run again: the two call
 * each other, and the pointer lets this file do so without including the
 * runner's header (an include cycle, tests/scripts/layering.py). */
typedef int runner_probe_run_fn(const struct config *c,
    const struct runner_request *req, struct runner_result *res, char *err,
    size_t errlen);

/* Probes mode ("none" or "proxy"; proxy needs the egress set-up, checked
 * with netsetup_ready) through run, in a one-container warm pool when
 * warm, or in the mode's debug runtime when debug (root only; cold; not
 * recorded, see probe_run_opts; -EINVAL with warm), holding the host-wide
 * probe lock (probe_lock: waits for a probe in progress).
 * Fills *rep and *json as probe_run does and returns its result: 0 when a
 * report was produced (err: "" or a warning), else a negative errno with
 * a one-line reason in err. */
int runner_probe(const struct config *c, runner_probe_run_fn *run,
    const char *mode, bool warm, bool debug, struct probe_report *rep,
    cJSON **json, char *err, size_t errlen);

/* The runner's check before a job in image (probe_state_ensure): 0 when
 * the probe record for mode lets it run, probing first (cold, recorded)
 * through run, when the record passed but went stale (too old, or made
 * in another image) and probe_auto is on. note (may be NULL)
 * gets the lines a person should see (that a probe runs, its outcome);
 * cancel (may be NULL) ends a wait for another probe. Otherwise a
 * negative errno with a one-line reason in err, as probe_state_ensure. */
int runner_probe_ensure(const struct config *c, runner_probe_run_fn *run,
    const char *mode, const char *image, void (*note)(void *, const char *),
    void *note_arg, const atomic_int *cancel, char *err, size_t errlen);

#endif
