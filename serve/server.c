/*
 * The service's event loop (server.h). Everything but the sandbox runs on
 * the loop's thread: routing, tenant accounting, the queue and metrics. A
 * run is one detached worker thread that stages its files, calls
 * runner_run (which blocks) and hands its job back with event_active; the
 * job owns all of that run's state, so runs share nothing but the config.
 */
#include "serve/server.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>

#include "common/json.h"
#include "common/util.h"
#include "runner/pool.h"
#include "runner/runner.h"
#include "serve/listen.h"
#include "serve/metrics.h"
#include "serve/probe_sched.h"
#include "serve/request.h"
#include "serve/tenant.h"

enum job_state { JOB_QUEUED, JOB_RUNNING };

struct job {
	TAILQ_ENTRY(job) link;
	struct server *s;
	struct evhttp_request *req;
	struct event *done_ev;
	struct event *watch_ev;		/* EOF from the client, while we work */
	size_t tenant;
	enum job_state state;
	bool gone;			/* the client went away */
	atomic_int cancel;
	int64_t t0_ms;
	struct serve_req parsed;
	int rc;				/* runner_run's, or staging's */
	char err[512];
	struct runner_result res;
};

TAILQ_HEAD(job_list, job);

struct listener {
	struct server *s;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	bool tcp;
};

/* One `POST /v1/kill-all`: runner_gc(all) on a thread. */
struct kill {
	struct server *s;
	struct evhttp_request *req;
	struct event *done_ev;
	int rc, removed;
	char err[256];
};

struct server {
	const struct config *c;
	struct serve_prober *prober;	/* NULL: no scheduled probe */
	struct runner_pool *pool;	/* NULL: every run starts cold */
	char tmp_dir[PATH_MAX];
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct event_base *base;
	struct listener lis[2];
	size_t nlis;
	struct event *sig_ev[2];
	struct serve_tenants tenants;
	struct serve_metrics metrics;
	struct job_list queue, running;
	bool paused, draining;
	int killing;			/* kill-all threads in flight */
	int sending;			/* run replies not yet written */
};

static bool threads_ready;

/* Replies with body (may be NULL) and the given content type. */
static void
reply(struct evhttp_request *req, int code, const char *reason,
    const char *type, const char *body, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	if (b != NULL && body != NULL && evbuffer_add(b, body, len) < 0) {
		evbuffer_free(b);
		b = NULL;
	}
	if (b == NULL) {
		evhttp_send_reply(req, 500, "Internal Server Error", NULL);
		return;
	}
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

static void
reply_json(struct evhttp_request *req, int code, const char *reason,
    const cJSON *o)
{
	char *line = o != NULL ? json_print_line(o) : NULL;

	if (line == NULL) {
		reply(req, 500, "Internal Server Error", "application/json",
		    "{\"error\":\"out of memory\"}\n", 26);
		return;
	}
	reply(req, code, reason, "application/json", line, strlen(line));
	free(line);
}

/* {"error": why} with why made valid UTF-8. */
static void
reply_error(struct evhttp_request *req, int code, const char *reason,
    const char *why)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && json_add_bytes(o, "error", why, strlen(why)) < 0) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(req, code, reason, o);
	cJSON_Delete(o);
}

/* Ends the loop once draining and nothing is left to run or to write. A
 * reply whose connection failed never reports completion: after the last
 * run, wait at most 2 s for the writes. */
static void
server_maybe_exit(struct server *s)
{
	struct timeval grace = { 2, 0 };

	if (!s->draining || !TAILQ_EMPTY(&s->running) || s->killing != 0 ||
	    serve_prober_busy(s->prober))
		return;
	event_base_loopexit(s->base, s->sending == 0 ? NULL : &grace);
}

static void
server_on_probe_idle(void *arg)
{
	server_maybe_exit(arg);
}

static void
reply_sent(struct evhttp_request *req, void *arg)
{
	struct server *s = arg;

	(void)req;
	s->sending--;
	server_maybe_exit(s);
}

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	if (j->done_ev != NULL)
		event_free(j->done_ev);
	if (j->watch_ev != NULL)
		event_free(j->watch_ev);
	serve_req_cleanup(&j->parsed);
	runner_result_cleanup(&j->res);
	free(j);
}

/* Detaches the job from its connection before the reply (the close
 * callback would otherwise see a freed job). */
static void
job_detach(struct job *j)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(j->req);

	if (evcon != NULL)
		evhttp_connection_set_closecb(evcon, NULL, NULL);
	if (j->watch_ev != NULL) {
		event_free(j->watch_ev);
		j->watch_ev = NULL;
	}
}

static void job_gone(struct job *j);

/* evhttp does not read a connection while its request is being served, so
 * a client that hangs up would go unnoticed until the reply: peek at the
 * socket instead. Bytes (a pipelined request) end the watch. */
static void
job_watch(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;
	char ch;
	ssize_t n = recv(fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);

	(void)what;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	event_del(j->watch_ev);
	if (n <= 0)
		job_gone(j);
}

static void
job_watch_start(struct job *j)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(j->req);
	struct bufferevent *bev = evcon != NULL ?
	    evhttp_connection_get_bufferevent(evcon) : NULL;
	evutil_socket_t fd = bev != NULL ? bufferevent_getfd(bev) : -1;

	if (fd < 0)
		return;
	j->watch_ev = event_new(j->s->base, fd, EV_READ | EV_PERSIST,
	    job_watch, j);
	if (j->watch_ev != NULL)
		event_add(j->watch_ev, NULL);
}

/* The client closed its connection: cancel the run (the runner removes
 * the container); a queued job is dropped on the next loop pass. */
static void
job_gone(struct job *j)
{
	if (j->gone)
		return;
	j->gone = true;
	j->cancel = 1;
	if (j->state == JOB_QUEUED)
		event_active(j->done_ev, 0, 0);
}

static void
job_on_close(struct evhttp_connection *evcon, void *arg)
{
	(void)evcon;
	job_gone(arg);
}

static void *
job_thread(void *arg)
{
	struct job *j = arg;
	const struct config *c = j->s->c;
	struct runner_request rq = { .lang = "python" };
	struct stage_dir st;

	j->rc = serve_stage_files(j->s->tmp_dir, &j->parsed, &st, j->err,
	    sizeof(j->err));
	if (j->rc == 0) {
		rq.code = j->parsed.code;
		rq.code_len = j->parsed.code_len;
		rq.net = j->parsed.net;
		rq.timeout_s = j->parsed.timeout_s;
		rq.max_output = j->parsed.max_output;
		for (size_t i = 0; i < st.nin; i++)
			rq.in[i] = st.in[i];
		rq.nin = st.nin;
		rq.cancel = &j->cancel;
		rq.pool = j->s->pool;
		/* The tenant's name (checked by the config) tags the run's
		 * container and its audit line. */
		rq.session = j->s->tenants.t[j->tenant].name;
		j->res.exit_code = -1;
		j->rc = runner_run(c, &rq, &j->res, j->err, sizeof(j->err));
	}
	stage_dir_cleanup(&st);
	event_active(j->done_ev, 0, 0);
	return NULL;
}

static int
http_status(int rc, const char **reason)
{
	switch (rc) {
	case -EINVAL:
		*reason = "Bad Request";
		return 400;
	case -EPERM: case -ESTALE: case -ENOENT: case -ENETDOWN:
	case -EHOSTUNREACH: case -ECONNREFUSED:
		*reason = "Service Unavailable";
		return 503;
	}
	*reason = "Internal Server Error";
	return 500;
}

static void server_dispatch(struct server *s);

static void
job_reply(struct server *s, struct job *j)
{
	const char *reason;
	cJSON *o;
	int code;

	job_detach(j);
	if (evhttp_request_get_connection(j->req) != NULL) {
		/* Keep the loop until the result is written (shutdown). */
		evhttp_request_set_on_complete_cb(j->req, reply_sent, s);
		s->sending++;
	}
	if (j->rc == 0) {
		o = runner_result_to_json(&j->res);
		reply_json(j->req, 200, "OK", o);
		cJSON_Delete(o);
		return;
	}
	code = http_status(j->rc, &reason);
	if (code == 503)
		s->metrics.unavailable++;
	reply_error(j->req, code, reason, j->err[0] != '\0' ? j->err :
	    strerror(-j->rc));
}

static void
job_done(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;
	struct server *s = j->s;

	(void)fd;
	(void)what;
	if (j->state == JOB_QUEUED) {
		/* Only a gone client wakes a queued job. */
		TAILQ_REMOVE(&s->queue, j, link);
		serve_tenants_unqueue(&s->tenants, j->tenant);
		s->metrics.queue_depth--;
		job_detach(j);
		reply_error(j->req, 499, "Client Closed Request", "gone");
		job_free(j);
		return;
	}
	TAILQ_REMOVE(&s->running, j, link);
	serve_tenants_finish(&s->tenants, j->tenant);
	s->metrics.active--;
	serve_metrics_observe(&s->metrics, j->rc == 0 ? (int)j->res.status :
	    SERVE_STATUS_ERROR, time_mono_ms() - j->t0_ms);
	if (j->rc == 0 && j->res.warm)
		s->metrics.pool_hits++;
	else if (j->rc == 0)
		s->metrics.pool_misses++;
	job_reply(s, j);
	job_free(j);
	server_dispatch(s);
	server_maybe_exit(s);
}

/* Starts j (already counted active by the tenants). */
static void
job_start(struct server *s, struct job *j)
{
	int rc;

	j->state = JOB_RUNNING;
	TAILQ_INSERT_TAIL(&s->running, j, link);
	s->metrics.active++;
	if ((rc = listen_thread_spawn(job_thread, j)) == 0)
		return;
	j->rc = rc;
	snprintf(j->err, sizeof(j->err), "cannot start a worker thread: %s",
	    strerror(-rc));
	event_active(j->done_ev, 0, 0);
}

/* Starts queued runs, oldest first, as far as the limits allow. */
static void
server_dispatch(struct server *s)
{
	struct job *j, *next;

	for (j = TAILQ_FIRST(&s->queue); j != NULL; j = next) {
		next = TAILQ_NEXT(j, link);
		if (j->gone || !serve_tenants_can_start(&s->tenants, j->tenant))
			continue;
		TAILQ_REMOVE(&s->queue, j, link);
		serve_tenants_start_queued(&s->tenants, j->tenant);
		s->metrics.queue_depth--;
		job_start(s, j);
	}
}

/* Answers every queued run with 503 (kill-all, shutdown). */
static void
server_flush_queue(struct server *s, const char *why)
{
	struct job *j;

	while ((j = TAILQ_FIRST(&s->queue)) != NULL) {
		TAILQ_REMOVE(&s->queue, j, link);
		serve_tenants_unqueue(&s->tenants, j->tenant);
		s->metrics.queue_depth--;
		s->metrics.unavailable++;
		job_detach(j);
		reply_error(j->req, 503, "Service Unavailable", why);
		job_free(j);
	}
}

static void
server_cancel_running(struct server *s)
{
	struct job *j;

	TAILQ_FOREACH(j, &s->running, link)
		j->cancel = 1;
}

static void
handle_run(struct server *s, struct evhttp_request *req, size_t tenant)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *body = len > 0 ? (const char *)evbuffer_pullup(in, -1) : "";
	struct job *j;
	char retry[32], err[512] = "";
	int rc;

	if (s->draining || s->paused) {
		s->metrics.unavailable++;
		reply_error(req, 503, "Service Unavailable", s->draining ?
		    "the service is shutting down" : "runs are stopped by "
		    "kill-all; POST /v1/resume to accept runs again");
		return;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL || body == NULL ||
	    (j->done_ev = event_new(s->base, -1, 0, job_done, j)) == NULL) {
		job_free(j);
		reply_error(req, 500, "Internal Server Error", "out of memory");
		return;
	}
	j->s = s;
	j->req = req;
	j->tenant = tenant;
	j->t0_ms = time_mono_ms();
	rc = serve_req_parse(s->c, body, len, &j->parsed, err, sizeof(err));
	if (rc < 0) {
		s->metrics.bad_requests += rc != -ENOMEM;
		reply_error(req, rc == -EFBIG ? 413 : rc == -EINVAL ? 400 : 500,
		    rc == -EFBIG ? "Payload Too Large" : rc == -EINVAL ?
		    "Bad Request" : "Internal Server Error", err);
		job_free(j);
		return;
	}
	if (!j->parsed.has_net)
		j->parsed.net = s->tenants.t[tenant].net;
	switch (serve_tenants_admit(&s->tenants, tenant)) {
	case SERVE_ADMIT_RUN:
		evhttp_connection_set_closecb(evhttp_request_get_connection(req),
		    job_on_close, j);
		job_watch_start(j);
		job_start(s, j);
		return;
	case SERVE_ADMIT_QUEUE:
		j->state = JOB_QUEUED;
		TAILQ_INSERT_TAIL(&s->queue, j, link);
		s->metrics.queue_depth++;
		evhttp_connection_set_closecb(evhttp_request_get_connection(req),
		    job_on_close, j);
		job_watch_start(j);
		return;
	case SERVE_ADMIT_REJECT:
		break;
	}
	s->metrics.rejected++;
	/* About one run's time: the mean latency so far, at least 1 s. */
	snprintf(retry, sizeof(retry), "%lld", s->metrics.count > 0 &&
	    s->metrics.sum_s / (double)s->metrics.count > 1 ?
	    (long long)(s->metrics.sum_s / (double)s->metrics.count + 0.999) :
	    1LL);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Retry-After", retry);
	snprintf(err, sizeof(err), "tenant '%s' is over its limit (%lld "
	    "running, %lld queued)", s->tenants.t[tenant].name,
	    (long long)s->tenants.t[tenant].active,
	    (long long)s->tenants.t[tenant].queued);
	reply_error(req, 429, "Too Many Requests", err);
	job_free(j);
}

static void *
kill_thread(void *arg)
{
	struct kill *k = arg;
	int n;

	/* A run that ends meanwhile removes its own container, and then
	 * `docker rm -f` of the listed names fails: list again. */
	for (int i = 0; i < 3; i++) {
		k->rc = runner_gc(k->s->c, true, &n, k->err, sizeof(k->err));
		k->removed += n;
		if (k->rc == 0)
			break;
	}
	event_active(k->done_ev, 0, 0);
	return NULL;
}

static void
kill_done(evutil_socket_t fd, short what, void *arg)
{
	struct kill *k = arg;
	struct server *s = k->s;
	cJSON *o;

	(void)fd;
	(void)what;
	server_cancel_running(s);
	if (k->rc < 0) {
		reply_error(k->req, 500, "Internal Server Error", k->err);
	} else {
		o = cJSON_CreateObject();
		if (o != NULL && (cJSON_AddNumberToObject(o, "removed",
		    k->removed) == NULL || cJSON_AddBoolToObject(o, "paused",
		    true) == NULL)) {
			cJSON_Delete(o);
			o = NULL;
		}
		reply_json(k->req, 200, "OK", o);
		cJSON_Delete(o);
	}
	event_free(k->done_ev);
	free(k);
	s->killing--;
	server_maybe_exit(s);
}

/* Stops accepting runs, cancels running ones (they report closed_early),
 * answers queued ones, and removes every Cordon container from a thread;
 * runs that were still starting are cancelled again when it is done. */
static void
handle_kill_all(struct server *s, struct evhttp_request *req)
{
	struct kill *k = calloc(1, sizeof(*k));
	int rc;

	s->paused = true;
	/* Before the sweep, so that no new warm container appears. */
	if (s->pool != NULL)
		runner_pool_pause(s->pool, true);
	server_cancel_running(s);
	server_flush_queue(s, "stopped by kill-all");
	if (k == NULL || (k->done_ev = event_new(s->base, -1, 0, kill_done,
	    k)) == NULL) {
		free(k);
		reply_error(req, 500, "Internal Server Error", "out of memory");
		return;
	}
	k->s = s;
	k->req = req;
	if ((rc = listen_thread_spawn(kill_thread, k)) < 0) {
		event_free(k->done_ev);
		free(k);
		reply_error(req, 500, "Internal Server Error",
		    "cannot start a worker thread");
		return;
	}
	s->killing++;
}

/* Idle warm containers (all modes); st may be NULL. */
static int64_t
pool_idle(struct server *s, struct runner_pool_stats *st)
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
add_pool(struct server *s, cJSON *o, const struct runner_pool_stats *st)
{
	cJSON *p;

	return (p = cJSON_AddObjectToObject(o, "pool")) != NULL &&
	    cJSON_AddBoolToObject(p, "enabled", s->pool != NULL) != NULL &&
	    cJSON_AddNumberToObject(p, "none", (double)st->idle[0]) != NULL &&
	    cJSON_AddNumberToObject(p, "proxy", (double)st->idle[1]) != NULL &&
	    cJSON_AddNumberToObject(p, "starting", (double)st->starting) !=
	    NULL && cJSON_AddNumberToObject(p, "started",
	    (double)st->started) != NULL && cJSON_AddNumberToObject(p, "retired",
	    (double)st->retired) != NULL && cJSON_AddNumberToObject(p, "failed",
	    (double)st->failed) != NULL &&
	    json_add_bytes(p, "last_error", st->last_error,
	    strlen(st->last_error)) == 0;
}

static void
handle_health(struct server *s, struct evhttp_request *req)
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

	if (!ok) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(req, 200, "OK", o);
	cJSON_Delete(o);
}

static void
handle_metrics(struct server *s, struct evhttp_request *req)
{
	char *text;

	s->metrics.pool_size = pool_idle(s, NULL);
	text = serve_metrics_render(&s->metrics);

	if (text == NULL) {
		reply_error(req, 500, "Internal Server Error", "out of memory");
		return;
	}
	reply(req, 200, "OK", "text/plain; version=0.0.4", text, strlen(text));
	free(text);
}

static void
on_request(struct evhttp_request *req, void *arg)
{
	struct listener *l = arg;
	struct server *s = l->s;
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *path = u != NULL ? evhttp_uri_get_path(u) : NULL;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const char *authz = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Authorization");
	int tenant = serve_tenants_lookup(&s->tenants, authz, l->tcp);
	bool post = cmd == EVHTTP_REQ_POST, get = cmd == EVHTTP_REQ_GET;

	if (path == NULL)
		path = "";
	if (tenant < 0) {
		s->metrics.bad_requests++;
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer");
		reply_error(req, 401, "Unauthorized", "a valid bearer token "
		    "is required");
		return;
	}
	if (strcmp(path, "/v1/runs") == 0 && post) {
		handle_run(s, req, (size_t)tenant);
	} else if (strcmp(path, "/v1/health") == 0 && get) {
		handle_health(s, req);
	} else if (strcmp(path, "/metrics") == 0 && get) {
		handle_metrics(s, req);
	} else if ((strcmp(path, "/v1/kill-all") == 0 ||
	    strcmp(path, "/v1/resume") == 0) && post && l->tcp) {
		/* The switch is for the host's operator, not for tenants. */
		reply_error(req, 403, "Forbidden", "kill-all and resume are "
		    "only served on the unix socket");
	} else if (strcmp(path, "/v1/kill-all") == 0 && post) {
		handle_kill_all(s, req);
	} else if (strcmp(path, "/v1/resume") == 0 && post) {
		s->paused = false;
		if (s->pool != NULL)
			runner_pool_pause(s->pool, false);
		/* kill-all may have removed a probe's container: a probe
		 * that failed so is redone now, not in minutes. */
		if (strncmp(serve_prober_note(s->prober, RUNNER_NET_NONE),
		    "fail", 4) == 0)
			serve_prober_kick(s->prober);
		reply(req, 200, "OK", "application/json",
		    "{\"paused\":false}\n", 17);
	} else if (strcmp(path, "/v1/runs") == 0 ||
	    strcmp(path, "/v1/health") == 0 || strcmp(path, "/metrics") == 0 ||
	    strcmp(path, "/v1/kill-all") == 0 ||
	    strcmp(path, "/v1/resume") == 0) {
		s->metrics.bad_requests++;
		reply_error(req, 405, "Method Not Allowed", "method not allowed");
	} else {
		s->metrics.bad_requests++;
		reply_error(req, 404, "Not Found", "no such endpoint");
	}
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;

	(void)what;
	(void)sig;
	if (s->draining) {
		/* A second signal: do not wait for the deadlines. */
		server_cancel_running(s);
		return;
	}
	s->draining = true;
	serve_prober_stop(s->prober);
	/* Idle warm containers go now; server_free waits for the last. */
	if (s->pool != NULL)
		runner_pool_pause(s->pool, true);
	for (size_t i = 0; i < s->nlis; i++)
		if (s->lis[i].bound != NULL) {
			evhttp_del_accept_socket(s->lis[i].http, s->lis[i].bound);
			s->lis[i].bound = NULL;
		}
	if (s->socket_path[0] != '\0')
		(void)unlink(s->socket_path);
	s->socket_path[0] = '\0';
	server_flush_queue(s, "the service is shutting down");
	server_maybe_exit(s);
}

static int
listener_init(struct server *s, struct listener *l, bool tcp, char *err,
    size_t errlen)
{
	int64_t t = s->c->limits.max_timeout_s + 60;

	l->s = s;
	l->tcp = tcp;
	if ((l->http = evhttp_new(s->base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	evhttp_set_max_body_size(l->http, (ev_ssize_t)s->c->serve.body_max_bytes);
	/* Over the cap: read and drop the rest of the body before closing,
	 * so the client gets its 413 instead of a reset mid-upload. */
	evhttp_set_flags(l->http, EVHTTP_SERVER_LINGERING_CLOSE);
	evhttp_set_max_headers_size(l->http, 16384);
	/* Never time out a client that waits for a long run. */
	evhttp_set_timeout(l->http, t > INT_MAX ? INT_MAX : (int)t);
	evhttp_set_allowed_methods(l->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
	evhttp_set_gencb(l->http, on_request, l);
	return 0;
}

static int
bind_tcp(struct server *s, struct listener *l, const char *spec, char *err,
    size_t errlen)
{
	char host[128];
	uint16_t port;

	if (s->c->serve.ntenants == 0) {
		snprintf(err, errlen, "--listen needs tenants with tokens "
		    "(serve.tenants in the config)");
		return -EINVAL;
	}
	if (listen_parse_addr(spec, host, sizeof(host), &port) < 0) {
		snprintf(err, errlen, "bad listen address '%.64s' (ADDR:PORT)",
		    spec);
		return -EINVAL;
	}
	if ((l->bound = evhttp_bind_socket_with_handle(l->http, host,
	    port)) == NULL) {
		snprintf(err, errlen, "cannot listen on %.64s", spec);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

static int
server_pool_start(struct server *s, const struct server_opts *opts,
    char *err, size_t errlen)
{
	struct runner_pool_opts po = {
		.size = opts->pool >= 0 ? opts->pool : s->c->serve.pool,
		.max_age_s = s->c->serve.pool_max_age_s,
		.modes = { true, true },
	};

	if (po.size == 0)
		return 0;
	return runner_pool_new(s->c, &po, &s->pool, err, errlen);
}

int
server_new(const struct server_opts *opts, struct server **out, char *err,
    size_t errlen)
{
	const struct config *c = opts->config;
	const char *sock = opts->socket != NULL ? opts->socket : c->serve.socket;
	const char *tcp = opts->listen != NULL ? opts->listen : c->serve.listen;
	const char *tmp = opts->tmp_dir != NULL ? opts->tmp_dir :
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
	struct server *s;
	int fd = -1, rc;

	*out = NULL;
	if (!threads_ready) {
		if (evthread_use_pthreads() < 0) {
			snprintf(err, errlen, "libevent has no thread support");
			return -ENOSYS;
		}
		threads_ready = true;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->c = c;
	TAILQ_INIT(&s->queue);
	TAILQ_INIT(&s->running);
	serve_tenants_init(&s->tenants, c);
	if (!util_strlcpy(s->tmp_dir, tmp, sizeof(s->tmp_dir))) {
		snprintf(err, errlen, "temporary directory path too long");
		rc = -ENAMETOOLONG;
		goto bad;
	}
	if ((s->base = event_base_new()) == NULL) {
		snprintf(err, errlen, "cannot create the event loop");
		rc = -ENOMEM;
		goto bad;
	}
	if ((rc = listener_init(s, &s->lis[0], false, err, errlen)) < 0)
		goto bad;
	s->nlis = 1;
	if ((rc = listen_unix(sock, &fd, err, errlen)) < 0)
		goto bad;
	util_strlcpy(s->socket_path, sock, sizeof(s->socket_path));
	if ((s->lis[0].bound = evhttp_accept_socket_with_handle(s->lis[0].http,
	    fd)) == NULL) {
		close(fd);
		snprintf(err, errlen, "cannot accept on %.200s", sock);
		rc = -ENOMEM;
		goto bad;
	}
	if (tcp[0] != '\0') {
		if ((rc = listener_init(s, &s->lis[1], true, err, errlen)) < 0)
			goto bad;
		s->nlis = 2;
		if ((rc = bind_tcp(s, &s->lis[1], tcp, err, errlen)) < 0)
			goto bad;
	}
	if ((s->sig_ev[0] = evsignal_new(s->base, SIGTERM, on_signal, s)) ==
	    NULL || (s->sig_ev[1] = evsignal_new(s->base, SIGINT, on_signal,
	    s)) == NULL || evsignal_add(s->sig_ev[0], NULL) < 0 ||
	    evsignal_add(s->sig_ev[1], NULL) < 0) {
		snprintf(err, errlen, "cannot watch signals");
		rc = -ENOMEM;
		goto bad;
	}
	if (opts->probe_exe != NULL && (rc = serve_prober_new(s->base, c,
	    opts->probe_exe, server_on_probe_idle, s, &s->prober, err,
	    errlen)) < 0)
		goto bad;
	if ((rc = server_pool_start(s, opts, err, errlen)) < 0)
		goto bad;
	/* Probe the path pooled runs take. */
	serve_prober_set_warm(s->prober, s->pool != NULL);
	*out = s;
	return 0;
bad:
	server_free(s);
	return rc;
}

int
server_run(struct server *s)
{
	return event_base_dispatch(s->base) < 0 ? -EIO : 0;
}

void
server_free(struct server *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < 2; i++)
		if (s->sig_ev[i] != NULL)
			event_free(s->sig_ev[i]);
	serve_prober_free(s->prober);
	runner_pool_free(s->pool);
	for (size_t i = 0; i < s->nlis; i++)
		if (s->lis[i].http != NULL)
			evhttp_free(s->lis[i].http);
	if (s->socket_path[0] != '\0')
		(void)unlink(s->socket_path);
	if (s->base != NULL)
		event_base_free(s->base);
	free(s);
}
