/*
 * Private to serve/: the service's state and the pieces of its event loop.
 * Calls go one way only: server.c (lifecycle, listeners, signals) uses
 * routes.c (the table of HTTP routes) and queue.c (runs on worker threads);
 * routes.c uses queue.c; both answer through reply.c. The queue reports
 * back through its on_idle callback, never by calling its users.
 */
#ifndef CORDON_SERVE_INTERNAL_H
#define CORDON_SERVE_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "runner/pool.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/sessions.h"
#include "serve/tenant.h"

struct event;
struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct serve_prober;

/* reply.c: answers with a body (may be NULL) of the given content type;
 * with o's one-line JSON (NULL: 500 out of memory); with {"error": why},
 * why made valid UTF-8. */
void serve_reply(struct evhttp_request *req, int code, const char *reason,
    const char *type, const char *body, size_t len);
void serve_reply_json(struct evhttp_request *req, int code,
    const char *reason, const cJSON *o);
void serve_reply_error(struct evhttp_request *req, int code,
    const char *reason, const char *why);
/* ... with "code": what (NULL: none), a stable name of the failure. */
void serve_reply_error_code(struct evhttp_request *req, int code,
    const char *reason, const char *why, const char *what);
/* The "code" of a failed run's or session's negative errno: "docker-
 * unavailable" for -EHOSTUNREACH (the daemon cannot be reached), else
 * NULL. */
const char *serve_reply_code(int rc);
/* The HTTP status (and *reason) for a failed run's negative errno:
 * 400 for -EINVAL (staging's or the runner's refusal of the request),
 * 503 when the sandbox cannot run now, else 500. */
int serve_reply_status(int rc, const char **reason);

/* live.c: the NDJSON reply of a run whose request asked for it
 * (Accept: application/x-ndjson). Loop thread only, except what the
 * run's worker does with serve_live_stream (runner/stream.h: the runner's
 * output callback and runner_stream_close). */
struct serve_live;
struct runner_stream;
struct runner_result;

bool serve_live_wanted(struct evhttp_request *req);
/* NULL on ENOMEM. */
struct serve_live *serve_live_new(struct event_base *base,
    struct evhttp_request *req);
void serve_live_free(struct serve_live *l);	/* accepts NULL */
struct runner_stream *serve_live_stream(struct serve_live *l);
/* True once the 200 and some events went out. */
bool serve_live_started(const struct serve_live *l);
/* Ends the reply: the queued events, then the result (res non-NULL) or
 * {"event":"error"} with err. Answers and releases a request whose client
 * is gone. */
void serve_live_finish(struct serve_live *l, const struct runner_result *res,
    const char *err);

/* queue.c: admitted runs, each on a detached worker thread, and the
 * kill-all sweep. Loop thread only. The owner sets the fields marked so;
 * serve_queue_init the rest. */
struct serve_job;
TAILQ_HEAD(serve_job_list, serve_job);

struct serve_queue {
	struct event_base *base;	/* owner */
	const struct config *c;		/* owner */
	struct serve_tenants *tenants;	/* owner; accounting of every job */
	struct serve_metrics *metrics;	/* owner */
	struct runner_pool *pool;	/* owner; NULL: runs start cold */
	const char *tmp_dir;		/* owner; for staged files */
	void (*on_idle)(void *);	/* owner: after a run or a kill-all */
	void *arg;			/* ended, or a reply was written */
	struct serve_job_list waiting, running;
	int killing;			/* kill-all threads in flight */
	int sending;			/* run replies not yet written */
};

void serve_queue_init(struct serve_queue *q);

/* Admits a parsed run of tenant for req (serve_tenants_admit): starts it or
 * queues it, and then owns *r (zeroed here) and answers req itself.
 * -EAGAIN: the tenant is over its limit (nothing was counted; the caller
 * answers 429 and keeps *r); -ENOMEM (the caller answers 500). t0_ms: the
 * request's arrival, for the latency histogram. */
int serve_queue_submit(struct serve_queue *q, struct evhttp_request *req,
    size_t tenant, int64_t t0_ms, struct serve_req *r);

/* Answers every queued run with 503 and why. */
void serve_queue_flush(struct serve_queue *q, const char *why);
/* Cancels every running run (they report closed_early). */
void serve_queue_cancel(struct serve_queue *q);
/* Cancels running runs, answers queued ones 503, then removes every
 * Cordon container from a thread and answers req ({removed, paused}). */
void serve_queue_kill_all(struct serve_queue *q, struct evhttp_request *req);
/* True while a run or a kill-all is in flight. */
bool serve_queue_busy(const struct serve_queue *q);

/* server.c: one accepting socket of the service. */
struct serve_listener {
	struct serve_server *s;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	bool tcp;			/* TCP: a bearer token is required */
};

struct serve_server {
	const struct config *c;
	struct serve_prober *prober;	/* NULL: no scheduled probe */
	struct runner_pool *pool;	/* NULL: every run starts cold */
	char tmp_dir[PATH_MAX];
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char listen[64];		/* "" or the TCP address, for the log */
	struct event_base *base;
	struct serve_listener lis[2];
	size_t nlis;
	struct event *sig_ev[2];
	struct serve_tenants tenants;
	struct serve_metrics metrics;
	struct serve_queue queue;
	struct serve_sessions sessions;	/* sessions.h */
	bool paused, draining;
	struct runner_pool_stats pool_at_signal;	/* for the summary */
};

/* notes.c: the service's log lines (common/log.h, on stderr). */
void serve_note_startup(const struct serve_server *s, int64_t pool);
/* runner_pool_opts.on_note: fills, failures, given-up starts. */
void serve_note_pool(void *arg, const struct runner_pool_note *n);
/* On SIGTERM/SIGINT, before the drain starts (or cancels, if already
 * draining). */
void serve_note_signal(struct serve_server *s, int sig);
/* After the loop: stops the pool (joining its thread), removes what still
 * carries this process's pid, and logs the summary. */
void serve_note_shutdown(struct serve_server *s);

/* routes.c: evhttp's callback for every request on a listener (arg). */
void serve_routes_handle(struct evhttp_request *req, void *arg);

#endif
