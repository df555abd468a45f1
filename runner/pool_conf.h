/*
 * What the front ends that keep a warm pool (`cordon serve`, `cordon mcp`)
 * share about it: its options from the config and a size, and the one
 * line each of its notes is logged as. Pure: the pool never prints; the
 * front end logs the line at the level given.
 */
#ifndef CORDON_RUNNER_POOL_CONF_H
#define CORDON_RUNNER_POOL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/log.h"
#include "runner/pool.h"

/* *o for a pool of size containers per net mode (both modes kept; proxy
 * only while the egress network is up and its probe passes), with the
 * config's max age, starts in flight and idle time
 * (serve.pool_max_age_s, serve.pool_starts, serve.pool_idle_s), no
 * notes. */
void runner_pool_conf_opts(const struct config *c, int64_t size,
    struct runner_pool_opts *o);

/* The line for n (no newline, truncated to len) and the level to log it
 * at: warn for a failed start or removal and dockerd down, info for the
 * fills, give-ups and dockerd's return, debug for each ready or retired
 * container. */
enum log_level runner_pool_conf_note(const struct runner_pool_note *n,
    char *buf, size_t len);

/* One warm pool per language, each at the profile its language needs
 * (config_profile_use from the caller's config: python and bash in
 * minimal, node in the first profile that has it), and pools of a
 * language in another profile (config pool_profiles), each its own
 * runner_pool with its own thread. */
#define RUNNER_POOLS_LANGS 3	/* index: 0 python, 1 bash, 2 node */
#define RUNNER_POOLS_MAX (RUNNER_POOLS_LANGS + CONFIG_MAX_POOL_PROFILES)
struct runner_pools;

/* The pools of size[i] containers per net mode (0: none for that
 * language) and the nextra pools of extra (a language in a profile it
 * does not run in by default), with base's options otherwise (its size,
 * lang and profile_label ignored). c must outlive them. 0 and *out (NULL
 * when there is none), or a negative errno with a reason in err (no
 * profile offers a language given a size, a named profile lacks it; a
 * pool that cannot start) and nothing left running. */
int runner_pools_new(const struct config *c,
    const int64_t size[RUNNER_POOLS_LANGS],
    const struct config_pool_profile *extra, size_t nextra,
    const struct runner_pool_opts *base, struct runner_pools **out,
    char *err, size_t errlen);

/* The name of language i (0 <= i < RUNNER_POOLS_LANGS): "python",
 * "bash", "node"; NULL past the end. */
const char *runner_pools_lang(int i);

/* The pool for a run of lang ("python", "bash", "node"; NULL: python) in
 * profile (NULL or "": the language's own pool; named: the pool kept in
 * that profile, the language's own when that is its profile), or NULL
 * (none kept, ps NULL, unknown language). */
struct runner_pool *runner_pools_get(const struct runner_pools *ps,
    const char *lang, const char *profile);

/* Pool i (0 <= i < RUNNER_POOLS_MAX; the first RUNNER_POOLS_LANGS are the
 * languages' own, in runner_pools_lang's order), its language and its
 * profile's name; NULL when none is kept at i. lang and profile may be
 * NULL. */
struct runner_pool *runner_pools_at(const struct runner_pools *ps, int i,
    const char **lang, const char **profile);

/* runner_pool_pause, runner_pool_stop on each; NULL accepted. */
void runner_pools_pause(struct runner_pools *ps, bool paused);
void runner_pools_stop(struct runner_pools *ps);

/* Stops and frees each pool, then ps. Accepts NULL. */
/* The starts in flight of all of ps's pools now (their shared
 * runner_pool_gate; tests). */
int64_t runner_pools_starting(struct runner_pools *ps);

void runner_pools_free(struct runner_pools *ps);

#endif
