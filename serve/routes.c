/*
 * The service's HTTP routes (internal.h): one table of method, path and
 * handler. On a request's head, before a byte of its body is read (issue
 * 39): the token (401 and close), the route (404, 405; the kill switch and
 * resume are for the host's operator and served on the unix socket only),
 * and for work that takes a body the refusals that need none: paused or
 * stopping (503), the tenant's refused requests over its rate, its unread
 * replies over serve.unsent_max, its limit and queue full (429), and a
 * declared size over serve.body_max (413). A body is then parsed on a
 * parse worker (work.h), never on the loop. /metrics and /v1/health over
 * TCP show the caller's own figures, or are refused (serve.stats_tcp).
 */
#include "serve/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "runner/pool.h"
#include "runner/runner.h"
#include "serve/conn.h"
#include "serve/probe_sched.h"
#include "serve/work.h"

typedef void (*route_fn)(struct serve_server *s, struct serve_conn *c,
    size_t tenant);

/* Retry-After: about one run's time, the mean latency so far, at least 1
 * s; or secs when larger. */
static void
add_retry_after(struct serve_server *s, struct serve_conn *c, int64_t secs)
{
	const struct serve_metrics *m = &s->metrics;
	int64_t mean = m->count > 0 && m->sum_s / (double)m->count > 1 ?
	    (int64_t)(m->sum_s / (double)m->count + 0.999) : 1;
	char retry[32];

	snprintf(retry, sizeof(retry), "%lld", (long long)(secs > mean ? secs :
	    mean));
	serve_conn_add_header(c, "Retry-After", retry);
}

/* Answers 429 for tenant, with a Retry-After of about one run's time. */
static void
reply_over_limit(struct serve_server *s, struct serve_conn *c, size_t tenant)
{
	const struct serve_tenant *t = &s->tenants.t[tenant];
	struct serve_metrics m;
	char err[512];

	SERVE_COUNT(&s->metrics, s->tmetrics, tenant, rejected);
	add_retry_after(s, c, 1);
	serve_queue_counts(&s->queue, tenant, &m);
	snprintf(err, sizeof(err), "tenant '%s' is over its limit (%lld "
	    "running, %lld queued)", t->name, (long long)m.active,
	    (long long)m.queue_depth);
	serve_reply_error(c, 429, err);
}

/* A run's body, parsed on a worker. */
struct run_parse {
	struct serve_task task;
	struct serve_server *s;
	struct serve_conn *c;
	size_t tenant;
	int64_t t0_ms;
	int rc;
	char err[512];
	struct jobs_req r;
};

static void
run_parse(struct serve_task *t)
{
	struct run_parse *p = (struct run_parse *)t;
	size_t len;
	const char *body = serve_conn_body(p->c, &len);

	p->rc = serve_req_parse(p->s->c, body, len, &p->r, p->err,
	    sizeof(p->err));
}

static void
run_parsed(struct serve_task *t)
{
	struct run_parse *p = (struct run_parse *)t;
	struct serve_server *s = p->s;
	struct serve_conn *c = p->c;
	size_t tenant = p->tenant;
	int rc = p->rc;
	char err[512];

	if (serve_conn_gone(c)) {
		serve_reply_error(c, 499, "gone");	/* frees it */
		goto out;
	}
	if (s->draining || s->paused) {
		SERVE_COUNT(&s->metrics, s->tmetrics, tenant, unavailable);
		serve_reply_error(c, 503, s->draining ? "the service is "
		    "shutting down" : "runs are stopped by kill-all; POST "
		    "/v1/resume to accept runs again");
		goto out;
	}
	if (rc < 0) {
		if (rc != -ENOMEM)
			SERVE_COUNT(&s->metrics, s->tmetrics, tenant,
			    bad_requests);
		serve_reply_error(c, rc == -EFBIG ? 413 : rc == -EINVAL ? 400 :
		    500, p->err);
		goto out;
	}
	if (!p->r.has_net)
		p->r.net = s->tenants.t[tenant].net;
	/* Before the run is queued: a refused run never reaches docker. */
	rc = serve_tenant_check(s->c, s->tenants.t[tenant].conf, p->r.net,
	    p->r.policy, err, sizeof(err));
	if (rc < 0) {
		if (rc == -EPERM)
			SERVE_COUNT(&s->metrics, s->tmetrics, tenant,
			    forbidden);
		else
			SERVE_COUNT(&s->metrics, s->tmetrics, tenant,
			    bad_requests);
		serve_reply_error(c, rc == -EPERM ? 403 : 400, err);
		goto out;
	}
	rc = serve_queue_submit(&s->queue, c, tenant, p->t0_ms, &p->r);
	if (rc == -EAGAIN)
		reply_over_limit(s, c, tenant);
	else if (rc < 0)
		serve_reply_error(c, 500, "out of memory");
out:
	jobs_req_cleanup(&p->r);
	free(p);
	s->queue.on_idle(s->queue.arg);	/* a stop may wait for it */
}

static void
route_run(struct serve_server *s, struct serve_conn *c, size_t tenant)
{
	struct run_parse *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		serve_reply_error(c, 500, "out of memory");
		return;
	}
	p->task.run = run_parse;
	p->task.done = run_parsed;
	p->s = s;
	p->c = c;
	p->tenant = tenant;
	p->t0_ms = time_mono_ms();
	serve_work_submit(s->work, &p->task);
}

/* The figures of pool i (runner_pools_at) into *st, its language and
 * profile; false when none is kept. */
static bool
pool_stats_at(struct serve_server *s, int i, struct runner_pool_stats *st,
    const char **lang, const char **profile)
{
	struct runner_pool *p = runner_pools_at(s->pools, i, lang, profile);

	if (p == NULL)
		return false;
	runner_pool_stats(p, st);
	return true;
}

/* Idle warm containers of every pool (all modes); st, python's figures,
 * may be NULL. */
static int64_t
pool_idle(struct serve_server *s, struct runner_pool_stats *st)
{
	struct runner_pool_stats local;
	int64_t n = 0;

	if (st == NULL)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (s->pool != NULL)
		runner_pool_stats(s->pool, st);
	for (int i = 0; i < RUNNER_POOLS_MAX; i++) {
		struct runner_pool_stats ls;

		if (pool_stats_at(s, i, &ls, NULL, NULL))
			n += ls.idle[0] + ls.idle[1];
	}
	return n;
}

/* One pool's figures in /v1/health, as o[key] (with its profile, when
 * not NULL). */
static bool
add_pool_figures(cJSON *o, const char *key, bool enabled, const char *profile,
    const struct runner_pool_stats *st)
{
	cJSON *p, *d;

	return (p = cJSON_AddObjectToObject(o, key)) != NULL &&
	    cJSON_AddBoolToObject(p, "enabled", enabled) != NULL &&
	    (profile == NULL || cJSON_AddStringToObject(p, "profile",
	    profile) != NULL) &&
	    cJSON_AddNumberToObject(p, "none", (double)st->idle[0]) != NULL &&
	    cJSON_AddNumberToObject(p, "proxy", (double)st->idle[1]) != NULL &&
	    cJSON_AddNumberToObject(p, "starting", (double)st->starting) !=
	    NULL && cJSON_AddNumberToObject(p, "starts_max",
	    (double)st->max_starts) != NULL && cJSON_AddNumberToObject(p,
	    "cold", (double)st->cold) != NULL &&
	    cJSON_AddNumberToObject(p, "hits", (double)st->hits) != NULL &&
	    cJSON_AddNumberToObject(p, "misses", (double)st->misses) != NULL &&
	    cJSON_AddNumberToObject(p, "started",
	    (double)st->started) != NULL && cJSON_AddNumberToObject(p, "retired",
	    (double)st->retired) != NULL && cJSON_AddNumberToObject(p, "failed",
	    (double)st->failed) != NULL && cJSON_AddNumberToObject(p,
	    "removing", (double)st->removing) != NULL &&
	    cJSON_AddNumberToObject(p, "remove_ms_last",
	    (double)st->remove_ms_last) != NULL &&
	    json_add_bytes(p, "last_error", st->last_error,
	    strlen(st->last_error)) == 0 &&
	    (d = cJSON_AddObjectToObject(p, "dormant")) != NULL &&
	    cJSON_AddBoolToObject(d, "none", st->dormant[0]) != NULL &&
	    cJSON_AddBoolToObject(d, "proxy", st->dormant[1]) != NULL &&
	    cJSON_AddNumberToObject(p, "shrinks", (double)st->shrinks) != NULL;
}

/* /v1/health's "pool" (python's, from st, as before pools had
 * languages) and "pools": each kept pool by its language, or LANG@PROFILE
 * for one kept in another profile than its language's (pool_profiles). */
static bool
add_pool(struct serve_server *s, cJSON *o,
    const struct runner_pool_stats *st)
{
	cJSON *all;

	if (!add_pool_figures(o, "pool", s->pool != NULL, NULL, st) ||
	    (all = cJSON_AddObjectToObject(o, "pools")) == NULL)
		return false;
	for (int i = 0; i < RUNNER_POOLS_MAX; i++) {
		struct runner_pool_stats ls;
		const char *lang, *profile;
		char key[80];

		if (!pool_stats_at(s, i, &ls, &lang, &profile))
			continue;
		if (i < RUNNER_POOLS_LANGS)
			snprintf(key, sizeof(key), "%s", lang);
		else
			snprintf(key, sizeof(key), "%s@%s", lang, profile);
		if (!add_pool_figures(all, key, true, profile, &ls))
			return false;
	}
	return true;
}

/* The service's figures (unix socket), or over TCP only the caller's own
 * (issue 39): its active and queued work and its sessions, no pool. */
static void
route_health(struct serve_server *s, struct serve_conn *c, size_t tenant)
{
	const struct serve_tenant *t = &s->tenants.t[tenant];
	bool own = serve_conn_tcp(c);
	struct runner_pool_stats st;
	struct serve_metrics m;
	int64_t idle = own ? 0 : pool_idle(s, &st);
	cJSON *o = cJSON_CreateObject();
	bool ok;

	serve_queue_counts(&s->queue, own ? tenant : SIZE_MAX, &m);
	ok = o != NULL && (own || add_pool(s, o, &st)) &&
	    cJSON_AddStringToObject(o, "status", s->draining ? "draining" :
	    s->paused ? "paused" : "ok") != NULL &&
	    cJSON_AddNumberToObject(o, "active", (double)m.active) != NULL &&
	    cJSON_AddNumberToObject(o, "queued", (double)m.queue_depth) !=
	    NULL &&
	    (own ? cJSON_AddNumberToObject(o, "sessions",
	    (double)serve_sessions_count(&s->sessions, tenant)) != NULL &&
	    cJSON_AddStringToObject(o, "tenant", t->name) != NULL :
	    cJSON_AddNumberToObject(o, "pool_size", (double)idle) != NULL) &&
	    cJSON_AddStringToObject(o, "probe_none", serve_prober_note(s->prober,
	    RUNNER_NET_NONE)) != NULL &&
	    cJSON_AddStringToObject(o, "probe_proxy", serve_prober_note(s->prober,
	    RUNNER_NET_PROXY)) != NULL &&
	    cJSON_AddStringToObject(o, "version", CORDON_VERSION) != NULL;

	if (!ok) {
		cJSON_Delete(o);
		o = NULL;
	}
	serve_reply_json(c, 200, o);
	cJSON_Delete(o);
}

/* The service's connection figures into m. */
static void
add_conns(struct serve_server *s, struct serve_metrics *m)
{
	struct serve_accept_stats st;

	serve_accept_stats(s->acc, &st);
	m->conns_unix = st.conns[0];
	m->conns_tcp = st.conns[1];
	m->conns_refused_peer = st.refused_peer;
	m->listener_full = st.full - st.evicted;
	m->evicted = st.evicted;
	m->accept_errors = st.accept_errors;
	m->unsent_bytes = 0;
	for (size_t i = 0; i < s->tenants.n; i++)
		m->unsent_bytes += s->tenants.t[i].unsent;
}

/* Each kept pool's figures for /metrics. */
static void
pool_figures(struct serve_server *s, struct serve_metrics *m)
{
	for (int i = 0; i < RUNNER_POOLS_MAX; i++) {
		struct serve_pool_figures *f = &m->pools[i];
		struct runner_pool_stats st;
		const char *lang = NULL, *profile = NULL;
		bool kept = pool_stats_at(s, i, &st, &lang, &profile);

		*f = (struct serve_pool_figures){ .lang = lang,
		    .profile = profile, .kept = kept };
		if (!f->kept)
			continue;
		for (int k = 0; k < 2; k++) {
			f->idle[k] = st.idle[k];
			f->dormant[k] = st.dormant[k];
		}
		f->starting = st.starting;
		f->hits = st.hits;
		f->misses = st.misses;
		f->shrinks = st.shrinks;
	}
}

static void
route_metrics(struct serve_server *s, struct serve_conn *c, size_t tenant)
{
	struct serve_metrics own;
	const struct serve_tenant *t = &s->tenants.t[tenant];
	char *text;

	if (serve_conn_tcp(c)) {
		/* The caller's own figures only (issue 39). */
		own = s->tmetrics[tenant];
		own.own = true;
		serve_queue_counts(&s->queue, tenant, &own);
		own.unsent_bytes = t->unsent;
		own.sessions_live = serve_sessions_count(&s->sessions, tenant);
		text = serve_metrics_render(&own);
	} else {
		serve_queue_counts(&s->queue, SIZE_MAX, &s->metrics);
		s->metrics.pool_size = pool_idle(s, NULL);
		pool_figures(s, &s->metrics);
		serve_sessions_metrics(&s->sessions, &s->metrics);
		add_conns(s, &s->metrics);
		text = serve_metrics_render(&s->metrics);
	}
	if (text == NULL) {
		/* Out of memory, or a metric the renderer refused (a label
		 * without its value: a bug of ours, said as such). */
		serve_reply_error(c, 500, "the metrics could not be rendered "
		    "(out of memory, or a malformed metric: see the log)");
		log_warnx("GET /metrics: the metrics could not be rendered");
		return;
	}
	serve_conn_reply_take(c, 200, "text/plain; version=0.0.4", text,
	    strlen(text));
}

/* Stops accepting runs, cancels running ones (they report closed_early),
 * answers queued ones, and removes every Cordon container from a thread;
 * runs that were still starting are cancelled again when it is done. */
static void
route_kill_all(struct serve_server *s, struct serve_conn *c, size_t tenant)
{
	struct serve_metrics m;

	(void)tenant;
	serve_queue_counts(&s->queue, SIZE_MAX, &m);
	log_info("kill-all: cancelling %lld running run(s), refusing %lld "
	    "queued, pool paused", (long long)m.active,
	    (long long)m.queue_depth);
	s->paused = true;
	serve_sessions_end_all(&s->sessions, "kill-all");
	/* Before the sweep, so that no new warm container appears. */
	runner_pools_pause(s->pools, true);
	serve_queue_kill_all(&s->queue, c);
}

static void
route_resume(struct serve_server *s, struct serve_conn *c, size_t tenant)
{
	(void)tenant;
	log_info("resume: accepting runs again%s", s->pools != NULL ?
	    ", pool refilling" : "");
	s->paused = false;
	runner_pools_pause(s->pools, false);
	/* kill-all may have removed a probe's container: a probe that
	 * failed so is redone now, not in minutes. */
	if (strncmp(serve_prober_note(s->prober, RUNNER_NET_NONE), "fail",
	    4) == 0)
		serve_prober_kick(s->prober);
	serve_reply(c, 200, "application/json", "{\"paused\":false}\n", 17);
}

enum route_flags {
	R_LOCAL = 1,		/* unix socket only (403 on TCP) */
	R_BODY = 2,		/* work with a body: read and parse it */
	R_STATS = 4,		/* serve.stats_tcp "local": 403 on TCP */
};

static const struct route {
	enum serve_http_method method;
	const char *path;
	int flags;
	route_fn fn;
} routes[] = {
	{ SERVE_HTTP_POST, "/v1/runs", R_BODY, route_run },
	{ SERVE_HTTP_GET, "/v1/health", R_STATS, route_health },
	{ SERVE_HTTP_GET, "/metrics", R_STATS, route_metrics },
	{ SERVE_HTTP_POST, "/v1/kill-all", R_LOCAL, route_kill_all },
	{ SERVE_HTTP_POST, "/v1/resume", R_LOCAL, route_resume },
};

#define ROUTE_SESSIONS 0xff	/* the note's route for sessions */

/* Before a body is read: the refusals of work that needs none (issue 39).
 * True when it may be read. */
static bool
body_admissible(struct serve_server *s, struct serve_conn *c, size_t tenant)
{
	struct serve_tenant *t = &s->tenants.t[tenant];
	const struct config_serve *cs = &s->c->serve;
	int64_t wait = serve_tenants_refusal_wait(&s->tenants, tenant,
	    time_mono_ms(), cs->refusals_per_min);
	char err[512];

	if (wait > 0) {
		SERVE_COUNT(&s->metrics, s->tmetrics, tenant, rejected);
		add_retry_after(s, c, wait);
		snprintf(err, sizeof(err), "tenant '%s' had too many requests "
		    "refused (serve.refusals_per_min %lld); retry in %lld s",
		    t->name, (long long)cs->refusals_per_min, (long long)wait);
		serve_reply_error(c, 429, err);
		return false;
	}
	if ((uint64_t)(t->unsent > 0 ? t->unsent : 0) > cs->unsent_max_bytes) {
		SERVE_COUNT(&s->metrics, s->tmetrics, tenant, rejected);
		add_retry_after(s, c, (cs->write_timeout_s + 1));
		snprintf(err, sizeof(err), "tenant '%s' has %lld bytes of "
		    "replies its clients have not read (serve.unsent_max "
		    "%llu): read them first", t->name, (long long)t->unsent,
		    (unsigned long long)cs->unsent_max_bytes);
		serve_reply_error(c, 429, err);
		return false;
	}
	if (jobs_admit_would_reject(s->adm, tenant)) {
		reply_over_limit(s, c, tenant);
		return false;
	}
	if (serve_conn_length(c) > cs->body_max_bytes) {
		SERVE_COUNT(&s->metrics, s->tmetrics, tenant, bad_requests);
		snprintf(err, sizeof(err), "the body is over %llu bytes",
		    (unsigned long long)cs->body_max_bytes);
		serve_reply_error(c, 413, err);
		return false;
	}
	return true;
}

static const char *
unavailable(const struct serve_server *s)
{
	return s->draining ? "the service is shutting down" : s->paused ?
	    "stopped by kill-all; POST /v1/resume first" : NULL;
}

bool
serve_routes_head(struct serve_conn *c, void *arg)
{
	struct serve_server *s = arg;
	const char *path = serve_conn_path(c);
	size_t count = 0;
	const char *authz = serve_conn_header(c, "Authorization", &count);
	bool tcp = serve_conn_tcp(c);
	int tenant = count > 1 ? -EACCES : serve_tenants_lookup(&s->tenants,
	    authz, tcp);
	const struct route *r = NULL;
	size_t ri;

	if (tenant < 0) {
		/* Before any body (issue 39): answered, then closed. */
		s->metrics.bad_requests++;
		serve_conn_add_header(c, "WWW-Authenticate", "Bearer");
		serve_reply_error(c, 401, "a valid bearer token is required");
		return false;
	}
	serve_reply_note(c, s, (size_t)tenant);
	/* What its replies hold that its clients have not read yet. */
	serve_conn_account(c, &s->tenants.t[tenant].unsent);
	if (serve_conn_method(c) == SERVE_HTTP_OTHER) {
		SERVE_COUNT(&s->metrics, s->tmetrics, tenant, bad_requests);
		serve_reply_error(c, 501, "method not implemented");
		return false;
	}
	if (strncmp(path, "/v1/sessions", 12) == 0) {
		if (!serve_sessions_head(&s->sessions, c, (size_t)tenant, path,
		    unavailable(s)))
			return false;
		ri = ROUTE_SESSIONS;
	} else {
		for (ri = 0; ri < sizeof(routes) / sizeof(routes[0]); ri++)
			if (strcmp(path, routes[ri].path) == 0)
				break;
		if (ri == sizeof(routes) / sizeof(routes[0])) {
			SERVE_COUNT(&s->metrics, s->tmetrics, tenant,
			    bad_requests);
			serve_reply_error(c, 404, "no such endpoint");
			return false;
		}
		r = &routes[ri];
		if (serve_conn_method(c) != r->method) {
			SERVE_COUNT(&s->metrics, s->tmetrics, tenant,
			    bad_requests);
			serve_reply_error(c, 405, "method not allowed");
			return false;
		}
		if ((r->flags & R_LOCAL) && tcp) {
			/* The switch is for the host's operator. */
			serve_reply_error(c, 403, "kill-all and resume are only "
			    "served on the unix socket");
			return false;
		}
		if ((r->flags & R_STATS) && tcp &&
		    strcmp(s->c->serve.stats_tcp, "local") == 0) {
			serve_reply_error(c, 403, "health and metrics are only "
			    "served on the unix socket (serve.stats_tcp)");
			return false;
		}
		if (r->fn == route_run && (s->draining || s->paused)) {
			SERVE_COUNT(&s->metrics, s->tmetrics, tenant,
			    unavailable);
			serve_reply_error(c, 503, s->draining ? "the service "
			    "is shutting down" : "runs are stopped by "
			    "kill-all; POST /v1/resume to accept runs again");
			return false;
		}
		if (!(r->flags & R_BODY)) {
			r->fn(s, c, (size_t)tenant);
			return false;
		}
	}
	if (!body_admissible(s, c, (size_t)tenant))
		return false;
	/* The route too, for serve_routes_request (internal.h). */
	serve_conn_set_note(c, s, (size_t)tenant | ri << 16);
	return true;
}

void
serve_routes_request(struct serve_conn *c, void *arg)
{
	struct serve_server *s = arg;
	size_t n, tenant, ri;

	(void)serve_conn_note(c, &n);
	tenant = n & 0xffff;
	ri = n >> 16;
	if (ri == ROUTE_SESSIONS)
		serve_sessions_request(&s->sessions, c, tenant,
		    serve_conn_path(c));
	else
		routes[ri].fn(s, c, tenant);
}
