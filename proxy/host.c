/*
 * Request host parsing (see host.h). The rules, in one place: a bracketed
 * host is IPv6; a host whose last label looks like a number is an IPv4
 * literal in any inet_aton form or invalid, never a name (so it can never
 * reach DNS); everything else must be a strict LDH name.
 */
#include "proxy/host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "common/util.h"

static bool
host_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
host_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char
host_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* One inet_aton part at s[*pos]: 0x-hex, 0-octal or decimal, at most
 * 0xffffffff. Advances *pos past it. */
static int
host_ipv4_part(const char *s, size_t len, size_t *pos, uint32_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;
	size_t i = *pos, start;
	int d;

	if (i >= len || !host_is_digit(s[i]))
		return -EINVAL;
	if (s[i] == '0' && i + 1 < len && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (s[i] == '0') {
		base = 8;
	}
	start = i;
	for (; i < len; i++) {
		d = host_hexval(s[i]);
		if (d < 0 || (base != 16 && d > 9))
			break;
		if ((unsigned)d >= base)
			return -EINVAL;	/* "08", "0x" never end a part */
		v = v * base + (unsigned)d;
		if (v > 0xffffffffu)
			return -EINVAL;
	}
	if (i == start)
		return -EINVAL;		/* "0x" without digits */
	*pos = i;
	*out = (uint32_t)v;
	return 0;
}

int
proxy_host_parse_ipv4(const char *s, size_t len, struct in_addr *out)
{
	static const uint32_t lastmax[4] = { 0xffffffffu, 0xffffffu, 0xffffu, 0xffu };
	uint32_t parts[4], v = 0;
	size_t pos = 0, n = 0;

	memset(out, 0, sizeof(*out));
	for (;;) {
		if (host_ipv4_part(s, len, &pos, &parts[n]) < 0)
			return -EINVAL;
		if (pos == len)
			break;
		if (s[pos] != '.' || n == 3 || parts[n] > 0xff)
			return -EINVAL;
		n++;
		pos++;
	}
	if (parts[n] > lastmax[n])
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v |= parts[i] << (24 - 8 * i);
	v |= parts[n];
	out->s_addr = htonl(v);
	return 0;
}

/* True when the label s[0..len) is what the URL standard calls a number:
 * all decimal digits, or "0x"/"0X" and hex digits only. */
static bool
host_label_numeric(const char *s, size_t len)
{
	size_t i = 0;
	bool hex = false;

	if (len == 0)
		return false;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		hex = true;
		i = 2;
	}
	for (; i < len; i++)
		if (hex ? host_hexval(s[i]) < 0 : !host_is_digit(s[i]))
			return false;
	return true;
}

static int
host_parse_ipv6(const char *s, size_t len, struct host_parsed *out)
{
	char text[INET6_ADDRSTRLEN];

	if (len < 4 || s[len - 1] != ']' || len - 2 >= sizeof(text))
		return -EINVAL;
	memcpy(text, s + 1, len - 2);
	text[len - 2] = '\0';
	if (strchr(text, '%') != NULL)
		return -EINVAL;
	if (inet_pton(AF_INET6, text, &out->v6) != 1)
		return -EINVAL;
	if (inet_ntop(AF_INET6, &out->v6, out->name, sizeof(out->name)) == NULL)
		return -EINVAL;
	out->kind = HOST_IPV6;
	return 0;
}

/* Strict LDH name s[0..len) (trailing dot already removed), lowercased
 * into out->name. */
static int
host_parse_name(const char *s, size_t len, struct host_parsed *out)
{
	size_t label = 0;

	if (len == 0 || len > HOST_NAME_MAXLEN)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return -EINVAL;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    host_is_digit(c) || c == '-') {
			if ((label == 0 && c == '-') || ++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		out->name[i] = host_lower(c);
	}
	if (label == 0 || s[len - 1] == '-')
		return -EINVAL;
	out->name[len] = '\0';
	out->kind = HOST_NAME;
	return 0;
}

int
proxy_host_parse(const char *s, size_t len, struct host_parsed *out)
{
	const char *dot;
	size_t n, last;
	int r;

	memset(out, 0, sizeof(*out));
	if (s == NULL || len == 0 || memchr(s, '\0', len) != NULL)
		return -EINVAL;
	if (s[0] == '[') {
		r = host_parse_ipv6(s, len, out);
	} else {
		n = s[len - 1] == '.' ? len - 1 : len;
		dot = n > 0 ? memrchr(s, '.', n) : NULL;
		last = dot != NULL ? (size_t)(dot - s) + 1 : 0;
		if (host_label_numeric(s + last, n - last)) {
			r = proxy_host_parse_ipv4(s, n, &out->v4);
			if (r == 0 && inet_ntop(AF_INET, &out->v4, out->name,
			    sizeof(out->name)) == NULL)
				r = -EINVAL;
			if (r == 0)
				out->kind = HOST_IPV4;
		} else {
			r = host_parse_name(s, n, out);
		}
	}
	if (r < 0)
		memset(out, 0, sizeof(*out));
	return r;
}

/* Domains whose names never resolve publicly (RFC 6761, 6762 App. G,
 * 7686, 8375, 9476) or are used for metadata and intranets. */
static const char *const host_internal_domains[] = {
	"localhost", "internal", "local", "localdomain", "lan", "home",
	"corp", "intranet", "private", "home.arpa", "in-addr.arpa",
	"ip6.arpa", "test", "invalid", "example", "onion", "alt",
};

bool
proxy_host_name_internal(const char *name)
{
	size_t len, dlen;

	if (name == NULL)
		return true;
	len = strlen(name);
	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || memchr(name, '.', len) == NULL)
		return true;
	for (size_t i = 0; i < sizeof(host_internal_domains) /
	    sizeof(host_internal_domains[0]); i++) {
		const char *d = host_internal_domains[i];
		dlen = strlen(d);
		if (len < dlen || strncasecmp(name + len - dlen, d, dlen) != 0)
			continue;
		if (len == dlen || name[len - dlen - 1] == '.')
			return true;
	}
	return false;
}

int
proxy_host_port_split(const char *authority, size_t len, const char **host,
    size_t *hostlen, uint16_t *port, bool port_required)
{
	const char *a = authority, *end, *colon;
	size_t hl;
	uint16_t v = 0;

	*host = NULL;
	*hostlen = 0;
	*port = 0;
	if (a == NULL || len == 0)
		return -EINVAL;
	if (a[0] == '[') {
		end = memchr(a, ']', len);
		if (end == NULL || end == a + 1)
			return -EINVAL;
		hl = (size_t)(end - a) + 1;
	} else {
		colon = memchr(a, ':', len);
		if (colon != NULL && memchr(colon + 1, ':',
		    len - (size_t)(colon - a) - 1) != NULL)
			return -EINVAL;
		hl = colon != NULL ? (size_t)(colon - a) : len;
	}
	if (hl == 0)
		return -EINVAL;
	if (hl == len) {
		if (port_required)
			return -EINVAL;
	} else {
		if (a[hl] != ':')
			return -EINVAL;
		/* The allowlist's parser too: one spelling per port. */
		if (util_port_parse(a + hl + 1, len - hl - 1, &v) != 0)
			return -ERANGE;
	}
	*host = a;
	*hostlen = hl;
	*port = v;
	return 0;
}
