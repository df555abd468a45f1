/*
 * The service's HTTP routes (internal.h): one table of method, path and
 * handler, looked up after the caller's tenant is known. A known path with
 * another method is 405, an unknown path 404; the kill switch and resume
 * are for the host's operator and served on the unix socket only.
 */
#include "serve/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "runner/pool.h"
#include "runner/runner.h"
#include "serve/probe_sched.h"

typedef void (*route_fn)(struct serve_server *s, struct evhttp_request *req,
    size_t tenant);

/* Answers 429 for tenant, with a Retry-After of about one run's time: the
 * mean latency so far, at least 1 s. */
static void
reply_over_limit(struct serve_server *s, struct evhttp_request *req,
    size_t tenant)
{
	const struct serve_metrics *m = &s->metrics;
	const struct serve_tenant *t = &s->tenants.t[tenant];
	char retry[32], err[512];

	s->metrics.rejected++;
	snprintf(retry, sizeof(retry), "%lld", m->count > 0 &&
	    m->sum_s / (double)m->count > 1 ?
	    (long long)(m->sum_s / (double)m->count + 0.999) : 1LL);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Retry-After", retry);
	snprintf(err, sizeof(err), "tenant '%s' is over its limit (%lld "
	    "running, %lld queued)", t->name, (long long)t->active,
	    (long long)t->queued);
	serve_reply_error(req, 429, "Too Many Requests", err);
}

static void
route_run(struct serve_server *s, struct evhttp_request *req, size_t tenant)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *body = len > 0 ? (const char *)evbuffer_pullup(in, -1) : "";
	int64_t t0_ms = time_mono_ms();
	struct serve_req r;
	char err[512] = "";
	int rc;

	if (s->draining || s->paused) {
		s->metrics.unavailable++;
		serve_reply_error(req, 503, "Service Unavailable", s->draining ?
		    "the service is shutting down" : "runs are stopped by "
		    "kill-all; POST /v1/resume to accept runs again");
		return;
	}
	if (body == NULL) {
		serve_reply_error(req, 500, "Internal Server Error",
		    "out of memory");
		return;
	}
	rc = serve_req_parse(s->c, body, len, &r, err, sizeof(err));
	if (rc < 0) {
		s->metrics.bad_requests += rc != -ENOMEM;
		serve_reply_error(req, rc == -EFBIG ? 413 : rc == -EINVAL ?
		    400 : 500, rc == -EFBIG ? "Payload Too Large" :
		    rc == -EINVAL ? "Bad Request" : "Internal Server Error",
		    err);
		return;
	}
	if (!r.has_net)
		r.net = s->tenants.t[tenant].net;
	/* Before the run is queued: a refused run never reaches docker. */
	rc = serve_tenant_check(s->c, s->tenants.t[tenant].conf, r.net,
	    r.policy, err, sizeof(err));
	if (rc < 0) {
		if (rc == -EPERM)
			s->metrics.forbidden++;
		else
			s->metrics.bad_requests++;
		serve_reply_error(req, rc == -EPERM ? 403 : 400, rc == -EPERM ?
		    "Forbidden" : "Bad Request", err);
		serve_req_cleanup(&r);
		return;
	}
	rc = serve_queue_submit(&s->queue, req, tenant, t0_ms, &r);
	if (rc == -EAGAIN)
		reply_over_limit(s, req, tenant);
	else if (rc < 0)
		serve_reply_error(req, 500, "Internal Server Error",
		    "out of memory");
	serve_req_cleanup(&r);
}

/* Idle warm containers (all modes); st may be NULL. */
static int64_t
pool_idle(struct serve_server *s, struct runner_pool_stats *st)
{
	struct runner_pool_stats local;

	if (st == NULL)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (s->pool == NULL)
		return 0;
	runner_pool_stats(s->pool, st);
	return st->idle[0] + st->idle[1];
}

/* The "pool" object of /v1/health, from st. */
static bool
add_pool(struct serve_server *s, cJSON *o,
    const struct runner_pool_stats *st)
{
	cJSON *p;

	return (p = cJSON_AddObjectToObject(o, "pool")) != NULL &&
	    cJSON_AddBoolToObject(p, "enabled", s->pool != NULL) != NULL &&
	    cJSON_AddNumberToObject(p, "none", (double)st->idle[0]) != NULL &&
	    cJSON_AddNumberToObject(p, "proxy", (double)st->idle[1]) != NULL &&
	    cJSON_AddNumberToObject(p, "starting", (double)st->starting) !=
	    NULL && cJSON_AddNumberToObject(p, "starts_max",
	    (double)st->max_starts) != NULL && cJSON_AddNumberToObject(p,
	    "cold", (double)st->cold) != NULL &&
	    cJSON_AddNumberToObject(p, "started",
	    (double)st->started) != NULL && cJSON_AddNumberToObject(p, "retired",
	    (double)st->retired) != NULL && cJSON_AddNumberToObject(p, "failed",
	    (double)st->failed) != NULL && cJSON_AddNumberToObject(p,
	    "removing", (double)st->removing) != NULL &&
	    cJSON_AddNumberToObject(p, "remove_ms_last",
	    (double)st->remove_ms_last) != NULL &&
	    json_add_bytes(p, "last_error", st->last_error,
	    strlen(st->last_error)) == 0;
}

static void
route_health(struct serve_server *s, struct evhttp_request *req,
    size_t tenant)
{
	struct runner_pool_stats st;
	int64_t idle = pool_idle(s, &st);
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL && add_pool(s, o, &st) &&
	    cJSON_AddStringToObject(o, "status", s->draining ? "draining" :
	    s->paused ? "paused" : "ok") != NULL &&
	    cJSON_AddNumberToObject(o, "active",
	    (double)s->metrics.active) != NULL &&
	    cJSON_AddNumberToObject(o, "queued",
	    (double)s->metrics.queue_depth) != NULL &&
	    cJSON_AddNumberToObject(o, "pool_size", (double)idle) != NULL &&
	    cJSON_AddStringToObject(o, "probe_none", serve_prober_note(s->prober,
	    RUNNER_NET_NONE)) != NULL &&
	    cJSON_AddStringToObject(o, "probe_proxy", serve_prober_note(s->prober,
	    RUNNER_NET_PROXY)) != NULL &&
	    cJSON_AddStringToObject(o, "version", CORDON_VERSION) != NULL;

	(void)tenant;
	if (!ok) {
		cJSON_Delete(o);
		o = NULL;
	}
	serve_reply_json(req, 200, "OK", o);
	cJSON_Delete(o);
}

static void
route_metrics(struct serve_server *s, struct evhttp_request *req,
    size_t tenant)
{
	char *text;

	(void)tenant;
	s->metrics.pool_size = pool_idle(s, NULL);
	serve_sessions_metrics(&s->sessions, &s->metrics);
	text = serve_metrics_render(&s->metrics);
	if (text == NULL) {
		serve_reply_error(req, 500, "Internal Server Error",
		    "out of memory");
		return;
	}
	serve_reply(req, 200, "OK", "text/plain; version=0.0.4", text,
	    strlen(text));
	free(text);
}

/* Stops accepting runs, cancels running ones (they report closed_early),
 * answers queued ones, and removes every Cordon container from a thread;
 * runs that were still starting are cancelled again when it is done. */
static void
route_kill_all(struct serve_server *s, struct evhttp_request *req,
    size_t tenant)
{
	(void)tenant;
	log_info("kill-all: cancelling %lld running run(s), refusing %lld "
	    "queued, pool paused", (long long)s->metrics.active,
	    (long long)s->metrics.queue_depth);
	s->paused = true;
	serve_sessions_end_all(&s->sessions, "kill-all");
	/* Before the sweep, so that no new warm container appears. */
	if (s->pool != NULL)
		runner_pool_pause(s->pool, true);
	serve_queue_kill_all(&s->queue, req);
}

static void
route_resume(struct serve_server *s, struct evhttp_request *req,
    size_t tenant)
{
	(void)tenant;
	log_info("resume: accepting runs again%s", s->pool != NULL ?
	    ", pool refilling" : "");
	s->paused = false;
	if (s->pool != NULL)
		runner_pool_pause(s->pool, false);
	/* kill-all may have removed a probe's container: a probe that
	 * failed so is redone now, not in minutes. */
	if (strncmp(serve_prober_note(s->prober, RUNNER_NET_NONE), "fail",
	    4) == 0)
		serve_prober_kick(s->prober);
	serve_reply(req, 200, "OK", "application/json", "{\"paused\":false}\n",
	    17);
}

static const struct route {
	enum evhttp_cmd_type method;
	const char *path;
	bool local;			/* unix socket only (403 on TCP) */
	route_fn fn;
} routes[] = {
	{ EVHTTP_REQ_POST, "/v1/runs", false, route_run },
	{ EVHTTP_REQ_GET, "/v1/health", false, route_health },
	{ EVHTTP_REQ_GET, "/metrics", false, route_metrics },
	{ EVHTTP_REQ_POST, "/v1/kill-all", true, route_kill_all },
	{ EVHTTP_REQ_POST, "/v1/resume", true, route_resume },
};

void
serve_routes_handle(struct evhttp_request *req, void *arg)
{
	struct serve_listener *l = arg;
	struct serve_server *s = l->s;
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *path = u != NULL ? evhttp_uri_get_path(u) : NULL;
	const char *authz = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Authorization");
	int tenant = serve_tenants_lookup(&s->tenants, authz, l->tcp);
	const struct route *r = NULL;

	if (path == NULL)
		path = "";
	if (tenant < 0) {
		s->metrics.bad_requests++;
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer");
		serve_reply_error(req, 401, "Unauthorized", "a valid bearer "
		    "token is required");
		return;
	}
	if (strncmp(path, "/v1/sessions", 12) == 0) {
		serve_sessions_route(&s->sessions, req, (size_t)tenant, path,
		    s->draining ? "the service is shutting down" : s->paused ?
		    "stopped by kill-all; POST /v1/resume first" : NULL);
		return;
	}
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(path, routes[i].path) == 0)
			r = &routes[i];
	if (r == NULL) {
		s->metrics.bad_requests++;
		serve_reply_error(req, 404, "Not Found", "no such endpoint");
	} else if (evhttp_request_get_command(req) != r->method) {
		s->metrics.bad_requests++;
		serve_reply_error(req, 405, "Method Not Allowed",
		    "method not allowed");
	} else if (r->local && l->tcp) {
		/* The switch is for the host's operator, not for tenants. */
		serve_reply_error(req, 403, "Forbidden", "kill-all and resume "
		    "are only served on the unix socket");
	} else {
		r->fn(s, req, (size_t)tenant);
	}
}
