/*
 * Host names and IP literals: the letters-digits-hyphen check (with a
 * message saying what is wrong, for the file parser) and the normalisation
 * of request hosts that the matcher and the proxy share.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/internal.h"

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

bool
al_name_numeric(const char *s, size_t len)
{
	size_t i = len;

	while (i > 0 && s[i - 1] != '.')
		i--;
	if (i == len)
		return false;
	if (len - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		for (size_t j = i + 2; j < len; j++)
			if (!host_is_hex((unsigned char)s[j]))
				return false;
		return true;
	}
	for (size_t j = i; j < len; j++)
		if (s[j] < '0' || s[j] > '9')
			return false;
	return true;
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

int
allowlist_host_parse(const char *host, struct allowlist_host *out)
{
	char msg[8];
	size_t len = host != NULL ? strlen(host) : 0;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return -EINVAL;
	if (host[0] == '[') {
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
	if (host[len - 1] == '.')
		len--;
	if (len == 0 || len > AL_NAME_MAX)
		goto bad;
	if (al_name_numeric(host, len)) {
		if (!al_ip_parse(host, len, AF_INET, out))
			goto bad;
		return 0;
	}
	if (!al_name_check(host, len, msg, sizeof(msg)))
		goto bad;
	for (size_t i = 0; i < len; i++) {
		char c = host[i];
		out->text[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
	}
	out->text[len] = '\0';
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}
