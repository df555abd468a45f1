/*
 * The closed resolver's decision (dnsresolve.h): one function walking the
 * rules in order, filling a reply for proxy_dnsmsg_answer. Names are read
 * with the allowlist's one host parser, so the resolver, the proxy and
 * `cordon allowlist explain` agree on what a name is.
 */
#include "proxy/dnsresolve.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "allowlist/allowlist.h"
#include "proxy/dnsrate.h"

/* An address handed out outlives its TTL in the map (dnsresolve.h): the
 * names a full map needs to evict one, less the burst left after the
 * assigning query, take longer to ask than the TTL lasts. */
_Static_assert(PROXY_SYNTH_DEFAULT_MAX - (PROXY_DNSRATE_BURST - 1) >
    PROXY_DNSRESOLVE_TTL * PROXY_DNSRATE_PER_S,
    "synthetic addresses could be evicted within their TTL");

/* An answer without records; ede -1 for none. */
static void
dnsresolve_set(struct proxy_dnsresolve_out *out, unsigned rcode, int ede,
    const char *reason)
{
	out->action = DNSRESOLVE_ANSWER;
	out->reason = reason;
	out->reply.rcode = rcode;
	out->reply.ede = ede;
	out->reply.ede_text = NULL;
}

/* The same with EXTRA-TEXT "cordon: WORD[ POLICY]". */
static void
dnsresolve_refuse(struct proxy_dnsresolve_out *out, unsigned rcode, int ede,
    const char *reason, const char *word, const char *policy)
{
	dnsresolve_set(out, rcode, ede, reason);
	if (policy != NULL)
		snprintf(out->text, sizeof(out->text), "cordon: %s %s", word,
		    policy);
	else
		snprintf(out->text, sizeof(out->text), "cordon: %s", word);
	out->reply.ede_text = out->text;
}

/* Rule 5: the name. True when the policy allows it. */
static bool
dnsresolve_name(const struct proxy_dnsresolve_in *in,
    struct proxy_dnsresolve_out *out)
{
	struct allowlist_host h;
	char why[PROXY_DNSRESOLVE_WHY_MAX];

	if (allowlist_host_parse(in->q->name, &h) != 0 || h.family != 0) {
		dnsresolve_refuse(out, PROXY_DNS_RCODE_NXDOMAIN,
		    PROXY_DNS_EDE_BLOCKED, "invalid-name", "invalid-name",
		    in->policy);
		return false;
	}
	if (allowlist_host_internal(h.text)) {
		dnsresolve_refuse(out, PROXY_DNS_RCODE_NXDOMAIN,
		    PROXY_DNS_EDE_BLOCKED, "internal-name", "internal-name",
		    in->policy);
		return false;
	}
	why[0] = '\0';
	if (!in->allowed(h.text, in->arg, why, sizeof(why))) {
		why[sizeof(why) - 1] = '\0';
		dnsresolve_refuse(out, PROXY_DNS_RCODE_NXDOMAIN,
		    PROXY_DNS_EDE_BLOCKED, "denied",
		    why[0] != '\0' ? why : "denied", in->policy);
		return false;
	}
	return true;
}

/* 0 and 128-255: QTYPEs and meta-TYPEs (RFC 6895 3.1), never data. */
static bool
dnsresolve_meta_type(unsigned qtype)
{
	return qtype == 0 || (qtype >= 128 && qtype <= 255);
}

/* Rules 8 and 9: the upstream outcome. */
static void
dnsresolve_outcome(const struct proxy_dnsresolve_in *in,
    struct proxy_dnsresolve_out *out)
{
	const struct proxy_dnsmsg_query *q = in->q;

	switch (in->upstream) {
	case DNSRESOLVE_UP_NXDOMAIN:
		dnsresolve_set(out, PROXY_DNS_RCODE_NXDOMAIN, -1, "nxdomain");
		return;
	case DNSRESOLVE_UP_BLOCKED:
		out->allowed = false;
		dnsresolve_refuse(out, PROXY_DNS_RCODE_NXDOMAIN,
		    PROXY_DNS_EDE_BLOCKED, "address-blocked",
		    in->upstream_why != NULL ? in->upstream_why :
		    "address-blocked", in->policy);
		return;
	case DNSRESOLVE_UP_TIMEOUT:
		dnsresolve_refuse(out, PROXY_DNS_RCODE_SERVFAIL,
		    PROXY_DNS_EDE_NO_REACHABLE_AUTHORITY, "upstream-timeout",
		    "upstream-timeout", NULL);
		return;
	case DNSRESOLVE_UP_FAILED:
		dnsresolve_refuse(out, PROXY_DNS_RCODE_SERVFAIL,
		    PROXY_DNS_EDE_NETWORK_ERROR, "upstream-failed",
		    "upstream-failed", NULL);
		return;
	case DNSRESOLVE_UP_ADDRESS:
		break;
	case DNSRESOLVE_UP_NODATA:
	default:
		dnsresolve_set(out, PROXY_DNS_RCODE_NOERROR, -1, "nodata");
		return;
	}
	if (q->qtype != PROXY_DNS_TYPE_A) {
		/* IPv4 only: AAAA, like every other type, has no data. */
		dnsresolve_set(out, PROXY_DNS_RCODE_NOERROR, -1, "nodata");
		return;
	}
	if (proxy_synth_assign(in->synth, q->name, &out->addr) != 0) {
		dnsresolve_refuse(out, PROXY_DNS_RCODE_SERVFAIL,
		    PROXY_DNS_EDE_OTHER, "no-memory", "no-memory", NULL);
		return;
	}
	dnsresolve_set(out, PROXY_DNS_RCODE_NOERROR, -1, "allowed");
	out->reply.a = &out->addr;
	out->reply.na = 1;
	out->reply.ttl = PROXY_DNSRESOLVE_TTL;
}

int
proxy_dnsresolve_decide(const struct proxy_dnsresolve_in *in,
    struct proxy_dnsresolve_out *out)
{
	const struct proxy_dnsmsg_query *q = in->q;

	memset(out, 0, sizeof(*out));
	out->reply.ede = -1;
	if (q == NULL || (q->status != DNSMSG_OK &&
	    q->status != DNSMSG_BADVERS) || in->allowed == NULL ||
	    (in->policy != NULL && in->synth == NULL)) {
		out->reason = "invalid";
		return -EINVAL;
	}
	if (in->policy == NULL) {
		dnsresolve_refuse(out, PROXY_DNS_RCODE_REFUSED,
		    PROXY_DNS_EDE_PROHIBITED, "no-live-run", "no-live-run",
		    NULL);
	} else if (in->rate_limited) {
		dnsresolve_refuse(out, PROXY_DNS_RCODE_REFUSED,
		    PROXY_DNS_EDE_PROHIBITED, "dns-rate-limit",
		    "dns-rate-limit", NULL);
	} else if (q->status == DNSMSG_BADVERS) {
		dnsresolve_set(out, PROXY_DNS_RCODE_BADVERS, -1, "badvers");
	} else if (q->qclass != PROXY_DNS_CLASS_IN) {
		dnsresolve_refuse(out, PROXY_DNS_RCODE_REFUSED,
		    PROXY_DNS_EDE_NOT_SUPPORTED, "class-not-supported",
		    "class-not-supported", NULL);
	} else if (dnsresolve_name(in, out)) {
		out->allowed = true;
		if (dnsresolve_meta_type(q->qtype)) {
			dnsresolve_refuse(out, PROXY_DNS_RCODE_NOTIMP,
			    PROXY_DNS_EDE_NOT_SUPPORTED,
			    "qtype-not-supported", "qtype-not-supported",
			    NULL);
		} else if (in->upstream == DNSRESOLVE_UP_NONE) {
			out->action = DNSRESOLVE_LOOKUP;
			out->reason = "lookup";
		} else {
			dnsresolve_outcome(in, out);
		}
	}
	return 0;
}
