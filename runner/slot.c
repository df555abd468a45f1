/*
 * Run slots (slot.h): one lock file per slot, tried in turn without
 * blocking and polled against a monotonic deadline, so a waiter gives up
 * on time and honours its cancel flag; dead holders free theirs by dying.
 */
#include "runner/slot.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/lock.h"
#include "common/util.h"

/* One pass over the slots: the index taken (fd in *fd), -EWOULDBLOCK
 * when all are held, or another negative errno (path in err). */
static int
try_all(const struct config *c, int *fd, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc;

	for (int i = 0; i < c->limits.max_concurrent_runs; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/slots/%d.lock",
		    c->state_dir, i) >= sizeof(path))
			return -ENAMETOOLONG;
		if ((rc = util_lock_try(path)) >= 0) {
			*fd = rc;
			return i;
		}
		if (rc != -EWOULDBLOCK) {
			snprintf(err, errlen, "cannot lock the run slot %s: %s",
			    path, strerror(-rc));
			return rc;
		}
	}
	return -EWOULDBLOCK;
}

int
runner_slot_acquire(const struct config *c, const atomic_int *cancel,
    struct runner_slot *s, char *err, size_t errlen)
{
	int64_t t0 = time_mono_ms(), left;
	int64_t deadline = t0 + c->limits.queue_timeout_s * 1000;
	char dir[PATH_MAX];
	int rc, fd = -1;

	*s = (struct runner_slot){ .fd = -1, .index = -1 };
	if ((size_t)snprintf(dir, sizeof(dir), "%s/slots", c->state_dir) >=
	    sizeof(dir)) {
		snprintf(err, errlen, "state_dir is too long");
		return -ENAMETOOLONG;
	}
	if ((rc = util_mkdir_p(dir, 0755)) < 0) {
		snprintf(err, errlen, "cannot make the run slot directory %s: "
		    "%s", dir, strerror(-rc));
		return rc;
	}
	for (;;) {
		if ((rc = try_all(c, &fd, err, errlen)) >= 0)
			break;
		if (rc != -EWOULDBLOCK)
			return rc;
		if (cancel != NULL && atomic_load(cancel)) {
			snprintf(err, errlen, "cancelled while waiting for a "
			    "run slot");
			return -EINTR;
		}
		if ((left = deadline - time_mono_ms()) <= 0) {
			snprintf(err, errlen, "no run slot became free within "
			    "%llds: %lld runs are going on this host "
			    "(limits.max_concurrent_runs)",
			    (long long)c->limits.queue_timeout_s,
			    (long long)c->limits.max_concurrent_runs);
			return -EBUSY;
		}
		(void)poll(NULL, 0, left < RUNNER_SLOT_POLL_MS ? (int)left :
		    RUNNER_SLOT_POLL_MS);
	}
	s->fd = fd;
	s->index = rc;
	s->waited_ms = time_mono_ms() - t0;
	return 0;
}

void
runner_slot_release(struct runner_slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->index = -1;
}
