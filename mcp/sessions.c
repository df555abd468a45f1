/*
 * Named sessions of one MCP connection (internal.h): run_code's `session`
 * argument names a session the agent chose; the first call with a name
 * starts its container (runner/session.h), later calls run in the same
 * interpreter, and every session ends when the server is freed (the
 * connection closed). One call at a time per session: a second call with
 * the same name while one runs is refused. Calls may come from two
 * threads, so the table has a lock; it is never held while a container
 * starts or a call runs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "mcp/internal.h"
#include "runner/session.h"

struct mcp_session {
	char name[MCP_SESSION_NAME_MAX + 1];
	struct runner_session *rs;	/* NULL while it starts */
	bool busy;
};

struct mcp_sessions {
	pthread_mutex_t mu;
	struct mcp_session *v[MCP_SESSIONS_MAX];
	size_t n, max;
};

bool
mcp_session_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= MCP_SESSION_NAME_MAX && strspn(name,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-") == n;
}

struct mcp_sessions *
mcp_sessions_new(size_t max)
{
	struct mcp_sessions *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		free(t);
		return NULL;
	}
	t->max = max < MCP_SESSIONS_MAX ? max : MCP_SESSIONS_MAX;
	return t;
}

void
mcp_sessions_free(struct mcp_sessions *t)
{
	if (t == NULL)
		return;
	/* No call runs any more: the connection is closed. */
	for (size_t i = 0; i < t->n; i++) {
		runner_session_free(t->v[i]->rs);
		free(t->v[i]);
	}
	pthread_mutex_destroy(&t->mu);
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

/* Removes entry i (lock held). */
static void
drop(struct mcp_sessions *t, size_t i)
{
	free(t->v[i]);
	t->v[i] = t->v[--t->n];
}

int
mcp_sessions_call(struct mcp_sessions *t, const struct config *c,
    const char *name, const char *label, const struct runner_request *req,
    struct runner_result *res, bool *is_new, bool *ended, char *err,
    size_t errlen)
{
	struct runner_session_opts o = { .label = label, .net = req->net,
	    .policy = req->policy, .profile = req->profile,
	    .in = req->in, .nin = req->nin, .cancel = req->cancel };
	struct mcp_session *se = NULL;
	struct runner_session *gone = NULL;
	bool repolicy = false;
	size_t i;
	int rc;

	*is_new = *ended = false;
	pthread_mutex_lock(&t->mu);
	for (i = 0; i < t->n && strcmp(t->v[i]->name, name) != 0; i++)
		;
	if (i < t->n && t->v[i]->busy) {
		pthread_mutex_unlock(&t->mu);
		snprintf(err, errlen, "a call is already running in session "
		    "'%s' (one call at a time per session)", name);
		return -EBUSY;
	}
	if (i == t->n && t->n >= t->max) {
		pthread_mutex_unlock(&t->mu);
		snprintf(err, errlen, "this connection has %zu sessions, its "
		    "limit (serve.sessions_per_tenant): reuse one", t->n);
		return -EAGAIN;
	}
	if (i == t->n && (t->v[i] = calloc(1, sizeof(*se))) == NULL) {
		pthread_mutex_unlock(&t->mu);
		return -ENOMEM;
	}
	if (i == t->n) {
		util_strlcpy(t->v[i]->name, name, sizeof(t->v[i]->name));
		t->n++;
	}
	se = t->v[i];
	se->busy = true;
	pthread_mutex_unlock(&t->mu);

	rc = 0;
	if (se->rs == NULL) {
		*is_new = true;
		rc = runner_session_start(c, &o, &se->rs, err, errlen);
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
	if (rc == 0)
		rc = runner_session_call(se->rs, req, res, err, errlen);

	pthread_mutex_lock(&t->mu);
	se->busy = false;
	if (se->rs == NULL || runner_session_ended(se->rs)) {
		*ended = se->rs != NULL;
		gone = se->rs;
		for (i = 0; i < t->n && t->v[i] != se; i++)
			;
		drop(t, i);
	}
	pthread_mutex_unlock(&t->mu);
	runner_session_free(gone);
	return rc;
}
