/*
 * Private to serve/: the service's state and the pieces of its event loop.
 * Calls go one way only: server.c (lifecycle, listeners, signals) uses
 * accept.c and conn.c (the network layer, conn.h), routes.c (the table of
 * HTTP routes), sessions.c and queue.c (admission; runs on worker
 * threads); routes.c uses sessions.c and queue.c, sessions.c uses queue.c;
 * all answer through reply.c (over conn.c), and parse bodies on work.c's
 * threads. The queue reports back through its on_idle callback and each
 * waiter's start/refuse, never by calling its users. Admission itself
 * (tenants' limits, counters, the wait list) is jobs/admission's table,
 * s->adm, which only the loop's thread uses.
 */
#ifndef CORDON_SERVE_INTERNAL_H
#define CORDON_SERVE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "jobs/admission.h"
#include "runner/pool.h"
#include "runner/pool_conf.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/sessions.h"
#include "serve/tenant.h"

struct event;
struct event_base;
struct serve_server;
struct serve_accept;
struct serve_conn;
struct serve_prober;
struct serve_work;

/* Counts in the service's metrics and in tenant t's own (its view over
 * TCP, issue 39). */
#define SERVE_COUNT(m, tm, t, field) do {				\
	(m)->field++;							\
	(tm)[t].field++;						\
} while (0)

/* reply.c: answers with a body (may be NULL) of the given content type;
 * with o's one-line JSON (NULL: 500 out of memory); with {"error": why},
 * why made valid UTF-8. Every 4xx but 499 is counted against the
 * refusal rate of the tenant the request named (serve_reply_note). */
void serve_reply(struct serve_conn *c, int code, const char *type,
    const char *body, size_t len);
void serve_reply_json(struct serve_conn *c, int code, const cJSON *o);
void serve_reply_error(struct serve_conn *c, int code, const char *why);
/* ... with "code": what (NULL: none), a stable name of the failure;
 * counted as serve_reply_error is. */
void serve_reply_error_code(struct serve_conn *c, int code, const char *why,
    const char *what);
/* The "code" of a failed run's or session's negative errno: "docker-
 * unavailable" for -EHOSTUNREACH (the daemon cannot be reached), else
 * NULL. */
const char *serve_reply_code(int rc);
/* Names the request's tenant for that count (routes.c, after the token):
 * the connection's note (conn.h) is s, with tenant in its low 16 bits
 * (routes.c keeps the route in the bits above). */
void serve_reply_note(struct serve_conn *c, struct serve_server *s,
    size_t tenant);
/* The HTTP status (and *reason) for a failed run's negative errno:
 * 400 for -EINVAL (staging's or the runner's refusal of the request),
 * 503 when the sandbox cannot run now, else 500. */
int serve_reply_status(int rc, const char **reason);

/* live.c: the NDJSON reply of a run whose request asked for it
 * (Accept: application/x-ndjson). Loop thread only, except what the
 * run's worker does with serve_live_stream (jobs/stream.h: the runner's
 * output callback and jobs_stream_close). */
struct serve_live;
struct jobs_stream;
struct runner_result;

bool serve_live_wanted(struct serve_conn *c);
/* NULL on ENOMEM. */
struct serve_live *serve_live_new(struct event_base *base,
    struct serve_conn *c);
void serve_live_free(struct serve_live *l);	/* accepts NULL */
struct jobs_stream *serve_live_stream(struct serve_live *l);
/* True once the 200 and some events went out. */
bool serve_live_started(const struct serve_live *l);
/* Ends the reply: the queued events, then line (the result's or an
 * error's; taken, may be NULL on ENOMEM). Releases a connection whose
 * client is gone. */
void serve_live_finish(struct serve_live *l, char *line);

/* queue.c: admission of every piece of work that takes a tenant's slot
 * (runs, session starts, session calls: issue 39) through the tenants'
 * admission table (jobs/admission.h), runs on detached worker threads,
 * and the kill-all sweep. Loop thread only. The owner sets the fields
 * marked so; serve_queue_init the rest. */
struct serve_job;
TAILQ_HEAD(serve_job_list, serve_job);

struct serve_queue {
	struct event_base *base;	/* owner */
	const struct config *c;		/* owner */
	struct serve_tenants *tenants;	/* owner; its adm admits every job */
	struct serve_metrics *metrics;	/* owner */
	struct serve_metrics *tmetrics;	/* owner: per tenant */
	struct runner_pools *pools;	/* owner; NULL: runs start cold;
					 * a run takes its language's */
	const char *tmp_dir;		/* owner; for staged files */
	void (*on_idle)(void *);	/* owner: after a run or a kill-all */
	void *arg;			/* ended, or a reply was written */
	struct serve_job_list running;
	int killing;			/* kill-all threads in flight */
	int sending;			/* run replies not yet written */
	struct event *grant_ev;		/* a grant made off the loop */
	pthread_t loop;			/* the loop's thread */
};

/* 0, or -ENOMEM. Call it on the loop's thread (serve_server_run sets
 * loop again). */
int serve_queue_init(struct serve_queue *q);
void serve_queue_cleanup(struct serve_queue *q);
/* The admission table's hook (its arg: the queue): grants start at once
 * on the loop's thread, as a release there always did; from another
 * thread the loop is woken to start them. */
void serve_queue_granted(void *arg);


/* Admits w for its tenant: 1 when it may start now (counted active; the
 * caller goes on), 0 when it was queued (w->start is called later, or
 * w->refuse), -EAGAIN when the tenant is over its limit and queue
 * (nothing counted: the caller answers 429). */
int serve_queue_admit(struct serve_queue *q, struct jobs_wait *w);
/* A queued (or granted, not started) w whose client left: out of the
 * queue, nothing called; true. False when it holds its slot. */
bool serve_queue_withdraw(struct serve_queue *q, struct jobs_wait *w);
/* An admitted piece of work of tenant ended: its slot is free. */
void serve_queue_release(struct serve_queue *q, size_t tenant);

/* Admits a parsed run of tenant for c: starts it or queues it, and then
 * owns *r (zeroed here) and answers c itself. -EAGAIN: the tenant is over
 * its limit (nothing was counted; the caller answers 429 and keeps *r);
 * -ENOMEM (the caller answers 500). t0_ms: the request's arrival, for the
 * latency histogram. */
int serve_queue_submit(struct serve_queue *q, struct serve_conn *c,
    size_t tenant, int64_t t0_ms, struct jobs_req *r);

/* Answers everything queued (runs and sessions' work) 503 with why. */
void serve_queue_flush(struct serve_queue *q, const char *why);
/* Cancels every running run (they report closed_early). */
void serve_queue_cancel(struct serve_queue *q);
/* Cancels running runs, answers queued ones 503, then removes every
 * Cordon container from a thread and answers req ({removed, paused}). */
void serve_queue_kill_all(struct serve_queue *q, struct serve_conn *c);
/* True while a run or a kill-all is in flight, or work granted a slot
 * has not started yet. */
bool serve_queue_busy(const struct serve_queue *q);
/* The admission table's active and queued of tenant t (SIZE_MAX: the
 * service's) into m's active and queue_depth, for what health, metrics
 * and the log say. */
void serve_queue_counts(const struct serve_queue *q, size_t t,
    struct serve_metrics *m);

struct serve_server {
	const struct config *c;
	struct serve_prober *prober;	/* NULL: no scheduled probe */
	struct runner_pools *pools;	/* per language; NULL: none */
	struct runner_pool *pool;	/* python's in pools (health,
					 * metrics, the warm probe); NULL:
					 * none */
	char tmp_dir[PATH_MAX];
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char listen[64];		/* "" or the TCP address, for the log */
	struct event_base *base;
	struct serve_accept *acc;	/* the listeners (conn.h) */
	struct serve_work *work;	/* parse workers (work.h) */
	int64_t caps[3];		/* connections: TCP, per peer, unix */
	int64_t nofile;			/* the descriptor limit at start */
	struct event *sig_ev[3];	/* SIGTERM, SIGINT, SIGHUP */
	struct event *drain_ev;		/* while draining: may the loop end */
	int64_t idle_ms;		/* draining, nothing left running since */
	struct jobs_admission *adm;	/* tenants, limits, the queue */
	struct serve_tenants tenants;
	struct serve_metrics metrics;
	struct serve_metrics tmetrics[CONFIG_MAX_TENANTS + 1];
	struct serve_queue queue;
	struct serve_sessions sessions;	/* sessions.h */
	bool paused, draining;
	struct runner_pool_stats pool_at_signal;	/* for the summary */
};

/* notes.c: the service's log lines (common/log.h, on stderr). */
void serve_note_startup(const struct serve_server *s, int64_t pool);
/* On SIGTERM/SIGINT, before the drain starts (or cancels, if already
 * draining). */
void serve_note_signal(struct serve_server *s, int sig);
/* After the loop: stops the pool (joining its thread), removes what still
 * carries this process's pid, and logs the summary. */
void serve_note_shutdown(struct serve_server *s);

/* routes.c: the connections' callbacks (conn.h; arg is the server): the
 * token, the route and every refusal that needs no body on the head; the
 * body parsed on a worker (work.h), then the route. */
bool serve_routes_head(struct serve_conn *c, void *arg);
void serve_routes_request(struct serve_conn *c, void *arg);

#endif
