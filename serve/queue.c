/*
 * The service's admission and runs (internal.h): every piece of work that
 * takes a tenant's slot (a run, a session's start or call: issue 39) goes
 * through serve_queue_admit and the tenants' admission table
 * (jobs/admission.h), whose grants start here on the loop; a run then
 * gets one detached worker thread that runs it through jobs_run
 * (jobs/run.h: its files staged, runner_run, which blocks), builds its
 * reply (the JSON of a 16 MiB output is hundreds of MB: never on the
 * loop) and hands its job back with event_active; the job owns all of
 * that run's state, so runs share nothing but the config.
 * Also the kill-all sweep's thread. Everything else runs on the loop.
 */
#include "serve/internal.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "runner/runner.h"
#include "jobs/run.h"
#include "jobs/stream.h"
#include "serve/conn.h"
#include "serve/listen.h"

struct serve_job {
	TAILQ_ENTRY(serve_job) link;	/* q->running */
	struct jobs_wait wait;		/* admission (tenant, queue) */
	struct serve_queue *q;
	struct serve_conn *c;
	struct event *done_ev;
	bool running;
	atomic_int cancel;
	int64_t t0_ms;
	struct jobs_req parsed;
	struct serve_live *live;	/* NULL, or the NDJSON reply (live.c) */
	int rc;				/* runner_run's, or staging's */
	char err[512];
	struct runner_result res;
	char *line;			/* the reply, built on the worker */
};

/* One `POST /v1/kill-all`: runner_gc(all) on a thread. */
struct kill {
	struct serve_queue *q;
	struct serve_conn *c;
	struct event *done_ev;
	int rc, removed;
	char err[256];
};

/* A grant made off the loop's thread, started on it. */
static void
grant_cb(evutil_socket_t fd, short what, void *arg)
{
	struct serve_queue *q = arg;

	(void)fd;
	(void)what;
	jobs_admit_drain(q->tenants->adm);
}

int
serve_queue_init(struct serve_queue *q)
{
	TAILQ_INIT(&q->running);
	q->killing = 0;
	q->sending = 0;
	q->loop = pthread_self();
	if (q->base != NULL && (q->grant_ev = event_new(q->base, -1, 0,
	    grant_cb, q)) == NULL)
		return -ENOMEM;
	return 0;
}

void
serve_queue_cleanup(struct serve_queue *q)
{
	if (q->grant_ev != NULL)
		event_free(q->grant_ev);
	q->grant_ev = NULL;
}

void
serve_queue_granted(void *arg)
{
	struct serve_queue *q = arg;

	if (q->grant_ev == NULL || pthread_equal(pthread_self(), q->loop))
		jobs_admit_drain(q->tenants->adm);
	else
		event_active(q->grant_ev, 0, 0);
}

bool
serve_queue_busy(const struct serve_queue *q)
{
	struct jobs_admit_stats st;

	jobs_admit_stats(q->tenants->adm, SIZE_MAX, &st);
	return !TAILQ_EMPTY(&q->running) || q->killing != 0 || st.granted > 0;
}

void
serve_queue_counts(const struct serve_queue *q, size_t t,
    struct serve_metrics *m)
{
	struct jobs_admit_stats st;

	jobs_admit_stats(q->tenants->adm, t, &st);
	m->active = st.active;
	m->queue_depth = st.queued;
}

int
serve_queue_admit(struct serve_queue *q, struct jobs_wait *w)
{
	return jobs_admit(q->tenants->adm, w);
}

bool
serve_queue_withdraw(struct serve_queue *q, struct jobs_wait *w)
{
	return jobs_admit_withdraw(q->tenants->adm, w);
}

void
serve_queue_release(struct serve_queue *q, size_t tenant)
{
	/* Never expected: said, as the counters once showed it. */
	if (!jobs_admit_release(q->tenants->adm, tenant))
		log_warnx("admission: tenant %s released a slot it did not "
		    "hold", jobs_admission_name(q->tenants->adm, tenant));
}

/* The reply was written or dropped (conn.c reports both). */
static void
reply_sent(void *arg, bool written)
{
	struct serve_queue *q = arg;

	(void)written;
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
	jobs_req_cleanup(&j->parsed);
	runner_result_cleanup(&j->res);
	serve_live_free(j->live);
	free(j->line);
	free(j);
}

/* The client hung up: cancel the run (the runner removes the container);
 * a queued job leaves the queue and is answered (freed) at once. */
static void
job_gone(void *arg)
{
	struct serve_job *j = arg;
	struct serve_queue *q = j->q;

	j->cancel = 1;
	/* Not withdrawn: it is being started, and sees the cancel. */
	if (j->running || !serve_queue_withdraw(q, &j->wait))
		return;
	serve_reply_error(j->c, 499, "gone");
	job_free(j);
}

/* The runner's notes (an automatic probe before a run) in the log. */
static void
job_note(void *arg, const char *msg)
{
	log_warnx("tenant %s: %s", (const char *)arg, msg);
}

/* On the worker: the reply's body, so that the loop only hands it over
 * (issue 39: a 201 MB JSON reply built on the loop stalled every other
 * request for seconds). NULL on ENOMEM, or when the run failed before
 * any event went out (the loop answers its status). */
static void
job_build(struct serve_job *j)
{
	cJSON *o;

	if (j->live != NULL) {
		j->line = j->rc == 0 ? jobs_stream_result_line(&j->res,
		    jobs_stream_dropped(serve_live_stream(j->live))) :
		    jobs_stream_error_line(j->err[0] != '\0' ? j->err :
		    strerror(-j->rc));
		return;
	}
	if (j->rc != 0)
		return;
	o = runner_result_to_json(&j->res);
	j->line = o != NULL ? json_print_line(o) : NULL;
	cJSON_Delete(o);
}

static void *
job_thread(void *arg)
{
	struct serve_job *j = arg;
	struct serve_queue *q = j->q;
	/* The tenant's name (checked by the config) tags the run's container
	 * and its audit line. */
	const char *tenant = q->tenants->t[j->wait.tenant].name;
	const struct jobs_run_opts o = { .tmp_dir = q->tmp_dir,
	    .prefix = "cordon-serve", .pools = q->pools, .cancel = &j->cancel,
	    .session = tenant, .note = job_note, .note_arg = (void *)tenant,
	    .stream = j->live != NULL ? serve_live_stream(j->live) : NULL };

	j->rc = jobs_run(q->c, &j->parsed, &o, &j->res, NULL, j->err,
	    sizeof(j->err));
	if (j->live != NULL)
		jobs_stream_close(serve_live_stream(j->live));
	job_build(j);
	event_active(j->done_ev, 0, 0);
	return NULL;
}

static void
job_reply(struct serve_queue *q, struct serve_job *j)
{
	const char *reason;
	int code = 200;
	char *line = j->line;

	j->line = NULL;
	serve_conn_on_gone(j->c, NULL, NULL);
	/* Keep the loop until the result is written or dropped (stop). */
	serve_conn_on_done(j->c, reply_sent, q);
	q->sending++;
	if (j->rc < 0 && (code = serve_reply_status(j->rc, &reason)) == 503)
		SERVE_COUNT(q->metrics, q->tmetrics, j->wait.tenant,
		    unavailable);
	/* Once events went out, an error is the last event; a run that
	 * could not start answers with its status, as without streaming. */
	if (j->live != NULL && (j->rc == 0 || serve_live_started(j->live))) {
		serve_live_finish(j->live, line);
		return;
	}
	if (j->rc == 0 && line != NULL) {
		serve_conn_reply_take(j->c, 200, "application/json", line,
		    strlen(line));
		return;
	}
	free(line);
	if (j->rc == 0)
		serve_reply_error(j->c, 500, "out of memory");
	else
		serve_reply_error_code(j->c, code, j->err[0] != '\0' ?
		    j->err : strerror(-j->rc), serve_reply_code(j->rc));
}

/* Starts j (already counted active by the tenants). */
static void
job_start(struct jobs_wait *w)
{
	struct serve_job *j = (struct serve_job *)((char *)w -
	    offsetof(struct serve_job, wait));
	int rc;

	j->running = true;
	TAILQ_INSERT_TAIL(&j->q->running, j, link);
	if ((rc = serve_listen_thread_spawn(job_thread, j)) == 0)
		return;
	j->rc = rc;
	snprintf(j->err, sizeof(j->err), "cannot start a worker thread: %s",
	    strerror(-rc));
	event_active(j->done_ev, 0, 0);
}

/* Refused while queued: kill-all or the service's stop. */
static void
job_refuse(struct jobs_wait *w, const char *why)
{
	struct serve_job *j = (struct serve_job *)((char *)w -
	    offsetof(struct serve_job, wait));

	SERVE_COUNT(j->q->metrics, j->q->tmetrics, w->tenant, unavailable);
	serve_conn_on_gone(j->c, NULL, NULL);
	serve_reply_error(j->c, 503, why);
	job_free(j);
}

static void
job_done(evutil_socket_t fd, short what, void *arg)
{
	struct serve_job *j = arg;
	struct serve_queue *q = j->q;
	size_t t = j->wait.tenant;
	int status = j->rc == 0 ? (int)j->res.status : SERVE_STATUS_ERROR;
	int64_t ms = time_mono_ms() - j->t0_ms;

	(void)fd;
	(void)what;
	TAILQ_REMOVE(&q->running, j, link);
	serve_metrics_observe(q->metrics, status, ms);
	serve_metrics_observe(&q->tmetrics[t], status, ms);
	if (j->rc == 0 && j->res.warm)
		SERVE_COUNT(q->metrics, q->tmetrics, t, pool_hits);
	else if (j->rc == 0)
		SERVE_COUNT(q->metrics, q->tmetrics, t, pool_misses);
	job_reply(q, j);
	job_free(j);
	serve_queue_release(q, t);
	q->on_idle(q->arg);
}

int
serve_queue_submit(struct serve_queue *q, struct serve_conn *c,
    size_t tenant, int64_t t0_ms, struct jobs_req *r)
{
	struct serve_job *j;
	int rc;

	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->done_ev = event_new(q->base, -1, 0, job_done, j)) == NULL ||
	    (serve_live_wanted(c) && (j->live = serve_live_new(q->base,
	    c)) == NULL)) {
		job_free(j);
		return -ENOMEM;
	}
	j->q = q;
	j->c = c;
	j->wait.tenant = tenant;
	j->wait.start = job_start;
	j->wait.refuse = job_refuse;
	j->t0_ms = t0_ms;
	if ((rc = serve_queue_admit(q, &j->wait)) < 0) {
		job_free(j);
		return rc;
	}
	j->parsed = *r;
	memset(r, 0, sizeof(*r));
	serve_conn_on_gone(c, job_gone, j);
	if (rc == 1)
		job_start(&j->wait);
	return 0;
}

void
serve_queue_flush(struct serve_queue *q, const char *why)
{
	(void)jobs_admit_flush(q->tenants->adm, why);
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
		serve_reply_error(k->c, 500, k->err);
	} else {
		o = cJSON_CreateObject();
		if (o != NULL && (cJSON_AddNumberToObject(o, "removed",
		    k->removed) == NULL || cJSON_AddBoolToObject(o, "paused",
		    true) == NULL)) {
			cJSON_Delete(o);
			o = NULL;
		}
		serve_reply_json(k->c, 200, o);
		cJSON_Delete(o);
	}
	event_free(k->done_ev);
	free(k);
	q->killing--;
	q->on_idle(q->arg);
}

void
serve_queue_kill_all(struct serve_queue *q, struct serve_conn *c)
{
	struct kill *k = calloc(1, sizeof(*k));

	serve_queue_cancel(q);
	serve_queue_flush(q, "stopped by kill-all");
	if (k == NULL || (k->done_ev = event_new(q->base, -1, 0, kill_done,
	    k)) == NULL) {
		free(k);
		serve_reply_error(c, 500, "out of memory");
		return;
	}
	k->q = q;
	k->c = c;
	if (serve_listen_thread_spawn(kill_thread, k) < 0) {
		event_free(k->done_ev);
		free(k);
		serve_reply_error(c, 500, "cannot start a worker thread");
		return;
	}
	q->killing++;
}
