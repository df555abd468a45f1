/*
 * Request host parsing for cordon-proxy: split an authority into host and
 * port, tell IP literals (every inet_aton form, bracketed IPv6) from names,
 * normalise names, and recognise names that are internal by shape. Pure
 * functions: no I/O, no DNS, no allocation.
 */
#ifndef CORDON_PROXY_HOST_H
#define CORDON_PROXY_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define HOST_NAME_MAXLEN 253	/* longest normalised name, without NUL */

enum host_kind {
	HOST_NONE = 0,		/* only in a zeroed (failed) result */
	HOST_NAME,
	HOST_IPV4,
	HOST_IPV6,
};

/* Result of proxy_host_parse. Plain value struct, no pointers, no ownership. */
struct host_parsed {
	enum host_kind kind;
	struct in_addr v4;	/* HOST_IPV4, network byte order */
	struct in6_addr v6;	/* HOST_IPV6 */
	/* NUL-terminated text. HOST_NAME: the normalised name (lowercase,
	 * one trailing dot removed). HOST_IPV4/HOST_IPV6: the canonical
	 * address text ("169.254.169.254", "::ffff:127.0.0.1", without
	 * brackets), for logs and allowlist matching. */
	char name[HOST_NAME_MAXLEN + 1];
};

/*
 * Parses the host of a CONNECT authority or absolute URI, without port
 * (s need not be NUL-terminated; NUL bytes are invalid), with the
 * allowlist's parser (allowlist_host_parse_n: the rules are written down
 * there once):
 *  - "[...]" (or anything with ':'): IPv6 literal; zone ids ("%") are
 *    rejected; an IPv4-mapped address (::ffff:a.b.c.d) is the IPv4
 *    address.
 *  - After removing one trailing dot, if the last label is all decimal
 *    digits or "0x"/"0X" followed by hex digits only, the host is an IPv4
 *    attempt (as browsers and curl see it): it must parse exactly like
 *    inet_aton (1 to 4 parts, each decimal, 0-octal or 0x-hex, the last
 *    part filling the remaining bytes: "2852039166", "0xA9FEA9FE",
 *    "0251.0376.0251.0376", "127.1", "169.254.43518"), with no trailing
 *    junk, or the host is invalid. It is never a name.
 *  - Otherwise a name: letters, digits and '-' (LDH), labels of 1-63 not
 *    starting or ending with '-', at most 253 characters without the
 *    trailing dot, no empty label. '%', '_', '@', non-ASCII are invalid.
 * Returns 0 or -EINVAL; on failure *out is zeroed.
 */
int proxy_host_parse(const char *s, size_t len, struct host_parsed *out);

/*
 * Strict IPv4 literal parser used by proxy_host_parse (inet_aton semantics, no
 * trailing dot, no whitespace, no junk). *out in network byte order.
 * Returns 0 or -EINVAL (*out then zeroed).
 */
int proxy_host_parse_ipv4(const char *s, size_t len, struct in_addr *out);

/*
 * True when a name is internal by shape and must be refused before any
 * lookup: single-label names (no dot), "localhost" and "*.localhost", and
 * names in the special-use or never-public domains internal, local,
 * localdomain, lan, home, corp, intranet, private, home.arpa, in-addr.arpa,
 * ip6.arpa, test, invalid, example, onion, alt (the domain itself or any
 * name below it; "metadata.google.internal" included). Case-insensitive,
 * one trailing dot ignored, so it is safe on unnormalised input too; NULL
 * or "" is internal.
 */
bool proxy_host_name_internal(const char *normalised_name);

/*
 * Splits an authority "host:port" or "[v6]:port" (no userinfo; authority
 * need not be NUL-terminated). *host and *hostlen point into authority; for
 * IPv6 the brackets are included so the result can go to proxy_host_parse
 * as is. The port is what util_port_parse takes, as the allowlist does:
 * canonical decimal 1-65535, no leading zero, sign or space. When the port
 * is absent ("host" or "[v6]") the call fails (-EINVAL) if port_required,
 * else *port is 0. An empty host or more than one ':' outside brackets is
 * -EINVAL; a port that is there but not a port (empty as in "host:",
 * "00443", "0", "65536", "x") is -ERANGE. On failure *host is NULL and
 * *hostlen and *port are 0.
 */
int proxy_host_port_split(const char *authority, size_t len, const char **host,
    size_t *hostlen, uint16_t *port, bool port_required);

#endif
