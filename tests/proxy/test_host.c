/* Unit tests for request host parsing: IPv4 literal families, bracketed
 * IPv6, names, internal names and authority splitting. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "allowlist/allowlist.h"
#include "proxy/host.h"

static const struct {
	const char *in;
	int rc;
	enum host_kind kind;
	const char *text;	/* normalised name or canonical address */
} parse_rows[] = {
	/* dotted quad and the inet_aton shortcut forms */
	{ "127.0.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "1.2.3.4", 0, HOST_IPV4, "1.2.3.4" },
	{ "255.255.255.255", 0, HOST_IPV4, "255.255.255.255" },
	{ "2852039166", 0, HOST_IPV4, "169.254.169.254" },
	{ "0xA9FEA9FE", 0, HOST_IPV4, "169.254.169.254" },
	{ "0xa9fea9fe", 0, HOST_IPV4, "169.254.169.254" },
	{ "0XA9FEA9FE", 0, HOST_IPV4, "169.254.169.254" },
	{ "0x00000000a9fea9fe", 0, HOST_IPV4, "169.254.169.254" },
	{ "025177524776", 0, HOST_IPV4, "169.254.169.254" },
	{ "0251.0376.0251.0376", 0, HOST_IPV4, "169.254.169.254" },
	{ "0xa9.0xfe.0xa9.0xfe", 0, HOST_IPV4, "169.254.169.254" },
	{ "0xa9.254.0251.0xFE", 0, HOST_IPV4, "169.254.169.254" },
	{ "169.254.43518", 0, HOST_IPV4, "169.254.169.254" },
	{ "0251.0376.0124776", 0, HOST_IPV4, "169.254.169.254" },
	{ "169.16689662", 0, HOST_IPV4, "169.254.169.254" },
	{ "0xa9.0xfea9fe", 0, HOST_IPV4, "169.254.169.254" },
	{ "127.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "127.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0x7f.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0177.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0", 0, HOST_IPV4, "0.0.0.0" },
	{ "00", 0, HOST_IPV4, "0.0.0.0" },
	{ "0x0", 0, HOST_IPV4, "0.0.0.0" },
	{ "0.0", 0, HOST_IPV4, "0.0.0.0" },
	{ "000000000000000000000001", 0, HOST_IPV4, "0.0.0.1" },
	{ "0x000000000000000000000ff", 0, HOST_IPV4, "0.0.0.255" },
	{ "4294967295", 0, HOST_IPV4, "255.255.255.255" },
	{ "0xffffffff", 0, HOST_IPV4, "255.255.255.255" },
	{ "037777777777", 0, HOST_IPV4, "255.255.255.255" },
	{ "1.1.65535", 0, HOST_IPV4, "1.1.255.255" },
	{ "1.16777215", 0, HOST_IPV4, "1.255.255.255" },
	{ "1.2.3.4.", 0, HOST_IPV4, "1.2.3.4" },
	{ "2852039166.", 0, HOST_IPV4, "169.254.169.254" },
	/* overflow, junk, wrong digits: invalid, never a name */
	{ "4294967296", -EINVAL, HOST_NONE, NULL },
	{ "99999999999999999999999", -EINVAL, HOST_NONE, NULL },
	{ "0x100000000", -EINVAL, HOST_NONE, NULL },
	{ "040000000000", -EINVAL, HOST_NONE, NULL },
	{ "256.1.1.1", -EINVAL, HOST_NONE, NULL },
	{ "1.256.1.1", -EINVAL, HOST_NONE, NULL },
	{ "1.1.256.1", -EINVAL, HOST_NONE, NULL },
	{ "1.1.1.256", -EINVAL, HOST_NONE, NULL },
	{ "1.1.65536", -EINVAL, HOST_NONE, NULL },
	{ "1.16777216", -EINVAL, HOST_NONE, NULL },
	{ "0x100.1", -EINVAL, HOST_NONE, NULL },
	{ "1.2.3.4.5", -EINVAL, HOST_NONE, NULL },
	{ "1.2.3.4..", -EINVAL, HOST_NONE, NULL },
	{ "1..2", -EINVAL, HOST_NONE, NULL },
	{ ".1.2.3", -EINVAL, HOST_NONE, NULL },
	{ "08", -EINVAL, HOST_NONE, NULL },
	{ "09.1.1.1", -EINVAL, HOST_NONE, NULL },
	{ "1.2.3.08", -EINVAL, HOST_NONE, NULL },
	{ "0x", -EINVAL, HOST_NONE, NULL },
	{ "0X", -EINVAL, HOST_NONE, NULL },
	{ "0x.1", -EINVAL, HOST_NONE, NULL },
	{ "1.2.3.0x", -EINVAL, HOST_NONE, NULL },
	{ "example.123", -EINVAL, HOST_NONE, NULL },
	{ "example.0x1f", -EINVAL, HOST_NONE, NULL },
	{ "a.b.c.1", -EINVAL, HOST_NONE, NULL },
	{ " 1.2.3.4", -EINVAL, HOST_NONE, NULL },
	{ "1.2.3.4 ", -EINVAL, HOST_NONE, NULL },
	{ "+1", -EINVAL, HOST_NONE, NULL },
	{ "-1", -EINVAL, HOST_NONE, NULL },
	{ "1.-2", -EINVAL, HOST_NONE, NULL },
	{ "0x-1", 0, HOST_NAME, "0x-1" },
	/* last label not a number: a name */
	{ "1.2.3.4a", 0, HOST_NAME, "1.2.3.4a" },
	{ "1.2.3.0xg", 0, HOST_NAME, "1.2.3.0xg" },
	{ "foo.1e", 0, HOST_NAME, "foo.1e" },
	{ "1.2.3.4.example", 0, HOST_NAME, "1.2.3.4.example" },
	{ "3com.com", 0, HOST_NAME, "3com.com" },
	/* bracketed IPv6 */
	{ "[::1]", 0, HOST_IPV6, "::1" },
	{ "[::]", 0, HOST_IPV6, "::" },
	/* IPv4-mapped: the IPv4 address (the allowlist's parser, one for
	 * the proxy and the allowlist tools). */
	{ "[::ffff:127.0.0.1]", 0, HOST_IPV4, "127.0.0.1" },
	{ "[::FFFF:7F00:1]", 0, HOST_IPV4, "127.0.0.1" },
	{ "[2001:DB8:0:0:0:0:0:1]", 0, HOST_IPV6, "2001:db8::1" },
	{ "[fd00:ec2::254]", 0, HOST_IPV6, "fd00:ec2::254" },
	{ "[64:ff9b::169.254.169.254]", 0, HOST_IPV6, "64:ff9b::a9fe:a9fe" },
	{ "[fe80::1%eth0]", -EINVAL, HOST_NONE, NULL },
	{ "[fe80::1%25eth0]", -EINVAL, HOST_NONE, NULL },
	{ "[::1", -EINVAL, HOST_NONE, NULL },
	{ "::1", 0, HOST_IPV6, "::1" },
	{ "[]", -EINVAL, HOST_NONE, NULL },
	{ "[1.2.3.4]", -EINVAL, HOST_NONE, NULL },
	{ "[::1]x", -EINVAL, HOST_NONE, NULL },
	{ "[[::1]]", -EINVAL, HOST_NONE, NULL },
	{ "[::ffff:0251.0.0.1]", -EINVAL, HOST_NONE, NULL },
	{ "[::ffff:127.1]", -EINVAL, HOST_NONE, NULL },
	{ "[v1.fe]", -EINVAL, HOST_NONE, NULL },
	{ "[1:2:3:4:5:6:7:8:9]", -EINVAL, HOST_NONE, NULL },
	/* names */
	{ "Example.COM", 0, HOST_NAME, "example.com" },
	{ "example.com.", 0, HOST_NAME, "example.com" },
	{ "a", 0, HOST_NAME, "a" },
	{ "a-b.c-d", 0, HOST_NAME, "a-b.c-d" },
	{ "xn--bcher-kva.example", 0, HOST_NAME, "xn--bcher-kva.example" },
	{ "example.com..", -EINVAL, HOST_NONE, NULL },
	{ ".", -EINVAL, HOST_NONE, NULL },
	{ "", -EINVAL, HOST_NONE, NULL },
	{ ".example.com", -EINVAL, HOST_NONE, NULL },
	{ "a..b", -EINVAL, HOST_NONE, NULL },
	{ "-a.com", -EINVAL, HOST_NONE, NULL },
	{ "a-.com", -EINVAL, HOST_NONE, NULL },
	{ "a.com-", -EINVAL, HOST_NONE, NULL },
	{ "a_b.com", -EINVAL, HOST_NONE, NULL },
	{ "a b.com", -EINVAL, HOST_NONE, NULL },
	{ "a%2eb.com", -EINVAL, HOST_NONE, NULL },
	{ "user@host.com", -EINVAL, HOST_NONE, NULL },
	{ "host.com:80", -EINVAL, HOST_NONE, NULL },
	{ "b\xc3\xbc" "cher.de", -EINVAL, HOST_NONE, NULL },
	{ "a/b", -EINVAL, HOST_NONE, NULL },
	{ "*.example.com", -EINVAL, HOST_NONE, NULL },
};

static void
test_parse_table(void **state)
{
	size_t n = sizeof(parse_rows) / sizeof(parse_rows[0]);
	struct host_parsed zero;

	(void)state;
	assert_true(n >= 60);
	memset(&zero, 0, sizeof(zero));
	for (size_t i = 0; i < n; i++) {
		struct host_parsed hp;
		int rc;

		memset(&hp, 0x5a, sizeof(hp));
		rc = proxy_host_parse(parse_rows[i].in, strlen(parse_rows[i].in), &hp);
		if (rc != parse_rows[i].rc)
			fail_msg("'%s': rc %d, want %d", parse_rows[i].in, rc,
			    parse_rows[i].rc);
		if (rc < 0) {
			assert_memory_equal(&hp, &zero, sizeof(hp));
			continue;
		}
		if (hp.kind != parse_rows[i].kind || strcmp(hp.name,
		    parse_rows[i].text) != 0)
			fail_msg("'%s': kind %d '%s'", parse_rows[i].in,
			    hp.kind, hp.name);
	}
}

/* Every row inet_aton accepts gives the same address from proxy_host_parse. */
static void
test_parse_matches_inet_aton(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_rows) / sizeof(parse_rows[0]); i++) {
		struct in_addr a, b;
		const char *s = parse_rows[i].in;
		if (inet_aton(s, &a) == 0 || strchr(s, ' ') != NULL)
			continue;
		assert_int_equal(proxy_host_parse_ipv4(s, strlen(s), &b), 0);
		assert_int_equal(a.s_addr, b.s_addr);
	}
}

static void
test_parse_lengths(void **state)
{
	char buf[300];
	struct host_parsed hp;

	(void)state;
	/* label of 63 is fine, 64 is not */
	memset(buf, 'a', 63);
	memcpy(buf + 63, ".com", 5);
	assert_int_equal(proxy_host_parse(buf, strlen(buf), &hp), 0);
	memset(buf, 'a', 64);
	memcpy(buf + 64, ".com", 5);
	assert_int_equal(proxy_host_parse(buf, strlen(buf), &hp), -EINVAL);
	/* 253 characters in total (63+1+63+1+63+1+61), then 254 */
	memset(buf, 'a', 253);
	buf[63] = buf[127] = buf[191] = '.';
	buf[253] = '\0';
	assert_int_equal(proxy_host_parse(buf, 253, &hp), 0);
	assert_int_equal(strlen(hp.name), 253);
	buf[253] = '.';	/* trailing dot does not count */
	assert_int_equal(proxy_host_parse(buf, 254, &hp), 0);
	buf[253] = 'a';
	assert_int_equal(proxy_host_parse(buf, 254, &hp), -EINVAL);
	/* embedded NUL, NULL input, length shorter than the string */
	assert_int_equal(proxy_host_parse("a\0b.com", 7, &hp), -EINVAL);
	assert_int_equal(proxy_host_parse(NULL, 0, &hp), -EINVAL);
	/* "127.0" */
	assert_int_equal(proxy_host_parse("127.0.0.1", 5, &hp), 0);
	assert_string_equal(hp.name, "127.0.0.0");
	assert_int_equal(proxy_host_parse("example.com:443", 11, &hp), 0);
	assert_string_equal(hp.name, "example.com");
}

static void
test_name_internal(void **state)
{
	static const struct { const char *name; bool internal; } rows[] = {
		{ "localhost", true }, { "LOCALHOST", true },
		{ "localhost.", true }, { "foo.localhost", true },
		{ "a.b.localhost", true }, { "metadata.google.internal", true },
		{ "internal", true }, { "foo.internal", true },
		{ "printer.local", true }, { "nas.home.arpa", true },
		{ "home.arpa", true }, { "4.3.2.1.in-addr.arpa", true },
		{ "in-addr.arpa", true },
		{ "1.0.0.0.ip6.arpa", true }, { "db.localdomain", true },
		{ "x.lan", true }, { "x.corp", true }, { "x.home", true },
		{ "x.intranet", true }, { "x.private", true },
		{ "foo.test", true }, { "foo.invalid", true },
		{ "foo.example", true }, { "foo.onion", true },
		{ "foo.alt", true }, { "intranet", true },
		{ "mylocal", true }, { "com", true }, { "", true },
		{ ".", true }, { NULL, true },
		{ "example.com", false }, { "localhost.com", false },
		{ "notlocalhost.com", false }, { "foo.mylocal", false },
		{ "internal.example.com", false }, { "corp.example.com", false },
		{ "local.example.org", false }, { "arpa.example.net", false },
		{ "xlocalhost", true /* single label */ },
		{ "a.xlocalhost", false }, { "a.xinternal", false },
		{ "github.com.", false },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (proxy_host_name_internal(rows[i].name) != rows[i].internal)
			fail_msg("'%s': want %d", rows[i].name ? rows[i].name :
			    "(null)", rows[i].internal);
}

static void
test_port_split(void **state)
{
	static const struct {
		const char *in;
		bool required;
		int rc;
		const char *host;
		uint16_t port;
	} rows[] = {
		{ "example.com:443", true, 0, "example.com", 443 },
		{ "example.com:443", false, 0, "example.com", 443 },
		{ "example.com", true, -EINVAL, NULL, 0 },
		{ "example.com", false, 0, "example.com", 0 },
		{ "[::1]:443", true, 0, "[::1]", 443 },
		{ "[::1]", false, 0, "[::1]", 0 },
		{ "[::1]", true, -EINVAL, NULL, 0 },
		{ "1.2.3.4:1", true, 0, "1.2.3.4", 1 },
		{ "example.com:65535", true, 0, "example.com", 65535 },
		/* A port is there but is no port: -ERANGE (400 bad-port), the
		 * same spellings `cordon allowlist explain` calls
		 * invalid-port (util_port_parse for both). */
		{ "example.com:0443", true, -ERANGE, NULL, 0 },
		{ "example.com:00443", true, -ERANGE, NULL, 0 },
		{ "example.com:000443", true, -ERANGE, NULL, 0 },
		{ "[::1]:0443", true, -ERANGE, NULL, 0 },
		{ "example.com:65536", true, -ERANGE, NULL, 0 },
		{ "example.com:99999", true, -ERANGE, NULL, 0 },
		{ "example.com:0", true, -ERANGE, NULL, 0 },
		{ "example.com:00000", true, -ERANGE, NULL, 0 },
		{ "example.com:", true, -ERANGE, NULL, 0 },
		{ "example.com:", false, -ERANGE, NULL, 0 },
		{ "example.com:+443", true, -ERANGE, NULL, 0 },
		{ "example.com:-1", true, -ERANGE, NULL, 0 },
		{ "example.com: 443", true, -ERANGE, NULL, 0 },
		{ "example.com:443 ", true, -ERANGE, NULL, 0 },
		{ "example.com:443x", true, -ERANGE, NULL, 0 },
		{ "example.com:0x1bb", true, -ERANGE, NULL, 0 },
		{ "[::1]:", true, -ERANGE, NULL, 0 },
		/* No host, or no structure: -EINVAL. */
		{ ":443", true, -EINVAL, NULL, 0 },
		{ "", false, -EINVAL, NULL, 0 },
		{ "[]:80", true, -EINVAL, NULL, 0 },
		{ "[::1]443", true, -EINVAL, NULL, 0 },
		{ "[::1", true, -EINVAL, NULL, 0 },
		{ "::1:443", true, -EINVAL, NULL, 0 },
		{ "a:b:c", false, -EINVAL, NULL, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *host = "x";
		size_t hostlen = 99;
		uint16_t port = 99;
		int rc = proxy_host_port_split(rows[i].in, strlen(rows[i].in),
		    &host, &hostlen, &port, rows[i].required);
		if (rc != rows[i].rc)
			fail_msg("'%s': rc %d, want %d", rows[i].in, rc, rows[i].rc);
		if (rc < 0) {
			assert_null(host);
			assert_int_equal(hostlen, 0);
			assert_int_equal(port, 0);
			continue;
		}
		assert_int_equal(hostlen, strlen(rows[i].host));
		assert_memory_equal(host, rows[i].host, hostlen);
		assert_int_equal(port, rows[i].port);
	}
}

/* The proxy's authority and `cordon allowlist explain` read every port
 * spelling the same way (one parser, util_port_parse): what the proxy
 * takes as port N the allowlist matches as N, and what it refuses as
 * bad-port the allowlist calls invalid-port. */
static void
test_port_agrees_with_allowlist(void **state)
{
	static const char *const ports[] = {
		"443", "80", "1", "65535", "8443", "0443", "00443", "000443",
		"00", "0", "65536", "99999", "", "+443", "-1", " 443", "443 ",
		"0x1bb", "4 43", "443a", "\xef\xbc\x91",	/* fullwidth 1 */
	};
	static const char list[] = "*.example.com:1,80,443,8443,65535\n";
	struct allowlist_decision d;
	struct allowlist_set *set = NULL;
	char auth[64];
	const char *host;
	size_t hostlen;
	uint16_t port;
	bool allowed;
	int rc;

	(void)state;
	assert_int_equal(allowlist_set_parse("t.list", list, strlen(list),
	    &set, NULL), 0);
	for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		snprintf(auth, sizeof(auth), "a.example.com:%s", ports[i]);
		rc = proxy_host_port_split(auth, strlen(auth), &host, &hostlen,
		    &port, true);
		allowed = allowlist_match_authority(allowlist_set_policy(set,
		    NULL), auth, 443, &d);
		if (rc == 0 && !allowed)
			fail_msg("'%s': the proxy reads port %u, the allowlist "
			    "says %s", auth, port, d.reason);
		if (rc != 0 && (rc != -ERANGE || allowed ||
		    strcmp(d.reason, "invalid-port") != 0))
			fail_msg("'%s': the proxy says %d, the allowlist %s",
			    auth, rc, d.reason);
	}
	allowlist_set_free(set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_parse_matches_inet_aton),
		cmocka_unit_test(test_parse_lengths),
		cmocka_unit_test(test_name_internal),
		cmocka_unit_test(test_port_split),
		cmocka_unit_test(test_port_agrees_with_allowlist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
