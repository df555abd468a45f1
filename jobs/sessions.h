/*
 * The session table of a front end (issue 35: the job layer owns it; the
 * sessions themselves are runner/session.h's). An entry is a session by
 * owner (serve's tenant index; MCP's one connection is owner 0) and name:
 * another owner's name is not there for this one. An entry is STARTING
 * (its container starts, rs NULL), IDLE or BUSY (one call, or a policy
 * change, at a time). It leaves the table as soon as it starts ending, and
 * is remembered with why (the last JOBS_SESSIONS_GONE_MAX of all owners,
 * each found by its own owner only) when the table keeps them. The table decides and counts; it never calls the
 * runner except through its opts (the gone check, a last free), logs
 * nothing and words nothing a client reads: the transports keep their
 * texts. One lock; calls may come from any thread.
 */
#ifndef CORDON_JOBS_SESSIONS_H
#define CORDON_JOBS_SESSIONS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#define JOBS_SESSION_NAME_MAX 64	/* MCP's names; serve's ids are 20 */
#define JOBS_SESSIONS_GONE_MAX 64
#define JOBS_SESSION_WHY_MAX 160	/* a remembered why, cut there */

struct runner_session;

enum jobs_session_state {
	JOBS_SESSION_STARTING,
	JOBS_SESSION_IDLE,
	JOBS_SESSION_BUSY,
};

struct jobs_sessions;

struct jobs_session {
	char name[JOBS_SESSION_NAME_MAX + 1];
	size_t owner;
	/* Set by the one who made the entry, before jobs_session_started;
	 * 0: no limit. */
	int64_t idle_s, life_s;
	void *priv;			/* the front end's */
	atomic_int cancel;		/* set when an end is asked while
					 * it starts or runs a call */
	/* The table's, changed under its lock. Read them from the thread
	 * that holds the entry, in jobs_sessions_each's fn, or, in a table
	 * that only one thread changes (serve's loop), from that thread; rs
	 * is the holder's once the entry is out of the table. */
	enum jobs_session_state state;
	struct runner_session *rs;	/* NULL while it starts */
	int64_t created_ms, last_ms;	/* the table's clock */
	bool end_asked;			/* end it once it is back */
	bool listed, noted;
	struct jobs_sessions *t;
	TAILQ_ENTRY(jobs_session) link;
	TAILQ_ENTRY(jobs_session) expired;	/* jobs_sessions_expire's */
	/* The why of an asked end (jobs_session_ask_end's, or
	 * jobs_sessions_expire's), and, once the entry has ended, the why it
	 * ended with: what it is remembered with. */
	char why[JOBS_SESSION_WHY_MAX];
};

struct jobs_sessions_opts {
	bool remember_gone;		/* keep why the last ones ended */
	bool one_thread;		/* only one thread changes it (serve's
					 * loop): see jobs_sessions_expire */
	/* NULL: the runner's own (time_mono_ms, runner_session_gone,
	 * runner_session_free); the tests give theirs. */
	int64_t (*now_ms)(void);
	bool (*gone)(struct runner_session *rs, char *why, size_t len);
	void (*free_rs)(struct runner_session *rs);
	/* May be NULL: called for each entry's priv that jobs_sessions_free
	 * frees (after its rs). */
	void (*free_priv)(void *priv);
};

/* NULL on ENOMEM. */
struct jobs_sessions *jobs_sessions_new(const struct jobs_sessions_opts *o);
/* Frees the table and every entry still in it, whose sessions are freed
 * (opts free_rs: their containers removed, blocking). Nothing may be in
 * flight; entries out of the table are their holders'. Accepts NULL. */
void jobs_sessions_free(struct jobs_sessions *t);

enum jobs_session_find {
	JOBS_SESSION_FIND,		/* an entry that is there */
	JOBS_SESSION_NEW,		/* a new one (-EEXIST if there) */
	JOBS_SESSION_FIND_OR_NEW,
};

/* owner's entry name, for a call: an IDLE one becomes BUSY (its cancel
 * cleared) and 0; a new one (a STARTING entry, owner's max not passed;
 * max 0: no limit) and 1. *se is then the caller's to hand back (started
 * or start_failed, put). Else -ENOENT (no such entry), -EEXIST, -EBUSY
 * (*held: STARTING or BUSY), -EAGAIN (owner has max entries already) or
 * -ENOMEM; held may be NULL. */
int jobs_sessions_acquire(struct jobs_sessions *t, size_t owner,
    const char *name, enum jobs_session_find how, size_t max,
    struct jobs_session **se, enum jobs_session_state *held);

/* An entry in hand (found, say, by jobs_sessions_find), for a call or a
 * policy change: as acquire with JOBS_SESSION_FIND, without looking it up
 * again. IDLE: BUSY (its cancel cleared) and 0, the caller's to hand back
 * (put or unhold); STARTING or BUSY: -EBUSY; out of the table (its end
 * asked): -ENOENT. */
int jobs_session_hold(struct jobs_session *se);

/* A STARTING entry's session has started (rs, now the entry's): IDLE, or
 * BUSY with then_busy (its first call follows). True when its end was
 * asked meanwhile: it is out of the table already, remembered with the
 * why it was asked with (se->why); the caller ends rs and frees the
 * entry. */
bool jobs_session_started(struct jobs_session *se, struct runner_session *rs,
    bool then_busy);
/* A STARTING entry's start failed: it leaves the table and is freed. */
void jobs_session_start_failed(struct jobs_session *se);

/* A BUSY entry is back (its call or policy change done): IDLE, its idle
 * clock restarted. True when it must end (ended: its session ended in the
 * call; or an end was asked meanwhile): it is out of the table then, and
 * the caller ends rs and frees the entry. It is remembered with why, or,
 * when its end was asked, with the why it was asked with (the lifetime
 * that cancelled the call, not the call's status); se->why holds the one
 * kept. */
bool jobs_session_put(struct jobs_session *se, bool ended, const char *why);

/* A BUSY entry whose call never ran (refused, or withdrawn while it
 * waited) is IDLE again, its idle clock left as it was. The same as put
 * otherwise (true: an end was asked meanwhile, and it is out). */
bool jobs_session_unhold(struct jobs_session *se, const char *why);

/* Asks se (in the table) to end: an IDLE one leaves the table, is
 * remembered with why and true is returned (the caller ends it now); a
 * STARTING or BUSY one leaves the table too, but is marked (end_asked,
 * cancel set) and false is returned: it ends when its holder hands it back
 * (started or put return true). */
bool jobs_session_ask_end(struct jobs_session *se, const char *why);

/* Frees an entry out of the table (its rs is the caller's to end). */
void jobs_session_free(struct jobs_session *se);

/* For a table whose entries only one thread ends (serve's loop), from
 * that thread: owner's entry name, or NULL; the first entry of any owner,
 * or NULL. Each stays valid until that thread ends it. */
struct jobs_session *jobs_sessions_find(struct jobs_sessions *t,
    size_t owner, const char *name);
struct jobs_session *jobs_sessions_first(struct jobs_sessions *t);

/* Why owner's session name ended lately (cut to whylen), if it is
 * remembered: the latest end of that name when it ended more than once. */
bool jobs_sessions_gone(struct jobs_sessions *t, size_t owner,
    const char *name, char *why, size_t whylen);
/* Entries of owner in the table (STARTING ones count). */
size_t jobs_sessions_count(struct jobs_sessions *t, size_t owner);
/* Entries in the table, sessions started and sessions ended (those that
 * had started) since it was made. */
void jobs_sessions_stats(struct jobs_sessions *t, size_t *live,
    uint64_t *started, uint64_t *ended);
/* fn for each entry of owner (SIZE_MAX: every owner's) in the table, in
 * the order they came, under the lock: fn may read it, and may not call
 * the table. */
void jobs_sessions_each(struct jobs_sessions *t, size_t owner,
    void (*fn)(const struct jobs_session *se, int64_t now_ms, void *arg),
    void *arg);
/* Ends the entries whose time is up, in the order they came: past life_s
 * (even a BUSY one): "max lifetime"; IDLE past idle_s: "idle timeout";
 * IDLE whose container is gone (opts gone, a check that blocks on
 * nothing): its why. STARTING ones are left. Each is asked to end under
 * the lock, as jobs_session_ask_end does, so no call can take it
 * meanwhile. Then, without the lock, fn gets each IDLE one (now true):
 * out of the table, the caller's to end. A BUSY one is ended by its
 * holder when it hands it back; fn gets it too (now false: it may
 * withdraw what the entry waits for) only in a one_thread table, where
 * that holder cannot free it meanwhile. why is kept in se: it goes with
 * se. Any thread may call it. */
void jobs_sessions_expire(struct jobs_sessions *t,
    void (*fn)(struct jobs_session *se, const char *why, bool now,
    void *arg), void *arg);

#endif
