/*
 * The service's sessions (sessions.h): the table of live sessions (loop
 * thread only), the routes under /v1/sessions, the idle/lifetime tick, and
 * the worker threads that start a session's container, run one call in it
 * or end it (runner/session.h). A session leaves the table as soon as it
 * starts ending; what is still in flight is counted in ss->threads.
 */
#include "serve/sessions.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "common/log.h"
#include "common/util.h"
#include "runner/session.h"
#include "serve/internal.h"
#include "serve/listen.h"

struct serve_session {
	TAILQ_ENTRY(serve_session) link;
	struct serve_sessions *ss;
	char id[SERVE_SESSION_ID_LEN + 1];
	size_t tenant;
	enum runner_net net;
	char policy[CONFIG_POLICY_MAX + 1];	/* "": the default one */
	char profile[CONFIG_PROFILE_MAX + 1];	/* "": the current one */
	struct runner_session *rs;	/* NULL while starting */
	int64_t created_ms, last_ms;	/* monotonic */
	int64_t idle_s, life_s;
	bool starting, busy, listed;
	bool end_asked;			/* end once the thread is back */
	atomic_int cancel;
};

enum work_kind { WORK_START, WORK_CALL, WORK_END };

/* One thread's job; it owns everything here until it is back. */
struct work {
	enum work_kind kind;
	struct serve_sessions *ss;
	struct serve_session *se;
	struct evhttp_request *req;	/* NULL for WORK_END */
	struct event *done_ev;
	struct serve_req call;		/* WORK_CALL */
	int rc;
	char err[512];
	struct runner_result res;
	struct runner_session *rs;	/* WORK_START's, WORK_END's */
	char label[RUNNER_SESSION_MAX + 1];
	int64_t t0_ms;
	struct stage_file *files;	/* WORK_START: copied in at /in */
	size_t nfiles;
};

static int64_t
tenant_sessions(const struct serve_sessions *ss, size_t tenant)
{
	const struct serve_session *se;
	int64_t n = 0;

	TAILQ_FOREACH(se, &ss->live, link)
		n += se->tenant == tenant;
	return n;
}

static struct serve_session *
find(struct serve_sessions *ss, const char *id, size_t tenant)
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

static void
reply_sent(struct evhttp_request *req, void *arg)
{
	struct serve_sessions *ss = arg;

	(void)req;
	ss->sending--;
	ss->on_idle(ss->arg);
}

/* Keeps the loop (a stop) until the reply to req is written. */
static void
hold_reply(struct serve_sessions *ss, struct evhttp_request *req)
{
	if (evhttp_request_get_connection(req) == NULL)
		return;
	evhttp_request_set_on_complete_cb(req, reply_sent, ss);
	ss->sending++;
}

static void *
work_thread(void *arg)
{
	struct work *w = arg;
	struct serve_session *se = w->se;
	struct runner_session_opts o = { .net = se->net, .label = w->label,
	    .policy = se->policy[0] != '\0' ? se->policy : NULL,
	    .profile = se->profile[0] != '\0' ? se->profile : NULL,
	    .max_lifetime_s = se->life_s, .cancel = &se->cancel };
	struct runner_request rq = { 0 };

	struct stage_dir st = { .nin = 0 };

	switch (w->kind) {
	case WORK_START:
		/* Written to a private directory, then copied under the
		 * state dir by the start (files_stage_in), as a run's. */
		w->rc = stage_write(w->ss->tmp_dir, "cordon-session", w->files,
		    w->nfiles, &st, w->err, sizeof(w->err));
		o.in = (const char *const *)st.in;
		o.nin = st.nin;
		if (w->rc == 0)
			w->rc = runner_session_start(w->ss->c, &o, &w->rs,
			    w->err, sizeof(w->err));
		stage_dir_cleanup(&st);
		break;
	case WORK_CALL:
		rq.code = w->call.code;
		rq.code_len = w->call.code_len;
		rq.timeout_s = w->call.timeout_s;
		rq.max_output = w->call.max_output;
		rq.keep = w->call.keep;
		rq.cancel = &se->cancel;
		w->rc = runner_session_call(se->rs, &rq, &w->res, w->err,
		    sizeof(w->err));
		break;
	case WORK_END:
		runner_session_free(w->rs);
		w->rs = NULL;
		break;
	}
	event_active(w->done_ev, 0, 0);
	return NULL;
}

static void
work_free(struct work *w)
{
	if (w->done_ev != NULL)
		event_free(w->done_ev);
	serve_req_cleanup(&w->call);
	runner_result_cleanup(&w->res);
	stage_files_free(w->files, w->nfiles);
	free(w);
}

/* Starts w on a thread; on failure runs it here (only WORK_END can fail
 * that way without a reply: it then blocks the loop for the removal). */
static int
work_spawn(struct work *w)
{
	int rc;

	if ((w->done_ev = event_new(w->ss->base, -1, 0, work_done, w)) ==
	    NULL)
		return -ENOMEM;
	if ((rc = serve_listen_thread_spawn(work_thread, w)) < 0)
		return rc;
	w->ss->threads++;
	return 0;
}

static struct work *
work_new(struct serve_sessions *ss, struct serve_session *se,
    enum work_kind kind, struct evhttp_request *req)
{
	struct work *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->kind = kind;
	w->ss = ss;
	w->se = se;
	w->req = req;
	w->t0_ms = time_mono_ms();
	return w;
}

/* Remembers that se ended and why, for its tenant (gone_find). */
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

static const struct serve_session_gone *
gone_find(const struct serve_sessions *ss, const char *id, size_t tenant)
{
	for (size_t i = 0; i < SERVE_SESSIONS_GONE_MAX; i++)
		if (ss->gone[i].id[0] != '\0' && ss->gone[i].tenant ==
		    tenant && strcmp(ss->gone[i].id, id) == 0)
			return &ss->gone[i];
	return NULL;
}

/* Ends se (already out of the table, no thread of its own in flight):
 * removes its container on a thread and frees it. */
static void
session_end(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	struct work *w;

	unlist(se);
	if (se->rs != NULL) {
		log_info("session %s (tenant %s): ended (%s)", se->id,
		    ss->tenants->t[se->tenant].name, why);
		gone_note(ss, se, why);
	}
	ss->ended++;
	w = work_new(ss, se, WORK_END, NULL);
	if (w != NULL) {
		w->rs = se->rs;
		se->rs = NULL;
		if (work_spawn(w) == 0)
			return;
		se->rs = w->rs;
		work_free(w);
	}
	runner_session_free(se->rs);
	free(se);
}

/* Asks se to end: now when nothing of it runs, else when its thread is
 * back (a running call is cancelled: its state would be unknown). */
static void
session_ask_end(struct serve_sessions *ss, struct serve_session *se,
    const char *why)
{
	unlist(se);
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
reply_session(struct serve_session *se, struct evhttp_request *req,
    int64_t ms)
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
	serve_reply_json(req, 201, "Created", o);
	cJSON_Delete(o);
}

static void
start_done(struct serve_sessions *ss, struct work *w)
{
	struct serve_session *se = w->se;
	const char *reason;
	int code;

	se->starting = false;
	hold_reply(ss, w->req);
	if (w->rc < 0) {
		unlist(se);
		code = w->rc == -EOPNOTSUPP ? 400 :
		    serve_reply_status(w->rc, &reason);
		if (w->rc == -EOPNOTSUPP)
			reason = "Bad Request";
		serve_reply_error_code(w->req, code, reason, w->err,
		    serve_reply_code(w->rc));
		free(se);
		return;
	}
	se->rs = w->rs;
	se->created_ms = se->last_ms = time_mono_ms();
	ss->started++;
	if (se->end_asked) {
		serve_reply_error(w->req, 503, "Service Unavailable", "the "
		    "session was ended while it started (kill-all or stop)");
		session_end(ss, se, "ended while starting");
		return;
	}
	log_info("session %s (tenant %s): started in %lld ms, container %s",
	    se->id, ss->tenants->t[se->tenant].name,
	    (long long)runner_session_start_ms(se->rs),
	    runner_session_container(se->rs));
	reply_session(se, w->req, time_mono_ms() - w->t0_ms);
}

static void
call_done(struct serve_sessions *ss, struct work *w)
{
	struct serve_session *se = w->se;
	bool ended = runner_session_ended(se->rs);
	const char *reason;
	cJSON *o;
	int code;

	se->busy = false;
	se->last_ms = time_mono_ms();
	hold_reply(ss, w->req);
	if (ss->metrics != NULL)
		ss->metrics->session_calls[w->rc < 0 ? SERVE_STATUS_ERROR :
		    (int)w->res.status]++;
	if (w->rc < 0) {
		code = w->rc == -ESHUTDOWN ? 410 :
		    serve_reply_status(w->rc, &reason);
		if (w->rc == -ESHUTDOWN)
			reason = "Gone";
		serve_reply_error(w->req, code, reason, w->err);
	} else {
		o = runner_result_to_json(&w->res);
		if (o != NULL && (cJSON_AddStringToObject(o, "session",
		    se->id) == NULL || cJSON_AddBoolToObject(o,
		    "session_ended", ended || se->end_asked) == NULL)) {
			cJSON_Delete(o);
			o = NULL;
		}
		serve_reply_json(w->req, 200, "OK", o);
		cJSON_Delete(o);
	}
	if (ended || se->end_asked)
		session_end(ss, se, ended ? runner_status_name(w->res.status) :
		    "asked during a call");
}

static void
work_done(evutil_socket_t fd, short what, void *arg)
{
	struct work *w = arg;
	struct serve_sessions *ss = w->ss;

	(void)fd;
	(void)what;
	ss->threads--;
	if (w->req != NULL) {
		struct evhttp_connection *evcon =
		    evhttp_request_get_connection(w->req);

		if (evcon != NULL)
			evhttp_connection_set_closecb(evcon, NULL, NULL);
	}
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
	work_free(w);
	ss->on_idle(ss->arg);
}

/* The client hung up during a start or a call: cancel it. */
static void
on_close(struct evhttp_connection *evcon, void *arg)
{
	struct serve_session *se = arg;

	(void)evcon;
	se->cancel = 1;
}

static const char *
body_of(struct evhttp_request *req, size_t *len)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);

	*len = evbuffer_get_length(in);
	return *len > 0 ? (const char *)evbuffer_pullup(in, -1) : "";
}

/* What may refuse a new session before anything starts: the tenant's
 * nets and policies, the profile, the tenant's session limit. 0, or the
 * HTTP status with reason and a message in err. */
static int
create_check(struct serve_sessions *ss, size_t tenant,
    struct serve_session_opts *o, const char **reason, char *err,
    size_t errlen)
{
	const struct serve_tenant *t = &ss->tenants->t[tenant];
	const struct config_profile *prof;
	int rc;

	if (!o->has_net)
		o->net = t->net;
	if ((rc = serve_tenant_check(ss->c, t->conf, o->net, o->policy, err,
	    errlen)) < 0) {
		*reason = rc == -EPERM ? "Forbidden" : "Bad Request";
		return rc == -EPERM ? 403 : 400;
	}
	if (config_profile_pick(ss->c, o->profile[0] != '\0' ? o->profile :
	    NULL, "python", &prof, err, errlen) < 0) {
		*reason = "Bad Request";
		return 400;
	}
	if (tenant_sessions(ss, tenant) >= ss->c->serve.sessions_per_tenant) {
		snprintf(err, errlen, "tenant '%s' has %lld session(s), its "
		    "limit (serve.sessions_per_tenant); end one first",
		    t->name, (long long)tenant_sessions(ss, tenant));
		*reason = "Too Many Requests";
		return 429;
	}
	return 0;
}

static void
route_create(struct serve_sessions *ss, struct evhttp_request *req,
    size_t tenant)
{
	const struct serve_tenant *t = &ss->tenants->t[tenant];
	struct stage_file *files = NULL;
	size_t nfiles = 0;
	struct serve_session_opts o;
	struct serve_session *se;
	struct work *w;
	const char *reason = "Bad Request";
	char err[512], hex[17];
	size_t len;
	const char *body = body_of(req, &len);
	int rc, code;

	if (body == NULL || len > ss->c->serve.body_max_bytes) {
		serve_reply_error(req, 413, "Payload Too Large", "body too big");
		return;
	}
	if (serve_session_opts_parse(body, len, &o, err, sizeof(err)) < 0) {
		serve_reply_error(req, 400, "Bad Request", err);
		return;
	}
	code = create_check(ss, tenant, &o, &reason, err, sizeof(err));
	rc = code == 0 && o.files != NULL ? stage_files_parse(ss->c, o.files,
	    STAGE_CONTENT_BASE64, &files, &nfiles, err, sizeof(err)) : 0;
	serve_session_opts_cleanup(&o);
	if (rc < 0) {
		code = rc == -EFBIG ? 413 : rc == -ENOMEM ? 500 : 400;
		reason = rc == -EFBIG ? "Payload Too Large" : rc == -ENOMEM ?
		    "Internal Server Error" : "Bad Request";
	}
	if (code != 0) {
		serve_reply_error(req, code, reason, err);
		return;
	}
	if ((se = calloc(1, sizeof(*se))) == NULL ||
	    util_random_hex(hex, 8) < 0 ||
	    (w = work_new(ss, se, WORK_START, req)) == NULL) {
		free(se);
		stage_files_free(files, nfiles);
		serve_reply_error(req, 500, "Internal Server Error",
		    "out of memory");
		return;
	}
	w->files = files;
	w->nfiles = nfiles;
	se->ss = ss;
	snprintf(se->id, sizeof(se->id), "ses_%s", hex);
	se->tenant = tenant;
	se->net = o.net;
	util_strlcpy(se->policy, o.policy, sizeof(se->policy));
	util_strlcpy(se->profile, o.profile, sizeof(se->profile));
	se->idle_s = o.idle_timeout_s;
	se->life_s = o.max_lifetime_s;
	se->starting = true;
	snprintf(w->label, sizeof(w->label), "%.43s.%s", t->name, se->id);
	TAILQ_INSERT_TAIL(&ss->live, se, link);
	se->listed = true;
	if (work_spawn(w) < 0) {
		unlist(se);
		work_free(w);
		free(se);
		serve_reply_error(req, 500, "Internal Server Error",
		    "cannot start a worker thread");
		return;
	}
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    on_close, se);
}

static void
route_call(struct serve_sessions *ss, struct evhttp_request *req,
    struct serve_session *se)
{
	struct work *w;
	char err[512];
	size_t len;
	const char *body = body_of(req, &len);
	int rc;

	if (se->starting || se->busy) {
		serve_reply_error(req, 409, "Conflict", se->starting ?
		    "the session is still starting" : "a call is already "
		    "running in this session (calls are not queued: wait for "
		    "its reply)");
		return;
	}
	if (body == NULL || (w = work_new(ss, se, WORK_CALL, req)) == NULL) {
		serve_reply_error(req, 500, "Internal Server Error",
		    "out of memory");
		return;
	}
	rc = serve_req_parse(ss->c, body, len, &w->call, err, sizeof(err));
	if (rc == 0 && (w->call.has_net || w->call.policy[0] != '\0' ||
	    w->call.nfiles > 0)) {
		snprintf(err, sizeof(err), "a session's call takes code, "
		    "timeout_s, max_output and keep only (net and policy "
		    "belong to the session; files are not supported)");
		rc = -EINVAL;
	}
	if (rc < 0) {
		serve_reply_error(req, rc == -EFBIG ? 413 : rc == -EINVAL ?
		    400 : 500, rc == -EFBIG ? "Payload Too Large" :
		    rc == -EINVAL ? "Bad Request" : "Internal Server Error",
		    err);
		work_free(w);
		return;
	}
	se->busy = true;
	se->cancel = 0;
	if (work_spawn(w) < 0) {
		se->busy = false;
		work_free(w);
		serve_reply_error(req, 500, "Internal Server Error",
		    "cannot start a worker thread");
		return;
	}
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    on_close, se);
}

/* One session as GET shows it: its settings and state, never its nonce,
 * token or output. */
static cJSON *
session_json(const struct serve_session *se, int64_t now)
{
	cJSON *o = cJSON_CreateObject();
	const char *state = se->starting ? "starting" : se->busy ? "busy" :
	    "idle";
	bool ok;

	if (o == NULL)
		return NULL;
	ok = cJSON_AddStringToObject(o, "id", se->id) != NULL &&
	    cJSON_AddStringToObject(o, "state", state) != NULL &&
	    cJSON_AddStringToObject(o, "net", runner_net_name(se->net)) !=
	    NULL &&
	    cJSON_AddNumberToObject(o, "idle_timeout_s",
	    (double)se->idle_s) != NULL && cJSON_AddNumberToObject(o,
	    "max_lifetime_s", (double)se->life_s) != NULL;
	if (ok && se->rs != NULL)
		ok = cJSON_AddStringToObject(o, "container",
		    runner_session_container(se->rs)) != NULL &&
		    cJSON_AddStringToObject(o, "profile",
		    runner_session_profile(se->rs)) != NULL &&
		    (se->net != RUNNER_NET_PROXY || cJSON_AddStringToObject(o,
		    "policy", runner_session_policy(se->rs)) != NULL) &&
		    cJSON_AddNumberToObject(o, "age_s", (double)((now -
		    se->created_ms) / 1000)) != NULL &&
		    cJSON_AddNumberToObject(o, "idle_s", (double)(se->busy ? 0 :
		    (now - se->last_ms) / 1000)) != NULL;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* GET /v1/sessions: the calling tenant's sessions (only its own). */
static void
route_list(struct serve_sessions *ss, struct evhttp_request *req,
    size_t tenant)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray(), *one;
	const struct serve_session *se;
	int64_t now = time_mono_ms();
	bool ok = o != NULL && a != NULL && cJSON_AddItemToObject(o,
	    "sessions", a);

	if (!ok)
		cJSON_Delete(a);
	TAILQ_FOREACH(se, &ss->live, link) {
		if (!ok || se->tenant != tenant)
			continue;
		one = session_json(se, now);
		ok = one != NULL && cJSON_AddItemToArray(a, one);
		if (!ok)
			cJSON_Delete(one);
	}
	if (!ok) {
		cJSON_Delete(o);
		serve_reply_error(req, 500, "Internal Server Error",
		    "out of memory");
		return;
	}
	serve_reply_json(req, 200, "OK", o);
	cJSON_Delete(o);
}

/* A session of this tenant's that ended: 404 as any id not in the table,
 * with why it ended. */
static void
reply_gone(struct evhttp_request *req, const struct serve_session_gone *g)
{
	cJSON *o = cJSON_CreateObject();
	char msg[224];

	snprintf(msg, sizeof(msg), "no such session: it ended (%s)", g->why);
	if (o != NULL && (cJSON_AddStringToObject(o, "error", msg) == NULL ||
	    cJSON_AddBoolToObject(o, "ended", true) == NULL ||
	    cJSON_AddStringToObject(o, "reason", g->why) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	serve_reply_json(req, 404, "Not Found", o);
	cJSON_Delete(o);
}

void
serve_sessions_route(struct serve_sessions *ss, struct evhttp_request *req,
    size_t tenant, const char *path, const char *unavailable)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	char id[SERVE_SESSION_ID_LEN + 1];
	int kind = serve_session_path(path, id);
	struct serve_session *se = kind > 0 ? find(ss, id, tenant) : NULL;
	const struct serve_session_gone *g;

	if (kind > 0 && se == NULL && (g = gone_find(ss, id, tenant)) !=
	    NULL) {
		reply_gone(req, g);
		return;
	}
	if (kind < 0 || (kind > 0 && se == NULL)) {
		serve_reply_error(req, 404, "Not Found", kind < 0 ?
		    "no such endpoint" : "no such session");
		return;
	}
	if ((kind == 2 && m != EVHTTP_REQ_POST) || (kind == 0 &&
	    m != EVHTTP_REQ_POST && m != EVHTTP_REQ_GET) || (kind == 1 &&
	    m != EVHTTP_REQ_DELETE && m != EVHTTP_REQ_GET)) {
		serve_reply_error(req, 405, "Method Not Allowed",
		    "method not allowed");
		return;
	}
	/* Reading is allowed while paused or draining. */
	if (m == EVHTTP_REQ_GET) {
		cJSON *one;

		if (kind == 0) {
			route_list(ss, req, tenant);
			return;
		}
		if ((one = session_json(se, time_mono_ms())) == NULL) {
			serve_reply_error(req, 500, "Internal Server Error",
			    "out of memory");
			return;
		}
		serve_reply_json(req, 200, "OK", one);
		cJSON_Delete(one);
		return;
	}
	if (kind != 1 && unavailable != NULL) {
		serve_reply_error(req, 503, "Service Unavailable", unavailable);
		return;
	}
	if (kind == 0) {
		route_create(ss, req, tenant);
	} else if (kind == 2) {
		route_call(ss, req, se);
	} else {
		session_ask_end(ss, se, "DELETE");
		serve_reply(req, 200, "OK", "application/json",
		    "{\"ended\":true}\n", 15);
	}
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
		session_ask_end(ss, se, why);
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
			session_ask_end(ss, se, "max lifetime");
		else if (!se->busy && now - se->last_ms >= se->idle_s * 1000)
			session_ask_end(ss, se, "idle timeout");
		else if (!se->busy && runner_session_gone(se->rs, why,
		    sizeof(why)))
			session_ask_end(ss, se, why);
	}
}

int
serve_sessions_init(struct serve_sessions *ss)
{
	struct timeval one = { 1, 0 };

	TAILQ_INIT(&ss->live);
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
	return ss->threads > 0 || ss->sending > 0 || !TAILQ_EMPTY(&ss->live);
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
