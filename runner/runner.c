/*
 * runner_run (runner.h): one job in one container: admitted, then a
 * sandbox acquired (sandbox.h: warm from the pool, else cold over the
 * Engine API or by a `docker run -i` CLI; in proxy mode sealed and
 * registered), the code handed over, waited for, its output collected,
 * the sandbox released. The deadline covers everything from the start
 * on; at the deadline, on cancel, and on every other exit path the
 * container is removed by name and any CLI's process group killed and
 * reaped. No --rm: the end state (OOMKilled, whether it started) is
 * inspected before removal.
 */
#include "runner/runner.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cbuf.h"
#include "common/sha256.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "proxy/cred.h"
#include "runner/collect.h"
#include "runner/debug.h"
#include "runner/docker.h"
#include "runner/docker_argv.h"
#include "runner/files.h"
#include "runner/image.h"
#include "runner/outwrap.h"
#include "runner/probe_ops.h"
#include "runner/relay.h"
#include "runner/run_internal.h"
#include "runner/slot.h"

static int
run_prepare(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	const struct runner_request *q = r->req;
	char hex[17];
	int rc;

	if (sha256_hex(q->code != NULL ? q->code : "", q->code_len,
	    res->code_sha256) < 0 || util_random_hex(hex, 8) < 0) {
		snprintf(err, errlen, "cannot hash the code or make a name");
		return -EIO;
	}
	snprintf(res->container, sizeof(res->container), "cordon-%s", hex);
	if (q->nin > 0 && (rc = files_stage_in(r->c, res->container, q->in,
	    q->nin, r->in_dir, sizeof(r->in_dir), err, errlen)) < 0)
		return rc;
	if (q->out_dir != NULL &&
	    util_random_hex(r->nonce, OUTWRAP_NONCE_LEN / 2) < 0)
		return -EIO;
	if (r->proxy && proxy_cred_token_new(r->token, sizeof(r->token)) < 0) {
		snprintf(err, errlen, "cannot make the run's proxy credential");
		return -EIO;
	}
	return 0;
}

/* The container's streams, from whichever sandbox ran it. */
static struct cbuf *
run_out(struct run *r)
{
	return r->sb.ops->out(&r->sb);
}

static struct cbuf *
run_err(struct run *r)
{
	return r->sb.ops->err(&r->sb);
}

/* Live output, if asked for: the relay between the read loop and the
 * caller (runner/relay.h). */
static void
run_relay_start(struct run *r)
{
	char marker[OUTWRAP_MARKER_LEN];
	bool out = r->req->out_dir != NULL;

	if (r->req->output == NULL)
		return;
	if (out)
		outwrap_marker(r->nonce, marker);
	runner_relay_init(&r->relay, r->req->output, r->req->output_arg,
	    r->lim.max_output, out ? marker : NULL, out ? sizeof(marker) : 0);
	r->sb.ops->set_output(&r->sb, runner_relay_chunk, &r->relay);
}

static int
run_wait(struct run *r, const char *name)
{
	int rc;

	/* A start cut short (over the API): nothing to wait for. */
	if (r->timed_out || r->cancelled) {
		runner_run_stop(r, name);
		return 0;
	}
	run_relay_start(r);
	rc = r->sb.ops->communicate(r);
	if (r->req->output != NULL) {
		r->sb.ops->set_output(&r->sb, NULL, NULL);
		runner_relay_flush(&r->relay);
	}

	if (rc == 0) {
		r->finished = true;
		runner_run_finish(r, name);
		return 0;
	}
	if (rc == -ETIMEDOUT)
		r->timed_out = true;
	else if (rc == -EINTR)
		r->cancelled = true;
	else if (rc == -EFBIG)
		r->cut = true;		/* --keep head: a stream's cap */
	else
		r->sandbox_error = true;
	runner_run_halt(r, name);
	return 0;
}

/* Moves the kept output into res, splitting off the --out archive. */
static int
run_collect(struct run *r, struct runner_result *res)
{
	return runner_collect(r->c, r->req->out_dir, r->nonce,
	    (size_t)r->lim.max_output, r->keep, run_out(r), run_err(r), res);
}

static enum runner_status
run_status(const struct run *r, const struct runner_result *res)
{
	if (r->cancelled)
		return RUNNER_CLOSED_EARLY;
	if (r->timed_out)
		return RUNNER_TIMEOUT;
	if (r->oom)
		return RUNNER_OOM;
	if (r->sandbox_error)
		return RUNNER_SANDBOX_ERROR;
	if (r->cut || res->out_truncated || res->err_truncated)
		return RUNNER_OUTPUT_TRUNCATED;
	return RUNNER_OK;
}

/* A start that never reached the job: say why, from the daemon. */
static int
run_explain_failure(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	const char *e = cbuf_data(run_err(r));
	int rc;

	/* The daemon refused the CLI itself (permission, not running). */
	if (docker_fault_text(e) != DOCKER_FAULT_OTHER)
		return docker_fault_say(docker_fault_text(e), NULL, e, err,
		    errlen);
	if ((rc = runner_preflight(r->c, r->req->net, err, errlen)) < 0)
		return rc;
	snprintf(err, errlen, "docker run failed (exit %d): %.*s",
	    r->cli_exit, (int)strcspn(e, "\n"), e);
	(void)res;
	return -EIO;
}

static void
run_cleanup(struct run *r)
{
	(void)runner_run_egress_join(r, NULL, 0);
	runner_run_unregister(r);
	cJSON_Delete(r->egress);
	r->egress = NULL;
	if (r->in_dir[0] != '\0')
		(void)util_rm_rf(r->in_dir);
	if (r->input != NULL)
		explicit_bzero(r->input, r->input_len);
	free(r->input);
	r->input = NULL;
	explicit_bzero(r->token, sizeof(r->token));
	/* Its container removed, or (warm) handed to the pool's thread
	 * with the slot. */
	runner_sandbox_release(r);
	/* Last: its container is gone by now, whichever way it ended. */
	runner_slot_release(&r->slot);
	free(r->own);
	r->own = NULL;
	r->c = NULL;
}

/* The run's profile (config_profile_use on a copy of the caller's config:
 * its image fields, image record and probe records from here on). */
static int
run_profile(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	const struct runner_request *req = r->req;
	int rc;

	if ((r->own = malloc(sizeof(*r->own))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*r->own = *r->c;
	if ((rc = config_profile_use(r->own, req->profile, req->lang, err,
	    errlen)) < 0)
		return rc;
	r->c = r->own;
	r->lang = config_lang_bit(req->lang);
	util_strlcpy(res->profile, config_profile_current(r->c),
	    sizeof(res->profile));
	util_strlcpy(res->lang, config_lang_name(r->lang), sizeof(res->lang));
	return 0;
}

/* Everything that may refuse or hold up a run before its container: the
 * request, the probe record (an automatic probe: it takes, and gives
 * back, a slot of its own, so a run never holds a slot while it waits for
 * a probe), egress and the policy (proxy mode), then a host-wide slot. */
static int
run_admit(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	const struct runner_request *req = r->req;
	int rc;

	/* Root only is said first, whatever else this user may not do. */
	if ((rc = runner_request_check(req, err, errlen)) < 0 ||
	    (req->debug && (rc = runner_debug_allowed(err, errlen)) < 0) ||
	    (rc = runner_limits_check(r->c, req, err, errlen)) < 0 ||
	    (req->out_dir != NULL && (rc = runner_out_dir_check(req->out_dir,
	    err, errlen)) < 0) ||
	    (rc = run_profile(r, res, err, errlen)) < 0 ||
	    (rc = runner_daemon_check(r->c, err, errlen)) < 0 ||
	    (rc = runner_audit_check(r->c, err, errlen)) < 0)
		return rc;
	if (req->debug && (rc = runner_debug_admit(r->c, req->net,
	    r->debug_pat, sizeof(r->debug_pat), err, errlen)) < 0)
		return rc;
	/* Once per run: a re-pin meanwhile (`cordon image build`) does not
	 * change the image of a run already admitted, and its probe check
	 * is for the image it runs in. */
	if ((rc = image_pinned_require(r->c, r->image, err, errlen)) < 0)
		return rc;
	util_strlcpy(res->image, r->image, sizeof(res->image));
	if (!req->skip_probe_check && (rc = runner_probe_ensure(r->c,
	    runner_run, runner_net_name(req->net), r->image, req->note,
	    req->note_arg, req->cancel, err, errlen)) < 0)
		return rc;
	if (req->net == RUNNER_NET_PROXY) {
		r->proxy = true;
		if ((rc = runner_run_egress_admit(r, res, err, errlen)) < 0)
			return rc;
	}
	return runner_slot_acquire(r->c, req->cancel, &r->slot, err, errlen);
}

int
runner_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen)
{
	struct run r = { .c = c, .req = req, .slot = { .fd = -1 } };
	int64_t t0 = time_mono_ms();
	int rc;

	memset(res, 0, sizeof(*res));
	runner_timing_reset(&res->timing);
	r.tm = &res->timing;
	res->exit_code = -1;
	res->net = req->net;
	err[0] = '\0';
	if ((rc = run_admit(&r, res, err, errlen)) < 0)
		goto bad;
	res->queue_ms = r.slot.waited_ms;
	res->timing.admit_ms = time_mono_ms() - t0 - r.slot.waited_ms;
	/* The deadline counts from here: neither an automatic probe nor the
	 * wait for a slot is the job's time. */
	r.start = time_mono_ms();
	runner_limits_resolve(c, req, &r.lim);
	res->limits = r.lim;
	r.keep = CBUF_KEEP_BOTH;
	if (req->keep != NULL)
		(void)cbuf_keep_parse(req->keep, &r.keep);	/* checked */
	r.deadline = r.start + r.lim.timeout_s * 1000;
	if ((rc = run_prepare(&r, res, err, errlen)) < 0)
		goto bad;
	if ((rc = runner_sandbox_acquire(&r, res, err, errlen)) < 0)
		goto bad;
	(void)run_wait(&r, res->container);
	runner_run_unregister(&r);
	/* Exit 125 with no container that ever started: a refusal by
	 * docker (unknown runtime, missing image, daemon down): an error,
	 * not a result. So is any exit of a CLI that could not reach the
	 * daemon (permission denied on its socket: 126). */
	if (r.finished && r.not_started && (r.cli_exit == 125 ||
	    docker_fault_text(cbuf_data(run_err(&r))) != DOCKER_FAULT_OTHER)) {
		rc = run_explain_failure(&r, res, err, errlen);
		goto bad;
	}
	res->exit_code = r.finished ? r.cli_exit : -1;
	if ((rc = run_collect(&r, res)) < 0)
		goto bad;
	res->status = run_status(&r, res);
	res->duration_ms = time_mono_ms() - r.start;
	if (req->debug)
		runner_debug_result(r.debug_pat, r.id, res);
	if (r.proxy) {
		res->egress = r.egress;
		r.egress = NULL;
		util_strlcpy(res->egress_error, r.egress_error,
		    sizeof(res->egress_error));
		res->egress_register_ms = r.reg_ms;
		res->egress_unregister_ms = r.unreg_ms;
	}
	run_cleanup(&r);
	/* No audit line, no result (audit_required): the log was writable
	 * when the run was admitted, so this is a full disk or the like. */
	if ((rc = runner_audit_finish(c, req->session, res, err, errlen)) < 0) {
		runner_result_cleanup(res);
		res->exit_code = -1;
		return rc;
	}
	return 0;
bad:
	run_cleanup(&r);
	runner_result_cleanup(res);
	res->exit_code = -1;
	if (err[0] == '\0')
		snprintf(err, errlen, "%s", strerror(-rc));
	return rc;
}
