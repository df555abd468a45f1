/*
 * The service's runs (internal.h): admission, the per-tenant queue, and one
 * detached worker thread per run that stages its files, calls runner_run
 * (which blocks) and hands its job back with event_active; the job owns all
 * of that run's state, so runs share nothing but the config. Also the
 * kill-all sweep's thread. Everything else runs on the loop's thread.
 */
#include "serve/internal.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "common/log.h"
#include "common/util.h"
#include "runner/runner.h"
#include "runner/stage.h"
#include "runner/stream.h"
#include "serve/listen.h"

enum job_state { JOB_QUEUED, JOB_RUNNING };

struct serve_job {
	TAILQ_ENTRY(serve_job) link;
	struct serve_queue *q;
	struct evhttp_request *req;
	struct event *done_ev;
	struct event *watch_ev;		/* EOF from the client, while we work */
	size_t tenant;
	enum job_state state;
	bool gone;			/* the client went away */
	atomic_int cancel;
	int64_t t0_ms;
	struct serve_req parsed;
	struct serve_live *live;	/* NULL, or the NDJSON reply (live.c) */
	int rc;				/* runner_run's, or staging's */
	char err[512];
	struct runner_result res;
};

/* One `POST /v1/kill-all`: runner_gc(all) on a thread. */
struct kill {
	struct serve_queue *q;
	struct evhttp_request *req;
	struct event *done_ev;
	int rc, removed;
	char err[256];
};

void
serve_queue_init(struct serve_queue *q)
{
	TAILQ_INIT(&q->waiting);
	TAILQ_INIT(&q->running);
	q->killing = 0;
	q->sending = 0;
}

bool
serve_queue_busy(const struct serve_queue *q)
{
	return !TAILQ_EMPTY(&q->running) || q->killing != 0;
}

static void
reply_sent(struct evhttp_request *req, void *arg)
{
	struct serve_queue *q = arg;

	(void)req;
	q->sending--;
	q->on_idle(q->arg);
}

static void
job_free(struct serve_job *j)
{
	if (j == NULL)
		return;
	if (j->done_ev != NULL)
		event_free(j->done_ev);
	if (j->watch_ev != NULL)
		event_free(j->watch_ev);
	serve_req_cleanup(&j->parsed);
	runner_result_cleanup(&j->res);
	serve_live_free(j->live);
	free(j);
}

/* Detaches the job from its connection before the reply (the close
 * callback would otherwise see a freed job). */
static void
job_detach(struct serve_job *j)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(j->req);

	if (evcon != NULL)
		evhttp_connection_set_closecb(evcon, NULL, NULL);
	if (j->watch_ev != NULL) {
		event_free(j->watch_ev);
		j->watch_ev = NULL;
	}
}

/* The client closed its connection: cancel the run (the runner removes
 * the container); a queued job is dropped on the next loop pass. */
static void
job_gone(struct serve_job *j)
{
	if (j->gone)
		return;
	j->gone = true;
	j->cancel = 1;
	if (j->state == JOB_QUEUED)
		event_active(j->done_ev, 0, 0);
}

/* evhttp does not read a connection while its request is being served, so
 * a client that hangs up would go unnoticed until the reply: peek at the
 * socket instead. Bytes (a pipelined request) end the watch. */
static void
job_watch(evutil_socket_t fd, short what, void *arg)
{
	struct serve_job *j = arg;
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
job_watch_start(struct serve_job *j)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(j->req);
	struct bufferevent *bev = evcon != NULL ?
	    evhttp_connection_get_bufferevent(evcon) : NULL;
	evutil_socket_t fd = bev != NULL ? bufferevent_getfd(bev) : -1;

	if (fd < 0)
		return;
	j->watch_ev = event_new(j->q->base, fd, EV_READ | EV_PERSIST,
	    job_watch, j);
	if (j->watch_ev != NULL)
		event_add(j->watch_ev, NULL);
}

static void
job_on_close(struct evhttp_connection *evcon, void *arg)
{
	(void)evcon;
	job_gone(arg);
}

/* The runner's notes (an automatic probe before a run) in the log. */
static void
job_note(void *arg, const char *msg)
{
	log_warnx("tenant %s: %s", (const char *)arg, msg);
}

static void *
job_thread(void *arg)
{
	struct serve_job *j = arg;
	struct serve_queue *q = j->q;
	struct runner_request rq = { 0 };
	struct stage_dir st;

	j->rc = serve_stage_files(q->tmp_dir, &j->parsed, &st, j->err,
	    sizeof(j->err));
	if (j->rc == 0) {
		rq.code = j->parsed.code;
		rq.code_len = j->parsed.code_len;
		rq.net = j->parsed.net;
		rq.policy = j->parsed.policy[0] != '\0' ? j->parsed.policy :
		    NULL;
		rq.timeout_s = j->parsed.timeout_s;
		rq.max_output = j->parsed.max_output;
		rq.keep = j->parsed.keep;
		rq.lang = j->parsed.lang;
		rq.profile = j->parsed.profile[0] != '\0' ?
		    j->parsed.profile : NULL;
		for (size_t i = 0; i < st.nin; i++)
			rq.in[i] = st.in[i];
		rq.nin = st.nin;
		rq.cancel = &j->cancel;
		rq.pool = q->pool;
		/* The tenant's name (checked by the config) tags the run's
		 * container and its audit line. */
		rq.session = q->tenants->t[j->tenant].name;
		rq.note = job_note;
		rq.note_arg = (void *)rq.session;
		if (j->live != NULL) {
			rq.output = runner_stream_output;
			rq.output_arg = serve_live_stream(j->live);
		}
		j->res.exit_code = -1;
		j->rc = runner_run(q->c, &rq, &j->res, j->err, sizeof(j->err));
	}
	stage_dir_cleanup(&st);
	if (j->live != NULL)
		runner_stream_close(serve_live_stream(j->live));
	event_active(j->done_ev, 0, 0);
	return NULL;
}

static void
job_reply(struct serve_queue *q, struct serve_job *j)
{
	const char *reason = "OK";
	cJSON *o;
	int code = 200;

	job_detach(j);
	if (evhttp_request_get_connection(j->req) != NULL) {
		/* Keep the loop until the result is written (shutdown). */
		evhttp_request_set_on_complete_cb(j->req, reply_sent, q);
		q->sending++;
	}
	if (j->rc < 0 && (code = serve_reply_status(j->rc, &reason)) == 503)
		q->metrics->unavailable++;
	/* Once events went out, an error is the last event; a run that
	 * could not start answers with its status, as without streaming. */
	if (j->live != NULL && (j->rc == 0 || serve_live_started(j->live))) {
		serve_live_finish(j->live, j->rc == 0 ? &j->res : NULL,
		    j->err[0] != '\0' ? j->err : strerror(-j->rc));
		return;
	}
	if (j->rc == 0) {
		o = runner_result_to_json(&j->res);
		serve_reply_json(j->req, 200, "OK", o);
		cJSON_Delete(o);
		return;
	}
	serve_reply_error_code(j->req, code, reason, j->err[0] != '\0' ?
	    j->err : strerror(-j->rc), serve_reply_code(j->rc));
}

/* Starts j (already counted active by the tenants). */
static void
job_start(struct serve_queue *q, struct serve_job *j)
{
	int rc;

	j->state = JOB_RUNNING;
	TAILQ_INSERT_TAIL(&q->running, j, link);
	q->metrics->active++;
	if ((rc = serve_listen_thread_spawn(job_thread, j)) == 0)
		return;
	j->rc = rc;
	snprintf(j->err, sizeof(j->err), "cannot start a worker thread: %s",
	    strerror(-rc));
	event_active(j->done_ev, 0, 0);
}

/* Starts queued runs, oldest first, as far as the limits allow. */
static void
queue_dispatch(struct serve_queue *q)
{
	struct serve_job *j, *next;

	for (j = TAILQ_FIRST(&q->waiting); j != NULL; j = next) {
		next = TAILQ_NEXT(j, link);
		if (j->gone || !serve_tenants_can_start(q->tenants, j->tenant))
			continue;
		TAILQ_REMOVE(&q->waiting, j, link);
		serve_tenants_start_queued(q->tenants, j->tenant);
		q->metrics->queue_depth--;
		job_start(q, j);
	}
}

static void
job_done(evutil_socket_t fd, short what, void *arg)
{
	struct serve_job *j = arg;
	struct serve_queue *q = j->q;

	(void)fd;
	(void)what;
	if (j->state == JOB_QUEUED) {
		/* Only a gone client wakes a queued job. */
		TAILQ_REMOVE(&q->waiting, j, link);
		serve_tenants_unqueue(q->tenants, j->tenant);
		q->metrics->queue_depth--;
		job_detach(j);
		serve_reply_error(j->req, 499, "Client Closed Request", "gone");
		job_free(j);
		return;
	}
	TAILQ_REMOVE(&q->running, j, link);
	serve_tenants_finish(q->tenants, j->tenant);
	q->metrics->active--;
	serve_metrics_observe(q->metrics, j->rc == 0 ? (int)j->res.status :
	    SERVE_STATUS_ERROR, time_mono_ms() - j->t0_ms);
	if (j->rc == 0 && j->res.warm)
		q->metrics->pool_hits++;
	else if (j->rc == 0)
		q->metrics->pool_misses++;
	job_reply(q, j);
	job_free(j);
	queue_dispatch(q);
	q->on_idle(q->arg);
}

int
serve_queue_submit(struct serve_queue *q, struct evhttp_request *req,
    size_t tenant, int64_t t0_ms, struct serve_req *r)
{
	struct serve_job *j;
	enum serve_admit admit;

	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->done_ev = event_new(q->base, -1, 0, job_done, j)) == NULL ||
	    (serve_live_wanted(req) && (j->live = serve_live_new(q->base,
	    req)) == NULL)) {
		job_free(j);
		return -ENOMEM;
	}
	if ((admit = serve_tenants_admit(q->tenants, tenant)) ==
	    SERVE_ADMIT_REJECT) {
		job_free(j);
		return -EAGAIN;
	}
	j->q = q;
	j->req = req;
	j->tenant = tenant;
	j->t0_ms = t0_ms;
	j->parsed = *r;
	memset(r, 0, sizeof(*r));
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    job_on_close, j);
	job_watch_start(j);
	if (admit == SERVE_ADMIT_RUN) {
		job_start(q, j);
	} else {
		j->state = JOB_QUEUED;
		TAILQ_INSERT_TAIL(&q->waiting, j, link);
		q->metrics->queue_depth++;
	}
	return 0;
}

void
serve_queue_flush(struct serve_queue *q, const char *why)
{
	struct serve_job *j;

	while ((j = TAILQ_FIRST(&q->waiting)) != NULL) {
		TAILQ_REMOVE(&q->waiting, j, link);
		serve_tenants_unqueue(q->tenants, j->tenant);
		q->metrics->queue_depth--;
		q->metrics->unavailable++;
		job_detach(j);
		serve_reply_error(j->req, 503, "Service Unavailable", why);
		job_free(j);
	}
}

void
serve_queue_cancel(struct serve_queue *q)
{
	struct serve_job *j;

	TAILQ_FOREACH(j, &q->running, link)
		j->cancel = 1;
}

static void *
kill_thread(void *arg)
{
	struct kill *k = arg;
	int n;

	/* A run that ends meanwhile removes its own container, and then
	 * `docker rm -f` of the listed names fails: list again. */
	for (int i = 0; i < 3; i++) {
		k->rc = runner_gc(k->q->c, true, &n, k->err, sizeof(k->err));
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
	struct serve_queue *q = k->q;
	cJSON *o;

	(void)fd;
	(void)what;
	/* Runs that were still starting during the sweep. */
	serve_queue_cancel(q);
	if (k->rc < 0)
		log_warnx("kill-all: the sweep failed after removing %d "
		    "container(s): %s", k->removed, k->err);
	else
		log_info("kill-all: removed %d container(s); paused until "
		    "resume", k->removed);
	if (k->rc < 0) {
		serve_reply_error(k->req, 500, "Internal Server Error", k->err);
	} else {
		o = cJSON_CreateObject();
		if (o != NULL && (cJSON_AddNumberToObject(o, "removed",
		    k->removed) == NULL || cJSON_AddBoolToObject(o, "paused",
		    true) == NULL)) {
			cJSON_Delete(o);
			o = NULL;
		}
		serve_reply_json(k->req, 200, "OK", o);
		cJSON_Delete(o);
	}
	event_free(k->done_ev);
	free(k);
	q->killing--;
	q->on_idle(q->arg);
}

void
serve_queue_kill_all(struct serve_queue *q, struct evhttp_request *req)
{
	struct kill *k = calloc(1, sizeof(*k));

	serve_queue_cancel(q);
	serve_queue_flush(q, "stopped by kill-all");
	if (k == NULL || (k->done_ev = event_new(q->base, -1, 0, kill_done,
	    k)) == NULL) {
		free(k);
		serve_reply_error(req, 500, "Internal Server Error",
		    "out of memory");
		return;
	}
	k->q = q;
	k->req = req;
	if (serve_listen_thread_spawn(kill_thread, k) < 0) {
		event_free(k->done_ev);
		free(k);
		serve_reply_error(req, 500, "Internal Server Error",
		    "cannot start a worker thread");
		return;
	}
	q->killing++;
}
