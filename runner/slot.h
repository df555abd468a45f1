/*
 * Host-wide run slots: at most limits.max_concurrent_runs runs at once on
 * the host, whichever process runs them (`cordon run`, `cordon mcp`,
 * `cordon serve`, probes). A slot is a flock on STATE_DIR/slots/N.lock, so
 * the kernel frees it when its holder dies, even by SIGKILL.
 */
#ifndef CORDON_RUNNER_SLOT_H
#define CORDON_RUNNER_SLOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define RUNNER_SLOT_POLL_MS 100	/* a waiter tries every slot this often */

struct runner_slot {
	int fd;				/* holds the lock; -1: none */
	int index;			/* N of slots/N.lock; -1: none */
	int64_t waited_ms;		/* how long the caller waited */
};

/* Takes a free slot (the lowest free N below max_concurrent_runs), trying
 * every RUNNER_SLOT_POLL_MS for up to limits.queue_timeout_s (0: once),
 * with no order among waiters. 0 with *s filled, or: -EBUSY when none
 * became free in time, -EINTR when *cancel (may be NULL) was set, or
 * another negative errno when the slot files cannot be had, with a
 * one-line reason in err. *s holds no slot on failure. */
int runner_slot_acquire(const struct config *c, const atomic_int *cancel,
    struct runner_slot *s, char *err, size_t errlen);

/* Frees the slot s holds, if any; s then holds none. */
void runner_slot_release(struct runner_slot *s);

#endif
