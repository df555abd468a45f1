/*
 * ClientHello fixtures and rewriting for tests (hello_util.h). Rebuilding
 * works on the message: everything up to the extensions is kept as it
 * was, the extensions block and the two length fields are written anew.
 */
#include "hello_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned
get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static void
put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

size_t
hello_load(const char *name, uint8_t *buf, size_t cap)
{
	const char *root = getenv("CORDON_SOURCE_ROOT");
	char path[1024];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/proxy/data/%s",
	    root != NULL ? root : ".", name);
	f = fopen(path, "rb");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

size_t
hello_message(const uint8_t *raw, size_t n, uint8_t *msg, size_t cap)
{
	size_t off = 0, got = 0, rec, need = 0;

	while (off + 5 <= n) {
		rec = get16(raw + off + 3);
		if (raw[off] != 0x16 || off + 5 + rec > n || got + rec > cap)
			return 0;
		memcpy(msg + got, raw + off + 5, rec);
		got += rec;
		off += 5 + rec;
		if (got >= 4) {
			need = 4 + ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 |
			    msg[3]);
			if (got >= need)
				return need;
		}
	}
	return 0;
}

size_t
hello_frame(const uint8_t *msg, size_t n, size_t recsize, uint8_t *out,
    size_t cap)
{
	size_t off = 0, w = 0, take;

	while (off < n) {
		take = n - off < recsize ? n - off : recsize;
		if (w + 5 + take > cap)
			return 0;
		out[w] = 0x16;
		out[w + 1] = 3;
		out[w + 2] = 1;
		put16(out + w + 3, take);
		memcpy(out + w + 5, msg + off, take);
		w += 5 + take;
		off += take;
	}
	return w;
}

size_t
hello_sni_data(const char *const *names, size_t nnames, uint8_t *out,
    size_t cap)
{
	size_t w = 2, len;

	for (size_t i = 0; i < nnames; i++) {
		len = strlen(names[i]);
		if (w + 3 + len > cap)
			return 0;
		out[w] = 0;
		put16(out + w + 1, len);
		memcpy(out + w + 3, names[i], len);
		w += 3 + len;
	}
	put16(out, w - 2);
	return w;
}

/* Offset of the extensions block's length field in msg, or 0. */
static size_t
hello_ext_offset(const uint8_t *msg, size_t n)
{
	size_t p = 4 + 2 + 32;

	if (n < p + 1)
		return 0;
	p += 1 + msg[p];			/* session id */
	if (n < p + 2)
		return 0;
	p += 2 + get16(msg + p);		/* cipher suites */
	if (n < p + 1)
		return 0;
	p += 1 + msg[p];			/* compression */
	return p + 2 <= n ? p : 0;
}

size_t
hello_rebuild(const uint8_t *msg, size_t n, int drop, int add,
    const uint8_t *add_data, size_t add_len, uint8_t *out, size_t cap)
{
	size_t p = hello_ext_offset(msg, n), end, w, t, l;

	if (p == 0 || p + 2 > cap)
		return 0;
	end = p + 2 + get16(msg + p);
	if (end > n)
		return 0;
	memcpy(out, msg, p + 2);
	w = p + 2;
	for (size_t q = p + 2; q + 4 <= end; q += 4 + l) {
		t = get16(msg + q);
		l = get16(msg + q + 2);
		if (q + 4 + l > end)
			return 0;
		if ((int)t == drop)
			continue;
		if (w + 4 + l > cap)
			return 0;
		memcpy(out + w, msg + q, 4 + l);
		w += 4 + l;
	}
	if (add >= 0) {
		if (w + 4 + add_len > cap)
			return 0;
		put16(out + w, (size_t)add);
		put16(out + w + 2, add_len);
		if (add_len > 0)
			memcpy(out + w + 4, add_data, add_len);
		w += 4 + add_len;
	}
	put16(out + p, w - p - 2);
	out[1] = (uint8_t)((w - 4) >> 16);
	out[2] = (uint8_t)((w - 4) >> 8);
	out[3] = (uint8_t)(w - 4);
	return w;
}

size_t
hello_with_names(const char *fixture, const char *const *names,
    size_t nnames, uint8_t *out, size_t cap)
{
	static uint8_t raw[HELLO_CAP], msg[HELLO_CAP], msg2[HELLO_CAP];
	uint8_t sni[2048];
	size_t n, m, s = 0;

	n = hello_load(fixture, raw, sizeof(raw));
	m = n > 0 ? hello_message(raw, n, msg, sizeof(msg)) : 0;
	if (m == 0)
		return 0;
	if (nnames > 0) {
		s = hello_sni_data(names, nnames, sni, sizeof(sni));
		if (s == 0)
			return 0;
	}
	m = hello_rebuild(msg, m, 0, nnames > 0 ? 0 : -1, sni, s, msg2,
	    sizeof(msg2));
	return m > 0 ? hello_frame(msg2, m, 16384, out, cap) : 0;
}
