/*
 * What the closed resolver answers: the decision for one parsed query of
 * one run, from the run's policy (asked through a callback), its rate
 * limit, what the upstream lookup found and the run's synthetic address
 * map. Pure: no I/O; the daemon does the lookup when the decision asks
 * for one, then decides again with its outcome. No query name is ever
 * sent upstream unless the policy allowed it.
 *
 * The rules, in order (the first that applies answers):
 *  1. No live run at the source (policy NULL): REFUSED, EDE 18
 *     Prohibited, "cordon: no-live-run".
 *  2. Over the run's rate (dnsrate.h): REFUSED, EDE 18, "cordon:
 *     dns-rate-limit". A refusal, not a drop: the client learns at once
 *     and why (glibc then fails with "temporary failure"), and answering
 *     costs no more than the parse the query already had.
 *  3. EDNS version above 0: BADVERS (RFC 6891).
 *  4. Class other than IN: REFUSED, EDE 21 Not Supported,
 *     "cordon: class-not-supported".
 *  5. The name, as allowlist_host_parse reads it: not a host name (or an
 *     IP literal written as a name): "invalid-name"; internal by its
 *     shape (allowlist_host_internal: localhost, *.internal, single
 *     labels, in-addr.arpa, ...): "internal-name"; refused by the policy:
 *     the callback's reason. Each gives NXDOMAIN, EDE 15 Blocked,
 *     "cordon: REASON POLICY" (e.g. "cordon: not-on-policy pol-a").
 *     NXDOMAIN rather than REFUSED: a stub takes it as final ("Name or
 *     service not known") instead of retrying other servers, and the
 *     answer is the same for every type, so types tell nothing.
 *  6. A meta type (0, 128-255: ANY, AXFR, IXFR, MAILA, MAILB, TSIG,
 *     TKEY): NOTIMP, EDE 21, "cordon: qtype-not-supported". For ANY,
 *     RFC 8482 allows a partial answer, but the only data here is one
 *     synthetic A that a client would take for the whole name; NOTIMP
 *     says plainly that the type is not served (REFUSED would read as a
 *     policy refusal and send the stub to its next server).
 *  7. Not looked up yet: LOOKUP (resolve q->name upstream, with the
 *     address class checks, and decide again with the outcome). Every
 *     type is looked up, so that a name upstream says does not exist is
 *     NXDOMAIN for AAAA and MX too, as for A.
 *  8. The outcome: NXDOMAIN upstream: NXDOMAIN (no EDE: it is the
 *     name's own answer); every address refused by its class: NXDOMAIN,
 *     EDE 15, "cordon: address-CLASS POLICY"; timeout: SERVFAIL, EDE 22
 *     No Reachable Authority, "cordon: upstream-timeout"; other failure:
 *     SERVFAIL, EDE 23 Network Error, "cordon: upstream-failed"; no
 *     address upstream: NODATA (NOERROR, no answer).
 *  9. Addresses upstream: qtype A: the name's synthetic address
 *     (synth.h), TTL PROXY_DNSRESOLVE_TTL; qtype AAAA: NODATA, as the
 *     egress network is IPv4 only (the proxy itself connects over IPv4
 *     or IPv6, whichever the name has); any other type: NODATA.
 *
 * The port rule. A DNS question has no port, so the callback must answer
 * whether the run's policy allows the name on at least one port: true
 * when some port p in 1-65535 has allowlist_match(policy, name, p)
 * allowed. A name allowed only as "github.com:22 raw" must resolve, or
 * ssh could not reach it; asking for 443 (or 80) would refuse it. The
 * port is checked where there is one: the transparent listener and
 * CONNECT decide every connection by (name, port) again, so a name that
 * resolves for :22 is still refused on :443 (port-not-allowed). A deny
 * entry without ports ("!x.example.com") denies every port, so the name
 * does not resolve; a deny with ports leaves the others.
 *
 * TTL and eviction. Answers carry PROXY_DNSRESOLVE_TTL (30 s). Short, so
 * that a policy reload reaches a client's next lookup soon; but the real
 * reason is the synthetic map: a name is evicted only when
 * PROXY_SYNTH_DEFAULT_MAX other names were assigned since its own last
 * assignment, which takes the run at least (4096 - 199) / 100 = 38.97 s
 * under the rate limit (one assignment per query, at most 199 tokens
 * left after the query that assigned it). So an address whose TTL still
 * runs always maps back to its name, for every client that honours TTLs.
 * The daemon must take a token of the run's bucket for every query, on
 * UDP and TCP, before deciding; a static assertion in dnsresolve.c keeps
 * the constants in that relation.
 */
#ifndef CORDON_PROXY_DNSRESOLVE_H
#define CORDON_PROXY_DNSRESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <netinet/in.h>

#include "proxy/dnsmsg.h"
#include "proxy/synth.h"

#define PROXY_DNSRESOLVE_TTL	30	/* seconds, of synthetic answers */
#define PROXY_DNSRESOLVE_WHY_MAX 64	/* the callback's reason, with NUL */

/*
 * Whether the run's policy allows name (lowercase, no trailing dot, a
 * valid host name that is not internal by its shape) on at least one
 * port (the port rule above). On false, why[0..len) gets the reason as a
 * word, NUL-terminated, without the policy's name ("not-on-policy",
 * "denied-by-entry", "policy-removed"); left empty, "denied" is used.
 */
typedef bool (*proxy_dnsresolve_allowed_fn)(const char *name, void *arg,
    char *why, size_t len);

/* What the upstream lookup of the name found. */
enum proxy_dnsresolve_upstream {
	DNSRESOLVE_UP_NONE = 0,	/* not looked up yet */
	DNSRESOLVE_UP_ADDRESS,	/* at least one address passed the class
				   checks */
	DNSRESOLVE_UP_NODATA,	/* the name exists, with no A or AAAA */
	DNSRESOLVE_UP_NXDOMAIN,	/* no such name */
	DNSRESOLVE_UP_BLOCKED,	/* every address refused by its class:
				   upstream_why names it ("address-private") */
	DNSRESOLVE_UP_TIMEOUT,	/* no answer in time */
	DNSRESOLVE_UP_FAILED,	/* SERVFAIL, REFUSED, or any other error */
};

struct proxy_dnsresolve_in {
	const struct proxy_dnsmsg_query *q;	/* status OK or BADVERS */
	const char *policy;	/* the run's policy; NULL: no live run at
				   the query's source address */
	bool rate_limited;	/* proxy_dnsrate_take said false */
	proxy_dnsresolve_allowed_fn allowed;
	void *arg;		/* passed to allowed */
	enum proxy_dnsresolve_upstream upstream;
	const char *upstream_why;	/* BLOCKED: "address-CLASS" */
	struct proxy_synth *synth;	/* the run's map (NULL only when
					   policy is NULL) */
};

enum proxy_dnsresolve_action {
	DNSRESOLVE_ANSWER = 0,	/* send out->reply (proxy_dnsmsg_answer) */
	DNSRESOLVE_LOOKUP,	/* resolve q->name, then decide again with
				   in->upstream set */
};

/*
 * The decision. Use it in place: reply's pointers point into the struct
 * (addr, text).
 */
struct proxy_dnsresolve_out {
	enum proxy_dnsresolve_action action;
	/* For logs and the egress report (static): "allowed", "nodata",
	 * "nxdomain", "no-live-run", "dns-rate-limit", "badvers",
	 * "class-not-supported", "invalid-name", "internal-name", "denied"
	 * (the policy's reason is in text), "qtype-not-supported",
	 * "address-blocked", "upstream-timeout", "upstream-failed",
	 * "no-memory"; "lookup" for LOOKUP. */
	const char *reason;
	bool allowed;		/* the policy allowed the name (and, after
				   the lookup, not every address was refused
				   by its class): false is a denial to report */
	struct proxy_dnsmsg_reply reply;
	struct in_addr addr;	/* the synthetic address of an A answer */
	char text[PROXY_DNSMSG_EDE_TEXT_MAX + 1];	/* EXTRA-TEXT */
};

/*
 * Decides the answer to in->q under the rules above. The callback is
 * asked once per call, and only at rule 5 (so a reload between the two
 * calls of a lookup applies). A failed assignment of a synthetic address
 * answers SERVFAIL, EDE 0, "cordon: no-memory". Returns 0, or -EINVAL
 * when in or its query cannot be decided (q NULL or not OK/BADVERS, no
 * callback, no map with a policy).
 */
int proxy_dnsresolve_decide(const struct proxy_dnsresolve_in *in,
    struct proxy_dnsresolve_out *out);

#endif
