/*
 * Sessions in `cordon serve` (runner/session.h): `POST /v1/sessions`,
 * `POST /v1/sessions/ID/runs`, `DELETE /v1/sessions/ID`. A session belongs
 * to the tenant that created it: any other tenant gets 404 for its id. One
 * call at a time per session (a second concurrent call is refused 409).
 * Idle timeout, maximum lifetime and a container gone between calls are
 * noticed by a 1 s tick on the loop; kill-all and the service's stop end
 * every session. An ended session's id answers 404 with why it ended
 * (the table remembers the last JOBS_SESSIONS_GONE_MAX). Starting,
 * calling and ending run on worker threads; the table (jobs/sessions.h:
 * one entry per session, the tenant's index its owner) is ended from the
 * loop's thread only, and the accounting is that thread's.
 */
#ifndef CORDON_SERVE_SESSIONS_H
#define CORDON_SERVE_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "runner/runner.h"

#define SERVE_SESSION_IDLE_DEFAULT_S 300
#define SERVE_SESSION_LIFE_DEFAULT_S 3600
#define SERVE_SESSION_S_MAX 86400
#define SERVE_SESSION_ID_LEN 20		/* "ses_" + 16 hex */

/* A parsed `POST /v1/sessions` body. */
struct serve_session_opts {
	bool has_net;			/* false: the tenant's default */
	enum runner_net net;
	char policy[CONFIG_POLICY_MAX + 1];	/* "" none named */
	char profile[CONFIG_PROFILE_MAX + 1];	/* "": the config's current
						 * one ("default" names it) */
	int64_t idle_timeout_s;		/* 1..SERVE_SESSION_S_MAX */
	int64_t max_lifetime_s;		/* 1..SERVE_SESSION_S_MAX */
	cJSON *files;			/* NULL, or the `files` array as
					 * given (owned; checked later by
					 * stage_files_parse) */
};

/* Parses body[0..len): {net?, policy?, profile?, idle_timeout_s?,
 * max_lifetime_s?, files?}; profile is a profile name (its existence is
 * the caller's to check: config_profile_pick), "default" the config's
 * current one; files must be an array (its entries are the caller's to
 * check, with the config's caps: stage_files_parse). Unknown fields and
 * wrong types are refused, and so is a string that decodes to hold
 * U+0000; serve_session_opts_cleanup frees o.
 * 0, or -EINVAL with a one-line reason in err. Pure. */
int serve_session_opts_parse(const char *body, size_t len,
    struct serve_session_opts *o, char *err, size_t errlen);
void serve_session_opts_cleanup(struct serve_session_opts *o);

/* Parses a PATCH body: {"policy": NAME} and no other member; policy gets
 * NAME (plen >= CONFIG_POLICY_MAX + 1). A string that decodes to hold
 * U+0000 is refused. 0, or -EINVAL with a one-line reason in err. Pure. */
int serve_session_patch_parse(const char *body, size_t len, char *policy,
    size_t plen, char *err, size_t errlen);

/* The session id in a path "/v1/sessions/ID" or "/v1/sessions/ID/runs":
 * 1 for the session itself, 2 for its runs, 0 for "/v1/sessions", -1 for
 * anything else. id gets ID (SERVE_SESSION_ID_LEN + 1 bytes) when it has
 * the form of one. Pure. */
int serve_session_path(const char *path, char *id);

struct event;
struct event_base;
struct serve_conn;
struct serve_queue;
struct serve_tenants;
struct serve_metrics;
struct serve_work;
struct serve_session;
struct jobs_sessions;

struct serve_sessions {
	struct event_base *base;	/* owner */
	const struct config *c;		/* owner */
	struct serve_tenants *tenants;	/* owner */
	void (*on_idle)(void *);	/* owner: a thread ended */
	void *arg;
	struct jobs_sessions *table;	/* the live sessions */
	struct event *tick;
	int threads;			/* start/call/end threads in flight */
	int sending;			/* replies not yet written */
	struct serve_metrics *metrics;	/* owner; NULL: none kept */
	struct serve_metrics *tmetrics;	/* owner: per tenant, with metrics */
	const char *tmp_dir;		/* owner: where `files` are staged */
	/* Issue 39: starts and calls take their tenant's slot through the
	 * same admission as runs (queue or 429), and bodies are parsed on
	 * the parse workers. */
	struct serve_queue *queue;	/* owner */
	struct serve_work *work;	/* owner */
};

/* 0, or -ENOMEM. */
int serve_sessions_init(struct serve_sessions *ss);
/* The head of a request under /v1/sessions (path as above) of tenant:
 * answers what needs no body (GET, DELETE; 404, 405, 409, 429 over
 * sessions_per_tenant; 503 with unavailable when that is not NULL: paused
 * or draining) and returns false; true for a create or a call, whose body
 * the caller reads and then hands to serve_sessions_request. */
bool serve_sessions_head(struct serve_sessions *ss, struct serve_conn *c,
    size_t tenant, const char *path, const char *unavailable);
/* A create's or a call's body is in: parsed on a worker, then checked,
 * admitted (queued, or 429) and started; c is answered in the end. */
void serve_sessions_request(struct serve_sessions *ss, struct serve_conn *c,
    size_t tenant, const char *path);
/* Live sessions of tenant. */
int64_t serve_sessions_count(const struct serve_sessions *ss, size_t tenant);
/* Ends every session: idle ones now, a running call is cancelled and its
 * session ended when it returns. */
void serve_sessions_end_all(struct serve_sessions *ss, const char *why);
/* Copies the session figures into m (before rendering it). */
void serve_sessions_metrics(const struct serve_sessions *ss,
    struct serve_metrics *m);
/* True while a session exists or a thread of one is in flight (replies
 * still being written are counted in sending, not here). */
bool serve_sessions_busy(const struct serve_sessions *ss);
/* After the loop: frees (every session must have ended). */
void serve_sessions_cleanup(struct serve_sessions *ss);

#endif
