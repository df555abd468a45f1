/* The session table (jobs/sessions.c): owners, states, the limit, the end
 * of a session decided once, the ring of those gone and the expiry, with a
 * clock, a gone check and a free of the test's own (no container). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "jobs/sessions.h"

static int64_t now;
static int freed;
static struct runner_session *gone_rs;	/* the one whose container went */

static int64_t
fake_now(void)
{
	return now;
}

static bool
fake_gone(struct runner_session *rs, char *why, size_t len)
{
	if (rs != gone_rs)
		return false;
	snprintf(why, len, "container is gone");
	return true;
}

static void
fake_free(struct runner_session *rs)
{
	(void)rs;
	freed++;
}

/* Distinct fake sessions: the table never reads through them. */
static char rs_mem[8];
#define RS(i) ((struct runner_session *)(void *)&rs_mem[i])

static struct jobs_sessions *
table(bool remember)
{
	struct jobs_sessions_opts o = { .remember_gone = remember,
	    .now_ms = fake_now, .gone = fake_gone, .free_rs = fake_free };
	struct jobs_sessions *t;

	now = 1000;
	freed = 0;
	gone_rs = NULL;
	t = jobs_sessions_new(&o);
	assert_non_null(t);
	return t;
}

/* A started IDLE entry of owner called name. */
static struct jobs_session *
idle(struct jobs_sessions *t, size_t owner, const char *name, int rs)
{
	struct jobs_session *se;

	assert_int_equal(jobs_sessions_acquire(t, owner, name,
	    JOBS_SESSION_NEW, 0, &se, NULL), 1);
	assert_int_equal(se->state, JOBS_SESSION_STARTING);
	assert_false(jobs_session_started(se, RS(rs), false));
	assert_int_equal(se->state, JOBS_SESSION_IDLE);
	return se;
}

static void
test_owners(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *se;
	char why[64];

	(void)state;
	idle(t, 1, "a", 0);
	/* Another owner's name is not there for this one. */
	assert_int_equal(jobs_sessions_acquire(t, 2, "a", JOBS_SESSION_FIND,
	    0, &se, NULL), -ENOENT);
	assert_null(se);
	assert_int_equal(jobs_sessions_count(t, 1), 1);
	assert_int_equal(jobs_sessions_count(t, 2), 0);
	/* The same name is a new entry for it. */
	assert_int_equal(jobs_sessions_acquire(t, 2, "a",
	    JOBS_SESSION_FIND_OR_NEW, 0, &se, NULL), 1);
	jobs_session_start_failed(se);
	assert_int_equal(jobs_sessions_acquire(t, 1, "a", JOBS_SESSION_NEW, 0,
	    &se, NULL), -EEXIST);
	assert_int_equal(jobs_sessions_acquire(t, 1, "a", JOBS_SESSION_FIND,
	    0, &se, NULL), 0);
	assert_false(jobs_session_put(se, false, "x"));
	assert_true(jobs_session_ask_end(se, "DELETE"));
	jobs_session_free(se);
	/* Gone for its owner only. */
	assert_true(jobs_sessions_gone(t, 1, "a", why, sizeof(why)));
	assert_string_equal(why, "DELETE");
	assert_false(jobs_sessions_gone(t, 2, "a", why, sizeof(why)));
	jobs_sessions_free(t);
	assert_int_equal(freed, 0);
}

static void
test_limit(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *a, *b, *se;
	char name[JOBS_SESSION_NAME_MAX + 2];

	(void)state;
	assert_int_equal(jobs_sessions_acquire(t, 0, "a",
	    JOBS_SESSION_FIND_OR_NEW, 2, &a, NULL), 1);
	assert_int_equal(jobs_sessions_acquire(t, 0, "b",
	    JOBS_SESSION_FIND_OR_NEW, 2, &b, NULL), 1);
	/* Two STARTING entries count: a third is refused, an existing name
	 * is no new one, another owner has its own limit. */
	assert_int_equal(jobs_sessions_acquire(t, 0, "c",
	    JOBS_SESSION_FIND_OR_NEW, 2, &se, NULL), -EAGAIN);
	assert_int_equal(jobs_sessions_acquire(t, 1, "c",
	    JOBS_SESSION_FIND_OR_NEW, 2, &se, NULL), 1);
	jobs_session_start_failed(se);
	/* A failed start frees its place, and is not a session that ended. */
	jobs_session_start_failed(b);
	assert_int_equal(jobs_sessions_acquire(t, 0, "c",
	    JOBS_SESSION_FIND_OR_NEW, 2, &se, NULL), 1);
	jobs_session_start_failed(se);
	/* A name longer than any is refused, never cut. */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(jobs_sessions_acquire(t, 0, name,
	    JOBS_SESSION_FIND_OR_NEW, 0, &se, NULL), -EINVAL);
	assert_int_equal(jobs_sessions_acquire(t, 0, name, JOBS_SESSION_FIND,
	    0, &se, NULL), -ENOENT);
	jobs_session_start_failed(a);
	{
		size_t live;
		uint64_t started, ended;

		jobs_sessions_stats(t, &live, &started, &ended);
		assert_int_equal(live, 0);
		assert_int_equal(started, 0);
		assert_int_equal(ended, 0);
	}
	jobs_sessions_free(t);
}

static void
test_one_call_at_a_time(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *se, *again;
	enum jobs_session_state held = JOBS_SESSION_IDLE;

	(void)state;
	assert_int_equal(jobs_sessions_acquire(t, 0, "s",
	    JOBS_SESSION_FIND_OR_NEW, 0, &se, NULL), 1);
	assert_int_equal(jobs_sessions_acquire(t, 0, "s",
	    JOBS_SESSION_FIND_OR_NEW, 0, &again, &held), -EBUSY);
	assert_int_equal(held, JOBS_SESSION_STARTING);
	/* MCP's start is followed by its first call: BUSY at once. */
	assert_false(jobs_session_started(se, RS(0), true));
	assert_int_equal(jobs_sessions_acquire(t, 0, "s", JOBS_SESSION_FIND, 0,
	    &again, &held), -EBUSY);
	assert_int_equal(held, JOBS_SESSION_BUSY);
	now += 500;
	assert_false(jobs_session_put(se, false, "x"));
	assert_int_equal(se->last_ms, 1500);
	assert_int_equal(se->created_ms, 1000);
	/* A call refused before it ran is no use: the idle clock stays. */
	assert_int_equal(jobs_sessions_acquire(t, 0, "s", JOBS_SESSION_FIND, 0,
	    &again, NULL), 0);
	now += 500;
	assert_false(jobs_session_unhold(se, "x"));
	assert_int_equal(se->state, JOBS_SESSION_IDLE);
	assert_int_equal(se->last_ms, 1500);
	/* A call clears the cancel an earlier one may have left. */
	atomic_store(&se->cancel, 1);
	assert_int_equal(jobs_sessions_acquire(t, 0, "s", JOBS_SESSION_FIND, 0,
	    &again, NULL), 0);
	assert_ptr_equal(again, se);
	assert_int_equal(atomic_load(&se->cancel), 0);
	assert_int_equal(se->state, JOBS_SESSION_BUSY);
	/* The call ended the session, no end asked: remembered with the
	 * holder's why; the name is free, a new start. */
	assert_true(jobs_session_put(se, true, "timeout"));
	assert_string_equal(se->why, "timeout");
	jobs_session_free(se);
	assert_int_equal(jobs_sessions_count(t, 0), 0);
	assert_int_equal(jobs_sessions_acquire(t, 0, "s",
	    JOBS_SESSION_FIND_OR_NEW, 0, &se, NULL), 1);
	assert_false(jobs_session_started(se, RS(1), false));
	/* What is still in the table when it goes is freed with it. */
	jobs_sessions_free(t);
	assert_int_equal(freed, 1);
}

/* An entry in hand is held without a look-up, as acquire with FIND. */
static void
test_hold(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *se, *starting, *again;

	(void)state;
	se = idle(t, 0, "s", 0);
	atomic_store(&se->cancel, 1);
	assert_int_equal(jobs_session_hold(se), 0);
	assert_int_equal(se->state, JOBS_SESSION_BUSY);
	assert_int_equal(atomic_load(&se->cancel), 0);
	/* Held: neither a second hold nor a call by name gets it. */
	assert_int_equal(jobs_session_hold(se), -EBUSY);
	assert_int_equal(jobs_sessions_acquire(t, 0, "s", JOBS_SESSION_FIND, 0,
	    &again, NULL), -EBUSY);
	assert_false(jobs_session_put(se, false, "x"));
	assert_int_equal(se->state, JOBS_SESSION_IDLE);
	assert_int_equal(jobs_session_hold(se), 0);
	assert_false(jobs_session_unhold(se, "x"));
	/* A STARTING one is not held either. */
	assert_int_equal(jobs_sessions_acquire(t, 0, "starting",
	    JOBS_SESSION_NEW, 0, &starting, NULL), 1);
	assert_int_equal(jobs_session_hold(starting), -EBUSY);
	assert_int_equal(starting->state, JOBS_SESSION_STARTING);
	jobs_session_start_failed(starting);
	/* One whose end was asked is out of the table: no longer there. */
	assert_true(jobs_session_ask_end(se, "DELETE"));
	assert_int_equal(jobs_session_hold(se), -ENOENT);
	assert_int_equal(se->state, JOBS_SESSION_IDLE);
	jobs_session_free(se);
	jobs_sessions_free(t);
	assert_int_equal(freed, 0);
}

static void
test_end_asked(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *se, *busy, *starting;
	char why[64];
	size_t live;
	uint64_t started, ended;

	(void)state;
	busy = idle(t, 0, "busy", 0);
	assert_int_equal(jobs_sessions_acquire(t, 0, "busy",
	    JOBS_SESSION_FIND, 0, &se, NULL), 0);
	/* A BUSY one leaves the table at once, its call is cancelled, and
	 * it ends when the call is back, with the why it was asked with, not
	 * the status of the call it cancelled (that call ended it too). */
	assert_false(jobs_session_ask_end(busy, "DELETE"));
	assert_int_equal(atomic_load(&busy->cancel), 1);
	assert_true(busy->end_asked);
	assert_int_equal(jobs_sessions_count(t, 0), 0);
	assert_false(jobs_sessions_gone(t, 0, "busy", why, sizeof(why)));
	assert_true(jobs_session_put(busy, true, "cancelled"));
	assert_true(jobs_sessions_gone(t, 0, "busy", why, sizeof(why)));
	assert_string_equal(why, "DELETE");
	assert_string_equal(busy->why, "DELETE");
	jobs_session_free(busy);
	/* So does one whose call never ran, handed back unheld. */
	busy = idle(t, 0, "held", 2);
	assert_int_equal(jobs_sessions_acquire(t, 0, "held",
	    JOBS_SESSION_FIND, 0, &se, NULL), 0);
	assert_false(jobs_session_ask_end(busy, "DELETE"));
	assert_true(jobs_session_unhold(busy, "error"));
	assert_true(jobs_sessions_gone(t, 0, "held", why, sizeof(why)));
	assert_string_equal(why, "DELETE");
	jobs_session_free(busy);
	/* A STARTING one: out at once, ends as its start is back. */
	assert_int_equal(jobs_sessions_acquire(t, 0, "starting",
	    JOBS_SESSION_NEW, 0, &starting, NULL), 1);
	assert_false(jobs_session_ask_end(starting, "kill-all"));
	assert_int_equal(jobs_sessions_acquire(t, 0, "starting",
	    JOBS_SESSION_FIND, 0, &se, NULL), -ENOENT);
	assert_true(jobs_session_started(starting, RS(1), false));
	assert_ptr_equal(starting->rs, RS(1));
	assert_true(jobs_sessions_gone(t, 0, "starting", why, sizeof(why)));
	assert_string_equal(why, "kill-all");
	jobs_session_free(starting);
	jobs_sessions_stats(t, &live, &started, &ended);
	assert_int_equal(live, 0);
	assert_int_equal(started, 3);
	assert_int_equal(ended, 3);
	/* One that never started is neither counted nor remembered. */
	assert_int_equal(jobs_sessions_acquire(t, 0, "never",
	    JOBS_SESSION_NEW, 0, &se, NULL), 1);
	assert_false(jobs_session_ask_end(se, "kill-all"));
	jobs_session_start_failed(se);
	assert_false(jobs_sessions_gone(t, 0, "never", why, sizeof(why)));
	jobs_sessions_stats(t, &live, &started, &ended);
	assert_int_equal(ended, 3);
	jobs_sessions_free(t);
	assert_int_equal(freed, 0);
}

static void
test_gone_ring(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *se;
	char name[16], why[JOBS_SESSION_WHY_MAX + 8], longwhy[300];

	(void)state;
	memset(longwhy, 'w', sizeof(longwhy) - 1);
	longwhy[sizeof(longwhy) - 1] = '\0';
	for (int i = 0; i <= JOBS_SESSIONS_GONE_MAX; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		se = idle(t, 0, name, 0);
		assert_true(jobs_session_ask_end(se, longwhy));
		jobs_session_free(se);
	}
	/* The oldest went for the newest; a why is cut, not refused. */
	assert_false(jobs_sessions_gone(t, 0, "s0", why, sizeof(why)));
	assert_true(jobs_sessions_gone(t, 0, "s1", why, sizeof(why)));
	assert_int_equal(strlen(why), JOBS_SESSION_WHY_MAX - 1);
	snprintf(name, sizeof(name), "s%d", JOBS_SESSIONS_GONE_MAX);
	assert_true(jobs_sessions_gone(t, 0, name, why, sizeof(why)));
	jobs_sessions_free(t);
	/* A table that does not remember (MCP's) says nothing. */
	t = table(false);
	se = idle(t, 0, "a", 0);
	assert_true(jobs_session_ask_end(se, "x"));
	jobs_session_free(se);
	assert_false(jobs_sessions_gone(t, 0, "a", why, sizeof(why)));
	jobs_sessions_free(t);
}

/* A name that ended twice is remembered by the later end: the ring is
 * searched from its newest entry back. */
static void
test_gone_newest(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *se;
	char why[64];

	(void)state;
	se = idle(t, 0, "a", 0);
	assert_true(jobs_session_ask_end(se, "idle timeout"));
	jobs_session_free(se);
	se = idle(t, 0, "b", 1);
	assert_true(jobs_session_ask_end(se, "DELETE"));
	jobs_session_free(se);
	se = idle(t, 0, "a", 2);
	assert_true(jobs_session_ask_end(se, "max lifetime"));
	jobs_session_free(se);
	assert_true(jobs_sessions_gone(t, 0, "a", why, sizeof(why)));
	assert_string_equal(why, "max lifetime");
	assert_true(jobs_sessions_gone(t, 0, "b", why, sizeof(why)));
	assert_string_equal(why, "DELETE");
	jobs_sessions_free(t);
}

struct seen {
	char names[8][JOBS_SESSION_NAME_MAX + 1];
	char whys[8][128];
	bool now[8];
	int n;
};

static void
on_expired(struct jobs_session *se, const char *why, bool end_now,
    void *arg)
{
	struct seen *s = arg;

	/* Out of the table already, either way. */
	assert_false(se->listed);
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", se->name);
	snprintf(s->whys[s->n], sizeof(s->whys[0]), "%s", why);
	s->now[s->n++] = end_now;
	if (end_now)
		jobs_session_free(se);
}

static void
test_expire(void **state)
{
	struct jobs_sessions *t = table(true);
	struct jobs_session *life, *idler, *busy, *starting, *lost, *fresh;
	struct jobs_session *se;
	struct seen s = { .n = 0 };
	char why[64];

	(void)state;
	life = idle(t, 0, "life", 0);
	life->life_s = 10;
	life->idle_s = 100;
	idler = idle(t, 1, "idle", 1);
	idler->idle_s = 2;
	busy = idle(t, 0, "busy", 2);
	busy->idle_s = 2;
	busy->life_s = 100;
	assert_int_equal(jobs_sessions_acquire(t, 0, "busy",
	    JOBS_SESSION_FIND, 0, &se, NULL), 0);
	assert_int_equal(jobs_sessions_acquire(t, 0, "starting",
	    JOBS_SESSION_NEW, 0, &starting, NULL), 1);
	starting->life_s = 1;
	lost = idle(t, 0, "lost", 3);
	assert_ptr_equal(lost->rs, RS(3));
	fresh = idle(t, 0, "fresh", 4);
	fresh->idle_s = 60;
	gone_rs = RS(3);
	/* Nothing is up yet but the container that went. */
	now += 1999;
	jobs_sessions_expire(t, on_expired, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "lost");
	assert_string_equal(s.whys[0], "container is gone");
	assert_true(jobs_sessions_gone(t, 0, "lost", why, sizeof(why)));
	/* Idle past its time (not the BUSY one, nor one without a limit). */
	now += 1;
	s.n = 0;
	jobs_sessions_expire(t, on_expired, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "idle");
	assert_string_equal(s.whys[0], "idle timeout");
	/* The lifetime, BUSY or not; STARTING ones are left alone. A BUSY
	 * one is its holder's to end (cancelled, out of the table): fn does
	 * not get it in a table many threads change. */
	busy->life_s = 5;
	now += 8000;
	s.n = 0;
	jobs_sessions_expire(t, on_expired, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "life");
	assert_string_equal(s.whys[0], "max lifetime");
	assert_true(s.now[0]);
	assert_int_equal(atomic_load(&busy->cancel), 1);
	assert_false(busy->listed);
	assert_true(jobs_session_put(busy, true, "cancelled"));
	assert_true(jobs_sessions_gone(t, 0, busy->name, why, sizeof(why)));
	assert_string_equal(why, "max lifetime");
	jobs_session_free(busy);
	assert_int_equal(jobs_sessions_count(t, 0), 2);	/* starting, fresh */
	jobs_session_start_failed(starting);
	jobs_sessions_free(t);
	assert_int_equal(freed, 1);			/* fresh's */
}

/* serve's table (one thread changes it): fn gets the BUSY ones too, in
 * the order they came, to withdraw what they wait for. */
static void
test_expire_one_thread(void **state)
{
	struct jobs_sessions_opts o = { .remember_gone = true,
	    .one_thread = true, .now_ms = fake_now, .gone = fake_gone,
	    .free_rs = fake_free };
	struct jobs_sessions *t = table(true);
	struct jobs_session *a, *b, *se;
	struct seen s = { .n = 0 };
	char why[64];

	(void)state;
	jobs_sessions_free(t);
	assert_non_null(t = jobs_sessions_new(&o));
	b = idle(t, 0, "b", 0);
	b->life_s = 1;
	a = idle(t, 0, "a", 1);
	a->life_s = 1;
	assert_int_equal(jobs_sessions_acquire(t, 0, "b", JOBS_SESSION_FIND, 0,
	    &se, NULL), 0);
	now += 1000;
	jobs_sessions_expire(t, on_expired, &s);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "b");
	assert_false(s.now[0]);
	assert_string_equal(s.names[1], "a");
	assert_true(s.now[1]);
	/* The BUSY one is remembered once its holder hands it back. */
	assert_false(jobs_sessions_gone(t, 0, "b", why, sizeof(why)));
	assert_true(jobs_session_unhold(b, "error"));
	assert_true(jobs_sessions_gone(t, 0, "b", why, sizeof(why)));
	assert_string_equal(why, "max lifetime");
	jobs_session_free(b);
	(void)a;
	jobs_sessions_free(t);
	assert_int_equal(freed, 0);
}

static void
list_names(const struct jobs_session *se, int64_t now_ms, void *arg)
{
	char *out = arg;

	assert_int_equal(now_ms, now);
	strcat(out, se->name);
	strcat(out, ",");
}

static int privs_freed;

static void
fake_free_priv(void *priv)
{
	assert_ptr_equal(priv, &privs_freed);
	privs_freed++;
}

static void
test_each(void **state)
{
	struct jobs_sessions_opts o = { .now_ms = fake_now,
	    .gone = fake_gone, .free_rs = fake_free,
	    .free_priv = fake_free_priv };
	struct jobs_sessions *t = table(true);
	struct jobs_session *se;
	char out[64] = "";

	(void)state;
	jobs_sessions_free(t);
	assert_non_null(t = jobs_sessions_new(&o));
	privs_freed = 0;
	assert_null(jobs_sessions_first(t));
	idle(t, 0, "a", 0)->priv = &privs_freed;
	idle(t, 1, "b", 1)->priv = &privs_freed;
	idle(t, 0, "c", 2)->priv = &privs_freed;
	/* Found by owner and name; the first one of all. */
	assert_non_null(se = jobs_sessions_find(t, 0, "c"));
	assert_string_equal(se->name, "c");
	assert_null(jobs_sessions_find(t, 1, "c"));
	assert_string_equal(jobs_sessions_first(t)->name, "a");
	jobs_sessions_each(t, 0, list_names, out);
	assert_string_equal(out, "a,c,");
	out[0] = '\0';
	jobs_sessions_each(t, SIZE_MAX, list_names, out);
	assert_string_equal(out, "a,b,c,");
	jobs_sessions_free(t);
	assert_int_equal(freed, 3);
	assert_int_equal(privs_freed, 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owners),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_one_call_at_a_time),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_end_asked),
		cmocka_unit_test(test_gone_ring),
		cmocka_unit_test(test_gone_newest),
		cmocka_unit_test(test_expire),
		cmocka_unit_test(test_expire_one_thread),
		cmocka_unit_test(test_each),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
