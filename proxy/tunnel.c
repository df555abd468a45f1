/*
 * CONNECT tunnels. When the tunnel starts clean (nothing pipelined), the
 * 200 is sent directly and zerocopy.c splices the sockets. Otherwise bytes
 * are relayed both ways between two bufferevents with backpressure (the
 * libevent le-proxy pattern): when one side's output passes CONN_OUT_MAX,
 * reading from the other side stops until it drains, so a peer that never
 * reads pins at most a few buffers.
 */
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/metrics.h"
#include "proxy/zerocopy.h"

#define TUNNEL_OK	"HTTP/1.1 200 Connection established\r\n\r\n"

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
		bufferevent_setcb(dst, tunnel_read_cb, NULL, tunnel_event_cb,
		    c);
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
		proxy_conn_free(c);
}

/* src sent FIN: forward it to dst once dst has been sent everything. */
static void
tunnel_half_close(struct conn *c, struct bufferevent *src)
{
	struct bufferevent *dst = tunnel_other(c, src);

	*tunnel_eof_flag(c, src) = true;
	bufferevent_disable(src, EV_READ);
	if (tunnel_done(c)) {
		proxy_conn_free(c);
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
	/* Run mode: over the run's byte limit, these bytes are not relayed
	 * and the run's connections (c too) are closed. */
	if (!proxy_run_account(c))
		return false;
	if (evbuffer_add_buffer(out, in) != 0) {
		/* ENOMEM: this tunnel only. */
		proxy_conn_free(c);
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
	proxy_conn_free(c);
}

/* The buffered relay (the client has its 200 or has it queued). */
static void
tunnel_relay_start(struct conn *c)
{
	c->state = CONN_TUNNEL;
	proxy_metrics_tunnels_add(proxy_conn_metrics(c), 1);
	c->last_active_ms = time_mono_ms();
	bufferevent_set_max_single_read(c->cli, CONN_READ_MAX);
	bufferevent_set_max_single_read(c->up, CONN_READ_MAX);
	bufferevent_setwatermark(c->cli, EV_READ, 0, 0);
	bufferevent_setcb(c->cli, tunnel_read_cb, NULL, tunnel_event_cb, c);
	bufferevent_setcb(c->up, tunnel_read_cb, NULL, tunnel_event_cb, c);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	event_del(&c->timer);
	proxy_conn_timer_arm(c, proxy_conn_idle_timeout_ms(c));
	/* Bytes the client sent right after its CONNECT head. */
	if (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0)
		(void)tunnel_relay(c, c->cli);
}

/* Takes the socket out of its bufferevent and frees the bufferevent. */
static int
tunnel_detach(struct bufferevent **bev)
{
	int fd = (int)bufferevent_getfd(*bev);

	bufferevent_setfd(*bev, -1);
	bufferevent_free(*bev);
	*bev = NULL;
	return fd;
}

static void
tunnel_splice_done(void *arg)
{
	proxy_conn_free(arg);
}

/* Sends the 200 itself and hands both sockets to a splice relay. False:
 * nothing changed, except that (part of) the 200 may have been queued on
 * c->cli; the buffered relay runs. */
static bool
tunnel_splice(struct conn *c)
{
	static const char ok[] = TUNNEL_OK;
	struct zerocopy *zc;
	struct zerocopy_sink sink = {
		.count = { &c->req->bytes_up, &c->req->bytes_down },
		.last_active_ms = &c->last_active_ms,
		.done = tunnel_splice_done,
		.arg = c,
	};
	ssize_t n;
	int a, b;

	if (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(c->cli)) > 0)
		return false;	/* pipelined bytes: the buffered relay */
	if (proxy_zerocopy_new(&zc) != 0)
		return false;
	n = send(bufferevent_getfd(c->cli), ok, sizeof(ok) - 1,
	    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(ok) - 1) {
		proxy_zerocopy_free(zc);
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
	a = tunnel_detach(&c->cli);
	b = tunnel_detach(&c->up);
	proxy_zerocopy_start(zc, proxy_conn_base(c), a, b, &sink);
	c->zc = zc;
	c->state = CONN_TUNNEL;
	proxy_metrics_tunnels_add(proxy_conn_metrics(c), 1);
	c->last_active_ms = time_mono_ms();
	event_del(&c->timer);
	proxy_conn_timer_arm(c, proxy_conn_idle_timeout_ms(c));
	return true;
}

void
proxy_tunnel_start(struct conn *c)
{
	if (proxy_conn_splice_enabled(c) && tunnel_splice(c))
		return;
	if (evbuffer_get_length(bufferevent_get_output(c->cli)) == 0)
		evbuffer_add(bufferevent_get_output(c->cli), TUNNEL_OK,
		    sizeof(TUNNEL_OK) - 1);
	tunnel_relay_start(c);
}
