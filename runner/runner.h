/*
 * The runner: run untrusted code once in a fresh hardened gVisor container
 * and hand back a result that can be trusted as data. The code goes to the
 * container on stdin only. A library for C callers (the CLI, the service):
 * it never prints and never exits.
 */
#ifndef CORDON_RUNNER_RUNNER_H
#define CORDON_RUNNER_RUNNER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/config.h"

/* What the front ends call besides runner_run is declared in the header
 * of the file that defines it: the request and result (result.h), the
 * daemon checks (docker.h), the proxy's policies (egress.h), --out's
 * check (files.h), gc (gc.h). This header includes them so that a front
 * end needs only it. A part of the runner that runner.c includes never
 * includes this header, only those: that would be an include cycle
 * (tests/scripts/layering.py). */
#include "runner/docker.h"
#include "runner/egress.h"
#include "runner/files.h"
#include "runner/gc.h"
#include "runner/result.h"

/* Runs the request, in one of the host's limits.max_concurrent_runs run
 * slots (runner/slot.h: waits up to limits.queue_timeout_s, then -EBUSY
 * and no container; -EINTR when cancelled meanwhile). Fails closed first: with require_probe on, refuses
 * (-EPERM/-ESTALE/-ENOENT, reason in err) unless the latest probe for the
 * request's net mode passed recently, or passed earlier and, with
 * probe_auto on, passes again now (runner_probe_ensure: the run probes
 * first, saying so through req->note); --net proxy refuses (-ENETDOWN)
 * unless the egress network, firewall and proxy are up, and its container
 * is sealed (netsetup_sandbox_seal) before the code is written to it.
 * Returns 0 when a result was produced (whatever the
 * program did: see res->status), else a negative errno with a one-line
 * reason in err (docker unreachable, runtime not registered, image
 * missing, bad request, ...). In every case the container is removed
 * before returning. res must be released with runner_result_cleanup. */
int runner_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen);

#endif
