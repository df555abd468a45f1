/*
 * Host names and IP literals: the letters-digits-hyphen check (with a
 * message saying what is wrong, for the file parser), and the one parser
 * of request hosts that the matcher, `cordon allowlist explain` and the
 * proxy (proxy/host.c) share, with the names internal by their shape.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "allowlist/internal.h"
#include "common/util.h"

/* Byte classes for the name check: one table load per byte. */
enum { HOST_BAD = 0, HOST_LDH, HOST_DOT };

static const unsigned char host_class[256] = {
	['-'] = HOST_LDH, ['.'] = HOST_DOT,
	['0'] = HOST_LDH, ['1'] = HOST_LDH, ['2'] = HOST_LDH, ['3'] = HOST_LDH,
	['4'] = HOST_LDH, ['5'] = HOST_LDH, ['6'] = HOST_LDH, ['7'] = HOST_LDH,
	['8'] = HOST_LDH, ['9'] = HOST_LDH,
	['A'] = HOST_LDH, ['B'] = HOST_LDH, ['C'] = HOST_LDH, ['D'] = HOST_LDH,
	['E'] = HOST_LDH, ['F'] = HOST_LDH, ['G'] = HOST_LDH, ['H'] = HOST_LDH,
	['I'] = HOST_LDH, ['J'] = HOST_LDH, ['K'] = HOST_LDH, ['L'] = HOST_LDH,
	['M'] = HOST_LDH, ['N'] = HOST_LDH, ['O'] = HOST_LDH, ['P'] = HOST_LDH,
	['Q'] = HOST_LDH, ['R'] = HOST_LDH, ['S'] = HOST_LDH, ['T'] = HOST_LDH,
	['U'] = HOST_LDH, ['V'] = HOST_LDH, ['W'] = HOST_LDH, ['X'] = HOST_LDH,
	['Y'] = HOST_LDH, ['Z'] = HOST_LDH,
	['a'] = HOST_LDH, ['b'] = HOST_LDH, ['c'] = HOST_LDH, ['d'] = HOST_LDH,
	['e'] = HOST_LDH, ['f'] = HOST_LDH, ['g'] = HOST_LDH, ['h'] = HOST_LDH,
	['i'] = HOST_LDH, ['j'] = HOST_LDH, ['k'] = HOST_LDH, ['l'] = HOST_LDH,
	['m'] = HOST_LDH, ['n'] = HOST_LDH, ['o'] = HOST_LDH, ['p'] = HOST_LDH,
	['q'] = HOST_LDH, ['r'] = HOST_LDH, ['s'] = HOST_LDH, ['t'] = HOST_LDH,
	['u'] = HOST_LDH, ['v'] = HOST_LDH, ['w'] = HOST_LDH, ['x'] = HOST_LDH,
	['y'] = HOST_LDH, ['z'] = HOST_LDH,
};

static bool
host_is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

/* Describes a bad byte for a message: 'x' when printable, else 0xNN. */
static void
host_byte_describe(unsigned char c, char *out, size_t outlen)
{
	if (c > 0x20 && c < 0x7f)
		snprintf(out, outlen, "'%c'", c);
	else
		snprintf(out, outlen, "byte 0x%02x", c);
}

bool
al_name_check(const char *s, size_t len, char *msg, size_t msglen)
{
	size_t start = 0;
	char b[16];

	if (len == 0) {
		snprintf(msg, msglen, "empty host name");
		return false;
	}
	if (len > AL_NAME_MAX) {
		snprintf(msg, msglen, "name is %zu bytes long, more than %d",
		    len, AL_NAME_MAX);
		return false;
	}
	for (size_t i = 0; i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)s[i] : '.';
		if (host_class[c] == HOST_LDH)
			continue;
		if (c == '.') {
			size_t l = i - start;
			if (l == 0) {
				snprintf(msg, msglen, "empty label in '%.*s'",
				    (int)len, s);
				return false;
			}
			if (l > AL_LABEL_MAX) {
				snprintf(msg, msglen, "label '%.*s' is %zu bytes "
				    "long, more than %d", (int)l, s + start, l,
				    AL_LABEL_MAX);
				return false;
			}
			if (s[start] == '-' || s[i - 1] == '-') {
				snprintf(msg, msglen, "label '%.*s' starts or "
				    "ends with '-'", (int)l, s + start);
				return false;
			}
			start = i + 1;
			continue;
		}
		if (c >= 0x80) {
			snprintf(msg, msglen, "non-ASCII byte in '%.*s': write "
			    "internationalised names as punycode (xn--...)",
			    (int)len, s);
			return false;
		}
		host_byte_describe(c, b, sizeof(b));
		snprintf(msg, msglen, "invalid character %s in '%.*s' (host "
		    "names use letters, digits and '-')", b, (int)len, s);
		return false;
	}
	return true;
}

/* True when the label s[0..len) is what the URL standard calls a number:
 * all decimal digits, or "0x"/"0X" and hex digits only ("0x" alone too). */
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
		if (hex ? !host_is_hex((unsigned char)s[i]) :
		    !(s[i] >= '0' && s[i] <= '9'))
			return false;
	return true;
}

bool
al_name_numeric(const char *s, size_t len)
{
	size_t i = len;

	while (i > 0 && s[i - 1] != '.')
		i--;
	return host_label_numeric(s + i, len - i);
}

bool
al_ip_parse(const char *s, size_t len, int family, struct allowlist_host *h)
{
	char buf[64];
	static const unsigned char mapped[12] =
	    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	memset(h, 0, sizeof(*h));
	if (inet_pton(family, buf, h->addr) != 1)
		return false;
	h->family = family;
	if (family == AF_INET6 && memcmp(h->addr, mapped, sizeof(mapped)) == 0) {
		memmove(h->addr, h->addr + 12, 4);
		memset(h->addr + 4, 0, 12);
		h->family = AF_INET;
	}
	if (inet_ntop(h->family, h->addr, h->text, sizeof(h->text)) == NULL)
		return false;
	return true;
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

	if (i >= len || !(s[i] >= '0' && s[i] <= '9'))
		return -EINVAL;
	if (s[i] == '0' && i + 1 < len && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (s[i] == '0') {
		base = 8;
	}
	start = i;
	for (; i < len; i++) {
		d = util_hexval(s[i]);
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
allowlist_host_parse_ipv4(const char *s, size_t len, struct in_addr *out)
{
	static const uint32_t lastmax[4] = { 0xffffffffu, 0xffffffu, 0xffffu,
	    0xffu };
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

int
allowlist_host_parse_n(const char *host, size_t len,
    struct allowlist_host *out)
{
	struct in_addr v4;
	char msg[8];
	size_t n;

	memset(out, 0, sizeof(*out));
	if (host == NULL || len == 0 || memchr(host, '\0', len) != NULL)
		return -EINVAL;
	if (host[0] == '[') {
		/* No zone id: "%" is no inet_pton syntax anyway. */
		if (len < 3 || host[len - 1] != ']' ||
		    !al_ip_parse(host + 1, len - 2, AF_INET6, out))
			goto bad;
		return 0;
	}
	if (memchr(host, ':', len) != NULL) {
		if (!al_ip_parse(host, len, AF_INET6, out))
			goto bad;
		return 0;
	}
	n = host[len - 1] == '.' ? len - 1 : len;
	if (n == 0 || n > AL_NAME_MAX)
		goto bad;
	/* A numeric last label makes an IPv4 literal in any inet_aton
	 * form (as browsers, curl and getaddrinfo read it), or nothing:
	 * never a name, so it never reaches DNS. */
	if (al_name_numeric(host, n)) {
		if (allowlist_host_parse_ipv4(host, n, &v4) != 0)
			goto bad;
		out->family = AF_INET;
		memcpy(out->addr, &v4, 4);
		if (inet_ntop(AF_INET, out->addr, out->text,
		    sizeof(out->text)) == NULL)
			goto bad;
		return 0;
	}
	if (!al_name_check(host, n, msg, sizeof(msg)))
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char c = host[i];
		out->text[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
	}
	out->text[n] = '\0';
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

int
allowlist_host_parse(const char *host, struct allowlist_host *out)
{
	return allowlist_host_parse_n(host, host != NULL ? strlen(host) : 0,
	    out);
}

/* Domains whose names never resolve publicly (RFC 6761, 6762 App. G,
 * 7686, 8375, 9476) or are used for metadata and intranets. */
static const char *const host_internal_domains[] = {
	"localhost", "internal", "local", "localdomain", "lan", "home",
	"corp", "intranet", "private", "home.arpa", "in-addr.arpa",
	"ip6.arpa", "test", "invalid", "example", "onion", "alt",
};

bool
allowlist_host_internal(const char *name)
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
