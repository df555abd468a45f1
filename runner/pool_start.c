/*
 * The warm pool (pool_internal.h): one start of a container, on a
 * worker thread of the pool's, without the lock: the container run and
 * awaited (sealed, in proxy mode), the job's exec spawned to wait for its
 * program, the outcome counted and noted; a start given up is removed by
 * name, even while its create may still be under way.
 */
#include "runner/pool_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "runner/container.h"
#include "runner/docker.h"

void
runner_pool_note(struct runner_pool *p, enum runner_pool_event ev, int m,
    const char *name, const char *why, int64_t ms)
{
	struct runner_pool_note n = { .ev = ev, .net = (enum runner_net)m,
	    .name = name, .why = why != NULL ? why : "", .ms = ms,
	    .size = p->o.size, .lang = runner_pool_lang(p),
	    .profile = p->o.profile_label };

	if (p->o.on_note == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	n.idle = (int64_t)p->nidle[m];
	pthread_mutex_unlock(&p->mu);
	p->o.on_note(p->o.note_arg, &n);
}

/* Removes e's container by name, even while its `docker run` may still be
 * creating it (container_abort), and frees its CLI. Notes a removal that
 * failed. The removal's result. */
int
runner_pool_entry_destroy(struct runner_pool *p, int m, struct pool_entry *e)
{
	char why[160];
	int rc;

	if (e->p == NULL)		/* nothing was spawned */
		return -ENOENT;
	rc = container_abort_patient(p->c, e->name, e->p);
	proc_free(e->p);
	e->p = NULL;
	proc_free(e->x);
	e->x = NULL;
	if (rc < 0 && rc != -ENOENT) {
		snprintf(why, sizeof(why), "docker rm -f: %s", strerror(-rc));
		pthread_mutex_lock(&p->mu);
		p->rm_failed++;
		pthread_mutex_unlock(&p->mu);
		runner_pool_note(p, RUNNER_POOL_RM_FAILED, m, e->name, why, 0);
	}
	return rc;
}

/* After a failed start: the first line docker printed, if it exited. */
static void
start_failure(struct pool_entry *e, const char *what, char *err,
    size_t errlen)
{
	const char *msg;

	if (proc_gone(e->p)) {
		proc_kill(e->p, SIGKILL);
		(void)proc_communicate(e->p, time_mono_ms() + 2000, NULL);
		msg = cbuf_data(proc_stderr(e->p));
		snprintf(err, errlen, "%s: %.*s", what,
		    (int)strcspn(msg, "\n"), msg);
	} else if (err[0] == '\0') {
		snprintf(err, errlen, "%s", what);
	}
}

/* Whether a start in progress for mode m should give up: the pool is
 * stopping, or paused, or the mode shrank (its container would be removed
 * as soon as it is ready, record_start); so it frees its place among the
 * starts in flight at once. */
static bool
pool_halted(struct runner_pool *p, int m)
{
	bool h;

	pthread_mutex_lock(&p->mu);
	h = p->stop || p->paused || p->dormant[m];
	pthread_mutex_unlock(&p->mu);
	return h;
}

struct start_watch {
	struct runner_pool *p;
	int m;
	struct proc *cli;
};

/* container_wait_running's stop: the pool halted, or the start failed. */
static int
start_stop(void *arg)
{
	struct start_watch *w = arg;

	if (pool_halted(w->p, w->m))
		return -ECANCELED;
	return proc_gone(w->cli) ? -ECHILD : 0;
}

/* Starts one container for mode m (egress: sealed to ep) and waits until
 * it runs (and, egress, is sealed). Runs on a start's worker thread,
 * without the lock. -ECANCELED when the pool was stopped or paused
 * meanwhile. On failure e->p (NULL when nothing was spawned) is left to
 * the caller to destroy. */
static int
start_one(struct runner_pool *p, int m, const char *image,
    const struct netsetup_endpoint *ep, struct pool_entry *e, char *err,
    size_t errlen)
{
	const struct config *c = p->c;
	struct netsetup_run_args na;
	int64_t deadline = time_mono_ms() + POOL_START_MS;
	struct start_watch w = { .p = p, .m = m };
	char hex[17];
	int rc;
	struct container_start cs = {
		.name = e->name, .image = image, .session = p->session,
		.lim = &p->lim,
		/* It may take up to POOL_START_MS to start (its age counts
		 * from then), idle for max_age, then run for the longest
		 * timeout; `cordon gc` must not take it before. */
		.label_deadline_s = time_wall_ms() / 1000 +
		    POOL_START_MS / 1000 + p->o.max_age_s +
		    c->limits.max_timeout_s + CONTAINER_GC_GRACE_S,
		.lang = p->o.lang, .hold = true, .holder = true,
		.stdout_max = 4096,
		.stderr_max = 4096,
	};

	memset(e, 0, sizeof(*e));
	err[0] = '\0';
	if (util_random_hex(hex, 8) < 0) {
		snprintf(err, errlen, "cannot make a container name");
		return -EIO;
	}
	snprintf(e->name, sizeof(e->name), "cordon-%s", hex);
	if (m == RUNNER_NET_PROXY) {
		if ((rc = netsetup_run_args(c, ep, &na)) < 0) {
			snprintf(err, errlen, "cannot build the egress options");
			return rc;
		}
		cs.na = &na;
		e->ep = *ep;
	}
	if ((rc = container_spawn(c, &cs, &e->p)) < 0) {
		snprintf(err, errlen, "cannot run %.100s: %s", c->docker,
		    strerror(-rc));
		e->p = NULL;
		return rc;
	}
	/* Not container_seal's wait: a stop or a pause cuts a slow start
	 * short, and so does its docker CLI exiting. */
	w.cli = e->p;
	if (m == RUNNER_NET_PROXY)
		rc = container_seal_until(c, &e->ep, e->name, deadline,
		    start_stop, &w, e->addr, NULL, err, errlen);
	else
		rc = container_wait_running(c, e->name, deadline, start_stop,
		    &w);
	/* The job's python, in the running (sealed) sandbox: it waits for
	 * its program, which only a run writes. */
	if (rc == 0 && (rc = container_exec_spawn(c, &cs, &e->x)) < 0) {
		snprintf(err, errlen, "cannot run %.100s exec: %s", c->docker,
		    strerror(-rc));
		e->x = NULL;
	}
	if (rc == 0 && (proc_gone(e->p) || proc_gone(e->x)))
		rc = -ECHILD;
	if (rc < 0) {
		start_failure(e, "a pool container did not start", err,
		    errlen);
		return rc;
	}
	util_strlcpy(e->image, image, sizeof(e->image));
	e->born_ms = time_mono_ms();
	e->memory = p->lim.memory;
	e->cpus = p->lim.cpus;
	return 0;
}

/* Under the lock: counts a start's outcome, keeps its container or (the
 * pool paused, stopped or full meanwhile, or its mode shrank) gives it
 * back to destroy (*give_up). The event to note. */
static enum runner_pool_event
record_start(struct runner_pool *p, int m, int rc, struct pool_entry *e,
    const char *err, bool *give_up)
{
	*give_up = rc < 0;
	p->starting--;
	p->starting_m[m]--;
	if (p->o.gate != NULL)
		atomic_fetch_sub(&p->o.gate->starting, 1);
	if (rc < 0 && (rc == -ECANCELED || p->stop || p->paused)) {
		p->aborted++;		/* not a failure */
		p->filled[m] = false;
		return RUNNER_POOL_ABORTED;
	}
	if (rc < 0) {
		p->failed++;
		p->filled[m] = false;
		util_strlcpy(p->last_error, err, sizeof(p->last_error));
		p->backoff_ms[m] = p->backoff_ms[m] == 0 ? POOL_BACKOFF_MIN_MS :
		    p->backoff_ms[m] * 2 > POOL_BACKOFF_MAX_MS ?
		    POOL_BACKOFF_MAX_MS : p->backoff_ms[m] * 2;
		p->next_try_ms[m] = time_mono_ms() + p->backoff_ms[m];
		return RUNNER_POOL_FAILED;
	}
	p->started++;
	p->backoff_ms[m] = 0;
	pthread_cond_broadcast(&p->cv);
	/* A start begun before its mode shrank is not kept: a dormant mode
	 * holds nothing, and its fill state stays as the shrink left it. */
	if (p->paused || p->stop || p->dormant[m] ||
	    (int64_t)p->nidle[m] >= p->o.size) {
		*give_up = true;
		p->aborted++;
		return RUNNER_POOL_ABORTED;
	}
	p->idle[m][p->nidle[m]++] = *e;
	if ((int64_t)p->nidle[m] < p->o.size || p->filled[m])
		return RUNNER_POOL_READY;
	p->filled[m] = true;
	/* The idle clock runs from the first fill after a start or a wake:
	 * a refill after a failed start is not a run asking. */
	if (p->full_ms[m] == 0)
		p->full_ms[m] = time_mono_ms();
	return RUNNER_POOL_FULL;
}

/* One start for mode m, without the lock: start, count, note; a start
 * given up is removed by name before this returns. */
void
runner_pool_start_one(struct runner_pool *p, int m, const char *image,
    const struct netsetup_endpoint *ep)
{
	struct pool_entry e;
	enum runner_pool_event ev;
	char err[256], why[64];
	int64_t t0 = time_mono_ms();
	bool give_up;
	int rc;

	rc = start_one(p, m, image, ep, &e, err, sizeof(err));
	pthread_mutex_lock(&p->mu);
	ev = record_start(p, m, rc, &e, err, &give_up);
	pthread_mutex_unlock(&p->mu);
	if (give_up) {
		rc = runner_pool_entry_destroy(p, m, &e);
		if (ev == RUNNER_POOL_ABORTED) {
			snprintf(why, sizeof(why), "%s", rc == 0 ?
			    "removed by name" : rc == -ENOENT ?
			    "never created" : "removal failed");
			util_strlcpy(err, why, sizeof(err));
		}
	}
	runner_pool_note(p, ev, m, e.name, err, time_mono_ms() - t0);
}
