/*
 * Named sessions of one MCP connection (internal.h): run_code's `session`
 * argument names a session the agent chose; the first call with a name
 * starts its container (runner/session.h), later calls run in the same
 * interpreter, and every session ends when the server is freed (the
 * connection closed), or before: unused for mcp.session_idle_s, or older
 * than mcp.session_life_s (a call then running is cancelled and ends it),
 * or its container gone; a thread of the table's looks every second, as
 * serve's tick does, and removes those. One call at a time per session: a
 * second call with the same name while one runs is refused. The table is
 * the job layer's (jobs/sessions.h: owner 0; it remembers why the last
 * ones ended, so a call that starts a name afresh can say why its session
 * before ended);
 * calls may come from two threads, and its lock is never held while a
 * container starts or a call runs.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "jobs/sessions.h"
#include "mcp/internal.h"
#include "runner/session.h"

struct mcp_sessions {
	struct jobs_sessions *table;	/* owner 0: this connection */
	size_t max;
	int64_t idle_s, life_s;
	/* The expiry's thread, stopped by mcp_sessions_free. */
	pthread_t reaper;
	bool reaping, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

bool
mcp_session_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= MCP_SESSION_NAME_MAX && strspn(name,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-") == n;
}

/* One the table ended (jobs_sessions_expire): idle ones only here (a
 * busy one is ended by its call). Its container goes on this thread. */
static void
reaped(struct jobs_session *se, const char *why, bool now, void *arg)
{
	(void)arg;
	if (!now)
		return;
	log_info("mcp: session '%s' ended (%s); its next call starts a new "
	    "one", se->name, why);
	runner_session_free(se->rs);
	jobs_session_free(se);
}

static void *
reap(void *arg)
{
	struct mcp_sessions *t = arg;
	struct timespec at, now;

	clock_gettime(CLOCK_MONOTONIC, &at);
	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		/* Every second; a wake-up before that (spurious, or the
		 * stop) waits for the same moment again. */
		at.tv_sec++;
		while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu,
		    &at) != ETIMEDOUT)
			;
		if (t->stop)
			break;
		pthread_mutex_unlock(&t->mu);
		jobs_sessions_expire(t->table, reaped, t);
		/* Removals may have taken long: the next look is a second
		 * from now, not from a moment long past. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > at.tv_sec)
			at = now;
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

struct mcp_sessions *
mcp_sessions_new(size_t max, int64_t idle_s, int64_t life_s)
{
	struct jobs_sessions_opts o = { .remember_gone = true };
	struct mcp_sessions *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	if (t == NULL)
		return NULL;
	t->max = max < MCP_SESSIONS_MAX ? max : MCP_SESSIONS_MAX;
	t->idle_s = idle_s;
	t->life_s = life_s;
	if ((t->table = jobs_sessions_new(&o)) == NULL)
		goto bad;
	if (pthread_mutex_init(&t->mu, NULL) != 0)
		goto bad_table;
	if (pthread_condattr_init(&ca) != 0)
		goto bad_mu;
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
	    pthread_cond_init(&t->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		goto bad_mu;
	}
	pthread_condattr_destroy(&ca);
	/* It takes no signal: cordon mcp's reading thread gets them (and the
	 * threads its removals start inherit this mask). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&t->reaper, NULL, reap, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		goto bad_cv;
	t->reaping = true;
	return t;
bad_cv:
	pthread_cond_destroy(&t->cv);
bad_mu:
	pthread_mutex_destroy(&t->mu);
bad_table:
	jobs_sessions_free(t->table);
bad:
	free(t);
	return NULL;
}

void
mcp_sessions_free(struct mcp_sessions *t)
{
	if (t == NULL)
		return;
	if (t->reaping) {
		pthread_mutex_lock(&t->mu);
		t->stop = true;
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->reaper, NULL);
	}
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	/* No call runs any more: the connection is closed. */
	jobs_sessions_free(t->table);
	free(t);
}

/* A later call may not change what the session was started with: its net
 * mode and profile (NULL: the one python gets). -EINVAL with a reason in
 * err when it names other ones. A proxy-mode session's policy is the one
 * thing a call may change: naming another sets *repolicy (the caller
 * changes it live); not naming one keeps the session's. */
static int
same_settings(const struct config *c, const struct runner_session *rs,
    const char *name, const struct runner_request *req, bool *repolicy,
    char *err, size_t errlen)
{
	const char *policy = req->policy != NULL ? req->policy :
	    runner_session_policy(rs);
	const struct config_profile *p;
	int rc;

	*repolicy = false;
	if (req->nin > 0) {
		snprintf(err, errlen, "session '%s' has started: 'files' go "
		    "only with the call that starts a session (they are in "
		    "/in); write later data from the code", name);
		return -EINVAL;
	}
	if ((rc = config_profile_pick(c, req->profile, "python", &p, err,
	    errlen)) < 0)
		return rc;
	if (req->net != runner_session_net(rs) ||
	    strcmp(p->name, runner_session_profile(rs)) != 0) {
		snprintf(err, errlen, "session '%s' runs with network \"%s\"%s"
		    "%s%s and profile %s: a call in it may not name others "
		    "(use another session name; only a proxy-mode session's "
		    "policy may change)", name,
		    runner_net_name(runner_session_net(rs)),
		    runner_session_net(rs) == RUNNER_NET_PROXY ? ", policy \"" :
		    "", runner_session_net(rs) == RUNNER_NET_PROXY ?
		    runner_session_policy(rs) : "",
		    runner_session_net(rs) == RUNNER_NET_PROXY ? "\"" : "",
		    runner_session_profile(rs));
		return -EINVAL;
	}
	*repolicy = req->net == RUNNER_NET_PROXY &&
	    strcmp(policy, runner_session_policy(rs)) != 0;
	return 0;
}

int
mcp_sessions_call(struct mcp_sessions *t, const struct config *c,
    const char *name, const char *label, const struct runner_request *req,
    struct runner_result *res, bool *is_new, bool *ended, char *before,
    size_t beforelen, char *err, size_t errlen)
{
	struct runner_session_opts o = { .label = label, .net = req->net,
	    .policy = req->policy, .profile = req->profile,
	    .in = req->in, .nin = req->nin, .cancel = req->cancel,
	    .max_lifetime_s = t->life_s };
	struct jobs_session *se;
	bool repolicy = false, ran = false, gone;
	const char *why;
	int rc;

	*is_new = *ended = false;
	if (beforelen > 0)
		before[0] = '\0';
	/* Its limit: no more than max at once; a name in use by a call (or
	 * still starting) is refused, as its second call would wait. */
	rc = jobs_sessions_acquire(t->table, 0, name,
	    JOBS_SESSION_FIND_OR_NEW, t->max, &se, NULL);
	if (rc == -EBUSY) {
		snprintf(err, errlen, "a call is already running in session "
		    "'%s' (one call at a time per session)", name);
		return rc;
	}
	if (rc == -EAGAIN) {
		snprintf(err, errlen, "this connection has %zu sessions, its "
		    "limit (serve.sessions_per_tenant): reuse one",
		    jobs_sessions_count(t->table, 0));
		return rc;
	}
	if (rc < 0)
		return rc;
	if (rc == 1) {
		struct runner_session *rs;

		*is_new = true;
		/* A name whose session ended: why, as serve says it. */
		if (beforelen > 0 && !jobs_sessions_gone(t->table, 0, name,
		    before, beforelen))
			before[0] = '\0';
		se->idle_s = t->idle_s;
		se->life_s = t->life_s;
		if ((rc = runner_session_start(c, &o, &rs, err, errlen)) < 0) {
			jobs_session_start_failed(se);
			return rc;
		}
		/* Its first call follows: busy at once. Nothing asks a
		 * starting one to end (the expiry leaves those; the
		 * connection's close comes after the calls). */
		(void)jobs_session_started(se, rs, true);
	} else if ((rc = same_settings(c, se->rs, name, req, &repolicy, err,
	    errlen)) == 0 && repolicy) {
		/* The session's egress under the named policy from now on
		 * (its open connections the new one denies are closed). */
		cJSON *answer = NULL;
		if ((rc = runner_session_policy_change(se->rs, req->policy,
		    &answer, err, errlen)) == 0)
			runner_session_policy_set(se->rs, req->policy);
		cJSON_Delete(answer);
	}
	if (rc == 0) {
		/* Cancelled by the agent, or by the session's end (its
		 * lifetime, asked by the table's thread). */
		struct runner_request rq = *req;

		rq.cancel_session = &se->cancel;
		ran = true;
		rc = runner_session_call(se->rs, &rq, res, err, errlen);
	}
	/* A call that ended its session drops the name: the next call with
	 * it starts afresh. One refused before it ran is no use of the
	 * session: its idle clock stays, as serve's does. Remembered with
	 * the call's status when the call ended it (as serve's); an end the
	 * table asked (the lifetime, which also cancels the call) keeps the
	 * why it was asked with. */
	gone = ran && runner_session_ended(se->rs);
	why = runner_status_name(rc < 0 ? RUNNER_SANDBOX_ERROR : res->status);
	if (ran ? jobs_session_put(se, gone, why) :
	    jobs_session_unhold(se, why)) {
		*ended = true;
		runner_session_free(se->rs);
		jobs_session_free(se);
	}
	return rc;
}
