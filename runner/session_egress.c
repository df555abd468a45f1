/*
 * Proxy-mode sessions (session.h, session_internal.h): one run identity at
 * the proxy for a session's whole life, made as a proxy-mode run makes its
 * own (runner.c): the policy checked and a token made before any
 * container, the container sealed and registered once it runs and before
 * the credential line (for the egress prelude) and the nonce line (for
 * the driver) are written, the proxy's report after each call, and the
 * unregister when the session ends.
 */
#include "runner/session_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runner/container.h"
#include "proxy/ctl.h"
#include "runner/egress.h"

/* The proxy keeps a session's credential this long past its lifetime: the
 * unregister at its end comes first; this only bounds a runner that died. */
#define SESSION_EGRESS_GRACE_MS 5000

/* Net proxy, before any container: egress up, the policy known to the
 * running proxy, the session's credential. */
int
runner_session_egress_admit(struct runner_session *s,
    const struct runner_session_opts *o, char *err, size_t errlen)
{
	const char *policy = o->policy != NULL && o->policy[0] != '\0' ?
	    o->policy : s->c->egress_default_policy;
	int rc;

	if (!util_strlcpy(s->policy, policy, sizeof(s->policy))) {
		snprintf(err, errlen, "egress policy name too long");
		return -EINVAL;
	}
	if ((rc = netsetup_ready(s->c, &s->ep, err, errlen)) < 0)
		return rc;
	if ((rc = netsetup_run_args(s->c, &s->ep, &s->na)) < 0) {
		snprintf(err, errlen, "cannot build the egress options");
		return rc;
	}
	if ((rc = runner_egress_policy_check(s->ep.control, s->policy, err,
	    errlen)) < 0)
		return rc;
	if (proxy_cred_token_new(s->token, sizeof(s->token)) < 0) {
		snprintf(err, errlen, "cannot make the session's proxy "
		    "credential");
		return -EIO;
	}
	return 0;
}

/* Net proxy, once the container runs and before anything is written to
 * it: the seal (which gives its address), then the registration, for the
 * session's whole lifetime. */
int
runner_session_egress_register(struct runner_session *s,
    const struct runner_session_opts *o, int64_t deadline_ms, char *err,
    size_t errlen)
{
	int64_t life = o->max_lifetime_s > 0 ? o->max_lifetime_s : 3600;
	struct runner_egress_reg reg = {
		.run = s->name, .addr = s->addr, .policy = s->policy,
		.token = s->token,
		.deadline_ms = time_wall_ms() + life * 1000 +
		    SESSION_EGRESS_GRACE_MS,
		.max_conns = s->c->egress_run_max_conns,
		.bytes_up = s->c->egress_run_bytes_up,
		.bytes_down = s->c->egress_run_bytes_down,
	};
	char why[400];
	int rc;

	if ((rc = container_seal(s->c, &s->ep, s->name, deadline_ms, s->addr,
	    NULL, err, errlen)) < 0)
		return rc;
	if ((rc = runner_egress_register(s->ep.control, &reg, why,
	    sizeof(why))) < 0) {
		snprintf(err, errlen, "cannot register the session with the "
		    "proxy: %s", why);
		return rc;
	}
	s->registered = true;
	return 0;
}

/* The driver's first input: (net proxy) the credential line for the
 * prelude, then the nonce line. Caller clears and frees *out. */
int
runner_session_first_lines(struct runner_session *s, unsigned char **out,
    size_t *outlen)
{
	char cred[RUNNER_EGRESS_CRED_LEN + 1];
	int rc;

	if (s->net == RUNNER_NET_PROXY && runner_egress_cred_line(cred,
	    sizeof(cred), s->name, s->token, &s->ep) < 0)
		return -EINVAL;
	rc = runner_egress_stdin(s->net == RUNNER_NET_PROXY ? cred : NULL,
	    s->nonce, NULL, 0, out, outlen);
	explicit_bzero(cred, sizeof(cred));
	return rc;
}

int
runner_session_policy_change(struct runner_session *s, const char *policy,
    cJSON **answer, char *err, size_t errlen)
{
	struct proxy_ctl_req req;
	char *line;
	int rc;

	*answer = NULL;
	if (s->net != RUNNER_NET_PROXY) {
		snprintf(err, errlen, "the session's net is \"none\": it has "
		    "no egress policy");
		return -EINVAL;
	}
	if (!s->registered) {
		snprintf(err, errlen, "the session is not registered with the "
		    "proxy");
		return -ESRCH;
	}
	proxy_ctl_req_reset(&req);
	req.op = PROXY_CTL_POLICY;
	if (!util_strlcpy(req.run, s->name, sizeof(req.run)) ||
	    !util_strlcpy(req.policy, policy, sizeof(req.policy)) ||
	    (line = proxy_ctl_format(&req)) == NULL) {
		snprintf(err, errlen, "bad policy request");
		return -EINVAL;
	}
	rc = runner_egress_call(s->ep.control, line, RUNNER_EGRESS_CALL_MS,
	    answer, err, errlen);
	free(line);
	return rc;
}

void
runner_session_policy_set(struct runner_session *s, const char *policy)
{
	util_strlcpy(s->policy, policy, sizeof(s->policy));
}

/* Ends the proxy's registration (it closes what the session still has
 * open) and keeps its last report for the call that ended the session. */
void
runner_session_egress_end(struct runner_session *s)
{
	char why[400];

	if (!s->registered)
		return;
	s->registered = false;
	cJSON_Delete(s->last_report);
	s->last_report = NULL;
	if (runner_egress_unregister(s->ep.control, s->name, &s->last_report,
	    why, sizeof(why)) < 0)
		snprintf(s->egress_error, sizeof(s->egress_error), "%.127s",
		    why);
}

/* Net proxy, after a call: the session's egress so far (the last report
 * when the call ended the session), or why there is none. */
void
runner_session_egress_report(struct runner_session *s,
    struct runner_result *res)
{
	char why[400];

	if (s->net != RUNNER_NET_PROXY)
		return;
	util_strlcpy(res->policy, s->policy, sizeof(res->policy));
	if (s->registered) {
		if (runner_egress_report(s->ep.control, s->name, &res->egress,
		    why, sizeof(why)) < 0)
			snprintf(res->egress_error, sizeof(res->egress_error),
			    "%.127s", why);
		return;
	}
	res->egress = s->last_report;
	s->last_report = NULL;
	if (res->egress == NULL)
		util_strlcpy(res->egress_error, s->egress_error[0] != '\0' ?
		    s->egress_error : "no egress report",
		    sizeof(res->egress_error));
}
