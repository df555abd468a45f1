/*
 * What the front ends that keep a warm pool (`cordon serve`, `cordon mcp`)
 * share about it: its options from the config and a size, and the one
 * line each of its notes is logged as. Pure: the pool never prints; the
 * front end logs the line at the level given.
 */
#ifndef CORDON_RUNNER_POOL_CONF_H
#define CORDON_RUNNER_POOL_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/log.h"
#include "runner/pool.h"

/* *o for a pool of size containers per net mode (both modes kept; proxy
 * only while the egress network is up and its probe passes), with the
 * config's max age and starts in flight (serve.pool_max_age_s,
 * serve.pool_starts), no notes. */
void runner_pool_conf_opts(const struct config *c, int64_t size,
    struct runner_pool_opts *o);

/* The line for n (no newline, truncated to len) and the level to log it
 * at: warn for a failed start or removal and dockerd down, info for the
 * fills, give-ups and dockerd's return, debug for each ready or retired
 * container. */
enum log_level runner_pool_conf_note(const struct runner_pool_note *n,
    char *buf, size_t len);

#endif
