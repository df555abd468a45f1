/*
 * The warm pool's side that runs and the service call (pool.h): take an
 * idle container, count, read stats, wait until full. Only list moves
 * under the lock: nothing here waits on a start.
 */
#include "runner/pool_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "runner/container.h"
#include "runner/slot.h"

bool
runner_pool_ep_equal(const struct netsetup_endpoint *a,
    const struct netsetup_endpoint *b)
{
	return strcmp(a->gateway, b->gateway) == 0 && a->port == b->port;
}

void
runner_pool_cond_wait(struct runner_pool *p, int64_t ms)
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

static bool
pool_full(const struct runner_pool *p)
{
	for (int m = 0; m < 2; m++)
		if (p->o.modes[m] && !p->dormant[m] &&
		    (int64_t)p->nidle[m] < p->o.size)
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
		runner_pool_cond_wait(p, left < 200 ? left : 200);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

unsigned
runner_pool_lang(const struct runner_pool *p)
{
	/* Set at creation, never changed: no lock. */
	return p->o.lang != 0 ? p->o.lang : CONFIG_LANG_PYTHON;
}

void
runner_pool_stats(struct runner_pool *p, struct runner_pool_stats *s)
{
	pthread_mutex_lock(&p->mu);
	s->idle[0] = (int64_t)p->nidle[0];
	s->idle[1] = (int64_t)p->nidle[1];
	s->dormant[0] = p->dormant[0];
	s->dormant[1] = p->dormant[1];
	s->shrinks = p->shrinks;
	s->starting = p->starting;
	s->max_starts = p->max_starts;
	s->cold = p->cold;
	s->hits = p->hits;
	s->misses = p->misses;
	s->started = p->started;
	s->failed = p->failed;
	s->retired = p->retired;
	s->aborted = p->aborted;
	s->rm_failed = p->rm_failed;
	s->removing = p->removing;
	s->remove_ms_last = p->remove_ms_last;
	util_strlcpy(s->last_error, p->last_error, sizeof(s->last_error));
	pthread_mutex_unlock(&p->mu);
}

int
runner_pool_egress(struct runner_pool *p, struct netsetup_endpoint *ep)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&p->mu);
	if (p->o.modes[RUNNER_NET_PROXY] && p->net_ok_ms > 0 &&
	    time_mono_ms() - p->net_ok_ms <= POOL_NET_FRESH_MS) {
		*ep = p->net_ok_ep;
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
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
	/* A run asks for the mode: its idle clock restarts, and a mode
	 * shrunk for want of runs refills (this run starts cold). */
	p->asked_ms[m] = now;
	if (p->dormant[m]) {
		p->dormant[m] = false;
		pthread_cond_broadcast(&p->cv);
	}
	for (size_t i = 0; !p->paused && !p->stop && i < p->nidle[m]; i++) {
		struct pool_entry *e = &p->idle[m][i];

		if (strcmp(e->image, image) != 0 || e->memory != lim->memory ||
		    e->cpus != lim->cpus || now - e->born_ms >
		    p->o.max_age_s * 1000 || (ep != NULL && !runner_pool_ep_equal(ep,
		    &e->ep)) || proc_gone(e->p) || proc_gone(e->x))
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
	p->cold++;
	if (p->o.gate != NULL)
		atomic_fetch_add(&p->o.gate->cold, 1);
	pthread_mutex_unlock(&p->mu);
}

void
runner_pool_cold_done(struct runner_pool *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->cold > 0) {
		p->cold--;
		if (p->o.gate != NULL)
			atomic_fetch_sub(&p->o.gate->cold, 1);
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

struct removal {
	struct runner_pool *p;
	char name[RUNNER_NAME_MAX];
	struct proc *x, *holder;
	struct runner_slot slot;
};

static void *
removal_main(void *arg)
{
	struct removal *m = arg;
	struct runner_pool *p = m->p;
	int64_t t0 = time_mono_ms();
	int rc;

	/* The exec's CLI first: it exits with the removal anyway. */
	rc = container_abort_patient(p->c, m->name, m->x);
	proc_free(m->x);
	proc_free(m->holder);
	runner_slot_release(&m->slot);
	free(m);
	/* The run is done (runner_pool_run_done) and its removal too, in one
	 * step: once removing is 0, runner_pool_stop may free p, so nothing
	 * here touches p after the unlock. */
	pthread_mutex_lock(&p->mu);
	if (rc < 0 && rc != -ENOENT)
		p->rm_failed++;
	p->remove_ms_last = time_mono_ms() - t0;
	if (p->inflight > 0)
		p->inflight--;
	p->removing--;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int
runner_pool_remove_later(struct runner_pool *p, const char *name,
    struct proc *x, struct proc *holder, struct runner_slot *slot)
{
	struct removal *m = calloc(1, sizeof(*m));
	pthread_attr_t at;
	pthread_t t;
	int rc;

	if (m == NULL)
		return -ENOMEM;
	m->p = p;
	util_strlcpy(m->name, name, sizeof(m->name));
	m->x = x;
	m->holder = holder;
	m->slot = *slot;
	pthread_mutex_lock(&p->mu);
	p->removing++;
	pthread_mutex_unlock(&p->mu);
	if ((rc = pthread_attr_init(&at)) == 0) {
		(void)pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&t, &at, removal_main, m);
		pthread_attr_destroy(&at);
	}
	if (rc != 0) {
		pthread_mutex_lock(&p->mu);
		p->removing--;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		free(m);
		return -rc;
	}
	*slot = (struct runner_slot){ .fd = -1, .index = -1 };
	return 0;
}

void
runner_pool_wait_removals(struct runner_pool *p, int64_t timeout_ms)
{
	int64_t end = time_mono_ms() + timeout_ms, left;

	pthread_mutex_lock(&p->mu);
	while (p->removing > 0 && (left = end - time_mono_ms()) > 0)
		runner_pool_cond_wait(p, left < 200 ? left : 200);
	pthread_mutex_unlock(&p->mu);
}
