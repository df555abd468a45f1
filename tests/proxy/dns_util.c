/* Test helpers for the closed resolver's suites (dns_util.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "common/util.h"
#include "dns_util.h"

size_t
dns_hex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (const char *p = hex; *p != '\0';) {
		if (*p == ' ' || *p == '|' || *p == '\n') {
			p++;
			continue;
		}
		if (*p == '\'') {
			for (p++; *p != '\'' && *p != '\0'; p++) {
				if (n >= cap)
					fail_msg("dns_hex: over %zu bytes", cap);
				out[n++] = (uint8_t)*p;
			}
			if (*p != '\'')
				fail_msg("dns_hex: unclosed quote in %s", hex);
			p++;
			continue;
		}
		if (util_hexval(p[0]) < 0 || util_hexval(p[1]) < 0)
			fail_msg("dns_hex: bad hex at \"%.8s\"", p);
		if (n >= cap)
			fail_msg("dns_hex: over %zu bytes", cap);
		out[n++] = (uint8_t)(util_hexval(p[0]) << 4 | util_hexval(p[1]));
		p += 2;
	}
	return n;
}

static void
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

size_t
dns_query(uint8_t *out, size_t cap, uint16_t id, const char *name,
    uint16_t qtype, uint16_t qclass, int edns_udp, uint8_t version,
    bool do_bit)
{
	size_t n = 12;
	const char *p = name;

	assert_true(cap >= 12 + 255 + 4 + 11);
	memset(out, 0, 12);
	put16(out, id);
	out[2] = 0x01;		/* RD */
	put16(out + 4, 1);
	put16(out + 10, edns_udp >= 0 ? 1 : 0);
	while (*p != '\0') {
		const char *dot = strchr(p, '.');
		size_t len = dot != NULL ? (size_t)(dot - p) : strlen(p);

		assert_true(len >= 1 && len <= 63);
		assert_true(n + 1 + len < cap);
		out[n++] = (uint8_t)len;
		memcpy(out + n, p, len);
		n += len;
		p += len;
		if (*p == '.')
			p++;
	}
	out[n++] = 0;
	put16(out + n, qtype);
	put16(out + n + 2, qclass);
	n += 4;
	if (edns_udp >= 0) {
		out[n++] = 0;			/* root owner */
		put16(out + n, 41);		/* OPT */
		put16(out + n + 2, (unsigned)edns_udp);
		out[n + 4] = 0;			/* extended RCODE */
		out[n + 5] = version;
		put16(out + n + 6, do_bit ? 0x8000 : 0);
		put16(out + n + 8, 0);		/* RDLENGTH */
		n += 10;
	}
	return n;
}

const char *
dns_tohex(const uint8_t *p, size_t n)
{
	static char buf[2 * 4096 + 1];
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n && 2 * i + 2 < sizeof(buf); i++) {
		buf[2 * i] = digits[p[i] >> 4];
		buf[2 * i + 1] = digits[p[i] & 15];
	}
	buf[2 * i] = '\0';
	return buf;
}
