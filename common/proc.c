/*
 * Subprocess spawning and I/O pumping (proc.h). Signals are blocked around
 * fork; the child resets them, starts its own process group, closes every
 * other descriptor and execs, reporting an exec failure through a
 * close-on-exec pipe. The parent polls against a monotonic deadline.
 * Running a tool to completion over this (proc_run, proc_call):
 * proc_call.c.
 */
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc_internal.h"
#include "common/util.h"

extern char **environ;

/* proc_communicate's cancel flag may be set from a signal handler. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "atomic_int must be lock-free");

struct proc {
	pid_t pid;
	int in_fd, out_fd, err_fd;
	const unsigned char *in_data;
	size_t in_left;
	struct cbuf *out, *err;
	proc_output_fn on_output;
	void *on_output_arg;
	bool reaped;
	bool held;		/* stdin_hold, not fed yet */
	bool stop_at_cap;	/* proc_opts.stop_at_cap */
	bool cut;		/* a stream was closed at its cap: report it */
	bool discard;		/* proc_discard: drop what is read */
	bool closed;		/* we closed an output (a cut, or
				 * proc_close_outputs), not the child */
	int status;
	struct proc_times t;	/* when each end came (monotonic ms) */
	int pid_fd;		/* pidfd, once only the exit is left; -1 */
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
child_exec(const struct proc_opts *o, int in, int out, int err, int report)
{
	sigset_t all;
	int e;

	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	setpgid(0, 0);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (report != 3 && dup2(report, 3) < 0)
		goto fail;
	/* Keep the report pipe (now fd 3) close-on-exec; close all else. */
	if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
		goto fail;
	closefrom(4);
	if (o->cwd != NULL && chdir(o->cwd) < 0)
		goto fail;
	if (o->envp != NULL)
		execvpe(o->argv[0], (char *const *)o->argv,
		    (char *const *)o->envp);
	else
		execvp(o->argv[0], (char *const *)o->argv);
fail:
	e = errno;
	(void)!write(3, &e, sizeof(e));
	_exit(127);
}

int
proc_spawn(const struct proc_opts *opts, struct proc **out)
{
	int inp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int rep[2] = { -1, -1 };
	sigset_t all, old;
	struct proc *p;
	ssize_t r;
	int e = 0, rc;

	*out = NULL;
	if (opts->argv == NULL || opts->argv[0] == NULL)
		return -EINVAL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	p->pid = -1;
	p->in_fd = p->out_fd = p->err_fd = p->pid_fd = -1;
	p->out = cbuf_new_keep(opts->stdout_max, opts->stdout_keep);
	p->err = cbuf_new_keep(opts->stderr_max, opts->stderr_keep);
	if (p->out == NULL || p->err == NULL) {
		rc = -ENOMEM;
		goto bad;
	}
	if (pipe2(inp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0 ||
	    pipe2(errp, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
		rc = -errno;
		goto bad;
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	p->pid = fork();
	if (p->pid == 0)
		child_exec(opts, inp[0], outp[1], errp[1], rep[1]);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (p->pid < 0) {
		rc = -e;
		goto bad;
	}
	/* Also set the group from the parent, so kill(-pid) works at once. */
	(void)setpgid(p->pid, p->pid);
	close_fd(&inp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[1]);
	close_fd(&rep[1]);
	do {
		r = read(rep[0], &e, sizeof(e));
	} while (r < 0 && errno == EINTR);
	close_fd(&rep[0]);
	if (r == (ssize_t)sizeof(e)) {
		rc = e != 0 ? -e : -EIO;
		goto bad;
	}
	p->in_fd = inp[1];
	p->out_fd = outp[0];
	p->err_fd = errp[0];
	p->held = opts->stdin_hold;
	p->stop_at_cap = opts->stop_at_cap;
	p->in_data = p->held ? NULL : opts->stdin_data;
	p->in_left = p->in_data != NULL ? opts->stdin_len : 0;
	if (p->in_left == 0 && !p->held)
		close_fd(&p->in_fd);
	else
		(void)fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	*out = p;
	return 0;
bad:
	for (int i = 0; i < 2; i++) {
		close_fd(&inp[i]);
		close_fd(&outp[i]);
		close_fd(&errp[i]);
		close_fd(&rep[i]);
	}
	proc_free(p);
	return rc;
}

/* Closes the child's stdin and notes when. */
static void
close_in(struct proc *p)
{
	if (p->in_fd >= 0)
		p->t.stdin_closed = time_mono_ms();
	close_fd(&p->in_fd);
}

/* Whether b, a stream's buffer, has just passed the cap at which
 * stop_at_cap closes it. */
static bool
past_cap(const struct proc *p, const struct cbuf *b)
{
	return p->stop_at_cap && cbuf_keep_mode(b) == CBUF_KEEP_HEAD &&
	    cbuf_truncated(b);
}

/* Reads what is available into b (up to its cap; the rest is discarded),
 * showing each chunk to the output callback. Closes *fd at EOF or on
 * error, and (stop_at_cap) at the cap. */
static void
drain_fd(struct proc *p, int *fd, int stream, struct cbuf *b)
{
	char buf[65536];

	for (int i = 0; i < 16; i++) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n > 0 && p->discard)
			continue;
		if (n > 0) {
			if (p->t.first_output == 0)
				p->t.first_output = time_mono_ms();
			if (p->on_output != NULL)
				p->on_output(p->on_output_arg, stream, buf,
				    (size_t)n);
			(void)cbuf_append(b, buf, (size_t)n);
			if (past_cap(p, b)) {
				/* Nothing more of it is wanted: its writer
				 * gets EPIPE instead of filling a pipe. */
				close_fd(fd);
				p->cut = p->closed = true;
				return;
			}
			continue;
		}
		if (n < 0 && (errno == EINTR))
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close_fd(fd);
		if (p->out_fd < 0 && p->err_fd < 0)
			p->t.outputs_closed = time_mono_ms();
		return;
	}
}

/* Writes stdin without dying of SIGPIPE if the child closed it. */
static void
feed_stdin(struct proc *p)
{
	sigset_t pipe_set, old;
	ssize_t n;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	n = write(p->in_fd, p->in_data, p->in_left);
	if (n < 0 && errno == EPIPE) {
		struct timespec zero = { 0, 0 };
		(void)sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (n > 0) {
		p->in_data += n;
		p->in_left -= (size_t)n;
		if (p->in_left == 0)
			close_in(p);
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		close_in(p);
	}
}

static bool
try_reap(struct proc *p, int flags)
{
	pid_t r;

	if (p->reaped)
		return true;
	do {
		r = waitpid(p->pid, &p->status, flags);
	} while (r < 0 && errno == EINTR);
	if (r == p->pid || (r < 0 && errno == ECHILD)) {
		p->reaped = true;
		p->t.exited = time_mono_ms();
		if (r < 0)
			p->status = 0;
	}
	return p->reaped;
}

static int
poll_timeout(int64_t deadline_ms, int cap_ms)
{
	int64_t left;

	if (deadline_ms <= 0)
		return cap_ms;
	left = deadline_ms - time_mono_ms();
	if (left < 0)
		left = 0;
	return left < cap_ms ? (int)left : cap_ms;
}

static int
communicate(struct proc *p, int64_t deadline_ms, const atomic_int *cancel,
    bool need_exit)
{
	for (;;) {
		struct pollfd fds[3];
		nfds_t n = 0;
		int r, tick;

		if (cancel != NULL && atomic_load(cancel) != 0)
			return -EINTR;
		if (p->cut) {
			p->cut = false;
			return -EFBIG;
		}
		if (p->out_fd < 0 && p->err_fd < 0 && (!need_exit ||
		    try_reap(p, WNOHANG)))
			return 0;
		if (deadline_ms > 0 && time_mono_ms() >= deadline_ms)
			return -ETIMEDOUT;
		if (p->in_fd >= 0 && !p->held)
			fds[n++] = (struct pollfd){ p->in_fd, POLLOUT, 0 };
		if (p->out_fd >= 0)
			fds[n++] = (struct pollfd){ p->out_fd, POLLIN, 0 };
		if (p->err_fd >= 0)
			fds[n++] = (struct pollfd){ p->err_fd, POLLIN, 0 };
		/* With only the exit left to see: a pidfd wakes the poll at
		 * the exit (not reaped: the tick below still reaps); without
		 * one (old kernel), short ticks. The cancel flag is also
		 * re-checked at least this often. */
		if (p->out_fd < 0 && p->err_fd < 0 && p->pid_fd < 0 &&
		    p->pid > 0 && !p->reaped)
			p->pid_fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
		if (p->out_fd < 0 && p->err_fd < 0 && p->pid_fd >= 0)
			fds[n++] = (struct pollfd){ p->pid_fd, POLLIN, 0 };
		tick = poll_timeout(deadline_ms,
		    (p->out_fd < 0 && p->err_fd < 0) ? 10 : 200);
		r = poll(n ? fds : NULL, n, tick);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (nfds_t i = 0; i < n; i++) {
			if (fds[i].revents == 0)
				continue;
			if (fds[i].fd == p->in_fd) {
				if (fds[i].revents & (POLLERR | POLLHUP | POLLNVAL))
					close_in(p);
				else
					feed_stdin(p);
			} else if (fds[i].fd == p->out_fd) {
				drain_fd(p, &p->out_fd, 1, p->out);
			} else if (fds[i].fd == p->err_fd) {
				drain_fd(p, &p->err_fd, 2, p->err);
			}
		}
	}
}

int
proc_communicate(struct proc *p, int64_t deadline_ms,
    const atomic_int *cancel)
{
	return communicate(p, deadline_ms, cancel, true);
}

int
proc_communicate_streams(struct proc *p, int64_t deadline_ms,
    const atomic_int *cancel)
{
	return communicate(p, deadline_ms, cancel, false);
}

void
proc_get_times(const struct proc *p, struct proc_times *t)
{
	*t = p->t;
}

int
proc_feed(struct proc *p, const void *data, size_t len, size_t stdout_max,
    size_t stderr_max, enum cbuf_keep keep)
{
	struct cbuf *o, *e;

	if (!p->held || cbuf_seen(p->out) != 0 || cbuf_seen(p->err) != 0)
		return -EBUSY;
	if ((o = cbuf_new_keep(stdout_max, keep)) == NULL ||
	    (e = cbuf_new_keep(stderr_max, keep)) == NULL) {
		cbuf_free(o);
		return -ENOMEM;
	}
	cbuf_free(p->out);
	cbuf_free(p->err);
	p->out = o;
	p->err = e;
	p->held = false;
	p->in_data = data;
	p->in_left = data != NULL ? len : 0;
	p->t.fed = time_mono_ms();
	if (p->in_left == 0)
		close_in(p);
	return 0;
}

void
proc_set_output(struct proc *p, proc_output_fn fn, void *arg)
{
	p->on_output = fn;
	p->on_output_arg = arg;
}

void
proc_stop_at_cap(struct proc *p, bool on)
{
	p->stop_at_cap = on;
}

void
proc_discard(struct proc *p)
{
	p->discard = true;
	p->held = false;
	close_in(p);
}

void
proc_close_outputs(struct proc *p)
{
	if (p->out_fd >= 0 || p->err_fd >= 0)
		p->closed = true;
	close_in(p);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
}

bool
proc_gone(struct proc *p)
{
	struct pollfd f = { p->out_fd, POLLIN, 0 };
	siginfo_t si;
	int r;

	if (p->reaped || (p->out_fd < 0 && !p->closed))
		return true;
	/* Sees an exit without reaping (WNOWAIT): the zombie keeps the pid,
	 * and so the process group id, reserved until proc_reap, whose
	 * group kill could otherwise hit a new process given the same id. */
	memset(&si, 0, sizeof(si));
	do {
		r = waitid(P_PID, (id_t)p->pid, &si,
		    WEXITED | WNOHANG | WNOWAIT);
	} while (r < 0 && errno == EINTR);
	if ((r == 0 && si.si_pid == p->pid) || (r < 0 && errno == ECHILD))
		return true;
	/* A held child writes nothing to stdout: readable means EOF (or
	 * output it should not have produced: not waiting any more). */
	return poll(&f, 1, 0) == 1 && f.revents != 0;
}

void
proc_kill(struct proc *p, int sig)
{
	if (p == NULL || p->pid <= 0 || p->reaped)
		return;
	if (kill(-p->pid, sig) < 0)
		(void)kill(p->pid, sig);
}

int
proc_reap(struct proc *p, int64_t deadline_ms)
{
	while (!try_reap(p, WNOHANG)) {
		if (deadline_ms > 0 && time_mono_ms() >= deadline_ms) {
			proc_kill(p, SIGKILL);
			(void)try_reap(p, 0);
			break;
		}
		(void)poll(NULL, 0, 10);
	}
	/* The group may hold other members (the child's children). */
	(void)kill(-p->pid, SIGKILL);
	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	return 0;
}

pid_t
proc_pid(const struct proc *p)
{
	return p->pid;
}

bool
proc_reaped(const struct proc *p)
{
	return p->reaped;
}

int
proc_exit_code(const struct proc *p)
{
	if (!p->reaped || !WIFEXITED(p->status))
		return -1;
	return WEXITSTATUS(p->status);
}

int
proc_term_signal(const struct proc *p)
{
	if (!p->reaped || !WIFSIGNALED(p->status))
		return 0;
	return WTERMSIG(p->status);
}

struct cbuf *
proc_stdout(struct proc *p)
{
	return p->out;
}

struct cbuf *
proc_stderr(struct proc *p)
{
	return p->err;
}

void
proc_free(struct proc *p)
{
	if (p == NULL)
		return;
	if (p->pid > 0 && !p->reaped) {
		proc_kill(p, SIGKILL);
		(void)try_reap(p, 0);
	}
	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->pid_fd);
	cbuf_free(p->out);
	cbuf_free(p->err);
	free(p);
}

void
proc_take_outputs(struct proc *p, struct cbuf **out, struct cbuf **err)
{
	*out = p->out;
	*err = p->err;
	p->out = p->err = NULL;
}
