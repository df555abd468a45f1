/*
 * The closed resolver's daemon side (dnsd.h): sockets, the run of each
 * query, the upstream lookup and the answer. The rules themselves are
 * dnsresolve.c's; the message codec is dnsmsg.c's; TCP clients are
 * dnsd_tcp.c's.
 */
#include "proxy/dnsd.h"
#include "proxy/dnsd_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/dns.h"
#include "proxy/dnsmsg.h"
#include "proxy/dnsrate.h"
#include "proxy/dnsresolve.h"
#include "proxy/egress.h"
#include "proxy/metrics.h"
#include "proxy/runs.h"
#include "proxy/sock.h"
#include "proxy/synth.h"

#define DNSD_UDP_BURST	64	/* datagrams read per wake-up */

/* The callback's view: the server and the policy: its name as said
 * (NULL: no live run), and as looked up in the set (standalone mode: the
 * --policy given, or NULL for the default one). */
struct dnsd_ctx {
	struct proxy_server *s;
	const char *policy;
	const char *lookup;
	char why[PROXY_DNSRESOLVE_WHY_MAX];
};

/* x for the query of run (run mode; NULL: none) or of the proxy. */
static void
dnsd_ctx_init(struct dnsd_ctx *x, struct proxy_server *s,
    const struct proxy_run *run)
{
	memset(x, 0, sizeof(*x));
	x->s = s;
	if (s->runs == NULL) {
		x->lookup = s->cfg->policy;
		x->policy = x->lookup != NULL ? x->lookup : "default";
	} else if (run != NULL) {
		x->policy = x->lookup = run->policy;
	}
}

/* --- the decision ------------------------------------------------------- */

static bool
dnsd_allowed(const char *name, void *arg, char *why, size_t len)
{
	struct dnsd_ctx *x = arg;
	const struct allowlist *pol = x->s->set != NULL ?
	    allowlist_set_policy(x->s->set, x->lookup) : NULL;
	struct allowlist_decision d;

	if (pol == NULL && x->s->runs != NULL) {
		snprintf(why, len, "policy-removed");
	} else if (allowlist_match_any_port(pol, name, &d)) {
		return true;
	} else {
		snprintf(why, len, "%s", d.reason == NULL ? "denied" :
		    strcmp(d.reason, "no-match") == 0 ? "not-on-policy" :
		    d.reason);
	}
	snprintf(x->why, sizeof(x->why), "%s", why);
	return false;
}

/* The run a query from sa belongs to (run mode), or NULL. */
static struct proxy_run *
dnsd_run_at(struct proxy_dnsd *d, const struct sockaddr *sa)
{
	if (d->s->runs == NULL)
		return NULL;
	return proxy_runs_at(d->s->runs, sa, time_wall_ms());
}

/* The synthetic address map of run (made on its first query) or of the
 * standalone proxy; NULL on ENOMEM. */
static struct proxy_synth *
dnsd_synth(struct proxy_dnsd *d, struct proxy_run *run)
{
	struct proxy_synth **m = run != NULL ? &run->synth : &d->s->synth;

	if (*m == NULL && proxy_synth_new(PROXY_SYNTH_DEFAULT_MAX, m) != 0)
		*m = NULL;
	return *m;
}

/* The reason for the report and the log, in the words a connection's
 * refusal uses ("not-on-policy NAME", "address-private"). */
static const char *
dnsd_reason(const struct proxy_dnsresolve_out *out,
    const struct proxy_dnsresolve_in *in, const struct dnsd_ctx *x,
    char *buf, size_t len)
{
	if (strcmp(out->reason, "denied") == 0 && x->why[0] != '\0') {
		if (strcmp(x->why, "not-on-policy") != 0)
			return x->why;
		snprintf(buf, len, "not-on-policy %s", x->policy != NULL ?
		    x->policy : "default");
		return buf;
	}
	if (strcmp(out->reason, "address-blocked") == 0 &&
	    in->upstream_why != NULL)
		return in->upstream_why;
	return out->reason;
}

/* --- answers ------------------------------------------------------------- */

static void
dnsd_send(struct proxy_dnsd *d, const struct dnsd_src *src,
    const uint8_t *msg, size_t len)
{
	if (src->tcp != NULL) {
		if (bufferevent_write(src->tcp->bev, msg, len) != 0)
			log_warnx("dns: a TCP answer was not queued");
		return;
	}
	if (sendto(d->ufd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, src->peer,
	    src->peerlen) < 0)
		log_debug("dns: sendto: %s", strerror(errno));
}

/* Notes one answered query: the run's report (names aggregated), the
 * access log, the metrics. */
static void
dnsd_note(struct proxy_dnsd *d, struct proxy_run *run, const char *policy,
    const struct dnsd_src *src, const char *name, const char *decision,
    const char *reason, const char *address,
    int64_t start_wall, int64_t start_mono, int64_t dns_ms, bool quiet)
{
	struct proxy_server *s = d->s;
	struct accesslog_entry e;
	char client[INET6_ADDRSTRLEN + 8];

	if (run != NULL)
		(void)proxy_egress_note_via(run->egress, name, 53, "dns",
		    proxy_egress_decision_of(decision), reason, 0,
		    start_mono);
	proxy_metrics_request(s->m, decision, reason);
	/* quiet: a refusal over the rate after the first of its stretch
	 * (counted in the report and the metrics, not logged). */
	if (s->alog == NULL || quiet)
		return;
	proxy_conn_format_addr(src->peer, client, sizeof(client));
	memset(&e, 0, sizeof(e));
	e.time_ms = start_wall;
	e.client = client;
	e.run = run != NULL ? run->id : NULL;
	e.method = "DNS";
	e.host = name;
	e.port = 53;
	e.decision = decision;
	e.reason = reason;
	e.policy = policy;
	e.address = address;
	e.status = -1;
	e.duration_ms = time_mono_ms() - start_mono;
	e.dns_ms = dns_ms;
	e.connect_ms = -1;
	e.via = "dns";
	if (proxy_accesslog_write(s->alog, &e) != 0)
		log_warnx("access log write");
}

/* Writes and sends the decided answer, and notes it. */
static void
dnsd_answer(struct proxy_dnsd *d, const struct dnsd_src *src,
    struct proxy_run *run, const struct proxy_dnsresolve_in *in,
    const struct proxy_dnsresolve_out *out, const struct dnsd_ctx *x,
    int64_t start_wall, int64_t start_mono, int64_t dns_ms, bool quiet)
{
	static uint8_t buf[2 + PROXY_DNSMSG_TCP_MAX];	/* one loop */
	char addr[INET_ADDRSTRLEN], rbuf[PROXY_DNSRESOLVE_WHY_MAX + 80];
	const char *reason = dnsd_reason(out, in, x, rbuf, sizeof(rbuf));
	const char *decision;
	size_t n = 0;
	int rc;

	/* src->peerlen 0: its TCP client is gone (noted all the same). */
	rc = src->peerlen == 0 ? 0 : proxy_dnsmsg_answer(in->q, &out->reply,
	    src->tcp != NULL ? DNSMSG_TCP : DNSMSG_UDP, buf, sizeof(buf), &n);
	if (rc == 0 && src->peerlen > 0)
		dnsd_send(d, src, buf, n);
	else if (rc != 0)
		log_warnx("dns: an answer for %s not written: %s", in->q->name,
		    strerror(-rc));
	decision = out->allowed ? (out->reply.rcode ==
	    PROXY_DNS_RCODE_SERVFAIL ? "error" : "allow") : "deny";
	if (out->reply.na > 0)
		inet_ntop(AF_INET, &out->addr, addr, sizeof(addr));
	dnsd_note(d, run, in->policy, src, in->q->name[0] != '\0' ?
	    in->q->name : ".", decision, reason,
	    out->reply.na > 0 ? addr : NULL, start_wall, start_mono, dns_ms,
	    quiet);
}

/* SERVFAIL with an EDE of ours, for what the rules do not cover (no
 * memory, too many lookups). */
static void
dnsd_servfail(struct proxy_dnsd *d, const struct dnsd_src *src,
    struct proxy_run *run, const char *policy,
    const struct proxy_dnsmsg_query *q, const char *reason,
    int64_t start_wall, int64_t start_mono)
{
	struct proxy_dnsmsg_reply r = { .rcode = PROXY_DNS_RCODE_SERVFAIL,
	    .ede = PROXY_DNS_EDE_OTHER };
	uint8_t buf[2 + 1024];
	char text[80];
	size_t n;

	snprintf(text, sizeof(text), "cordon: %s", reason);
	r.ede_text = text;
	if (src->peerlen > 0 && proxy_dnsmsg_answer(q, &r, src->tcp != NULL ?
	    DNSMSG_TCP : DNSMSG_UDP, buf, sizeof(buf), &n) == 0)
		dnsd_send(d, src, buf, n);
	dnsd_note(d, run, policy, src, q->name[0] != '\0' ? q->name : ".",
	    "error", reason, NULL, start_wall, start_mono, -1, false);
}

/* --- lookups ------------------------------------------------------------- */

static void
pending_unlink(struct dnsd_pending *p)
{
	struct proxy_dnsd *d = p->d;

	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		d->pending = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	d->npending--;
}

/* The upstream outcome, with every address checked by its class as a
 * connection's would be (on some port: an --allow-address with a port
 * counts). why gets the first refusal. */
static enum proxy_dnsresolve_upstream
dnsd_classify(struct proxy_dnsd *d, const struct dns_result *res, char *why,
    size_t len)
{
	char buf[64];

	why[0] = '\0';
	if (res->error == -ENOENT)
		return res->nodata ? DNSRESOLVE_UP_NODATA :
		    DNSRESOLVE_UP_NXDOMAIN;
	if (res->error == -ETIMEDOUT)
		return DNSRESOLVE_UP_TIMEOUT;
	if (res->error != 0)
		return DNSRESOLVE_UP_FAILED;
	for (size_t i = 0; i < res->n; i++) {
		const char *b = proxy_upstream_blocked(d->s,
		    (const struct sockaddr *)&res->addrs[i], 0, buf,
		    sizeof(buf));
		if (b == NULL)
			return DNSRESOLVE_UP_ADDRESS;
		if (why[0] == '\0')
			snprintf(why, len, "%s", b);
	}
	return res->n > 0 ? DNSRESOLVE_UP_BLOCKED : DNSRESOLVE_UP_NODATA;
}

static void
dnsd_lookup_cb(const struct dns_result *res, void *arg)
{
	struct dnsd_pending *p = arg;
	struct proxy_dnsd *d = p->d;
	struct proxy_run *any = d->s->runs != NULL && p->run[0] != '\0' ?
	    proxy_runs_find(d->s->runs, p->run) : NULL, *run;
	struct dnsd_ctx x;
	struct proxy_dnsresolve_in in = { .q = &p->q };
	struct proxy_dnsresolve_out out;
	struct dnsd_src src = { (struct sockaddr *)&p->peer, p->peerlen,
	    p->tcp };
	char why[64];

	p->dq = NULL;
	pending_unlink(p);
	if (any != NULL && any->dns_pending > 0)
		any->dns_pending--;
	run = any != NULL && !proxy_run_expired(any, time_wall_ms()) ? any :
	    NULL;
	/* Decided again: the run may be gone, its policy reloaded. */
	dnsd_ctx_init(&x, d->s, run);
	in.policy = x.policy;
	in.allowed = dnsd_allowed;
	in.arg = &x;
	in.upstream = dnsd_classify(d, res, why, sizeof(why));
	in.upstream_why = why;
	in.synth = in.policy != NULL ? dnsd_synth(d, run) : NULL;
	/* Once its TCP connection closed (peerlen 0) the answer goes
	 * nowhere, but the name went upstream: noted all the same. */
	if (in.policy != NULL && in.synth == NULL)
		dnsd_servfail(d, &src, run, in.policy, &p->q, "no-memory",
		    p->start_wall, p->start_mono);
	else if (proxy_dnsresolve_decide(&in, &out) == 0)
		dnsd_answer(d, &src, run, &in, &out, &x, p->start_wall,
		    p->start_mono, res->elapsed_ms, false);
	if (p->tcp != NULL) {
		p->tcp->inflight--;
		proxy_dnsd_tcp_resume(p->tcp);
	}
	free(p);
}

/* Starts the lookup of q's name for the query from src. */
static void
dnsd_lookup(struct proxy_dnsd *d, const struct dnsd_src *src,
    struct proxy_run *run, const char *policy,
    const struct proxy_dnsmsg_query *q, int64_t start_wall,
    int64_t start_mono)
{
	struct dnsd_pending *p;
	bool busy = d->npending >= PROXY_DNSD_PENDING_MAX || (run != NULL &&
	    run->dns_pending >= PROXY_DNSD_RUN_PENDING_MAX);

	if (busy || (p = calloc(1, sizeof(*p))) == NULL) {
		dnsd_servfail(d, src, run, policy, q, busy ? "resolver-busy" :
		    "no-memory", start_wall, start_mono);
		return;
	}
	p->d = d;
	p->q = *q;
	p->tcp = src->tcp;
	memcpy(&p->peer, src->peer, src->peerlen);
	p->peerlen = src->peerlen;
	if (run != NULL) {
		snprintf(p->run, sizeof(p->run), "%s", run->id);
		run->dns_pending++;
	}
	p->start_wall = start_wall;
	p->start_mono = start_mono;
	p->next = d->pending;
	if (d->pending != NULL)
		d->pending->prev = p;
	d->pending = p;
	d->npending++;
	if (p->tcp != NULL)
		p->tcp->inflight++;
	/* q->name: a valid host name the policy allows (rule 5 passed). */
	p->dq = proxy_dns_resolve(d->s->dns, q->name, dnsd_lookup_cb, p);
	if (p->dq == NULL) {
		pending_unlink(p);
		if (p->tcp != NULL)
			p->tcp->inflight--;
		if (run != NULL)
			run->dns_pending--;
		free(p);
		dnsd_servfail(d, src, run, policy, q, "no-memory", start_wall,
		    start_mono);
	}
}

/* One message from src: rate, parse, decide, answer or look up. */
void
proxy_dnsd_query(struct proxy_dnsd *d, const struct dnsd_src *src,
    const uint8_t *msg, size_t len)
{
	static struct proxy_dnsmsg_query q;	/* 1.5 KiB: one loop, no
						   reentry */
	struct proxy_run *run = dnsd_run_at(d, src->peer);
	struct dnsd_ctx x;
	struct proxy_dnsresolve_in in = { .q = &q };
	struct proxy_dnsresolve_out out;
	int64_t now = time_mono_ms(), wall = time_wall_ms();
	struct proxy_dnsrate *rate = run != NULL ? &run->dnsrate :
	    d->s->runs == NULL ? &d->rate : NULL;
	bool *refusing = run != NULL ? &run->dns_refusing :
	    d->s->runs == NULL ? &d->refusing : NULL;
	bool limited = false, quiet = false;
	uint8_t buf[2 + PROXY_DNSMSG_UDP_MIN];
	size_t n;

	/* A token per message, before anything else is done with it. */
	if (rate != NULL) {
		if (rate->rate == 0)
			(void)proxy_dnsrate_init(rate, PROXY_DNSRATE_PER_S,
			    PROXY_DNSRATE_BURST, now);
		limited = !proxy_dnsrate_take(rate, now);
		/* The first refusal of a stretch is logged, not the rest. */
		quiet = limited && *refusing;
		*refusing = limited;
	} else {
		/* No live run here: all such sources share one bucket,
		 * and past it their queries are dropped. */
		if (d->norun.rate == 0)
			(void)proxy_dnsrate_init(&d->norun,
			    PROXY_DNSD_NORUN_PER_S, PROXY_DNSD_NORUN_BURST, now);
		if (!proxy_dnsrate_take(&d->norun, now))
			return;
	}
	dnsd_ctx_init(&x, d->s, run);
	(void)proxy_dnsmsg_parse(msg, len, &q);
	switch (q.status) {
	case DNSMSG_OK:
	case DNSMSG_BADVERS:
		break;
	case DNSMSG_DROP:
		log_debug("dns: a message dropped (%s)", q.why);
		return;
	default:
		if (limited)	/* a flood of junk costs no answers */
			return;
		if (proxy_dnsmsg_reject(msg, len, q.status ==
		    DNSMSG_NOTIMP ? PROXY_DNS_RCODE_NOTIMP :
		    PROXY_DNS_RCODE_FORMERR, src->tcp != NULL ? DNSMSG_TCP :
		    DNSMSG_UDP, buf, sizeof(buf), &n) == 0)
			dnsd_send(d, src, buf, n);
		dnsd_note(d, run, x.policy, src, "-", "deny",
		    q.status == DNSMSG_NOTIMP ? "dns-opcode-not-supported" :
		    "dns-malformed", NULL, wall, now, -1, false);
		return;
	}
	in.policy = x.policy;
	in.rate_limited = limited;
	in.allowed = dnsd_allowed;
	in.arg = &x;
	in.synth = x.policy != NULL ? dnsd_synth(d, run) : NULL;
	if (x.policy != NULL && in.synth == NULL) {
		dnsd_servfail(d, src, run, x.policy, &q, "no-memory", wall,
		    now);
		return;
	}
	if (proxy_dnsresolve_decide(&in, &out) != 0)
		return;
	if (out.action == DNSRESOLVE_LOOKUP)
		dnsd_lookup(d, src, run, x.policy, &q, wall, now);
	else
		dnsd_answer(d, src, run, &in, &out, &x, wall, now, -1, quiet);
}

/* --- UDP ----------------------------------------------------------------- */

static void
udp_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_dnsd *d = arg;
	uint8_t msg[PROXY_DNSMSG_QUERY_MAX + 1];

	(void)what;
	for (int i = 0; i < DNSD_UDP_BURST; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct dnsd_src src;
		ssize_t n;

		/* A longer datagram is cut to QUERY_MAX + 1 bytes, which
		 * parse refuses as too large. */
		n = recvfrom(fd, msg, sizeof(msg), MSG_DONTWAIT,
		    (struct sockaddr *)&ss, &sl);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				log_debug("dns: recvfrom: %s", strerror(errno));
			return;
		}
		src.peer = (struct sockaddr *)&ss;
		src.peerlen = sl;
		src.tcp = NULL;
		proxy_dnsd_query(d, &src, msg, (size_t)n);
	}
}

/* --- life cycle ---------------------------------------------------------- */

int
proxy_dnsd_new(struct proxy_server *s, int udp_fd, int tcp_fd,
    struct proxy_dnsd **out)
{
	struct proxy_dnsd *d;
	struct proxy_config_addr a = s->cfg->dns_listen;
	int rc;

	*out = NULL;
	if (udp_fd < 0 && tcp_fd < 0) {
		if ((udp_fd = proxy_sock_bind_udp(&a)) < 0)
			return udp_fd;
		/* The same port for TCP (port 0 picked one for UDP). */
		if ((tcp_fd = proxy_sock_listen_tcp(&a)) < 0) {
			close(udp_fd);
			return tcp_fd;
		}
	}
	if ((d = calloc(1, sizeof(*d))) == NULL) {
		if (udp_fd >= 0)
			close(udp_fd);
		if (tcp_fd >= 0)
			close(tcp_fd);
		return -ENOMEM;
	}
	d->s = s;
	d->ufd = udp_fd;	/* both d's from here: freed with it */
	if (tcp_fd >= 0 && (d->tlev = evconnlistener_new(s->base,
	    proxy_dnsd_tcp_accept, d, LEV_OPT_CLOSE_ON_FREE, -1, tcp_fd)) == NULL) {
		close(tcp_fd);
		rc = -ENOMEM;
		goto fail;
	}
	if (udp_fd >= 0 && ((d->uev = event_new(s->base, udp_fd, EV_READ |
	    EV_PERSIST, udp_read_cb, d)) == NULL || event_add(d->uev, NULL) !=
	    0)) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = d;
	return 0;
fail:
	proxy_dnsd_free(d);
	return rc;
}

void
proxy_dnsd_drain(struct proxy_dnsd *d)
{
	if (d == NULL)
		return;
	if (d->uev != NULL)
		event_del(d->uev);
	if (d->tlev != NULL)
		evconnlistener_disable(d->tlev);
}

void
proxy_dnsd_free(struct proxy_dnsd *d)
{
	if (d == NULL)
		return;
	while (d->tcps != NULL)
		proxy_dnsd_tcp_free(d->tcps);
	while (d->pending != NULL) {
		struct dnsd_pending *p = d->pending;
		pending_unlink(p);
		if (p->dq != NULL)
			proxy_dns_cancel(p->dq);
		free(p);
	}
	if (d->uev != NULL)
		event_free(d->uev);
	if (d->ufd >= 0)
		close(d->ufd);
	if (d->tlev != NULL)
		evconnlistener_free(d->tlev);
	free(d);
}
