/*
 * Policy decisions on a connection: a host:port against its run's policy
 * (run mode) or --policy (standalone), shared by the request's own host
 * (upstream.c) and by the SNI check of a tunnel (the name in the client's
 * ClientHello), so both are judged by the same rules with the same
 * reasons; and the SNI check's verdict on a parsed ClientHello.
 */
#include <stdio.h>
#include <string.h>

#include "allowlist/allowlist.h"
#include "proxy/conn.h"
#include "proxy/host.h"
#include "proxy/tlshello.h"

bool
proxy_policy_check(struct conn *c, const char *host, uint16_t port,
    char *why, size_t len)
{
	return proxy_policy_decide(c, host, port, why, len, NULL, NULL);
}

bool
proxy_policy_decide(struct conn *c, const char *host, uint16_t port,
    char *why, size_t len, const struct allowlist_inspect **inspect,
    bool *raw)
{
	struct proxy_server *s = c->srv;
	struct allowlist_decision d;
	const struct allowlist *pol;
	const char *name = proxy_run_policy(c);

	if (inspect != NULL)
		*inspect = NULL;
	if (raw != NULL)
		*raw = false;
	pol = allowlist_set_policy(s->set, name);
	if (pol == NULL && s->runs != NULL) {
		/* The run's policy went away with a reload. */
		snprintf(why, len, "policy-removed");
		return false;
	}
	if (!allowlist_match(pol, host, port, &d)) {
		if (d.reason != NULL && strcmp(d.reason, "no-match") == 0)
			snprintf(why, len, "not-on-policy %s",
			    name != NULL ? name : "default");
		else
			snprintf(why, len, "%s",
			    d.reason != NULL ? d.reason : "denied");
		return false;
	}
	snprintf(why, len, "%s", d.reason != NULL ? d.reason : "allowed");
	if (inspect != NULL)
		*inspect = d.inspect;
	if (raw != NULL)
		*raw = d.raw;
	return true;
}

/* The CONNECT host is an IP literal: the ClientHello's name is what the
 * server will route on, so it must pass the policy by itself, exactly as
 * if it had been the CONNECT host (internal names included). An IP
 * literal in server_name (which RFC 6066 forbids) must be the CONNECT
 * address itself. A name whose entry says `inspect` is refused: its
 * requests are checked only when the client names it in the CONNECT
 * (inspection follows the name, however the client addressed it). */
static const char *
sni_verdict_literal(struct conn *c, const struct proxy_tlshello *h,
    char *buf, size_t len)
{
	const struct allowlist_inspect *insp;
	struct conn_req *r = c->req;
	struct host_parsed hp;
	char why[96];

	if (proxy_host_parse(h->name, h->namelen, &hp) != 0)
		return "sni-invalid";
	if (hp.kind != HOST_NAME)
		return strcmp(hp.name, r->host) == 0 ? NULL : "sni-mismatch";
	if (proxy_host_name_internal(hp.name))
		return "sni-internal-name";
	if (proxy_policy_decide(c, hp.name, r->port, why, sizeof(why), &insp,
	    NULL))
		return insp != NULL ? "sni-inspect-required" : NULL;
	snprintf(buf, len, "sni-%s", why);
	return buf;
}

const char *
proxy_sni_verdict(struct conn *c, const struct proxy_tlshello *h, char *buf,
    size_t len)
{
	switch (h->status) {
	case TLSHELLO_NEED_MORE:	/* nothing was sent */
	case TLSHELLO_NO_SNI:
		return NULL;
	case TLSHELLO_NOT_TLS:		/* only a `raw` entry takes it */
		return "tls-required";
	case TLSHELLO_SNI:
		break;
	case TLSHELLO_SNI_EMPTY:
		return "sni-empty";
	case TLSHELLO_SNI_INVALID:
		return "sni-invalid";
	case TLSHELLO_SNI_MULTIPLE:
		return "sni-multiple";
	case TLSHELLO_ECH:
		return "ech-unsupported";
	case TLSHELLO_MALFORMED:
		return "tls-malformed";
	case TLSHELLO_TOO_LARGE:
		return "tls-hello-too-large";
	}
	if (c->req->host_kind != HOST_NAME)
		return sni_verdict_literal(c, h, buf, len);
	return proxy_tlshello_name_match(h->name, h->namelen, c->req->host) ?
	    NULL : "sni-mismatch";
}
