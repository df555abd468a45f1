/*
 * The service's scheduled probe: `cordon probe --net MODE` run as a child
 * process on a thread (the same code path as the CLI, which records the
 * result where the runner's require_probe check reads it, so a failed
 * probe makes the runner refuse that mode), and when to run it next.
 */
#ifndef CORDON_SERVE_PROBE_SCHED_H
#define CORDON_SERVE_PROBE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "runner/runner.h"

struct event_base;

#define SERVE_PROBE_TIMEOUT_MS 180000	/* one probe run, whatever happens */
#define SERVE_PROBE_MARGIN_MS 60000	/* re-probe this long before stale */
#define SERVE_PROBE_RETRY_MS 30000	/* at least this long between tries */
#define SERVE_PROBE_FAIL_RETRY_MS 300000	/* re-probe a failure this soon */

/* Milliseconds until the next probe: the interval, but early enough that
 * the recorded probe (at_ms; < 0 when none could be read) never goes
 * stale, and within SERVE_PROBE_FAIL_RETRY_MS when it failed (pass false).
 * first: at start-up, when a missing or stale record means probe now (0)
 * instead of after SERVE_PROBE_RETRY_MS. Pure. */
int64_t serve_probe_delay(const struct config *c, int64_t at_ms, bool pass,
    int64_t now_ms, bool first);

/* A copy of env with CORDON_CONFIG set to config_path (replacing one that
 * is there). NULL-terminated; caller frees with serve_probe_env_free.
 * NULL on ENOMEM. Pure. */
char **serve_probe_env(char *const *env, const char *config_path);
void serve_probe_env_free(char **env);	/* accepts NULL */

/* Runs `exe probe --net mode` (with --warm: through a warm pool's
 * container, the path the service's pooled runs take) with the service's
 * config. 0 when every control passed, with what it said on stderr (its
 * lines joined by "; ", cut at saidlen; empty when nothing) in said, and
 * *warn true when one of those lines (kept or cut) starts
 * RUNNER_PROBE_WARNING (runner/probe_ops.h); -EPERM when the probe ran
 * and something failed (the first line of its stderr, or how it ended,
 * in err); -ETIMEDOUT past SERVE_PROBE_TIMEOUT_MS; or another negative
 * errno when it could not be run. said and *warn are empty and false
 * but on a pass. */
int serve_probe_run(const char *exe, const char *config_path,
    const char *mode, bool warm, char *said, size_t saidlen, bool *warn,
    char *err, size_t errlen);

/* Probes on base's loop thread: once now or soon (see serve_probe_delay),
 * then on schedule. on_idle(arg) is called on the loop after each round.
 * exe is `cordon`; copied. 0 and *out (serve_prober_free), or a negative
 * errno with a reason in err. */
struct serve_prober;
int serve_prober_new(struct event_base *base, const struct config *c,
    const char *exe, void (*on_idle)(void *), void *arg,
    struct serve_prober **out, char *err, size_t errlen);
/* From the next round on, probe with --warm (the service has a pool). */
void serve_prober_set_warm(struct serve_prober *p, bool warm);
/* No further rounds (a running one still finishes). */
void serve_prober_stop(struct serve_prober *p);
/* Probes now unless a round is running (e.g. on resume after kill-all,
 * which may have removed a probe's container). */
void serve_prober_kick(struct serve_prober *p);	/* accepts NULL */
/* True while a round runs: the loop must not end under its thread. */
bool serve_prober_busy(const struct serve_prober *p);
/* The last outcome for a mode, for /v1/health ("pass", "fail: ...",
 * "not probed: ...", "not run yet ..."). Accepts NULL ("not scheduled"). */
const char *serve_prober_note(const struct serve_prober *p,
    enum runner_net mode);
/* Only once not busy; accepts NULL. */
void serve_prober_free(struct serve_prober *p);

#endif
