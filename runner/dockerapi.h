/*
 * The one docker call on every run's critical path, `rm -f`, made straight
 * to the daemon's API socket when the default CLI and daemon are in use:
 * it saves starting a docker CLI process per run (the benchmark's 5 %).
 * Anything unusual (another CLI binary, DOCKER_HOST/DOCKER_CONTEXT set, no
 * socket) and callers use the CLI instead.
 */
#ifndef CORDON_RUNNER_DOCKERAPI_H
#define CORDON_RUNNER_DOCKERAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define DOCKERAPI_SOCKET "/var/run/docker.sock"

/* True when the API socket may stand in for c->docker. */
bool dockerapi_usable(const struct config *c);

/* DELETE /containers/NAME?force=1 with a deadline: 0, -ENOENT (no such
 * container, or its removal already in progress: 409), -ETIMEDOUT, or
 * another negative errno. */
int dockerapi_rm_force(const char *sock, const char *name, int timeout_ms);

/* Status code of an HTTP/1.x response's first line; -EBADMSG when it is
 * not one. Pure. */
int dockerapi_status(const char *buf, size_t len);

#endif
