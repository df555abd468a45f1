/*
 * The upstream side of a request: host checks, the allowlist, one DNS
 * lookup, classification of every answer (only public or excepted
 * addresses, never the proxy's listeners, no local interface address
 * unless excepted), then connecting to the permitted
 * addresses in order with a deadline each. Hands over to tunnel/forward.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/addr.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/dns.h"
#include "proxy/host.h"
#include "proxy/metrics.h"
#include "proxy/selfaddr.h"

static void upstream_connect_next(struct conn *c);


static socklen_t
sockaddr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6);
}

static void
sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* NULL when the proxy may connect to sa:port, else the reason
 * ("address-self", "address-<class>") written into buf. In order: the
 * proxy's listeners are refused whatever --allow-address says (a request
 * there would loop); an address --allow-address opens is reachable, even a
 * local one (labs and tests reach services on the host that way); any
 * other local interface address is refused as the proxy's own (public or
 * not: the host's services bound to 0.0.0.0 answer there); the rest must
 * be public. */
const char *
proxy_upstream_blocked(const struct proxy_server *s, const struct sockaddr *sa,
    uint16_t port, char *buf, size_t len)
{
	enum proxy_self self = proxy_selfaddr_match(s->self, sa);
	enum addr_class cls;

	if (self == PROXY_SELF_LISTENER)
		goto self;
	if (proxy_addr_exception_match(s->cfg->exceptions,
	    s->cfg->nexceptions, sa, port))
		return NULL;
	if (self == PROXY_SELF_LOCAL)
		goto self;
	if ((cls = proxy_addr_classify(sa)) != ADDR_PUBLIC) {
		snprintf(buf, len, "address-%s", proxy_addr_class_name(cls));
		return buf;
	}
	return NULL;
self:
	snprintf(buf, len, "address-self");
	return buf;
}

static void
upstream_connected(struct conn *c)
{
	struct conn_req *r = c->req;
	struct sockaddr *sa = (struct sockaddr *)&r->addrs[r->next_addr - 1];
	int one = 1;

	event_del(&c->timer);
	r->connect_ms = time_mono_ms() - r->attempt_ms;
	proxy_metrics_connect_observe(c->srv->m, r->connect_ms);
	proxy_conn_format_addr(sa, r->address, sizeof(r->address));
	/* The plan is spent: a long-lived tunnel keeps none of it. An
	 * inspected one still needs the checked address it connected to
	 * (inspect.c connects there again for later requests). */
	if (!r->inspect) {
		free(r->addrs);
		r->addrs = NULL;
		r->naddrs = r->next_addr = 0;
	}
	(void)setsockopt(bufferevent_getfd(c->up), IPPROTO_TCP, TCP_NODELAY,
	    &one, sizeof(one));
	r->decision = "allow";
	if (r->is_connect) {
		r->status = 200;
		r->resp_started = true;
		proxy_tunnel_start(c);
	} else {
		proxy_forward_start(c);
	}
}

static void
upstream_connect_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	int err = EVUTIL_SOCKET_ERROR();

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		upstream_connected(c);
		return;
	}
	c->req->last_err = err != 0 && err != EINPROGRESS ? err : ECONNREFUSED;
	event_del(&c->timer);
	bufferevent_free(c->up);
	c->up = NULL;
	upstream_connect_next(c);
}

/* The timer in CONN_CONNECTING: this address took too long. */
static void
upstream_connect_timeout(struct conn *c)
{
	c->req->last_err = ETIMEDOUT;
	bufferevent_free(c->up);
	c->up = NULL;
	upstream_connect_next(c);
}

static void
upstream_connect_next(struct conn *c)
{
	struct proxy_server *s = c->srv;
	struct conn_req *r = c->req;
	struct bufferevent *up;
	struct sockaddr *sa;

	while (r->next_addr < r->naddrs) {
		sa = (struct sockaddr *)&r->addrs[r->next_addr++];
		up = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
		if (up == NULL) {
			r->last_err = ENOMEM;
			continue;
		}
		bufferevent_setcb(up, NULL, NULL, upstream_connect_event_cb, c);
		r->attempt_ms = time_mono_ms();
		if (bufferevent_socket_connect(up, sa, (int)sockaddr_len(sa))
		    != 0) {
			r->last_err = errno != 0 ? errno : EIO;
			bufferevent_free(up);
			continue;
		}
		c->up = up;
		proxy_conn_state_set(c, CONN_CONNECTING);
		c->connect_timeout = upstream_connect_timeout;
		proxy_conn_timer_arm(c, s->cfg->connect_timeout_ms);
		return;
	}
	if (r->last_err == ETIMEDOUT)
		proxy_conn_fail(c, 504, "error", "connect-timeout");
	else if (r->last_err == ECONNREFUSED)
		proxy_conn_fail(c, 502, "error", "upstream-refused");
	else if (r->last_err == ENOMEM)
		proxy_conn_fail(c, 503, "error", "no-memory");
	else
		proxy_conn_fail(c, 502, "error", "upstream-unreachable");
}

/* Keeps the permitted addresses (in the order given); fails the request
 * with the first blocked reason when none is left. */
static void
upstream_plan(struct conn *c, const struct sockaddr_storage *addrs, size_t n)
{
	struct conn_req *r = c->req;
	char why[48], first[48] = "";
	const char *blocked;

	r->addrs = calloc(n > 0 ? n : 1, sizeof(*r->addrs));
	if (r->addrs == NULL) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_storage ss = addrs[i];
		sockaddr_set_port(&ss, r->port);
		blocked = proxy_upstream_blocked(c->srv, (struct sockaddr *)&ss,
		    r->port, why, sizeof(why));
		if (blocked == NULL) {
			r->addrs[r->naddrs++] = ss;
		} else {
			char text[64];
			proxy_conn_format_addr((struct sockaddr *)&ss, text,
			    sizeof(text));
			log_debug("%s: %s -> %s refused: %s", c->client,
			    r->host, text, blocked);
			if (first[0] == '\0')
				snprintf(first, sizeof(first), "%s", blocked);
		}
	}
	if (r->naddrs == 0) {
		proxy_conn_fail(c, 403, "deny",
		    first[0] ? first : "address-none");
		return;
	}
	upstream_connect_next(c);
}

static void
upstream_dns_cb(const struct dns_result *res, void *arg)
{
	struct conn *c = arg;
	struct conn_req *r = c->req;

	c->dq = NULL;
	r->dns_ms = res->elapsed_ms;
	proxy_metrics_dns_observe(c->srv->m, res->elapsed_ms);
	if (res->error == -ENOENT)
		proxy_conn_fail(c, 502, "error", "dns-nxdomain");
	else if (res->error == -ETIMEDOUT)
		proxy_conn_fail(c, 502, "error", "dns-timeout");
	else if (res->error != 0)
		proxy_conn_fail(c, 502, "error", "dns-error");
	else
		upstream_plan(c, res->addrs, res->n);
}

/* The deciding entry has `inspect`. A CONNECT is terminated once
 * connected (needs the CA); a plain-HTTP request is checked here: methods
 * and paths apply, and a secret is never sent in clear. False: refused
 * (answered). */
static bool
upstream_inspect_ok(struct conn *c, const struct allowlist_inspect *in)
{
	struct conn_req *r = c->req;
	const char *why = NULL;

	if (r->is_connect) {
		if (c->srv->tls == NULL) {
			proxy_conn_fail(c, 502, "error", "inspect-unavailable");
			return false;
		}
		r->inspect = true;
		return true;
	}
	r->inspected = true;
	if (in->inject_header != NULL) {
		proxy_conn_fail(c, 403, "deny", "inject-needs-tls");
		return false;
	}
	if (r->override_header && allowlist_inspect_bounded(in)) {
		proxy_conn_fail(c, 403, "deny", "override-header");
		return false;
	}
	/* A method the record had to cut is no method of any entry. */
	if (strlen(r->method) >= sizeof(r->method) - 1 || r->target == NULL ||
	    !allowlist_inspect_check(in, r->method, r->target, &why)) {
		proxy_conn_fail(c, 403, "deny", why != NULL ? why :
		    "method-not-allowed");
		return false;
	}
	snprintf(r->reason, sizeof(r->reason), "%s", why);
	return true;
}

/* Host checks, allowlist, then the address plan (literal) or one lookup. */
void
proxy_upstream_decide(struct conn *c, const struct host_parsed *hp)
{
	struct proxy_server *s = c->srv;
	struct conn_req *r = c->req;
	const struct allowlist_inspect *insp = NULL;
	struct sockaddr_storage lit;
	char why[96];

	memset(&lit, 0, sizeof(lit));
	if (hp->kind == HOST_NAME && proxy_host_name_internal(hp->name)) {
		proxy_conn_fail(c, 403, "deny", "internal-name");
		return;
	}
	if (hp->kind == HOST_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&lit;
		sin->sin_family = AF_INET;
		sin->sin_addr = hp->v4;
	} else if (hp->kind == HOST_IPV6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&lit;
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = hp->v6;
	}
	if (hp->kind != HOST_NAME) {
		sockaddr_set_port(&lit, r->port);
		if (proxy_upstream_blocked(s, (struct sockaddr *)&lit, r->port,
		    why, sizeof(why)) != NULL) {
			proxy_conn_fail(c, 403, "deny", why);
			return;
		}
	}
	if (!proxy_policy_decide(c, r->host, r->port, why, sizeof(why),
	    &insp, &r->raw)) {
		proxy_conn_fail(c, 403, "deny", why);
		return;
	}
	snprintf(r->reason, sizeof(r->reason), "%s", why);
	if (insp != NULL && !upstream_inspect_ok(c, insp))
		return;
	if (hp->kind != HOST_NAME) {
		upstream_plan(c, &lit, 1);
		return;
	}
	proxy_conn_state_set(c, CONN_RESOLVING);
	c->dq = proxy_dns_resolve(s->dns, hp->name, upstream_dns_cb, c);
	if (c->dq == NULL)
		proxy_conn_fail(c, 503, "error", "no-memory");
}
