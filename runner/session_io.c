/*
 * A session's `docker run -i` process and its three pipes (session.h):
 * started in its own process group with the same discipline as
 * common/proc.c, but the pipes stay the session's, since it talks to its
 * child many times; one exchange (write a request, read until a whole
 * result frame, a deadline, a cancel or EOF); the drain at its end; the
 * reap. The lifecycle is session.c's, a call session_call.c's.
 */
#include "runner/session.h"
#include "runner/session_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cbuf.h"
#include "common/util.h"

void
runner_session_close_fd(int *fd)
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
int
runner_session_spawn(struct runner_session *s, char *const *argv)
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
	runner_session_close_fd(&in[0]);
	runner_session_close_fd(&out[1]);
	runner_session_close_fd(&err[1]);
	s->in_fd = in[1];
	s->out_fd = out[0];
	s->err_fd = err[0];
	(void)fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	return 0;
bad:
	for (int i = 0; i < 2; i++) {
		runner_session_close_fd(&in[i]);
		runner_session_close_fd(&out[i]);
		runner_session_close_fd(&err[i]);
	}
	return e != 0 ? e : -EIO;
}

/* Waits for `docker run` until deadline_ms, then SIGKILLs its group and
 * waits for good. */
void
runner_session_reap(struct runner_session *s, int64_t deadline_ms)
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

int
runner_session_exit_code(const struct runner_session *s)
{
	if (!s->reaped || !WIFEXITED(s->status))
		return -1;
	return WEXITSTATUS(s->status);
}

void
runner_session_drain_err(struct runner_session *s)
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
			runner_session_close_fd(&s->err_fd);
		break;
	}
}

/* Reads what the result stream has into s->buf (bounded by s->cap).
 * 1 read something, 0 nothing now, -EPIPE at EOF, -EPROTO past cap. */
int
runner_session_read_out(struct runner_session *s)
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
int
runner_session_exchange(struct runner_session *s, struct runner_session_io *io)
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
		if ((io->cancel != NULL && atomic_load(io->cancel) != 0) ||
		    (io->cancel_session != NULL &&
		    atomic_load(io->cancel_session) != 0))
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
			runner_session_drain_err(s);
		if (pf[0].revents != 0 && (rc = runner_session_read_out(s)) < 0)
			return rc;
	}
}

/* Drops the frame just used from s->buf. */
void
runner_session_consume(struct runner_session *s, size_t n)
{
	memmove(s->buf, s->buf + n, s->len - n);
	s->len -= n;
}

/* halt.h's drain: reads and drops both streams until both ended. */
int
runner_session_drain(void *arg, int64_t until_ms)
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
				runner_session_close_fd(fd);
		}
	}
	return 0;
}
