/*
 * The routes under /v1/sessions (sessions.h): on the head, what needs no
 * body (GET, DELETE, 404, 405, 409, the session limit, 503 while paused);
 * a create's or a call's body parsed on a parse worker (work.h: issue 39),
 * then, back on the loop, the checks that read the service's state and
 * the hand-over to sessions.c.
 */
#include "serve/sessions_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "runner/session.h"
#include "serve/conn.h"
#include "serve/internal.h"
#include "serve/work.h"

/* A create's, a call's or a policy change's body, parsed on a worker. */
struct parse {
	struct serve_task task;
	struct serve_sessions *ss;
	struct serve_conn *c;
	size_t tenant;
	bool create;
	bool patch;			/* PATCH: a live policy change */
	char policy[CONFIG_POLICY_MAX + 1];	/* patch */
	char id[SERVE_SESSION_ID_LEN + 1];	/* a call's session */
	int code;			/* 0, or the status to answer */
	char err[512];
	struct serve_session_opts o;	/* create */
	struct stage_file *files;
	size_t nfiles;
	int files_rc;
	char files_err[512];
	struct jobs_req call;		/* call */
};

/* What a call takes besides code, timeout_s, max_output and keep: a 400
 * naming it (issue 39: language and profile were silently ignored). */
static int
call_check(const struct jobs_req *r, char *err, size_t errlen)
{
	if (r->has_net || r->policy[0] != '\0' || r->nfiles > 0) {
		snprintf(err, errlen, "a session's call takes code, timeout_s, "
		    "max_output and keep only (net and policy belong to the "
		    "session; files are not supported)");
		return 400;
	}
	if (r->lang_key != NULL) {
		snprintf(err, errlen, "'%s' does not apply to a session's call "
		    "(a session runs Python)", r->lang_key);
		return 400;
	}
	if (r->profile[0] != '\0') {
		snprintf(err, errlen, "'profile' does not apply to a session's "
		    "call (a session's profile is set when it is created)");
		return 400;
	}
	return 0;
}

static void
parse_run(struct serve_task *t)
{
	struct parse *p = (struct parse *)t;
	const struct config *c = p->ss->c;
	size_t len;
	const char *body = serve_conn_body(p->c, &len);
	int rc;

	if (p->patch) {
		p->code = (len > 0 && serve_body_scan(c, body, len, p->err,
		    sizeof(p->err)) < 0) || serve_session_patch_parse(body, len,
		    p->policy, sizeof(p->policy), p->err, sizeof(p->err)) < 0 ?
		    400 : 0;
		return;
	}
	if (!p->create) {
		rc = serve_req_parse(c, body, len, &p->call, p->err,
		    sizeof(p->err));
		p->code = rc == -EFBIG ? 413 : rc == -EINVAL ? 400 : rc < 0 ?
		    500 : call_check(&p->call, p->err, sizeof(p->err));
		return;
	}
	if ((len > 0 && serve_body_scan(c, body, len, p->err,
	    sizeof(p->err)) < 0) || serve_session_opts_parse(body, len, &p->o,
	    p->err, sizeof(p->err)) < 0) {
		p->code = 400;
		return;
	}
	/* Checked here (pure, the config's caps); answered after the
	 * tenant's checks, as before. */
	if (p->o.files != NULL)
		p->files_rc = stage_files_parse(c, p->o.files,
		    STAGE_CONTENT_BASE64, &p->files, &p->nfiles, p->files_err,
		    sizeof(p->files_err));
	cJSON_Delete(p->o.files);
	p->o.files = NULL;
}

/* What may refuse a new session before anything starts: the tenant's
 * nets and policies, the profile, the tenant's session limit. 0, or the
 * HTTP status with a message in err. */
static int
create_check(struct serve_sessions *ss, size_t tenant,
    struct serve_session_opts *o, char *err, size_t errlen)
{
	const struct serve_tenant *t = &ss->tenants->t[tenant];
	const struct config_profile *prof;
	int64_t n = serve_sessions_count(ss, tenant);
	int rc;

	if (!o->has_net)
		o->net = t->net;
	if ((rc = serve_tenant_check(ss->c, t->conf, o->net, o->policy, err,
	    errlen)) < 0)
		return rc == -EPERM ? 403 : 400;
	if (config_profile_pick(ss->c, o->profile[0] != '\0' ? o->profile :
	    NULL, "python", &prof, err, errlen) < 0)
		return 400;
	if (n >= ss->c->serve.sessions_per_tenant) {
		snprintf(err, errlen, "tenant '%s' has %lld session(s), its "
		    "limit (serve.sessions_per_tenant); end one first",
		    t->name, (long long)n);
		return 429;
	}
	return 0;
}

/* A session of this tenant's that ended: 404 as any id not in the table,
 * with why it ended (made valid UTF-8, as every error: a reason may quote
 * docker's stderr). */
static void
reply_gone(struct serve_conn *c, const char *why)
{
	cJSON *o = cJSON_CreateObject();
	char msg[224];

	snprintf(msg, sizeof(msg), "no such session: it ended (%s)", why);
	if (o != NULL && (json_add_bytes(o, "error", msg, strlen(msg)) < 0 ||
	    cJSON_AddBoolToObject(o, "ended", true) == NULL ||
	    json_add_bytes(o, "reason", why, strlen(why)) < 0)) {
		cJSON_Delete(o);
		o = NULL;
	}
	serve_reply_json(c, 404, o);
	cJSON_Delete(o);
}

/* 404 for tenant's session id that is not in the table: with why when it
 * ended lately. */
static void
reply_no_session(struct serve_sessions *ss, struct serve_conn *c,
    const char *id, size_t tenant)
{
	char why[JOBS_SESSION_WHY_MAX];

	if (jobs_sessions_gone(ss->table, tenant, id, why, sizeof(why)))
		reply_gone(c, why);
	else
		serve_reply_error(c, 404, "no such session");
}

static void
parse_free(struct parse *p)
{
	serve_session_opts_cleanup(&p->o);
	stage_files_free(p->files, p->nfiles);
	jobs_req_cleanup(&p->call);
	free(p);
}

/* A policy change on a worker: the control socket round trip. */
struct repolicy {
	struct serve_task task;
	struct serve_sessions *ss;
	struct serve_conn *c;
	struct serve_session *se;	/* busy until done */
	char policy[CONFIG_POLICY_MAX + 1];
	char was[CONFIG_POLICY_MAX + 1];
	cJSON *answer;
	int rc;
	char err[512];
};

static void
repolicy_run(struct serve_task *t)
{
	struct repolicy *x = (struct repolicy *)t;

	x->rc = runner_session_policy_change(SE_RS(x->se), x->policy,
	    &x->answer, x->err, sizeof(x->err));
}

static void
repolicy_done(struct serve_task *t)
{
	struct repolicy *x = (struct repolicy *)t;
	struct serve_session *se = x->se;
	const cJSON *closed = cJSON_GetObjectItemCaseSensitive(x->answer,
	    "closed");
	cJSON *o = NULL;

	if (x->rc == 0) {
		runner_session_policy_set(SE_RS(se), x->policy);
		util_strlcpy(se->policy, x->policy, sizeof(se->policy));
		log_info("session %s: egress policy %s -> %s, %d connection(s) "
		    "closed", SE_ID(se), x->was, x->policy,
		    cJSON_GetArraySize(closed));
	}
	if (serve_conn_gone(x->c)) {
		serve_reply_error(x->c, 499, "gone");
	} else if (x->rc < 0) {
		/* The proxy's refusal (an unknown policy) is the request's
		 * fault; anything else is the service's. */
		serve_reply_error(x->c, x->rc == -EREMOTEIO ? 400 : 502, x->err);
	} else if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "id", SE_ID(se)) == NULL ||
	    cJSON_AddStringToObject(o, "policy", x->policy) == NULL ||
	    cJSON_AddStringToObject(o, "was", x->was) == NULL ||
	    !cJSON_AddItemToObject(o, "closed", closed != NULL ?
	    cJSON_Duplicate(closed, 1) : cJSON_CreateArray())) {
		serve_reply_error(x->c, 500, "out of memory");
	} else {
		serve_reply_json(x->c, 200, o);
	}
	cJSON_Delete(o);
	cJSON_Delete(x->answer);
	serve_sessions_release(x->ss, se, "asked during a policy change");
	x->ss->on_idle(x->ss->arg);
	free(x);
}

/* A checked PATCH for se (idle, net proxy): the tenant may use policy;
 * then the change on a worker, se busy meanwhile. */
static void
patch_start(struct parse *p, struct serve_session *se)
{
	const struct serve_tenant *t = &p->ss->tenants->t[p->tenant];
	struct repolicy *x;
	int rc;

	if ((rc = serve_tenant_check(p->ss->c, t->conf, RUNNER_NET_PROXY,
	    p->policy, p->err, sizeof(p->err))) < 0) {
		serve_reply_error(p->c, rc == -EPERM ? 403 : 400, p->err);
		return;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		serve_reply_error(p->c, 500, "out of memory");
		return;
	}
	/* Idle (parse_done checked it, on this thread): busy now. */
	if (serve_sessions_hold(se) < 0) {
		free(x);
		serve_reply_error(p->c, 409, "a call is running in this "
		    "session: change its policy between calls");
		return;
	}
	x->task.run = repolicy_run;
	x->task.done = repolicy_done;
	x->ss = p->ss;
	x->c = p->c;
	x->se = se;
	util_strlcpy(x->policy, p->policy, sizeof(x->policy));
	util_strlcpy(x->was, runner_session_policy(SE_RS(se)),
	    sizeof(x->was));
	serve_work_submit(p->ss->work, &x->task);
}

static void
parse_done(struct serve_task *t)
{
	struct parse *p = (struct parse *)t;
	struct serve_sessions *ss = p->ss;
	struct serve_session *se;
	int code = p->code;

	if (serve_conn_gone(p->c)) {
		serve_reply_error(p->c, 499, "gone");	/* frees it */
	} else if (code != 0) {
		serve_reply_error(p->c, code, p->err);
	} else if (p->create) {
		if ((code = create_check(ss, p->tenant, &p->o, p->err,
		    sizeof(p->err))) == 0 && p->files_rc < 0) {
			code = p->files_rc == -EFBIG ? 413 :
			    p->files_rc == -ENOMEM ? 500 : 400;
			util_strlcpy(p->err, p->files_err, sizeof(p->err));
		}
		if (code != 0) {
			serve_reply_error(p->c, code, p->err);
		} else {
			serve_sessions_create(ss, p->c, p->tenant, &p->o,
			    p->files, p->nfiles);
			p->files = NULL;
			p->nfiles = 0;
		}
	} else if ((se = serve_sessions_find(ss, p->id, p->tenant)) == NULL) {
		/* It ended while its call's body was read or parsed. */
		reply_no_session(ss, p->c, p->id, p->tenant);
	} else if (se->e->state != JOBS_SESSION_IDLE) {
		serve_reply_error(p->c, 409, se->e->state ==
		    JOBS_SESSION_STARTING ? "the session is still starting" :
		    "a call is already running in this session (calls are not "
		    "queued: wait for its reply)");
	} else if (p->patch) {
		patch_start(p, se);
	} else {
		serve_sessions_call(ss, p->c, se, &p->call);
	}
	parse_free(p);
	ss->on_idle(ss->arg);	/* a stop may wait for it */
}

void
serve_sessions_request(struct serve_sessions *ss, struct serve_conn *c,
    size_t tenant, const char *path)
{
	struct parse *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		serve_reply_error(c, 500, "out of memory");
		return;
	}
	p->task.run = parse_run;
	p->task.done = parse_done;
	p->ss = ss;
	p->c = c;
	p->tenant = tenant;
	p->create = serve_session_path(path, p->id) == 0;
	p->patch = serve_conn_method(c) == SERVE_HTTP_PATCH;
	serve_work_submit(ss->work, &p->task);
}

/* One session as GET shows it: its settings and state, never its nonce,
 * token or output. */
static cJSON *
session_json(const struct jobs_session *e, int64_t now)
{
	const struct serve_session *se = e->priv;
	cJSON *o = cJSON_CreateObject();
	const char *state = e->state == JOBS_SESSION_STARTING ? "starting" :
	    e->state == JOBS_SESSION_BUSY ? "busy" : "idle";
	bool ok;

	if (o == NULL)
		return NULL;
	ok = cJSON_AddStringToObject(o, "id", e->name) != NULL &&
	    cJSON_AddStringToObject(o, "state", state) != NULL &&
	    cJSON_AddStringToObject(o, "net", runner_net_name(se->net)) !=
	    NULL &&
	    cJSON_AddNumberToObject(o, "idle_timeout_s",
	    (double)e->idle_s) != NULL && cJSON_AddNumberToObject(o,
	    "max_lifetime_s", (double)e->life_s) != NULL;
	if (ok && e->rs != NULL)
		ok = cJSON_AddStringToObject(o, "container",
		    runner_session_container(e->rs)) != NULL &&
		    cJSON_AddStringToObject(o, "profile",
		    runner_session_profile(e->rs)) != NULL &&
		    (se->net != RUNNER_NET_PROXY || cJSON_AddStringToObject(o,
		    "policy", runner_session_policy(e->rs)) != NULL) &&
		    cJSON_AddNumberToObject(o, "age_s", (double)((now -
		    e->created_ms) / 1000)) != NULL &&
		    cJSON_AddNumberToObject(o, "idle_s", (double)(e->state ==
		    JOBS_SESSION_BUSY ? 0 : (now - e->last_ms) / 1000)) != NULL;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

struct listing {
	cJSON *a;
	bool ok;
};

static void
list_one(const struct jobs_session *e, int64_t now, void *arg)
{
	struct listing *l = arg;
	cJSON *one;

	if (!l->ok)
		return;
	one = session_json(e, now);
	l->ok = one != NULL && cJSON_AddItemToArray(l->a, one);
	if (!l->ok)
		cJSON_Delete(one);
}

/* GET /v1/sessions: the calling tenant's sessions (only its own). */
static void
route_list(struct serve_sessions *ss, struct serve_conn *c, size_t tenant)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
	struct listing l = { .a = a, .ok = o != NULL && a != NULL &&
	    cJSON_AddItemToObject(o, "sessions", a) };

	if (!l.ok)
		cJSON_Delete(a);
	jobs_sessions_each(ss->table, tenant, list_one, &l);
	if (!l.ok) {
		cJSON_Delete(o);
		serve_reply_error(c, 500, "out of memory");
		return;
	}
	serve_reply_json(c, 200, o);
	cJSON_Delete(o);
}

bool
serve_sessions_head(struct serve_sessions *ss, struct serve_conn *c,
    size_t tenant, const char *path, const char *unavailable)
{
	enum serve_http_method m = serve_conn_method(c);
	char id[SERVE_SESSION_ID_LEN + 1], err[256];
	int kind = serve_session_path(path, id);
	struct serve_session *se = kind > 0 ? serve_sessions_find(ss, id,
	    tenant) : NULL;
	cJSON *one;

	if (kind < 0) {
		serve_reply_error(c, 404, "no such endpoint");
		return false;
	}
	if (kind > 0 && se == NULL) {
		reply_no_session(ss, c, id, tenant);
		return false;
	}
	if ((kind == 2 && m != SERVE_HTTP_POST) || (kind == 0 &&
	    m != SERVE_HTTP_POST && m != SERVE_HTTP_GET) || (kind == 1 &&
	    m != SERVE_HTTP_DELETE && m != SERVE_HTTP_GET &&
	    m != SERVE_HTTP_PATCH)) {
		serve_reply_error(c, 405, "method not allowed");
		return false;
	}
	/* Reading is allowed while paused or draining. */
	if (m == SERVE_HTTP_GET) {
		if (kind == 0) {
			route_list(ss, c, tenant);
		} else if ((one = session_json(se->e, time_mono_ms())) ==
		    NULL) {
			serve_reply_error(c, 500, "out of memory");
		} else {
			serve_reply_json(c, 200, one);
			cJSON_Delete(one);
		}
		return false;
	}
	if (kind != 1 && unavailable != NULL) {
		serve_reply_error(c, 503, unavailable);
		return false;
	}
	if (kind == 1 && m == SERVE_HTTP_PATCH) {
		/* A live policy change: its body is read next. */
		if (se->net != RUNNER_NET_PROXY) {
			serve_reply_error(c, 400, "the session's net is "
			    "\"none\": it has no egress policy to change");
			return false;
		}
		if (se->e->state != JOBS_SESSION_IDLE) {
			serve_reply_error(c, 409, se->e->state ==
			    JOBS_SESSION_STARTING ? "the session is still "
			    "starting" : "a call is running in this session: "
			    "change its policy between calls");
			return false;
		}
		return true;
	}
	if (kind == 1) {
		serve_sessions_ask_end(ss, se, "DELETE");
		serve_reply(c, 200, "application/json", "{\"ended\":true}\n",
		    15);
		return false;
	}
	if (kind == 2 && se->e->state != JOBS_SESSION_IDLE) {
		serve_reply_error(c, 409, se->e->state ==
		    JOBS_SESSION_STARTING ? "the session is still starting" :
		    "a call is already running in this session (calls are not "
		    "queued: wait for its reply)");
		return false;
	}
	if (kind == 0 && serve_sessions_count(ss, tenant) >=
	    ss->c->serve.sessions_per_tenant) {
		snprintf(err, sizeof(err), "tenant '%s' has %lld session(s), "
		    "its limit (serve.sessions_per_tenant); end one first",
		    ss->tenants->t[tenant].name,
		    (long long)serve_sessions_count(ss, tenant));
		serve_reply_error(c, 429, err);
		return false;
	}
	return true;
}
