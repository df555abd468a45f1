/*
 * Zero-copy CONNECT relay: splice(2) moves bytes socket -> pipe -> socket
 * inside the kernel, one pipe per direction, created on the first byte.
 * Backpressure is the pipe itself: a direction reads again only once its
 * pipe has been written out completely, so a peer that never reads pins
 * one pipe (kernel memory) and no user-space buffer at all. tunnel.c uses
 * it when the tunnel starts clean; otherwise its bufferevent relay runs.
 * The client's direction can start held, then released with the bytes the
 * caller read meanwhile (the SNI check), which are sent before splicing.
 */
#include "proxy/zerocopy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "common/log.h"
#include "common/util.h"

/* Bytes asked for per splice; the pipe's capacity is the real bound. The
 * pipe is raised from 64 KiB to ZEROCOPY_PIPE: fewer splice calls and
 * wake-ups per MiB (bench_proxy, same runs: 0.36-0.38x of a direct socket
 * with 64 KiB, 0.41-0.49x with 256 KiB). A tunnel whose client never
 * reads pins at most that much kernel memory per direction (pages only
 * once filled: an idle tunnel has no pipe at all). */
#define ZEROCOPY_CHUNK	(1024 * 1024)
#define ZEROCOPY_ROUNDS	8		/* chunks per callback (fairness) */
#define ZEROCOPY_PIPE	(256 * 1024)

struct zerocopy_dir {
	struct zerocopy *zc;
	int from, to;
	int pipe[2];		/* -1 until the first byte */
	size_t inpipe;
	bool held;		/* reads nothing until released */
	char *pre;		/* bytes to send before splicing, or NULL */
	size_t prelen, preoff;
	uint64_t *count;
	struct event rd;
	/* Waiting until z->to is writable: made the first time it blocks,
	 * so an idle tunnel carries two events, not four. */
	struct event *wr;
	bool rd_on, wr_on;
	bool eof, shut;
};

struct zerocopy {
	int fd[2];		/* a (the client), b (upstream); -1: none */
	struct zerocopy_dir dir[2];	/* a->b, b->a */
	bool started;		/* events assigned */
	struct event_base *base;
	int64_t *last_active_ms;
	void (*done)(void *);
	void *arg;
};

static void zerocopy_cb(evutil_socket_t fd, short what, void *arg);

/* Adds or removes z's events as its state wants; -ENOMEM when the write
 * event cannot be made (this tunnel only). */
static int
zerocopy_events(struct zerocopy_dir *z)
{
	bool want_rd = !z->held && !z->eof && z->inpipe == 0 &&
	    z->pre == NULL;
	bool want_wr = z->inpipe > 0 || z->pre != NULL;

	if (want_rd != z->rd_on) {
		if (want_rd)
			event_add(&z->rd, NULL);
		else
			event_del(&z->rd);
		z->rd_on = want_rd;
	}
	if (want_wr && z->wr == NULL) {
		z->wr = event_new(z->zc->base, z->to, EV_WRITE | EV_PERSIST,
		    zerocopy_cb, z);
		if (z->wr == NULL)
			return -ENOMEM;
	}
	if (want_wr != z->wr_on) {
		if (want_wr)
			event_add(z->wr, NULL);
		else
			event_del(z->wr);
		z->wr_on = want_wr;
	}
	return 0;
}

/* Sends the bytes given at release; 1 once all are sent, 0 to wait until
 * writable, -1 on a fatal error. */
static int
zerocopy_send_pre(struct zerocopy_dir *z)
{
	ssize_t n;

	while (z->preoff < z->prelen) {
		n = send(z->to, z->pre + z->preoff, z->prelen - z->preoff,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			z->preoff += (size_t)n;
			*z->count += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 0 : -1;
	}
	free(z->pre);
	z->pre = NULL;
	return 1;
}

/* Moves what it can in direction z. Returns -1 on a fatal error. */
static int
zerocopy_move(struct zerocopy_dir *z)
{
	ssize_t n;
	char b;
	int rc;

	if (z->pre != NULL && (rc = zerocopy_send_pre(z)) <= 0)
		return rc;
	if (z->held)
		return 0;
	for (int i = 0; i < ZEROCOPY_ROUNDS; i++) {
		while (z->inpipe > 0) {
			n = splice(z->pipe[0], NULL, z->to, NULL, z->inpipe,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				z->inpipe -= (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return 0;	/* wait until writable */
			return -1;
		}
		if (z->eof)
			return 0;
		if (z->pipe[0] < 0) {
			/* A pipe only for tunnels that carry data: a peek
			 * tells EOF from data without one. */
			n = recv(z->from, &b, 1, MSG_PEEK | MSG_DONTWAIT);
			if (n == 0) {
				z->eof = true;
				return 0;
			}
			if (n < 0)
				return errno == EAGAIN || errno == EINTR ? 0 :
				    -1;
			if (pipe2(z->pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
				log_warn("tunnel pipe");
				return -1;
			}
			/* Best effort: over pipe-user-pages-soft the kernel
			 * refuses and the default size stays. */
			(void)fcntl(z->pipe[1], F_SETPIPE_SZ, ZEROCOPY_PIPE);
		}
		n = splice(z->from, NULL, z->pipe[1], NULL, ZEROCOPY_CHUNK,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			z->inpipe = (size_t)n;
			*z->count += (uint64_t)n;
			continue;
		}
		if (n == 0) {
			z->eof = true;
			return 0;
		}
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return -1;
	}
	return 0;
}

static void
zerocopy_pump(struct zerocopy_dir *z)
{
	struct zerocopy *zc = z->zc;

	if (zerocopy_move(z) != 0) {
		zc->done(zc->arg);
		return;
	}
	*zc->last_active_ms = time_mono_ms();
	if (z->eof && z->inpipe == 0 && !z->shut) {
		struct zerocopy_dir *other = &zc->dir[z == &zc->dir[0] ? 1 : 0];

		if (other->shut) {
			/* Both ways done: close() sends the last FIN. */
			zc->done(zc->arg);
			return;
		}
		/* Pass the half-close on; this direction is finished. */
		shutdown(z->to, SHUT_WR);
		z->shut = true;
		if (z->pipe[0] >= 0) {
			close(z->pipe[0]);
			close(z->pipe[1]);
			z->pipe[0] = z->pipe[1] = -1;
		}
		if (zc->dir[0].shut && zc->dir[1].shut) {
			zc->done(zc->arg);
			return;
		}
	}
	if (zerocopy_events(z) != 0)
		zc->done(zc->arg);
}

static void
zerocopy_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	zerocopy_pump(arg);
}

int
proxy_zerocopy_new(struct zerocopy **out)
{
	struct zerocopy *zc = calloc(1, sizeof(*zc));

	*out = zc;
	if (zc == NULL)
		return -ENOMEM;
	zc->fd[0] = zc->fd[1] = -1;
	return 0;
}

void
proxy_zerocopy_start(struct zerocopy *zc, struct event_base *base, int a,
    int b, const struct zerocopy_sink *sink)
{
	zc->fd[0] = a;
	zc->fd[1] = b;
	zc->base = base;
	zc->last_active_ms = sink->last_active_ms;
	zc->done = sink->done;
	zc->arg = sink->arg;
	for (int d = 0; d < 2; d++) {
		struct zerocopy_dir *z = &zc->dir[d];

		z->zc = zc;
		z->from = zc->fd[d];
		z->to = zc->fd[1 - d];
		z->pipe[0] = z->pipe[1] = -1;
		z->count = sink->count[d];
		event_assign(&z->rd, base, z->from, EV_READ | EV_PERSIST,
		    zerocopy_cb, z);
		/* Nothing to write yet: only the read event is added. */
		(void)zerocopy_events(z);
	}
	zc->started = true;
}

void
proxy_zerocopy_hold(struct zerocopy *zc)
{
	zc->dir[0].held = true;
}

int
proxy_zerocopy_release(struct zerocopy *zc, const void *data, size_t n,
    bool eof)
{
	struct zerocopy_dir *z = &zc->dir[0];
	const char *p = data;
	ssize_t w;

	/* Usually all of it fits in b's socket buffer right away. */
	while (n > 0) {
		w = send(z->to, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			*z->count += (uint64_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		return w < 0 ? -errno : -EIO;
	}
	if (n > 0) {
		z->pre = malloc(n);
		if (z->pre == NULL)
			return -ENOMEM;
		memcpy(z->pre, p, n);
		z->prelen = n;
		z->preoff = 0;
	}
	z->held = false;
	z->eof = eof;
	/* At the end already with nothing left to send: the pump passes the
	 * half-close on, from the loop (no wait for a read event that would
	 * only find the end again). */
	if (eof && z->pre == NULL)
		event_active(&z->rd, EV_READ, 1);
	return zerocopy_events(z);
}

int
proxy_zerocopy_fd(const struct zerocopy *zc, int side)
{
	return zc->fd[side != 0];
}

void
proxy_zerocopy_free(struct zerocopy *zc)
{
	if (zc == NULL)
		return;
	for (int d = 0; d < 2 && zc->started; d++) {
		struct zerocopy_dir *z = &zc->dir[d];
		event_del(&z->rd);
		if (z->wr != NULL)
			event_free(z->wr);
		if (z->pipe[0] >= 0) {
			close(z->pipe[0]);
			close(z->pipe[1]);
		}
	}
	free(zc->dir[0].pre);
	if (zc->fd[0] >= 0)
		close(zc->fd[0]);
	if (zc->fd[1] >= 0)
		close(zc->fd[1]);
	free(zc);
}
