/*
 * A front end's admission table (admission.h): the tenants' limits and
 * counters, the wait list and the grants, under one mutex. Callbacks
 * (the hook, start, refuse) always run after the lock is dropped, so they
 * may call back into the table; a waiter is taken off its list under the
 * lock before its callback runs, so each runs once.
 */
#include "jobs/admission.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

TAILQ_HEAD(jobs_wait_list, jobs_wait);

struct adm_tenant {
	char name[64];
	char token[128];		/* "" for the local tenant */
	int64_t max_concurrent, max_queue;
	int64_t active;			/* slots held, granted included */
	int64_t queued;
	int64_t granted;
};

struct jobs_admission {
	pthread_mutex_t mu;
	struct jobs_admission_hooks hooks;
	struct adm_tenant t[CONFIG_MAX_TENANTS + 1];
	size_t n;
	int64_t global_limit;
	int64_t active, queued, granted;	/* over all tenants */
	struct jobs_wait_list waiting;		/* QUEUED, arrival order */
	struct jobs_wait_list grants;		/* GRANTED, grant order */
};

static void
tenants_serve(struct jobs_admission *a, const struct config *c)
{
	const struct config_serve *s = &c->serve;

	a->global_limit = s->global_limit;
	a->t[0].max_concurrent = s->global_limit;
	a->t[0].max_queue = s->queue_max;
	for (size_t i = 0; i < s->ntenants; i++) {
		struct adm_tenant *t = &a->t[i + 1];
		const struct config_tenant *ct = &s->tenants[i];

		util_strlcpy(t->name, ct->name, sizeof(t->name));
		util_strlcpy(t->token, ct->token, sizeof(t->token));
		t->max_concurrent = ct->max_concurrent;
		t->max_queue = ct->max_queue >= 0 ? ct->max_queue :
		    s->queue_max;
	}
	a->n = s->ntenants + 1;
}

struct jobs_admission *
jobs_admission_new(const struct config *c, enum jobs_front f,
    const struct jobs_admission_hooks *h)
{
	struct jobs_admission *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	if (pthread_mutex_init(&a->mu, NULL) != 0) {
		free(a);
		return NULL;
	}
	if (h != NULL)
		a->hooks = *h;
	TAILQ_INIT(&a->waiting);
	TAILQ_INIT(&a->grants);
	strcpy(a->t[0].name, "local");
	if (f == JOBS_FRONT_SERVE) {
		tenants_serve(a, c);
	} else {
		a->global_limit = JOBS_ADMIT_MCP_RUNNING;
		a->t[0].max_concurrent = JOBS_ADMIT_MCP_RUNNING;
		a->t[0].max_queue = JOBS_ADMIT_MCP_PENDING;
		a->n = 1;
	}
	return a;
}

void
jobs_admission_free(struct jobs_admission *a)
{
	if (a == NULL)
		return;
	pthread_mutex_destroy(&a->mu);
	free(a);
}

size_t
jobs_admission_tenants(const struct jobs_admission *a)
{
	return a->n;
}

const char *
jobs_admission_name(const struct jobs_admission *a, size_t t)
{
	return t < a->n ? a->t[t].name : NULL;
}

static bool
token_equal(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	unsigned char d = alen != blen;

	for (size_t i = 0; i < alen; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i < blen ? i : 0];
	return d == 0 && blen > 0;
}

int
jobs_admission_by_token(const struct jobs_admission *a, const char *tok)
{
	int found = -EACCES;
	size_t len = strlen(tok);

	if (len == 0 || len >= sizeof(a->t[0].token))
		return -EACCES;
	for (size_t i = 1; i < a->n; i++)
		if (token_equal(tok, len, a->t[i].token))
			found = (int)i;
	return found;
}

/* Locked: whether tenant t has a free slot, its own and a global one. */
static bool
has_room(const struct jobs_admission *a, size_t t)
{
	return a->active < a->global_limit &&
	    a->t[t].active < a->t[t].max_concurrent;
}

static void
count_active(struct jobs_admission *a, size_t t, int64_t d)
{
	a->t[t].active += d;
	a->active += d;
}

static void
count_queued(struct jobs_admission *a, size_t t, int64_t d)
{
	a->t[t].queued += d;
	a->queued += d;
}

static void
count_granted(struct jobs_admission *a, size_t t, int64_t d)
{
	a->t[t].granted += d;
	a->granted += d;
}

/* Locked: grants free slots to the oldest waiters whose tenant has room.
 * Returns how many were granted. */
static size_t
grant(struct jobs_admission *a)
{
	struct jobs_wait *w, *next;
	size_t n = 0;

	for (w = TAILQ_FIRST(&a->waiting); w != NULL &&
	    a->active < a->global_limit; w = next) {
		next = TAILQ_NEXT(w, link);
		if (!has_room(a, w->tenant))
			continue;
		TAILQ_REMOVE(&a->waiting, w, link);
		count_queued(a, w->tenant, -1);
		count_active(a, w->tenant, 1);
		count_granted(a, w->tenant, 1);
		w->state = JOBS_WAIT_GRANTED;
		TAILQ_INSERT_TAIL(&a->grants, w, link);
		n++;
	}
	return n;
}

/* Unlocks, then tells the owner of any grant. */
static void
unlock_notify(struct jobs_admission *a, size_t granted)
{
	pthread_mutex_unlock(&a->mu);
	if (granted > 0 && a->hooks.granted != NULL)
		a->hooks.granted(a->hooks.arg);
}

int
jobs_admit(struct jobs_admission *a, struct jobs_wait *w)
{
	struct adm_tenant *t;
	int rc = -EAGAIN;

	pthread_mutex_lock(&a->mu);
	/* Linked in a list of the table's: admitting it again would
	 * corrupt that list. */
	if (w->state == JOBS_WAIT_QUEUED || w->state == JOBS_WAIT_GRANTED) {
		pthread_mutex_unlock(&a->mu);
		return -EBUSY;
	}
	w->state = JOBS_WAIT_NONE;
	if (w->tenant >= a->n) {
		pthread_mutex_unlock(&a->mu);
		return -EINVAL;
	}
	t = &a->t[w->tenant];
	if (t->queued == 0 && has_room(a, w->tenant)) {
		count_active(a, w->tenant, 1);
		w->state = JOBS_WAIT_ACTIVE;
		rc = 1;
	} else if (t->queued < t->max_queue) {
		count_queued(a, w->tenant, 1);
		w->state = JOBS_WAIT_QUEUED;
		TAILQ_INSERT_TAIL(&a->waiting, w, link);
		rc = 0;
	}
	pthread_mutex_unlock(&a->mu);
	return rc;
}

bool
jobs_admit_would_reject(struct jobs_admission *a, size_t t)
{
	bool r;

	if (t >= a->n)
		return true;
	pthread_mutex_lock(&a->mu);
	r = !(a->t[t].queued == 0 && has_room(a, t)) &&
	    a->t[t].queued >= a->t[t].max_queue;
	pthread_mutex_unlock(&a->mu);
	return r;
}

bool
jobs_admit_withdraw(struct jobs_admission *a, struct jobs_wait *w)
{
	size_t granted = 0;
	bool out = true;

	pthread_mutex_lock(&a->mu);
	switch (w->state) {
	case JOBS_WAIT_QUEUED:
		TAILQ_REMOVE(&a->waiting, w, link);
		count_queued(a, w->tenant, -1);
		break;
	case JOBS_WAIT_GRANTED:
		TAILQ_REMOVE(&a->grants, w, link);
		count_granted(a, w->tenant, -1);
		count_active(a, w->tenant, -1);
		granted = grant(a);
		break;
	case JOBS_WAIT_NONE:
	case JOBS_WAIT_ACTIVE:
		out = false;
		break;
	}
	if (out)
		w->state = JOBS_WAIT_NONE;
	unlock_notify(a, granted);
	return out;
}

bool
jobs_admit_release(struct jobs_admission *a, size_t t)
{
	pthread_mutex_lock(&a->mu);
	if (t >= a->n || a->t[t].active - a->t[t].granted <= 0) {
		/* More releases than slots held: a caller's bug; the
		 * counters stay whole. */
		pthread_mutex_unlock(&a->mu);
		return false;
	}
	count_active(a, t, -1);
	unlock_notify(a, grant(a));
	return true;
}

void
jobs_admit_drain(struct jobs_admission *a)
{
	struct jobs_wait *w;

	for (;;) {
		pthread_mutex_lock(&a->mu);
		if ((w = TAILQ_FIRST(&a->grants)) == NULL) {
			pthread_mutex_unlock(&a->mu);
			return;
		}
		TAILQ_REMOVE(&a->grants, w, link);
		count_granted(a, w->tenant, -1);
		w->state = JOBS_WAIT_ACTIVE;
		pthread_mutex_unlock(&a->mu);
		w->start(w);
	}
}

size_t
jobs_admit_flush(struct jobs_admission *a, const char *why)
{
	struct jobs_wait *w;
	size_t n = 0;

	for (;;) {
		pthread_mutex_lock(&a->mu);
		if ((w = TAILQ_FIRST(&a->waiting)) == NULL) {
			pthread_mutex_unlock(&a->mu);
			return n;
		}
		TAILQ_REMOVE(&a->waiting, w, link);
		count_queued(a, w->tenant, -1);
		w->state = JOBS_WAIT_NONE;
		pthread_mutex_unlock(&a->mu);
		w->refuse(w, why);
		n++;
	}
}

void
jobs_admit_stats(struct jobs_admission *a, size_t t,
    struct jobs_admit_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&a->mu);
	if (t == SIZE_MAX) {
		st->active = a->active;
		st->queued = a->queued;
		st->granted = a->granted;
		st->max_concurrent = a->global_limit;
		st->max_queue = a->t[0].max_queue;
	} else if (t < a->n) {
		st->active = a->t[t].active;
		st->queued = a->t[t].queued;
		st->granted = a->t[t].granted;
		st->max_concurrent = a->t[t].max_concurrent;
		st->max_queue = a->t[t].max_queue;
	}
	pthread_mutex_unlock(&a->mu);
}
