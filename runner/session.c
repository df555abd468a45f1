/*
 * Sessions (session.h): the container is started by the runner's own argv
 * builder (container_spec + docker_run_argv, with the session driver as
 * the fixed program), admitted by the same image and probe checks as a
 * run, and kept running between calls; each call writes one framed
 * request to `docker run -i`'s stdin and reads one result frame back from
 * its stdout against the call's deadline. Any call that does not end with
 * its frame removes the container. Net proxy: sealed and registered with
 * the proxy once, like a proxy-mode run (runner.c), before the credential
 * and nonce lines are written; unregistered when the session ends.
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

#define SESSION_DIAG_MAX 4096	/* docker's / the driver's own stderr */
#define SESSION_HALT_MS 1200	/* the kill and the drain at its end */
#define SESSION_RM_PATIENCE_MS 60000	/* runner_session_free: a failed
					 * removal is tried again this long */

void
runner_session_end(struct runner_session *s)
{
	int rc;

	if (s == NULL)
		return;
	s->ended = true;
	runner_session_egress_end(s);
	if (s->pid > 0 && !s->removed) {
		/* The container first, while its streams are still read (code
		 * may flood the result stream, and dockerd's kill waits for
		 * it), then no more reading, then the removal by name
		 * (killing `docker run` does not stop the container). */
		runner_session_close_fd(&s->in_fd);
		if (!s->reaped)
			(void)container_halt(s->c, s->name, runner_session_drain, s,
			    time_mono_ms() + SESSION_HALT_MS);
		runner_session_close_fd(&s->out_fd);
		runner_session_close_fd(&s->err_fd);
		s->removed = true;
		rc = container_remove(s->c, s->name);
		s->rm_failed = rc < 0 && rc != -ENOENT;
	}
	if (s->pid > 0 && !s->reaped) {
		(void)kill(-s->pid, SIGKILL);
		runner_session_reap(s, time_mono_ms() + SESSION_REAP_MS);
	}
	runner_session_close_fd(&s->in_fd);
	runner_session_close_fd(&s->out_fd);
	runner_session_close_fd(&s->err_fd);
	explicit_bzero(s->token, sizeof(s->token));
	/* After the container: its /in is a bind mount of this. */
	if (s->in_dir[0] != '\0' && (s->pid <= 0 || s->reaped)) {
		(void)util_rm_rf(s->in_dir);
		s->in_dir[0] = '\0';
	}
}

void
runner_session_free(struct runner_session *s)
{
	int64_t end = time_mono_ms() + SESSION_RM_PATIENCE_MS;
	int rc;

	if (s == NULL)
		return;
	runner_session_end(s);
	/* A removal that failed while dockerd was down (the session ended
	 * because its container died with it): its stopped container would
	 * stay until the owner's exit. Again until the daemon is back, on
	 * the freeing thread (the service's own, off its loop). */
	while (s->rm_failed && time_mono_ms() < end) {
		(void)poll(NULL, 0, 250);
		rc = container_remove(s->c, s->name);
		s->rm_failed = rc < 0 && rc != -ENOENT;
	}
	cbuf_free(s->diag);
	cJSON_Delete(s->last_report);
	free(s->buf);
	free(s->own);
	free(s);
}

bool
runner_session_ended(const struct runner_session *s)
{
	return s->ended;
}

bool
runner_session_gone(struct runner_session *s, char *why, size_t len)
{
	struct pollfd f = { s->out_fd, POLLIN, 0 };
	siginfo_t si;
	int r;

	if (s->ended || s->pid <= 0)
		return false;
	/* Seen without reaping (WNOWAIT): runner_session_end reaps. */
	memset(&si, 0, sizeof(si));
	do {
		r = waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG |
		    WNOWAIT);
	} while (r < 0 && errno == EINTR);
	if (s->reaped || (r == 0 && si.si_pid == s->pid)) {
		if (si.si_code == CLD_EXITED)
			snprintf(why, len, "its container is gone (docker run "
			    "exited %d: dockerd stopped, or the container was "
			    "removed from outside)", si.si_status);
		else
			snprintf(why, len, "its container is gone (docker run "
			    "ended by signal %d)", si.si_status);
		return true;
	}
	/* Nothing is written between calls: a hang-up is the end. */
	if (s->out_fd >= 0 && poll(&f, 1, 0) == 1 &&
	    (f.revents & (POLLHUP | POLLERR)) != 0) {
		snprintf(why, len, "its container is gone (its result stream "
		    "closed)");
		return true;
	}
	return false;
}

const char *
runner_session_container(const struct runner_session *s)
{
	return s->name;
}

int64_t
runner_session_start_ms(const struct runner_session *s)
{
	return s->start_ms;
}

enum runner_net
runner_session_net(const struct runner_session *s)
{
	return s->net;
}

const char *
runner_session_profile(const struct runner_session *s)
{
	return config_profile_current(s->c);
}

const char *
runner_session_policy(const struct runner_session *s)
{
	return s->policy;
}

/* The first line of what docker (or the driver) said on stderr. */
static void
sess_explain(struct runner_session *s, const char *what, char *err,
    size_t errlen)
{
	const char *e;

	runner_session_drain_err(s);
	e = cbuf_data(s->diag);
	if (e[0] != '\0')
		snprintf(err, errlen, "%s: %.*s", what, (int)strcspn(e, "\n"),
		    e);
	else
		snprintf(err, errlen, "%s", what);
}

/* The session's profile: a copy of the caller's config pointed at it
 * (config_profile_use), used from here on. Sessions run python. */
static int
sess_profile(struct runner_session *s, const struct runner_session_opts *o,
    char *err, size_t errlen)
{
	int rc;

	if ((s->own = malloc(sizeof(*s->own))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*s->own = *s->c;
	if ((rc = config_profile_use(s->own, o->profile, "python", err,
	    errlen)) < 0)
		return rc;
	s->c = s->own;
	return 0;
}

static int
sess_admit(struct runner_session *s, const struct runner_session_opts *o,
    char *err, size_t errlen)
{
	const char *label = o->label != NULL ? o->label : "session";
	struct runner_request probe = { .session = label };
	int rc;

	if (o->net != RUNNER_NET_PROXY && o->policy != NULL &&
	    o->policy[0] != '\0') {
		snprintf(err, errlen, "a policy is only for net proxy");
		return -EINVAL;
	}
	if ((rc = runner_request_check(&probe, err, errlen)) < 0 ||
	    (rc = sess_profile(s, o, err, errlen)) < 0 ||
	    (rc = runner_daemon_check(s->c, err, errlen)) < 0 ||
	    (rc = runner_audit_check(s->c, err, errlen)) < 0)
		return rc;
	util_strlcpy(s->label, label, sizeof(s->label));
	if ((rc = image_pinned_require(s->c, s->image, err, errlen)) < 0 ||
	    (rc = runner_probe_ensure(s->c, runner_run,
	    runner_net_name(o->net), s->image, NULL, NULL, o->cancel, err,
	    errlen)) < 0)
		return rc;
	return o->net == RUNNER_NET_PROXY ? runner_session_egress_admit(s, o,
	    err, errlen) : 0;
}

static int
sess_launch(struct runner_session *s, const struct runner_session_opts *o,
    char *err, size_t errlen)
{
	int64_t life = o->max_lifetime_s > 0 ? o->max_lifetime_s : 3600;
	struct container_start cs = {
		.name = s->name, .image = s->image, .session = s->label,
		.lim = &s->lim, .na = s->net == RUNNER_NET_PROXY ? &s->na : NULL,
		.in_dir = s->in_dir[0] != '\0' ? s->in_dir : NULL,
		.label_deadline_s = time_wall_ms() / 1000 + life +
		    CONTAINER_GC_GRACE_S,
	};
	struct docker_spec spec;
	struct dargv a;
	char *prog;
	int rc;

	container_spec(s->c, &cs, &spec);
	/* The driver in place of `python3 -I -`: the same argv otherwise
	 * (net proxy: the egress prelude reads its line, then execs python3
	 * -I -c DRIVER CAP). */
	if ((prog = runner_session_program()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	spec.wrapper = prog;
	rc = docker_run_argv(s->c, &spec, &a);
	free(prog);
	if (rc < 0) {
		snprintf(err, errlen, "cannot build the session's docker argv");
		return rc;
	}
	rc = runner_session_spawn(s, a.v);
	dargv_cleanup(&a);
	if (rc < 0)
		snprintf(err, errlen, "cannot run %s: %s", s->c->docker,
		    strerror(-rc));
	return rc;
}

int
runner_session_start(const struct config *c,
    const struct runner_session_opts *o, struct runner_session **out,
    char *err, size_t errlen)
{
	struct runner_session *s;
	struct runner_request none = { 0 };
	struct runner_slot slot = { .fd = -1 };
	unsigned char *first = NULL;
	size_t first_len = 0;
	char hex[17];
	struct runner_session_io io = { 0 };
	int64_t t0;
	int rc;

	*out = NULL;
	err[0] = '\0';
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->c = c;
	s->net = o->net;
	s->pid = -1;
	s->in_fd = s->out_fd = s->err_fd = -1;
	runner_limits_resolve(c, &none, &s->lim);
	s->cap = 2 * (size_t)c->limits.max_output_cap +
	    RUNNER_SESSION_HDR_MAX;
	s->diag = cbuf_new_keep(SESSION_DIAG_MAX, CBUF_KEEP_HEAD);
	if (s->diag == NULL || (s->buf = malloc(s->cap)) == NULL) {
		rc = -ENOMEM;
		goto bad;
	}
	if (util_random_hex(hex, 8) < 0 || util_random_hex(s->nonce,
	    RUNNER_SESSION_NONCE_LEN / 2) < 0) {
		snprintf(err, errlen, "cannot make a name");
		rc = -EIO;
		goto bad;
	}
	snprintf(s->name, sizeof(s->name), "cordon-%s", hex);
	if ((rc = sess_admit(s, o, err, errlen)) < 0)
		goto bad;
	if (o->nin > RUNNER_MAX_IN) {
		snprintf(err, errlen, "%zu --in paths is above the maximum of "
		    "%d", o->nin, RUNNER_MAX_IN);
		rc = -EINVAL;
		goto bad;
	}
	if (o->nin > 0 && (rc = files_stage_in(s->c, s->name, o->in, o->nin,
	    s->in_dir, sizeof(s->in_dir), err, errlen)) < 0)
		goto bad;
	if ((rc = runner_slot_acquire(c, o->cancel, &slot, err, errlen)) < 0)
		goto bad;
	t0 = time_mono_ms();
	if ((rc = sess_launch(s, o, err, errlen)) < 0)
		goto bad;
	/* Nothing is written to a proxy-mode container not sealed, nor to
	 * one the proxy does not know. */
	if (s->net == RUNNER_NET_PROXY && (rc =
	    runner_session_egress_register(s, o, t0 + s->lim.timeout_s * 1000,
	    err, errlen)) < 0)
		goto bad;
	if ((rc = runner_session_first_lines(s, &first,
	    &first_len)) < 0) {
		snprintf(err, errlen, "cannot assemble the driver's first "
		    "lines");
		goto bad;
	}
	io = (struct runner_session_io){ .out = first, .out_len = first_len,
	    .deadline = t0 + s->lim.timeout_s * 1000, .cancel = o->cancel };
	rc = runner_session_exchange(s, &io);
	explicit_bzero(first, first_len);
	free(first);
	first = NULL;
	if (rc == 0 && io.f.kind != RUNNER_SESSION_READY)
		rc = -EPROTO;
	if (rc < 0) {
		sess_explain(s, rc == -ETIMEDOUT ? "the session's container "
		    "did not start before the deadline" : rc == -EINTR ?
		    "cancelled" : "the session's container did not start",
		    err, errlen);
		goto bad;
	}
	runner_session_consume(s, io.f.total);
	s->start_ms = time_mono_ms() - t0;
	runner_slot_release(&slot);
	*out = s;
	return 0;
bad:
	if (first != NULL) {
		explicit_bzero(first, first_len);
		free(first);
	}
	runner_slot_release(&slot);
	runner_session_free(s);
	if (err[0] == '\0')
		snprintf(err, errlen, "%s", strerror(-rc));
	return rc;
}
