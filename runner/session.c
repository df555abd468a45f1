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
#define SESSION_REAP_MS 5000
#define SESSION_HALT_MS 1200	/* the kill and the drain at its end */
#define SESSION_RM_PATIENCE_MS 60000	/* runner_session_free: a failed
					 * removal is tried again this long */


/* What one exchange with the driver came to. */
struct io {
	const unsigned char *out;	/* what is left to write */
	size_t out_len;
	size_t max_len;			/* per stream, for the parser */
	int64_t deadline;
	const atomic_int *cancel;
	struct runner_session_frame f;
};

static void
close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void
sess_child(char *const *argv, int in, int out, int err)
{
	sigset_t none;

	for (int i = 1; i < NSIG; i++)
		signal(i, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	closefrom(3);
	execvp(argv[0], argv);
	_exit(127);
}

/* Starts argv with three close-on-exec pipes, in its own process group.
 * The same discipline as common/proc.c, but the pipes stay the caller's:
 * a session talks to its child many times. */
static int
sess_spawn(struct runner_session *s, char *const *argv)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	sigset_t all, old;
	int e;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0) {
		e = -errno;
		goto bad;
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	s->pid = fork();
	if (s->pid == 0)
		sess_child(argv, in[0], out[1], err[1]);
	e = -errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (s->pid < 0)
		goto bad;
	(void)setpgid(s->pid, s->pid);
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	s->in_fd = in[1];
	s->out_fd = out[0];
	s->err_fd = err[0];
	(void)fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	return 0;
bad:
	for (int i = 0; i < 2; i++) {
		close_fd(&in[i]);
		close_fd(&out[i]);
		close_fd(&err[i]);
	}
	return e != 0 ? e : -EIO;
}

/* Waits for `docker run` until deadline_ms, then SIGKILLs its group and
 * waits for good. */
static void
sess_reap(struct runner_session *s, int64_t deadline_ms)
{
	pid_t r;

	if (s->pid <= 0 || s->reaped)
		return;
	for (;;) {
		r = waitpid(s->pid, &s->status, WNOHANG);
		if (r == s->pid || (r < 0 && errno != EINTR))
			break;
		if (time_mono_ms() >= deadline_ms) {
			(void)kill(-s->pid, SIGKILL);
			while (waitpid(s->pid, &s->status, 0) < 0 &&
			    errno == EINTR)
				;
			break;
		}
		(void)poll(NULL, 0, 20);
	}
	s->reaped = true;
}

static int
sess_exit_code(const struct runner_session *s)
{
	if (!s->reaped || !WIFEXITED(s->status))
		return -1;
	return WEXITSTATUS(s->status);
}

static void
sess_drain_err(struct runner_session *s)
{
	char b[4096];
	ssize_t n;

	while (s->err_fd >= 0) {
		n = read(s->err_fd, b, sizeof(b));
		if (n > 0) {
			(void)cbuf_append(s->diag, b, (size_t)n);
			continue;
		}
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			close_fd(&s->err_fd);
		break;
	}
}

/* Reads what the result stream has into s->buf (bounded by s->cap).
 * 1 read something, 0 nothing now, -EPIPE at EOF, -EPROTO past cap. */
static int
sess_read_out(struct runner_session *s)
{
	ssize_t n;

	if (s->len == s->cap)
		return -EPROTO;
	n = read(s->out_fd, s->buf + s->len, s->cap - s->len);
	if (n > 0) {
		s->len += (size_t)n;
		return 1;
	}
	if (n == 0)
		return -EPIPE;
	return errno == EINTR || errno == EAGAIN ? 0 : -EPIPE;
}

/* Writes io's bytes and reads until one whole frame is in s->buf (then
 * io->f), the deadline (-ETIMEDOUT), the cancel (-EINTR), EOF on the
 * result stream (-EPIPE: the driver or container is gone) or a stream that
 * is not a frame (-EPROTO). */
static int
sess_exchange(struct runner_session *s, struct io *io)
{
	struct pollfd pf[3];
	int64_t left;
	ssize_t w;
	int rc;

	for (;;) {
		rc = runner_session_frame_parse(s->buf, s->len, s->nonce,
		    io->max_len, &io->f);
		if (rc == 0 || rc == -EPROTO)
			return rc;
		if (io->cancel != NULL && atomic_load(io->cancel) != 0)
			return -EINTR;
		left = io->deadline - time_mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		pf[0] = (struct pollfd){ .fd = s->out_fd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = s->err_fd, .events = POLLIN };
		pf[2] = (struct pollfd){ .fd = io->out_len > 0 ? s->in_fd : -1,
		    .events = POLLOUT };
		if (poll(pf, 3, left > 100 ? 100 : (int)left) < 0 &&
		    errno != EINTR)
			return -EIO;
		if (pf[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
			w = write(s->in_fd, io->out, io->out_len);
			if (w > 0) {
				io->out += w;
				io->out_len -= (size_t)w;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				return -EPIPE;
			}
		}
		if (pf[1].revents != 0)
			sess_drain_err(s);
		if (pf[0].revents != 0 && (rc = sess_read_out(s)) < 0)
			return rc;
	}
}

/* Drops the frame just used from s->buf. */
static void
sess_consume(struct runner_session *s, size_t n)
{
	memmove(s->buf, s->buf + n, s->len - n);
	s->len -= n;
}

/* halt.h's drain: reads and drops both streams until both ended. */
static int
sess_drain(void *arg, int64_t until_ms)
{
	struct runner_session *s = arg;
	char b[65536];
	int64_t left;

	while (s->out_fd >= 0 || s->err_fd >= 0) {
		struct pollfd pf[2] = { { s->out_fd, POLLIN, 0 },
		    { s->err_fd, POLLIN, 0 } };

		if ((left = until_ms - time_mono_ms()) <= 0)
			return -ETIMEDOUT;
		if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &s->out_fd : &s->err_fd;
			ssize_t n;

			if (pf[i].revents == 0)
				continue;
			n = read(*fd, b, sizeof(b));
			if (n == 0 || (n < 0 && errno != EINTR &&
			    errno != EAGAIN))
				close_fd(fd);
		}
	}
	return 0;
}

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
		close_fd(&s->in_fd);
		if (!s->reaped)
			(void)container_halt(s->c, s->name, sess_drain, s,
			    time_mono_ms() + SESSION_HALT_MS);
		close_fd(&s->out_fd);
		close_fd(&s->err_fd);
		s->removed = true;
		rc = container_remove(s->c, s->name);
		s->rm_failed = rc < 0 && rc != -ENOENT;
	}
	if (s->pid > 0 && !s->reaped) {
		(void)kill(-s->pid, SIGKILL);
		sess_reap(s, time_mono_ms() + SESSION_REAP_MS);
	}
	close_fd(&s->in_fd);
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);
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

	sess_drain_err(s);
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
	rc = sess_spawn(s, a.v);
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
	struct io io = { 0 };
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
	io = (struct io){ .out = first, .out_len = first_len,
	    .deadline = t0 + s->lim.timeout_s * 1000, .cancel = o->cancel };
	rc = sess_exchange(s, &io);
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
	sess_consume(s, io.f.total);
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

/* The container went away without a frame: its end state, like a run's
 * (runner.c run_finish): an OOM kill, the driver's own exit, or removed
 * from outside. */
static void
sess_gone(struct runner_session *s, struct runner_result *res)
{
	struct docker_state st = { 0 };
	int code, rc = -ENOENT;

	sess_reap(s, time_mono_ms() + SESSION_REAP_MS);
	code = sess_exit_code(s);
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

	while ((rc = sess_read_out(s)) > 0)
		;
	if (rc == -EPIPE)
		return -EPIPE;
	return s->len == 0 ? 0 : -EPROTO;
}

static int
sess_call_io(struct runner_session *s, const struct runner_request *req,
    const struct runner_limits *lim, enum cbuf_keep keep, struct io *io,
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
	io->deadline = time_mono_ms() + lim->timeout_s * 1000;
	return 0;
}

/* The call's outcome from a frame. */
static int
sess_result(struct runner_session *s, const struct io *io, size_t max,
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
	sess_consume(s, f->total);
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
	struct io io = { 0 };
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
		rc = sess_exchange(s, &io);
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
