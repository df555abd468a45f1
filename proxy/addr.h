/*
 * Destination address policy for cordon-proxy: classify an IPv4/IPv6
 * address against the IANA special-purpose registries and the cloud
 * metadata endpoints, and match the --allow-address exceptions (the only
 * loosening of the block). Pure functions: no I/O, no allocation.
 */
#ifndef CORDON_PROXY_ADDR_H
#define CORDON_PROXY_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

/*
 * Why an address is (not) allowed. ADDR_PUBLIC is the only class the proxy
 * may connect to (unless an exception matches). Values are stable; add new
 * ones at the end.
 */
enum addr_class {
	ADDR_PUBLIC = 0,	/* globally routable unicast */
	ADDR_UNSPECIFIED,	/* 0.0.0.0, :: */
	ADDR_LOOPBACK,		/* 127/8, ::1 */
	ADDR_PRIVATE,		/* 10/8, 172.16/12, 192.168/16 */
	ADDR_SHARED,		/* 100.64/10 (CGNAT) */
	ADDR_LINK_LOCAL,	/* 169.254/16, fe80::/10 */
	ADDR_METADATA,		/* cloud metadata endpoints (checked first) */
	ADDR_DOCUMENTATION,	/* 192.0.2/24, 198.51.100/24, 203.0.113/24,
				 * 2001:db8::/32, 3fff::/20 */
	ADDR_BENCHMARK,		/* 198.18/15, 2001:2::/48 */
	ADDR_MULTICAST,		/* 224/4, ff00::/8 */
	ADDR_RESERVED,		/* everything else not globally routable */
	ADDR_BROADCAST,		/* 255.255.255.255 */
	ADDR_UNIQUE_LOCAL,	/* fc00::/7 */
};

/* Short lowercase name ("public", "loopback", "metadata", "unique-local",
 * ...) for logs and the X-Cordon-Error reason ("address-" + name). Never
 * NULL; unknown values give "reserved". Static storage. */
const char *proxy_addr_class_name(enum addr_class c);

/*
 * Classifies sa (AF_INET or AF_INET6; any other family, or NULL, gives
 * ADDR_RESERVED). The port and the IPv6 scope id are ignored.
 *
 * IPv4-embedding IPv6 forms are decoded and the embedded IPv4 address is
 * classified: ::ffff:0:0/96 (mapped), ::ffff:0:0:0/96 (translated),
 * ::/96 (compatible), 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64, IPv4 in the
 * last 32 bits), 2002::/16 (6to4, IPv4 in bits 16-47), 2001::/32 (Teredo:
 * server IPv4 in bits 32-63, client IPv4 = last 32 bits XOR 0xffffffff).
 * A non-public embedded address gives its class (so 2002:a9fe:a9fe:: is
 * ADDR_METADATA). Only ::ffff:0:0/96 and 64:ff9b::/96 can be public when
 * the embedded address is; every other embedding prefix (compatible,
 * translated, local-use NAT64, 6to4, Teredo) is deprecated or local and is
 * ADDR_RESERVED as a whole: decoding only picks the more precise reason.
 */
enum addr_class proxy_addr_classify(const struct sockaddr *sa);
/* The same for a bare address (network byte order). */
enum addr_class proxy_addr_classify_in(const struct in_addr *a);
enum addr_class proxy_addr_classify_in6(const struct in6_addr *a);

/*
 * One --allow-address exception. Syntax (documented in one place, here):
 *   IPV4[/PREFIX][:PORT]         127.0.0.2   10.0.0.0/8:3128
 *   IPV6[/PREFIX]                fd00::1     fd00::/64        (no port)
 *   [IPV6][/PREFIX][:PORT]       [fd00::1]:8080   [fd00::]/64:8080
 * IPV4 is a strict dotted quad and IPV6 is inet_pton text without zone id.
 * PREFIX is decimal (0-32 or 0-128, default full length) and the address
 * must have no bits set past the prefix (10.0.0.1/8 is rejected, write
 * 10.0.0.0/8). PORT is 1-65535, absent means every port. An IPv4
 * exception also matches the same address written as ::ffff:a.b.c.d.
 * Plain value struct, no ownership.
 */
struct addr_exception {
	int family;		/* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;			/* network byte order, host bits zero */
	unsigned prefix;	/* 0-32 or 0-128 */
	uint16_t port;		/* host byte order; 0 = any port */
};

/* Parses one exception (NUL-terminated s). Returns 0 or -EINVAL; on
 * failure *out is zeroed. */
int proxy_addr_exception_parse(const char *s, struct addr_exception *out);
/* Writes the canonical text of e (the syntax above, IPv6 always bracketed
 * when a port is present) into buf. Returns 0 or -ENOSPC (buf is then "" if
 * len > 0). 64 bytes always suffice. */
int proxy_addr_exception_format(const struct addr_exception *e, char *buf,
    size_t len);
/* True when sa (AF_INET/AF_INET6) with port (host byte order) matches one
 * of the n exceptions in list. list may be NULL when n is 0. Port 0 is
 * "some port": it matches an exception for any port (the closed
 * resolver's question, which has no port; a connection always has one). */
bool proxy_addr_exception_match(const struct addr_exception *list, size_t n,
    const struct sockaddr *sa, uint16_t port);

#endif
