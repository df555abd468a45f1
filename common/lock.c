/*
 * File locks (lock.h): flock on a per-lock file, polled against a
 * monotonic deadline rather than blocking, so a waiter honours its
 * deadline and its caller's cancel flag without signals.
 */
#include "common/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/util.h"

int
util_lock_try(const char *path)
{
	int fd, rc;

	/* Read-only is enough for flock, so a lock file made by root can
	 * still be taken by another user who may read it. */
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	do
		rc = flock(fd, LOCK_EX | LOCK_NB);
	while (rc < 0 && errno == EINTR);
	if (rc < 0) {
		rc = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int
util_lock_wait(const char *path, int64_t deadline_ms,
    const atomic_int *cancel)
{
	int64_t left;
	int fd;

	for (;;) {
		if ((fd = util_lock_try(path)) != -EWOULDBLOCK)
			return fd;
		if (cancel != NULL && atomic_load(cancel))
			return -EINTR;
		if ((left = deadline_ms - time_mono_ms()) <= 0)
			return -ETIMEDOUT;
		(void)poll(NULL, 0, left < UTIL_LOCK_POLL_MS ? (int)left :
		    UTIL_LOCK_POLL_MS);
	}
}
