/*
 * The service's sessions (sessions.h): the table of live sessions (loop
 * thread only), the idle/lifetime tick, the admission of starts and calls
 * (queue.c: each holds one of its tenant's slots, like a run: issue 39),
 * and what the loop does when a work item comes back from its thread
 * (sessions_work.c: start a session's container, run one call in it and
 * build its reply there, or end it). A session
 * leaves the table as soon as it starts ending (and is remembered, with
 * why, in ss->gone); what is still in flight is counted in ss->threads.
 * The routes are sessions_route.c's.
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


static int64_t
tenant_sessions(const struct serve_sessions *ss, size_t tenant)
{
	const struct serve_session *se;
	int64_t n = 0;

	TAILQ_FOREACH(se, &ss->live, link)
		n += se->tenant == tenant;
	return n;
}

int64_t
serve_sessions_count(const struct serve_sessions *ss, size_t tenant)
{
	return tenant_sessions(ss, tenant);
}

struct serve_session *
serve_sessions_find(struct serve_sessions *ss, const char *id, size_t tenant)
{
	struct serve_session *se;

	/* Another tenant's session is not there for this one. */
	TAILQ_FOREACH(se, &ss->live, link)
		if (se->tenant == tenant && strcmp(se->id, id) == 0)
			return se;
	return NULL;
}

static void
unlist(struct serve_session *se)
{
	if (se->listed) {
		TAILQ_REMOVE(&se->ss->live, se, link);
		se->listed = false;
	}
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

/* Remembers that se ended and why, for its tenant (serve_sessions_gone). */
static void
gone_note(struct serve_sessions *ss, const struct serve_session *se,
    const char *why)
{
	struct serve_session_gone *g = &ss->gone[ss->gone_next];

	util_strlcpy(g->id, se->id, sizeof(g->id));
	g->tenant = se->tenant;
	util_strlcpy(g->why, why, sizeof(g->why));
	ss->gone_next = (ss->gone_next + 1) % SERVE_SESSIONS_GONE_MAX;
}

const struct serve_session_gone *
serve_sessions_gone(const struct serve_sessions *ss, const char *id,
    size_t tenant)
{
	for (size_t i = 0; i < SERVE_SESSIONS_GONE_MAX; i++)
		if (ss->gone[i].id[0] != '\0' && ss->gone[i].tenant ==
		    tenant && strcmp(ss->gone[i].id, id) == 0)
			return &ss->gone[i];
	return NULL;
}

/* Ends se (already out of the table, nothing of its own in flight or
 * waiting): removes its container on a thread and frees it. */
static void
session_end(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	struct session_work *w;

	unlist(se);
	if (se->rs != NULL) {
		log_info("session %s (tenant %s): ended (%s)", se->id,
		    ss->tenants->t[se->tenant].name, why);
		gone_note(ss, se, why);
	}
	ss->ended++;
	if (ss->tmetrics != NULL)
		ss->tmetrics[se->tenant].sessions_ended++;
	w = serve_sessions_work_new(ss, se, WORK_END, NULL);
	if (w != NULL) {
		w->rs = se->rs;
		se->rs = NULL;
		if (serve_sessions_work_spawn(w, work_done) == 0)
			return;
		se->rs = w->rs;
		serve_sessions_work_free(w);
	}
	runner_session_free(se->rs);
	free(se);
}

/* Undoes what a start or call that never ran had set, answers it (code,
 * why) and frees it; a start's session (never started) goes too. */
static void
work_drop(struct session_work *w, int code, const char *why)
{
	struct serve_session *se = w->se;

	se->queued = NULL;
	serve_conn_on_gone(w->c, NULL, NULL);
	serve_reply_error(w->c, code, why);
	if (w->kind == WORK_START) {
		unlist(se);
		free(se);
	} else {
		se->busy = false;
	}
	serve_sessions_work_free(w);
}

void
serve_sessions_release(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	se->busy = false;
	se->last_ms = time_mono_ms();
	if (se->end_asked)
		session_end(ss, se, why);
}

void
serve_sessions_ask_end(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	char msg[256];
	bool start;

	unlist(se);
	if (se->queued != NULL) {
		start = se->queued->kind == WORK_START;
		serve_queue_withdraw(ss->queue, &se->queued->wait);
		snprintf(msg, sizeof(msg), "the session was ended before its "
		    "%s could run (%s)", start ? "start" : "call", why);
		work_drop(se->queued, 503, msg);
		if (start)
			return;		/* it never started: freed */
	}
	if (se->busy || se->starting) {
		se->end_asked = true;
		se->cancel = 1;
		log_info("session %s: ending (%s) once its %s returns", se->id,
		    why, se->starting ? "start" : "call");
		return;
	}
	session_end(ss, se, why);
}

static void
reply_session(struct serve_session *se, struct serve_conn *c, int64_t ms)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && (cJSON_AddStringToObject(o, "id", se->id) == NULL ||
	    cJSON_AddStringToObject(o, "container",
	    runner_session_container(se->rs)) == NULL ||
	    cJSON_AddStringToObject(o, "net", runner_net_name(se->net)) ==
	    NULL || cJSON_AddStringToObject(o, "profile",
	    runner_session_profile(se->rs)) == NULL ||
	    (se->net == RUNNER_NET_PROXY && cJSON_AddStringToObject(o,
	    "policy", runner_session_policy(se->rs)) == NULL) ||
	    cJSON_AddNumberToObject(o, "idle_timeout_s",
	    (double)se->idle_s) == NULL ||
	    cJSON_AddNumberToObject(o, "max_lifetime_s",
	    (double)se->life_s) == NULL ||
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

	se->starting = false;
	hold_reply(ss, w->c);
	if (w->rc < 0) {
		unlist(se);
		code = w->rc == -EOPNOTSUPP ? 400 :
		    serve_reply_status(w->rc, &reason);
		serve_reply_error_code(w->c, code, w->err,
		    serve_reply_code(w->rc));
		free(se);
		return;
	}
	se->rs = w->rs;
	se->created_ms = se->last_ms = time_mono_ms();
	ss->started++;
	if (ss->tmetrics != NULL)
		ss->tmetrics[se->tenant].sessions_started++;
	if (se->end_asked) {
		serve_reply_error(w->c, 503, "the session was ended while it "
		    "started (kill-all or stop)");
		session_end(ss, se, "ended while starting");
		return;
	}
	log_info("session %s (tenant %s): started in %lld ms, container %s",
	    se->id, ss->tenants->t[se->tenant].name,
	    (long long)runner_session_start_ms(se->rs),
	    runner_session_container(se->rs));
	reply_session(se, w->c, time_mono_ms() - w->t0_ms);
}

static void
call_done(struct serve_sessions *ss, struct session_work *w)
{
	struct serve_session *se = w->se;
	bool ended = w->ended || runner_session_ended(se->rs);
	int status = w->rc < 0 ? SERVE_STATUS_ERROR : (int)w->res.status;
	const char *reason;
	char *line = w->line;
	int code;

	w->line = NULL;
	se->busy = false;
	se->last_ms = time_mono_ms();
	hold_reply(ss, w->c);
	if (ss->metrics != NULL) {
		ss->metrics->session_calls[status]++;
		ss->tmetrics[se->tenant].session_calls[status]++;
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
		    ",\"session_ended\":%s}\n", ended || se->end_asked ?
		    "true" : "false");
		serve_conn_reply_take(w->c, 200, "application/json", line,
		    strlen(line));
	}
	if (ended || se->end_asked)
		session_end(ss, se, ended ? runner_status_name(w->res.status) :
		    "asked during a call");
}

static void
work_done(evutil_socket_t fd, short what, void *arg)
{
	struct session_work *w = arg;
	struct serve_sessions *ss = w->ss;
	size_t tenant = w->se->tenant;
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
		free(w->se);
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

	w->se->cancel = 1;
}

/* The client of a start or call still waiting for a slot hung up. */
static void
on_gone_queued(void *arg)
{
	struct session_work *w = arg;

	serve_queue_withdraw(w->ss->queue, &w->wait);
	work_drop(w, 499, "gone");
}

/* w holds its slot: run it now. */
static void
work_go(struct session_work *w)
{
	struct serve_sessions *ss = w->ss;
	size_t tenant = w->se->tenant;

	w->admitted = true;
	w->se->queued = NULL;
	if (serve_sessions_work_spawn(w, work_done) < 0) {
		work_drop(w, 500, "cannot start a worker thread");
		serve_queue_release(ss->queue, tenant);
		return;
	}
	serve_conn_on_gone(w->c, on_gone, w);
}

static struct session_work *
work_of(struct serve_wait *wt)
{
	return (struct session_work *)((char *)wt -
	    offsetof(struct session_work, wait));
}

static void
wait_start(struct serve_wait *wt)
{
	work_go(work_of(wt));
}

static void
wait_refuse(struct serve_wait *wt, const char *why)
{
	struct session_work *w = work_of(wt);

	if (w->ss->metrics != NULL)
		SERVE_COUNT(w->ss->metrics, w->ss->tmetrics, wt->tenant,
		    unavailable);
	work_drop(w, 503, why);
}

/* Admits w for its session's tenant: runs it, queues it, or answers 429
 * (and drops it). */
static void
work_admit(struct serve_sessions *ss, struct session_work *w)
{
	const struct serve_tenant *t = &ss->tenants->t[w->se->tenant];
	char err[256];
	int rc;

	w->wait.tenant = w->se->tenant;
	w->wait.start = wait_start;
	w->wait.refuse = wait_refuse;
	if ((rc = serve_queue_admit(ss->queue, &w->wait)) == 1) {
		work_go(w);
	} else if (rc == 0) {
		w->se->queued = w;
		serve_conn_on_gone(w->c, on_gone_queued, w);
	} else {
		if (ss->metrics != NULL)
			SERVE_COUNT(ss->metrics, ss->tmetrics, w->se->tenant,
			    rejected);
		snprintf(err, sizeof(err), "tenant '%s' is over its limit "
		    "(%lld running, %lld queued)", t->name,
		    (long long)t->active, (long long)t->queued);
		serve_conn_add_header(w->c, "Retry-After", "1");
		work_drop(w, 429, err);
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
	char hex[17];

	if ((se = calloc(1, sizeof(*se))) == NULL ||
	    util_random_hex(hex, 8) < 0 ||
	    (w = serve_sessions_work_new(ss, se, WORK_START, c)) == NULL) {
		free(se);
		stage_files_free(files, nfiles);
		serve_reply_error(c, 500, "out of memory");
		return;
	}
	w->files = files;
	w->nfiles = nfiles;
	se->ss = ss;
	snprintf(se->id, sizeof(se->id), "ses_%s", hex);
	se->tenant = tenant;
	se->net = o->net;
	util_strlcpy(se->policy, o->policy, sizeof(se->policy));
	util_strlcpy(se->profile, o->profile, sizeof(se->profile));
	se->idle_s = o->idle_timeout_s;
	se->life_s = o->max_lifetime_s;
	se->starting = true;
	snprintf(w->label, sizeof(w->label), "%.43s.%s", t->name, se->id);
	TAILQ_INSERT_TAIL(&ss->live, se, link);
	se->listed = true;
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
	w->call = *call;
	memset(call, 0, sizeof(*call));
	se->busy = true;
	se->cancel = 0;
	work_admit(ss, w);
}

void
serve_sessions_metrics(const struct serve_sessions *ss,
    struct serve_metrics *m)
{
	const struct serve_session *se;

	m->sessions_live = 0;
	TAILQ_FOREACH(se, &ss->live, link)
		m->sessions_live++;
	m->sessions_started = (uint64_t)ss->started;
	m->sessions_ended = (uint64_t)ss->ended;
}

void
serve_sessions_end_all(struct serve_sessions *ss, const char *why)
{
	struct serve_session *se;

	while ((se = TAILQ_FIRST(&ss->live)) != NULL)
		serve_sessions_ask_end(ss, se, why);
}

/* Idle timeout, maximum lifetime, and containers gone between calls
 * (dockerd stopped or restarted, a removal from outside): those end with
 * why, and leave the table. */
static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct serve_sessions *ss = arg;
	struct serve_session *se, *next;
	int64_t now = time_mono_ms();
	char why[128];

	(void)fd;
	(void)what;
	for (se = TAILQ_FIRST(&ss->live); se != NULL; se = next) {
		next = TAILQ_NEXT(se, link);
		if (se->starting)
			continue;
		if (now - se->created_ms >= se->life_s * 1000)
			serve_sessions_ask_end(ss, se, "max lifetime");
		else if (!se->busy && now - se->last_ms >= se->idle_s * 1000)
			serve_sessions_ask_end(ss, se, "idle timeout");
		else if (!se->busy && runner_session_gone(se->rs, why,
		    sizeof(why)))
			serve_sessions_ask_end(ss, se, why);
	}
}

int
serve_sessions_init(struct serve_sessions *ss)
{
	struct timeval one = { 1, 0 };

	TAILQ_INIT(&ss->live);
	memset(ss->gone, 0, sizeof(ss->gone));
	ss->gone_next = 0;
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
	return ss->threads > 0 || !TAILQ_EMPTY(&ss->live);
}

void
serve_sessions_cleanup(struct serve_sessions *ss)
{
	struct serve_session *se;

	/* Nothing is in flight once the loop has ended; a session still
	 * listed (the loop failed) is ended here, blocking. */
	while ((se = TAILQ_FIRST(&ss->live)) != NULL) {
		unlist(se);
		runner_session_free(se->rs);
		free(se);
	}
	if (ss->tick != NULL)
		event_free(ss->tick);
	ss->tick = NULL;
}
