/*
 * Listeners, client connections and their life cycle: accept (with the
 * connection limit), read and check the request head against its deadline,
 * answer errors with a lingering close, keep-alive, drain on SIGTERM. The
 * upstream side is upstream.c; the relays are tunnel.c, zerocopy.c and
 * forward.c. One connection's failure, ENOMEM included, only ever closes
 * that connection.
 */
#include "proxy/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "allowlist/allowlist.h"
#include "common/cbuf.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/addr.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/dns.h"
#include "proxy/host.h"
#include "proxy/http.h"
#include "proxy/metrics.h"

#define SERVER_OVERFLOW_SLOTS	64	/* 503 answers beyond the limit */
#define SERVER_LINGER_MS	2000	/* drain after an error answer */
#define SERVER_ACCEPT_RETRY_MS	100	/* after EMFILE */

static void conn_head_process(struct conn *c);

static const char *
server_status_text(int status)
{
	switch (status) {
	case 200: return "Connection established";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

void
conn_timer_arm(struct conn *c, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
	    .tv_usec = (ms % 1000) * 1000 };

	evtimer_add(&c->timer, &tv);
}

int
conn_idle_timeout_ms(const struct conn *c)
{
	return c->srv->cfg->idle_timeout_ms;
}

int
conn_max_header(const struct conn *c)
{
	return (int)c->srv->cfg->max_header;
}

struct metrics *
conn_metrics(const struct conn *c)
{
	return c->srv->m;
}

bool
conn_draining(const struct conn *c)
{
	return c->srv->draining;
}

struct event_base *
conn_base(const struct conn *c)
{
	return c->srv->base;
}

bool
conn_splice_enabled(const struct conn *c)
{
	return !c->srv->cfg->no_splice;
}

void
conn_format_addr(const struct sockaddr *sa, char *buf, size_t len)
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

static struct conn_req *
conn_req_new(void)
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

static void
conn_req_free(struct conn_req *r)
{
	if (r == NULL)
		return;
	free(r->addrs);
	cbuf_free(r->uphead);
	free(r);
}

void
conn_request_done(struct conn *c)
{
	struct server *s = c->srv;
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
	metrics_request(s->m, r->decision, r->reason);
	metrics_bytes_add(s->m, r->bytes_up, r->bytes_down);
	if (s->alog != NULL) {
		memset(&e, 0, sizeof(e));
		e.time_ms = r->start_wall_ms;
		e.client = c->client;
		e.method = r->method[0] != '\0' ? r->method : NULL;
		e.host = r->host[0] != '\0' ? r->host : NULL;
		e.port = r->port != 0 ? r->port : -1;
		e.decision = r->decision;
		e.reason = r->reason;
		e.policy = s->cfg->policy;
		e.address = r->address[0] != '\0' ? r->address : NULL;
		e.status = r->status > 0 ? r->status : -1;
		e.bytes_up = r->bytes_up;
		e.bytes_down = r->bytes_down;
		e.duration_ms = time_mono_ms() - r->start_mono_ms;
		e.dns_ms = r->dns_ms;
		e.connect_ms = r->connect_ms;
		rc = accesslog_write(s->alog, &e);
		if (rc != 0) {
			errno = -rc;
			log_warn("access log write");
		}
	}
	conn_req_free(r);
}

/* --- closing ------------------------------------------------------------ */

void
conn_free(struct conn *c)
{
	struct server *s = c->srv;

	conn_request_done(c);
	if (c->dq != NULL)
		dns_cancel(c->dq);
	event_del(&c->timer);
	if (c->state == CONN_TUNNEL)
		metrics_tunnels_add(s->m, -1);
	zerocopy_free(c);
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
	metrics_connections_add(s->m, -1);
	free(c);
	if (s->draining && s->nconns == 0 && !s->drain_called &&
	    s->drain_done != NULL) {
		s->drain_called = true;
		s->drain_done(s->drain_arg);
	}
}

static void
conn_flush_write_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_free(arg);
}

static void
conn_flush_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	conn_free(arg);
}

void
conn_close_when_flushed(struct conn *c)
{
	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	if (c->cli == NULL ||
	    evbuffer_get_length(bufferevent_get_output(c->cli)) == 0) {
		conn_free(c);
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
	conn_timer_arm(c, c->srv->cfg->idle_timeout_ms);
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
	conn_free(arg);
}

static void
conn_linger(struct conn *c)
{
	c->state = CONN_LINGER;
	event_del(&c->timer);
	bufferevent_setwatermark(c->cli, EV_READ, 0, 0);
	bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
	bufferevent_setcb(c->cli, conn_linger_read_cb, conn_linger_write_cb,
	    conn_linger_event_cb, c);
	conn_linger_read_cb(c->cli, c);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	if (evbuffer_get_length(bufferevent_get_output(c->cli)) == 0)
		shutdown(bufferevent_getfd(c->cli), SHUT_WR);
	conn_timer_arm(c, SERVER_LINGER_MS);
}

void
conn_fail(struct conn *c, int status, const char *decision,
    const char *reason)
{
	struct conn_req *r;
	char body[160];
	int n;

	if (c->req == NULL)
		c->req = conn_req_new();	/* NULL on ENOMEM: no log line */
	r = c->req;
	if (c->dq != NULL) {
		dns_cancel(c->dq);
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
	if (r == NULL || !r->resp_started) {
		n = snprintf(body, sizeof(body), "cordon-proxy: %d %s: %s\n",
		    status, server_status_text(status), reason);
		evbuffer_add_printf(bufferevent_get_output(c->cli),
		    "HTTP/1.1 %d %s\r\nX-Cordon-Error: %s\r\n"
		    "Content-Type: text/plain\r\nContent-Length: %d\r\n"
		    "Connection: close\r\n\r\n%s", status,
		    server_status_text(status), reason, n, body);
	}
	log_debug("%s: %d %s (%s %s:%u)", c->client, status, reason,
	    r != NULL ? r->method : "?", r != NULL ? r->host : "?",
	    r != NULL ? r->port : 0);
	conn_request_done(c);
	conn_linger(c);
}

/* --- request heads ------------------------------------------------------ */

static bool
conn_method_refused(const struct http_request *hr)
{
	/* TRACE/TRACK reflect credentials back (cross-site tracing). */
	return (hr->method_len == 5 && memcmp(hr->method, "TRACE", 5) == 0) ||
	    (hr->method_len == 5 && memcmp(hr->method, "TRACK", 5) == 0);
}

/* Fills c->req from a parsed head; on refusal answers and returns false. */
static bool
conn_request_setup(struct conn *c, const struct http_request *hr,
    struct host_parsed *hp)
{
	struct conn_req *r = c->req;
	int rc;

	snprintf(r->method, sizeof(r->method), "%.*s",
	    (int)(hr->method_len < sizeof(r->method) - 1 ? hr->method_len :
	    sizeof(r->method) - 1), hr->method);
	r->is_connect = hr->is_connect;
	r->is_head = hr->method_len == 4 && memcmp(hr->method, "HEAD", 4) == 0;
	r->keep_alive = hr->keep_alive;
	r->client_http10 = hr->version_minor == 0;
	if (hr->form != HTTP_TARGET_AUTHORITY &&
	    hr->form != HTTP_TARGET_ABSOLUTE) {
		conn_fail(c, 400, "error", "origin-form");
		return false;
	}
	if (conn_method_refused(hr)) {
		conn_fail(c, 405, "error", "method-not-allowed");
		return false;
	}
	if (hr->form == HTTP_TARGET_ABSOLUTE && (hr->scheme_len != 4 ||
	    strncasecmp(hr->scheme, "http", 4) != 0)) {
		conn_fail(c, 405, "error", "unsupported-scheme");
		return false;
	}
	if (host_parse(hr->host, hr->host_len, hp) != 0) {
		conn_fail(c, 400, "error", "bad-host");
		return false;
	}
	snprintf(r->host, sizeof(r->host), "%s", hp->name);
	r->port = hr->port;
	if (r->port == 0) {
		conn_fail(c, 400, "error", "bad-port");
		return false;
	}
	if (hr->is_connect)
		return true;
	if (http_request_check_host(hr) != 0) {
		conn_fail(c, 400, "error", "host-mismatch");
		return false;
	}
	r->uphead = cbuf_new((size_t)conn_max_header(c) + 256);
	rc = r->uphead == NULL ? -ENOMEM : http_request_rewrite(hr, r->uphead);
	if (rc == -ENOSPC) {
		conn_fail(c, 431, "error", "headers-too-large");
		return false;
	} else if (rc != 0) {
		conn_fail(c, rc == -ENOMEM ? 503 : 400, "error",
		    rc == -ENOMEM ? "no-memory" : "malformed-request");
		return false;
	}
	r->body_left = hr->content_length > 0 ? hr->content_length : 0;
	r->body_chunked = hr->chunked;
	if (r->body_chunked)
		http_chunked_init(&r->req_chunk);
	r->req_done = !r->body_chunked && r->body_left == 0;
	return true;
}

/* While resolving and connecting, the client stays readable (a hang-up
 * aborts the request; no epoll change on the hand-over) but what it sends
 * is only kept, up to a small bound, for the relay. */
static void
conn_hold_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	(void)arg;
}

static void
conn_hold_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		/* Maybe only a half-close after the request: the relay
		 * decides once it runs. */
		c->cli_eof = true;
		return;
	}
	conn_free(c);
}

static void
conn_hold(struct conn *c)
{
	bufferevent_setwatermark(c->cli, EV_READ, 0, CONN_OUT_MAX);
	bufferevent_setcb(c->cli, conn_hold_read_cb, NULL, conn_hold_event_cb,
	    c);
}

static void
conn_head_process(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cli);
	size_t len = evbuffer_get_length(in), max = conn_max_header(c);
	struct http_request *hr;
	struct host_parsed hp;
	const char *buf;
	int rc;

	if (len == 0)
		return;
	if (len > max)
		len = max;
	/* Parse only once the head can be complete: the parser restarts from
	 * the beginning, so re-running it on every byte would be quadratic. */
	if (len < max) {
		struct evbuffer_ptr p;
		size_t from = c->head_scanned > 3 ? c->head_scanned - 3 : 0;

		evbuffer_ptr_set(in, &p, from, EVBUFFER_PTR_SET);
		p = evbuffer_search(in, "\r\n\r\n", 4, &p);
		if (p.pos < 0) {
			c->head_scanned = (uint32_t)len;
			return;
		}
	}
	c->head_scanned = 0;
	hr = malloc(sizeof(*hr));
	if (c->req == NULL)
		c->req = conn_req_new();
	if (hr == NULL || c->req == NULL) {
		free(hr);
		conn_fail(c, 503, "error", "no-memory");
		return;
	}
	buf = (const char *)evbuffer_pullup(in, (ssize_t)len);
	rc = buf == NULL ? -ENOMEM : http_request_parse(buf, len, max, hr);
	if (rc == -EAGAIN && len < max) {
		free(hr);
		c->head_scanned = (uint32_t)len;
		return;	/* leading empty lines: wait for more */
	}
	event_del(&c->timer);
	c->nrequests++;
	if (rc == -EAGAIN || rc == -EMSGSIZE) {
		conn_fail(c, 431, "error", "headers-too-large");
	} else if (rc == -ENOMEM) {
		conn_fail(c, 503, "error", "no-memory");
	} else if (rc < 0) {
		conn_fail(c, 400, "error", "malformed-request");
	} else if (conn_request_setup(c, hr, &hp)) {
		evbuffer_drain(in, (size_t)rc);
		conn_hold(c);
		free(hr);
		upstream_decide(c, &hp);
		return;
	}
	free(hr);
}

static void
conn_head_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_head_process(arg);
}

static void
conn_head_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if ((what & BEV_EVENT_EOF) &&
	    evbuffer_get_length(bufferevent_get_input(c->cli)) > 0) {
		/* A partial head then EOF: nothing can complete it. */
		conn_fail(c, 400, "error", "malformed-request");
		return;
	}
	conn_free(c);
}

static void
conn_wait_head(struct conn *c)
{
	c->state = CONN_HEAD;
	c->head_scanned = 0;
	bufferevent_setwatermark(c->cli, EV_READ, 0,
	    c->srv->cfg->max_header);
	bufferevent_setcb(c->cli, conn_head_read_cb, NULL, conn_head_event_cb,
	    c);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	conn_timer_arm(c, c->srv->cfg->header_timeout_ms);
}

void
conn_next_request(struct conn *c)
{
	conn_request_done(c);
	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	c->up_eof = false;
	event_del(&c->timer);
	if (c->srv->draining || c->cli_eof) {
		conn_close_when_flushed(c);
		return;
	}
	conn_wait_head(c);
	conn_head_process(c);
}

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int64_t idle, left;

	(void)fd;
	(void)what;
	if (c->close_after_flush) {
		conn_free(c);
		return;
	}
	switch (c->state) {
	case CONN_HEAD:
		if (c->nrequests > 0 &&
		    evbuffer_get_length(bufferevent_get_input(c->cli)) == 0)
			conn_free(c);	/* idle keep-alive connection */
		else
			conn_fail(c, 408, "error", "header-timeout");
		break;
	case CONN_CONNECTING:
		upstream_connect_timeout(c);
		break;
	case CONN_TUNNEL:
	case CONN_FORWARD:
		idle = time_mono_ms() - c->last_active_ms;
		left = conn_idle_timeout_ms(c) - idle;
		if (left <= 0) {
			log_debug("%s: idle timeout", c->client);
			conn_free(c);
		} else {
			conn_timer_arm(c, (int)left);
		}
		break;
	case CONN_RESOLVING:	/* the resolver has its own deadline */
		break;
	case CONN_LINGER:
		conn_free(c);
		break;
	}
}

/* --- accepting -------------------------------------------------------- */

static void
server_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct server *s = arg;
	struct conn *c;
	bool over;

	(void)l;
	(void)salen;
	over = s->nconns >= (size_t)s->cfg->max_connections;
	if (s->draining ||
	    s->nconns >= (size_t)s->cfg->max_connections + SERVER_OVERFLOW_SLOTS) {
		evutil_closesocket(fd);
		metrics_request(s->m, "error", "over-capacity");
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		log_warnx("accept: out of memory");
		evutil_closesocket(fd);
		return;
	}
	c->cli = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->cli == NULL) {
		log_warnx("accept: out of memory");
		evutil_closesocket(fd);
		free(c);
		return;
	}
	c->srv = s;
	conn_format_addr(sa, c->client, sizeof(c->client));
	evtimer_assign(&c->timer, s->base, conn_timer_cb, c);
	c->next = s->conns;
	if (s->conns != NULL)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	metrics_connections_add(s->m, 1);
	c->last_active_ms = time_mono_ms();
	if (over) {
		conn_fail(c, 503, "error", "over-capacity");
		return;
	}
	conn_wait_head(c);
}

static void
server_accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	(void)fd;
	(void)what;
	if (s->draining)
		return;
	for (size_t i = 0; i < s->nlisten; i++)
		if (s->lev[i] != NULL)
			evconnlistener_enable(s->lev[i]);
}

static void
server_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct server *s = arg;
	struct timeval tv = { 0, SERVER_ACCEPT_RETRY_MS * 1000 };

	log_warn("accept");
	/* EMFILE/ENFILE/ENOBUFS: pause accepting rather than spin. */
	evconnlistener_disable(l);
	evtimer_add(s->accept_retry, &tv);
}

/* --- server object ------------------------------------------------------ */

int
server_add_self(struct server *s, const struct sockaddr *sa)
{
	struct sockaddr_storage *n;

	n = realloc(s->self, (s->nself + 1) * sizeof(*n));
	if (n == NULL)
		return -ENOMEM;
	s->self = n;
	memset(&n[s->nself], 0, sizeof(*n));
	memcpy(&n[s->nself], sa, sa->sa_family == AF_INET ?
	    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	s->nself++;
	return 0;
}

/* A wildcard listener is reachable on every local address. */
static int
server_add_self_wildcard(struct server *s, int family)
{
	struct ifaddrs *ifa, *i;
	int rc = 0;

	if (getifaddrs(&ifa) != 0)
		return -errno;
	for (i = ifa; i != NULL && rc == 0; i = i->ifa_next)
		if (i->ifa_addr != NULL && (i->ifa_addr->sa_family == AF_INET ||
		    i->ifa_addr->sa_family == AF_INET6) &&
		    (family == AF_INET6 || i->ifa_addr->sa_family == family))
			rc = server_add_self(s, i->ifa_addr);
	freeifaddrs(ifa);
	return rc;
}

static int
server_bind(struct server *s, size_t i)
{
	struct config_addr *a = &s->bound[i];
	char text[64];
	evutil_socket_t fd;
	int one = 1, rc;

	*a = s->cfg->listen[i];
	conn_format_addr((struct sockaddr *)&a->ss, text, sizeof(text));
	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0)
		goto bad;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Accepted sockets inherit it: one setsockopt less per client. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a->ss, a->len) != 0 ||
	    listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a->ss, &a->len) != 0)
		goto bad;
	s->lev[i] = evconnlistener_new(s->base, server_accept_cb, s,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_DISABLED, -1, fd);
	if (s->lev[i] == NULL) {
		errno = ENOMEM;
		goto bad;
	}
	evconnlistener_set_error_cb(s->lev[i], server_accept_error_cb);
	if (a->ss.ss_family == AF_INET &&
	    ((struct sockaddr_in *)&a->ss)->sin_addr.s_addr == INADDR_ANY)
		rc = server_add_self_wildcard(s, AF_INET);
	else if (a->ss.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(
	    &((struct sockaddr_in6 *)&a->ss)->sin6_addr))
		rc = server_add_self_wildcard(s, AF_INET6);
	else
		rc = server_add_self(s, (struct sockaddr *)&a->ss);
	return rc;
bad:
	rc = -errno;
	log_warn("listen on %s", text);
	if (fd >= 0)
		close(fd);
	return rc;
}

int
server_new(const struct config *cfg, struct event_base *base,
    struct dns *dns, struct accesslog *alog, struct metrics *m,
    struct server **out)
{
	struct server *s;
	int rc = 0;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->cfg = cfg;
	s->base = base;
	s->dns = dns;
	s->alog = alog;
	s->m = m;
	s->accept_retry = evtimer_new(base, server_accept_retry_cb, s);
	if (s->accept_retry == NULL)
		rc = -ENOMEM;
	for (size_t i = 0; i < cfg->nlisten && rc == 0; i++) {
		rc = server_bind(s, i);
		s->nlisten = i + 1;
	}
	if (rc != 0) {
		server_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
server_free(struct server *s)
{
	if (s == NULL)
		return;
	s->drain_done = NULL;
	while (s->conns != NULL)
		conn_free(s->conns);
	for (size_t i = 0; i < s->nlisten; i++)
		if (s->lev[i] != NULL)
			evconnlistener_free(s->lev[i]);
	if (s->accept_retry != NULL)
		event_free(s->accept_retry);
	allowlist_set_free(s->set);
	free(s->self);
	free(s);
}

int
server_listen_addr(const struct server *s, size_t i,
    struct sockaddr_storage *ss, socklen_t *len)
{
	if (i >= s->nlisten)
		return -ENOENT;
	*ss = s->bound[i].ss;
	*len = s->bound[i].len;
	return 0;
}

void
server_set_allowlist(struct server *s, struct allowlist_set *set)
{
	struct allowlist_set *old = s->set;

	/* Requests in flight keep only copies of reasons, never pointers
	 * into the set, so the old one can go now. */
	s->set = set;
	allowlist_set_free(old);
}

int
server_start(struct server *s)
{
	for (size_t i = 0; i < s->nlisten; i++)
		if (evconnlistener_enable(s->lev[i]) != 0)
			return -EIO;
	return 0;
}

size_t
server_connections(const struct server *s)
{
	return s->nconns;
}

void
server_drain(struct server *s, void (*done)(void *), void *arg)
{
	struct conn *c, *next;

	s->draining = true;
	s->drain_done = done;
	s->drain_arg = arg;
	evtimer_del(s->accept_retry);
	for (size_t i = 0; i < s->nlisten; i++) {
		if (s->lev[i] != NULL)
			evconnlistener_free(s->lev[i]);
		s->lev[i] = NULL;
	}
	/* Connections waiting for a (next) request have nothing in flight. */
	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->state == CONN_HEAD && evbuffer_get_length(
		    bufferevent_get_input(c->cli)) == 0)
			conn_free(c);
	}
	if (s->nconns == 0 && !s->drain_called && done != NULL) {
		s->drain_called = true;
		done(arg);
	}
}
