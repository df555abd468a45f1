/*
 * Private to serve/sessions*.c: a live session, and what sessions.c (the
 * table, the tick, admission, the replies) offers the routes
 * (sessions_route.c), loop thread only; and a session's work items, which
 * sessions_work.c carries out on threads of their own.
 */
#ifndef CORDON_SERVE_SESSIONS_INT_H
#define CORDON_SERVE_SESSIONS_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>

#include "jobs/sessions.h"
#include "runner/runner.h"
#include "runner/stage.h"
#include "serve/internal.h"
#include "serve/request.h"
#include "serve/sessions.h"

struct serve_conn;

/* A live session: its entry in the table (jobs/sessions.h: the id is its
 * name, the tenant's index its owner; its state, container, clocks and
 * cancel), and what serve keeps of its own. Freed with session_free once
 * it is out of the table and nothing of it is in flight. */
struct serve_session {
	struct jobs_session *e;		/* e->priv is this */
	struct serve_sessions *ss;
	enum runner_net net;
	char policy[CONFIG_POLICY_MAX + 1];	/* "": the default one */
	char profile[CONFIG_PROFILE_MAX + 1];	/* "": the current one */
	struct session_work *queued;	/* its start or call, waiting for
					 * a slot of its tenant */
};

#define SE_ID(se) ((se)->e->name)
#define SE_TENANT(se) ((se)->e->owner)
#define SE_RS(se) ((se)->e->rs)

/* tenant's session id, or NULL (another tenant's is not there). */
struct serve_session *serve_sessions_find(struct serve_sessions *ss,
    const char *id, size_t tenant);
/* Ends se: now when nothing of it runs or waits, else when its thread is
 * back (a running call is cancelled); a start or call still waiting for a
 * slot is answered 503 (why). */
void serve_sessions_ask_end(struct serve_sessions *ss,
    struct serve_session *se, const char *why);
/* A checked create of tenant for c: the session is listed (starting) and
 * its start admitted like a run (queued, or 429). o's fields are copied;
 * files (staged at /in) are taken. c is answered in the end. */
void serve_sessions_create(struct serve_sessions *ss, struct serve_conn *c,
    size_t tenant, const struct serve_session_opts *o,
    struct stage_file *files, size_t nfiles);
/* A checked call in se (idle) for c: admitted like a run; *call is taken
 * (zeroed). c is answered in the end. */
void serve_sessions_call(struct serve_sessions *ss, struct serve_conn *c,
    struct serve_session *se, struct jobs_req *call);
/* se (idle, in hand) is busy now, with a call or a policy change
 * (jobs_session_hold): 0, or -EBUSY if it is not idle. */
int serve_sessions_hold(struct serve_session *se);
/* se, busy with something other than a call (a policy change), is idle
 * again: it ends now if that was asked meanwhile (why). */
void serve_sessions_release(struct serve_sessions *ss,
    struct serve_session *se, const char *why);

/* What a session's thread does (sessions_work.c). */
enum work_kind { WORK_START, WORK_CALL, WORK_END };

/* One thread's job; it owns everything here until it is back. */
struct session_work {
	enum work_kind kind;
	struct serve_sessions *ss;
	struct serve_session *se;
	size_t tenant;			/* se's (se may go before w) */
	struct serve_conn *c;		/* NULL for WORK_END */
	struct jobs_wait wait;		/* admission of a start or a call */
	bool admitted;			/* holds a slot of its tenant */
	struct event *done_ev;
	struct jobs_req call;		/* WORK_CALL */
	int rc;
	char err[512];
	struct runner_result res;
	char *line;			/* WORK_CALL: the reply, built on the
					 * thread, its last '}' to be
					 * replaced (room for session_ended) */
	size_t line_len;
	bool ended;			/* runner_session_ended after it */
	struct runner_session *rs;	/* WORK_START's, WORK_END's */
	char label[RUNNER_SESSION_MAX + 1];
	int64_t t0_ms;
	struct stage_file *files;	/* WORK_START: copied in at /in */
	size_t nfiles;
};

#define LINE_ROOM 32	/* ,"session_ended":false}\n */

/* sessions_work.c: a new item of kind for se (c: the client to answer,
 * NULL for WORK_END); NULL on ENOMEM. */
struct session_work *serve_sessions_work_new(struct serve_sessions *ss,
    struct serve_session *se, enum work_kind kind, struct serve_conn *c);
/* Starts w on a thread; done runs on the loop when it is back. */
int serve_sessions_work_spawn(struct session_work *w,
    void (*done)(evutil_socket_t, short, void *));
void serve_sessions_work_free(struct session_work *w);

#endif
