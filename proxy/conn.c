/*
 * A client connection's life cycle: creation on accept, the request record
 * and its access-log line, timers, and the way back to the next request on
 * a kept-alive connection; how it ends (error answers with a lingering
 * close, closing once flushed) is in conn_close.c. The steps (request.c,
 * upstream.c, tunnel.c, forward.c) call these; this file calls none of
 * them. One connection's failure, ENOMEM included, only ever closes that
 * connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/cbuf.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/conn.h"
#include "proxy/dns.h"
#include "proxy/helloread.h"
#include "proxy/metrics.h"
#include "proxy/pending.h"
#include "proxy/runs.h"
#include "proxy/zerocopy.h"

void
proxy_conn_timer_arm(struct conn *c, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
	    .tv_usec = (ms % 1000) * 1000 };

	evtimer_add(&c->timer, &tv);
}

int
proxy_conn_idle_timeout_ms(const struct conn *c)
{
	return c->srv->cfg->idle_timeout_ms;
}

/*
 * Reads the client's next request head into a new *hrp. Parses only once
 * the head can be complete: the parser restarts from the beginning, so
 * re-running it on every byte would be quadratic. Returns 0 to wait for
 * more (nothing allocated), -1 when it failed the connection (no memory),
 * or 1 with *hrp (caller frees) and *rcp the parser's answer (the head's
 * length, or a negative errno); then the head timer is stopped and the
 * request counted.
 */
int
proxy_conn_head_parse(struct conn *c, struct http_request **hrp, int *rcp)
{
	struct evbuffer *in = bufferevent_get_input(c->cli);
	size_t len = evbuffer_get_length(in), max = proxy_conn_max_header(c);
	struct http_request *hr;
	const char *buf;
	int rc;

	if (len == 0)
		return 0;
	if (len > max)
		len = max;
	if (len < max) {
		struct evbuffer_ptr p;
		size_t from = c->head_scanned > 3 ? c->head_scanned - 3 : 0;

		evbuffer_ptr_set(in, &p, from, EVBUFFER_PTR_SET);
		p = evbuffer_search(in, "\r\n\r\n", 4, &p);
		if (p.pos < 0) {
			c->head_scanned = (uint32_t)len;
			return 0;
		}
	}
	c->head_scanned = 0;
	hr = malloc(sizeof(*hr));
	if (c->req == NULL)
		c->req = proxy_conn_req_new();
	if (hr == NULL || c->req == NULL) {
		free(hr);
		proxy_conn_fail(c, 503, "error", "no-memory");
		return -1;
	}
	buf = (const char *)evbuffer_pullup(in, (ssize_t)len);
	rc = buf == NULL ? -ENOMEM : proxy_http_request_parse(buf, len, max,
	    hr);
	if (rc == -EAGAIN && len < max) {
		free(hr);
		c->head_scanned = (uint32_t)len;
		return 0;	/* leading empty lines: wait for more */
	}
	event_del(&c->timer);
	c->nrequests++;
	*hrp = hr;
	*rcp = rc;
	return 1;
}

int
proxy_conn_max_header(const struct conn *c)
{
	return (int)c->srv->cfg->max_header;
}

struct proxy_metrics *
proxy_conn_metrics(const struct conn *c)
{
	return c->srv->m;
}

bool
proxy_conn_draining(const struct conn *c)
{
	return c->srv->draining;
}

struct event_base *
proxy_conn_base(const struct conn *c)
{
	return c->srv->base;
}

bool
proxy_conn_splice_enabled(const struct conn *c)
{
	return !c->srv->cfg->no_splice && proxy_run_splice_ok(c);
}

void
proxy_conn_format_addr(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

/* --- request bookkeeping ------------------------------------------------ */

struct conn_req *
proxy_conn_req_new(void)
{
	struct conn_req *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->start_wall_ms = time_wall_ms();
	r->start_mono_ms = time_mono_ms();
	r->dns_ms = -1;
	r->connect_ms = -1;
	return r;
}

int
proxy_conn_req_str(char **dst, const char *src, size_t n)
{
	free(*dst);
	*dst = strndup(src, n);
	return *dst != NULL ? 0 : -ENOMEM;
}

int
proxy_conn_req_path(struct conn_req *r, const char *target, size_t len)
{
	const char *q = memchr(target, '?', len);
	size_t n = q != NULL ? (size_t)(q - target) : len;

	return proxy_conn_req_str(&r->path, target, n < CONN_PATH_MAX ? n :
	    CONN_PATH_MAX);
}

static void
conn_req_free(struct conn_req *r)
{
	if (r == NULL)
		return;
	free(r->host);
	free(r->sni);
	free(r->path);
	free(r->addrs);
	free(r->target);
	cbuf_free(r->uphead);
	free(r);
}

void
proxy_conn_request_done(struct conn *c)
{
	struct proxy_server *s = c->srv;
	struct conn_req *r = c->req;
	struct accesslog_entry e;
	int rc;

	if (r == NULL)
		return;
	c->req = NULL;
	if (r->decision == NULL) {
		r->decision = "error";
		snprintf(r->reason, sizeof(r->reason), "client-closed");
	}
	proxy_run_request_done(c, r);
	proxy_metrics_request(s->m, r->decision, r->reason);
	proxy_metrics_bytes_add(s->m, r->bytes_up, r->bytes_down);
	if (s->alog != NULL) {
		memset(&e, 0, sizeof(e));
		e.time_ms = r->start_wall_ms;
		e.client = c->client;
		e.run = r->run != NULL ? r->run->id : NULL;
		e.method = r->method[0] != '\0' ? r->method : NULL;
		e.host = r->host != NULL && r->host[0] != '\0' ? r->host :
		    NULL;
		e.port = r->port != 0 ? r->port : -1;
		e.decision = r->decision;
		e.reason = r->reason;
		e.policy = s->runs == NULL ? s->cfg->policy :
		    r->run != NULL ? r->run->policy : NULL;
		e.address = r->address[0] != '\0' ? r->address : NULL;
		e.status = r->status > 0 ? r->status : -1;
		e.bytes_up = r->bytes_up;
		e.bytes_down = r->bytes_down;
		e.duration_ms = time_mono_ms() - r->start_mono_ms;
		e.dns_ms = r->dns_ms;
		e.connect_ms = r->connect_ms;
		e.sni = r->sni != NULL && r->sni[0] != '\0' ? r->sni : NULL;
		e.via = proxy_conn_req_via(r);
		e.inspected = r->inspected;
		e.path = r->inspected && r->path != NULL && r->path[0] != '\0' ?
		    r->path : NULL;
		rc = proxy_accesslog_write(s->alog, &e);
		if (rc != 0) {
			errno = -rc;
			log_warn("access log write");
		}
	}
	conn_req_free(r);
}

const char *
proxy_conn_req_via(const struct conn_req *r)
{
	return r->via != NULL ? r->via : "proxy";
}

/* --- pending connections ----------------------------------------------- */

bool
proxy_conn_pending_start(struct conn *c)
{
	struct proxy_server *s = c->srv;

	if (proxy_pending_add(s->pending, &c->peer.sa,
	    s->cfg->source_max_pending) == 0)
		return false;
	c->pending = true;
	return true;
}

void
proxy_conn_admitted(struct conn *c)
{
	if (!c->pending)
		return;
	proxy_pending_del(c->srv->pending, &c->peer.sa);
	c->pending = false;
}

/* --- closing ------------------------------------------------------------ */

void
proxy_conn_free(struct conn *c)
{
	struct proxy_server *s = c->srv;

	proxy_conn_request_done(c);
	proxy_conn_admitted(c);
	proxy_run_detach(c);
	if (c->on_free != NULL)
		c->on_free(c);
	if (c->dq != NULL)
		proxy_dns_cancel(c->dq);
	event_del(&c->timer);
	if (c->state == CONN_TUNNEL)
		proxy_metrics_tunnels_add(s->m, -1);
	proxy_helloread_free(c->hr);
	c->hr = NULL;
	if (c->zc != NULL) {
		proxy_zerocopy_free(c->zc);
		c->zc = NULL;
	}
	if (c->up != NULL)
		bufferevent_free(c->up);
	if (c->cli != NULL)
		bufferevent_free(c->cli);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	s->nconns--;
	proxy_metrics_connections_add(s->m, -1);
	free(c->orig_name);
	free(c);
	if (s->draining && s->nconns == 0 && !s->drain_called &&
	    s->drain_done != NULL) {
		s->drain_called = true;
		s->drain_done(s->drain_arg);
	}
}

void
proxy_conn_next_request(struct conn *c)
{
	proxy_conn_request_done(c);
	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	c->up_eof = false;
	event_del(&c->timer);
	if (c->srv->draining || c->cli_eof) {
		proxy_conn_close_when_flushed(c);
		return;
	}
	if (c->wait_next != NULL)
		c->wait_next(c);
	else
		c->srv->request_wait(c);
}

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int64_t idle, left;

	(void)fd;
	(void)what;
	if (c->close_after_flush) {
		proxy_conn_free(c);
		return;
	}
	switch (c->state) {
	case CONN_HEAD:
		if (c->nrequests > 0 &&
		    evbuffer_get_length(bufferevent_get_input(c->cli)) == 0)
			proxy_conn_free(c);	/* idle keep-alive connection */
		else if (c->transparent && c->speaks == SPEAKS_RAW &&
		    c->orig_why[0] != '\0')
			/* Waited for a server that was never to speak: the
			 * refusal its address had (port-not-allowed...). */
			proxy_conn_fail(c, 403, "deny", c->orig_why);
		else
			proxy_conn_fail(c, 408, "error", "header-timeout");
		break;
	case CONN_CONNECTING:
		c->connect_timeout(c);
		break;
	case CONN_TUNNEL:
	case CONN_FORWARD:
		idle = time_mono_ms() - c->last_active_ms;
		left = proxy_conn_idle_timeout_ms(c) - idle;
		if (left <= 0) {
			log_debug("%s: idle timeout", c->client);
			proxy_conn_free(c);
		} else {
			proxy_conn_timer_arm(c, (int)left);
		}
		break;
	case CONN_RESOLVING:	/* the resolver has its own deadline */
	case CONN_PARENT:	/* the parent answers or the child dies */
		break;
	case CONN_LINGER:
	case CONN_NSTATES:
		proxy_conn_free(c);
		break;
	}
}

int
proxy_conn_new(struct proxy_server *s, int fd, const struct sockaddr *sa,
    struct conn **out)
{
	struct conn *c;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->cli = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->cli == NULL) {
		free(c);
		return -ENOMEM;
	}
	c->srv = s;
	proxy_conn_format_addr(sa, c->client, sizeof(c->client));
	memcpy(&c->peer, sa, sa->sa_family == AF_INET6 ?
	    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	evtimer_assign(&c->timer, s->base, conn_timer_cb, c);
	c->next = s->conns;
	if (s->conns != NULL)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	proxy_metrics_connections_add(s->m, 1);
	c->last_active_ms = time_mono_ms();
	*out = c;
	return 0;
}
