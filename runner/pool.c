/*
 * The warm pool's thread (pool.h): a background thread does the slow
 * steps (docker calls, seals, removals) outside the lock and hands each
 * start to a worker thread of its own, up to max_starts at once, so that
 * a refill after a burst of takes is not one start after another. Both
 * tell the owner what they did (on_note). pool_take.c holds the side runs
 * call; runner_pool_take only moves an entry out of a list, so a run
 * never waits on the pool.
 */
#include "runner/pool_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/probe.h"
#include "runner/container.h"
#include "runner/docker.h"

static void
note(struct runner_pool *p, enum runner_pool_event ev, int m,
    const char *name, const char *why, int64_t ms)
{
	struct runner_pool_note n = { .ev = ev, .net = (enum runner_net)m,
	    .name = name, .why = why != NULL ? why : "", .ms = ms,
	    .size = p->o.size, .lang = runner_pool_lang(p) };

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
static int
entry_destroy(struct runner_pool *p, int m, struct pool_entry *e)
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
		note(p, RUNNER_POOL_RM_FAILED, m, e->name, why, 0);
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

/* Whether a start in progress should give up: the pool is stopping, or
 * paused (its container would be removed as soon as it is ready). */
static bool
pool_halted(struct runner_pool *p)
{
	bool h;

	pthread_mutex_lock(&p->mu);
	h = p->stop || p->paused;
	pthread_mutex_unlock(&p->mu);
	return h;
}

struct start_watch {
	struct runner_pool *p;
	struct proc *cli;
};

/* container_wait_running's stop: the pool halted, or the start failed. */
static int
start_stop(void *arg)
{
	struct start_watch *w = arg;

	if (pool_halted(w->p))
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
	struct start_watch w = { .p = p };
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
	rc = container_wait_running(c, e->name, deadline, start_stop, &w);
	if (rc == 0 && m == RUNNER_NET_PROXY)
		rc = netsetup_sandbox_seal(c, &e->ep, e->name, e->addr, err,
		    errlen);
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

/* Which modes may hold containers now. Thread only, no lock (file reads,
 * and for egress a status check at most every POOL_NET_CHECK_MS). */
static void
modes_ok(struct runner_pool *p, const char *image, bool ok[2])
{
	char err[256];
	int64_t now = time_mono_ms();

	for (int m = 0; m < 2; m++)
		ok[m] = p->o.modes[m] && (p->o.skip_probe_check ||
		    probe_state_check(p->c,
		    runner_net_name((enum runner_net)m), image, time_wall_ms(),
		    err, sizeof(err)) == 0);
	if (!ok[RUNNER_NET_PROXY])
		return;
	if (p->net_checked_ms == 0 || now - p->net_checked_ms >=
	    POOL_NET_CHECK_MS) {
		p->net_ok = netsetup_ready(p->c, &p->net_ep, err,
		    sizeof(err)) == 0;
		p->net_checked_ms = now;
		pthread_mutex_lock(&p->mu);
		p->net_ok_ms = p->net_ok ? now : 0;
		p->net_ok_ep = p->net_ep;
		pthread_mutex_unlock(&p->mu);
	}
	ok[RUNNER_NET_PROXY] = p->net_ok;
}

/* Thread only, no lock: whether dockerd answers (runner_daemon_check).
 * While it does not, no start is tried (each would fail and push the
 * back-off up to POOL_BACKOFF_MAX_MS, delaying the refill after its
 * return); the change is noted both ways. */
static void
daemon_watch(struct runner_pool *p)
{
	char err[256];
	bool down = runner_daemon_check(p->c, err, sizeof(err)) < 0;

	if (down == p->daemon_down)
		return;
	p->daemon_down = down;
	if (!down) {
		pthread_mutex_lock(&p->mu);
		for (int m = 0; m < 2; m++)
			p->next_try_ms[m] = p->backoff_ms[m] = 0;
		pthread_mutex_unlock(&p->mu);
	}
	for (int m = 0; m < 2; m++)
		if (p->o.modes[m])
			note(p, down ? RUNNER_POOL_DAEMON_DOWN :
			    RUNNER_POOL_DAEMON_UP, m, "", down ? err : "", 0);
}

/* Under the lock: why an idle entry must go, or NULL to keep it. */
static const char *
entry_stale(struct runner_pool *p, int m, struct pool_entry *e,
    const bool ok[2], const char *image)
{
	if (p->stop || p->paused)
		return p->stop ? "stopping" : "paused";
	if (!ok[m])
		return "mode unavailable (probe or egress network)";
	if (image[0] == '\0' || strcmp(image, e->image) != 0)
		return "pinned image changed";
	if (time_mono_ms() - e->born_ms > p->o.max_age_s * 1000)
		return "max age";
	if (m == RUNNER_NET_PROXY && !runner_pool_ep_equal(&e->ep, &p->net_ep))
		return "egress endpoint changed";
	if (proc_gone(e->p) || proc_gone(e->x))
		return "exited";
	return NULL;
}

/* Under the lock: the mode to start one more container for, or -1: one
 * below its size counting its starts in flight, fewest of both first,
 * while fewer than max_starts sandboxes are being started, the cold runs
 * in flight included (runs that missed the pool start their own): a
 * refill is a guess at the next run, a cold run is a client waiting, so
 * the refill yields the cores to it (bench_pool, 8 clients on 2 cores:
 * pool 2/4 had 0.68-1.03x pool 0's runs/s before, 0.94-1.18x after). */
static int
pick_mode(struct runner_pool *p, const bool ok[2], const char *image)
{
	int64_t now = time_mono_ms();
	int best = -1;

	if (p->paused || p->stop || p->closing || p->daemon_down ||
	    image[0] == '\0' || p->starting + p->cold >= p->max_starts)
		return -1;
	/* A start costs about a second of CPU: on a small host it would
	 * slow the warm runs just handed out, so it waits for them a little
	 * (measured here: print(1) 374 ms warm with the refill at once). */
	if (p->inflight > 0 && now - p->last_take_ms < POOL_DEFER_MS)
		return -1;
	for (int m = 0; m < 2; m++) {
		int64_t have = (int64_t)p->nidle[m] + p->starting_m[m];

		if (!ok[m] || have >= p->o.size || now < p->next_try_ms[m])
			continue;
		if (best < 0 || have < (int64_t)p->nidle[best] +
		    p->starting_m[best])
			best = m;
	}
	return best;
}

/* Under the lock: counts a start's outcome, keeps its container or (the
 * pool paused, stopped or full meanwhile) gives it back to destroy
 * (*give_up). The event to note. */
static enum runner_pool_event
record_start(struct runner_pool *p, int m, int rc, struct pool_entry *e,
    const char *err, bool *give_up)
{
	*give_up = rc < 0;
	p->starting--;
	p->starting_m[m]--;
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
	if (p->paused || p->stop || (int64_t)p->nidle[m] >= p->o.size) {
		*give_up = true;
		p->aborted++;
		return RUNNER_POOL_ABORTED;
	}
	p->idle[m][p->nidle[m]++] = *e;
	if ((int64_t)p->nidle[m] < p->o.size || p->filled[m])
		return RUNNER_POOL_READY;
	p->filled[m] = true;
	return RUNNER_POOL_FULL;
}

/* One start for mode m, without the lock: start, count, note; a start
 * given up is removed by name before this returns. */
static void
pool_start(struct runner_pool *p, int m, const char *image,
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
		rc = entry_destroy(p, m, &e);
		if (ev == RUNNER_POOL_ABORTED) {
			snprintf(why, sizeof(why), "%s", rc == 0 ?
			    "removed by name" : rc == -ENOENT ?
			    "never created" : "removal failed");
			util_strlcpy(err, why, sizeof(err));
		}
	}
	note(p, ev, m, e.name, err, time_mono_ms() - t0);
}

/* Under the lock: moves the idle entries that must go (all, when
 * stopping) to p->victims; their number. */
static size_t
collect_victims(struct runner_pool *p, const bool ok[2], const char *image)
{
	size_t nv = 0;

	for (int m = 0; m < 2; m++) {
		size_t keep = 0;

		for (size_t i = 0; i < p->nidle[m]; i++) {
			const char *why = entry_stale(p, m, &p->idle[m][i], ok,
			    image);

			if (why == NULL) {
				p->idle[m][keep++] = p->idle[m][i];
				continue;
			}
			p->victims[nv] = (struct pool_victim){
			    .e = p->idle[m][i], .m = m, .why = why };
			nv++;
		}
		p->nidle[m] = keep;
		if (p->paused || p->stop)
			p->filled[m] = false;
	}
	p->retired += nv;
	if (nv > 0)
		pthread_cond_broadcast(&p->cv);
	return nv;
}

static void
destroy_victims(struct runner_pool *p, size_t nv)
{
	for (size_t i = 0; i < nv; i++) {
		struct pool_victim *v = &p->victims[i];

		(void)entry_destroy(p, v->m, &v->e);
		note(p, RUNNER_POOL_RETIRED, v->m, v->e.name, v->why, 0);
	}
}

static void *
worker_main(void *arg)
{
	struct pool_worker *w = arg;
	struct runner_pool *p = w->p;

	pool_start(p, w->m, w->image, &w->ep);
	pthread_mutex_lock(&p->mu);
	w->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Under the lock: hands the starts pick_mode allows to worker threads
 * (one counted in starting from here until record_start). A start whose
 * thread cannot be made runs here, on the pool's thread, lock dropped.
 * How many were begun. */
static int
launch_starts(struct runner_pool *p, const bool ok[2], const char *image)
{
	int m, n = 0;

	while ((m = pick_mode(p, ok, image)) >= 0) {
		struct pool_worker *w = NULL;

		for (size_t i = 0; i < POOL_STARTS_MAX && w == NULL; i++)
			if (!p->workers[i].busy)
				w = &p->workers[i];
		if (w == NULL)		/* all still to be joined */
			break;
		*w = (struct pool_worker){ .p = p, .m = m, .ep = p->net_ep,
		    .busy = true };
		util_strlcpy(w->image, image, sizeof(w->image));
		p->starting++;
		p->starting_m[m]++;
		n++;
		if (pthread_create(&w->t, NULL, worker_main, w) == 0)
			continue;
		w->busy = false;
		pthread_mutex_unlock(&p->mu);
		pool_start(p, m, image, &p->net_ep);
		pthread_mutex_lock(&p->mu);
	}
	return n;
}

/* Joins the workers that are done (all of them, and waits for them, when
 * all is set). Takes and drops the lock. */
static void
join_workers(struct runner_pool *p, bool all)
{
	for (size_t i = 0; i < POOL_STARTS_MAX; i++) {
		struct pool_worker *w = &p->workers[i];
		bool join;

		pthread_mutex_lock(&p->mu);
		join = w->busy && (all || w->done);
		pthread_mutex_unlock(&p->mu);
		if (!join)
			continue;
		/* Only this thread reads or clears busy: no race. */
		pthread_join(w->t, NULL);
		pthread_mutex_lock(&p->mu);
		w->busy = false;
		pthread_mutex_unlock(&p->mu);
	}
}

static void *
pool_main(void *arg)
{
	struct runner_pool *p = arg;
	char image[IMAGE_ID_MAX];
	bool ok[2] = { false, false };
	size_t nv;
	int begun;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		pthread_mutex_unlock(&p->mu);
		join_workers(p, false);
		if (image_pinned_id(p->c, image) < 0)
			image[0] = '\0';
		modes_ok(p, image, ok);
		daemon_watch(p);
		pthread_mutex_lock(&p->mu);
		nv = collect_victims(p, ok, image);
		begun = launch_starts(p, ok, image);
		pthread_mutex_unlock(&p->mu);
		destroy_victims(p, nv);
		pthread_mutex_lock(&p->mu);
		if (begun == 0 && !p->stop)
			runner_pool_cond_wait(p, p->inflight > 0 ? 100 :
			    POOL_TICK_MS);
	}
	pthread_mutex_unlock(&p->mu);
	/* Stopping: each start in flight gives up (start_stop) and removes
	 * its container by name; then nothing idle survives the pool (a start
	 * counted before the stop is in the idle list by now). */
	join_workers(p, true);
	pthread_mutex_lock(&p->mu);
	nv = collect_victims(p, ok, "");
	pthread_mutex_unlock(&p->mu);
	destroy_victims(p, nv);
	return NULL;
}

/* max_starts of the options: 0 is the online CPUs. */
static int64_t
starts_resolve(int64_t want)
{
	long n = want > 0 ? (long)want : sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > POOL_STARTS_MAX ? POOL_STARTS_MAX : (int64_t)n;
}

int
runner_pool_new(const struct config *c, const struct runner_pool_opts *o,
    struct runner_pool **out, char *err, size_t errlen)
{
	struct runner_request none = { 0 };
	struct runner_pool *p;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (o->size < 1 || o->size > POOL_MAX_SIZE || o->max_age_s < 1 ||
	    o->max_starts < 0 || o->max_starts > POOL_STARTS_MAX) {
		snprintf(err, errlen, "pool size must be 1..%d, max age at "
		    "least 1 s and parallel starts 0..%d", POOL_MAX_SIZE,
		    POOL_STARTS_MAX);
		return -EINVAL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->c = c;
	p->o = *o;
	p->remove_ms_last = -1;
	p->max_starts = starts_resolve(o->max_starts);
	util_strlcpy(p->session, o->session != NULL ? o->session : "pool",
	    sizeof(p->session));
	p->o.session = p->session;
	runner_limits_resolve(c, &none, &p->lim);
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = pthread_create(&p->thread, NULL, pool_main, p)) != 0) {
		snprintf(err, errlen, "cannot start the pool thread: %s",
		    strerror(rc));
		runner_pool_free(p);
		return -rc;
	}
	p->thread_up = true;
	*out = p;
	return 0;
}

void
runner_pool_pause(struct runner_pool *p, bool paused)
{
	pthread_mutex_lock(&p->mu);
	p->paused = paused;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void
runner_pool_stop(struct runner_pool *p)
{
	if (!p->thread_up || p->joined)
		return;
	/* No new start from here on: while the removals below are waited
	 * for, the thread would otherwise begin refills for a pool about to
	 * go (a container begun then was seen left behind by a stop). */
	pthread_mutex_lock(&p->mu);
	p->closing = true;
	pthread_mutex_unlock(&p->mu);
	/* Warm runs' containers still being removed after their answer:
	 * they are the pool's too (each removal has its own deadline). */
	runner_pool_wait_removals(p, 2 * CONTAINER_ABORT_MS);
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	/* The thread's workers give up their starts in flight (start_stop),
	 * each waits for its `docker run` to create the container and removes
	 * it; the thread joins them, then removes the idle ones. */
	pthread_join(p->thread, NULL);
	p->joined = true;
}

void
runner_pool_free(struct runner_pool *p)
{
	if (p == NULL)
		return;
	runner_pool_stop(p);
	/* A removal thread still holds p: it may not be freed before. Each
	 * removal is bounded (container_abort, proc_free's reap). */
	runner_pool_wait_removals(p, INT64_MAX / 4);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
