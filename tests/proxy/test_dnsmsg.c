/*
 * proxy/dnsmsg.c: queries parsed from wire bytes written by hand after
 * RFC 1035 and 6891 (a row per well-formed shape, a row per broken rule),
 * answers compared byte for byte with hand-made expected messages (every
 * rcode, EDE options, BADVERS, the DO and CD bits, case kept in the echo),
 * truncation at the UDP limits, and the TCP framing split at every byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns_util.h"
#include "proxy/dnsmsg.h"

/* Pieces of messages (RFC 1035 4.1). ID 0x1234; flags 0100: RD. */
#define HDR(qd, an, ns, ar)	"1234 0100 " qd " " an " " ns " " ar " "
#define HDR1			HDR("0001", "0000", "0000", "0000")
#define HDR1E			HDR("0001", "0000", "0000", "0001")
#define EXAMPLE_COM		"07 'example' 03 'com' 00 "
#define Q_A			EXAMPLE_COM "0001 0001 "
#define Q_AAAA			EXAMPLE_COM "001c 0001 "
/* OPT (RFC 6891 6.1.2): root owner, type 41, class = UDP size, TTL =
 * extended RCODE, version, flags (DO = 8000), RDLENGTH. */
#define OPT(udp, ver, flags, rdlen)	"00 0029 " udp " 00 " ver " " flags \
					" " rdlen " "
#define OPT1232			OPT("04d0", "00", "0000", "0000")
/* A COOKIE option (RFC 7873): code 10, 8 bytes of client cookie. */
#define COOKIE			"000a 0008 0102030405060708 "

static uint8_t wire[8192], out[2 + 65536], want[8192];

struct parse_row {
	const char *what;
	const char *hex;
	enum proxy_dnsmsg_status status;
	const char *why;	/* NULL for OK */
};

static const struct parse_row parse_rows[] = {
	/* Shapes that parse. */
	{ "A, no EDNS", HDR1 Q_A, DNSMSG_OK, NULL },
	{ "A, EDNS 1232", HDR1E Q_A OPT1232, DNSMSG_OK, NULL },
	{ "EDNS with a cookie", HDR1E Q_A OPT("1000", "00", "8000", "000c")
	    COOKIE, DNSMSG_OK, NULL },
	{ "EDNS, two options", HDR1E Q_A OPT("0200", "00", "0000", "0010")
	    COOKIE "000c 0000 ", DNSMSG_OK, NULL },
	{ "OPT owner compressed to the question's root byte",
	    HDR1E Q_A "c0 18 0029 04d0 00 00 0000 0000", DNSMSG_OK, NULL },
	{ "root question", HDR1 "00 0002 0001", DNSMSG_OK, NULL },
	{ "class CH", HDR1 EXAMPLE_COM "0010 0003", DNSMSG_OK, NULL },
	{ "type ANY", HDR1 EXAMPLE_COM "00ff 0001", DNSMSG_OK, NULL },
	{ "TC and Z bits in a query are ignored",
	    "1234 0340 0001 0000 0000 0000" Q_A, DNSMSG_OK, NULL },
	/* Dropped: nothing to answer. */
	{ "empty", "", DNSMSG_DROP, "short" },
	{ "11 bytes", "1234 0100 0001 0000 0000 00", DNSMSG_DROP, "short" },
	{ "a response (QR)", "1234 8100 0001 0000 0000 0000" Q_A,
	    DNSMSG_DROP, "response" },
	{ "a response with a bad opcode", "1234 a000 0001 0000 0000 0000",
	    DNSMSG_DROP, "response" },
	/* Opcodes. */
	{ "IQUERY", "1234 0900 0001 0000 0000 0000" Q_A, DNSMSG_NOTIMP,
	    "opcode" },
	{ "STATUS", "1234 1000 0000 0000 0000 0000", DNSMSG_NOTIMP,
	    "opcode" },
	{ "NOTIFY", "1234 2000 0001 0001 0000 0000", DNSMSG_NOTIMP,
	    "opcode" },
	{ "UPDATE", "1234 2800 0001 0000 0001 0000", DNSMSG_NOTIMP,
	    "opcode" },
	/* Counts. */
	{ "QDCOUNT 0", HDR("0000", "0000", "0000", "0000"), DNSMSG_FORMERR,
	    "qdcount" },
	{ "QDCOUNT 2", HDR("0002", "0000", "0000", "0000") Q_A Q_A,
	    DNSMSG_FORMERR, "qdcount" },
	{ "QDCOUNT 65535", HDR("ffff", "0000", "0000", "0000") Q_A,
	    DNSMSG_FORMERR, "qdcount" },
	{ "ANCOUNT 1", HDR("0001", "0001", "0000", "0000") Q_A
	    "c00c 0001 0001 00000000 0004 01020304", DNSMSG_FORMERR,
	    "ancount" },
	{ "NSCOUNT 1", HDR("0001", "0000", "0001", "0000") Q_A,
	    DNSMSG_FORMERR, "nscount" },
	{ "ARCOUNT 65535", HDR("0001", "0000", "0000", "ffff") Q_A OPT1232,
	    DNSMSG_FORMERR, "counts" },
	{ "ARCOUNT 3 in 29 + 11 bytes", HDR("0001", "0000", "0000", "0003")
	    Q_A OPT1232, DNSMSG_FORMERR, "counts" },
	{ "ARCOUNT 2 with one record", HDR("0001", "0000", "0000", "0002")
	    Q_A OPT1232, DNSMSG_FORMERR, "truncated" },
	{ "ARCOUNT 1 and no record", HDR1E Q_A, DNSMSG_FORMERR,
	    "truncated" },
	/* Names. */
	{ "label past the end", HDR1 "07 'exam'", DNSMSG_FORMERR,
	    "truncated" },
	{ "no terminating label", HDR1 "07 'example' 03 'com'",
	    DNSMSG_FORMERR, "truncated" },
	{ "type and class missing", HDR1 EXAMPLE_COM "0001",
	    DNSMSG_FORMERR, "truncated" },
	{ "label of 64", HDR1 "40 '0123456789012345678901234567890123456789"
	    "012345678901234567890123' 00 0001 0001", DNSMSG_FORMERR,
	    "label-type" },
	{ "label type 01 (extended, 0x41)", HDR1 "41 01 00 0001 0001",
	    DNSMSG_FORMERR, "label-type" },
	{ "label type 10 (0x80)", HDR1 "80 00 0001 0001", DNSMSG_FORMERR,
	    "label-type" },
	{ "pointer into the header", HDR1 "c0 05 0001 0001",
	    DNSMSG_FORMERR, "pointer-header" },
	{ "pointer to offset 0", HDR1 "c0 00 0001 0001", DNSMSG_FORMERR,
	    "pointer-header" },
	{ "pointer to itself", HDR1 "c0 0c 0001 0001", DNSMSG_FORMERR,
	    "pointer-forward" },
	{ "loop: a label, then back to the name's start",
	    HDR1 "01 'a' c0 0c 0001 0001", DNSMSG_FORMERR,
	    "pointer-forward" },
	{ "pointer forward", HDR1 "c0 12 0001 0001 00 00", DNSMSG_FORMERR,
	    "pointer-forward" },
	{ "pointer out of the message", HDR1 "ff ff 0001 0001",
	    DNSMSG_FORMERR, "pointer-forward" },
	{ "pointer cut after its first byte", HDR1E Q_A "c0",
	    DNSMSG_FORMERR, "truncated" },
	{ "header and one byte", HDR1 "c0", DNSMSG_FORMERR, "counts" },
	{ "OPT owner pointing to itself", HDR1E Q_A
	    "c0 1d 0029 04d0 00 00 0000 0000", DNSMSG_FORMERR,
	    "pointer-forward" },
	{ "a two-step loop: question -> OPT owner -> question",
	    HDR1E "01 'a' c0 14 0001 0001 c0 0c 0029 04d0 00 00 0000 0000",
	    DNSMSG_FORMERR, "pointer-forward" },
	/* The additional section. */
	{ "an A record in the additional section", HDR1E Q_A
	    "c0 0c 0001 0001 00000000 0004 01020304", DNSMSG_FORMERR,
	    "unexpected-record" },
	{ "a TSIG record", HDR1E Q_A "00 00fa 00ff 00000000 0000",
	    DNSMSG_FORMERR, "unexpected-record" },
	{ "two OPTs", HDR("0001", "0000", "0000", "0002") Q_A OPT1232
	    OPT1232, DNSMSG_FORMERR, "multiple-opt" },
	{ "two OPTs, the second of version 1", HDR("0001", "0000", "0000",
	    "0002") Q_A OPT1232 OPT("04d0", "01", "0000", "0000"),
	    DNSMSG_FORMERR, "multiple-opt" },
	{ "OPT owned by a name", HDR1E Q_A
	    "c0 0c 0029 04d0 00 00 0000 0000", DNSMSG_FORMERR, "opt-owner" },
	{ "OPT option longer than the data", HDR1E Q_A
	    OPT("04d0", "00", "0000", "0005") "000a 0008 00",
	    DNSMSG_FORMERR, "opt-options" },
	{ "OPT data shorter than an option header", HDR1E Q_A
	    OPT("04d0", "00", "0000", "0003") "000a 00", DNSMSG_FORMERR,
	    "opt-options" },
	{ "OPT RDLENGTH past the end", HDR1E Q_A
	    OPT("04d0", "00", "0000", "0004") "000a", DNSMSG_FORMERR,
	    "truncated" },
	{ "OPT cut in its fixed fields", HDR1E Q_A "00 0029 04d0 00",
	    DNSMSG_FORMERR, "truncated" },
	{ "trailing bytes", HDR1 Q_A "00", DNSMSG_FORMERR,
	    "trailing-bytes" },
	{ "trailing bytes after the OPT", HDR1E Q_A OPT1232 "0000",
	    DNSMSG_FORMERR, "trailing-bytes" },
	{ "question of type OPT", HDR1 EXAMPLE_COM "0029 0001",
	    DNSMSG_FORMERR, "qtype-opt" },
	/* EDNS versions. */
	{ "EDNS version 1", HDR1E Q_A OPT("04d0", "01", "0000", "0000"),
	    DNSMSG_BADVERS, "edns-version" },
	{ "EDNS version 255", HDR1E Q_A OPT("04d0", "ff", "8000", "0000"),
	    DNSMSG_BADVERS, "edns-version" },
};

static void
test_parse_table(void **state)
{
	struct proxy_dnsmsg_query q;
	size_t len;
	int rc;

	(void)state;
	for (size_t i = 0; i < sizeof(parse_rows) / sizeof(parse_rows[0]);
	    i++) {
		const struct parse_row *r = &parse_rows[i];

		len = dns_hex(r->hex, wire, sizeof(wire));
		rc = proxy_dnsmsg_parse(wire, len, &q);
		if (q.status != r->status || (r->why == NULL) != (q.why ==
		    NULL) || (r->why != NULL && strcmp(r->why, q.why) != 0))
			fail_msg("%s: want status %d (%s), got %d (%s)",
			    r->what, r->status, r->why ? r->why : "-",
			    q.status, q.why ? q.why : "-");
		assert_int_equal(rc, r->status == DNSMSG_OK ? 0 : -EBADMSG);
		if (r->status != DNSMSG_DROP) {
			assert_int_equal(q.id, 0x1234);
			assert_int_equal(q.opcode, (wire[2] >> 3) & 15);
		}
	}
}

static void
test_parse_too_large(void **state)
{
	struct proxy_dnsmsg_query q;
	size_t len = dns_hex(HDR1 Q_A, wire, sizeof(wire));

	(void)state;
	/* Over PROXY_DNSMSG_QUERY_MAX: refused before anything else is
	 * read (the header still is, for the answer). */
	memset(wire + len, 0, PROXY_DNSMSG_QUERY_MAX + 1 - len);
	assert_int_equal(proxy_dnsmsg_parse(wire, PROXY_DNSMSG_QUERY_MAX + 1,
	    &q), -EBADMSG);
	assert_int_equal(q.status, DNSMSG_FORMERR);
	assert_string_equal(q.why, "too-large");
	assert_int_equal(q.id, 0x1234);
}

/* What the parser makes of the fields. */
static void
test_parse_fields(void **state)
{
	struct proxy_dnsmsg_query q;
	size_t len;

	(void)state;
	len = dns_hex("beef 0110 0001 0000 0000 0001"
	    "07 'ExAmPlE' 03 'COM' 00 001c 0001"
	    OPT("1000", "00", "8000", "000c") COOKIE, wire, sizeof(wire));
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
	assert_int_equal(q.id, 0xbeef);
	assert_int_equal(q.opcode, 0);
	assert_true(q.rd);
	assert_true(q.cd);
	assert_string_equal(q.name, "example.com");
	assert_int_equal(q.qname_len, 13);
	assert_memory_equal(q.qname, "\007ExAmPlE\003COM", 13);
	assert_int_equal(q.qtype, 28);
	assert_int_equal(q.qclass, 1);
	assert_true(q.edns);
	assert_int_equal(q.edns_udp, 4096);
	assert_int_equal(q.edns_version, 0);
	assert_true(q.edns_do);

	len = dns_hex("0001 0000 0001 0000 0000 0000 00 0002 0001", wire,
	    sizeof(wire));
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
	assert_string_equal(q.name, "");
	assert_int_equal(q.qname_len, 1);
	assert_false(q.rd);
	assert_false(q.edns);
}

/* Bytes that are not letters, digits or '-' come out escaped, so such
 * a name can never be read as a host name. */
static void
test_parse_name_text(void **state)
{
	static const struct {
		const char *hex;	/* the question's name */
		const char *text;
	} rows[] = {
		{ "03 'a.b' 03 'com' 00", "a\\.b.com" },
		{ "02 'a' 00 03 'com' 00", "a\\000.com" },
		{ "02 c3 a9 02 'fr' 00", "\\195\\169.fr" },
		{ "03 'A B' 00", "a\\032b" },
		{ "04 'x\\;(' 00", "x\\\\\\;\\(" },
		{ "03 '_tc' 04 'TEST' 00", "_tc.test" },
		{ "02 '-a' 01 '.' 00", "-a.\\." },
	};
	struct proxy_dnsmsg_query q;
	char hex[256];
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(hex, sizeof(hex), "%s %s 0001 0001", HDR1,
		    rows[i].hex);
		len = dns_hex(hex, wire, sizeof(wire));
		assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
		assert_string_equal(q.name, rows[i].text);
	}
}

/* Names of 255 bytes on the wire parse, 256 do not; the longest text. */
static void
test_parse_name_limits(void **state)
{
	struct proxy_dnsmsg_query q;
	char name[300];
	size_t len, n = 0;

	(void)state;
	/* 63.63.63.61: 3 * 64 + 62 + 1 = 255 bytes on the wire. */
	for (int l = 0; l < 4; l++) {
		int k = l < 3 ? 63 : 61;

		memset(name + n, 'a' + l, (size_t)k);
		n += (size_t)k;
		name[n++] = '.';
	}
	name[n - 1] = '\0';
	len = dns_query(wire, sizeof(wire), 1, name, 1, 1, -1, 0, false);
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
	assert_int_equal(q.qname_len, 255);
	assert_string_equal(q.name, name);
	/* One byte more. */
	name[n - 1] = 'd';
	name[n] = '\0';
	len = dns_query(wire, sizeof(wire), 1, name, 1, 1, -1, 0, false);
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), -EBADMSG);
	assert_string_equal(q.why, "name-too-long");
	/* 255 wire bytes of "\000" labels: 250 escapes of 4 characters. */
	n = 12;
	memset(wire, 0, sizeof(wire));
	dns_hex(HDR1, wire, sizeof(wire));
	for (int l = 0; l < 4; l++) {
		int k = l < 3 ? 63 : 61;

		wire[n++] = (uint8_t)k;
		n += (size_t)k;		/* zero bytes */
	}
	wire[n++] = 0;
	n += dns_hex("0001 0001", wire + n, 4);
	assert_int_equal(proxy_dnsmsg_parse(wire, n, &q), 0);
	assert_int_equal(strlen(q.name), 250 * 4 + 3);
}

/* An answer compared with the message written by hand. */
struct answer_row {
	const char *what;
	const char *query;
	struct proxy_dnsmsg_reply reply;
	const char *want;
};

static struct in_addr a_synth[2];
static struct in6_addr aaaa1[1];

#define EDE_TEXT	"cordon: not-on-policy pol-a"	/* 27 bytes */
#define EDE_TEXT_HEX	"'cordon: not-on-policy pol-a'"

static const struct answer_row answer_rows[] = {
	{ "NXDOMAIN, no EDNS: no OPT, so no EDE", HDR1 Q_A,
	    { .rcode = 3, .ede = 15, .ede_text = EDE_TEXT },
	    "1234 8183 0001 0000 0000 0000" Q_A },
	{ "NXDOMAIN + EDE 15 Blocked", HDR1E Q_A OPT1232,
	    { .rcode = 3, .ede = 15, .ede_text = EDE_TEXT },
	    "1234 8183 0001 0000 0000 0001" Q_A
	    /* RDLENGTH 33 = option header 4 + INFO-CODE 2 + 27. */
	    OPT("04d0", "00", "0000", "0021") "000f 001d 000f" EDE_TEXT_HEX },
	{ "NXDOMAIN + EDE without EXTRA-TEXT", HDR1E Q_A OPT1232,
	    { .rcode = 3, .ede = 15 },
	    "1234 8183 0001 0000 0000 0001" Q_A
	    OPT("04d0", "00", "0000", "0006") "000f 0002 000f" },
	{ "REFUSED + EDE 18 Prohibited, EDNS 4096 answered with 1232",
	    HDR1E Q_A OPT("1000", "00", "0000", "0000"),
	    { .rcode = 5, .ede = 18, .ede_text = "cordon: dns-rate-limit" },
	    "1234 8185 0001 0000 0000 0001" Q_A
	    OPT("04d0", "00", "0000", "001c") "000f 0018 0012"
	    "'cordon: dns-rate-limit'" },
	{ "SERVFAIL + EDE 22", HDR1E Q_A OPT1232,
	    { .rcode = 2, .ede = 22, .ede_text = "x" },
	    "1234 8182 0001 0000 0000 0001" Q_A
	    OPT("04d0", "00", "0000", "0007") "000f 0003 0016 'x'" },
	{ "NOTIMP + EDE 21", HDR1E EXAMPLE_COM "00ff 0001" OPT1232,
	    { .rcode = 4, .ede = 21, .ede_text = "" },
	    "1234 8184 0001 0000 0000 0001" EXAMPLE_COM "00ff 0001"
	    OPT("04d0", "00", "0000", "0006") "000f 0002 0015" },
	{ "FORMERR with the question", HDR1 Q_A, { .rcode = 1, .ede = -1 },
	    "1234 8181 0001 0000 0000 0000" Q_A },
	{ "NODATA, DO copied", HDR1E Q_AAAA OPT("04d0", "00", "8000",
	    "0000"), { .rcode = 0, .ede = -1 },
	    "1234 8180 0001 0000 0000 0001" Q_AAAA
	    OPT("04d0", "00", "8000", "0000") },
	{ "one A, TTL 30, owner compressed to the question (c00c)",
	    HDR1 Q_A, { .rcode = 0, .ede = -1, .ttl = 30, .a = a_synth,
	    .na = 1 },
	    "1234 8180 0001 0001 0000 0000" Q_A
	    "c00c 0001 0001 0000001e 0004 c6120001" },
	{ "two A with EDNS", HDR1E Q_A OPT1232, { .rcode = 0, .ede = -1,
	    .ttl = 60, .a = a_synth, .na = 2 },
	    "1234 8180 0001 0002 0000 0001" Q_A
	    "c00c 0001 0001 0000003c 0004 c6120001"
	    "c00c 0001 0001 0000003c 0004 c6130002" OPT1232 },
	{ "one AAAA", HDR1 Q_AAAA, { .rcode = 0, .ede = -1, .ttl = 30,
	    .aaaa = aaaa1, .naaaa = 1 },
	    "1234 8180 0001 0001 0000 0000" Q_AAAA
	    "c00c 001c 0001 0000001e 0010 20010db8000000000000000000000001" },
	{ "case kept in the echo, CD copied, RD not set",
	    "1234 0010 0001 0000 0000 0000 07 'ExAmPlE' 03 'COM' 00 0001 0001",
	    { .rcode = 0, .ede = -1, .ttl = 30, .a = a_synth, .na = 1 },
	    "1234 8090 0001 0001 0000 0000 07 'ExAmPlE' 03 'COM' 00 0001 0001"
	    "c00c 0001 0001 0000001e 0004 c6120001" },
	{ "BADVERS: RCODE 16 = 0 in the header, 1 in the OPT, version 0",
	    HDR1E Q_A OPT("04d0", "01", "0000", "0000"),
	    { .rcode = 16, .ede = -1 },
	    "1234 8180 0001 0000 0000 0001" Q_A
	    "00 0029 04d0 01 00 0000 0000" },
	{ "root question echoed", HDR1 "00 0002 0001", { .rcode = 3,
	    .ede = -1 }, "1234 8183 0001 0000 0000 0000 00 0002 0001" },
	{ "OPT owner compressed in the query", HDR1E Q_A
	    "c0 18 0029 0200 00 00 0000 0000", { .rcode = 3, .ede = -1 },
	    "1234 8183 0001 0000 0000 0001" Q_A OPT("04d0", "00", "0000",
	    "0000") },
};

static void
test_answers(void **state)
{
	struct proxy_dnsmsg_query q;
	size_t len, wlen, olen;

	(void)state;
	inet_pton(AF_INET, "198.18.0.1", &a_synth[0]);
	inet_pton(AF_INET, "198.19.0.2", &a_synth[1]);
	inet_pton(AF_INET6, "2001:db8::1", &aaaa1[0]);
	for (size_t i = 0; i < sizeof(answer_rows) / sizeof(answer_rows[0]);
	    i++) {
		const struct answer_row *r = &answer_rows[i];
		int rc;

		len = dns_hex(r->query, wire, sizeof(wire));
		rc = proxy_dnsmsg_parse(wire, len, &q);
		if (rc != 0 && q.status != DNSMSG_BADVERS)
			fail_msg("%s: query does not parse (%s)", r->what,
			    q.why);
		wlen = dns_hex(r->want, want, sizeof(want));
		rc = proxy_dnsmsg_answer(&q, &r->reply, DNSMSG_UDP, out,
		    sizeof(out), &olen);
		if (rc != 0)
			fail_msg("%s: answer: %s", r->what, strerror(-rc));
		if (olen != wlen || memcmp(out, want, wlen) != 0) {
			char got[2 * 4096 + 1];

			snprintf(got, sizeof(got), "%s", dns_tohex(out, olen));
			fail_msg("%s:\n want %s\n  got %s", r->what,
			    dns_tohex(want, wlen), got);
		}
		/* The same over TCP: the length, then the same bytes. */
		assert_int_equal(proxy_dnsmsg_answer(&q, &r->reply,
		    DNSMSG_TCP, out, sizeof(out), &olen), 0);
		assert_int_equal(olen, wlen + 2);
		assert_int_equal(out[0] << 8 | out[1], wlen);
		assert_memory_equal(out + 2, want, wlen);
	}
}

/* Replies the answer writer refuses. */
static void
test_answer_invalid(void **state)
{
	struct proxy_dnsmsg_query q, qe;
	struct proxy_dnsmsg_reply r;
	struct in_addr many[PROXY_DNSMSG_ANSWERS_MAX + 1];
	size_t len, olen;

	(void)state;
	memset(many, 0, sizeof(many));
	len = dns_hex(HDR1 Q_A, wire, sizeof(wire));
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
	len = dns_hex(HDR1E Q_A OPT1232, wire, sizeof(wire));
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &qe), 0);
	/* BADVERS needs an OPT; rcodes fit 12 bits; EDE codes 16. */
	r = (struct proxy_dnsmsg_reply){ .rcode = 16, .ede = -1 };
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), -EINVAL);
	r.rcode = 4096;
	assert_int_equal(proxy_dnsmsg_answer(&qe, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), -EINVAL);
	r = (struct proxy_dnsmsg_reply){ .rcode = 3, .ede = 65536 };
	assert_int_equal(proxy_dnsmsg_answer(&qe, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), -EINVAL);
	/* Records must fit the question's type. */
	r = (struct proxy_dnsmsg_reply){ .ede = -1, .aaaa = aaaa1,
	    .naaaa = 1 };
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), -EINVAL);
	r = (struct proxy_dnsmsg_reply){ .ede = -1, .a = many, .na = 1 +
	    PROXY_DNSMSG_ANSWERS_MAX };
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), -EINVAL);
	r.na = PROXY_DNSMSG_ANSWERS_MAX;
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_TCP, out,
	    sizeof(out), &olen), 0);
	r = (struct proxy_dnsmsg_reply){ .ede = -1, .na = 1 };	/* a NULL */
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), -EINVAL);
	/* Not a query to answer. */
	len = dns_hex(HDR("0002", "0000", "0000", "0000"), wire, sizeof(wire));
	(void)proxy_dnsmsg_parse(wire, len, &q);
	r = (struct proxy_dnsmsg_reply){ .rcode = 1, .ede = -1 };
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), -EINVAL);
	/* Too small a buffer. */
	assert_int_equal(proxy_dnsmsg_answer(&qe, &r, DNSMSG_UDP, out, 20,
	    &olen), -ENOSPC);
	assert_int_equal(olen, 0);
}

/* n A records for a query of `edns` (-1: none) over t. */
static size_t
answer_n(int edns, enum proxy_dnsmsg_transport t, size_t n, bool *tc,
    unsigned *ancount)
{
	struct proxy_dnsmsg_query q;
	struct in_addr as[PROXY_DNSMSG_ANSWERS_MAX];
	struct proxy_dnsmsg_reply r = { .ede = -1, .ttl = 30, .a = as,
	    .na = n };
	size_t len, olen, pre = t == DNSMSG_TCP ? 2 : 0;

	for (size_t i = 0; i < n; i++)
		as[i].s_addr = htonl(0xc6120000u + 1 + (uint32_t)i);
	len = dns_query(wire, sizeof(wire), 7, "example.com", 1, 1, edns, 0,
	    false);
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, t, out, sizeof(out),
	    &olen), 0);
	*tc = out[pre + 2] & 0x02;
	*ancount = (unsigned)(out[pre + 6] << 8 | out[pre + 7]);
	return olen - pre;
}

static void
test_truncation(void **state)
{
	/* Header 12 + question 17 = 29; each A record 16 (c00c owner);
	 * an OPT 11. */
	static const struct {
		int edns;
		enum proxy_dnsmsg_transport t;
		size_t n;
		bool tc;
		size_t len;
	} rows[] = {
		{ -1, DNSMSG_UDP, 30, false, 29 + 30 * 16 },	/* 509 */
		{ -1, DNSMSG_UDP, 31, true, 29 },		/* 525 > 512 */
		{ -1, DNSMSG_TCP, 31, false, 29 + 31 * 16 },
		{ -1, DNSMSG_TCP, 64, false, 29 + 64 * 16 },
		/* EDNS under 512 counts as 512 (RFC 6891 6.2.5). */
		{ 0, DNSMSG_UDP, 29, false, 40 + 29 * 16 },	/* 504 */
		{ 100, DNSMSG_UDP, 30, true, 40 },		/* 520 */
		{ 512, DNSMSG_UDP, 30, true, 40 },
		{ 520, DNSMSG_UDP, 30, false, 40 + 30 * 16 },
		{ 599, DNSMSG_UDP, 35, true, 40 },		/* 600 */
		{ 600, DNSMSG_UDP, 35, false, 40 + 35 * 16 },
		/* Capped at 1232 whatever EDNS offers. */
		{ 4096, DNSMSG_UDP, 64, false, 40 + 64 * 16 },	/* 1064 */
		{ 65535, DNSMSG_UDP, 64, false, 1064 },
	};
	bool tc;
	unsigned an;
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		len = answer_n(rows[i].edns, rows[i].t, rows[i].n, &tc, &an);
		if (len != rows[i].len || tc != rows[i].tc ||
		    an != (rows[i].tc ? 0 : rows[i].n))
			fail_msg("row %zu (edns %d, %zu answers): len %zu tc "
			    "%d an %u", i, rows[i].edns, rows[i].n, len, tc,
			    an);
	}
}

/* The 1232 cap with AAAA records: 12 + 17 + 11 + n * 28. */
static void
test_truncation_cap(void **state)
{
	struct proxy_dnsmsg_query q;
	struct in6_addr as[PROXY_DNSMSG_ANSWERS_MAX];
	struct proxy_dnsmsg_reply r = { .ede = -1, .ttl = 30, .aaaa = as };
	size_t len, olen;

	(void)state;
	memset(as, 0x20, sizeof(as));
	len = dns_query(wire, sizeof(wire), 7, "example.com", 28, 1, 4096, 0,
	    true);
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
	assert_int_equal(proxy_dnsmsg_limit(&q, DNSMSG_TCP), 65535);
	assert_int_equal(proxy_dnsmsg_limit(&q, DNSMSG_UDP), 1232);
	r.naaaa = 42;		/* 40 + 1176 = 1216 */
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), 0);
	assert_int_equal(olen, 1216);
	assert_int_equal(out[2] & 0x02, 0);
	r.naaaa = 43;		/* 1244 */
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), 0);
	assert_int_equal(olen, 40);
	assert_int_equal(out[2] & 0x02, 0x02);
	/* The OPT stays, DO still copied. */
	assert_memory_equal(out + 29, "\000\000\051\004\320\000\000\200\000"
	    "\000\000", 11);
}

/* EXTRA-TEXT is cut to 200 bytes on a character boundary, so the
 * longest question with an EDE always fits 512 bytes. */
static void
test_ede_text_cut(void **state)
{
	struct proxy_dnsmsg_query q;
	char text[400], name[300];
	struct proxy_dnsmsg_reply r = { .rcode = 3, .ede = 15,
	    .ede_text = text };
	size_t len, olen, n = 0, optlen;

	(void)state;
	/* 199 ASCII bytes, then "é" (2 bytes) across the cut, then more. */
	memset(text, 'x', 199);
	memcpy(text + 199, "\xc3\xa9", 2);
	memset(text + 201, 'y', 100);
	text[301] = '\0';
	for (int l = 0; l < 4; l++) {
		int k = l < 3 ? 63 : 61;

		memset(name + n, 'a' + l, (size_t)k);
		n += (size_t)k;
		name[n++] = '.';
	}
	name[n - 1] = '\0';
	len = dns_query(wire, sizeof(wire), 9, name, 1, 1, 0, 0, false);
	assert_int_equal(proxy_dnsmsg_parse(wire, len, &q), 0);
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), 0);
	/* 12 + 259 + OPT 11 + option 4 + 2 + 199. */
	assert_int_equal(olen, 12 + 259 + 11 + 6 + 199);
	assert_int_equal(out[2] & 0x02, 0);
	optlen = (size_t)(out[12 + 259 + 9] << 8 | out[12 + 259 + 10]);
	assert_int_equal(optlen, 4 + 2 + 199);
	assert_int_equal(out[olen - 1], 'x');
	/* Exactly 200 ASCII bytes are kept whole. */
	text[199] = 'z';
	text[200] = '\0';
	assert_int_equal(proxy_dnsmsg_answer(&q, &r, DNSMSG_UDP, out,
	    sizeof(out), &olen), 0);
	assert_int_equal(olen, 12 + 259 + 11 + 6 + 200);
	assert_int_equal(out[olen - 1], 'z');
	assert_true(olen <= 512);
}

struct reject_row {
	const char *what;
	const char *query;
	unsigned rcode;
	int rc;
	const char *want;
};

static const struct reject_row reject_rows[] = {
	{ "FORMERR to QDCOUNT 2", HDR("0002", "0000", "0000", "0000") Q_A Q_A,
	    1, 0, "1234 8181 0000 0000 0000 0000" },
	{ "NOTIMP to NOTIFY (opcode 4 kept, RD clear)",
	    "1234 2000 0001 0001 0000 0000", 4, 0,
	    "1234 a084 0000 0000 0000 0000" },
	{ "FORMERR to a bare header", "abcd 0100 0000 0000 0000 0000", 1, 0,
	    "abcd 8181 0000 0000 0000 0000" },
	{ "REFUSED to a broken query", "0000 0101 ffff", 5, -EINVAL, "" },
	{ "nothing to a response", "1234 8100 0001 0000 0000 0000", 1,
	    -EINVAL, "" },
	{ "rcode over 15", "1234 0100 0001 0000 0000 0000", 16, -EINVAL,
	    "" },
};

static void
test_reject(void **state)
{
	size_t len, wlen, olen;

	(void)state;
	for (size_t i = 0; i < sizeof(reject_rows) / sizeof(reject_rows[0]);
	    i++) {
		const struct reject_row *r = &reject_rows[i];
		int rc;

		len = dns_hex(r->query, wire, sizeof(wire));
		wlen = dns_hex(r->want, want, sizeof(want));
		rc = proxy_dnsmsg_reject(wire, len, r->rcode, DNSMSG_UDP, out,
		    sizeof(out), &olen);
		if (rc != r->rc)
			fail_msg("%s: rc %d", r->what, rc);
		if (rc != 0)
			continue;
		if (olen != wlen || memcmp(out, want, wlen) != 0)
			fail_msg("%s: got %s", r->what, dns_tohex(out, olen));
		assert_int_equal(proxy_dnsmsg_reject(wire, len, r->rcode,
		    DNSMSG_TCP, out, sizeof(out), &olen), 0);
		assert_int_equal(olen, 14);
		assert_memory_equal(out, "\000\014", 2);
		assert_memory_equal(out + 2, want, 12);
	}
}

/* Three queries in one stream, fed split at every byte position, then
 * a byte at a time: the same three messages come out. */
static void
test_tcp_split(void **state)
{
	static struct proxy_dnsmsg_tcp s;
	uint8_t stream[1024], msgs[3][512];
	size_t lens[3], total = 0;

	(void)state;
	for (int i = 0; i < 3; i++) {
		lens[i] = dns_query(msgs[i], sizeof(msgs[i]), (uint16_t)i,
		    i == 1 ? "b.example" : "a.example.com", 1, 1,
		    i == 2 ? 1232 : -1, 0, false);
		stream[total++] = (uint8_t)(lens[i] >> 8);
		stream[total++] = (uint8_t)lens[i];
		memcpy(stream + total, msgs[i], lens[i]);
		total += lens[i];
	}
	for (size_t cut = 0; cut <= total; cut++) {
		for (size_t step = 0; step < 2; step++) {
			/* step 0: two pieces at cut; step 1: cut-byte
			 * pieces (cut 0: whole). */
			size_t off = 0, piece, got = 0;

			proxy_dnsmsg_tcp_init(&s);
			assert_true(proxy_dnsmsg_tcp_idle(&s));
			while (off < total) {
				const uint8_t *msg;
				size_t taken, mlen;
				int rc;

				if (step == 0)
					piece = off < cut ? cut - off :
					    total - off;
				else
					piece = cut == 0 ? total - off : cut;
				if (piece > total - off)
					piece = total - off;
				rc = proxy_dnsmsg_tcp_feed(&s, stream + off,
				    piece, &taken, &msg, &mlen);
				assert_true(rc == 0 || rc == 1);
				assert_true(taken <= piece);
				if (rc == 0)
					assert_int_equal(taken, piece);
				off += taken;
				if (rc == 1) {
					assert_true(got < 3);
					assert_int_equal(mlen, lens[got]);
					assert_memory_equal(msg, msgs[got],
					    mlen);
					got++;
					assert_true(proxy_dnsmsg_tcp_idle(&s));
				}
			}
			if (got != 3)
				fail_msg("cut %zu step %zu: %zu messages",
				    cut, step, got);
		}
	}
}

static void
test_tcp_limits(void **state)
{
	static struct proxy_dnsmsg_tcp s;
	const uint8_t *msg;
	size_t taken, mlen;
	uint8_t big[2] = { 0x10, 0x01 }, max[2] = { 0x10, 0x00 };
	uint8_t empty[3] = { 0, 0, 0x12 };
	static uint8_t body[PROXY_DNSMSG_QUERY_MAX];

	(void)state;
	/* 4097 announced: the stream cannot go on. */
	proxy_dnsmsg_tcp_init(&s);
	assert_int_equal(proxy_dnsmsg_tcp_feed(&s, big, 2, &taken, &msg,
	    &mlen), -EMSGSIZE);
	assert_int_equal(proxy_dnsmsg_tcp_feed(&s, big, 1, &taken, &msg,
	    &mlen), -EMSGSIZE);
	/* 4096 is taken whole. */
	proxy_dnsmsg_tcp_init(&s);
	assert_int_equal(proxy_dnsmsg_tcp_feed(&s, max, 2, &taken, &msg,
	    &mlen), 0);
	assert_false(proxy_dnsmsg_tcp_idle(&s));
	memset(body, 0xab, sizeof(body));
	assert_int_equal(proxy_dnsmsg_tcp_feed(&s, body, sizeof(body),
	    &taken, &msg, &mlen), 1);
	assert_int_equal(taken, sizeof(body));
	assert_int_equal(mlen, sizeof(body));
	/* A zero length is an empty message; the next byte starts the
	 * next frame. */
	proxy_dnsmsg_tcp_init(&s);
	assert_int_equal(proxy_dnsmsg_tcp_feed(&s, empty, 3, &taken, &msg,
	    &mlen), 1);
	assert_int_equal(taken, 2);
	assert_int_equal(mlen, 0);
	assert_int_equal(proxy_dnsmsg_tcp_feed(&s, empty + 2, 1, &taken,
	    &msg, &mlen), 0);
	assert_int_equal(taken, 1);
	assert_false(proxy_dnsmsg_tcp_idle(&s));
	/* Nothing fed, nothing taken. */
	proxy_dnsmsg_tcp_init(&s);
	assert_int_equal(proxy_dnsmsg_tcp_feed(&s, NULL, 0, &taken, &msg,
	    &mlen), 0);
	assert_int_equal(taken, 0);
	assert_true(proxy_dnsmsg_tcp_idle(&s));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_parse_too_large),
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_name_text),
		cmocka_unit_test(test_parse_name_limits),
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_answer_invalid),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_truncation_cap),
		cmocka_unit_test(test_ede_text_cut),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_tcp_split),
		cmocka_unit_test(test_tcp_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
