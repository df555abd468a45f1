/*
 * runner_run (runner.h): one job in one fresh container, started by a
 * `docker run -i` process or (cold, offline, default daemon: apirun.h)
 * over the Engine API socket. The deadline covers everything from the
 * start on; at the deadline, on cancel, and on every other exit path the
 * container is removed by name (`docker rm -f`) and any CLI's process
 * group killed and reaped. No --rm: the end state (OOMKilled, whether it
 * started) is inspected before removal.
 */
#include "runner/runner.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cbuf.h"
#include "common/proc.h"
#include "common/sha256.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "proxy/cred.h"
#include "runner/apirun.h"
#include "runner/collect.h"
#include "runner/container.h"
#include "runner/debug.h"
#include "runner/docker.h"
#include "runner/docker_argv.h"
#include "runner/dockerapi.h"
#include "runner/egress.h"
#include "runner/files.h"
#include "runner/image.h"
#include "runner/oomlog.h"
#include "runner/outwrap.h"
#include "runner/pool.h"
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

/* The container's stdin, once its name (the run id) is known: the proxy
 * credential line (proxy mode), the --out wrapper's line (its nonce, and
 * how many leading bytes of each stream it passes on before it holds back
 * the end: the same cut as the host's, see run_rekeep), the code. */
static int
run_input(struct run *r, const char *name)
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

/* Bytes of stdout to keep: the job's cap, plus the --out archive. */
static size_t
stdout_cap(const struct run *r)
{
	const struct config_limits *l = &r->c->limits;

	if (r->req->out_dir == NULL)
		return (size_t)r->lim.max_output;
	return (size_t)(r->lim.max_output + 256 + l->out_max_bytes +
	    (uint64_t)l->out_max_files * 1024 + 20480);
}

/* The container's streams, from whichever path ran it. */
static struct cbuf *
run_out(struct run *r)
{
	return r->api != NULL ? apirun_stdout(r->api) : proc_stdout(r->p);
}

static struct cbuf *
run_err(struct run *r)
{
	return r->api != NULL ? apirun_stderr(r->api) : proc_stderr(r->p);
}

/* The API path: a start cut short by the deadline or a cancel is a
 * result (run_wait stops it), as for the CLI; a refusal by the daemon is
 * explained as the CLI path's (run_explain_failure), with the daemon's
 * own answer when the preflight finds nothing wrong. */
static int
run_spawn_api(struct run *r, const struct container_start *cs,
    const char *name, char *err, size_t errlen)
{
	char why[512];
	int rc, prc;

	rc = container_api_start(r->c, cs, r->deadline, r->req->cancel,
	    &r->api, why, sizeof(why));
	if (rc == -ETIMEDOUT || rc == -EINTR) {
		r->timed_out = rc == -ETIMEDOUT;
		r->cancelled = rc == -EINTR;
		return 0;
	}
	if (rc < 0) {
		runner_run_stop(r, name);
		/* A daemon gone meanwhile says so (docker-unavailable); a
		 * refusal is explained as the CLI path's. */
		if (rc != -EIO && (prc = runner_daemon_check(r->c, err,
		    errlen)) < 0)
			return prc;
		if (rc == -EIO && (prc = runner_preflight(r->c, r->req->net,
		    err, errlen)) < 0)
			return prc;
		snprintf(err, errlen, "%s", why);
	}
	return rc;
}

static int
run_spawn(struct run *r, const char *name, char *err, size_t errlen)
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
		.stdout_max = stdout_cap(r),
		.stderr_max = (size_t)r->lim.max_output,
		/* --out: the archive follows the job's (already capped)
		 * stdout, and must come through whole. */
		.stdout_keep = r->req->out_dir != NULL ? CBUF_KEEP_HEAD :
		    r->keep,
		.stderr_keep = r->keep,
		.stop_at_cap = r->keep == CBUF_KEEP_HEAD,
	};

	int rc;

	/* Cold runs only (a warm one's container came from the pool).
	 * Proxy mode keeps the CLI: its egress options are CLI flags, and
	 * its seal waits for a running container (container_seal). Debug
	 * runs keep it too (runner/debug.h reads the CLI's container). */
	r->use_api = !r->proxy && !r->req->debug &&
	    dockerapi_cold_usable(r->c);
	if (r->use_api)
		return run_spawn_api(r, &cs, name, err, errlen);
	if ((rc = container_spawn(r->c, &cs, &r->p)) < 0)
		snprintf(err, errlen, "cannot run %s: %s", r->c->docker,
		    strerror(-rc));
	return rc;
}

/* The run misses the pool and starts its own container: counted there
 * (against the refill's starts) until it ends. 0: start cold. */
static int
run_miss(struct run *r)
{
	runner_pool_count_miss(r->req->pool);
	r->cold = true;
	return 0;
}

/* Takes a warm container from the pool when the run can use one: it was
 * started by the same argv as a cold one (container_spawn), with python
 * (proxy mode: the prelude) already waiting on stdin, and (egress mode)
 * sealed. 1 when taken (and, proxy mode, registered), 0 to start cold, or
 * a negative errno (the container is r->p, to stop). */
static int
run_take_warm(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	const struct runner_request *q = r->req;
	struct pool_entry e;
	int64_t t0 = time_mono_ms();
	int rc;

	/* A debug run always starts its own container, in the debug
	 * runtime; pooled ones run in the mode's. */
	if (q->pool == NULL || q->debug)
		return 0;
	/* Pooled containers wait in their language's command line (the
	 * pool's image, its profile: the image ID below must match too). */
	if (r->lang != runner_pool_lang(q->pool))
		return run_miss(r);
	if (q->nin > 0 || q->out_dir != NULL || runner_pool_take(q->pool,
	    q->net, r->image, &r->lim, r->proxy ? &r->ep : NULL, &e) < 0)
		return run_miss(r);
	r->tm->start_ms = time_mono_ms() - t0;
	if (run_input(r, e.name) < 0 || proc_feed(e.x, r->input,
	    r->input_len, stdout_cap(r), (size_t)r->lim.max_output,
	    r->keep) < 0) {
		/* Cannot happen for a fresh entry; never use it half-way. */
		(void)container_remove(r->c, e.name);
		proc_free(e.x);
		proc_free(e.p);
		free(r->input);
		r->input = NULL;
		runner_pool_run_done(q->pool);
		return run_miss(r);
	}
	proc_stop_at_cap(e.x, r->keep == CBUF_KEEP_HEAD);
	r->p = e.x;
	r->holder = e.p;
	util_strlcpy(r->name, e.name, sizeof(r->name));
	util_strlcpy(res->container, e.name, sizeof(res->container));
	res->warm = true;
	r->warm = true;
	/* proc_feed only queued the input: nothing is written before
	 * run_wait, so the proxy knows the run before the code runs. */
	if (r->proxy && (rc = runner_run_register(r, e.name, e.addr,
	    res->policy, err, errlen)) < 0)
		return rc;
	return 1;
}

/* Proxy mode: a run that missed the pool after relying on the pool's
 * check of the egress network checks it itself (timing_ms: admit). */
static int
run_miss_egress(struct run *r, struct runner_result *res, char *err,
    size_t errlen)
{
	int64_t t0 = time_mono_ms();
	int rc = runner_run_egress_admit(r, res, err, errlen);

	r->tm->admit_ms += time_mono_ms() - t0;
	return rc;
}

/* Proxy mode, cold: waits until the container runs, then seals it (the
 * start's and the seal's times). */
static int
run_seal(struct run *r, const char *name, char *err, size_t errlen)
{
	int64_t running = 0;
	int rc;

	rc = container_seal(r->c, &r->ep, name, r->deadline, r->addr,
	    &running, err, errlen);
	if (running > 0) {
		r->tm->start_ms = running - r->t_begin;
		r->tm->seal_ms = time_mono_ms() - running;
	}
	return rc;
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
	if (r->api != NULL)
		apirun_set_output(r->api, runner_relay_chunk, &r->relay);
	else
		proc_set_output(r->p, runner_relay_chunk, &r->relay);
}

/* A warm run's exec, watched with its sandbox: when the sandbox dies
 * (memory), runsc's exec may never end. Once the holder's `docker run`
 * has ended, the exec gets RUN_HOLDER_GRACE_MS to end too, then its CLI
 * is killed, and the run is judged by the container's end state
 * (runner_run_finish). proc_communicate's result. */
static int
run_communicate_warm(struct run *r)
{
	int64_t slice;
	int rc;

	for (;;) {
		slice = time_mono_ms() + 100;
		rc = proc_communicate(r->p, slice < r->deadline ? slice :
		    r->deadline, r->req->cancel);
		if (rc != -ETIMEDOUT || time_mono_ms() >= r->deadline)
			return rc;
		if (proc_gone(r->holder))
			break;
	}
	slice = time_mono_ms() + RUN_HOLDER_GRACE_MS;
	rc = proc_communicate(r->p, slice < r->deadline ? slice : r->deadline,
	    r->req->cancel);
	if (rc != -ETIMEDOUT || time_mono_ms() >= r->deadline)
		return rc;
	r->exec_lost = true;
	proc_kill(r->p, SIGKILL);
	(void)proc_reap(r->p, time_mono_ms() + 5000);
	return 0;
}

static int
run_wait(struct run *r, const char *name)
{
	int rc;

	/* An API start cut short: nothing to wait for. */
	if (r->timed_out || r->cancelled) {
		runner_run_stop(r, name);
		return 0;
	}
	run_relay_start(r);
	rc = r->api != NULL ? apirun_communicate(r->api, r->deadline,
	    r->req->cancel) : r->warm ? run_communicate_warm(r) :
	    proc_communicate(r->p, r->deadline, r->req->cancel);
	if (r->req->output != NULL) {
		if (r->api != NULL)
			apirun_set_output(r->api, NULL, NULL);
		else
			proc_set_output(r->p, NULL, NULL);
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
	/* Off the answer's path: the removal, the CLIs, the slot, the
	 * pool's count, all on a thread of the pool's (a thread that cannot
	 * start: here and now). */
	if (r->remove_later && runner_pool_remove_later(r->req->pool, r->name,
	    r->p, r->holder, &r->slot) == 0) {
		r->p = NULL;
		r->holder = NULL;
		r->warm = false;
	} else if (r->remove_later) {
		(void)container_remove(r->c, r->name);
	}
	r->remove_later = false;
	runner_run_unregister(r);
	cJSON_Delete(r->egress);
	r->egress = NULL;
	proc_free(r->p);
	r->p = NULL;
	apirun_free(r->api);
	r->api = NULL;
	proc_free(r->holder);		/* its container is gone */
	r->holder = NULL;
	if (r->in_dir[0] != '\0')
		(void)util_rm_rf(r->in_dir);
	if (r->input != NULL)
		explicit_bzero(r->input, r->input_len);
	free(r->input);
	r->input = NULL;
	explicit_bzero(r->token, sizeof(r->token));
	if (r->warm)
		runner_pool_run_done(r->req->pool);
	if (r->cold)
		runner_pool_cold_done(r->req->pool);
	r->warm = r->cold = false;
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
	if ((rc = run_take_warm(&r, res, err, errlen)) < 0) {
		runner_run_stop(&r, res->container);
		goto bad;
	} else if (rc == 1) {
		/* Started, sealed, registered, waiting for its stdin. */
	} else if (r.ep_pooled && (rc = run_miss_egress(&r, res, err,
	    errlen)) < 0) {
		goto bad;
	} else if ((rc = run_input(&r, res->container)) < 0) {
		snprintf(err, errlen, "cannot assemble the job's stdin: %s",
		    strerror(-rc));
		goto bad;
	} else if ((r.t_begin = time_mono_ms(),
	    rc = run_spawn(&r, res->container, err, errlen)) < 0) {
		goto bad;
	} else if (r.proxy && ((rc = run_seal(&r, res->container, err,
	    errlen)) < 0 ||
	    (rc = runner_run_register(&r, res->container, r.addr, res->policy,
	    err, errlen)) < 0)) {
		/* The code is never written to a container not sealed, nor
		 * to one the proxy does not know. */
		runner_run_stop(&r, res->container);
		goto bad;
	} else if (r.proxy) {
		/* Sealed and registered: the code is handed over from here
		 * (timing_ms: start and seal are before). */
		r.t_begin = time_mono_ms();
	}
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
