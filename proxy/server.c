/*
 * The listeners: bind (before privileges are dropped), accept with the
 * connection limit (503 answers for a few beyond it), pause after EMFILE,
 * allowlist swaps on reload, the proxy's own addresses (selfaddr.c: read
 * at start, on SIGHUP and every --self-refresh) and the drain on SIGTERM. A new connection goes
 * to conn.c and its first request head to request.c.
 */
#include "proxy/server.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/dnsd.h"
#include "proxy/metrics.h"
#include "proxy/pending.h"
#include "proxy/runs.h"
#include "proxy/selfaddr.h"
#include "proxy/sock.h"
#include "proxy/synth.h"

#define SERVER_OVERFLOW_SLOTS	64	/* 503 answers beyond the limit */
#define SERVER_ACCEPT_RETRY_MS	100	/* after EMFILE */

/* --- accepting -------------------------------------------------------- */

/* A new client connection, counted and capped; NULL when refused. */
static struct conn *
server_accept(struct proxy_server *s, evutil_socket_t fd,
    struct sockaddr *sa)
{
	struct conn *c;
	bool over;

	over = s->nconns >= (size_t)s->cfg->max_connections;
	if (s->draining || s->nconns >= (size_t)s->cfg->max_connections +
	    SERVER_OVERFLOW_SLOTS) {
		evutil_closesocket(fd);
		proxy_metrics_request(s->m, "error", "over-capacity");
		return NULL;
	}
	if (proxy_conn_new(s, fd, sa, &c) != 0) {
		log_warnx("accept: out of memory");
		evutil_closesocket(fd);
		return NULL;
	}
	if (over) {
		proxy_conn_fail(c, 503, "error", "over-capacity");
		return NULL;
	}
	/* Fairness before the credential: one address holds at most
	 * --source-max-pending connections that have not had a request
	 * accepted, whatever it sends; refused at once, unread. */
	if (!proxy_conn_pending_start(c)) {
		proxy_conn_refuse_now(c, 503, "source-pending-limit");
		return NULL;
	}
	return c;
}

static void
server_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct proxy_server *s = arg;
	struct conn *c;

	(void)l;
	(void)salen;
	if ((c = server_accept(s, fd, sa)) != NULL)
		s->request_wait(c);
}

/* The transparent listener: the same counting, then transparent.c. */
static void
server_transparent_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct proxy_server *s = arg;
	struct conn *c;

	(void)l;
	(void)salen;
	if ((c = server_accept(s, fd, sa)) != NULL)
		proxy_transparent_begin(c);
}

static void
server_accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_server *s = arg;

	(void)fd;
	(void)what;
	if (s->draining)
		return;
	for (size_t i = 0; i < s->nlisten; i++)
		if (s->lev[i] != NULL)
			evconnlistener_enable(s->lev[i]);
	if (s->tlev != NULL)
		evconnlistener_enable(s->tlev);
}

static void
server_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct proxy_server *s = arg;
	struct timeval tv = { 0, SERVER_ACCEPT_RETRY_MS * 1000 };

	log_warn("accept");
	/* EMFILE/ENFILE/ENOBUFS: pause accepting rather than spin. */
	evconnlistener_disable(l);
	evtimer_add(s->accept_retry, &tv);
}

/* --- server object ------------------------------------------------------ */

void
proxy_server_set_tls(struct proxy_server *s, struct proxy_tls *tls)
{
	s->tls = tls;
}

void
proxy_server_set_psep(struct proxy_server *s, struct proxy_psep *p)
{
	s->psep = p;
}

int
proxy_server_add_self(struct proxy_server *s, const struct sockaddr *sa)
{
	return proxy_selfaddr_add_listener(s->self, sa);
}

int
proxy_server_refresh_self(struct proxy_server *s)
{
	size_t before = proxy_selfaddr_local_count(s->self), after;
	int rc = proxy_selfaddr_refresh(s->self);

	if (rc != 0) {
		errno = -rc;
		log_warn("reading the local addresses (keeping the %zu known)",
		    before);
		return rc;
	}
	after = proxy_selfaddr_local_count(s->self);
	if (after != before)
		log_info("local addresses: %zu (were %zu)", after, before);
	return 0;
}

static void
server_self_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)proxy_server_refresh_self(arg);
}

static int
server_bind_transparent(struct proxy_server *s)
{
	struct proxy_config_addr a = s->cfg->transparent;
	int fd = s->cfg->transparent_fd;

	if (fd < 0 && (fd = proxy_sock_listen_tcp(&a)) < 0) {
		errno = -fd;
		log_warn("--transparent");
		return fd;
	}
	s->tlev = evconnlistener_new(s->base, server_transparent_cb, s,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_DISABLED, -1, fd);
	if (s->tlev == NULL) {
		close(fd);
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(s->tlev, server_accept_error_cb);
	a.len = sizeof(a.ss);
	if (getsockname(fd, (struct sockaddr *)&a.ss, &a.len) != 0)
		return -errno;
	/* A connection redirected here that meant the proxy itself loops. */
	return proxy_server_add_self(s, (struct sockaddr *)&a.ss);
}

/* The closed resolver (dnsd.c), on the parent's sockets or its own. */
static int
server_dns(struct proxy_server *s)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd = s->cfg->dns_udp_fd >= 0 ? s->cfg->dns_udp_fd :
	    s->cfg->dns_tcp_fd;
	int rc;

	if ((rc = proxy_dnsd_new(s, s->cfg->dns_udp_fd, s->cfg->dns_tcp_fd,
	    &s->dnsd)) != 0) {
		errno = -rc;
		log_warn("--dns-listen");
		return rc;
	}
	/* Never a connection's destination (a name resolving to the
	 * gateway would reach the resolver through the proxy). */
	if (fd >= 0) {
		if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
			return -errno;
		return proxy_server_add_self(s, (struct sockaddr *)&ss);
	}
	return proxy_server_add_self(s,
	    (const struct sockaddr *)&s->cfg->dns_listen.ss);
}

static int
server_bind(struct proxy_server *s, size_t i)
{
	struct proxy_config_addr *a = &s->bound[i];
	char text[64];
	evutil_socket_t fd;
	int rc;

	*a = s->cfg->listen[i];
	proxy_conn_format_addr((struct sockaddr *)&a->ss, text, sizeof(text));
	if ((fd = s->cfg->listen_fd[i]) >= 0) {
		/* Bound by the parent (privilege separation). */
		a->len = sizeof(a->ss);
		if (getsockname(fd, (struct sockaddr *)&a->ss, &a->len) != 0)
			goto bad;
	} else if ((fd = proxy_sock_listen_tcp(a)) < 0) {
		errno = -fd;
		fd = -1;
		goto bad;
	}
	s->lev[i] = evconnlistener_new(s->base, server_accept_cb, s,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_DISABLED, -1, fd);
	if (s->lev[i] == NULL) {
		errno = ENOMEM;
		goto bad;
	}
	evconnlistener_set_error_cb(s->lev[i], server_accept_error_cb);
	/* A wildcard listener makes every local address a listener's. */
	return proxy_server_add_self(s, (struct sockaddr *)&a->ss);
bad:
	rc = -errno;
	log_warn("listen on %s", text);
	if (fd >= 0)
		close(fd);
	return rc;
}

int
proxy_server_new(const struct proxy_config *cfg, struct event_base *base,
    struct dns *dns, struct accesslog *alog, struct proxy_metrics *m,
    struct proxy_server **out)
{
	struct proxy_server *s;
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
	s->request_wait = proxy_request_wait;
	s->accept_retry = evtimer_new(base, server_accept_retry_cb, s);
	s->self_tick = event_new(base, -1, EV_PERSIST, server_self_tick_cb, s);
	if (s->accept_retry == NULL || s->self_tick == NULL ||
	    proxy_selfaddr_new(&s->self) != 0)
		rc = -ENOMEM;
	/* Before any request: every local address is the proxy's own. */
	if (rc == 0)
		rc = proxy_server_refresh_self(s);
	if (rc == 0 && cfg->control != NULL)
		rc = proxy_runs_new(PROXY_RUNS_MAX, &s->runs);
	if (rc == 0)
		rc = proxy_pending_new((size_t)cfg->max_connections +
		    SERVER_OVERFLOW_SLOTS, &s->pending);
	for (size_t i = 0; i < cfg->nlisten && rc == 0; i++) {
		rc = server_bind(s, i);
		s->nlisten = i + 1;
	}
	if (rc == 0 && cfg->has_transparent)
		rc = server_bind_transparent(s);
	if (rc == 0 && (cfg->has_dns_listen || cfg->dns_udp_fd >= 0 ||
	    cfg->dns_tcp_fd >= 0))
		rc = server_dns(s);
	if (rc != 0) {
		proxy_server_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
proxy_server_free(struct proxy_server *s)
{
	if (s == NULL)
		return;
	s->drain_done = NULL;
	while (s->conns != NULL)
		proxy_conn_free(s->conns);
	for (size_t i = 0; i < s->nlisten; i++)
		if (s->lev[i] != NULL)
			evconnlistener_free(s->lev[i]);
	if (s->tlev != NULL)
		evconnlistener_free(s->tlev);
	proxy_dnsd_free(s->dnsd);
	if (s->accept_retry != NULL)
		event_free(s->accept_retry);
	if (s->self_tick != NULL)
		event_free(s->self_tick);
	if (s->runs_tick != NULL)
		event_free(s->runs_tick);
	/* After the connections: they were counted in their runs. */
	proxy_runs_free(s->runs);
	proxy_synth_free(s->synth);
	proxy_pending_free(s->pending);
	allowlist_set_free(s->set);
	proxy_selfaddr_free(s->self);
	free(s);
}

int
proxy_server_listen_addr(const struct proxy_server *s, size_t i,
    struct sockaddr_storage *ss, socklen_t *len)
{
	if (i >= s->nlisten)
		return -ENOENT;
	*ss = s->bound[i].ss;
	*len = s->bound[i].len;
	return 0;
}

void
proxy_server_set_allowlist(struct proxy_server *s, struct allowlist_set *set)
{
	struct allowlist_set *old = s->set;

	/* Requests in flight keep only copies of reasons, never pointers
	 * into the set, so the old one can go now. */
	s->set = set;
	allowlist_set_free(old);
}

int
proxy_server_start(struct proxy_server *s)
{
	struct timeval tv = { .tv_sec = s->cfg->self_refresh_ms / 1000,
	    .tv_usec = (s->cfg->self_refresh_ms % 1000) * 1000 };

	for (size_t i = 0; i < s->nlisten; i++)
		if (evconnlistener_enable(s->lev[i]) != 0)
			return -EIO;
	if (s->tlev != NULL && evconnlistener_enable(s->tlev) != 0)
		return -EIO;
	if (s->cfg->self_refresh_ms > 0 && event_add(s->self_tick, &tv) != 0)
		return -EIO;
	if (s->runs != NULL && s->runs_tick == NULL)
		return proxy_run_tick_start(s);
	return 0;
}

size_t
proxy_server_connections(const struct proxy_server *s)
{
	return s->nconns;
}

void
proxy_server_drain(struct proxy_server *s, void (*done)(void *), void *arg)
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
	if (s->tlev != NULL)
		evconnlistener_free(s->tlev);
	s->tlev = NULL;
	proxy_dnsd_drain(s->dnsd);
	/* Connections waiting for a (next) request have nothing in flight. */
	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->state == CONN_HEAD && evbuffer_get_length(
		    bufferevent_get_input(c->cli)) == 0)
			proxy_conn_free(c);
	}
	if (s->nconns == 0 && !s->drain_called && done != NULL) {
		s->drain_called = true;
		done(arg);
	}
}

