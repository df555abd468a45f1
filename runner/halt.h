/*
 * Stopping a container whose output is still coming (halt.c): the daemon
 * does not finish a kill while the container's attached streams are not
 * read (measured: `docker kill` of a container flooding a `docker run`
 * whose stdout nobody read was still waiting after 5 min, and ended 50 ms
 * after a reader came), so the kill goes on a thread of its own while the
 * caller's streams are drained. Internal to the runner.
 */
#ifndef CORDON_RUNNER_HALT_H
#define CORDON_RUNNER_HALT_H

#include <stdint.h>

#include "common/config.h"

#define HALT_SLICE_MS 20	/* one drain call at most this long */
#define HALT_GRACE_MS 300	/* after the kill's answer, streams still
				 * open are read this much longer */

/* Reads and drops what the container's streams carry until until_ms
 * (monotonic): 0 once they ended (nothing more can come), -ETIMEDOUT
 * while still open, another negative errno when they cannot be read
 * (then they count as ended). */
typedef int (*halt_drain_fn)(void *arg, int64_t until_ms);

/* SIGKILLs the container NAME (container_kill) on a thread while
 * drain(arg, ...) is called in slices of HALT_SLICE_MS. Returns when the
 * kill was answered and the streams ended, HALT_GRACE_MS after the answer
 * if they did not, or at limit_ms (monotonic), whichever comes first; the
 * kill itself is given until limit_ms too, and its thread is joined
 * before this returns. The caller then stops reading and removes the
 * container. The kill's result (0: killed or not running; -ENOENT: no
 * such container), or -EAGAIN when no thread could be made (nothing was
 * killed: the removal does it). */
int container_halt(const struct config *c, const char *name,
    halt_drain_fn drain, void *arg, int64_t limit_ms);

/* SIGKILL to NAME within timeout_ms: over the API socket when that is the
 * configured daemon, else `docker kill`. 0 (killed, or not running),
 * -ENOENT, or another negative errno. */
int container_kill(const struct config *c, const char *name,
    int64_t timeout_ms);

#endif
