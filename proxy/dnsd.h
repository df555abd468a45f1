/*
 * The closed resolver's daemon side: the DNS listener (UDP and TCP) of
 * cordon-proxy's --dns-listen. Each query is tied to the run registered at
 * its source address (run mode) or to the proxy's one policy (standalone
 * mode), counted against that run's rate (dnsrate.h), parsed (dnsmsg.h)
 * and decided (dnsresolve.h); a name the policy allows is resolved with
 * the proxy's own c-ares resolver and its addresses checked by class as
 * for a connection, and answered with the run's synthetic address for it
 * (synth.h). No other name is ever looked up. Every answered query is
 * noted in the run's egress report (via "dns", port 53, one entry per
 * name and outcome) and in the access log (method "DNS").
 */
#ifndef CORDON_PROXY_DNSD_H
#define CORDON_PROXY_DNSD_H

#include <stddef.h>

struct proxy_server;
struct proxy_dnsd;

/* Lookups waiting for the upstream resolver, at most, in all and for one
 * run (so no two runs can hold every slot): a query past either is
 * answered SERVFAIL at once ("cordon: resolver-busy"). A stub has a
 * handful out at once. */
#define PROXY_DNSD_PENDING_MAX	1024
#define PROXY_DNSD_RUN_PENDING_MAX 32
/* TCP connections at once, from one source address, and queries in
 * flight on one; its reading also pauses while more than
 * PROXY_DNSD_TCP_OUT_MAX bytes of answers wait to be sent. In run mode a
 * source with no live run is refused at accept. */
#define PROXY_DNSD_TCP_MAX	256
#define PROXY_DNSD_TCP_PER_SOURCE 8
#define PROXY_DNSD_TCP_INFLIGHT	16
#define PROXY_DNSD_TCP_OUT_MAX	(16 * 1024)
/* A TCP connection idle (nothing read, nothing in flight) this long is
 * closed (RFC 7766 suggests seconds). */
#define PROXY_DNSD_TCP_IDLE_MS	10000
/* Queries from sources with no live run (run mode), all together: past
 * this rate they are dropped unanswered and unlogged. */
#define PROXY_DNSD_NORUN_PER_S	100
#define PROXY_DNSD_NORUN_BURST	200

/*
 * The resolver of s on the bound sockets udp_fd and tcp_fd (the parent's,
 * under privilege separation; taken over: closed by proxy_dnsd_free), or,
 * when both are -1, on sockets of its own bound to s->cfg->dns_listen.
 * Serving starts at once. Returns 0 and *out, or a negative errno.
 */
int proxy_dnsd_new(struct proxy_server *s, int udp_fd, int tcp_fd,
    struct proxy_dnsd **out);
/* Stops reading new queries (a draining proxy); answers in flight still
 * go out. */
void proxy_dnsd_drain(struct proxy_dnsd *d);
/* Cancels every lookup, closes every socket. Accepts NULL. */
void proxy_dnsd_free(struct proxy_dnsd *d);

#endif
