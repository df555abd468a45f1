/*
 * The closed resolver's daemon, internal to dnsd.c (queries, lookups,
 * answers, UDP, life cycle) and dnsd_tcp.c (TCP clients).
 */
#ifndef CORDON_PROXY_DNSD_INTERNAL_H
#define CORDON_PROXY_DNSD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "proxy/cred.h"
#include "proxy/dns.h"
#include "proxy/dnsd.h"
#include "proxy/dnsmsg.h"
#include "proxy/dnsrate.h"

struct dnsd_tcp;

/* One query waiting for the upstream lookup of its name. */
struct dnsd_pending {
	struct proxy_dnsd *d;
	struct dnsd_pending *prev, *next;
	struct dnsd_tcp *tcp;		/* NULL: UDP, or its TCP connection
					   is gone (the answer is dropped) */
	struct sockaddr_storage peer;
	socklen_t peerlen;
	char run[PROXY_CRED_RUN_MAX + 1];	/* "" in standalone mode */
	int64_t start_mono, start_wall;
	struct dns_query *dq;
	struct proxy_dnsmsg_query q;
};

struct dnsd_tcp {
	struct proxy_dnsd *d;
	struct dnsd_tcp *prev, *next;
	struct bufferevent *bev;
	struct sockaddr_storage peer;
	socklen_t peerlen;
	unsigned inflight;
	bool closing;			/* the client is done: close once
					   the answers in flight are out */
	struct proxy_dnsmsg_tcp st;
};

struct proxy_dnsd {
	struct proxy_server *s;
	int ufd;
	struct event *uev;
	struct evconnlistener *tlev;
	struct dnsd_pending *pending;
	size_t npending;
	struct dnsd_tcp *tcps;
	size_t ntcp;
	/* Standalone mode: one bucket for every client, and whether it is
	 * refusing (its refusals are logged once per stretch). */
	struct proxy_dnsrate rate;
	bool refusing;
	/* Run mode: one bucket for every source with no live run. */
	struct proxy_dnsrate norun;
};

/* Where one query came from, and how to answer it. */
struct dnsd_src {
	const struct sockaddr *peer;
	socklen_t peerlen;
	struct dnsd_tcp *tcp;		/* NULL: UDP */
};

/* One query from src: decided, then answered at once or looked up. */
void proxy_dnsd_query(struct proxy_dnsd *d, const struct dnsd_src *src,
    const uint8_t *msg, size_t len);

/* dnsd_tcp.c: a client's connection freed (its lookups in flight then
 * answer nowhere); reading resumed once under the caps (or the
 * connection closed once done); the listener's accept callback. */
void proxy_dnsd_tcp_free(struct dnsd_tcp *t);
void proxy_dnsd_tcp_resume(struct dnsd_tcp *t);
void proxy_dnsd_tcp_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg);

#endif
