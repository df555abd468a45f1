/*
 * container_halt (halt.h): the kill of a container on a thread of its
 * own, while the caller keeps its streams drained, so that a flood the
 * daemon is still relaying never holds the kill up.
 */
#include "runner/halt.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/util.h"
#include "runner/docker.h"
#include "runner/dockerapi.h"
#include "runner/result.h"

int
container_kill(const struct config *c, const char *name, int64_t timeout_ms)
{
	int64_t end = time_mono_ms() + timeout_ms, left;
	int rc = -EIO;

	if (timeout_ms <= 0)
		return -ETIMEDOUT;
	if (dockerapi_usable(c)) {
		rc = dockerapi_kill(DOCKERAPI_SOCKET, name, timeout_ms > INT32_MAX ?
		    INT32_MAX : (int)timeout_ms);
		if (rc == 0 || rc == -ENOENT || rc == -ETIMEDOUT)
			return rc;
	}
	if ((left = end - time_mono_ms()) <= 0)
		return rc;
	return docker_kill(c, name, left);
}

struct halt_kill {
	const struct config *c;
	char name[RUNNER_NAME_MAX];
	int64_t timeout_ms;
	int rc;
	atomic_int done;
};

static void *
kill_main(void *arg)
{
	struct halt_kill *k = arg;

	k->rc = container_kill(k->c, k->name, k->timeout_ms);
	atomic_store(&k->done, 1);
	return NULL;
}

int
container_halt(const struct config *c, const char *name,
    halt_drain_fn drain, void *arg, int64_t limit_ms)
{
	struct halt_kill k = { .c = c, .rc = -EIO };
	int64_t now = time_mono_ms(), answered = 0, until;
	bool open = true;
	pthread_t t;

	if (!util_strlcpy(k.name, name, sizeof(k.name)))
		return -ENAMETOOLONG;
	k.timeout_ms = limit_ms - now > 1 ? limit_ms - now : 1;
	atomic_init(&k.done, 0);
	if (pthread_create(&t, NULL, kill_main, &k) != 0)
		return -EAGAIN;
	for (;;) {
		now = time_mono_ms();
		if (answered == 0 && atomic_load(&k.done) != 0)
			answered = now;
		if ((answered > 0 && (!open || now >= answered +
		    HALT_GRACE_MS)) || now >= limit_ms)
			break;
		until = now + HALT_SLICE_MS < limit_ms ? now + HALT_SLICE_MS :
		    limit_ms;
		if (!open)
			(void)poll(NULL, 0, (int)(until - now));
		else if (drain(arg, until) != -ETIMEDOUT)
			open = false;
	}
	pthread_join(t, NULL);
	return k.rc;
}
