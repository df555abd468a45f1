/*
 * CONNECT tunnels: bytes relayed both ways between two bufferevents with
 * backpressure (the libevent le-proxy pattern): when one side's output
 * passes CONN_OUT_MAX, reading from the other side stops until it drains
 * to half, so a peer that never reads pins at most a few buffers.
 */
#include <stdbool.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/metrics.h"

static void tunnel_read_cb(struct bufferevent *src, void *arg);
static void tunnel_event_cb(struct bufferevent *bev, short what, void *arg);

static struct bufferevent *
tunnel_other(struct conn *c, struct bufferevent *bev)
{
	return bev == c->cli ? c->up : c->cli;
}

static bool *
tunnel_eof_flag(struct conn *c, struct bufferevent *bev)
{
	return bev == c->cli ? &c->cli_eof : &c->up_eof;
}

/* Both directions ended and everything queued was written: done. */
static bool
tunnel_done(struct conn *c)
{
	return c->cli_eof && c->up_eof &&
	    evbuffer_get_length(bufferevent_get_output(c->cli)) == 0 &&
	    evbuffer_get_length(bufferevent_get_output(c->up)) == 0;
}

/* dst's output drained below its low watermark: either backpressure is
 * over (resume reading the other side), or the other side has ended and
 * dst got all of it (pass the half-close on). */
static void
tunnel_write_cb(struct bufferevent *dst, void *arg)
{
	struct conn *c = arg;
	struct bufferevent *src = tunnel_other(c, dst);

	c->last_active_ms = time_mono_ms();
	if (!*tunnel_eof_flag(c, src)) {
		bufferevent_setcb(dst, tunnel_read_cb, NULL, tunnel_event_cb, c);
		bufferevent_setwatermark(dst, EV_WRITE, 0, 0);
		bufferevent_set_max_single_read(src, CONN_OUT_MAX -
		    evbuffer_get_length(bufferevent_get_output(dst)));
		bufferevent_enable(src, EV_READ);
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(dst)) > 0)
		return;
	bufferevent_setcb(dst, tunnel_read_cb, NULL, tunnel_event_cb, c);
	shutdown(bufferevent_getfd(dst), SHUT_WR);
	if (tunnel_done(c))
		conn_free(c);
}

/* src sent FIN: forward it to dst once dst has been sent everything. */
static void
tunnel_half_close(struct conn *c, struct bufferevent *src)
{
	struct bufferevent *dst = tunnel_other(c, src);

	*tunnel_eof_flag(c, src) = true;
	bufferevent_disable(src, EV_READ);
	if (tunnel_done(c)) {
		conn_free(c);
		return;
	}
	bufferevent_setwatermark(dst, EV_WRITE, 0, 0);
	bufferevent_setcb(dst, tunnel_read_cb, tunnel_write_cb,
	    tunnel_event_cb, c);
	if (evbuffer_get_length(bufferevent_get_output(dst)) == 0)
		tunnel_write_cb(dst, c);
}

/* Moves src's input to the other side; false when c was freed. */
static bool
tunnel_relay(struct conn *c, struct bufferevent *src)
{
	struct bufferevent *dst = tunnel_other(c, src);
	struct evbuffer *in = bufferevent_get_input(src);
	struct evbuffer *out = bufferevent_get_output(dst);
	size_t n = evbuffer_get_length(in);

	if (src == c->cli)
		c->req->bytes_up += n;
	else
		c->req->bytes_down += n;
	if (evbuffer_add_buffer(out, in) != 0) {
		/* ENOMEM: this tunnel only. */
		conn_free(c);
		return false;
	}
	c->last_active_ms = time_mono_ms();
	n = evbuffer_get_length(out);
	if (n + CONN_READ_MIN <= CONN_OUT_MAX) {
		/* Never read more than the room left towards dst. */
		bufferevent_set_max_single_read(src, CONN_OUT_MAX - n);
	} else {
		/* Resume only once dst's queue is empty (the kernel still
		 * holds its socket buffer, so the flow does not stall): at
		 * most one chain is ever pinned per direction. */
		bufferevent_disable(src, EV_READ);
		bufferevent_setwatermark(dst, EV_WRITE, 0, 0);
		bufferevent_setcb(dst, tunnel_read_cb, tunnel_write_cb,
		    tunnel_event_cb, c);
	}
	return true;
}

static void
tunnel_read_cb(struct bufferevent *src, void *arg)
{
	(void)tunnel_relay(arg, src);
}

static void
tunnel_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		/* Relay whatever arrived with the FIN first. */
		if (evbuffer_get_length(bufferevent_get_input(bev)) > 0 &&
		    !tunnel_relay(c, bev))
			return;
		tunnel_half_close(c, bev);
		return;
	}
	conn_free(c);
}

void
tunnel_start(struct conn *c)
{
	c->state = CONN_TUNNEL;
	metrics_tunnels_add(conn_metrics(c), 1);
	c->last_active_ms = time_mono_ms();
	bufferevent_set_max_single_read(c->cli, CONN_READ_MAX);
	bufferevent_set_max_single_read(c->up, CONN_READ_MAX);
	bufferevent_setwatermark(c->cli, EV_READ, 0, 0);
	bufferevent_setcb(c->cli, tunnel_read_cb, NULL, tunnel_event_cb, c);
	bufferevent_setcb(c->up, tunnel_read_cb, NULL, tunnel_event_cb, c);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	event_del(&c->timer);
	{
		struct timeval tv = { .tv_sec = conn_idle_timeout_ms(c) / 1000,
		    .tv_usec = (conn_idle_timeout_ms(c) % 1000) * 1000 };
		evtimer_add(&c->timer, &tv);
	}
	/* Bytes the client sent right after its CONNECT head. */
	if (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0)
		(void)tunnel_relay(c, c->cli);
}
