/*
 * The warm pool's thread (pool.h): a background thread does the slow
 * steps (docker calls, seals, removals) outside the lock and hands each
 * start to a worker thread of its own, up to max_starts at once, so that
 * a refill after a burst of takes is not one start after another. Both
 * tell the owner what they did (on_note). pool_start.c holds one start;
 * pool_take.c holds the side runs call; runner_pool_take only moves an entry out of a list, so a run
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
			runner_pool_note(p, down ? RUNNER_POOL_DAEMON_DOWN :
			    RUNNER_POOL_DAEMON_UP, m, "", down ? err : "", 0);
}

/* Under the lock: why an idle entry must go, or NULL to keep it. */
static const char *
entry_stale(struct runner_pool *p, int m, struct pool_entry *e,
    const bool ok[2], const char *image)
{
	if (p->stop || p->paused)
		return p->stop ? "stopping" : "paused";
	if (p->dormant[m])
		return "no run asked for the mode (pool idle time)";
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

		if (!ok[m] || p->dormant[m] || have >= p->o.size ||
		    now < p->next_try_ms[m])
			continue;
		if (best < 0 || have < (int64_t)p->nidle[best] +
		    p->starting_m[best])
			best = m;
	}
	return best;
}

/* Under the lock: shrinks each mode no run has asked for (a take) for
 * idle_s since it first became full, or since the last take, whichever
 * came later; sets shrunk[m] for the modes shrunk now. A dormant mode's
 * idle containers are victims (entry_stale), none is started for it
 * (pick_mode) and a start in flight is given up (record_start) until
 * runner_pool_take wakes it. */
static void
shrink_idle(struct runner_pool *p, bool shrunk[2])
{
	int64_t now = time_mono_ms();

	for (int m = 0; m < 2; m++) {
		int64_t since = p->asked_ms[m] > p->full_ms[m] ?
		    p->asked_ms[m] : p->full_ms[m];

		shrunk[m] = false;
		if (p->o.idle_s <= 0 || p->dormant[m] || p->full_ms[m] == 0 ||
		    now - since < p->o.idle_s * 1000)
			continue;
		p->dormant[m] = shrunk[m] = true;
		p->filled[m] = false;
		p->full_ms[m] = 0;
		p->shrinks++;
	}
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

		(void)runner_pool_entry_destroy(p, v->m, &v->e);
		runner_pool_note(p, RUNNER_POOL_RETIRED, v->m, v->e.name, v->why, 0);
	}
}

static void *
worker_main(void *arg)
{
	struct pool_worker *w = arg;
	struct runner_pool *p = w->p;

	runner_pool_start_one(p, w->m, w->image, &w->ep);
	pthread_mutex_lock(&p->mu);
	w->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* A place among the gate's starts in flight (none: always), counting
 * the cold runs in flight of all its pools. A pool not marked waiting
 * leaves the place to one that is (it looks again within 100 ms); one
 * refused is marked, one served unmarked. */
static bool
gate_take(struct runner_pool *p)
{
	struct runner_pool_gate *g = p->o.gate;
	unsigned long long me = 1ull << p->gate_bit;
	long long cur;

	if (g == NULL)
		return true;
	if ((atomic_load(&g->waiting) & ~me) != 0 &&
	    (atomic_load(&g->waiting) & me) == 0) {
		atomic_fetch_or(&g->waiting, me);
		return false;
	}
	cur = atomic_load(&g->starting);
	do {
		if (cur + atomic_load(&g->cold) >= g->max) {
			atomic_fetch_or(&g->waiting, me);
			return false;
		}
	} while (!atomic_compare_exchange_weak(&g->starting, &cur, cur + 1));
	atomic_fetch_and(&g->waiting, ~me);
	return true;
}

/* Under the lock: hands the starts pick_mode allows to worker threads
 * (one counted in starting from here until record_start). A start whose
 * thread cannot be made runs here, on the pool's thread, lock dropped.
 * How many were begun. */
static int
launch_starts(struct runner_pool *p, const bool ok[2], const char *image)
{
	int m, n = 0;

	p->gate_blocked = false;
	while ((m = pick_mode(p, ok, image)) >= 0) {
		struct pool_worker *w = NULL;

		for (size_t i = 0; i < POOL_STARTS_MAX && w == NULL; i++)
			if (!p->workers[i].busy)
				w = &p->workers[i];
		if (w == NULL)		/* all still to be joined */
			break;
		/* Given back by record_start. */
		if (!gate_take(p)) {
			p->gate_blocked = true;
			break;
		}
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
		runner_pool_start_one(p, m, image, &p->net_ep);
		pthread_mutex_lock(&p->mu);
	}
	/* Wants no start now: not waiting at the gate. */
	if (!p->gate_blocked && p->o.gate != NULL)
		atomic_fetch_and(&p->o.gate->waiting, ~(1ull << p->gate_bit));
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
	bool ok[2] = { false, false }, shrunk[2];
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
		shrink_idle(p, shrunk);
		nv = collect_victims(p, ok, image);
		begun = launch_starts(p, ok, image);
		pthread_mutex_unlock(&p->mu);
		destroy_victims(p, nv);
		for (int m = 0; m < 2; m++)
			if (shrunk[m])
				runner_pool_note(p, RUNNER_POOL_SHRUNK, m, "",
				    "", p->o.idle_s * 1000);
		pthread_mutex_lock(&p->mu);
		if (begun == 0 && !p->stop)
			runner_pool_cond_wait(p, p->inflight > 0 ||
			    p->gate_blocked ? 100 : POOL_TICK_MS);
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

void
runner_pool_gate_init(struct runner_pool_gate *g, int64_t max_starts)
{
	atomic_init(&g->starting, 0);
	atomic_init(&g->cold, 0);
	atomic_init(&g->waiting, 0);
	atomic_init(&g->npools, 0);
	g->max = starts_resolve(max_starts);
}

int64_t
runner_pool_gate_starting(struct runner_pool_gate *g)
{
	return (int64_t)atomic_load(&g->starting);
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
	    o->idle_s < 0 || o->max_starts < 0 ||
	    o->max_starts > POOL_STARTS_MAX) {
		snprintf(err, errlen, "pool size must be 1..%d, max age at "
		    "least 1 s, idle time at least 0 and parallel starts "
		    "0..%d", POOL_MAX_SIZE, POOL_STARTS_MAX);
		return -EINVAL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (o->gate != NULL) {
		unsigned b = atomic_fetch_add(&o->gate->npools, 1);

		if (b >= 64) {
			free(p);
			snprintf(err, errlen, "at most 64 pools share starts");
			return -EINVAL;
		}
		p->gate_bit = b;
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
