/*
 * c-ares glue: the channel's sockets are watched with libevent events (via
 * the socket-state callback) and its retransmit timer with one evtimer. Each
 * lookup also has its own deadline so a slow server cannot stall a client
 * beyond --dns-timeout whatever c-ares's retry schedule is. Successful
 * answers are kept in a bounded cache (dnscache.c) for their TTL, at most
 * 60 s; a hit is delivered from the loop like any answer, and the caller
 * classifies its addresses as it does a fresh answer's.
 */
#include "proxy/dns.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ares.h>
#include <event2/event.h>

#include "common/util.h"
#include "proxy/dnscache.h"

_Static_assert(DNSCACHE_MAX_ADDRS == DNS_MAX_ADDRS,
    "a cached answer holds what an answer holds");

struct dns_sock {
	struct dns_sock *next;
	ares_socket_t fd;
	struct event *ev;
};

struct dns {
	struct event_base *base;
	ares_channel channel;
	struct event *timer;
	struct dns_sock *socks;
	int timeout_ms;
	bool destroying;
	struct dnscache *cache;
	int64_t (*now_ms)(void *);	/* the cache's clock */
	void *now_arg;
};

struct dns_query {
	struct dns *dns;
	dns_cb cb;		/* NULL once cancelled or answered */
	void *arg;
	struct event *deadline;
	int64_t started_ms;
	struct dns_result *hit;	/* a cached answer, delivered from the loop */
	char *name;		/* the name asked (the cache's key) */
	bool ares_done;		/* c-ares has called back */
	bool in_start;		/* inside ares_getaddrinfo */
	int sync_error;		/* answer given during ares_getaddrinfo */
};

static void dns_timer_update(struct dns *d);

static int64_t
dns_clock_mono(void *arg)
{
	(void)arg;
	return time_mono_ms();
}

static void
dns_sock_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns *d = arg;

	ares_process_fd(d->channel,
	    (what & EV_READ) ? (ares_socket_t)fd : ARES_SOCKET_BAD,
	    (what & EV_WRITE) ? (ares_socket_t)fd : ARES_SOCKET_BAD);
	dns_timer_update(d);
}

static void
dns_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns *d = arg;

	(void)fd;
	(void)what;
	ares_process_fd(d->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	dns_timer_update(d);
}

static void
dns_timer_update(struct dns *d)
{
	struct timeval tv, *tvp;

	if (d->destroying)
		return;
	tvp = ares_timeout(d->channel, NULL, &tv);
	if (tvp == NULL)
		evtimer_del(d->timer);
	else
		evtimer_add(d->timer, tvp);
}

/* c-ares tells us which sockets to watch for what. */
static void
dns_sock_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	struct dns *d = data;
	struct dns_sock **pp, *s;
	short what;

	for (pp = &d->socks; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->fd == fd)
			break;
	s = *pp;
	if (!readable && !writable) {
		if (s != NULL) {
			*pp = s->next;
			event_free(s->ev);
			free(s);
		}
		return;
	}
	what = EV_PERSIST | (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0);
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return;	/* the query times out instead */
		s->fd = fd;
		s->next = d->socks;
		d->socks = s;
	} else {
		event_free(s->ev);
	}
	s->ev = event_new(d->base, (evutil_socket_t)fd, what, dns_sock_cb, d);
	if (s->ev == NULL || event_add(s->ev, NULL) != 0) {
		/* Unwatchable: drop it, the deadline answers the lookup. */
		for (pp = &d->socks; *pp != NULL; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		if (s->ev != NULL)
			event_free(s->ev);
		free(s);
	}
}

int
proxy_dns_new(struct event_base *base, const char *servers_csv, int timeout_ms,
    struct dns **out)
{
	struct ares_options opts;
	struct dns *d;
	char lookups[] = "b";
	int optmask, rc;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	d->base = base;
	d->timeout_ms = timeout_ms;
	d->now_ms = dns_clock_mono;
	d->timer = evtimer_new(base, dns_timer_cb, d);
	if (d->timer == NULL) {
		free(d);
		return -ENOMEM;
	}
	if (proxy_dnscache_new(DNSCACHE_DEFAULT_MAX, &d->cache) != 0) {
		event_free(d->timer);
		free(d);
		return -ENOMEM;
	}
	memset(&opts, 0, sizeof(opts));
	/* No search domains, no HOSTALIASES, no hosts file: the name asked
	 * is the name checked against the allowlist. */
	opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
	opts.sock_state_cb = dns_sock_state_cb;
	opts.sock_state_cb_data = d;
	opts.timeout = timeout_ms / 2 > 0 ? timeout_ms / 2 : 1;
	opts.tries = 2;
	opts.lookups = lookups;
	/* And no search list at all, whatever resolv.conf says (belt and
	 * braces: not every c-ares 1.x honours NOSEARCH in getaddrinfo). */
	opts.domains = NULL;
	opts.ndomains = 0;
	optmask = ARES_OPT_FLAGS | ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS |
	    ARES_OPT_TRIES | ARES_OPT_LOOKUPS | ARES_OPT_DOMAINS;
	rc = ares_init_options(&d->channel, &opts, optmask);
	if (rc != ARES_SUCCESS) {
		proxy_dnscache_free(d->cache);
		event_free(d->timer);
		free(d);
		return rc == ARES_ENOMEM ? -ENOMEM : -EIO;
	}
	if (servers_csv != NULL &&
	    ares_set_servers_ports_csv(d->channel, servers_csv) != ARES_SUCCESS) {
		ares_destroy(d->channel);
		proxy_dnscache_free(d->cache);
		event_free(d->timer);
		free(d);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

static void
dns_query_free(struct dns_query *q)
{
	if (q->deadline != NULL)
		event_free(q->deadline);
	free(q->hit);
	free(q->name);
	free(q);
}

void
proxy_dns_free(struct dns *d)
{
	struct dns_sock *s;

	if (d == NULL)
		return;
	d->destroying = true;
	/* Calls every pending callback with ARES_EDESTRUCTION. */
	ares_destroy(d->channel);
	while ((s = d->socks) != NULL) {
		d->socks = s->next;
		event_free(s->ev);
		free(s);
	}
	event_free(d->timer);
	proxy_dnscache_free(d->cache);
	free(d);
}

void
proxy_dns_set_clock(struct dns *d, int64_t (*now_ms)(void *), void *arg)
{
	d->now_ms = now_ms != NULL ? now_ms : dns_clock_mono;
	d->now_arg = arg;
}

size_t
proxy_dns_cached(const struct dns *d)
{
	return proxy_dnscache_count(d->cache);
}

/* The answer's lifetime: its shortest TTL, CNAMEs included (-1: none). */
static int
dns_answer_ttl(const struct ares_addrinfo *ai)
{
	const struct ares_addrinfo_cname *cn;
	const struct ares_addrinfo_node *n;
	int ttl = -1;

	for (n = ai->nodes; n != NULL; n = n->ai_next)
		if (ttl < 0 || n->ai_ttl < ttl)
			ttl = n->ai_ttl;
	for (cn = ai->cnames; cn != NULL; cn = cn->next)
		if (ttl < 0 || cn->ttl < ttl)
			ttl = cn->ttl;
	return ttl;
}

static void
dns_deliver(struct dns_query *q, struct dns_result *res)
{
	dns_cb cb = q->cb;

	q->cb = NULL;
	if (q->deadline != NULL)
		evtimer_del(q->deadline);
	res->elapsed_ms = time_mono_ms() - q->started_ms;
	if (cb != NULL)
		cb(res, q->arg);
}

static void
dns_addrinfo_cb(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
	struct dns_query *q = arg;
	struct dns_result *res;
	struct ares_addrinfo_node *n;

	(void)timeouts;
	q->ares_done = true;
	if (q->in_start) {
		/* Answered synchronously (a name c-ares rejects): deliver
		 * from the loop so the caller's pointer stays valid. */
		q->sync_error = status == ARES_ENOTFOUND ? -ENOENT : -EIO;
		if (ai != NULL)
			ares_freeaddrinfo(ai);
		return;
	}
	if (q->cb == NULL || q->dns->destroying) {
		if (ai != NULL)
			ares_freeaddrinfo(ai);
		dns_query_free(q);
		return;
	}
	res = calloc(1, sizeof(*res));
	if (res == NULL) {
		struct dns_result small = { .error = -ENOMEM };
		dns_deliver(q, &small);
		goto out;
	}
	switch (status) {
	case ARES_SUCCESS:
		break;
	case ARES_ENODATA:
		res->nodata = true;
		res->error = -ENOENT;
		break;
	case ARES_ENOTFOUND:
		res->error = -ENOENT;
		break;
	case ARES_ETIMEOUT:
		res->error = -ETIMEDOUT;
		break;
	case ARES_ENOMEM:
		res->error = -ENOMEM;
		break;
	default:
		res->error = -EIO;
		break;
	}
	for (n = ai != NULL ? ai->nodes : NULL;
	    n != NULL && res->n < DNS_MAX_ADDRS; n = n->ai_next) {
		size_t len = n->ai_family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		if ((n->ai_family != AF_INET && n->ai_family != AF_INET6) ||
		    n->ai_addr == NULL || n->ai_addrlen < len)
			continue;
		memcpy(&res->addrs[res->n++], n->ai_addr, len);
	}
	if (res->error == 0 && res->n == 0) {
		res->error = -ENOENT;
		res->nodata = true;
	}
	/* Only answers with addresses; a failure or a negative answer is
	 * asked again next time (and drops any older answer). */
	(void)proxy_dnscache_put(q->dns->cache, q->name, res->addrs,
	    res->error == 0 ? res->n : 0, res->error == 0 ?
	    dns_answer_ttl(ai) : 0, q->dns->now_ms(q->dns->now_arg));
	dns_deliver(q, res);
	free(res);
out:
	if (ai != NULL)
		ares_freeaddrinfo(ai);
	dns_query_free(q);
}

static void
dns_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns_query *q = arg;
	struct dns_result res = { .error = -ETIMEDOUT };

	(void)fd;
	(void)what;
	if (q->hit != NULL) {
		/* A cached answer, deferred by proxy_dns_resolve. */
		dns_deliver(q, q->hit);
		dns_query_free(q);
		return;
	}
	if (q->ares_done) {
		/* The synchronous answer, deferred by proxy_dns_resolve. */
		res.error = q->sync_error;
		dns_deliver(q, &res);
		dns_query_free(q);
		return;
	}
	/* c-ares still owns q and frees it when it gives up. */
	dns_deliver(q, &res);
}

struct dns_query *
proxy_dns_resolve(struct dns *d, const char *name, dns_cb cb, void *arg)
{
	struct ares_addrinfo_hints hints;
	struct dns_query *q;
	struct timeval tv;

	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return NULL;
	q->dns = d;
	q->cb = cb;
	q->arg = arg;
	q->started_ms = time_mono_ms();
	q->deadline = evtimer_new(d->base, dns_deadline_cb, q);
	q->hit = malloc(sizeof(*q->hit));
	if (q->deadline == NULL || q->hit == NULL)
		goto nomem;
	q->hit->n = proxy_dnscache_get(d->cache, name, d->now_ms(d->now_arg),
	    q->hit->addrs, DNS_MAX_ADDRS);
	if (q->hit->n > 0) {
		q->hit->error = 0;
		q->hit->cached = true;
		q->ares_done = true;	/* c-ares is not asked */
		event_active(q->deadline, EV_TIMEOUT, 0);
		return q;
	}
	free(q->hit);
	q->hit = NULL;
	if ((q->name = strdup(name)) == NULL)
		goto nomem;
	tv.tv_sec = d->timeout_ms / 1000;
	tv.tv_usec = (d->timeout_ms % 1000) * 1000;
	evtimer_add(q->deadline, &tv);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	/* NOSORT: keep the servers' order and avoid c-ares's probing
	 * connect() calls to every answer. */
	hints.ai_flags = ARES_AI_NOSORT;
	q->in_start = true;
	ares_getaddrinfo(d->channel, name, NULL, &hints, dns_addrinfo_cb, q);
	q->in_start = false;
	if (q->ares_done)
		event_active(q->deadline, EV_TIMEOUT, 0);
	dns_timer_update(d);
	return q;
nomem:
	dns_query_free(q);
	return NULL;
}

void
proxy_dns_cancel(struct dns_query *q)
{
	if (q == NULL)
		return;
	q->cb = NULL;
	if (q->ares_done) {
		/* Only the deferred synchronous answer was pending. */
		dns_query_free(q);
		return;
	}
	if (q->deadline != NULL)
		evtimer_del(q->deadline);
}
