/*
 * Zero-copy CONNECT relay: splice(2) moves bytes socket -> pipe -> socket
 * inside the kernel, one pipe per direction, created on the first byte.
 * Backpressure is the pipe itself: a direction reads again only once its
 * pipe has been written out completely, so a peer that never reads pins
 * one pipe (kernel memory) and no user-space buffer at all. Used when the
 * tunnel starts clean; otherwise tunnel.c's bufferevent relay runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/metrics.h"

/* Bytes asked for per splice; the pipe's capacity (64 KiB by default, less
 * for a user over pipe-user-pages-soft) is the real bound. Larger pipes
 * (F_SETPIPE_SZ) measured no faster here and pin more kernel memory per
 * tunnel whose client never reads. */
#define ZEROCOPY_CHUNK	(1024 * 1024)
#define ZEROCOPY_ROUNDS	8		/* chunks per callback (fairness) */

struct zerocopy_dir {
	struct zerocopy *zc;
	int from, to;
	int pipe[2];		/* -1 until the first byte */
	size_t inpipe;
	uint64_t *count;
	struct event rd, wr;
	bool rd_on, wr_on;
	bool eof, shut;
};

struct zerocopy {
	struct conn *c;
	int fd[2];		/* client, upstream */
	struct zerocopy_dir dir[2];	/* client->upstream, upstream->client */
};

static void
zerocopy_events(struct zerocopy_dir *z)
{
	bool want_rd = !z->eof && z->inpipe == 0, want_wr = z->inpipe > 0;

	if (want_rd != z->rd_on) {
		if (want_rd)
			event_add(&z->rd, NULL);
		else
			event_del(&z->rd);
		z->rd_on = want_rd;
	}
	if (want_wr != z->wr_on) {
		if (want_wr)
			event_add(&z->wr, NULL);
		else
			event_del(&z->wr);
		z->wr_on = want_wr;
	}
}

/* Moves what it can in direction z. Returns -1 on a fatal error. */
static int
zerocopy_move(struct zerocopy_dir *z)
{
	ssize_t n;
	char b;

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
	struct conn *c = zc->c;

	if (zerocopy_move(z) != 0) {
		conn_free(c);
		return;
	}
	c->last_active_ms = time_mono_ms();
	if (z->eof && z->inpipe == 0 && !z->shut) {
		struct zerocopy_dir *other = &zc->dir[z == &zc->dir[0] ? 1 : 0];

		if (other->shut) {
			/* Both ways done: close() sends the last FIN. */
			conn_free(c);
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
			conn_free(c);
			return;
		}
	}
	zerocopy_events(z);
}

static void
zerocopy_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	zerocopy_pump(arg);
}

/* Takes the socket out of its bufferevent and frees the bufferevent. */
static int
zerocopy_detach(struct bufferevent **bev)
{
	int fd = (int)bufferevent_getfd(*bev);

	bufferevent_setfd(*bev, -1);
	bufferevent_free(*bev);
	*bev = NULL;
	return fd;
}

bool
zerocopy_start(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct zerocopy *zc;
	ssize_t n;

	if (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(c->cli)) > 0)
		return false;	/* pipelined bytes: the buffered relay */
	zc = calloc(1, sizeof(*zc));
	if (zc == NULL)
		return false;
	n = send(bufferevent_getfd(c->cli), ok, sizeof(ok) - 1,
	    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(ok) - 1) {
		free(zc);
		if (n > 0)	/* the rest through the bufferevent */
			evbuffer_add(bufferevent_get_output(c->cli), ok + n,
			    sizeof(ok) - 1 - (size_t)n);
		else
			evbuffer_add(bufferevent_get_output(c->cli), ok,
			    sizeof(ok) - 1);
		return false;
	}
	c->req->resp_started = true;
	c->req->status = 200;
	zc->c = c;
	zc->fd[0] = zerocopy_detach(&c->cli);
	zc->fd[1] = zerocopy_detach(&c->up);
	for (int d = 0; d < 2; d++) {
		struct zerocopy_dir *z = &zc->dir[d];
		struct event_base *base = conn_base(c);

		z->zc = zc;
		z->from = zc->fd[d];
		z->to = zc->fd[1 - d];
		z->pipe[0] = z->pipe[1] = -1;
		z->count = d == 0 ? &c->req->bytes_up : &c->req->bytes_down;
		event_assign(&z->rd, base, z->from, EV_READ | EV_PERSIST,
		    zerocopy_cb, z);
		event_assign(&z->wr, base, z->to, EV_WRITE | EV_PERSIST,
		    zerocopy_cb, z);
		zerocopy_events(z);
	}
	c->zc = zc;
	c->state = CONN_TUNNEL;
	metrics_tunnels_add(conn_metrics(c), 1);
	c->last_active_ms = time_mono_ms();
	event_del(&c->timer);
	{
		struct timeval tv = { .tv_sec = conn_idle_timeout_ms(c) / 1000,
		    .tv_usec = (conn_idle_timeout_ms(c) % 1000) * 1000 };
		evtimer_add(&c->timer, &tv);
	}
	return true;
}

void
zerocopy_free(struct conn *c)
{
	struct zerocopy *zc = c->zc;

	if (zc == NULL)
		return;
	c->zc = NULL;
	for (int d = 0; d < 2; d++) {
		struct zerocopy_dir *z = &zc->dir[d];
		event_del(&z->rd);
		event_del(&z->wr);
		if (z->pipe[0] >= 0) {
			close(z->pipe[0]);
			close(z->pipe[1]);
		}
	}
	close(zc->fd[0]);
	close(zc->fd[1]);
	free(zc);
}
