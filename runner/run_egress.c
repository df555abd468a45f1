/*
 * A proxy-mode run's steps with the proxy's control socket (run_internal.h):
 * the policy check, the registration and the unregistration that brings
 * back the run's egress report.
 */
#include "runner/run_internal.h"

#include <stdio.h>

#include "common/util.h"
#include "runner/egress.h"
#include "runner/pool.h"

/* Seconds the proxy keeps a run's credential past the run's deadline: the
 * unregister normally comes first; this only bounds a runner that died. */
#define RUN_EGRESS_GRACE_MS 5000

/* Whether the run may take a pooled container (runner.c's
 * run_take_warm takes one only then). */
static bool
run_may_take(const struct run *r)
{
	const struct runner_request *q = r->req;

	return q->pool != NULL && !q->debug && r->lang == CONFIG_LANG_PYTHON &&
	    q->nin == 0 && q->out_dir == NULL;
}

static void *
netcheck_main(void *arg)
{
	struct run_netcheck *k = arg;

	k->rc = netsetup_ready(k->c, NULL, k->err, sizeof(k->err));
	return NULL;
}

/* The run's own check of the network (a docker and several iptables
 * processes, about 90 ms) goes on a thread: the endpoint it would give
 * comes from the config and net.json alone. */
static int
netcheck_start(struct run *r, char *err, size_t errlen)
{
	struct run_netcheck *k = &r->check;
	int rc;

	if (k->started)
		return 0;
	if ((rc = netsetup_endpoint_load(r->c, &r->ep, err, errlen)) < 0)
		return rc;
	k->c = r->c;
	if (pthread_create(&k->thread, NULL, netcheck_main, k) != 0)
		/* No thread: checked here, before the start. */
		return netsetup_ready(r->c, NULL, err, errlen);
	k->started = true;
	return 0;
}

int
runner_run_egress_join(struct run *r, char *err, size_t errlen)
{
	struct run_netcheck *k = &r->check;

	if (!k->started)
		return 0;
	if (!k->joined) {
		(void)pthread_join(k->thread, NULL);
		k->joined = true;
	}
	if (k->rc < 0 && err != NULL)
		snprintf(err, errlen, "%s", k->err);
	return k->rc < 0 ? k->rc : 0;
}

int
runner_run_egress_admit(struct run *r, struct runner_result *res,
    char *err, size_t errlen)
{
	int rc;

	/* The pool checks the network while its containers wait (and
	 * retires them when a check fails): a run that takes one needs no
	 * check of its own. */
	if (!r->ep_pooled && run_may_take(r) &&
	    runner_pool_egress(r->req->pool, &r->ep) == 0) {
		r->ep_pooled = true;
	} else {
		r->ep_pooled = false;
		if ((rc = netcheck_start(r, err, errlen)) < 0)
			return rc;
	}
	if ((rc = netsetup_run_args(r->c, &r->ep, &r->na)) < 0) {
		snprintf(err, errlen, "cannot build the egress options");
		return rc;
	}
	/* A policy check that fails on a network that is not up says what
	 * the network check says ("run 'cordon net up'"). */
	if ((rc = runner_run_policy(r, res, err, errlen)) < 0 &&
	    runner_run_egress_join(r, NULL, 0) < 0)
		return runner_run_egress_join(r, err, errlen);
	return rc;
}

/* Proxy mode: the policy must exist in the running proxy before any
 * container starts. */
int
runner_run_policy(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	const char *policy = r->req->policy != NULL ? r->req->policy :
	    r->c->egress_default_policy;

	util_strlcpy(res->policy, policy, sizeof(res->policy));
	return runner_egress_policy_check(r->ep.control, policy, err, errlen);
}

/* Proxy mode: tells the proxy about this run (address, policy, token,
 * limits), after the seal and before any code is written. */
int
runner_run_register(struct run *r, const char *name, const char *addr,
    const char *policy, char *err, size_t errlen)
{
	int64_t t0 = time_mono_ms();
	struct runner_egress_reg reg = {
		.run = name, .addr = addr, .policy = policy, .token = r->token,
		.deadline_ms = time_wall_ms() + (r->deadline - t0) +
		    RUN_EGRESS_GRACE_MS,
		.max_conns = r->c->egress_run_max_conns,
		.bytes_up = r->c->egress_run_bytes_up,
		.bytes_down = r->c->egress_run_bytes_down,
	};
	char why[400];
	int rc;

	rc = runner_egress_register(r->ep.control, &reg, why, sizeof(why));
	r->reg_ms = time_mono_ms() - t0;
	r->tm->register_ms = r->reg_ms;
	if (rc < 0) {
		snprintf(err, errlen, "cannot register the run with the proxy: "
		    "%s", why);
		return rc;
	}
	util_strlcpy(r->run_id, name, sizeof(r->run_id));
	r->registered = true;
	return 0;
}

/* Ends the registration (the proxy closes what the run still has open)
 * and keeps its egress report, or why there is none. */
void
runner_run_unregister(struct run *r)
{
	int64_t t0 = time_mono_ms();
	char why[400];

	if (!r->registered)
		return;
	r->registered = false;
	if (runner_egress_unregister(r->ep.control, r->run_id, &r->egress,
	    why, sizeof(why)) < 0)
		snprintf(r->egress_error, sizeof(r->egress_error), "%.127s",
		    why);
	r->unreg_ms = time_mono_ms() - t0;
	r->tm->unregister_ms = r->unreg_ms;
}
