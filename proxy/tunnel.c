/*
 * CONNECT tunnels. When the tunnel starts clean (nothing pipelined), the
 * 200 is sent directly and zerocopy.c splices the sockets. Otherwise bytes
 * are relayed both ways between two bufferevents with backpressure (the
 * libevent le-proxy pattern): when one side's output passes CONN_OUT_MAX,
 * reading from the other side stops until it drains, so a peer that never
 * reads pins at most a few buffers.
 *
 * The SNI check runs first in both relays: after the 200, the client's
 * first bytes are read (and parsed as a ClientHello) before anything goes
 * upstream; upstream's bytes already flow down meanwhile. The verdict lets
 * the tunnel go on with those bytes sent first, or closes it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/helloread.h"
#include "proxy/metrics.h"
#include "proxy/zerocopy.h"

#define TUNNEL_OK	"HTTP/1.1 200 Connection established\r\n\r\n"
/* A fatal access_denied alert (RFC 8446 section 6): what a TLS client
 * refused by the SNI check reads instead of a bare close. */
#define TUNNEL_ALERT	"\x15\x03\x03\x00\x02\x02\x31"

static void tunnel_read_cb(struct bufferevent *src, void *arg);
static void tunnel_event_cb(struct bufferevent *bev, short what, void *arg);
static void tunnel_hello_push(struct conn *c, bool eof);

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
	struct conn *c = arg;

	if (src == c->cli && c->hr != NULL)
		tunnel_hello_push(c, false);	/* the SNI check reads */
	else
		(void)tunnel_relay(c, src);
}

static void
tunnel_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		if (bev == c->cli && c->hr != NULL) {
			tunnel_hello_push(c, true);
			return;
		}
		/* Relay whatever arrived with the FIN first. */
		if (evbuffer_get_length(bufferevent_get_input(bev)) > 0 &&
		    !tunnel_relay(c, bev))
			return;
		tunnel_half_close(c, bev);
		return;
	}
	proxy_conn_free(c);
}

/* --- the SNI check ------------------------------------------------------ */

/* Writes what bev has queued, without waiting; true when all of it went.
 * A socket bufferevent's output is frozen at its front (only libevent
 * drains it, and copyout refuses), so its chains are peeked and sent;
 * bev is about to be freed. */
static bool
tunnel_flush_now(struct bufferevent *bev, int fd)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t n = evbuffer_get_length(out);
	struct evbuffer_iovec v[8];
	struct iovec iov[8];
	struct msghdr mh = { .msg_iov = iov };
	int k;

	if (n == 0)
		return true;
	k = evbuffer_peek(out, -1, NULL, v, 8);
	if (k < 1 || k > 8)
		return false;
	for (int i = 0; i < k; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = v[i].iov_len;
	}
	mh.msg_iovlen = (size_t)k;
	return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n;
}

/* The first bytes start like an HTTP request line ("GET /..."): a
 * method token of capitals, then a space. */
static bool
tunnel_http_like(const uint8_t *b, size_t n)
{
	size_t i = 0;

	while (i < n && i < 24 && b[i] >= 'A' && b[i] <= 'Z')
		i++;
	return i > 0 && i < n && b[i] == ' ';
}

/* A plain-HTTP client in a tunnel reads why it was refused, as it would
 * from the proxy itself (X-Cordon-Error and a one-line body). */
static void
tunnel_refuse_http(int fd, const struct conn *c, const char *why)
{
	char body[256], msg[512];
	int b, m;

	b = snprintf(body, sizeof(body), "cordon-proxy: %s: tunnels to "
	    "%s:%u carry TLS only (the entry is not raw)\n", why,
	    c->req->host, c->req->port);
	if (b < 0 || (size_t)b >= sizeof(body))
		return;
	m = snprintf(msg, sizeof(msg), "HTTP/1.1 403 Forbidden\r\n"
	    "X-Cordon-Error: %s\r\nContent-Type: text/plain\r\n"
	    "Content-Length: %d\r\nConnection: close\r\n\r\n%s", why, b,
	    body);
	if (m > 0 && (size_t)m < sizeof(msg))
		(void)send(fd, msg, (size_t)m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Refuses the tunnel: nothing has gone upstream and nothing will. A client
 * that spoke TLS reads an access_denied alert; what it still sends is
 * drained so the close does not turn into a reset that loses the alert.
 * Logged as deny with the reason; the status stays 200 (what it got). */
static void
tunnel_refuse(struct conn *c, int fd, const struct proxy_tlshello *h,
    const char *why)
{
	bool flushed = true;
	char junk[4096];

	/* Buffered relay: what is queued for the client (the 200 itself,
	 * when it came pipelined) goes before the alert, or no alert. */
	if (c->cli != NULL)
		flushed = tunnel_flush_now(c->cli, fd);
	c->req->decision = "deny";
	snprintf(c->req->reason, sizeof(c->req->reason), "%s", why);
	/* Not the name itself: it is the client's, any bytes but NUL. */
	log_debug("%s: tunnel to %s:%u refused: %s", c->client, c->req->host,
	    c->req->port, why);
	/* Any TLS record type first: the client speaks TLS. */
	if (flushed && h != NULL && h->len > 0 && h->buf[0] >= 0x14 &&
	    h->buf[0] <= 0x19)
		(void)send(fd, TUNNEL_ALERT, sizeof(TUNNEL_ALERT) - 1,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
	else if (flushed && h != NULL && tunnel_http_like(h->buf, h->len))
		tunnel_refuse_http(fd, c, why);
	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 16; i++)
		if (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
			break;
	proxy_conn_free(c);
}

/* The check's verdict: NULL to go on, else the reason. This is where a
 * tunnel has the client's whole ClientHello and has sent nothing
 * upstream: an inspected tunnel branches to inspect.c after it. */
static const char *
tunnel_hello_verdict(struct conn *c, enum helloread_end end,
    const struct proxy_tlshello *h, char *buf, size_t len)
{
	if (end == HELLOREAD_TIMEOUT)
		return "sni-timeout";
	if (h == NULL)
		return NULL;	/* closed before sending anything */
	/* The name is kept for the log line: without it, no tunnel. */
	if (h->status == TLSHELLO_SNI && proxy_conn_req_str(&c->req->sni,
	    h->name, strlen(h->name)) != 0)
		return "no-memory";
	return proxy_sni_verdict(c, h, buf, len);
}

/* Splice relay: the reader is done; on a pass, what it read goes first. */
static void
tunnel_splice_hello_cb(void *arg, enum helloread_end end,
    const struct proxy_tlshello *h)
{
	struct conn *c = arg;
	const char *why;
	char buf[128];

	if (end == HELLOREAD_ERROR) {
		proxy_conn_free(c);
		return;
	}
	why = tunnel_hello_verdict(c, end, h, buf, sizeof(buf));
	if (why != NULL) {
		tunnel_refuse(c, proxy_zerocopy_fd(c->zc, 0), h, why);
		return;
	}
	if (proxy_zerocopy_release(c->zc, h != NULL ? h->buf : NULL,
	    h != NULL ? h->len : 0, end == HELLOREAD_EOF) != 0) {
		proxy_conn_free(c);
		return;
	}
	proxy_helloread_free(c->hr);
	c->hr = NULL;
}

/* Buffered relay, the verdict is in (eof: the client has closed). On a
 * pass, the bytes still in the client's input (all of them, the checked
 * ones first) are relayed as usual. */
static void
tunnel_hello_done(struct conn *c, enum helloread_end end, bool eof)
{
	const struct proxy_tlshello *h = proxy_helloread_hello(c->hr);
	const char *why;
	char buf[128];

	why = tunnel_hello_verdict(c, end, h, buf, sizeof(buf));
	/* An inspected entry is only ever reached through its TLS. */
	if (why == NULL && c->req->inspect && (h == NULL ||
	    h->status == TLSHELLO_NOT_TLS || h->status == TLSHELLO_NEED_MORE))
		why = "tls-required";
	if (why != NULL) {
		tunnel_refuse(c, bufferevent_getfd(c->cli), h, why);
		return;
	}
	proxy_helloread_free(c->hr);
	c->hr = NULL;
	if (c->req->inspect) {
		proxy_inspect_begin(c);
		return;
	}
	bufferevent_setwatermark(c->cli, EV_READ, 0, 0);
	if (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0 &&
	    !tunnel_relay(c, c->cli))
		return;
	if (eof)
		tunnel_half_close(c, c->cli);
}

/* Buffered relay: feeds the reader what arrived past what it holds; the
 * bytes stay in the client's input until the verdict. */
static void
tunnel_hello_push(struct conn *c, bool eof)
{
	struct evbuffer *in = bufferevent_get_input(c->cli);
	const struct proxy_tlshello *h = proxy_helloread_hello(c->hr);
	size_t held = h != NULL ? h->len : 0, n = evbuffer_get_length(in);
	enum proxy_tlshello_status st = h != NULL ? h->status :
	    TLSHELLO_NEED_MORE;
	uint8_t buf[PROXY_TLSHELLO_MAX];
	struct evbuffer_ptr pos;

	n = n > held ? n - held : 0;
	if (n > proxy_helloread_room(c->hr))
		n = proxy_helloread_room(c->hr);
	if (n > 0 && evbuffer_ptr_set(in, &pos, held,
	    EVBUFFER_PTR_SET) == 0 && evbuffer_copyout_from(in, &pos, buf,
	    n) == (ev_ssize_t)n)
		st = proxy_helloread_push(c->hr, buf, n, NULL);
	if (st == TLSHELLO_NEED_MORE && !eof)
		return;
	if (st == TLSHELLO_NEED_MORE)
		(void)proxy_helloread_finish(c->hr);
	tunnel_hello_done(c, eof ? HELLOREAD_EOF : HELLOREAD_PARSED, eof);
}

static void
tunnel_hello_timeout_cb(void *arg, enum helloread_end end,
    const struct proxy_tlshello *h)
{
	(void)h;	/* the same as proxy_helloread_hello's */
	tunnel_hello_done(arg, end, false);
}

/* Whether the client's first bytes go through the SNI check: always for
 * an inspected entry (it needs the ClientHello), never for a `raw` one
 * (any bytes), else unless --insecure-no-sni-check. */
static bool
tunnel_checked(const struct conn *c)
{
	if (c->req->inspect)
		return true;
	/* Transparent: the listener decided by this very ClientHello
	 * (transparent.c, under tlshello.c's rules), or it is raw. */
	if (c->req->transparent)
		return false;
	return !c->req->raw && !c->srv->cfg->no_sni_check;
}

/* The buffered relay (the client has its 200 or has it queued). */
static void
tunnel_relay_start(struct conn *c)
{
	proxy_conn_state_set(c, CONN_TUNNEL);
	proxy_metrics_tunnels_add(proxy_conn_metrics(c), 1);
	c->last_active_ms = time_mono_ms();
	bufferevent_set_max_single_read(c->cli, CONN_READ_MAX);
	bufferevent_set_max_single_read(c->up, CONN_READ_MAX);
	bufferevent_setwatermark(c->cli, EV_READ, 0, 0);
	bufferevent_setcb(c->cli, tunnel_read_cb, NULL, tunnel_event_cb, c);
	bufferevent_setcb(c->up, tunnel_read_cb, NULL, tunnel_event_cb, c);
	/* Inspected: upstream's socket waits, unread, for the first request
	 * (inspect.c). */
	if (c->req->inspect)
		bufferevent_disable(c->up, EV_READ);
	else
		bufferevent_enable(c->up, EV_READ | EV_WRITE);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	event_del(&c->timer);
	proxy_conn_timer_arm(c, proxy_conn_idle_timeout_ms(c));
	/* An inspected tunnel needs the ClientHello whatever
	 * --insecure-no-sni-check says; a raw one is not looked at. */
	if (tunnel_checked(c)) {
		struct helloread_sink sink = {
			.done = tunnel_hello_timeout_cb, .arg = c,
			.timeout_ms = c->srv->cfg->sni_timeout_ms,
			.from_start = true,
		};
		if (proxy_helloread_new(proxy_conn_base(c), -1, &sink,
		    &c->hr) != 0) {
			proxy_conn_free(c);
			return;
		}
		/* The input holds what the check reads: at most its cap. */
		bufferevent_setwatermark(c->cli, EV_READ, 0,
		    PROXY_TLSHELLO_MAX);
	}
	/* Bytes the client sent right after its CONNECT head. */
	if (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0)
		tunnel_read_cb(c->cli, c);
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

/* Transparent: what the client sent before the decision (the ClientHello
 * its name came from) goes to the upstream socket ahead of the splice.
 * False: not all of it could be sent at once (what was sent is gone from
 * the input; the buffered relay sends the rest). */
static bool
tunnel_flush_first(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cli);
	size_t len = evbuffer_get_length(in);
	unsigned char *p;
	ssize_t n;

	if (len == 0)
		return true;
	if (evbuffer_get_length(bufferevent_get_output(c->up)) > 0 ||
	    (p = evbuffer_pullup(in, (ssize_t)len)) == NULL)
		return false;
	n = send(bufferevent_getfd(c->up), p, len, MSG_NOSIGNAL |
	    MSG_DONTWAIT);
	if (n <= 0)
		return false;
	evbuffer_drain(in, (size_t)n);
	c->req->bytes_up += (uint64_t)n;
	return (size_t)n == len;
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
	struct helloread_sink check = {
		.done = tunnel_splice_hello_cb,
		.arg = c,
		.timeout_ms = c->srv->cfg->sni_timeout_ms,
		.from_start = true,
	};
	struct helloread *hr = NULL;
	ssize_t n;
	int a, b;

	if (evbuffer_get_length(bufferevent_get_output(c->cli)) > 0 ||
	    (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0 &&
	    (!c->req->transparent || !tunnel_flush_first(c))))
		return false;	/* pipelined bytes: the buffered relay */
	if (proxy_zerocopy_new(&zc) != 0)
		return false;
	/* The check reads the client's socket while the relay holds the
	 * client's direction (the socket stays the same after detach). */
	if (tunnel_checked(c) && proxy_helloread_new(
	    proxy_conn_base(c), (int)bufferevent_getfd(c->cli), &check,
	    &hr) != 0) {
		proxy_zerocopy_free(zc);
		return false;	/* ENOMEM: the buffered relay (checks too) */
	}
	/* Transparent: the client asked for no tunnel, and gets no 200. */
	n = c->req->transparent ? (ssize_t)sizeof(ok) - 1 :
	    send(bufferevent_getfd(c->cli), ok, sizeof(ok) - 1,
	    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(ok) - 1) {
		proxy_helloread_free(hr);
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
	if (hr != NULL)
		proxy_zerocopy_hold(zc);
	proxy_zerocopy_start(zc, proxy_conn_base(c), a, b, &sink);
	c->zc = zc;
	c->hr = hr;
	proxy_conn_state_set(c, CONN_TUNNEL);
	proxy_metrics_tunnels_add(proxy_conn_metrics(c), 1);
	c->last_active_ms = time_mono_ms();
	event_del(&c->timer);
	proxy_conn_timer_arm(c, proxy_conn_idle_timeout_ms(c));
	return true;
}

void
proxy_tunnel_start(struct conn *c)
{
	/* Inspected: the buffered relay's reader keeps the ClientHello in
	 * the client's input, where the TLS handshake then finds it. */
	if (!c->req->inspect && proxy_conn_splice_enabled(c) &&
	    tunnel_splice(c))
		return;
	if (!c->req->transparent &&
	    evbuffer_get_length(bufferevent_get_output(c->cli)) == 0)
		evbuffer_add(bufferevent_get_output(c->cli), TUNNEL_OK,
		    sizeof(TUNNEL_OK) - 1);
	tunnel_relay_start(c);
}
