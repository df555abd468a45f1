/*
 * One call of a session (session.h): the request frame written and the
 * result frame read against the call's deadline (session_io.c), its
 * output streamed and capped as a run's, and, when the container went
 * away without a frame, its end state as a run's (an OOM kill, the
 * driver's own exit, or a removal from outside). Any call that does not
 * end with its frame removes the container.
 */
#include "runner/session.h"
#include "runner/session_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cbuf.h"
#include "common/sha256.h"
#include "common/util.h"
#include "runner/container.h"
#include "runner/docker.h"
#include "runner/docker_argv.h"
#include "runner/files.h"
#include "runner/halt.h"
#include "runner/image.h"
#include "runner/oomlog.h"
#include "runner/probe_ops.h"
#include "runner/slot.h"

/* The container went away without a frame: its end state, like a run's
 * (runner.c run_finish): an OOM kill, the driver's own exit, or removed
 * from outside. */
static void
sess_gone(struct runner_session *s, struct runner_result *res)
{
	struct docker_state st = { 0 };
	int code, rc = -ENOENT;

	runner_session_reap(s, time_mono_ms() + SESSION_REAP_MS);
	code = runner_session_exit_code(s);
	if (code == 137 || code >= 125 || code < 0)
		rc = docker_inspect_state(s->c, s->name, &st);
	if (code == 137 && rc == 0 && !st.oom_killed &&
	    runner_oomlog_find(st.id))
		st.oom_killed = true;
	for (int i = 0; code == 137 && rc == 0 && !st.oom_killed && i < 4;
	    i++) {
		(void)poll(NULL, 0, 250);
		rc = docker_inspect_state(s->c, s->name, &st);
	}
	if (code == 137 && rc == 0 && st.oom_killed)
		res->status = RUNNER_OOM;
	else if (code < 0 || code >= 125)
		res->status = RUNNER_SANDBOX_ERROR;
	else
		res->status = RUNNER_OK;	/* the code ended the driver */
	res->exit_code = code;
}

/* The kept output of one stream (the driver sent its first head bytes
 * and its last ones; the count says what was dropped between), rebuilt as
 * the host's cap keeps it. */
static int
sess_stream(const unsigned char *kept, size_t len, uint64_t seen,
    size_t max, enum cbuf_keep keep, char **out, size_t *outlen,
    bool *truncated)
{
	struct cbuf *b = cbuf_new_rekept(max, keep, kept, len, seen);

	if (b == NULL)
		return -ENOMEM;
	*truncated = cbuf_truncated(b);
	*out = cbuf_steal(b, outlen);
	cbuf_free(b);
	return *out != NULL ? 0 : -ENOMEM;
}

/* A byte on the result stream between calls means the previous call's
 * code wrote to it (or a frame is late): never read it as this call's. */
static int
sess_check_quiet(struct runner_session *s)
{
	int rc;

	while ((rc = runner_session_read_out(s)) > 0)
		;
	if (rc == -EPIPE)
		return -EPIPE;
	return s->len == 0 ? 0 : -EPROTO;
}

static int
sess_call_io(struct runner_session *s, const struct runner_request *req,
    const struct runner_limits *lim, enum cbuf_keep keep, struct runner_session_io *io,
    unsigned char **msg)
{
	size_t max = (size_t)lim->max_output;
	size_t h = cbuf_keep_head(max, keep);
	char hdr[96];
	int n;

	n = runner_session_call_header(hdr, sizeof(hdr), s->seq, req->code_len,
	    h, max - h);
	if (n < 0 || (*msg = malloc((size_t)n + req->code_len)) == NULL)
		return -ENOMEM;
	memcpy(*msg, hdr, (size_t)n);
	if (req->code_len > 0)
		memcpy(*msg + n, req->code, req->code_len);
	io->out = *msg;
	io->out_len = (size_t)n + req->code_len;
	io->max_len = max;
	io->cancel = req->cancel;
	io->cancel_session = req->cancel_session;
	io->deadline = time_mono_ms() + lim->timeout_s * 1000;
	return 0;
}

/* The call's outcome from a frame. */
static int
sess_result(struct runner_session *s, const struct runner_session_io *io, size_t max,
    enum cbuf_keep keep, struct runner_result *res)
{
	const struct runner_session_frame *f = &io->f;
	int rc;

	res->exit_code = f->exit_code;
	if ((rc = sess_stream(s->buf + f->out_off, f->out_len, f->out_seen,
	    max, keep, &res->out, &res->out_len, &res->out_truncated)) < 0 ||
	    (rc = sess_stream(s->buf + f->err_off, f->err_len, f->err_seen,
	    max, keep, &res->err, &res->err_len, &res->err_truncated)) < 0)
		return rc;
	res->status = res->out_truncated || res->err_truncated ?
	    RUNNER_OUTPUT_TRUNCATED : RUNNER_OK;
	runner_session_consume(s, f->total);
	return 0;
}

/* After a call: the outputs (empty when none came) as strings. */
static int
sess_fill_empty(struct runner_result *res)
{
	if (res->out == NULL && (res->out = calloc(1, 1)) == NULL)
		return -ENOMEM;
	if (res->err == NULL && (res->err = calloc(1, 1)) == NULL)
		return -ENOMEM;
	return 0;
}

int
runner_session_call(struct runner_session *s,
    const struct runner_request *req, struct runner_result *res, char *err,
    size_t errlen)
{
	struct runner_request chk = { .code = req->code,
	    .code_len = req->code_len, .keep = req->keep };
	struct runner_slot slot = { .fd = -1 };
	struct runner_limits lim;
	enum cbuf_keep keep = CBUF_KEEP_BOTH;
	unsigned char *msg = NULL;
	struct runner_session_io io = { 0 };
	int64_t t0;
	int rc;

	memset(res, 0, sizeof(*res));
	/* None of a run's steps is a session call's (-1: did not happen),
	 * but duration_ms says how long it took. */
	runner_timing_reset(&res->timing);
	res->exit_code = -1;
	res->net = s->net;
	err[0] = '\0';
	if (s->ended) {
		snprintf(err, errlen, "the session has ended");
		return -ESHUTDOWN;
	}
	if ((rc = runner_request_check(&chk, err, errlen)) < 0 ||
	    (rc = runner_limits_check(s->c, req, err, errlen)) < 0)
		return rc;
	if (req->keep != NULL)
		(void)cbuf_keep_parse(req->keep, &keep);	/* checked */
	runner_limits_resolve(s->c, req, &lim);
	/* The container's memory and cpus are the session's. */
	res->limits = lim;
	res->limits.memory = s->lim.memory;
	res->limits.cpus = s->lim.cpus;
	if (sha256_hex(req->code != NULL ? req->code : "", req->code_len,
	    res->code_sha256) < 0)
		return -EIO;
	util_strlcpy(res->container, s->name, sizeof(res->container));
	util_strlcpy(res->image, s->image, sizeof(res->image));
	if ((rc = runner_slot_acquire(s->c, req->cancel, &slot, err,
	    errlen)) < 0)
		return rc;
	res->queue_ms = slot.waited_ms;
	t0 = time_mono_ms();
	s->seq++;
	if ((rc = sess_call_io(s, req, &lim, keep, &io, &msg)) < 0)
		goto out;
	if ((rc = sess_check_quiet(s)) == 0) {
		rc = runner_session_exchange(s, &io);
		if (rc == 0 && (io.f.seq != s->seq ||
		    io.f.kind == RUNNER_SESSION_READY))
			rc = -EPROTO;
	}
	if (rc == 0) {
		rc = sess_result(s, &io, (size_t)lim.max_output, keep, res);
	} else if (rc == -EPIPE) {
		sess_gone(s, res);
		runner_session_end(s);
		rc = 0;
	} else if (rc == -ETIMEDOUT || rc == -EINTR || rc == -EPROTO ||
	    rc == -EIO) {
		res->status = rc == -ETIMEDOUT ? RUNNER_TIMEOUT : rc == -EINTR ?
		    RUNNER_CLOSED_EARLY : RUNNER_SANDBOX_ERROR;
		if (rc == -EPROTO)
			snprintf(err, errlen, "the session's result stream "
			    "was not a frame of this call (the code wrote to "
			    "it?): the session ended");
		runner_session_end(s);
		rc = 0;
	}
	if (rc == 0)
		rc = sess_fill_empty(res);
	if (rc == 0)
		runner_session_egress_report(s, res);
out:
	free(msg);
	res->duration_ms = time_mono_ms() - t0;
	runner_slot_release(&slot);
	if (rc < 0) {
		runner_result_cleanup(res);
		res->exit_code = -1;
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	if ((rc = runner_audit_finish(s->c, s->label, res, err, errlen)) < 0) {
		runner_result_cleanup(res);
		res->exit_code = -1;
		return rc;
	}
	return 0;
}
