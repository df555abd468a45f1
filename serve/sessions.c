/*
 * The service's sessions (sessions.h): the table of live sessions (loop
 * thread only), the idle/lifetime tick, the admission of starts and calls
 * (queue.c: each holds one of its tenant's slots, like a run: issue 39),
 * and what the loop does when a work item comes back from its thread
 * (sessions_work.c: start a session's container, run one call in it and
 * build its reply there, or end it). The table is the job layer's
 * (jobs/sessions.h), which decides when a session ends: it leaves the
 * table as soon as it starts ending (and is remembered, with why); what
 * is still in flight is counted in ss->threads. The routes are
 * sessions_route.c's.
 */
#include "serve/sessions_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/util.h"
#include "runner/session.h"
#include "serve/conn.h"
#include "serve/internal.h"
#include "serve/listen.h"


int64_t
serve_sessions_count(const struct serve_sessions *ss, size_t tenant)
{
	return (int64_t)jobs_sessions_count(ss->table, tenant);
}

struct serve_session *
serve_sessions_find(struct serve_sessions *ss, const char *id, size_t tenant)
{
	/* Another tenant's session is not there for this one. */
	struct jobs_session *e = jobs_sessions_find(ss->table, tenant, id);

	return e != NULL ? e->priv : NULL;
}

/* se is out of the table (or never got in) and nothing of it runs. */
static void
session_free(struct serve_session *se)
{
	if (se->e != NULL)
		jobs_session_free(se->e);
	free(se);
}

static void work_done(evutil_socket_t fd, short what, void *arg);

/* Written or dropped: conn.c reports both, so a stop never waits for a
 * reply to a client that is gone (issue 39). */
static void
reply_sent(void *arg, bool written)
{
	struct serve_sessions *ss = arg;

	(void)written;
	ss->sending--;
	ss->on_idle(ss->arg);
}

/* Keeps the loop (a stop) until the reply to c is written or dropped. */
static void
hold_reply(struct serve_sessions *ss, struct serve_conn *c)
{
	serve_conn_on_gone(c, NULL, NULL);
	serve_conn_on_done(c, reply_sent, ss);
	ss->sending++;
}

/* Ends se, which the table has let go (counted and remembered there with
 * the why it keeps in the entry; nothing of its own in flight or
 * waiting): removes its container on a thread and frees it. */
static void
session_end(struct serve_sessions *ss, struct serve_session *se)
{
	struct session_work *w;

	log_info("session %s (tenant %s): ended (%s)", SE_ID(se),
	    ss->tenants->t[SE_TENANT(se)].name, se->e->why);
	if (ss->tmetrics != NULL)
		ss->tmetrics[SE_TENANT(se)].sessions_ended++;
	w = serve_sessions_work_new(ss, se, WORK_END, NULL);
	if (w != NULL) {
		w->rs = SE_RS(se);
		SE_RS(se) = NULL;
		if (serve_sessions_work_spawn(w, work_done) == 0)
			return;
		SE_RS(se) = w->rs;
		serve_sessions_work_free(w);
	}
	runner_session_free(SE_RS(se));
	session_free(se);
}

/* Undoes what a start or call that never ran had set, answers it (code,
 * msg) and frees it; a start's session (never started) goes too. A
 * call's session is idle again, its idle clock untouched, or, when its
 * end was asked meanwhile, ends (why; NULL: msg). */
static void
work_drop(struct session_work *w, int code, const char *msg,
    const char *why)
{
	struct serve_session *se = w->se;
	bool start = w->kind == WORK_START;

	if (why == NULL)
		why = msg;

	se->queued = NULL;
	serve_conn_on_gone(w->c, NULL, NULL);
	serve_reply_error(w->c, code, msg);
	serve_sessions_work_free(w);
	if (start) {
		jobs_session_start_failed(se->e);
		se->e = NULL;
		session_free(se);
	} else if (jobs_session_unhold(se->e, why)) {
		session_end(se->ss, se);
	}
}

int
serve_sessions_hold(struct serve_session *se)
{
	/* se is in hand (the route found it on this thread): no second
	 * look-up by tenant and id. */
	return jobs_session_hold(se->e) == 0 ? 0 : -EBUSY;
}

void
serve_sessions_release(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	if (jobs_session_put(se->e, false, why))
		session_end(ss, se);
}

/* se, starting or busy, was asked to end (it is out of the table, its
 * start or call cancelled): a start or call still waiting for a slot is
 * answered 503 and se ends (or, never started, goes) now; else it ends
 * when its thread is back. */
static void
end_later(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	char msg[256];
	bool start;

	if (se->queued != NULL) {
		start = se->queued->kind == WORK_START;
		/* Withdrawn for sure, as in on_gone_queued. */
		(void)serve_queue_withdraw(ss->queue, &se->queued->wait);
		snprintf(msg, sizeof(msg), "the session was ended before its "
		    "%s could run (%s)", start ? "start" : "call", why);
		work_drop(se->queued, 503, msg, why);
		return;
	}
	log_info("session %s: ending (%s) once its %s returns", SE_ID(se),
	    why, se->e->state == JOBS_SESSION_STARTING ? "start" : "call");
}

void
serve_sessions_ask_end(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	if (jobs_session_ask_end(se->e, why))
		session_end(ss, se);
	else
		end_later(ss, se, why);
}

static void
reply_session(struct serve_session *se, struct serve_conn *c, int64_t ms)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && (cJSON_AddStringToObject(o, "id", SE_ID(se)) ==
	    NULL || cJSON_AddStringToObject(o, "container",
	    runner_session_container(SE_RS(se))) == NULL ||
	    cJSON_AddStringToObject(o, "net", runner_net_name(se->net)) ==
	    NULL || cJSON_AddStringToObject(o, "profile",
	    runner_session_profile(SE_RS(se))) == NULL ||
	    (se->net == RUNNER_NET_PROXY && cJSON_AddStringToObject(o,
	    "policy", runner_session_policy(SE_RS(se))) == NULL) ||
	    cJSON_AddNumberToObject(o, "idle_timeout_s",
	    (double)se->e->idle_s) == NULL ||
	    cJSON_AddNumberToObject(o, "max_lifetime_s",
	    (double)se->e->life_s) == NULL ||
	    cJSON_AddNumberToObject(o, "start_ms", (double)ms) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	serve_reply_json(c, 201, o);
	cJSON_Delete(o);
}

static void
start_done(struct serve_sessions *ss, struct session_work *w)
{
	struct serve_session *se = w->se;
	const char *reason;
	int code;

	hold_reply(ss, w->c);
	if (w->rc < 0) {
		code = w->rc == -EOPNOTSUPP ? 400 :
		    serve_reply_status(w->rc, &reason);
		serve_reply_error_code(w->c, code, w->err,
		    serve_reply_code(w->rc));
		jobs_session_start_failed(se->e);
		se->e = NULL;
		session_free(se);
		return;
	}
	if (ss->tmetrics != NULL)
		ss->tmetrics[SE_TENANT(se)].sessions_started++;
	if (jobs_session_started(se->e, w->rs, false)) {
		serve_reply_error(w->c, 503, "the session was ended while it "
		    "started (kill-all or stop)");
		session_end(ss, se);
		return;
	}
	log_info("session %s (tenant %s): started in %lld ms, container %s",
	    SE_ID(se), ss->tenants->t[SE_TENANT(se)].name,
	    (long long)runner_session_start_ms(SE_RS(se)),
	    runner_session_container(SE_RS(se)));
	reply_session(se, w->c, time_mono_ms() - w->t0_ms);
}

static void
call_done(struct serve_sessions *ss, struct session_work *w)
{
	struct serve_session *se = w->se;
	bool ended = w->ended || runner_session_ended(SE_RS(se));
	int status = w->rc < 0 ? SERVE_STATUS_ERROR : (int)w->res.status;
	const char *reason;
	char *line = w->line;
	bool end;
	int code;

	w->line = NULL;
	/* Idle again, unless it ended in the call or was asked to meanwhile:
	 * then it is out of the table, remembered with why. */
	end = jobs_session_put(se->e, ended,
	    runner_status_name(w->res.status));
	hold_reply(ss, w->c);
	if (ss->metrics != NULL) {
		ss->metrics->session_calls[status]++;
		ss->tmetrics[SE_TENANT(se)].session_calls[status]++;
	}
	if (w->rc < 0) {
		free(line);
		code = w->rc == -ESHUTDOWN ? 410 :
		    serve_reply_status(w->rc, &reason);
		serve_reply_error(w->c, code, w->err);
	} else if (line == NULL) {
		serve_reply_error(w->c, 500, "out of memory");
	} else {
		/* Replaces the closing '}' (LINE_ROOM bytes were kept). */
		snprintf(line + w->line_len - 1, LINE_ROOM,
		    ",\"session_ended\":%s}\n", end ? "true" : "false");
		serve_conn_reply_take(w->c, 200, "application/json", line,
		    strlen(line));
	}
	if (end)
		session_end(ss, se);
}

static void
work_done(evutil_socket_t fd, short what, void *arg)
{
	struct session_work *w = arg;
	struct serve_sessions *ss = w->ss;
	size_t tenant = w->tenant;
	bool admitted = w->admitted;

	(void)fd;
	(void)what;
	ss->threads--;
	switch (w->kind) {
	case WORK_START:
		start_done(ss, w);
		break;
	case WORK_CALL:
		call_done(ss, w);
		break;
	case WORK_END:
		session_free(w->se);
		break;
	}
	serve_sessions_work_free(w);
	if (admitted)
		serve_queue_release(ss->queue, tenant);
	ss->on_idle(ss->arg);
}

/* The client hung up during a start or a call: cancel it (a call so
 * cancelled ends its session, closed_early, as a run's hang-up does). */
static void
on_gone(void *arg)
{
	struct session_work *w = arg;

	atomic_store(&w->se->e->cancel, 1);
}

/* The client of a start or call still waiting for a slot hung up. */
static void
on_gone_queued(void *arg)
{
	struct session_work *w = arg;

	/* Withdrawn for sure: serve starts every grant on the loop at once
	 * (serve_queue_granted), and work_go swaps this callback for
	 * on_gone, so a waiter seen here is queued or granted, never being
	 * started. A front end that grants from another thread must handle
	 * false (set the cancel instead, as on_gone does). */
	(void)serve_queue_withdraw(w->ss->queue, &w->wait);
	work_drop(w, 499, "gone", NULL);
}

/* w holds its slot: run it now. */
static void
work_go(struct session_work *w)
{
	struct serve_sessions *ss = w->ss;
	size_t tenant = w->tenant;

	w->admitted = true;
	w->se->queued = NULL;
	if (serve_sessions_work_spawn(w, work_done) < 0) {
		work_drop(w, 500, "cannot start a worker thread", "no thread");
		serve_queue_release(ss->queue, tenant);
		return;
	}
	serve_conn_on_gone(w->c, on_gone, w);
}

static struct session_work *
work_of(struct jobs_wait *wt)
{
	return (struct session_work *)((char *)wt -
	    offsetof(struct session_work, wait));
}

static void
wait_start(struct jobs_wait *wt)
{
	work_go(work_of(wt));
}

static void
wait_refuse(struct jobs_wait *wt, const char *why)
{
	struct session_work *w = work_of(wt);

	if (w->ss->metrics != NULL)
		SERVE_COUNT(w->ss->metrics, w->ss->tmetrics, wt->tenant,
		    unavailable);
	work_drop(w, 503, why, NULL);
}

/* Admits w for its session's tenant: runs it, queues it, or answers 429
 * (and drops it). */
static void
work_admit(struct serve_sessions *ss, struct session_work *w)
{
	const struct serve_tenant *t = &ss->tenants->t[w->tenant];
	struct serve_metrics m;
	char err[256];
	int rc;

	w->wait.tenant = w->tenant;
	w->wait.start = wait_start;
	w->wait.refuse = wait_refuse;
	if ((rc = serve_queue_admit(ss->queue, &w->wait)) == 1) {
		work_go(w);
	} else if (rc == 0) {
		w->se->queued = w;
		serve_conn_on_gone(w->c, on_gone_queued, w);
	} else {
		if (ss->metrics != NULL)
			SERVE_COUNT(ss->metrics, ss->tmetrics, w->tenant,
			    rejected);
		serve_queue_counts(ss->queue, w->tenant, &m);
		snprintf(err, sizeof(err), "tenant '%s' is over its limit "
		    "(%lld running, %lld queued)", t->name,
		    (long long)m.active, (long long)m.queue_depth);
		serve_conn_add_header(w->c, "Retry-After", "1");
		work_drop(w, 429, err, NULL);
	}
}

void
serve_sessions_create(struct serve_sessions *ss, struct serve_conn *c,
    size_t tenant, const struct serve_session_opts *o,
    struct stage_file *files, size_t nfiles)
{
	const struct serve_tenant *t = &ss->tenants->t[tenant];
	struct serve_session *se;
	struct session_work *w = NULL;
	char hex[17], id[SERVE_SESSION_ID_LEN + 1];
	int rc = -EEXIST;

	/* Listed (starting) at once: the tenant's limit counts it. The
	 * caller checked that limit just now, on this thread. A random id
	 * already in use (no more likely than 2^-64) is drawn again. */
	se = calloc(1, sizeof(*se));
	for (int i = 0; se != NULL && i < 4 && rc == -EEXIST; i++) {
		if (util_random_hex(hex, 8) < 0) {
			rc = -EIO;
			break;
		}
		snprintf(id, sizeof(id), "ses_%s", hex);
		rc = jobs_sessions_acquire(ss->table, tenant, id,
		    JOBS_SESSION_NEW, 0, &se->e, NULL);
	}
	if (se == NULL || rc != 1 ||
	    (w = serve_sessions_work_new(ss, se, WORK_START, c)) == NULL) {
		if (se != NULL && se->e != NULL) {
			jobs_session_start_failed(se->e);
			se->e = NULL;
		}
		if (se != NULL)
			session_free(se);
		stage_files_free(files, nfiles);
		serve_reply_error(c, 500, "out of memory");
		return;
	}
	w->files = files;
	w->nfiles = nfiles;
	se->ss = ss;
	se->e->priv = se;
	se->net = o->net;
	util_strlcpy(se->policy, o->policy, sizeof(se->policy));
	util_strlcpy(se->profile, o->profile, sizeof(se->profile));
	se->e->idle_s = o->idle_timeout_s;
	se->e->life_s = o->max_lifetime_s;
	snprintf(w->label, sizeof(w->label), "%.43s.%.20s", t->name,
	    SE_ID(se));
	work_admit(ss, w);
}

void
serve_sessions_call(struct serve_sessions *ss, struct serve_conn *c,
    struct serve_session *se, struct jobs_req *call)
{
	struct session_work *w = serve_sessions_work_new(ss, se, WORK_CALL, c);

	if (w == NULL) {
		jobs_req_cleanup(call);
		serve_reply_error(c, 500, "out of memory");
		return;
	}
	/* Idle (the route checked it, on this thread): busy now, its
	 * cancel cleared. */
	if (serve_sessions_hold(se) < 0) {
		serve_sessions_work_free(w);
		jobs_req_cleanup(call);
		serve_reply_error(c, 409, "a call is already running in this "
		    "session (calls are not queued: wait for its reply)");
		return;
	}
	w->call = *call;
	memset(call, 0, sizeof(*call));
	work_admit(ss, w);
}

void
serve_sessions_metrics(const struct serve_sessions *ss,
    struct serve_metrics *m)
{
	size_t live = 0;

	if (ss->table != NULL)
		jobs_sessions_stats(ss->table, &live, &m->sessions_started,
		    &m->sessions_ended);
	m->sessions_live = (int64_t)live;
}

void
serve_sessions_end_all(struct serve_sessions *ss, const char *why)
{
	struct jobs_session *e;

	/* Each leaves the table as it is asked. */
	while ((e = jobs_sessions_first(ss->table)) != NULL)
		serve_sessions_ask_end(ss, e->priv, why);
}

/* The table asked e to end (jobs_sessions_expire). */
static void
expired(struct jobs_session *e, const char *why, bool now, void *arg)
{
	if (now)
		session_end(arg, e->priv);
	else
		end_later(arg, e->priv, why);
}

/* Idle timeout, maximum lifetime, and containers gone between calls
 * (dockerd stopped or restarted, a removal from outside): those end with
 * why, and leave the table (jobs_sessions_expire decides which). */
static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct serve_sessions *ss = arg;

	(void)fd;
	(void)what;
	jobs_sessions_expire(ss->table, expired, ss);
}

static void
priv_free(void *priv)
{
	free(priv);
}

int
serve_sessions_init(struct serve_sessions *ss)
{
	struct jobs_sessions_opts o = { .remember_gone = true,
	    .one_thread = true, .free_priv = priv_free };
	struct timeval one = { 1, 0 };

	if ((ss->table = jobs_sessions_new(&o)) == NULL)
		return -ENOMEM;
	ss->threads = 0;
	ss->sending = 0;
	if ((ss->tick = event_new(ss->base, -1, EV_PERSIST, on_tick, ss)) ==
	    NULL || event_add(ss->tick, &one) < 0)
		return -ENOMEM;
	return 0;
}

bool
serve_sessions_busy(const struct serve_sessions *ss)
{
	return ss->threads > 0 || (ss->table != NULL &&
	    jobs_sessions_first(ss->table) != NULL);
}

void
serve_sessions_cleanup(struct serve_sessions *ss)
{
	/* Nothing is in flight once the loop has ended; a session still
	 * in the table (the loop failed) is ended here, blocking. */
	jobs_sessions_free(ss->table);
	ss->table = NULL;
	if (ss->tick != NULL)
		event_free(ss->tick);
	ss->tick = NULL;
}
