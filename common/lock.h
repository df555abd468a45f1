/*
 * Host-wide locks as flock(2) on files: a holder that dies (even by
 * SIGKILL) releases its lock with its last descriptor, so nothing is ever
 * left locked by a crash. Used for the one-probe-at-a-time lock and the
 * run slots, shared by every Cordon process on the host.
 */
#ifndef CORDON_COMMON_LOCK_H
#define CORDON_COMMON_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

#define UTIL_LOCK_POLL_MS 50	/* util_lock_wait tries this often */

/* Opens path (creating it, mode 0644; never through a symlink) and tries
 * an exclusive flock without waiting. Returns the descriptor that holds
 * the lock (close it to release; close-on-exec), -EWOULDBLOCK when another
 * open file holds it, or another negative errno. */
int util_lock_try(const char *path);

/* util_lock_try every UTIL_LOCK_POLL_MS until it succeeds, deadline_ms
 * (CLOCK_MONOTONIC, time_mono_ms) passes (-ETIMEDOUT) or *cancel (may be
 * NULL) is set (-EINTR). Returns the descriptor or a negative errno. */
int util_lock_wait(const char *path, int64_t deadline_ms,
    const atomic_int *cancel);

#endif
