/*
 * Destination address classification (see addr.h): first-match tables
 * transcribed from the IANA IPv4/IPv6 special-purpose registries, the cloud
 * metadata endpoints checked before anything else, IPv4 decoded out of the
 * IPv6 embedding forms, and the --allow-address exceptions.
 */
#include "proxy/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const addr_class_names[] = {
	[ADDR_PUBLIC] = "public",
	[ADDR_UNSPECIFIED] = "unspecified",
	[ADDR_LOOPBACK] = "loopback",
	[ADDR_PRIVATE] = "private",
	[ADDR_SHARED] = "shared",
	[ADDR_LINK_LOCAL] = "link-local",
	[ADDR_METADATA] = "metadata",
	[ADDR_DOCUMENTATION] = "documentation",
	[ADDR_BENCHMARK] = "benchmark",
	[ADDR_MULTICAST] = "multicast",
	[ADDR_RESERVED] = "reserved",
	[ADDR_BROADCAST] = "broadcast",
	[ADDR_UNIQUE_LOCAL] = "unique-local",
};

const char *
proxy_addr_class_name(enum addr_class c)
{
	if ((unsigned)c >= sizeof(addr_class_names) / sizeof(addr_class_names[0]))
		return "reserved";
	return addr_class_names[c];
}

#define V4(a, b, c, d) \
	(((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

struct v4_range {
	uint32_t net;
	unsigned plen;
	enum addr_class c;
};

/* First match wins, so the metadata hosts and the /32s come first. */
static const struct v4_range v4_table[] = {
	{ V4(169, 254, 169, 254), 32, ADDR_METADATA },	/* AWS, GCP, Azure... */
	{ V4(169, 254, 170, 2), 32, ADDR_METADATA },	/* AWS ECS task */
	{ V4(169, 254, 170, 23), 32, ADDR_METADATA },	/* AWS EKS pod identity */
	{ V4(100, 100, 100, 200), 32, ADDR_METADATA },	/* Alibaba */
	{ V4(192, 0, 0, 192), 32, ADDR_METADATA },	/* Oracle */
	{ V4(168, 63, 129, 16), 32, ADDR_METADATA },	/* Azure WireServer */
	{ V4(0, 0, 0, 0), 32, ADDR_UNSPECIFIED },
	{ V4(0, 0, 0, 0), 8, ADDR_RESERVED },		/* "this network" */
	{ V4(10, 0, 0, 0), 8, ADDR_PRIVATE },
	{ V4(100, 64, 0, 0), 10, ADDR_SHARED },
	{ V4(127, 0, 0, 0), 8, ADDR_LOOPBACK },
	{ V4(169, 254, 0, 0), 16, ADDR_LINK_LOCAL },
	{ V4(172, 16, 0, 0), 12, ADDR_PRIVATE },
	{ V4(192, 0, 0, 0), 24, ADDR_RESERVED },	/* IETF protocol assignments */
	{ V4(192, 0, 2, 0), 24, ADDR_DOCUMENTATION },
	{ V4(192, 88, 99, 0), 24, ADDR_RESERVED },	/* 6to4 relay anycast */
	{ V4(192, 168, 0, 0), 16, ADDR_PRIVATE },
	{ V4(198, 18, 0, 0), 15, ADDR_BENCHMARK },
	{ V4(198, 51, 100, 0), 24, ADDR_DOCUMENTATION },
	{ V4(203, 0, 113, 0), 24, ADDR_DOCUMENTATION },
	{ V4(224, 0, 0, 0), 4, ADDR_MULTICAST },
	{ V4(255, 255, 255, 255), 32, ADDR_BROADCAST },
	{ V4(240, 0, 0, 0), 4, ADDR_RESERVED },
};

/* v is in host byte order. */
static enum addr_class
addr_classify_v4(uint32_t v)
{
	for (size_t i = 0; i < sizeof(v4_table) / sizeof(v4_table[0]); i++) {
		uint32_t mask = v4_table[i].plen == 0 ? 0 :
		    0xffffffffu << (32 - v4_table[i].plen);
		if ((v & mask) == v4_table[i].net)
			return v4_table[i].c;
	}
	return ADDR_PUBLIC;
}

enum addr_class
proxy_addr_classify_in(const struct in_addr *a)
{
	return addr_classify_v4(ntohl(a->s_addr));
}

struct v6_range {
	uint8_t net[16];
	unsigned plen;
	enum addr_class c;
};

/* Checked after the metadata hosts, ::, ::1 and the embedding prefixes. */
static const struct v6_range v6_table[] = {
	{ { 0x01, 0x00 }, 64, ADDR_RESERVED },		/* 100::/64 discard */
	{ { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, ADDR_BENCHMARK },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, ADDR_DOCUMENTATION },
	{ { 0x20, 0x01, 0x00, 0x03 }, 32, ADDR_PUBLIC },	/* AMT */
	{ { 0x20, 0x01, 0x00, 0x04, 0x01, 0x12 }, 48, ADDR_PUBLIC }, /* AS112 */
	/* The rest of the IETF protocol assignments: anycast services,
	 * ORCHIDv1/v2 and DRIP identifiers (not host addresses). */
	{ { 0x20, 0x01, 0x00, 0x00 }, 23, ADDR_RESERVED },
	{ { 0x3f, 0xff, 0x00 }, 20, ADDR_DOCUMENTATION },
	{ { 0x20, 0x00 }, 3, ADDR_PUBLIC },		/* global unicast */
	{ { 0x5f, 0x00 }, 16, ADDR_RESERVED },		/* SRv6 SIDs */
	{ { 0xfc, 0x00 }, 7, ADDR_UNIQUE_LOCAL },
	{ { 0xfe, 0x80 }, 10, ADDR_LINK_LOCAL },
	{ { 0xfe, 0xc0 }, 10, ADDR_RESERVED },		/* site-local */
	{ { 0xff, 0x00 }, 8, ADDR_MULTICAST },
};

static const uint8_t v6_metadata[][16] = {
	{ 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 },	/* fd00:ec2::254 */
	{ 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x23 },		/* fd00:ec2::23 */
};

static bool
addr_prefix_match6(const uint8_t *a, const uint8_t *net, unsigned plen)
{
	unsigned bytes = plen / 8, bits = plen % 8;

	if (memcmp(a, net, bytes) != 0)
		return false;
	if (bits == 0)
		return true;
	return ((a[bytes] ^ net[bytes]) & (0xff00u >> bits) & 0xff) == 0;
}

static uint32_t
addr_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	    ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* An embedding prefix that is not itself globally routable: the embedded
 * address can only make the verdict more precise, never public. */
static enum addr_class
addr_embedded_deny(uint32_t v4)
{
	enum addr_class c = addr_classify_v4(v4);

	return c == ADDR_PUBLIC ? ADDR_RESERVED : c;
}

/* Teredo: server IPv4 in bits 32-63, client IPv4 obfuscated in 96-127. */
static enum addr_class
addr_classify_teredo(const uint8_t *a)
{
	enum addr_class server = addr_classify_v4(addr_get32(a + 4));
	enum addr_class client = addr_classify_v4(~addr_get32(a + 12));

	if (server == ADDR_METADATA || client == ADDR_METADATA)
		return ADDR_METADATA;
	if (client != ADDR_PUBLIC)
		return client;
	if (server != ADDR_PUBLIC)
		return server;
	return ADDR_RESERVED;
}

/* The IPv4-embedding forms; returns false when a is none of them. */
static bool
addr_classify_embedded(const uint8_t *a, enum addr_class *c)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t translated[12] = { [8] = 0xff, [9] = 0xff };
	static const uint8_t compat[12] = { 0 };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };
	uint32_t last = addr_get32(a + 12);

	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0)
		*c = addr_classify_v4(last);
	else if (memcmp(a, translated, 12) == 0 || memcmp(a, compat, 12) == 0 ||
	    memcmp(a, nat64_local, 6) == 0)
		*c = addr_embedded_deny(last);
	else if (a[0] == 0x20 && a[1] == 0x02)
		*c = addr_embedded_deny(addr_get32(a + 2));
	else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0)
		*c = addr_classify_teredo(a);
	else
		return false;
	return true;
}

enum addr_class
proxy_addr_classify_in6(const struct in6_addr *in6)
{
	static const uint8_t any[16] = { 0 };
	static const uint8_t loop[16] = { [15] = 1 };
	const uint8_t *a = in6->s6_addr;
	enum addr_class c;

	for (size_t i = 0; i < sizeof(v6_metadata) / sizeof(v6_metadata[0]); i++)
		if (memcmp(a, v6_metadata[i], 16) == 0)
			return ADDR_METADATA;
	if (memcmp(a, any, 16) == 0)
		return ADDR_UNSPECIFIED;
	if (memcmp(a, loop, 16) == 0)
		return ADDR_LOOPBACK;
	if (addr_classify_embedded(a, &c))
		return c;
	for (size_t i = 0; i < sizeof(v6_table) / sizeof(v6_table[0]); i++)
		if (addr_prefix_match6(a, v6_table[i].net, v6_table[i].plen))
			return v6_table[i].c;
	return ADDR_RESERVED;	/* unassigned space outside 2000::/3 */
}

enum addr_class
proxy_addr_classify(const struct sockaddr *sa)
{
	if (sa == NULL)
		return ADDR_RESERVED;
	if (sa->sa_family == AF_INET)
		return proxy_addr_classify_in(
		    &((const struct sockaddr_in *)(const void *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return proxy_addr_classify_in6(
		    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return ADDR_RESERVED;
}

/* Decimal number of 1..maxdigits digits within [min, max]. */
static int
addr_parse_number(const char *s, size_t len, size_t maxdigits,
    unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (len == 0 || len > maxdigits)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Parses the optional "/PREFIX" and ":PORT" suffix in s[0..len). */
static int
addr_parse_suffix(const char *s, size_t len, bool port_ok,
    struct addr_exception *e)
{
	unsigned maxplen = e->family == AF_INET ? 32 : 128;
	const char *colon;
	unsigned long v;
	size_t n;

	e->prefix = maxplen;
	if (len > 0 && s[0] == '/') {
		colon = memchr(s, ':', len);
		n = colon != NULL ? (size_t)(colon - s) : len;
		if (addr_parse_number(s + 1, n - 1, 3, 0, maxplen, &v) < 0)
			return -EINVAL;
		e->prefix = (unsigned)v;
		s += n;
		len -= n;
	}
	if (len > 0 && s[0] == ':' && port_ok) {
		if (addr_parse_number(s + 1, len - 1, 5, 1, 65535, &v) < 0)
			return -EINVAL;
		e->port = (uint16_t)v;
		len = 0;
	}
	return len == 0 ? 0 : -EINVAL;
}

/* True when a has no bit set past plen. */
static bool
addr_host_bits_clear(const uint8_t *a, size_t alen, unsigned plen)
{
	for (size_t i = 0; i < alen; i++) {
		unsigned keep = plen >= 8 * (i + 1) ? 8 :
		    plen > 8 * i ? plen - 8 * (unsigned)i : 0;
		uint8_t mask = (uint8_t)(0xffu >> keep);
		if (a[i] & mask)
			return false;
	}
	return true;
}

int
proxy_addr_exception_parse(const char *s, struct addr_exception *out)
{
	struct addr_exception e;
	char text[INET6_ADDRSTRLEN];
	const char *end, *rest;
	size_t len, alen, ncolon = 0;
	bool bracket = false;

	memset(out, 0, sizeof(*out));
	memset(&e, 0, sizeof(e));
	if (s == NULL)
		return -EINVAL;
	len = strlen(s);
	for (size_t i = 0; i < len; i++)
		ncolon += s[i] == ':';
	if (len > 0 && s[0] == '[') {
		end = memchr(s, ']', len);
		if (end == NULL)
			return -EINVAL;
		bracket = true;
		e.family = AF_INET6;
		s++;
		alen = (size_t)(end - s);
		rest = end + 1;
	} else {
		e.family = ncolon > 1 ? AF_INET6 : AF_INET;
		alen = strcspn(s, e.family == AF_INET ? "/:" : "/");
		rest = s + alen;
	}
	if (alen == 0 || alen >= sizeof(text))
		return -EINVAL;
	memcpy(text, s, alen);
	text[alen] = '\0';
	if (strchr(text, '%') != NULL || strchr(text, '[') != NULL)
		return -EINVAL;
	if (inet_pton(e.family, text, &e.addr) != 1)
		return -EINVAL;
	/* An unbracketed IPv6 cannot take a port: "fd00::1:80" is an address. */
	if (addr_parse_suffix(rest, strlen(rest),
	    e.family == AF_INET || bracket, &e) < 0)
		return -EINVAL;
	if (!addr_host_bits_clear((const uint8_t *)&e.addr,
	    e.family == AF_INET ? 4 : 16, e.prefix))
		return -EINVAL;
	*out = e;
	return 0;
}

int
proxy_addr_exception_format(const struct addr_exception *e, char *buf,
    size_t len)
{
	char text[INET6_ADDRSTRLEN], plen[8] = "", port[8] = "";
	unsigned maxplen = e->family == AF_INET ? 32 : 128;
	bool br = e->family == AF_INET6 && e->port != 0;
	int n;

	if (len > 0)
		buf[0] = '\0';
	if ((e->family != AF_INET && e->family != AF_INET6) ||
	    inet_ntop(e->family, &e->addr, text, sizeof(text)) == NULL)
		return -EINVAL;
	if (e->prefix != maxplen)
		snprintf(plen, sizeof(plen), "/%u", e->prefix);
	if (e->port != 0)
		snprintf(port, sizeof(port), ":%u", (unsigned)e->port);
	n = snprintf(buf, len, "%s%s%s%s%s", br ? "[" : "", text, br ? "]" : "",
	    plen, port);
	if (n < 0 || (size_t)n >= len) {
		if (len > 0)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return 0;
}

static bool
addr_exception_match_one(const struct addr_exception *e, const uint8_t *a,
    int family, uint16_t port)
{
	if (e->family != family || (e->port != 0 && port != 0 &&
	    e->port != port))
		return false;
	if (e->family == AF_INET) {
		uint32_t mask = e->prefix == 0 ? 0 : 0xffffffffu << (32 - e->prefix);
		return (addr_get32(a) & mask) == ntohl(e->addr.v4.s_addr);
	}
	return addr_prefix_match6(a, e->addr.v6.s6_addr, e->prefix);
}

bool
proxy_addr_exception_match(const struct addr_exception *list, size_t n,
    const struct sockaddr *sa, uint16_t port)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *a, *a4 = NULL;
	int family;

	if (sa == NULL || list == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		a4 = (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
		a = a4;
		family = AF_INET;
	} else if (sa->sa_family == AF_INET6) {
		a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
		family = AF_INET6;
		if (memcmp(a, mapped, 12) == 0)
			a4 = a + 12;
	} else {
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (addr_exception_match_one(&list[i], a, family, port))
			return true;
		if (family == AF_INET6 && a4 != NULL &&
		    addr_exception_match_one(&list[i], a4, AF_INET, port))
			return true;
	}
	return false;
}
