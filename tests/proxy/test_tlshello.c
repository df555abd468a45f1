/*
 * proxy/tlshello.c: real ClientHellos captured from Python's ssl, OpenSSL's
 * s_client and curl (tests/proxy/data, capture_hellos.py), fed whole, split
 * at every position, one byte at a time, truncated at every length and
 * re-framed into many records; then variants built from them (several
 * names, empty and invalid names, ECH, repeated extensions) and malformed
 * record layers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hello_util.h"
#include "proxy/tlshello.h"

static struct proxy_tlshello h;

static enum proxy_tlshello_status
feed_all(const uint8_t *p, size_t n)
{
	size_t taken;

	proxy_tlshello_init(&h);
	(void)proxy_tlshello_feed(&h, p, n, &taken);
	assert_int_equal(taken, n < PROXY_TLSHELLO_MAX ? n : PROXY_TLSHELLO_MAX);
	return h.status;
}

/* Fed in pieces of the given size (the last may be shorter). */
static enum proxy_tlshello_status
feed_pieces(const uint8_t *p, size_t n, size_t piece)
{
	size_t off = 0, take, taken;

	proxy_tlshello_init(&h);
	while (off < n && h.status == TLSHELLO_NEED_MORE) {
		take = n - off < piece ? n - off : piece;
		(void)proxy_tlshello_feed(&h, p + off, take, &taken);
		assert_int_equal(taken, take);
		off += take;
	}
	return h.status;
}

static void
expect(enum proxy_tlshello_status got, enum proxy_tlshello_status want,
    const char *what)
{
	if (got != want)
		fail_msg("%s: want %s, got %s (%s)", what,
		    proxy_tlshello_status_name(want),
		    proxy_tlshello_status_name(got), h.why != NULL ? h.why : "");
}

/* --- captured ClientHellos ---------------------------------------------- */

static const struct {
	const char *file;
	enum proxy_tlshello_status status;
	const char *name;
} fixtures[] = {
	{ "hello-python-pypi.bin", TLSHELLO_SNI, "pypi.org" },
	{ "hello-python-tls12.bin", TLSHELLO_SNI, "files.pythonhosted.org" },
	{ "hello-python-nosni.bin", TLSHELLO_NO_SNI, "" },
	{ "hello-python-dot.bin", TLSHELLO_SNI, "PyPI.org." },
	{ "hello-openssl-github.bin", TLSHELLO_SNI, "api.github.com" },
	{ "hello-openssl-nosni.bin", TLSHELLO_NO_SNI, "" },
	{ "hello-openssl-echo.bin", TLSHELLO_SNI, "echo.cordon-test.net" },
	{ "hello-curl-pypi.bin", TLSHELLO_SNI, "pypi.org" },
	{ "hello-curl-ip.bin", TLSHELLO_NO_SNI, "" },
};

static void
check_result(size_t i, const char *how)
{
	char what[128];

	snprintf(what, sizeof(what), "%s %s", fixtures[i].file, how);
	expect(h.status, fixtures[i].status, what);
	assert_string_equal(h.name, fixtures[i].name);
	assert_int_equal(h.namelen, strlen(fixtures[i].name));
}

static void
test_fixtures_whole(void **state)
{
	static uint8_t raw[HELLO_CAP];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		n = hello_load(fixtures[i].file, raw, sizeof(raw));
		assert_true(n > 100);
		(void)feed_all(raw, n);
		check_result(i, "whole");
		/* The bytes held are the bytes sent, to be forwarded. */
		assert_int_equal(h.len, n);
		assert_memory_equal(h.buf, raw, n);
		assert_int_equal(proxy_tlshello_room(&h), 0);
	}
}

/* Every split point into two pieces, then one byte at a time: the status
 * stays need-more until the last byte and is then the same. */
static void
test_fixtures_split(void **state)
{
	static uint8_t raw[HELLO_CAP];
	size_t n, taken;

	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		n = hello_load(fixtures[i].file, raw, sizeof(raw));
		for (size_t cut = 1; cut < n; cut++) {
			proxy_tlshello_init(&h);
			expect(proxy_tlshello_feed(&h, raw, cut, &taken),
			    TLSHELLO_NEED_MORE, "first piece");
			(void)proxy_tlshello_feed(&h, raw + cut, n - cut,
			    &taken);
			check_result(i, "split");
		}
		proxy_tlshello_init(&h);
		for (size_t k = 0; k < n; k++) {
			if (h.status != TLSHELLO_NEED_MORE)
				fail_msg("%s: final after %zu of %zu bytes",
				    fixtures[i].file, k, n);
			(void)proxy_tlshello_feed(&h, raw + k, 1, &taken);
		}
		check_result(i, "byte by byte");
	}
}

/* Every proper prefix is need-more; at EOF it is malformed (truncated). */
static void
test_fixtures_truncated(void **state)
{
	static uint8_t raw[HELLO_CAP];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		n = hello_load(fixtures[i].file, raw, sizeof(raw));
		for (size_t cut = 1; cut < n; cut++) {
			expect(feed_all(raw, cut), TLSHELLO_NEED_MORE, "prefix");
			expect(proxy_tlshello_finish(&h), TLSHELLO_MALFORMED,
			    "prefix at EOF");
			assert_string_equal(h.why, "truncated");
		}
	}
}

/* The same message in records of 1 .. 600 bytes, fed whole and in pieces
 * that do not line up with the records. */
static void
test_fixtures_records(void **state)
{
	static uint8_t raw[HELLO_CAP], msg[HELLO_CAP], rec[HELLO_CAP];
	static const size_t sizes[] = { 1, 2, 3, 4, 5, 7, 64, 100, 255, 600 };
	size_t n, m, r;

	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		n = hello_load(fixtures[i].file, raw, sizeof(raw));
		m = hello_message(raw, n, msg, sizeof(msg));
		assert_true(m > 0);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			r = hello_frame(msg, m, sizes[s], rec, sizeof(rec));
			/* 1-byte records: six times the message, still
			 * under the cap for these. */
			assert_true(r > 0 && r <= PROXY_TLSHELLO_MAX);
			(void)feed_all(rec, r);
			check_result(i, "records");
			(void)feed_pieces(rec, r, 3);
			check_result(i, "records, 3-byte pieces");
			(void)feed_pieces(rec, r, 1);
			check_result(i, "records, 1-byte pieces");
		}
	}
}

/* --- variants built from a real ClientHello ----------------------------- */

static uint8_t base_msg[HELLO_CAP];
static size_t base_len;

static void
load_base(void)
{
	static uint8_t raw[HELLO_CAP];
	size_t n = hello_load("hello-python-pypi.bin", raw, sizeof(raw));

	base_len = hello_message(raw, n, base_msg, sizeof(base_msg));
	assert_true(base_len > 0);
}

/* base with extension drop removed and add (data) appended, in one
 * record; returns the parse status. */
static enum proxy_tlshello_status
variant(int drop, int add, const uint8_t *data, size_t len)
{
	static uint8_t msg[HELLO_CAP], rec[HELLO_CAP];
	size_t m, r;

	m = hello_rebuild(base_msg, base_len, drop, add, data, len, msg,
	    sizeof(msg));
	assert_true(m > 0);
	r = hello_frame(msg, m, 16384, rec, sizeof(rec));
	assert_true(r > 0);
	return feed_all(rec, r);
}

static enum proxy_tlshello_status
variant_names(const char *const *names, size_t n)
{
	uint8_t sni[2048];
	size_t s = hello_sni_data(names, n, sni, sizeof(sni));

	assert_true(s > 0);
	return variant(0, 0, sni, s);
}

static void
test_names(void **state)
{
	static const char *const two[] = { "pypi.org", "evil.example.com" };
	static const char *const same_twice[] = { "pypi.org", "pypi.org" };
	static const char *const empty[] = { "" };
	static const char *const empty_and_one[] = { "", "pypi.org" };
	static const char *const upper[] = { "PyPI.ORG" };
	char long_name[300], nul_name[32];
	const char *one[1];

	(void)state;
	load_base();
	expect(variant_names(two, 2), TLSHELLO_SNI_MULTIPLE, "two names");
	assert_string_equal(h.name, "");
	expect(variant_names(same_twice, 2), TLSHELLO_SNI_MULTIPLE,
	    "the same name twice");
	expect(variant_names(empty, 1), TLSHELLO_SNI_EMPTY, "empty name");
	expect(variant_names(empty_and_one, 2), TLSHELLO_SNI_MULTIPLE,
	    "empty name and a name");
	expect(variant_names(upper, 1), TLSHELLO_SNI, "case kept");
	assert_string_equal(h.name, "PyPI.ORG");
	/* 255 bytes is kept, 256 is no DNS name. */
	memset(long_name, 'a', sizeof(long_name));
	long_name[255] = '\0';
	one[0] = long_name;
	expect(variant_names(one, 1), TLSHELLO_SNI, "255-byte name");
	assert_int_equal(h.namelen, 255);
	long_name[255] = 'a';
	long_name[256] = '\0';
	expect(variant_names(one, 1), TLSHELLO_SNI_INVALID, "256-byte name");
	/* A NUL inside: "pypi.org\0evil" must not read as "pypi.org". */
	{
		uint8_t sni[64] = { 0, 16, 0, 0, 13 };
		memcpy(nul_name, "pypi.org\0evil", 13);
		memcpy(sni + 5, nul_name, 13);
		sni[1] = 16;
		expect(variant(0, 0, sni, 18), TLSHELLO_SNI_INVALID,
		    "NUL in name");
	}
	/* No server_name at all. */
	expect(variant(0, -1, NULL, 0), TLSHELLO_NO_SNI, "no server_name");
}

static void
test_ech(void **state)
{
	static const uint8_t ech[] = { 0, 1, 0, 1, 0x42, 0, 0 };
	static const int types[] = { 0xfe0d, 0xfe08, 0xfe0a, 0xfe0c, 0xffce };
	static const char *const two[] = { "a.example.com", "b.example.com" };
	uint8_t sni[256];
	size_t s;

	(void)state;
	load_base();
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		expect(variant(-1, types[i], ech, sizeof(ech)), TLSHELLO_ECH,
		    "ECH beside a server_name");
		assert_string_equal(h.name, "");
	}
	expect(variant(0, 0xfe0d, ech, sizeof(ech)), TLSHELLO_ECH,
	    "ECH without server_name");
	/* Neighbours of the ECH code points are ordinary extensions. */
	expect(variant(-1, 0xfe07, ech, sizeof(ech)), TLSHELLO_SNI, "0xfe07");
	expect(variant(-1, 0xfe0e, ech, sizeof(ech)), TLSHELLO_SNI, "0xfe0e");
	/* ECH ranks before several names. */
	s = hello_sni_data(two, 2, sni, sizeof(sni));
	{
		static uint8_t msg[HELLO_CAP], msg2[HELLO_CAP], rec[HELLO_CAP];
		size_t m = hello_rebuild(base_msg, base_len, 0, 0, sni, s, msg,
		    sizeof(msg));
		m = hello_rebuild(msg, m, -1, 0xfe0d, ech, sizeof(ech), msg2,
		    sizeof(msg2));
		expect(feed_all(rec, hello_frame(msg2, m, 16384, rec,
		    sizeof(rec))), TLSHELLO_ECH, "ECH and two names");
	}
}

static void
test_malformed_extensions(void **state)
{
	static const uint8_t sni_ok[] = { 0, 11, 0, 0, 8, 'p', 'y', 'p', 'i',
	    '.', 'o', 'r', 'g' };
	static const uint8_t list_long[] = { 0, 12, 0, 0, 8, 'p', 'y', 'p',
	    'i', '.', 'o', 'r', 'g' };
	static const uint8_t list_short[] = { 0, 10, 0, 0, 8, 'p', 'y', 'p',
	    'i', '.', 'o', 'r', 'g' };
	static const uint8_t name_long[] = { 0, 11, 0, 0, 9, 'p', 'y', 'p',
	    'i', '.', 'o', 'r', 'g' };
	static const uint8_t type1[] = { 0, 11, 1, 0, 8, 'p', 'y', 'p', 'i',
	    '.', 'o', 'r', 'g' };
	static const uint8_t trailing[] = { 0, 11, 0, 0, 8, 'p', 'y', 'p',
	    'i', '.', 'o', 'r', 'g', 0 };
	static const uint8_t list_empty[] = { 0, 0 };
	static const uint8_t one_byte[] = { 0 };

	(void)state;
	load_base();
	expect(variant(0, 0, sni_ok, sizeof(sni_ok)), TLSHELLO_SNI, "control");
	expect(variant(0, 0, list_long, sizeof(list_long)), TLSHELLO_MALFORMED,
	    "list longer than the extension");
	expect(variant(0, 0, list_short, sizeof(list_short)),
	    TLSHELLO_MALFORMED, "list shorter than the extension");
	expect(variant(0, 0, name_long, sizeof(name_long)), TLSHELLO_MALFORMED,
	    "name longer than the list");
	expect(variant(0, 0, type1, sizeof(type1)), TLSHELLO_MALFORMED,
	    "name type 1");
	expect(variant(0, 0, trailing, sizeof(trailing)), TLSHELLO_MALFORMED,
	    "byte after the list");
	expect(variant(0, 0, list_empty, sizeof(list_empty)),
	    TLSHELLO_MALFORMED, "empty list");
	expect(variant(0, 0, NULL, 0), TLSHELLO_MALFORMED,
	    "empty server_name extension");
	expect(variant(0, 0, one_byte, 1), TLSHELLO_MALFORMED, "1-byte data");
	/* A second server_name (the server might read the other one). */
	expect(variant(-1, 0, sni_ok, sizeof(sni_ok)), TLSHELLO_MALFORMED,
	    "server_name twice");
	assert_string_equal(h.why, "extension: repeated");
	assert_string_equal(h.name, "");	/* the first one is void */
	/* Any repeated extension (supported_groups, 10, is in the base). */
	expect(variant(-1, 10, one_byte, 1), TLSHELLO_MALFORMED,
	    "supported_groups twice");
}

/* Edits of the base message's fixed fields and lengths. */
static enum proxy_tlshello_status
edited(size_t off, uint8_t v)
{
	static uint8_t msg[HELLO_CAP], rec[HELLO_CAP];

	memcpy(msg, base_msg, base_len);
	msg[off] = v;
	return feed_all(rec, hello_frame(msg, base_len, 16384, rec,
	    sizeof(rec)));
}

static void
test_malformed_body(void **state)
{
	static uint8_t msg[HELLO_CAP], rec[HELLO_CAP];
	size_t sid, cs, comp, ext, m;

	(void)state;
	load_base();
	sid = 4 + 2 + 32;
	cs = sid + 1 + base_msg[sid];
	comp = cs + 2 + ((size_t)base_msg[cs] << 8 | base_msg[cs + 1]);
	ext = comp + 1 + base_msg[comp];
	expect(edited(0, 2), TLSHELLO_MALFORMED, "ServerHello type");
	expect(edited(4, 2), TLSHELLO_MALFORMED, "legacy_version 2.x");
	expect(edited(sid, 33), TLSHELLO_MALFORMED, "session id of 33");
	expect(edited(cs + 1, (uint8_t)(base_msg[cs + 1] | 1)),
	    TLSHELLO_MALFORMED, "odd cipher suites length");
	expect(edited(comp, 0), TLSHELLO_MALFORMED, "no compression method");
	expect(edited(ext + 1, (uint8_t)(base_msg[ext + 1] + 1)),
	    TLSHELLO_MALFORMED, "extensions block longer than the message");
	expect(edited(ext + 1, (uint8_t)(base_msg[ext + 1] - 1)),
	    TLSHELLO_MALFORMED, "extensions block shorter than the message");
	/* Without extensions at all (old clients): valid, no name. */
	memcpy(msg, base_msg, ext);
	m = ext;
	msg[1] = (uint8_t)((m - 4) >> 16);
	msg[2] = (uint8_t)((m - 4) >> 8);
	msg[3] = (uint8_t)(m - 4);
	expect(feed_all(rec, hello_frame(msg, m, 16384, rec, sizeof(rec))),
	    TLSHELLO_NO_SNI, "no extensions");
	/* One byte where the extensions would start. */
	msg[m++] = 0;
	msg[3] = (uint8_t)(m - 4);
	expect(feed_all(rec, hello_frame(msg, m, 16384, rec, sizeof(rec))),
	    TLSHELLO_MALFORMED, "one byte of extensions");
	/* A message too short to be a ClientHello. */
	memcpy(msg, "\x01\x00\x00\x28", 4);
	memset(msg + 4, 0, 40);
	expect(feed_all(rec, hello_frame(msg, 44, 16384, rec, sizeof(rec))),
	    TLSHELLO_MALFORMED, "40-byte body");
}

/* --- the record layer ---------------------------------------------------- */

static const struct {
	const char *what;
	const char *bytes;
	size_t len;
	enum proxy_tlshello_status status;
} raw_rows[] = {
#define ROW(w, b, s) { w, b, sizeof(b) - 1, s }
	ROW("HTTP", "GET / HTTP/1.1\r\n", TLSHELLO_NOT_TLS),
	ROW("SSH banner", "SSH-2.0-OpenSSH_9.2\r\n", TLSHELLO_NOT_TLS),
	ROW("SSLv2-style hello", "\x80\x2e\x01\x03\x01\x00\x15",
	    TLSHELLO_NOT_TLS),
	ROW("NUL", "\x00", TLSHELLO_NOT_TLS),
	ROW("junk before a record", "x\x16\x03\x01", TLSHELLO_NOT_TLS),
	/* A record of another TLS type first: a server's TLS stack may
	 * skip it and read a ClientHello behind it, so it is a malformed
	 * hello (refused), on its first byte. */
	ROW("alert record", "\x15\x03\x01\x00\x02\x02\x28", TLSHELLO_MALFORMED),
	ROW("application data", "\x17\x03\x03\x00\x01x", TLSHELLO_MALFORMED),
	ROW("empty CCS", "\x14\x03\x03\x00\x00", TLSHELLO_MALFORMED),
	ROW("empty application data", "\x17\x03\x03\x00\x00",
	    TLSHELLO_MALFORMED),
	ROW("empty alert", "\x15\x03\x03\x00\x00", TLSHELLO_MALFORMED),
	ROW("heartbeat", "\x18\x03\x03\x00\x03\x01\x00\x00",
	    TLSHELLO_MALFORMED),
	ROW("tls12_cid", "\x19\x03\x03\x00\x00", TLSHELLO_MALFORMED),
	ROW("CCS byte alone", "\x14", TLSHELLO_MALFORMED),
	ROW("type 26", "\x1a\x03\x03\x00\x00", TLSHELLO_NOT_TLS),
	ROW("type 19", "\x13\x03\x03\x00\x00", TLSHELLO_NOT_TLS),
	ROW("one byte 0x16", "\x16", TLSHELLO_NEED_MORE),
	ROW("record version 2", "\x16\x02", TLSHELLO_MALFORMED),
	ROW("record version 0x16 0x00", "\x16\x00\x01", TLSHELLO_MALFORMED),
	ROW("partial header", "\x16\x03\x01\x00", TLSHELLO_NEED_MORE),
	ROW("empty record", "\x16\x03\x01\x00\x00", TLSHELLO_MALFORMED),
	ROW("record over 2^14", "\x16\x03\x01\x40\x01", TLSHELLO_MALFORMED),
	ROW("record of 2^14", "\x16\x03\x01\x40\x00", TLSHELLO_NEED_MORE),
	ROW("server hello", "\x16\x03\x03\x00\x04\x02\x00\x00\x26",
	    TLSHELLO_MALFORMED),
	ROW("client hello of 0", "\x16\x03\x01\x00\x04\x01\x00\x00\x00",
	    TLSHELLO_MALFORMED),
	ROW("client hello of 40", "\x16\x03\x01\x00\x04\x01\x00\x00\x28",
	    TLSHELLO_MALFORMED),
	ROW("client hello of 41", "\x16\x03\x01\x00\x04\x01\x00\x00\x29",
	    TLSHELLO_NEED_MORE),
	ROW("client hello of 16375", "\x16\x03\x01\x00\x04\x01\x00\x3f\xf7",
	    TLSHELLO_NEED_MORE),
	ROW("client hello of 16376", "\x16\x03\x01\x00\x04\x01\x00\x3f\xf8",
	    TLSHELLO_TOO_LARGE),
	ROW("client hello of 16 MiB", "\x16\x03\x01\x00\x04\x01\xff\xff\xff",
	    TLSHELLO_TOO_LARGE),
	ROW("header split, then an alert", "\x16\x03\x01\x00\x02\x01\x00"
	    "\x15\x03\x01\x00\x02", TLSHELLO_MALFORMED),
#undef ROW
};

static void
test_record_layer(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(raw_rows) / sizeof(raw_rows[0]); i++) {
		expect(feed_all((const uint8_t *)raw_rows[i].bytes,
		    raw_rows[i].len), raw_rows[i].status, raw_rows[i].what);
		expect(feed_pieces((const uint8_t *)raw_rows[i].bytes,
		    raw_rows[i].len, 1), raw_rows[i].status, raw_rows[i].what);
	}
	/* Not TLS is decided on the first byte, and everything fed is held
	 * (to pass through). */
	proxy_tlshello_init(&h);
	assert_int_equal(proxy_tlshello_feed(&h, "GET", 3, NULL),
	    TLSHELLO_NOT_TLS);
	assert_int_equal(h.len, 3);
	assert_int_equal(proxy_tlshello_room(&h), 0);
	assert_int_equal(proxy_tlshello_feed(&h, "more", 4, NULL),
	    TLSHELLO_NOT_TLS);
	assert_int_equal(h.len, 3);
	/* Nothing at all, then EOF: still undecided (the caller's case). */
	proxy_tlshello_init(&h);
	assert_int_equal(proxy_tlshello_feed(&h, "", 0, NULL),
	    TLSHELLO_NEED_MORE);
	assert_int_equal(proxy_tlshello_finish(&h), TLSHELLO_NEED_MORE);
}

/* Records around the ClientHello: an alert inside it, bytes after it in
 * its own record, a record after it (kept), a full buffer of tiny
 * records. */
static void
test_record_sequences(void **state)
{
	static uint8_t msg[HELLO_CAP], rec[HELLO_CAP], buf[HELLO_CAP];
	size_t r;

	(void)state;
	load_base();
	/* Split in two records with a ChangeCipherSpec between. */
	r = hello_frame(base_msg, 100, 16384, rec, sizeof(rec));
	memcpy(rec + r, "\x14\x03\x03\x00\x01\x01", 6);
	r += 6;
	r += hello_frame(base_msg + 100, base_len - 100, 16384, rec + r,
	    sizeof(rec) - r);
	expect(feed_all(rec, r), TLSHELLO_MALFORMED, "CCS inside the hello");
	/* A byte after the message in the same record. */
	memcpy(msg, base_msg, base_len);
	msg[base_len] = 0x14;
	r = hello_frame(msg, base_len + 1, 16384, rec, sizeof(rec));
	expect(feed_all(rec, r), TLSHELLO_MALFORMED, "byte after the hello");
	/* A record after it (TLS 1.3 middlebox compatibility sends a CCS):
	 * parsed up to the hello, held whole. */
	r = hello_frame(base_msg, base_len, 16384, rec, sizeof(rec));
	memcpy(rec + r, "\x14\x03\x03\x00\x01\x01", 6);
	expect(feed_all(rec, r + 6), TLSHELLO_SNI, "CCS after the hello");
	assert_int_equal(h.len, r + 6);
	/* A buffer of 1-byte records that never completes the hello. */
	memcpy(msg, "\x01\x00\x3f\xf7", 4);	/* 16375: fits alone */
	memset(msg + 4, 0, 16375);
	r = hello_frame(msg, 3000, 1, buf, sizeof(buf));
	assert_true(r > PROXY_TLSHELLO_MAX);
	expect(feed_all(buf, r), TLSHELLO_TOO_LARGE, "6-byte records");
	assert_int_equal(h.len, PROXY_TLSHELLO_MAX);
	/* The biggest hello that fits: 16375 in one record, all zeros
	 * (malformed body, but the walk reaches it). */
	r = hello_frame(msg, 4 + 16375, 16384, buf, sizeof(buf));
	assert_int_equal(r, PROXY_TLSHELLO_MAX);
	expect(feed_all(buf, r), TLSHELLO_MALFORMED, "largest hello");
	assert_string_equal(h.why, "legacy_version");
}

/* --- the SNI check's name comparison ------------------------------------ */

static void
test_name_match(void **state)
{
	static const struct {
		const char *name, *host;
		bool match;
	} rows[] = {
		{ "pypi.org", "pypi.org", true },
		{ "PyPI.ORG", "pypi.org", true },
		{ "pypi.org.", "pypi.org", true },
		{ "pypi.org", "pypi.org.", true },
		{ "PYPI.ORG.", "pypi.org.", true },
		{ "pypi.org..", "pypi.org", false },	/* one dot only */
		{ "pypi.org", "pypi.org..", false },
		{ "files.pypi.org", "pypi.org", false },
		{ "pypi.org", "files.pypi.org", false },
		{ "pypi.or", "pypi.org", false },
		{ "pypi.orgx", "pypi.org", false },
		{ "xpypi.org", "pypi.org", false },
		{ "*.pypi.org", "a.pypi.org", false },	/* no wildcard */
		{ "", "pypi.org", false },
		{ ".", "", false },
		{ "", "", false },
		{ "pypi-org", "pypi.org", false },
		{ "p\xc3\xbfpi.org", "p\xc3\x9fpi.org", false },	/* no folding */
		{ "xn--bcher-kva.example", "XN--BCHER-KVA.example", true },
		{ "127.0.0.1", "127.0.0.1", true },	/* text only */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (proxy_tlshello_name_match(rows[i].name,
		    strlen(rows[i].name), rows[i].host) != rows[i].match)
			fail_msg("'%s' vs '%s': want %d", rows[i].name,
			    rows[i].host, rows[i].match);
	/* Only namelen bytes count. */
	assert_true(proxy_tlshello_name_match("pypi.orgXYZ", 8, "pypi.org"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_whole),
		cmocka_unit_test(test_fixtures_split),
		cmocka_unit_test(test_fixtures_truncated),
		cmocka_unit_test(test_fixtures_records),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_ech),
		cmocka_unit_test(test_malformed_extensions),
		cmocka_unit_test(test_malformed_body),
		cmocka_unit_test(test_record_layer),
		cmocka_unit_test(test_record_sequences),
		cmocka_unit_test(test_name_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
