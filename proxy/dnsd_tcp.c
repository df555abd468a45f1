/*
 * The closed resolver's TCP clients (dnsd_internal.h): length-prefixed
 * queries read under an in-flight cap and an output cap, per-source and
 * total connection caps, half-closed clients answered before the close.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/dnsd_internal.h"
#include "proxy/runs.h"

void
proxy_dnsd_tcp_free(struct dnsd_tcp *t)
{
	struct proxy_dnsd *d = t->d;

	/* Lookups in flight answer nowhere. */
	for (struct dnsd_pending *p = d->pending; p != NULL; p = p->next)
		if (p->tcp == t) {
			p->tcp = NULL;
			p->peerlen = 0;
		}
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		d->tcps = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	d->ntcp--;
	bufferevent_free(t->bev);
	free(t);
}

static void tcp_read_cb(struct bufferevent *bev, void *arg);

/* Reads again once under the in-flight cap; closes a connection that is
 * done once its last answer is out. */
void
proxy_dnsd_tcp_resume(struct dnsd_tcp *t)
{
	if (t->closing) {
		if (t->inflight == 0 && evbuffer_get_length(
		    bufferevent_get_output(t->bev)) == 0)
			proxy_dnsd_tcp_free(t);
		return;
	}
	if (t->inflight < PROXY_DNSD_TCP_INFLIGHT && evbuffer_get_length(
	    bufferevent_get_output(t->bev)) <= PROXY_DNSD_TCP_OUT_MAX) {
		bufferevent_enable(t->bev, EV_READ);
		/* What was read before the pause is still there. */
		if (evbuffer_get_length(bufferevent_get_input(t->bev)) > 0)
			tcp_read_cb(t->bev, t);
	}
}

static void
tcp_read_cb(struct bufferevent *bev, void *arg)
{
	struct dnsd_tcp *t = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct dnsd_src src = { (struct sockaddr *)&t->peer, t->peerlen, t };

	while (!t->closing && t->inflight < PROXY_DNSD_TCP_INFLIGHT &&
	    evbuffer_get_length(bufferevent_get_output(bev)) <=
	    PROXY_DNSD_TCP_OUT_MAX) {
		size_t n = evbuffer_get_contiguous_space(in), taken = 0,
		    msglen = 0;
		const uint8_t *msg = NULL;
		unsigned char *p;
		int rc;

		if (n == 0)
			return;
		if ((p = evbuffer_pullup(in, (ssize_t)n)) == NULL)
			return;
		rc = proxy_dnsmsg_tcp_feed(&t->st, p, n, &taken, &msg,
		    &msglen);
		evbuffer_drain(in, taken);
		if (rc < 0) {
			/* The stream cannot be resynchronised. */
			log_debug("dns: a TCP client sent an oversized message");
			proxy_dnsd_tcp_free(t);
			return;
		}
		if (rc == 1)
			/* msg lives in t->st until the next feed. */
			proxy_dnsd_query(t->d, &src, msg, msglen);
	}
	if (!t->closing)
		bufferevent_disable(bev, EV_READ);	/* at a cap */
}

static void
tcp_write_cb(struct bufferevent *bev, void *arg)
{
	struct dnsd_tcp *t = arg;

	(void)bev;
	/* The answers drained (below the low watermark): read again, or
	 * close a connection that is done. */
	proxy_dnsd_tcp_resume(t);
}

static void
tcp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct dnsd_tcp *t = arg;

	(void)bev;
	if ((what & BEV_EVENT_EOF) && (what & BEV_EVENT_READING) &&
	    t->inflight > 0) {
		/* Half-closed: answer what it asked, then close. */
		t->closing = true;
		bufferevent_disable(t->bev, EV_READ);
		return;
	}
	proxy_dnsd_tcp_free(t);
}

/* TCP connections open from sa's address. */
static size_t
tcp_from(const struct proxy_dnsd *d, const struct sockaddr *sa)
{
	size_t n = 0;

	for (const struct dnsd_tcp *t = d->tcps; t != NULL; t = t->next) {
		const struct sockaddr *p = (const struct sockaddr *)&t->peer;
		if (p->sa_family != sa->sa_family)
			continue;
		if (sa->sa_family == AF_INET ? ((const struct sockaddr_in *)
		    (const void *)p)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)(const void *)sa)->
		    sin_addr.s_addr : memcmp(&((const struct sockaddr_in6 *)
		    (const void *)p)->sin6_addr, &((const struct sockaddr_in6 *)
		    (const void *)sa)->sin6_addr, sizeof(struct in6_addr)) ==
		    0)
			n++;
	}
	return n;
}

void
proxy_dnsd_tcp_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct proxy_dnsd *d = arg;
	struct timeval tv = { PROXY_DNSD_TCP_IDLE_MS / 1000,
	    (PROXY_DNSD_TCP_IDLE_MS % 1000) * 1000 };
	struct dnsd_tcp *t;

	(void)l;
	if (d->ntcp >= PROXY_DNSD_TCP_MAX || salen <= 0 ||
	    (size_t)salen > sizeof(t->peer) ||
	    tcp_from(d, sa) >= PROXY_DNSD_TCP_PER_SOURCE ||
	    (d->s->runs != NULL && proxy_runs_at(d->s->runs, sa,
	    time_wall_ms()) == NULL) ||
	    (t = calloc(1, sizeof(*t))) == NULL) {
		close(fd);
		return;
	}
	t->bev = bufferevent_socket_new(d->s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (t->bev == NULL) {
		close(fd);
		free(t);
		return;
	}
	t->d = d;
	memcpy(&t->peer, sa, (size_t)salen);
	t->peerlen = (socklen_t)salen;
	proxy_dnsmsg_tcp_init(&t->st);
	t->next = d->tcps;
	if (d->tcps != NULL)
		d->tcps->prev = t;
	d->tcps = t;
	d->ntcp++;
	bufferevent_setcb(t->bev, tcp_read_cb, tcp_write_cb, tcp_event_cb, t);
	bufferevent_setwatermark(t->bev, EV_WRITE, PROXY_DNSD_TCP_OUT_MAX / 4,
	    0);
	bufferevent_set_timeouts(t->bev, &tv, &tv);
	bufferevent_enable(t->bev, EV_READ | EV_WRITE);
}
