/* Unit tests for the proxy's address classification and --allow-address. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/addr.h"

/* Fills ss from a textual IPv4 or IPv6 address. */
static void
sock_from(const char *text, struct sockaddr_storage *ss, uint16_t port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return;
	}
	if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return;
	}
	fail_msg("bad test address %s", text);
}

static const struct {
	const char *addr;
	enum addr_class c;
} classify_rows[] = {
	/* 0/8 this network */
	{ "0.0.0.0", ADDR_UNSPECIFIED },
	{ "0.0.0.1", ADDR_RESERVED },
	{ "0.255.255.255", ADDR_RESERVED },
	{ "1.0.0.0", ADDR_PUBLIC },
	{ "1.1.1.1", ADDR_PUBLIC },
	{ "8.8.8.8", ADDR_PUBLIC },
	/* 10/8 */
	{ "9.255.255.255", ADDR_PUBLIC },
	{ "10.0.0.0", ADDR_PRIVATE },
	{ "10.255.255.255", ADDR_PRIVATE },
	{ "11.0.0.0", ADDR_PUBLIC },
	/* 100.64/10 and Alibaba metadata */
	{ "100.63.255.255", ADDR_PUBLIC },
	{ "100.64.0.0", ADDR_SHARED },
	{ "100.127.255.255", ADDR_SHARED },
	{ "100.128.0.0", ADDR_PUBLIC },
	{ "100.100.100.200", ADDR_METADATA },
	{ "100.100.100.199", ADDR_SHARED },
	{ "100.100.100.201", ADDR_SHARED },
	/* 127/8 */
	{ "126.255.255.255", ADDR_PUBLIC },
	{ "127.0.0.0", ADDR_LOOPBACK },
	{ "127.0.0.1", ADDR_LOOPBACK },
	{ "127.255.255.255", ADDR_LOOPBACK },
	{ "128.0.0.0", ADDR_PUBLIC },
	/* 169.254/16 and the metadata hosts in it */
	{ "169.253.255.255", ADDR_PUBLIC },
	{ "169.254.0.0", ADDR_LINK_LOCAL },
	{ "169.254.255.255", ADDR_LINK_LOCAL },
	{ "169.255.0.0", ADDR_PUBLIC },
	{ "169.254.169.254", ADDR_METADATA },
	{ "169.254.169.253", ADDR_LINK_LOCAL },
	{ "169.254.169.255", ADDR_LINK_LOCAL },
	{ "169.254.170.2", ADDR_METADATA },
	{ "169.254.170.1", ADDR_LINK_LOCAL },
	{ "169.254.170.3", ADDR_LINK_LOCAL },
	{ "169.254.170.23", ADDR_METADATA },
	{ "168.63.129.16", ADDR_METADATA },
	{ "168.63.129.17", ADDR_PUBLIC },
	/* 172.16/12 */
	{ "172.15.255.255", ADDR_PUBLIC },
	{ "172.16.0.0", ADDR_PRIVATE },
	{ "172.31.255.255", ADDR_PRIVATE },
	{ "172.32.0.0", ADDR_PUBLIC },
	/* 192.0.0/24, 192.0.2/24 */
	{ "191.255.255.255", ADDR_PUBLIC },
	{ "192.0.0.0", ADDR_RESERVED },
	{ "192.0.0.9", ADDR_RESERVED },
	{ "192.0.0.191", ADDR_RESERVED },
	{ "192.0.0.192", ADDR_METADATA },
	{ "192.0.0.193", ADDR_RESERVED },
	{ "192.0.0.255", ADDR_RESERVED },
	{ "192.0.1.0", ADDR_PUBLIC },
	{ "192.0.1.255", ADDR_PUBLIC },
	{ "192.0.2.0", ADDR_DOCUMENTATION },
	{ "192.0.2.255", ADDR_DOCUMENTATION },
	{ "192.0.3.0", ADDR_PUBLIC },
	{ "192.31.196.1", ADDR_PUBLIC },	/* AS112, globally reachable */
	/* 192.88.99/24 */
	{ "192.88.98.255", ADDR_PUBLIC },
	{ "192.88.99.0", ADDR_RESERVED },
	{ "192.88.99.255", ADDR_RESERVED },
	{ "192.88.100.0", ADDR_PUBLIC },
	/* 192.168/16 */
	{ "192.167.255.255", ADDR_PUBLIC },
	{ "192.168.0.0", ADDR_PRIVATE },
	{ "192.168.255.255", ADDR_PRIVATE },
	{ "192.169.0.0", ADDR_PUBLIC },
	/* 198.18/15 */
	{ "198.17.255.255", ADDR_PUBLIC },
	{ "198.18.0.0", ADDR_BENCHMARK },
	{ "198.19.255.255", ADDR_BENCHMARK },
	{ "198.20.0.0", ADDR_PUBLIC },
	/* 198.51.100/24, 203.0.113/24 */
	{ "198.51.99.255", ADDR_PUBLIC },
	{ "198.51.100.0", ADDR_DOCUMENTATION },
	{ "198.51.100.255", ADDR_DOCUMENTATION },
	{ "198.51.101.0", ADDR_PUBLIC },
	{ "203.0.112.255", ADDR_PUBLIC },
	{ "203.0.113.0", ADDR_DOCUMENTATION },
	{ "203.0.113.255", ADDR_DOCUMENTATION },
	{ "203.0.114.0", ADDR_PUBLIC },
	/* 224/4, 240/4, broadcast */
	{ "223.255.255.255", ADDR_PUBLIC },
	{ "224.0.0.0", ADDR_MULTICAST },
	{ "239.255.255.255", ADDR_MULTICAST },
	{ "240.0.0.0", ADDR_RESERVED },
	{ "255.255.255.254", ADDR_RESERVED },
	{ "255.255.255.255", ADDR_BROADCAST },

	/* IPv6: ::, ::1, ::/96 compatible */
	{ "::", ADDR_UNSPECIFIED },
	{ "::1", ADDR_LOOPBACK },
	{ "::2", ADDR_RESERVED },
	{ "::127.0.0.1", ADDR_LOOPBACK },
	{ "::1.2.3.4", ADDR_RESERVED },
	{ "::169.254.169.254", ADDR_METADATA },
	{ "::100.100.100.200", ADDR_METADATA },
	{ "::10.0.0.1", ADDR_PRIVATE },
	/* ::ffff:0:0/96 mapped */
	{ "::ffff:0.0.0.0", ADDR_UNSPECIFIED },
	{ "::ffff:1.2.3.4", ADDR_PUBLIC },
	{ "::ffff:127.0.0.1", ADDR_LOOPBACK },
	{ "::ffff:10.0.0.1", ADDR_PRIVATE },
	{ "::ffff:100.64.0.1", ADDR_SHARED },
	{ "::ffff:169.254.169.254", ADDR_METADATA },
	{ "::ffff:169.254.170.2", ADDR_METADATA },
	{ "::ffff:100.100.100.200", ADDR_METADATA },
	{ "::ffff:192.0.0.192", ADDR_METADATA },
	{ "::ffff:255.255.255.255", ADDR_BROADCAST },
	{ "::ffff:224.0.0.1", ADDR_MULTICAST },
	{ "::fffe:ffff:ffff", ADDR_RESERVED },
	{ "::1:ffff:1.2.3.4", ADDR_RESERVED },
	/* ::ffff:0:0:0/96 translated */
	{ "::ffff:0:1.2.3.4", ADDR_RESERVED },
	{ "::ffff:0:169.254.169.254", ADDR_METADATA },
	{ "::ffff:0:127.0.0.1", ADDR_LOOPBACK },
	/* 64:ff9b::/96 NAT64 */
	{ "64:ff9b::1.2.3.4", ADDR_PUBLIC },
	{ "64:ff9b::8.8.8.8", ADDR_PUBLIC },
	{ "64:ff9b::127.0.0.1", ADDR_LOOPBACK },
	{ "64:ff9b::10.1.1.1", ADDR_PRIVATE },
	{ "64:ff9b::169.254.169.254", ADDR_METADATA },
	{ "64:ff9b::169.254.170.2", ADDR_METADATA },
	{ "64:ff9b::100.100.100.200", ADDR_METADATA },
	{ "64:ff9b::192.0.0.192", ADDR_METADATA },
	{ "64:ff9b::1:0:0", ADDR_RESERVED },
	{ "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	/* 64:ff9b:1::/48 local-use NAT64 */
	{ "64:ff9b:1::1.2.3.4", ADDR_RESERVED },
	{ "64:ff9b:1::169.254.169.254", ADDR_METADATA },
	{ "64:ff9b:1::192.168.1.1", ADDR_PRIVATE },
	{ "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", ADDR_BROADCAST },
	{ "64:ff9b:2::1.2.3.4", ADDR_RESERVED },
	/* 2002::/16 6to4 */
	{ "2002:a9fe:a9fe::", ADDR_METADATA },
	{ "2002:a9fe:aa02::1", ADDR_METADATA },
	{ "2002:6464:64c8::", ADDR_METADATA },
	{ "2002:c000:c0::1", ADDR_METADATA },
	{ "2002:7f00:1::1", ADDR_LOOPBACK },
	{ "2002:a00:1::", ADDR_PRIVATE },
	{ "2002:808:808::1", ADDR_RESERVED },
	{ "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_PUBLIC },
	{ "2003::1", ADDR_PUBLIC },
	/* 2001::/32 Teredo: server bits 32-63, client ~last 32 bits */
	{ "2001:0:4136:e378:8000:63bf:3fff:fdd2", ADDR_DOCUMENTATION },
	{ "2001:0:808:808::5601:5601", ADDR_METADATA },
	{ "2001:0:808:808::9b9b:9b37", ADDR_METADATA },	/* 100.100.100.200 */
	{ "2001:0:808:808::3fff:ff3f", ADDR_METADATA },	/* 192.0.0.192 */
	{ "2001:0:808:808::80ff:fffe", ADDR_LOOPBACK },
	{ "2001:0:a00:1::fefd:fcfb", ADDR_PRIVATE },
	{ "2001:0:a9fe:a9fe::fefd:fcfb", ADDR_METADATA },
	{ "2001:0:808:808::fefd:fcfb", ADDR_RESERVED },
	{ "2001:0:808:808::ffff:ffff", ADDR_UNSPECIFIED },
	/* 2001::/23 IETF assignments */
	{ "2001:1::1", ADDR_RESERVED },
	{ "2001:2::", ADDR_BENCHMARK },
	{ "2001:2:0:ffff:ffff:ffff:ffff:ffff", ADDR_BENCHMARK },
	{ "2001:2:1::", ADDR_RESERVED },
	{ "2001:3::1", ADDR_PUBLIC },
	{ "2001:4:112::1", ADDR_PUBLIC },
	{ "2001:4:113::1", ADDR_RESERVED },
	{ "2001:f:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "2001:10::1", ADDR_RESERVED },
	{ "2001:1f:ffff::", ADDR_RESERVED },
	{ "2001:20::1", ADDR_RESERVED },
	{ "2001:2f:ffff::", ADDR_RESERVED },
	{ "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "2001:200::", ADDR_PUBLIC },
	/* 2001:db8::/32, 3fff::/20 documentation */
	{ "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_PUBLIC },
	{ "2001:db8::", ADDR_DOCUMENTATION },
	{ "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_DOCUMENTATION },
	{ "2001:db9::", ADDR_PUBLIC },
	{ "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_PUBLIC },
	{ "3fff::", ADDR_DOCUMENTATION },
	{ "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_DOCUMENTATION },
	{ "3fff:1000::", ADDR_PUBLIC },
	{ "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_PUBLIC },
	/* global unicast 2000::/3 */
	{ "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "2000::", ADDR_PUBLIC },
	{ "2001:4860:4860::8888", ADDR_PUBLIC },
	{ "2606:4700:4700::1111", ADDR_PUBLIC },
	{ "2620:4f:8000::1", ADDR_PUBLIC },
	{ "4000::", ADDR_RESERVED },
	/* 100::/64 discard, 5f00::/16 SRv6 */
	{ "ff::", ADDR_RESERVED },
	{ "100::", ADDR_RESERVED },
	{ "100::ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "100:0:0:1::", ADDR_RESERVED },
	{ "5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "5f00::1", ADDR_RESERVED },
	{ "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	/* fc00::/7 and the AWS IPv6 metadata hosts */
	{ "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "fc00::", ADDR_UNIQUE_LOCAL },
	{ "fd00::1", ADDR_UNIQUE_LOCAL },
	{ "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_UNIQUE_LOCAL },
	{ "fd00:ec2::254", ADDR_METADATA },
	{ "fd00:ec2::253", ADDR_UNIQUE_LOCAL },
	{ "fd00:ec2::255", ADDR_UNIQUE_LOCAL },
	{ "fd00:ec2::23", ADDR_METADATA },
	{ "fd00:ec3::254", ADDR_UNIQUE_LOCAL },
	/* fe80::/10, fec0::/10, ff00::/8 */
	{ "fe00::", ADDR_RESERVED },
	{ "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "fe80::", ADDR_LINK_LOCAL },
	{ "fe80::1", ADDR_LINK_LOCAL },
	{ "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_LINK_LOCAL },
	{ "fec0::1", ADDR_RESERVED },
	{ "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_RESERVED },
	{ "ff00::", ADDR_MULTICAST },
	{ "ff02::1", ADDR_MULTICAST },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ADDR_MULTICAST },
};

static void
test_classify_table(void **state)
{
	struct sockaddr_storage ss;
	size_t n = sizeof(classify_rows) / sizeof(classify_rows[0]);

	(void)state;
	assert_true(n >= 120);
	for (size_t i = 0; i < n; i++) {
		enum addr_class c;
		sock_from(classify_rows[i].addr, &ss, 443);
		c = proxy_addr_classify((const struct sockaddr *)&ss);
		if (c != classify_rows[i].c)
			fail_msg("%s: got %s, want %s", classify_rows[i].addr,
			    proxy_addr_class_name(c), proxy_addr_class_name(classify_rows[i].c));
	}
}

/* Every IPv4 metadata address must stay metadata in every IPv6 form. */
static void
test_metadata_embeddings(void **state)
{
	static const char *const meta[] = {
		"169.254.169.254", "169.254.170.2", "100.100.100.200",
		"192.0.0.192", "169.254.170.23", "168.63.129.16",
	};
	struct sockaddr_storage ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	struct in_addr v4;

	(void)state;
	for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) {
		uint8_t b[4];
		assert_int_equal(inet_pton(AF_INET, meta[i], &v4), 1);
		memcpy(b, &v4, 4);
		assert_int_equal(proxy_addr_classify_in(&v4), ADDR_METADATA);
		/* mapped, translated, compatible, NAT64, local NAT64: last 32 bits */
		static const uint8_t prefixes[][12] = {
			{ [10] = 0xff, [11] = 0xff },
			{ [8] = 0xff, [9] = 0xff },
			{ 0 },
			{ 0x00, 0x64, 0xff, 0x9b },
			{ 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 },
			{ 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01, 0x12, 0x34 },
		};
		for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
			memset(&ss, 0, sizeof(ss));
			s6->sin6_family = AF_INET6;
			memcpy(s6->sin6_addr.s6_addr, prefixes[p], 12);
			memcpy(s6->sin6_addr.s6_addr + 12, b, 4);
			assert_int_equal(proxy_addr_classify((struct sockaddr *)&ss), ADDR_METADATA);
		}
		/* 6to4: bits 16-47 */
		memset(&ss, 0, sizeof(ss));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr.s6_addr[0] = 0x20;
		s6->sin6_addr.s6_addr[1] = 0x02;
		memcpy(s6->sin6_addr.s6_addr + 2, b, 4);
		s6->sin6_addr.s6_addr[15] = 1;
		assert_int_equal(proxy_addr_classify((struct sockaddr *)&ss), ADDR_METADATA);
		/* Teredo client (inverted) and server */
		memset(&ss, 0, sizeof(ss));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr.s6_addr[0] = 0x20;
		s6->sin6_addr.s6_addr[1] = 0x01;
		memset(s6->sin6_addr.s6_addr + 4, 8, 4);
		for (int k = 0; k < 4; k++)
			s6->sin6_addr.s6_addr[12 + k] = (uint8_t)~b[k];
		assert_int_equal(proxy_addr_classify((struct sockaddr *)&ss), ADDR_METADATA);
		memcpy(s6->sin6_addr.s6_addr + 4, b, 4);
		memset(s6->sin6_addr.s6_addr + 12, 0xfe, 4);
		assert_int_equal(proxy_addr_classify((struct sockaddr *)&ss), ADDR_METADATA);
	}
}

static void
test_classify_other(void **state)
{
	struct sockaddr sa;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	assert_int_equal(proxy_addr_classify(&sa), ADDR_RESERVED);
	sa.sa_family = AF_UNSPEC;
	assert_int_equal(proxy_addr_classify(&sa), ADDR_RESERVED);
	assert_int_equal(proxy_addr_classify(NULL), ADDR_RESERVED);
}

static void
test_class_names(void **state)
{
	static const struct { enum addr_class c; const char *name; } rows[] = {
		{ ADDR_PUBLIC, "public" }, { ADDR_UNSPECIFIED, "unspecified" },
		{ ADDR_LOOPBACK, "loopback" }, { ADDR_PRIVATE, "private" },
		{ ADDR_SHARED, "shared" }, { ADDR_LINK_LOCAL, "link-local" },
		{ ADDR_METADATA, "metadata" },
		{ ADDR_DOCUMENTATION, "documentation" },
		{ ADDR_BENCHMARK, "benchmark" }, { ADDR_MULTICAST, "multicast" },
		{ ADDR_RESERVED, "reserved" }, { ADDR_BROADCAST, "broadcast" },
		{ ADDR_UNIQUE_LOCAL, "unique-local" },
		{ (enum addr_class)99, "reserved" },
		{ (enum addr_class)-1, "reserved" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_string_equal(proxy_addr_class_name(rows[i].c),
		    rows[i].name);
}

static void
test_exception_parse(void **state)
{
	static const struct {
		const char *in;
		int rc;
		const char *canon;	/* proxy_addr_exception_format output */
		unsigned prefix;
		uint16_t port;
	} rows[] = {
		{ "127.0.0.2", 0, "127.0.0.2", 32, 0 },
		{ "10.0.0.0/8", 0, "10.0.0.0/8", 8, 0 },
		{ "10.0.0.0/8:3128", 0, "10.0.0.0/8:3128", 8, 3128 },
		{ "10.1.2.3:3128", 0, "10.1.2.3:3128", 32, 3128 },
		{ "10.1.2.3/32", 0, "10.1.2.3", 32, 0 },
		{ "0.0.0.0/0", 0, "0.0.0.0/0", 0, 0 },
		{ "10.0.0.0:65535", 0, "10.0.0.0:65535", 32, 65535 },
		{ "10.0.0.0:00080", 0, "10.0.0.0:80", 32, 80 },
		{ "fd00::1", 0, "fd00::1", 128, 0 },
		{ "fd00::/64", 0, "fd00::/64", 64, 0 },
		{ "FD00::/64", 0, "fd00::/64", 64, 0 },
		{ "fd00::1:80", 0, "fd00::1:80", 128, 0 },
		{ "[fd00::1]", 0, "fd00::1", 128, 0 },
		{ "[fd00::1]:8080", 0, "[fd00::1]:8080", 128, 8080 },
		{ "[fd00::]/64:8080", 0, "[fd00::]/64:8080", 64, 8080 },
		{ "[fd00::]/64", 0, "fd00::/64", 64, 0 },
		{ "::/0", 0, "::/0", 0, 0 },
		{ "[::ffff:127.0.0.1]:80", 0, "[::ffff:127.0.0.1]:80", 128, 80 },
		{ "10.0.0.1/8", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0/33", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0/", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0/-1", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0/0008", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0/8:", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0:0", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0:65536", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0:+80", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0:80/8", -EINVAL, NULL, 0, 0 },
		{ "10.0.0.0/8 ", -EINVAL, NULL, 0, 0 },
		{ " 10.0.0.0", -EINVAL, NULL, 0, 0 },
		{ "127.1", -EINVAL, NULL, 0, 0 },
		{ "010.0.0.1", -EINVAL, NULL, 0, 0 },
		{ "0x7f.0.0.1", -EINVAL, NULL, 0, 0 },
		{ "localhost", -EINVAL, NULL, 0, 0 },
		{ "fd00::1/64", -EINVAL, NULL, 0, 0 },
		{ "fd00::/129", -EINVAL, NULL, 0, 0 },
		{ "fd00::/64:8080", -EINVAL, NULL, 0, 0 },
		{ "[fd00::1]:", -EINVAL, NULL, 0, 0 },
		{ "[fd00::1]x", -EINVAL, NULL, 0, 0 },
		{ "[fd00::1", -EINVAL, NULL, 0, 0 },
		{ "[fd00::1/64]:80", -EINVAL, NULL, 0, 0 },
		{ "[fd00::1%eth0]", -EINVAL, NULL, 0, 0 },
		{ "fe80::1%eth0", -EINVAL, NULL, 0, 0 },
		{ "[1.2.3.4]:80", -EINVAL, NULL, 0, 0 },
		{ "[]:80", -EINVAL, NULL, 0, 0 },
		{ "", -EINVAL, NULL, 0, 0 },
		{ ":80", -EINVAL, NULL, 0, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct addr_exception e, zero;
		char text[64];
		int rc;

		memset(&e, 0x5a, sizeof(e));
		memset(&zero, 0, sizeof(zero));
		rc = proxy_addr_exception_parse(rows[i].in, &e);
		if (rc != rows[i].rc)
			fail_msg("%s: rc %d, want %d", rows[i].in, rc, rows[i].rc);
		if (rc < 0) {
			assert_memory_equal(&e, &zero, sizeof(e));
			continue;
		}
		assert_int_equal(e.prefix, rows[i].prefix);
		assert_int_equal(e.port, rows[i].port);
		assert_int_equal(proxy_addr_exception_format(&e, text, sizeof(text)), 0);
		assert_string_equal(text, rows[i].canon);
	}
	assert_int_equal(proxy_addr_exception_parse(NULL, &(struct addr_exception){ 0 }),
	    -EINVAL);
}

static void
test_exception_format_small(void **state)
{
	struct addr_exception e;
	char buf[8];

	(void)state;
	assert_int_equal(proxy_addr_exception_parse("[fd00::]/64:8080", &e), 0);
	assert_int_equal(proxy_addr_exception_format(&e, buf, sizeof(buf)),
	    -ENOSPC);
	assert_string_equal(buf, "");
}

static void
test_exception_match(void **state)
{
	static const char *const specs[] = {
		"127.0.0.2", "10.0.0.0/8:3128", "[fd00::]/64:8080", "fe80::1",
	};
	static const struct {
		const char *addr;
		uint16_t port;
		bool match;
	} rows[] = {
		{ "127.0.0.2", 80, true },
		{ "127.0.0.2", 1, true },
		{ "127.0.0.1", 80, false },
		{ "127.0.0.3", 80, false },
		{ "::ffff:127.0.0.2", 80, true },
		{ "::127.0.0.2", 80, false },
		{ "64:ff9b::127.0.0.2", 80, false },
		{ "10.0.0.0", 3128, true },
		{ "10.255.255.255", 3128, true },
		{ "10.1.2.3", 3129, false },
		{ "11.0.0.0", 3128, false },
		{ "9.255.255.255", 3128, false },
		{ "::ffff:10.9.9.9", 3128, true },
		{ "fd00::1", 8080, true },
		{ "fd00::ffff:ffff:ffff:ffff", 8080, true },
		{ "fd00:0:0:1::", 8080, false },
		{ "fd00::1", 8081, false },
		{ "fe80::1", 22, true },
		{ "fe80::2", 22, false },
	};
	struct addr_exception list[4];
	struct sockaddr_storage ss;

	(void)state;
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(proxy_addr_exception_parse(specs[i], &list[i]),
		    0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sock_from(rows[i].addr, &ss, rows[i].port);
		if (proxy_addr_exception_match(list, 4, (struct sockaddr *)&ss,
		    rows[i].port) != rows[i].match)
			fail_msg("%s port %u: want %d", rows[i].addr,
			    rows[i].port, rows[i].match);
	}
	sock_from("127.0.0.2", &ss, 80);
	assert_false(proxy_addr_exception_match(NULL, 0, (struct sockaddr *)&ss,
	    80));
	assert_false(proxy_addr_exception_match(list, 0, (struct sockaddr *)&ss,
	    80));
	assert_false(proxy_addr_exception_match(list, 4, NULL, 80));
	/* /0 matches everything of its family, nothing of the other */
	assert_int_equal(proxy_addr_exception_parse("0.0.0.0/0", &list[0]), 0);
	assert_true(proxy_addr_exception_match(list, 1, (struct sockaddr *)&ss,
	    80));
	sock_from("::1", &ss, 80);
	assert_false(proxy_addr_exception_match(list, 1, (struct sockaddr *)&ss,
	    80));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_table),
		cmocka_unit_test(test_metadata_embeddings),
		cmocka_unit_test(test_classify_other),
		cmocka_unit_test(test_class_names),
		cmocka_unit_test(test_exception_parse),
		cmocka_unit_test(test_exception_format_small),
		cmocka_unit_test(test_exception_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
