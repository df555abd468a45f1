/*
 * The warm pool (pool.h). One mutex guards the idle lists and counters;
 * a single background thread does every slow step (docker calls, seals,
 * removals) outside it. runner_pool_take only moves an entry out of a
 * list, so a run never waits on the pool.
 */
#include "runner/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "probe/probe.h"
#include "runner/container.h"

#define POOL_START_MS 60000	/* a start that takes longer failed */
#define POOL_TICK_MS 1000	/* re-check ages and liveness this often */
#define POOL_NET_CHECK_MS 10000	/* re-check the egress network */
#define POOL_DEFER_MS 1000	/* a refill waits this long at most for
				 * warm runs in flight to finish */
#define POOL_BACKOFF_MIN_MS 1000
#define POOL_BACKOFF_MAX_MS 30000

struct runner_pool {
	const struct config *c;
	struct runner_pool_opts o;
	char session[RUNNER_SESSION_MAX + 1];
	struct runner_limits lim;	/* the defaults: what a pooled
					 * container is started with */
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* thread wake-up; state changes */
	pthread_t thread;
	bool thread_up, stop, paused;
	struct pool_entry idle[2][POOL_MAX_SIZE];	/* oldest first */
	size_t nidle[2];
	int64_t starting;
	int64_t inflight;		/* warm runs not finished yet */
	int64_t last_take_ms;
	uint64_t hits, misses, started, failed, retired;
	char last_error[160];
	int64_t next_try_ms[2], backoff_ms[2];
	/* Thread-only: the egress network as last checked. */
	bool net_ok;
	int64_t net_checked_ms;
	struct netsetup_endpoint net_ep;
	struct pool_entry victims[2 * POOL_MAX_SIZE + 1];
};

static void
entry_destroy(const struct config *c, struct pool_entry *e)
{
	(void)container_remove(c, e->name);
	proc_kill(e->p, SIGKILL);
	(void)proc_reap(e->p, time_mono_ms() + 5000);
	proc_free(e->p);
	e->p = NULL;
}

static bool
ep_equal(const struct netsetup_endpoint *a, const struct netsetup_endpoint *b)
{
	return strcmp(a->gateway, b->gateway) == 0 && a->port == b->port;
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

/* Starts one container for mode m and waits until it runs (and, egress,
 * is sealed). Runs on the pool's thread, without the lock. -ECANCELED
 * when the pool was stopped or paused meanwhile. */
static int
start_one(struct runner_pool *p, int m, const char *image,
    struct pool_entry *e, char *err, size_t errlen)
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
		.hold = true, .stdout_max = 4096, .stderr_max = 4096,
	};

	memset(e, 0, sizeof(*e));
	err[0] = '\0';
	if (util_random_hex(hex, 8) < 0) {
		snprintf(err, errlen, "cannot make a container name");
		return -EIO;
	}
	snprintf(e->name, sizeof(e->name), "cordon-%s", hex);
	if (m == RUNNER_NET_PROXY) {
		if ((rc = netsetup_run_args(c, &p->net_ep, &na)) < 0) {
			snprintf(err, errlen, "cannot build the egress options");
			return rc;
		}
		cs.na = &na;
		e->ep = p->net_ep;
	}
	if ((rc = container_spawn(c, &cs, &e->p)) < 0) {
		snprintf(err, errlen, "cannot run %.100s: %s", c->docker,
		    strerror(-rc));
		return rc;
	}
	/* Not container_seal's wait: a stop or a pause cuts a slow start
	 * short, and so does its docker CLI exiting. */
	w.cli = e->p;
	rc = container_wait_running(c, e->name, deadline, start_stop, &w);
	if (rc == 0 && m == RUNNER_NET_PROXY)
		rc = netsetup_sandbox_seal(c, &e->ep, e->name, e->addr, err,
		    errlen);
	if (rc == 0 && proc_gone(e->p))
		rc = -ECHILD;
	if (rc < 0) {
		start_failure(e, "a pool container did not start", err,
		    errlen);
		entry_destroy(c, e);
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
	}
	ok[RUNNER_NET_PROXY] = p->net_ok;
}

/* Under the lock: whether an idle entry must go. */
static bool
entry_stale(struct runner_pool *p, int m, struct pool_entry *e,
    const bool ok[2], const char *image)
{
	return p->paused || !ok[m] || image[0] == '\0' ||
	    strcmp(image, e->image) != 0 ||
	    time_mono_ms() - e->born_ms > p->o.max_age_s * 1000 ||
	    (m == RUNNER_NET_PROXY && !ep_equal(&e->ep, &p->net_ep)) ||
	    proc_gone(e->p);
}

/* Under the lock: the mode to start a container for, or -1. */
static int
pick_mode(struct runner_pool *p, const bool ok[2], const char *image)
{
	int64_t now = time_mono_ms();
	int best = -1;

	if (p->paused || p->stop || image[0] == '\0')
		return -1;
	/* A start costs about a second of CPU: on a small host it would
	 * slow the warm runs just handed out, so it waits for them a little
	 * (measured here: print(1) 374 ms warm with the refill at once). */
	if (p->inflight > 0 && now - p->last_take_ms < POOL_DEFER_MS)
		return -1;
	for (int m = 0; m < 2; m++) {
		if (!ok[m] || (int64_t)p->nidle[m] >= p->o.size ||
		    now < p->next_try_ms[m])
			continue;
		if (best < 0 || p->nidle[m] < p->nidle[best])
			best = m;
	}
	return best;
}

static void
timed_wait(struct runner_pool *p, int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	(void)pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

static void
record_start(struct runner_pool *p, int m, int rc, struct pool_entry *e,
    const char *err, struct pool_entry *victims, size_t *nv)
{
	p->starting--;
	if (rc == -ECANCELED)		/* stopped or paused: not a failure */
		return;
	if (rc < 0) {
		p->failed++;
		util_strlcpy(p->last_error, err, sizeof(p->last_error));
		p->backoff_ms[m] = p->backoff_ms[m] == 0 ? POOL_BACKOFF_MIN_MS :
		    p->backoff_ms[m] * 2 > POOL_BACKOFF_MAX_MS ?
		    POOL_BACKOFF_MAX_MS : p->backoff_ms[m] * 2;
		p->next_try_ms[m] = time_mono_ms() + p->backoff_ms[m];
		return;
	}
	p->started++;
	p->backoff_ms[m] = 0;
	if (p->paused || p->stop || (int64_t)p->nidle[m] >= p->o.size)
		victims[(*nv)++] = *e;
	else
		p->idle[m][p->nidle[m]++] = *e;
	pthread_cond_broadcast(&p->cv);
}

static void *
pool_main(void *arg)
{
	struct runner_pool *p = arg;
	struct pool_entry *victims = p->victims;
	struct pool_entry e;
	char image[IMAGE_ID_MAX], err[256];
	bool ok[2];
	size_t nv;
	int m, rc;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		pthread_mutex_unlock(&p->mu);
		if (image_pinned_id(p->c, image) < 0)
			image[0] = '\0';
		modes_ok(p, image, ok);
		pthread_mutex_lock(&p->mu);
		nv = 0;
		for (m = 0; m < 2; m++) {
			size_t keep = 0;

			for (size_t i = 0; i < p->nidle[m]; i++) {
				if (entry_stale(p, m, &p->idle[m][i], ok, image))
					victims[nv++] = p->idle[m][i];
				else
					p->idle[m][keep++] = p->idle[m][i];
			}
			p->nidle[m] = keep;
		}
		p->retired += nv;
		if (nv > 0)
			pthread_cond_broadcast(&p->cv);
		if ((m = pick_mode(p, ok, image)) >= 0)
			p->starting++;
		pthread_mutex_unlock(&p->mu);

		for (size_t i = 0; i < nv; i++)
			entry_destroy(p->c, &victims[i]);
		if (m >= 0) {
			rc = start_one(p, m, image, &e, err, sizeof(err));
			nv = 0;
			pthread_mutex_lock(&p->mu);
			record_start(p, m, rc, &e, err, victims, &nv);
			pthread_mutex_unlock(&p->mu);
			if (nv > 0)
				entry_destroy(p->c, &victims[0]);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		pthread_mutex_lock(&p->mu);
		if (!p->stop)
			timed_wait(p, p->inflight > 0 ? 100 : POOL_TICK_MS);
	}
	/* Stopping: nothing idle survives the pool. */
	nv = 0;
	for (m = 0; m < 2; m++) {
		for (size_t i = 0; i < p->nidle[m]; i++)
			victims[nv++] = p->idle[m][i];
		p->nidle[m] = 0;
	}
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < nv; i++)
		entry_destroy(p->c, &victims[i]);
	return NULL;
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
	if (o->size < 1 || o->size > POOL_MAX_SIZE || o->max_age_s < 1) {
		snprintf(err, errlen, "pool size must be 1..%d and max age at "
		    "least 1 s", POOL_MAX_SIZE);
		return -EINVAL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->c = c;
	p->o = *o;
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

static bool
pool_full(const struct runner_pool *p)
{
	for (int m = 0; m < 2; m++)
		if (p->o.modes[m] && (int64_t)p->nidle[m] < p->o.size)
			return false;
	return true;
}

int
runner_pool_wait_full(struct runner_pool *p, int64_t timeout_ms)
{
	int64_t end = time_mono_ms() + timeout_ms, left;
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	while (!pool_full(p)) {
		if ((left = end - time_mono_ms()) <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		timed_wait(p, left < 200 ? left : 200);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void
runner_pool_stats(struct runner_pool *p, struct runner_pool_stats *s)
{
	pthread_mutex_lock(&p->mu);
	s->idle[0] = (int64_t)p->nidle[0];
	s->idle[1] = (int64_t)p->nidle[1];
	s->starting = p->starting;
	s->hits = p->hits;
	s->misses = p->misses;
	s->started = p->started;
	s->failed = p->failed;
	s->retired = p->retired;
	util_strlcpy(s->last_error, p->last_error, sizeof(s->last_error));
	pthread_mutex_unlock(&p->mu);
}

void
runner_pool_free(struct runner_pool *p)
{
	if (p == NULL)
		return;
	if (p->thread_up) {
		pthread_mutex_lock(&p->mu);
		p->stop = true;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int
runner_pool_take(struct runner_pool *p, enum runner_net net,
    const char *image, const struct runner_limits *lim,
    const struct netsetup_endpoint *ep, struct pool_entry *out)
{
	int m = net == RUNNER_NET_PROXY ? RUNNER_NET_PROXY : RUNNER_NET_NONE;
	int64_t now = time_mono_ms();
	int rc = -ENOENT;

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; !p->paused && !p->stop && i < p->nidle[m]; i++) {
		struct pool_entry *e = &p->idle[m][i];

		if (strcmp(e->image, image) != 0 || e->memory != lim->memory ||
		    e->cpus != lim->cpus || now - e->born_ms >
		    p->o.max_age_s * 1000 || (ep != NULL && !ep_equal(ep,
		    &e->ep)) || proc_gone(e->p))
			continue;
		*out = *e;
		memmove(e, e + 1, (p->nidle[m] - i - 1) * sizeof(*e));
		p->nidle[m]--;
		p->hits++;
		p->inflight++;
		p->last_take_ms = now;
		rc = 0;
		pthread_cond_broadcast(&p->cv);
		break;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void
runner_pool_run_done(struct runner_pool *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->inflight > 0)
		p->inflight--;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void
runner_pool_count_miss(struct runner_pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->misses++;
	pthread_mutex_unlock(&p->mu);
}
