/*
 * proxy/dnsresolve.c: the closed resolver's decision, a row per rule
 * (no run, rate, BADVERS, class, invalid and internal names, policy
 * refusals, meta types, lookup, each upstream outcome), the callback asked
 * only where it should be and never for a name refused by its shape, the
 * synthetic addresses, EDE bytes on the wire, and the TTL guarantee: at
 * the rate limit, no name is evicted from the map within its TTL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dns_util.h"
#include "proxy/dnsrate.h"
#include "proxy/dnsresolve.h"

static uint8_t wire[2048], out[2048];

/* The policy of the tests: a few names allowed; a reason per refusal. */
struct policy {
	unsigned calls;
	char last[256];
};

static bool
allowed(const char *name, void *arg, char *why, size_t len)
{
	struct policy *p = arg;

	p->calls++;
	snprintf(p->last, sizeof(p->last), "%s", name);
	if (strcmp(name, "allowed.example.com") == 0 ||
	    strcmp(name, "ssh.example.org") == 0 ||
	    strcmp(name, "other.example.net") == 0)
		return true;
	if (strcmp(name, "denied.example.com") == 0)
		snprintf(why, len, "denied-by-entry");
	else if (strcmp(name, "long-why.example.com") == 0)
		memset(why, 'w', len);	/* no NUL: the resolver adds one */
	else if (strcmp(name, "no-why.example.com") != 0)
		snprintf(why, len, "not-on-policy");
	return false;
}

#define NONE	DNSRESOLVE_UP_NONE
#define ADDR	DNSRESOLVE_UP_ADDRESS
#define NODATA	DNSRESOLVE_UP_NODATA
#define NXD	DNSRESOLVE_UP_NXDOMAIN
#define BLOCK	DNSRESOLVE_UP_BLOCKED
#define TMO	DNSRESOLVE_UP_TIMEOUT
#define FAIL	DNSRESOLVE_UP_FAILED

struct row {
	const char *name;
	unsigned qtype, qclass;
	int version;		/* EDNS version; -1: no EDNS */
	const char *policy;
	bool limited;
	enum proxy_dnsresolve_upstream up;
	const char *up_why;
	/* expected */
	enum proxy_dnsresolve_action action;
	unsigned rcode;
	int ede;
	const char *text;
	const char *reason;
	unsigned calls;		/* callback calls */
	const char *addr;	/* the A answer, or NULL for none */
};

#define P "pol-a"
/* A reason that filled the callback's whole buffer: cut to 63 bytes. */
#define W9	"wwwwwwwww"
#define W63	W9 W9 W9 W9 W9 W9 W9
#define ANSWER DNSRESOLVE_ANSWER
#define LOOKUP DNSRESOLVE_LOOKUP

static const struct row rows[] = {
	/* 1-4: before the name is looked at. */
	{ "allowed.example.com", 1, 1, 0, NULL, false, NONE, NULL,
	    ANSWER, 5, 18, "cordon: no-live-run", "no-live-run", 0, NULL },
	{ "allowed.example.com", 1, 1, 0, P, true, NONE, NULL,
	    ANSWER, 5, 18, "cordon: dns-rate-limit", "dns-rate-limit", 0,
	    NULL },
	{ "evil.com", 1, 1, 0, P, true, NONE, NULL,
	    ANSWER, 5, 18, "cordon: dns-rate-limit", "dns-rate-limit", 0,
	    NULL },
	{ "allowed.example.com", 1, 1, 1, P, false, NONE, NULL,
	    ANSWER, 16, -1, NULL, "badvers", 0, NULL },
	{ "version.bind", 16, 3, 0, P, false, NONE, NULL,
	    ANSWER, 5, 21, "cordon: class-not-supported",
	    "class-not-supported", 0, NULL },
	{ "allowed.example.com", 1, 255, -1, P, false, NONE, NULL,
	    ANSWER, 5, 21, "cordon: class-not-supported",
	    "class-not-supported", 0, NULL },
	/* 5: the name by its shape, then the policy. */
	{ "a_b.example.com", 1, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: invalid-name pol-a", "invalid-name", 0,
	    NULL },
	{ "1.2.3.4", 1, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: invalid-name pol-a", "invalid-name", 0,
	    NULL },
	{ "", 2, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: invalid-name pol-a", "invalid-name", 0,
	    NULL },
	{ "localhost", 1, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: internal-name pol-a", "internal-name", 0,
	    NULL },
	{ "metadata.google.internal", 1, 1, -1, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: internal-name pol-a", "internal-name", 0,
	    NULL },
	{ "intranet", 28, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: internal-name pol-a", "internal-name", 0,
	    NULL },
	{ "4.3.2.1.in-addr.arpa", 12, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: internal-name pol-a", "internal-name", 0,
	    NULL },
	{ "evil.com", 1, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: not-on-policy pol-a", "denied", 1, NULL },
	/* An exfiltration label: refused here, never looked up. */
	{ "aGVsbG8gd29ybGQ.x.evil.com", 16, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: not-on-policy pol-a", "denied", 1, NULL },
	{ "denied.example.com", 1, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: denied-by-entry pol-a", "denied", 1,
	    NULL },
	{ "no-why.example.com", 1, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: denied pol-a", "denied", 1, NULL },
	{ "long-why.example.com", 1, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: " W63 " pol-a", "denied", 1, NULL },
	/* The same refusal for every type, ANY included. */
	{ "evil.com", 255, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: not-on-policy pol-a", "denied", 1, NULL },
	{ "evil.com", 28, 1, 0, P, false, NONE, NULL,
	    ANSWER, 3, 15, "cordon: not-on-policy pol-a", "denied", 1, NULL },
	/* A refusal wins over an outcome (a reload between the calls). */
	{ "evil.com", 1, 1, 0, P, false, ADDR, NULL,
	    ANSWER, 3, 15, "cordon: not-on-policy pol-a", "denied", 1, NULL },
	/* 6: meta types of an allowed name. */
	{ "allowed.example.com", 255, 1, 0, P, false, NONE, NULL,
	    ANSWER, 4, 21, "cordon: qtype-not-supported",
	    "qtype-not-supported", 1, NULL },
	{ "allowed.example.com", 252, 1, 0, P, false, NONE, NULL,
	    ANSWER, 4, 21, "cordon: qtype-not-supported",
	    "qtype-not-supported", 1, NULL },
	{ "allowed.example.com", 0, 1, 0, P, false, NONE, NULL,
	    ANSWER, 4, 21, "cordon: qtype-not-supported",
	    "qtype-not-supported", 1, NULL },
	{ "allowed.example.com", 128, 1, 0, P, false, NONE, NULL,
	    ANSWER, 4, 21, "cordon: qtype-not-supported",
	    "qtype-not-supported", 1, NULL },
	/* 7: look it up, whatever the type. */
	{ "allowed.example.com", 1, 1, 0, P, false, NONE, NULL,
	    LOOKUP, 0, -1, NULL, "lookup", 1, NULL },
	{ "ALLOWED.Example.COM", 28, 1, -1, P, false, NONE, NULL,
	    LOOKUP, 0, -1, NULL, "lookup", 1, NULL },
	{ "ssh.example.org", 15, 1, 0, P, false, NONE, NULL,
	    LOOKUP, 0, -1, NULL, "lookup", 1, NULL },
	{ "allowed.example.com", 127, 1, 0, P, false, NONE, NULL,
	    LOOKUP, 0, -1, NULL, "lookup", 1, NULL },
	/* 8: the outcome. */
	{ "allowed.example.com", 1, 1, 0, P, false, NXD, NULL,
	    ANSWER, 3, -1, NULL, "nxdomain", 1, NULL },
	{ "allowed.example.com", 28, 1, 0, P, false, NXD, NULL,
	    ANSWER, 3, -1, NULL, "nxdomain", 1, NULL },
	{ "allowed.example.com", 1, 1, 0, P, false, BLOCK, "address-private",
	    ANSWER, 3, 15, "cordon: address-private pol-a",
	    "address-blocked", 1, NULL },
	{ "allowed.example.com", 1, 1, 0, P, false, BLOCK, NULL,
	    ANSWER, 3, 15, "cordon: address-blocked pol-a",
	    "address-blocked", 1, NULL },
	{ "allowed.example.com", 1, 1, 0, P, false, TMO, NULL,
	    ANSWER, 2, 22, "cordon: upstream-timeout", "upstream-timeout", 1,
	    NULL },
	{ "allowed.example.com", 1, 1, 0, P, false, FAIL, NULL,
	    ANSWER, 2, 23, "cordon: upstream-failed", "upstream-failed", 1,
	    NULL },
	{ "allowed.example.com", 1, 1, 0, P, false, NODATA, NULL,
	    ANSWER, 0, -1, NULL, "nodata", 1, NULL },
	/* 9: addresses upstream. */
	{ "allowed.example.com", 1, 1, 0, P, false, ADDR, NULL,
	    ANSWER, 0, -1, NULL, "allowed", 1, "198.18.0.1" },
	{ "ssh.example.org", 1, 1, -1, P, false, ADDR, NULL,
	    ANSWER, 0, -1, NULL, "allowed", 1, "198.18.0.2" },
	{ "Allowed.Example.Com", 1, 1, -1, P, false, ADDR, NULL,
	    ANSWER, 0, -1, NULL, "allowed", 1, "198.18.0.1" },
	{ "allowed.example.com", 28, 1, 0, P, false, ADDR, NULL,
	    ANSWER, 0, -1, NULL, "nodata", 1, NULL },
	{ "allowed.example.com", 15, 1, 0, P, false, ADDR, NULL,
	    ANSWER, 0, -1, NULL, "nodata", 1, NULL },
	{ "other.example.net", 16, 1, 0, P, false, ADDR, NULL,
	    ANSWER, 0, -1, NULL, "nodata", 1, NULL },
	{ "other.example.net", 1, 1, 0, P, false, ADDR, NULL,
	    ANSWER, 0, -1, NULL, "allowed", 1, "198.18.0.3" },
};

static void
parse_query(struct proxy_dnsmsg_query *q, const char *name, unsigned qtype,
    unsigned qclass, int version)
{
	size_t len = dns_query(wire, sizeof(wire), 42, name, (uint16_t)qtype,
	    (uint16_t)qclass, version >= 0 ? 1232 : -1,
	    (uint8_t)(version >= 0 ? version : 0), false);
	int rc = proxy_dnsmsg_parse(wire, len, q);

	if (rc != 0 && q->status != DNSMSG_BADVERS)
		fail_msg("%s: does not parse (%s)", name, q->why);
}

static void
test_rules(void **state)
{
	struct proxy_synth *synth;
	struct proxy_dnsmsg_query q;
	struct proxy_dnsresolve_out o;
	char addr[INET_ADDRSTRLEN];
	size_t olen;

	(void)state;
	assert_int_equal(proxy_synth_new(16, &synth), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct policy pol = { 0 };
		struct proxy_dnsresolve_in in = { .q = &q, .policy = r->policy,
		    .rate_limited = r->limited, .allowed = allowed,
		    .arg = &pol, .upstream = r->up, .upstream_why = r->up_why,
		    .synth = synth };
		const char *text;

		parse_query(&q, r->name, r->qtype, r->qclass, r->version);
		assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
		text = o.reply.ede_text;
		if (o.action != r->action || o.reply.rcode != r->rcode ||
		    o.reply.ede != r->ede || strcmp(o.reason, r->reason) != 0 ||
		    (r->text == NULL) != (text == NULL) ||
		    (text != NULL && strcmp(text, r->text) != 0) ||
		    pol.calls != r->calls)
			fail_msg("row %zu (%s %u): action %d rcode %u ede %d "
			    "text \"%s\" reason %s calls %u", i, r->name,
			    r->qtype, o.action, o.reply.rcode, o.reply.ede,
			    text != NULL ? text : "(null)", o.reason, pol.calls);
		/* What the policy is asked: the name normalised. */
		if (pol.calls > 0) {
			char low[256];

			for (size_t k = 0; k <= strlen(r->name); k++)
				low[k] = (char)(r->name[k] >= 'A' &&
				    r->name[k] <= 'Z' ? r->name[k] + 32 :
				    r->name[k]);
			assert_string_equal(pol.last, low);
		}
		/* Never a lookup for a name the policy did not allow. */
		if (o.action == DNSRESOLVE_LOOKUP)
			assert_true(o.allowed);
		if (r->addr != NULL) {
			assert_int_equal(o.reply.na, 1);
			assert_ptr_equal(o.reply.a, &o.addr);
			assert_int_equal(o.reply.ttl, PROXY_DNSRESOLVE_TTL);
			inet_ntop(AF_INET, &o.addr, addr, sizeof(addr));
			assert_string_equal(addr, r->addr);
		} else {
			assert_int_equal(o.reply.na, 0);
		}
		assert_int_equal(o.reply.naaaa, 0);
		/* Every answer is one the codec writes. */
		if (o.action == DNSRESOLVE_ANSWER)
			assert_int_equal(proxy_dnsmsg_answer(&q, &o.reply,
			    DNSMSG_UDP, out, sizeof(out), &olen), 0);
	}
	/* The three allowed names asked for A hold an address each; the
	 * refused and failed ones none. */
	assert_int_equal(proxy_synth_count(synth), 3);
	proxy_synth_free(synth);
}

/* The refusal on the wire: NXDOMAIN, the question, an OPT with EDE 15
 * and the text (RFC 8914 section 2: code 15, length, INFO-CODE, text). */
static void
test_wire(void **state)
{
	struct proxy_synth *synth;
	struct proxy_dnsmsg_query q;
	struct proxy_dnsresolve_out o;
	struct policy pol = { 0 };
	struct proxy_dnsresolve_in in = { .q = &q, .policy = "pol-a",
	    .allowed = allowed, .arg = &pol };
	uint8_t want[512];
	size_t olen, wlen;

	(void)state;
	assert_int_equal(proxy_synth_new(4, &synth), 0);
	in.synth = synth;
	parse_query(&q, "evil.com", 1, 1, 0);
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
	assert_int_equal(proxy_dnsmsg_answer(&q, &o.reply, DNSMSG_UDP, out,
	    sizeof(out), &olen), 0);
	wlen = dns_hex("002a 8183 0001 0000 0000 0001"
	    "04 'evil' 03 'com' 00 0001 0001"
	    "00 0029 04d0 00 00 0000 0021 000f 001d 000f"
	    "'cordon: not-on-policy pol-a'", want, sizeof(want));
	if (olen != wlen || memcmp(out, want, wlen) != 0)
		fail_msg("got %s", dns_tohex(out, olen));
	/* The synthetic answer, over TCP: 12 + 25 + 16 = 53 bytes. */
	parse_query(&q, "allowed.example.com", 1, 1, -1);
	in.upstream = DNSRESOLVE_UP_ADDRESS;
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
	assert_int_equal(proxy_dnsmsg_answer(&q, &o.reply, DNSMSG_TCP, out,
	    sizeof(out), &olen), 0);
	wlen = dns_hex("0035 002a 8180 0001 0001 0000 0000"
	    "07 'allowed' 07 'example' 03 'com' 00 0001 0001"
	    "c00c 0001 0001 0000001e 0004 c6120001", want, sizeof(want));
	if (olen != wlen || memcmp(out, want, wlen) != 0)
		fail_msg("got %s", dns_tohex(out, olen));
	proxy_synth_free(synth);
}

static void
test_invalid(void **state)
{
	struct proxy_synth *synth;
	struct proxy_dnsmsg_query q;
	struct proxy_dnsresolve_out o;
	struct policy pol = { 0 };
	struct proxy_dnsresolve_in in = { .q = NULL, .policy = "pol-a",
	    .allowed = allowed, .arg = &pol };

	(void)state;
	assert_int_equal(proxy_synth_new(4, &synth), 0);
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), -EINVAL);
	parse_query(&q, "allowed.example.com", 1, 1, 0);
	in.q = &q;
	/* A policy and no map. */
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), -EINVAL);
	in.synth = synth;
	in.allowed = NULL;
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), -EINVAL);
	in.allowed = allowed;
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
	/* No run: no map needed. */
	in.policy = NULL;
	in.synth = NULL;
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
	assert_int_equal(o.reply.rcode, PROXY_DNS_RCODE_REFUSED);
	/* A query parse refused. */
	q.status = DNSMSG_FORMERR;
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), -EINVAL);
	assert_int_equal(pol.calls, 1);
	proxy_synth_free(synth);
}

static bool
allow_all(const char *name, void *arg, char *why, size_t len)
{
	(void)name;
	(void)arg;
	(void)why;
	(void)len;
	return true;
}

/*
 * The TTL guarantee of dnsresolve.h, with the default constants: a run
 * asks new names as fast as its bucket lets it for two minutes; every
 * eviction from the map comes more than PROXY_DNSRESOLVE_TTL after the
 * evicted name's answer (at 38.97 s: (4096 - 199) / 100), so an address
 * whose TTL still runs maps back to its name.
 */
static void
test_ttl_outlives_eviction(void **state)
{
	enum { MAXQ = 200 + 12000 + 1 };
	static struct in_addr addrs[MAXQ];
	static int64_t when[MAXQ];
	struct proxy_synth *synth;
	struct proxy_dnsrate rate;
	struct proxy_dnsmsg_query q;
	struct proxy_dnsresolve_out o;
	struct proxy_dnsresolve_in in = { .q = &q, .policy = "pol-a",
	    .allowed = allow_all, .upstream = DNSRESOLVE_UP_ADDRESS };
	size_t n = 0, oldest = 0, evictions = 0;
	int64_t min_age = INT64_MAX;
	char name[64];

	(void)state;
	assert_int_equal(proxy_synth_new(PROXY_SYNTH_DEFAULT_MAX, &synth), 0);
	in.synth = synth;
	assert_int_equal(proxy_dnsrate_init(&rate, PROXY_DNSRATE_PER_S,
	    PROXY_DNSRATE_BURST, 0), 0);
	for (int64_t t = 0; t <= 120000; t++) {
		while (proxy_dnsrate_take(&rate, t)) {
			assert_true(n < MAXQ);
			snprintf(name, sizeof(name), "n%zu.example.com", n);
			parse_query(&q, name, 1, 1, -1);
			assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
			assert_int_equal(o.reply.na, 1);
			addrs[n] = o.addr;
			when[n++] = t;
			/* Names leave in the order they came (none is
			 * asked twice): the oldest is the one at risk. */
			snprintf(name, sizeof(name), "n%zu.example.com",
			    oldest);
			if (proxy_synth_name(synth, &addrs[oldest]) == NULL) {
				if (t - when[oldest] < min_age)
					min_age = t - when[oldest];
				evictions++;
				oldest++;
			} else {
				assert_string_equal(proxy_synth_name(synth,
				    &addrs[oldest]), name);
			}
		}
	}
	assert_int_equal(n, 200 + 12000);
	assert_int_equal(evictions, n - PROXY_SYNTH_DEFAULT_MAX);
	print_message("%zu answers, %zu evictions, the earliest %lld ms "
	    "after its answer\n", n, evictions, (long long)min_age);
	assert_true(min_age > PROXY_DNSRESOLVE_TTL * 1000);
	assert_int_equal(min_age, 38970);
	proxy_synth_free(synth);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_wire),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_ttl_outlives_eviction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
