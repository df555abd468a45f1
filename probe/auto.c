/*
 * Probe records that refresh themselves (probe_state_ensure in probe.h):
 * a run that finds the record for its mode stale probes first, one probe
 * at a time on the host (a flock in STATE_DIR), so unattended hosts keep
 * working past probe_max_age_s while a failed probe still stops them.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/lock.h"
#include "common/util.h"
#include "probe/probe.h"

int64_t
probe_lock_wait_ms(const struct config *c)
{
	return PROBE_LOCK_WAIT_MS + c->limits.queue_timeout_s * 1000;
}

int
probe_lock(const struct config *c, int64_t deadline_ms,
    const atomic_int *cancel, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/probe.lock",
	    c->state_dir) >= sizeof(path)) {
		snprintf(err, errlen, "state_dir is too long");
		return -ENAMETOOLONG;
	}
	if ((fd = util_mkdir_p(c->state_dir, 0755)) < 0 ||
	    (fd = util_lock_wait(path, deadline_ms, cancel)) < 0) {
		if (fd == -ETIMEDOUT)
			snprintf(err, errlen, "another probe still holds %s",
			    path);
		else if (fd == -EINTR)
			snprintf(err, errlen, "cancelled while waiting for %s",
			    path);
		else
			snprintf(err, errlen, "cannot lock %s: %s", path,
			    strerror(-fd));
	}
	return fd;
}

void
probe_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

static void note(const struct probe_auto *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
note(const struct probe_auto *a, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	if (a->note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	a->note(a->data, msg);
}

/* The lock: at once, or after waiting for the probe that holds it (then
 * *waited). A descriptor or a negative errno with the reason in err. */
static int
take_lock(const struct config *c, const char *mode,
    const struct probe_auto *a, bool *waited, char *err, size_t errlen)
{
	int64_t wait = a->wait_ms > 0 ? a->wait_ms : probe_lock_wait_ms(c);
	int fd;

	*waited = false;
	if ((fd = probe_lock(c, 0, NULL, err, errlen)) != -ETIMEDOUT)
		return fd;
	*waited = true;
	note(a, "the probe record for --net %s is stale; waiting for the "
	    "probe in progress (at most %lld s)", mode,
	    (long long)(wait / 1000));
	return probe_lock(c, time_mono_ms() + wait, a->cancel, err, errlen);
}

int
probe_state_ensure(const struct config *c, const char *mode,
    const char *image, const struct probe_auto *a, char *err,
    size_t errlen)
{
	int64_t t0 = time_mono_ms();
	char why[400], *hint;
	bool waited;
	int fd, rc;

	rc = probe_state_check(c, mode, image, time_wall_ms(), err,
	    errlen);
	if (rc != -ESTALE || a == NULL || !c->probe_auto)
		return rc;
	if ((fd = take_lock(c, mode, a, &waited, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "the probe record for --net %s is stale "
		    "and no probe could be run: %s", mode, why);
		return -ESTALE;
	}
	/* Read again under the lock: whoever held it may have probed. */
	rc = probe_state_check(c, mode, image, time_wall_ms(), err,
	    errlen);
	if (rc != -ESTALE) {
		probe_unlock(fd);
		if (rc == 0 && waited)
			note(a, "probe --net %s passed in another run; going "
			    "on after %lld ms", mode,
			    (long long)(time_mono_ms() - t0));
		return rc;
	}
	/* err: "<why stale>: run 'cordon probe ...'": the why is the note. */
	if ((hint = strstr(err, ": run '")) != NULL)
		*hint = '\0';
	note(a, "%s: probing before the run", err);
	rc = a->probe(a->data, mode, why, sizeof(why));
	probe_unlock(fd);
	if (rc < 0) {
		snprintf(err, errlen, "the probe record for --net %s is stale "
		    "and the automatic probe did not run: %s", mode, why);
		return -ESTALE;
	}
	rc = probe_state_check(c, mode, image, time_wall_ms(), err,
	    errlen);
	if (rc == 0)
		note(a, "probe --net %s passed in %lld ms; the run goes on",
		    mode, (long long)(time_mono_ms() - t0));
	return rc;
}
