/*
 * How a client connection ends (conn.h): an error answer and its access-log
 * line, then a lingering close that drains what the client still sends (so
 * the answer is not lost to a reset); a refusal before any request; and a
 * close once everything queued is flushed. Apart from conn.c, which creates
 * a connection, keeps its request record and timers and leads it to its
 * next request: these are the only ways out, and none of them calls a step.
 */
#include <stdio.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "proxy/conn.h"
#include "proxy/dns.h"

#define CONN_LINGER_MS	2000	/* drain after an error answer */

static const char *
conn_status_text(int status)
{
	switch (status) {
	case 200: return "Connection established";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

void
proxy_conn_refuse_now(struct conn *c, int status, const char *reason)
{
	char msg[256];
	int n;

	if (c->req == NULL && (c->req = proxy_conn_req_new()) == NULL) {
		proxy_conn_free(c);
		return;
	}
	c->req->decision = "deny";
	c->req->status = status;
	snprintf(c->req->reason, sizeof(c->req->reason), "%s", reason);
	n = snprintf(msg, sizeof(msg), "HTTP/1.1 %d %s\r\nX-Cordon-Error: "
	    "%s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	    status, conn_status_text(status), reason);
	if (n > 0 && (size_t)n < sizeof(msg))
		(void)send(bufferevent_getfd(c->cli), msg, (size_t)n,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
	proxy_conn_free(c);
}

static void
conn_flush_write_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	proxy_conn_free(arg);
}

static void
conn_flush_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	proxy_conn_free(arg);
}

void
proxy_conn_close_when_flushed(struct conn *c)
{
	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	if (c->cli == NULL ||
	    evbuffer_get_length(bufferevent_get_output(c->cli)) == 0) {
		proxy_conn_free(c);
		return;
	}
	c->close_after_flush = true;
	bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
	bufferevent_setcb(c->cli, NULL, conn_flush_write_cb,
	    conn_flush_event_cb, c);
	bufferevent_disable(c->cli, EV_READ);
	bufferevent_enable(c->cli, EV_WRITE);
	/* Bounded: a client that never reads is dropped at the idle
	 * timeout. */
	proxy_conn_timer_arm(c, c->srv->cfg->idle_timeout_ms);
}

/* Lingering close: after an error answer, keep reading (and dropping) what
 * the client still sends until it closes or a short timer ends, so the
 * answer is not destroyed by a RST for unread data. */
static void
conn_linger_read_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	evbuffer_drain(bufferevent_get_input(bev),
	    evbuffer_get_length(bufferevent_get_input(bev)));
}

static void
conn_linger_write_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	shutdown(bufferevent_getfd(bev), SHUT_WR);
}

static void
conn_linger_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	proxy_conn_free(arg);
}

static void
conn_linger(struct conn *c)
{
	proxy_conn_state_set(c, CONN_LINGER);
	event_del(&c->timer);
	bufferevent_setwatermark(c->cli, EV_READ, 0, 0);
	bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
	bufferevent_setcb(c->cli, conn_linger_read_cb, conn_linger_write_cb,
	    conn_linger_event_cb, c);
	conn_linger_read_cb(c->cli, c);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	if (evbuffer_get_length(bufferevent_get_output(c->cli)) == 0)
		shutdown(bufferevent_getfd(c->cli), SHUT_WR);
	proxy_conn_timer_arm(c, CONN_LINGER_MS);
}

void
proxy_conn_fail(struct conn *c, int status, const char *decision,
    const char *reason)
{
	struct conn_req *r;
	char body[512];
	int n;

	/* NULL on ENOMEM: no log line. */
	if (c->req == NULL)
		c->req = proxy_conn_req_new();
	r = c->req;
	if (c->dq != NULL) {
		proxy_dns_cancel(c->dq);
		c->dq = NULL;
	}
	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	if (r != NULL) {
		r->status = status;
		r->decision = decision;
		snprintf(r->reason, sizeof(r->reason), "%s", reason);
	}
	if (c->transparent && c->speaks == SPEAKS_TLS &&
	    (r == NULL || !r->resp_started)) {
		/* It spoke TLS and got nothing yet: an access_denied alert. */
		evbuffer_add(bufferevent_get_output(c->cli), proxy_tls_alert,
		    sizeof(proxy_tls_alert));
	} else if (c->transparent && c->speaks == SPEAKS_RAW) {
		/* Not a protocol we can answer in: the close says it. */
	} else if (r == NULL || !r->resp_started) {
		/* Says who decided what, for an agent that reads only the
		 * body: the host, port and policy with the reason. */
		if (r != NULL && r->host != NULL && r->host[0] != '\0')
			n = snprintf(body, sizeof(body), "cordon-proxy: %d %s: "
			    "%s (host %s, port %u, policy %s)\n", status,
			    conn_status_text(status), reason, r->host, r->port,
			    proxy_run_policy(c) != NULL ? proxy_run_policy(c) :
			    "none");
		else
			n = snprintf(body, sizeof(body), "cordon-proxy: %d %s: "
			    "%s\n", status, conn_status_text(status), reason);
		if (n < 0 || (size_t)n >= sizeof(body))
			n = snprintf(body, sizeof(body), "cordon-proxy: %d: %s\n",
			    status, reason);
		evbuffer_add_printf(bufferevent_get_output(c->cli),
		    "HTTP/1.1 %d %s\r\nX-Cordon-Error: %s\r\n%s"
		    "Content-Type: text/plain\r\nContent-Length: %d\r\n"
		    "Connection: close\r\n\r\n%s", status,
		    conn_status_text(status), reason, status == 407 ?
		    "Proxy-Authenticate: Basic realm=\"cordon\"\r\n" : "", n,
		    body);
	}
	log_debug("%s: %d %s (%s %s:%u)", c->client, status, reason,
	    r != NULL ? r->method : "?", r != NULL && r->host != NULL ?
	    r->host : "?",
	    r != NULL ? r->port : 0);
	proxy_conn_request_done(c);
	conn_linger(c);
}
