/*
 * Acquiring a run's sandbox (sandbox.h): a warm one from the pool when
 * the run can use one, else a cold one, over the Engine API or by the
 * CLI (the same choice for every run: debug runs keep the CLI), then in
 * proxy mode sealed and registered. And what every way
 * shares: the container's stdin and its stdout cap.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cbuf.h"
#include "common/util.h"
#include "runner/container.h"
#include "runner/debug.h"
#include "runner/dockerapi.h"
#include "runner/egress.h"
#include "runner/outwrap.h"
#include "runner/pool.h"
#include "runner/run_internal.h"
#include "runner/sandbox.h"

/* The container's stdin, once its name (the run id) is known: the proxy
 * credential line (proxy mode), the --out wrapper's line (its nonce, and
 * how many leading bytes of each stream it passes on before it holds back
 * the end: the same cut as the host's, see run_rekeep), the code. */
int
runner_sandbox_input(struct run *r, const char *name)
{
	char cred[RUNNER_EGRESS_CRED_LEN + 1];
	char wline[OUTWRAP_NONCE_LEN + 24];
	int rc;

	if (r->proxy && runner_egress_cred_line(cred, sizeof(cred), name,
	    r->token, &r->ep) < 0)
		return -EINVAL;
	snprintf(wline, sizeof(wline), "%s %zu", r->nonce,
	    cbuf_keep_head((size_t)r->lim.max_output, r->keep));
	rc = runner_egress_stdin(r->proxy ? cred : NULL,
	    r->req->out_dir != NULL ? wline : NULL, r->req->code,
	    r->req->code_len, &r->input, &r->input_len);
	explicit_bzero(cred, sizeof(cred));
	return rc;
}

size_t
runner_sandbox_stdout_cap(const struct run *r)
{
	const struct config_limits *l = &r->c->limits;

	if (r->req->out_dir == NULL)
		return (size_t)r->lim.max_output;
	return (size_t)(r->lim.max_output + 256 + l->out_max_bytes +
	    (uint64_t)l->out_max_files * 1024 + 20480);
}

/* Proxy mode: a run that missed the pool after relying on the pool's
 * check of the egress network checks it itself (timing_ms: admit). */
static int
sandbox_miss_egress(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	int64_t t0 = time_mono_ms();
	int rc = runner_run_egress_admit(r, res, err, errlen);

	r->tm->admit_ms += time_mono_ms() - t0;
	return rc;
}

/* A cold start, by the same container_start either way: over the API
 * when it is usable, proxy mode included (its stdin is held until the
 * seal); debug runs keep the CLI (runner/debug.h reads the CLI's
 * container). */
static int
sandbox_start_cold(struct run *r, const char *name, char *err,
    size_t errlen)
{
	struct container_start cs = {
		.name = name, .image = r->image, .session = r->req->session,
		.lim = &r->lim, .na = r->proxy ? &r->na : NULL,
		.runtime = r->req->debug ? runner_debug_runtime(r->c,
		    r->req->net) : NULL,
		.label_deadline_s = time_wall_ms() / 1000 + r->lim.timeout_s +
		    CONTAINER_GC_GRACE_S,
		.in_dir = r->in_dir[0] != '\0' ? r->in_dir : NULL,
		.out_wrapper = r->req->out_dir != NULL,
		.lang = r->lang,
		.input = r->input, .input_len = r->input_len,
		.stdout_max = runner_sandbox_stdout_cap(r),
		.stderr_max = (size_t)r->lim.max_output,
		/* --out: the archive follows the job's (already capped)
		 * stdout, and must come through whole. */
		.stdout_keep = r->req->out_dir != NULL ? CBUF_KEEP_HEAD :
		    r->keep,
		.stderr_keep = r->keep,
		.stop_at_cap = r->keep == CBUF_KEEP_HEAD,
	};

	if (!r->req->debug && dockerapi_cold_usable(r->c))
		return runner_sandbox_api_start(r, &cs, name, err, errlen);
	return runner_sandbox_cli_start(r, &cs, err, errlen);
}

int
runner_sandbox_acquire(struct run *r, struct runner_result *res,
    char *err, size_t errlen)
{
	int rc, prc;

	if ((rc = runner_sandbox_warm_take(r, res, err, errlen)) < 0)
		return rc;
	if (rc == 0) {
		if (r->ep_pooled && (rc = sandbox_miss_egress(r, res, err,
		    errlen)) < 0)
			return rc;
		if ((rc = runner_sandbox_input(r, res->container)) < 0) {
			snprintf(err, errlen, "cannot assemble the job's "
			    "stdin: %s", strerror(-rc));
			return rc;
		}
		r->t_begin = time_mono_ms();
		if ((rc = sandbox_start_cold(r, res->container, err,
		    errlen)) < 0) {
			/* A network that is not up says so, not the
			 * daemon's refusal of a network it does not know. */
			if (r->proxy && (prc = runner_run_egress_join(r, NULL,
			    0)) < 0)
				return runner_run_egress_join(r, err, errlen);
			return rc;
		}
	}
	/* A start cut short (deadline, cancel) is stopped by run_wait. */
	if (!r->proxy || r->timed_out || r->cancelled)
		return 0;
	/* The code is never written to a container not sealed, on a network
	 * not checked, nor to one the proxy does not know: a warm one's
	 * input is only queued. */
	if ((rc = runner_run_egress_join(r, err, errlen)) < 0 ||
	    (rc = r->sb.ops->egress(r, res->container, res->policy, err,
	    errlen)) < 0) {
		r->sb.ops->stop(r, res->container);
		return rc;
	}
	return 0;
}

void
runner_sandbox_release(struct run *r)
{
	if (r->sb.ops != NULL)
		r->sb.ops->release(r);
	if (r->sb.missed)
		runner_pool_cold_done(r->req->pool);
	memset(&r->sb, 0, sizeof(r->sb));
}
