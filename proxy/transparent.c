/*
 * The transparent listener: connections the host's firewall redirected to
 * the proxy (nat REDIRECT on the egress bridge) from clients that never
 * asked for a proxy. The run is the one registered at the source address
 * (no credential travels); the destination the client meant comes from
 * SO_ORIGINAL_DST, and only ever decides a `raw` entry by the name the
 * closed resolver gave that (synthetic) address, or an allowed IP
 * literal. Everything else is decided by a name the connection itself
 * carries: a TLS ClientHello's server name (then the same path as a
 * CONNECT tunnel: the SNI check, inspection), or an HTTP request's Host
 * (the same request pipeline as the forward proxy). The proxy then
 * connects to an address it resolved and checked itself, never to the
 * original destination.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/host.h"
#include "proxy/runs.h"
#include "proxy/synth.h"
#include "proxy/tlshello.h"

#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST	80
#endif

const char proxy_tls_alert[7] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31 };

/* Refused before anything went upstream: logged (and noted in the run's
 * report) with reason, said in the client's protocol, closed. */
static void
transparent_refuse(struct conn *c, const char *reason)
{
	if (c->req == NULL && (c->req = proxy_conn_req_new()) == NULL) {
		proxy_conn_free(c);
		return;
	}
	if (c->req->via == NULL)
		c->req->via = c->speaks == SPEAKS_TLS ? "tls" :
		    c->speaks == SPEAKS_HTTP ? "http" : "raw";
	if (c->req->port == 0)
		c->req->port = c->orig_port;
	proxy_conn_fail(c, 403, "deny", reason);
}

/* SO_ORIGINAL_DST: where the client meant to connect. */
static int
transparent_orig(struct conn *c)
{
	int fd = (int)bufferevent_getfd(c->cli);
	socklen_t len = sizeof(c->orig);

	memset(&c->orig, 0, sizeof(c->orig));
	if (c->peer.sa.sa_family == AF_INET6 &&
	    getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &c->orig, &len) ==
	    0)
		goto ok;
	len = sizeof(c->orig);
	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &c->orig, &len) != 0)
		return -errno;
ok:
	c->orig_port = ntohs(c->orig.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&c->orig)->sin6_port :
	    ((struct sockaddr_in *)&c->orig)->sin_port);
	return 0;
}

/* The name the run's resolver gave the original destination, or NULL. */
static const char *
transparent_synth_name(const struct conn *c)
{
	const struct sockaddr_in *sin = (const void *)&c->orig;

	const struct proxy_synth *map = c->run != NULL ? c->run->synth :
	    c->srv->synth;

	if (c->orig.ss_family != AF_INET || map == NULL ||
	    !proxy_synth_in_block(&sin->sin_addr))
		return NULL;
	return proxy_synth_name(map, &sin->sin_addr);
}

/* A request record for name:port learnt through via; hp gets the parsed
 * name. False: refused (answered). */
static bool
transparent_req(struct conn *c, const char *name, size_t len,
    const char *via, struct host_parsed *hp)
{
	struct conn_req *r;

	if (c->req == NULL && (c->req = proxy_conn_req_new()) == NULL) {
		proxy_conn_free(c);
		return false;
	}
	r = c->req;
	r->via = via;
	r->port = c->orig_port;
	r->run = c->run;
	if (proxy_host_parse(name, len, hp) != 0) {
		(void)proxy_conn_req_str(&r->host, name, len < HOST_NAME_MAXLEN ?
		    len : HOST_NAME_MAXLEN);
		transparent_refuse(c, via[0] == 't' ? "sni-invalid" :
		    "bad-host");
		return false;
	}
	if (proxy_conn_req_str(&r->host, hp->name, strlen(hp->name)) != 0) {
		transparent_refuse(c, "no-memory");
		return false;
	}
	r->host_kind = hp->kind;
	snprintf(r->method, sizeof(r->method), "%s", via[0] == 't' ? "TLS" :
	    "RAW");
	r->is_connect = true;
	r->transparent = true;
	return true;
}

/* Decided by name: as a CONNECT tunnel to name:port without the 200. */
static void
transparent_tunnel(struct conn *c, const char *name, size_t len,
    const char *via)
{
	struct host_parsed hp;

	if (!transparent_req(c, name, len, via, &hp))
		return;
	proxy_conn_admitted(c);
	event_del(&c->timer);
	bufferevent_setcb(c->cli, NULL, NULL, NULL, c);
	/* Held while it resolves and connects: what the client sends
	 * meanwhile stays in the input (the relay reads it first). */
	bufferevent_setwatermark(c->cli, EV_READ, 0, PROXY_TLSHELLO_MAX);
	proxy_upstream_decide(c, &hp);
}

/* The client's first bytes: a ClientHello (decided by its server name),
 * an HTTP request (by its Host, in request.c), or neither (refused: only
 * a raw entry takes other bytes, and those are decided by address before
 * any byte is read). */
static void
transparent_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n = evbuffer_get_length(in);
	static struct proxy_tlshello h;
	unsigned char *p;

	if (n == 0)
		return;
	if (n > PROXY_TLSHELLO_MAX)
		n = PROXY_TLSHELLO_MAX;
	p = evbuffer_pullup(in, (ssize_t)n);
	if (p == NULL) {
		transparent_refuse(c, "no-memory");
		return;
	}
	if (p[0] >= 0x14 && p[0] <= 0x19) {
		c->speaks = SPEAKS_TLS;
		proxy_tlshello_init(&h);
		switch (proxy_tlshello_feed(&h, p, n, NULL)) {
		case TLSHELLO_NEED_MORE:
			return;		/* the header timer bounds the wait */
		case TLSHELLO_SNI:
			transparent_tunnel(c, h.name, h.namelen, "tls");
			return;
		case TLSHELLO_NO_SNI:
			transparent_refuse(c, "sni-required");
			return;
		case TLSHELLO_ECH:
			transparent_refuse(c, "ech-unsupported");
			return;
		case TLSHELLO_TOO_LARGE:
			transparent_refuse(c, "tls-hello-too-large");
			return;
		default:
			transparent_refuse(c, h.status == TLSHELLO_MALFORMED ?
			    "tls-malformed" : "sni-invalid");
			return;
		}
	}
	/* An HTTP request line starts with a method token (capitals, at
	 * most 23) and a space; anything else is plain bytes at once (an
	 * "SSH-2.0-..." banner is refused at its '-', not after a wait). */
	{
		size_t i = 0;

		while (i < n && i < 24 && p[i] >= 'A' && p[i] <= 'Z')
			i++;
		if (i > 0 && i < n && i < 24 && p[i] == ' ') {
			c->speaks = SPEAKS_HTTP;
			c->srv->request_wait(c);
			return;
		}
		if (i == n && n < 24)
			return;		/* a method token so far: more */
	}
	{
		c->speaks = SPEAKS_RAW;
		/* Under the name the address had, when it had one. */
		if (c->orig_name != NULL && c->req != NULL &&
		    c->req->host == NULL)
			(void)proxy_conn_req_str(&c->req->host, c->orig_name,
			    strlen(c->orig_name));
		transparent_refuse(c, c->orig_why[0] != '\0' ? c->orig_why :
		    "raw-not-allowed");
	}
}

static void
transparent_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	(void)what;
	/* Gone before naming a host: the refusal the address had. */
	if (c->orig_why[0] != '\0' && c->req != NULL &&
	    c->req->decision == NULL) {
		c->req->decision = "deny";
		snprintf(c->req->reason, sizeof(c->req->reason), "%s",
		    c->orig_why);
	}
	proxy_conn_free(c);
}

void
proxy_transparent_begin(struct conn *c)
{
	struct proxy_server *s = c->srv;
	const char *name;
	char why[96], lit[INET6_ADDRSTRLEN];
	bool raw = false;

	c->transparent = true;
	c->speaks = SPEAKS_RAW;
	if (transparent_orig(c) != 0) {
		transparent_refuse(c, "no-original-destination");
		return;
	}
	/* The run: the one registered at the source address. */
	if (s->runs != NULL) {
		struct proxy_run *run = proxy_runs_at(s->runs, &c->peer.sa,
		    time_wall_ms());
		if (run == NULL) {
			transparent_refuse(c, "no-live-run");
			return;
		}
		if (run->conns >= run->lim.max_conns) {
			transparent_refuse(c, "run-connection-limit");
			return;
		}
		if (proxy_run_over_bytes(run)) {
			transparent_refuse(c, "run-bytes-limit");
			return;
		}
		c->run = run;
		run->conns++;
	}
	if ((c->req = proxy_conn_req_new()) == NULL) {
		proxy_conn_free(c);
		return;
	}
	c->req->run = c->run;
	/* A raw entry: decided by the name the resolver gave the address
	 * (or an allowed IP literal), before reading a byte (the server may
	 * speak first). */
	name = transparent_synth_name(c);
	if (name == NULL && inet_ntop(c->orig.ss_family, c->orig.ss_family ==
	    AF_INET6 ? (void *)&((struct sockaddr_in6 *)&c->orig)->sin6_addr :
	    (void *)&((struct sockaddr_in *)&c->orig)->sin_addr, lit,
	    sizeof(lit)) != NULL && !(c->orig.ss_family == AF_INET &&
	    proxy_synth_in_block(&((struct sockaddr_in *)&c->orig)->sin_addr)))
		name = lit;
	if (name != NULL && name == lit && proxy_host_name_internal(name)) {
		snprintf(c->orig_why, sizeof(c->orig_why), "internal-address");
	} else if (name != NULL) {
		if (proxy_policy_decide(c, name, c->orig_port, why, sizeof(why),
		    NULL, &raw) && raw) {
			transparent_tunnel(c, name, strlen(name), "raw");
			return;
		}
		/* Not raw: what it sends may still name an allowed host
		 * (TLS, HTTP); plain bytes are refused with this. */
		snprintf(c->orig_why, sizeof(c->orig_why), "%s",
		    strncmp(why, "allowed", 7) == 0 ? "raw-not-allowed" : why);
	}
	if (name != NULL && (c->orig_name = strdup(name)) == NULL) {
		transparent_refuse(c, "no-memory");
		return;
	}
	/* Until its bytes say otherwise: plain bytes to that name. */
	c->req->via = "raw";
	c->req->port = c->orig_port;
	if (name != NULL && proxy_conn_req_str(&c->req->host, name,
	    strlen(name)) != 0) {
		transparent_refuse(c, "no-memory");
		return;
	}
	/* Otherwise the connection names its host itself. */
	bufferevent_setwatermark(c->cli, EV_READ, 0, PROXY_TLSHELLO_MAX);
	bufferevent_setcb(c->cli, transparent_read_cb, NULL,
	    transparent_event_cb, c);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	proxy_conn_state_set(c, CONN_HEAD);
	proxy_conn_timer_arm(c, s->cfg->sni_timeout_ms);
}
