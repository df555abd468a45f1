/*
 * A front end's session table (sessions.h): entries by owner and name, the
 * states a call moves them through, the end of a session decided once (it
 * leaves the table at once, is counted and remembered when it has started),
 * and the ring of the last ones gone. The lock is never held while a
 * session starts, runs a call or is removed; only expire's gone check
 * (a look at one idle session's child and pipe, blocking on nothing) and
 * its ends run under it (serve's tick, MCP's reaper thread).
 */
#include "jobs/sessions.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runner/session.h"

struct jobs_gone {
	char name[JOBS_SESSION_NAME_MAX + 1];	/* "": unused */
	size_t owner;
	char why[JOBS_SESSION_WHY_MAX];
};

TAILQ_HEAD(jobs_session_list, jobs_session);

struct jobs_sessions {
	pthread_mutex_t mu;
	struct jobs_sessions_opts o;
	struct jobs_session_list live;
	size_t n;
	uint64_t started, ended;
	struct jobs_gone gone[JOBS_SESSIONS_GONE_MAX];
	size_t gone_next;		/* the oldest, overwritten next */
};

struct jobs_sessions *
jobs_sessions_new(const struct jobs_sessions_opts *o)
{
	struct jobs_sessions *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		free(t);
		return NULL;
	}
	t->o = *o;
	if (t->o.now_ms == NULL)
		t->o.now_ms = time_mono_ms;
	if (t->o.gone == NULL)
		t->o.gone = runner_session_gone;
	if (t->o.free_rs == NULL)
		t->o.free_rs = runner_session_free;
	TAILQ_INIT(&t->live);
	return t;
}

static void
unlist(struct jobs_session *se)
{
	if (se->listed) {
		TAILQ_REMOVE(&se->t->live, se, link);
		se->t->n--;
		se->listed = false;
	}
}

void
jobs_sessions_free(struct jobs_sessions *t)
{
	struct jobs_session *se;

	if (t == NULL)
		return;
	while ((se = TAILQ_FIRST(&t->live)) != NULL) {
		unlist(se);
		if (se->rs != NULL)
			t->o.free_rs(se->rs);
		if (t->o.free_priv != NULL)
			t->o.free_priv(se->priv);
		free(se);
	}
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static struct jobs_session *
find(struct jobs_sessions *t, size_t owner, const char *name)
{
	struct jobs_session *se;

	/* Another owner's entry is not there for this one. */
	TAILQ_FOREACH(se, &t->live, link)
		if (se->owner == owner && strcmp(se->name, name) == 0)
			return se;
	return NULL;
}

static size_t
count(struct jobs_sessions *t, size_t owner)
{
	const struct jobs_session *se;
	size_t n = 0;

	TAILQ_FOREACH(se, &t->live, link)
		n += se->owner == owner;
	return n;
}

/* An IDLE entry in the table (lock held) is BUSY now, for a call. */
static void
hold(struct jobs_session *se)
{
	se->state = JOBS_SESSION_BUSY;
	atomic_store(&se->cancel, 0);
}

int
jobs_sessions_acquire(struct jobs_sessions *t, size_t owner,
    const char *name, enum jobs_session_find how, size_t max,
    struct jobs_session **out, enum jobs_session_state *held)
{
	struct jobs_session *se;
	int rc;

	*out = NULL;
	if (strlen(name) > JOBS_SESSION_NAME_MAX)
		return how == JOBS_SESSION_FIND ? -ENOENT : -EINVAL;
	pthread_mutex_lock(&t->mu);
	if ((se = find(t, owner, name)) != NULL) {
		if (how == JOBS_SESSION_NEW) {
			rc = -EEXIST;
		} else if (se->state != JOBS_SESSION_IDLE) {
			if (held != NULL)
				*held = se->state;
			rc = -EBUSY;
		} else {
			hold(se);
			*out = se;
			rc = 0;
		}
	} else if (how == JOBS_SESSION_FIND) {
		rc = -ENOENT;
	} else if (max > 0 && count(t, owner) >= max) {
		rc = -EAGAIN;
	} else if ((se = calloc(1, sizeof(*se))) == NULL) {
		rc = -ENOMEM;
	} else {
		util_strlcpy(se->name, name, sizeof(se->name));
		se->owner = owner;
		se->state = JOBS_SESSION_STARTING;
		se->t = t;
		TAILQ_INSERT_TAIL(&t->live, se, link);
		t->n++;
		se->listed = true;
		*out = se;
		rc = 1;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

int
jobs_session_hold(struct jobs_session *se)
{
	struct jobs_sessions *t = se->t;
	int rc = 0;

	pthread_mutex_lock(&t->mu);
	if (!se->listed)
		rc = -ENOENT;
	else if (se->state != JOBS_SESSION_IDLE)
		rc = -EBUSY;
	else
		hold(se);
	pthread_mutex_unlock(&t->mu);
	return rc;
}

/* se ends (lock held): out of the table, with why in se->why, and, when
 * it had started, counted and remembered with why, once. */
static void
leave(struct jobs_session *se, const char *why)
{
	struct jobs_sessions *t = se->t;
	struct jobs_gone *g;

	if (why != se->why)
		util_strlcpy(se->why, why, sizeof(se->why));
	unlist(se);
	if (se->rs == NULL || se->noted)
		return;
	se->noted = true;
	t->ended++;
	if (!t->o.remember_gone)
		return;
	g = &t->gone[t->gone_next];
	util_strlcpy(g->name, se->name, sizeof(g->name));
	g->owner = se->owner;
	util_strlcpy(g->why, se->why, sizeof(g->why));
	t->gone_next = (t->gone_next + 1) % JOBS_SESSIONS_GONE_MAX;
}

bool
jobs_session_started(struct jobs_session *se, struct runner_session *rs,
    bool then_busy)
{
	struct jobs_sessions *t = se->t;
	bool end;

	pthread_mutex_lock(&t->mu);
	se->rs = rs;
	se->created_ms = se->last_ms = t->o.now_ms();
	se->state = then_busy ? JOBS_SESSION_BUSY : JOBS_SESSION_IDLE;
	t->started++;
	if ((end = se->end_asked))
		leave(se, se->why);
	pthread_mutex_unlock(&t->mu);
	return end;
}

void
jobs_session_start_failed(struct jobs_session *se)
{
	struct jobs_sessions *t = se->t;

	pthread_mutex_lock(&t->mu);
	unlist(se);
	pthread_mutex_unlock(&t->mu);
	free(se);
}

static bool
back(struct jobs_session *se, bool ended, bool touch, const char *why)
{
	struct jobs_sessions *t = se->t;
	bool end;

	pthread_mutex_lock(&t->mu);
	se->state = JOBS_SESSION_IDLE;
	if (touch)
		se->last_ms = t->o.now_ms();
	/* An asked end keeps the why it was asked with: the lifetime that
	 * cancelled a call is why its session ended, not the call's status. */
	if ((end = ended || se->end_asked))
		leave(se, se->end_asked ? se->why : why);
	pthread_mutex_unlock(&t->mu);
	return end;
}

bool
jobs_session_put(struct jobs_session *se, bool ended, const char *why)
{
	return back(se, ended, true, why);
}

bool
jobs_session_unhold(struct jobs_session *se, const char *why)
{
	/* A refused call is no use of the session: a client refused again
	 * and again does not keep it from its idle timeout. */
	return back(se, false, false, why);
}

/* Lock held. Leaves se->state as it was: jobs_sessions_expire tells an
 * entry ended now (IDLE) from one its holder ends (BUSY) by it. */
static bool
ask_end(struct jobs_session *se, const char *why)
{
	if (se->state == JOBS_SESSION_IDLE) {
		leave(se, why);
		return true;
	}
	if (why != se->why)
		util_strlcpy(se->why, why, sizeof(se->why));
	unlist(se);
	se->end_asked = true;
	atomic_store(&se->cancel, 1);
	return false;
}

bool
jobs_session_ask_end(struct jobs_session *se, const char *why)
{
	struct jobs_sessions *t = se->t;
	bool now;

	pthread_mutex_lock(&t->mu);
	now = ask_end(se, why);
	pthread_mutex_unlock(&t->mu);
	return now;
}

void
jobs_session_free(struct jobs_session *se)
{
	free(se);
}

struct jobs_session *
jobs_sessions_find(struct jobs_sessions *t, size_t owner, const char *name)
{
	struct jobs_session *se;

	pthread_mutex_lock(&t->mu);
	se = find(t, owner, name);
	pthread_mutex_unlock(&t->mu);
	return se;
}

struct jobs_session *
jobs_sessions_first(struct jobs_sessions *t)
{
	struct jobs_session *se;

	pthread_mutex_lock(&t->mu);
	se = TAILQ_FIRST(&t->live);
	pthread_mutex_unlock(&t->mu);
	return se;
}

bool
jobs_sessions_gone(struct jobs_sessions *t, size_t owner, const char *name,
    char *why, size_t whylen)
{
	bool found = false;

	/* Newest first: back from the slot written last, so a name that
	 * ended more than once is told its latest why. */
	pthread_mutex_lock(&t->mu);
	for (size_t k = 1; k <= JOBS_SESSIONS_GONE_MAX && !found; k++) {
		const struct jobs_gone *g = &t->gone[(t->gone_next +
		    JOBS_SESSIONS_GONE_MAX - k) % JOBS_SESSIONS_GONE_MAX];

		if (g->name[0] != '\0' && g->owner == owner &&
		    strcmp(g->name, name) == 0) {
			util_strlcpy(why, g->why, whylen);
			found = true;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return found;
}

size_t
jobs_sessions_count(struct jobs_sessions *t, size_t owner)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = count(t, owner);
	pthread_mutex_unlock(&t->mu);
	return n;
}

void
jobs_sessions_stats(struct jobs_sessions *t, size_t *live, uint64_t *started,
    uint64_t *ended)
{
	pthread_mutex_lock(&t->mu);
	*live = t->n;
	*started = t->started;
	*ended = t->ended;
	pthread_mutex_unlock(&t->mu);
}

void
jobs_sessions_each(struct jobs_sessions *t, size_t owner,
    void (*fn)(const struct jobs_session *se, int64_t now_ms, void *arg),
    void *arg)
{
	const struct jobs_session *se;
	int64_t now = t->o.now_ms();

	pthread_mutex_lock(&t->mu);
	TAILQ_FOREACH(se, &t->live, link)
		if (owner == SIZE_MAX || se->owner == owner)
			fn(se, now, arg);
	pthread_mutex_unlock(&t->mu);
}

void
jobs_sessions_expire(struct jobs_sessions *t,
    void (*fn)(struct jobs_session *se, const char *why, bool now,
    void *arg), void *arg)
{
	struct jobs_session_list victims = TAILQ_HEAD_INITIALIZER(victims);
	struct jobs_session *se, *next;
	int64_t now = t->o.now_ms();

	/* Gathered under the lock, through a link of their own (nothing to
	 * allocate, so an expiry never fails), and asked to end there;
	 * handed to fn without it. */
	pthread_mutex_lock(&t->mu);
	for (se = TAILQ_FIRST(&t->live); se != NULL; se = next) {
		const char *why = NULL;

		next = TAILQ_NEXT(se, link);

		if (se->state == JOBS_SESSION_STARTING)
			continue;
		if (se->life_s > 0 && now - se->created_ms >= se->life_s * 1000)
			why = "max lifetime";
		else if (se->state == JOBS_SESSION_BUSY)
			continue;
		else if (se->idle_s > 0 && now - se->last_ms >=
		    se->idle_s * 1000)
			why = "idle timeout";
		else if (!t->o.gone(se->rs, se->why, sizeof(se->why)))
			continue;
		if (why != NULL)
			util_strlcpy(se->why, why, sizeof(se->why));
		if (ask_end(se, se->why) || t->o.one_thread)
			TAILQ_INSERT_TAIL(&victims, se, expired);
	}
	pthread_mutex_unlock(&t->mu);
	/* Out of the table: no one else finds them, and a BUSY one's holder
	 * is this thread. ask_end left each one's state as it was, so an
	 * IDLE one is one it ended now (a BUSY one stays BUSY until this
	 * thread hands it back). fn may free the one it gets: the next is
	 * read first. */
	for (se = TAILQ_FIRST(&victims); se != NULL; se = next) {
		next = TAILQ_NEXT(se, expired);
		fn(se, se->why, se->state == JOBS_SESSION_IDLE, arg);
	}
}
