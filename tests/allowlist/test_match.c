/*
 * Matcher tests: one policy and a table of host/port/decision rows in the
 * style of curl's hostcheck tests (case, trailing dot, apex vs wildcard,
 * suffix tricks, deny carve-outs, IP literals, ports, junk hosts), then the
 * authority form and host normalisation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/allowlist.h"

static const char policy[] =
    "# test policy\n"			/* 1 */
    "example.com\n"			/* 2 */
    "*.example.com\n"			/* 3 */
    "api.example.com:8443\n"		/* 4 */
    "!internal.example.com\n"		/* 5 */
    "!*.corp.example.com\n"		/* 6 */
    "!*.pay.example.com:8080\n"		/* 7 */
    "*.deep.example.org:80,8080\n"	/* 8 */
    "shop.example.org:443\n"		/* 9 */
    "*.shop.example.org\n"		/* 10 */
    "!secret.shop.example.org\n"	/* 11 */
    "www.example.net\n"			/* 12 */
    "!*.example.net\n"			/* 13 */
    "203.0.113.7\n"			/* 14 */
    "!203.0.113.8\n"			/* 15 */
    "198.51.100.1:8080\n"		/* 16 */
    "2001:db8::1\n"			/* 17 */
    "[2001:db8::2]:8443\n"		/* 18 */
    "!2001:db8::3\n"			/* 19 */
    "UPPER.Example.Org\n"		/* 20 */
    "trailing.example.io.\n"		/* 21 */
    "localhost:3000\n"			/* 22 */
    "xn--bcher-kva.example\n"		/* 23 */
    "3com.example\n"			/* 24 */
    "a-b.example   # trailing comment\n"	/* 25 */
    "::ffff:192.0.2.9\n"		/* 26 */
    "\t*.x.y.example.edu:443 \r\n"	/* 27 */
    "203.0.113.8\n"			/* 28: shadowed by line 15 */
    "[2001:db8::4]\n"			/* 29 */
    "multi.example:8000,1,65535\n";	/* 30 */

#define A true
#define D false

static const struct row {
	const char *host;
	long port;
	bool allowed;
	const char *reason;	/* NULL: allowed-by-entry */
	unsigned line;		/* 0: no entry */
} rows[] = {
	/* exact, case, trailing dot */
	{ "example.com", 443, A, NULL, 2 },
	{ "example.com", 80, A, NULL, 2 },
	{ "example.com", 8443, D, "port-not-allowed", 2 },
	{ "example.com", 65535, D, "port-not-allowed", 2 },
	{ "EXAMPLE.COM", 443, A, NULL, 2 },
	{ "Example.Com.", 443, A, NULL, 2 },
	{ "example.com..", 443, D, "invalid-host", 0 },
	{ "upper.example.org", 443, A, NULL, 20 },
	{ "UPPER.EXAMPLE.ORG", 80, A, NULL, 20 },
	{ "trailing.example.io", 443, A, NULL, 21 },
	{ "trailing.example.io.", 443, A, NULL, 21 },
	/* wildcards: any depth, never the apex */
	{ "www.example.com", 443, A, NULL, 3 },
	{ "a.b.c.example.com", 80, A, NULL, 3 },
	{ "WWW.Example.COM.", 443, A, NULL, 3 },
	{ "deep.example.org", 80, D, "no-match", 0 },
	{ "a.deep.example.org", 8080, A, NULL, 8 },
	{ "a.b.deep.example.org", 80, A, NULL, 8 },
	{ "a.deep.example.org", 443, D, "port-not-allowed", 8 },
	{ "q.x.y.example.edu", 443, A, NULL, 27 },
	{ "x.y.example.edu", 443, D, "no-match", 0 },
	/* explicit ports accumulate with a covering wildcard */
	{ "api.example.com", 8443, A, NULL, 4 },
	{ "api.example.com", 443, A, NULL, 3 },
	{ "api.example.com", 22, D, "port-not-allowed", 4 },
	{ "shop.example.org", 443, A, NULL, 9 },
	{ "shop.example.org", 80, D, "port-not-allowed", 9 },
	{ "a.shop.example.org", 80, A, NULL, 10 },
	/* suffix tricks */
	{ "evilexample.com", 443, D, "no-match", 0 },
	{ "example.com.evil.test", 443, D, "no-match", 0 },
	{ "www.example.com.evil.test", 443, D, "no-match", 0 },
	{ "notexample.com", 443, D, "no-match", 0 },
	{ "xample.com", 443, D, "no-match", 0 },
	{ "example.co", 443, D, "no-match", 0 },
	{ "com", 443, D, "no-match", 0 },
	{ "example.comm", 443, D, "no-match", 0 },
	{ "wwwexample.com", 443, D, "no-match", 0 },
	/* deny carve-outs */
	{ "internal.example.com", 443, D, "denied-by-entry", 5 },
	{ "internal.example.com", 8443, D, "denied-by-entry", 5 },
	{ "INTERNAL.example.com.", 443, D, "denied-by-entry", 5 },
	{ "x.internal.example.com", 443, A, NULL, 3 },
	{ "corp.example.com", 443, A, NULL, 3 },
	{ "a.corp.example.com", 443, D, "denied-by-entry", 6 },
	{ "a.b.corp.example.com", 80, D, "denied-by-entry", 6 },
	{ "a.pay.example.com", 8080, D, "denied-by-entry", 7 },
	{ "a.pay.example.com", 443, A, NULL, 3 },
	{ "secret.shop.example.org", 443, D, "denied-by-entry", 11 },
	{ "www.example.net", 443, D, "denied-by-entry", 13 },
	{ "example.net", 443, D, "no-match", 0 },
	/* IPv4 literals */
	{ "203.0.113.7", 443, A, NULL, 14 },
	{ "203.0.113.7", 80, A, NULL, 14 },
	{ "203.0.113.7.", 443, A, NULL, 14 },
	{ "203.0.113.7", 8080, D, "port-not-allowed", 14 },
	{ "203.0.113.8", 443, D, "denied-by-entry", 15 },
	{ "198.51.100.1", 8080, A, NULL, 16 },
	{ "198.51.100.1", 443, D, "port-not-allowed", 16 },
	{ "192.0.2.9", 443, A, NULL, 26 },
	/* Every inet_aton form is the address it names, as the proxy (one
	 * parser) and every client's resolver read it. */
	{ "203.0.113.07", 443, A, NULL, 14 },
	{ "0313.0.0161.7", 443, A, NULL, 14 },
	{ "0xcb.0.0x71.7", 443, A, NULL, 14 },
	{ "3405803783", 443, A, NULL, 14 },
	{ "203.0.28935", 443, A, NULL, 14 },
	{ "203.0.113.8.", 443, D, "denied-by-entry", 15 },
	{ "203.0.113", 443, D, "no-match", 0 },
	{ "127.1", 443, D, "no-match", 0 },
	{ "2130706433", 443, D, "no-match", 0 },
	{ "0x7f.0.0.1", 443, D, "no-match", 0 },
	{ "1.2.3.0x1", 443, D, "no-match", 0 },
	{ "a.0x", 443, D, "invalid-host", 0 },
	{ "a.0x1g", 443, D, "no-match", 0 },
	{ "203.0.113.08", 443, D, "invalid-host", 0 },
	{ "203.0.113.7.1", 443, D, "invalid-host", 0 },
	{ "203.0.113.256", 443, D, "invalid-host", 0 },
	/* IPv6 literals compare as addresses */
	{ "[2001:db8::1]", 443, A, NULL, 17 },
	{ "[2001:db8:0:0:0:0:0:1]", 443, A, NULL, 17 },
	{ "[2001:0DB8::0001]", 80, A, NULL, 17 },
	{ "2001:db8::1", 443, A, NULL, 17 },
	{ "[2001:db8::2]", 8443, A, NULL, 18 },
	{ "[2001:db8::2]", 443, D, "port-not-allowed", 18 },
	{ "[2001:db8::3]", 443, D, "denied-by-entry", 19 },
	{ "[2001:db8::4]", 443, A, NULL, 29 },
	{ "[2001:db8::5]", 443, D, "no-match", 0 },
	{ "[::ffff:203.0.113.7]", 443, A, NULL, 14 },
	{ "[::ffff:203.0.113.8]", 443, D, "denied-by-entry", 15 },
	{ "[2001:db8::1", 443, D, "invalid-host", 0 },
	{ "2001:db8::1]", 443, D, "invalid-host", 0 },
	{ "[fe80::1%eth0]", 443, D, "invalid-host", 0 },
	{ "[203.0.113.7]", 443, D, "invalid-host", 0 },
	{ "[example.com]", 443, D, "invalid-host", 0 },
	{ "[]", 443, D, "invalid-host", 0 },
	{ "[2001:db8::1].", 443, D, "invalid-host", 0 },
	/* other names in the file */
	{ "localhost", 3000, A, NULL, 22 },
	{ "LOCALHOST.", 3000, A, NULL, 22 },
	{ "localhost", 443, D, "port-not-allowed", 22 },
	{ "xn--bcher-kva.example", 443, A, NULL, 23 },
	{ "b\xc3\xbc" "cher.example", 443, D, "invalid-host", 0 },
	{ "3com.example", 443, A, NULL, 24 },
	{ "a-b.example", 443, A, NULL, 25 },
	{ "multi.example", 1, A, NULL, 30 },
	{ "multi.example", 8000, A, NULL, 30 },
	{ "multi.example", 65535, A, NULL, 30 },
	{ "multi.example", 443, D, "port-not-allowed", 30 },
	/* junk hosts */
	{ "", 443, D, "invalid-host", 0 },
	{ ".", 443, D, "invalid-host", 0 },
	{ "..", 443, D, "invalid-host", 0 },
	{ ".example.com", 443, D, "invalid-host", 0 },
	{ "a..b", 443, D, "invalid-host", 0 },
	{ "www..example.com", 443, D, "invalid-host", 0 },
	{ "-a.com", 443, D, "invalid-host", 0 },
	{ "-www.example.com", 443, D, "invalid-host", 0 },
	{ "www-.example.com", 443, D, "invalid-host", 0 },
	{ "exa mple.com", 443, D, "invalid-host", 0 },
	{ " example.com", 443, D, "invalid-host", 0 },
	{ "example.com ", 443, D, "invalid-host", 0 },
	{ "example.com%00", 443, D, "invalid-host", 0 },
	{ "www.example.com%2f", 443, D, "invalid-host", 0 },
	{ "exa\tmple.com", 443, D, "invalid-host", 0 },
	{ "www.example.com\r", 443, D, "invalid-host", 0 },
	{ "*.example.com", 443, D, "invalid-host", 0 },
	{ "_dmarc.example.com", 443, D, "invalid-host", 0 },
	{ "user@www.example.com", 443, D, "invalid-host", 0 },
	{ "www.example.com/path", 443, D, "invalid-host", 0 },
	{ "example.com:443", 443, D, "invalid-host", 0 },
	{ "!internal.example.com", 443, D, "invalid-host", 0 },
	/* junk ports */
	{ "example.com", 0, D, "invalid-port", 0 },
	{ "example.com", -443, D, "invalid-port", 0 },
	{ "example.com", 65536, D, "invalid-port", 0 },
	{ "example.com", 65536 + 443, D, "invalid-port", 0 },
	{ "internal.example.com", 0, D, "invalid-port", 0 },
};

/*
 * Wildcards over bases with public suffixes beneath them (libpsl with the
 * list file): a wildcard covers a host only when the host's registrable
 * domain is the base or above it. Facts of the list used here:
 * s3.amazonaws.com, us-east-1.amazonaws.com and freetls.fastly.net are
 * public suffixes; amazonaws.com, fastly.net and example.com are not.
 */
static const char psl_policy[] =
    "*.amazonaws.com\n"			/* 1 */
    "*.mybucket.s3.amazonaws.com\n"	/* 2 */
    "bucket2.s3.amazonaws.com\n"	/* 3 */
    "*.fastly.net:443\n"		/* 4 */
    "*.example.com\n"			/* 5 */
    "s3.amazonaws.com:8443\n"		/* 6 */
    "*.xn--bcher-kva.example\n"		/* 7: punycode, always checked */
    "!*.deny.amazonaws.com\n";		/* 8 */

static const struct row psl_rows[] = {
	/* registrable domain amazonaws.com: the base itself */
	{ "ec2.amazonaws.com", 443, A, NULL, 1 },
	{ "EC2.AmazonAWS.com.", 80, A, NULL, 1 },
	{ "a.b.amazonaws.com", 443, A, NULL, 1 },
	{ "ec2.amazonaws.com", 22, D, "port-not-allowed", 1 },
	{ "amazonaws.com", 443, D, "no-match", 0 },
	/* registrable domain below the base, or none (a public suffix) */
	{ "attacker-bucket.s3.amazonaws.com", 443, D,
	  "wildcard-crosses-public-suffix", 1 },
	{ "x.execute-api.us-east-1.amazonaws.com", 443, D,
	  "wildcard-crosses-public-suffix", 1 },
	{ "us-east-1.amazonaws.com", 443, D,
	  "wildcard-crosses-public-suffix", 1 },
	{ "attacker.s3.amazonaws.com", 22, D,
	  "wildcard-crosses-public-suffix", 1 },
	{ "mybucket.s3.amazonaws.com", 443, D,
	  "wildcard-crosses-public-suffix", 1 },
	{ "x.bucket2.s3.amazonaws.com", 443, D,
	  "wildcard-crosses-public-suffix", 1 },
	/* a more specific wildcard at or below the registrable domain */
	{ "a.mybucket.s3.amazonaws.com", 443, A, NULL, 2 },
	{ "a.b.mybucket.s3.amazonaws.com", 80, A, NULL, 2 },
	/* exact entries are not wildcards: they still match */
	{ "bucket2.s3.amazonaws.com", 443, A, NULL, 3 },
	{ "s3.amazonaws.com", 8443, A, NULL, 6 },
	{ "s3.amazonaws.com", 443, D, "port-not-allowed", 6 },
	/* denies are not narrowed */
	{ "x.deny.amazonaws.com", 443, D, "denied-by-entry", 8 },
	/* another base */
	{ "www.fastly.net", 443, A, NULL, 4 },
	{ "www.fastly.net", 80, D, "port-not-allowed", 4 },
	{ "x.freetls.fastly.net", 443, D, "wildcard-crosses-public-suffix",
	  4 },
	/* bases with nothing beneath */
	{ "a.b.example.com", 443, A, NULL, 5 },
	{ "www.xn--bcher-kva.example", 443, A, NULL, 7 },
};

static struct allowlist_set *set;

static int
setup(void **state)
{
	struct allowlist_diag diag;
	int r = 0;

	(void)state;
	allowlist_diag_init(&diag);
	if (allowlist_set_parse("p.list", policy, sizeof(policy) - 1, &set,
	    &diag) != 0)
		r = -1;
	/* Lines 12 and 28 are shadowed by denies; nothing else is worth a
	 * word. */
	if (diag.errors != 0 || diag.warnings != 2 || diag.count != 2 ||
	    strcmp(diag.items[0].text, "p.list:12: warning: never allowed: "
	    "'!*.example.net' (line 13) denies it") != 0 ||
	    strcmp(diag.items[1].text, "p.list:28: warning: never allowed: "
	    "'!203.0.113.8' (line 15) denies it") != 0)
		r = -1;
	for (size_t i = 0; r != 0 && i < diag.count; i++)
		print_error("%s\n", diag.items[i].text);
	allowlist_diag_cleanup(&diag);
	return r;
}

static int
teardown(void **state)
{
	(void)state;
	allowlist_set_free(set);
	return 0;
}

static void
check_row(const struct allowlist *al, const struct row *r)
{
	struct allowlist_decision d;
	const char *reason = r->reason != NULL ? r->reason :
	    "allowed-by-entry";
	bool got;

	memset(&d, 0xa5, sizeof(d));
	got = allowlist_match(al, r->host, r->port, &d);
	if (got != r->allowed || d.allowed != r->allowed ||
	    strcmp(d.reason, reason) != 0 || d.line != r->line ||
	    (r->line != 0) != (d.entry != NULL) ||
	    (r->line != 0) != (d.file != NULL))
		fail_msg("'%s' port %ld: got %s %s line %u, want %s %s line %u",
		    r->host, r->port, got ? "allow" : "deny", d.reason, d.line,
		    r->allowed ? "allow" : "deny", reason, r->line);
	if (d.file != NULL)
		assert_string_equal(d.file, "p.list");
	/* Without a decision struct the answer is the same. */
	assert_int_equal(allowlist_match(al, r->host, r->port, NULL), got);
}

static void
test_table(void **state)
{
	const struct allowlist *al = allowlist_set_policy(set, NULL);
	size_t n = sizeof(rows) / sizeof(rows[0]);

	(void)state;
	assert_non_null(al);
	assert_true(n >= 60);
	for (size_t i = 0; i < n; i++)
		check_row(al, &rows[i]);
}

static void
test_psl_table(void **state)
{
	struct allowlist_set *pset;
	struct allowlist_diag diag;
	const struct allowlist *al;

	(void)state;
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_parse("p.list", psl_policy,
	    sizeof(psl_policy) - 1, &pset, &diag), 0);
	/* Lines 1 and 4 span public suffixes; nothing covers lines 2, 3
	 * and 6, since *.amazonaws.com crosses a suffix to reach them. */
	for (size_t i = 0; diag.count != 2 && i < diag.count; i++)
		print_error("%s\n", diag.items[i].text);
	assert_int_equal(diag.errors, 0);
	assert_int_equal(diag.count, 2);
	assert_string_equal(diag.items[0].text, "p.list:1: warning: "
	    "'*.amazonaws.com' spans public suffixes such as "
	    "'s3.amazonaws.com': names registered under them are not "
	    "allowed by it (wildcard-crosses-public-suffix)");
	assert_string_equal(diag.items[1].text, "p.list:4: warning: "
	    "'*.fastly.net' spans public suffixes such as 'map.fastly.net': "
	    "names registered under them are not allowed by it "
	    "(wildcard-crosses-public-suffix)");
	allowlist_diag_cleanup(&diag);
	al = allowlist_set_policy(pset, NULL);
	for (size_t i = 0; i < sizeof(psl_rows) / sizeof(psl_rows[0]); i++)
		check_row(al, &psl_rows[i]);
	allowlist_set_free(pset);
}

static void
test_entry_text(void **state)
{
	const struct allowlist *al = allowlist_set_policy(set, "default");
	struct allowlist_decision d;

	(void)state;
	assert_true(allowlist_match(al, "x.y.z.deep.example.org", 8080, &d));
	assert_string_equal(d.entry, "*.deep.example.org:80,8080");
	assert_false(allowlist_match(al, "a.pay.example.com", 8080, &d));
	assert_string_equal(d.entry, "!*.pay.example.com:8080");
	assert_true(allowlist_match(al, "[2001:db8::2]", 8443, &d));
	assert_string_equal(d.entry, "[2001:db8::2]:8443");
	assert_true(allowlist_match(al, "a-b.example", 443, &d));
	assert_string_equal(d.entry, "a-b.example");
	assert_true(allowlist_match(al, "q.x.y.example.edu", 443, &d));
	assert_string_equal(d.entry, "*.x.y.example.edu:443");
	assert_int_equal(allowlist_entry_count(al), 29);
}

/* Builds "aaa...a" labels joined by dots, total length len. */
static void
make_name(char *buf, size_t len, size_t label)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (i + 1) % (label + 1) == 0 ? '.' : 'a';
	buf[len] = '\0';
}

static void
test_lengths(void **state)
{
	const struct allowlist *al = allowlist_set_policy(set, NULL);
	struct allowlist_decision d;
	char name[400], host[460];

	(void)state;
	/* A 63-byte label under a wildcard matches; 64 never does. */
	make_name(name, 63, 63);
	snprintf(host, sizeof(host), "%s.example.com", name);
	assert_true(allowlist_match(al, host, 443, &d));
	make_name(name, 64, 64);
	snprintf(host, sizeof(host), "%s.example.com", name);
	assert_false(allowlist_match(al, host, 443, &d));
	assert_string_equal(d.reason, "invalid-host");
	/* 253 bytes in all matches (254 with the trailing dot); 254 and
	 * the 300-byte name do not. */
	make_name(name, 253 - 12, 40);
	assert_int_not_equal(name[253 - 13], '.');
	snprintf(host, sizeof(host), "%s.example.com", name);
	assert_int_equal(strlen(host), 253);
	assert_true(allowlist_match(al, host, 443, &d));
	strcat(host, ".");
	assert_true(allowlist_match(al, host, 443, &d));
	make_name(name, 254 - 12, 40);
	snprintf(host, sizeof(host), "%s.example.com", name);
	assert_false(allowlist_match(al, host, 443, &d));
	assert_string_equal(d.reason, "invalid-host");
	make_name(name, 300 - 12, 40);
	snprintf(host, sizeof(host), "%s.example.com", name);
	assert_int_equal(strlen(host), 300);
	assert_false(allowlist_match(al, host, 443, &d));
	assert_string_equal(d.reason, "invalid-host");
	/* 127 one-letter labels: the most a name can have. */
	make_name(name, 253 - 12, 1);
	snprintf(host, sizeof(host), "%s.example.com", name);
	assert_true(allowlist_match(al, host, 443, &d));
	assert_int_equal(d.line, 3);
}

static const struct arow {
	const char *authority;
	bool allowed;
	const char *reason;
	unsigned line;
} arows[] = {
	{ "example.com", A, NULL, 2 },		/* default port 443 */
	{ "example.com:80", A, NULL, 2 },
	{ "api.example.com:8443", A, NULL, 4 },
	{ "localhost", D, "port-not-allowed", 22 },
	{ "localhost:3000", A, NULL, 22 },
	{ "[2001:db8::2]:8443", A, NULL, 18 },
	{ "[2001:db8:0::1]", A, NULL, 17 },
	{ "[2001:db8::2]", D, "port-not-allowed", 18 },
	{ "example.com:", D, "invalid-port", 0 },
	{ "example.com:abc", D, "invalid-port", 0 },
	{ "example.com:0", D, "invalid-port", 0 },
	{ "example.com:0443", D, "invalid-port", 0 },
	/* The proxy refuses these with 400 bad-port: the same parser. */
	{ "example.com:00443", D, "invalid-port", 0 },
	{ "example.com:00", D, "invalid-port", 0 },
	{ "example.com:080", D, "invalid-port", 0 },
	{ "[2001:db8::2]:08443", D, "invalid-port", 0 },
	{ "example.com:0x1bb", D, "invalid-port", 0 },
	{ "example.com:+443", D, "invalid-port", 0 },
	{ "example.com:-1", D, "invalid-port", 0 },
	{ "example.com:65536", D, "invalid-port", 0 },
	{ "example.com:4430000000000000000000", D, "invalid-port", 0 },
	{ "example.com: 443", D, "invalid-port", 0 },
	{ "example.com:443:1", D, "invalid-host", 0 },
	{ "2001:db8::1", D, "invalid-host", 0 },
	{ "[2001:db8::1]x", D, "invalid-host", 0 },
	{ "[2001:db8::1", D, "invalid-host", 0 },
	{ "a..b:443", D, "invalid-host", 0 },
	{ "a..b:abc", D, "invalid-host", 0 },
	{ ":443", D, "invalid-host", 0 },
	{ "", D, "invalid-host", 0 },
	{ "evilexample.com:443", D, "no-match", 0 },
};

static void
test_authority(void **state)
{
	const struct allowlist *al = allowlist_set_policy(set, NULL);

	(void)state;
	for (size_t i = 0; i < sizeof(arows) / sizeof(arows[0]); i++) {
		const struct arow *r = &arows[i];
		const char *reason = r->reason != NULL ? r->reason :
		    "allowed-by-entry";
		struct allowlist_decision d;
		bool got = allowlist_match_authority(al, r->authority, 443, &d);
		if (got != r->allowed || strcmp(d.reason, reason) != 0 ||
		    d.line != r->line)
			fail_msg("'%s': got %s %s line %u, want %s line %u",
			    r->authority, got ? "allow" : "deny", d.reason,
			    d.line, reason, r->line);
	}
	assert_false(allowlist_match_authority(al, NULL, 443, NULL));
}

static void
test_no_policy(void **state)
{
	struct allowlist_decision d;

	(void)state;
	assert_null(allowlist_set_policy(set, "other"));
	assert_false(allowlist_match(NULL, "example.com", 443, &d));
	assert_string_equal(d.reason, "no-policy");
	assert_null(d.entry);
	assert_int_equal(d.line, 0);
	assert_false(allowlist_match_authority(NULL, "example.com", 443, &d));
	assert_string_equal(d.reason, "no-policy");
}

/* The closed resolver's question (a name has no port): allowed on some
 * port. Each row is also checked against every port, one by one. */
static void
test_any_port(void **state)
{
	static const char text[] =
	    "git.example.com:22 raw\n"
	    "*.example.org\n"
	    "!secret.example.org\n"
	    "!mail.example.org:25\n"
	    "db.example.net:5432\n"
	    "!*.example.net:5432\n"
	    "api.example.io:8443,9000\n"
	    "!api.example.io:8443\n";
	static const struct {
		const char *host;
		bool allowed;
		const char *reason;
	} port_rows[] = {
		{ "git.example.com", true, "allowed-by-entry" },
		{ "GIT.Example.com.", true, "allowed-by-entry" },
		{ "www.example.org", true, "allowed-by-entry" },
		{ "secret.example.org", false, "denied-by-entry" },
		{ "mail.example.org", true, "allowed-by-entry" },
		{ "db.example.net", false, "denied-by-entry" },
		{ "api.example.io", true, "allowed-by-entry" },
		{ "other.example.com", false, "no-match" },
		{ "example.org", false, "no-match" },
		{ "not a host", false, "invalid-host" },
	};
	struct allowlist_set *s2 = NULL;
	struct allowlist_diag diag;
	const struct allowlist *al;
	struct allowlist_decision d;

	(void)state;
	allowlist_diag_init(&diag);
	if (allowlist_set_parse("a.list", text, sizeof(text) - 1, &s2,
	    &diag) != 0)
		fail_msg("%s", diag.count > 0 ? diag.items[0].text : "?");
	allowlist_diag_cleanup(&diag);
	al = allowlist_set_policy(s2, NULL);
	assert_non_null(al);
	for (size_t i = 0; i < sizeof(port_rows) / sizeof(port_rows[0]); i++) {
		bool got = allowlist_match_any_port(al, port_rows[i].host, &d);
		bool some = false;

		if (got != port_rows[i].allowed || strcmp(d.reason,
		    port_rows[i].reason) != 0)
			fail_msg("%s: got %s %s, want %s %s", port_rows[i].host,
			    got ? "allowed" : "denied", d.reason,
			    port_rows[i].allowed ? "allowed" : "denied",
			    port_rows[i].reason);
		for (long p = 1; p <= 65535 && !some; p++)
			some = allowlist_match(al, port_rows[i].host, p, NULL);
		if (some != got)
			fail_msg("%s: any port says %d, port by port %d",
			    port_rows[i].host, got, some);
	}
	assert_false(allowlist_match_any_port(NULL, "git.example.com", &d));
	assert_string_equal(d.reason, "no-policy");
	allowlist_set_free(s2);
}

static void
test_host_parse(void **state)
{
	struct allowlist_host h;

	(void)state;
	assert_int_equal(allowlist_host_parse("WWW.Example.COM.", &h), 0);
	assert_int_equal(h.family, 0);
	assert_string_equal(h.text, "www.example.com");
	assert_int_equal(allowlist_host_parse("[2001:DB8:0:0:0:0:0:1]", &h), 0);
	assert_int_equal(h.family, AF_INET6);
	assert_string_equal(h.text, "2001:db8::1");
	assert_int_equal(h.addr[0], 0x20);
	assert_int_equal(h.addr[15], 1);
	assert_int_equal(allowlist_host_parse("[::ffff:10.1.2.3]", &h), 0);
	assert_int_equal(h.family, AF_INET);
	assert_string_equal(h.text, "10.1.2.3");
	assert_int_equal(h.addr[0], 10);
	assert_int_equal(h.addr[3], 3);
	assert_int_equal(allowlist_host_parse("10.1.2.3.", &h), 0);
	assert_int_equal(h.family, AF_INET);
	assert_int_equal(allowlist_host_parse("a..b", &h), -EINVAL);
	assert_int_equal(h.family, 0);
	assert_string_equal(h.text, "");
	assert_int_equal(allowlist_host_parse(NULL, &h), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_psl_table),
		cmocka_unit_test(test_entry_text),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_authority),
		cmocka_unit_test(test_no_policy),
		cmocka_unit_test(test_any_port),
		cmocka_unit_test(test_host_parse),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
