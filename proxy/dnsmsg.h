/*
 * DNS messages for the closed resolver: a query read from wire bytes into
 * a plain struct, and the answers written back, through ldns (NLnet Labs)
 * with our own checks first for everything ldns accepts that a resolver
 * must not. Also the 2-byte length framing of DNS over TCP. Pure: no I/O;
 * the structs are the caller's.
 */
#ifndef CORDON_PROXY_DNSMSG_H
#define CORDON_PROXY_DNSMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define PROXY_DNSMSG_HEADER	12	/* bytes in the fixed header */
/* The longest query read: a question and an OPT with its options
 * (cookies, padding to 468) take under 1 KiB; a longer one is FORMERR
 * (UDP) or closes the connection (TCP). */
#define PROXY_DNSMSG_QUERY_MAX	4096
#define PROXY_DNSMSG_UDP_MIN	512	/* UDP answer size without EDNS */
/* The largest UDP answer even when EDNS offers more (the 2020 DNS flag
 * day value: fits every path's MTU without fragments). The OPT of our
 * answers advertises it too. */
#define PROXY_DNSMSG_UDP_MAX	1232
#define PROXY_DNSMSG_TCP_MAX	65535	/* a TCP message, prefix excluded */
#define PROXY_DNSMSG_NAME_WIRE_MAX 255	/* a name on the wire, uncompressed */
/* A name as text, each byte at most 4 characters ("\DDD") plus the dots:
 * 1,004 at worst for 255 wire bytes; with the NUL. */
#define PROXY_DNSMSG_NAME_TEXT_MAX 1024
/* EXTRA-TEXT is cut to this many bytes (on a UTF-8 boundary), so that the
 * header, the longest question and the OPT with the option always fit in
 * 512 bytes: 12 + 259 + 11 + 6 + 200 = 488. */
#define PROXY_DNSMSG_EDE_TEXT_MAX 200
#define PROXY_DNSMSG_ANSWERS_MAX 64	/* A or AAAA records in one answer */

/* RCODEs (RFC 1035, 6891: BADVERS is extended, needs an OPT). */
#define PROXY_DNS_RCODE_NOERROR		0
#define PROXY_DNS_RCODE_FORMERR		1
#define PROXY_DNS_RCODE_SERVFAIL	2
#define PROXY_DNS_RCODE_NXDOMAIN	3
#define PROXY_DNS_RCODE_NOTIMP		4
#define PROXY_DNS_RCODE_REFUSED		5
#define PROXY_DNS_RCODE_BADVERS		16
/* Types and classes we look at. */
#define PROXY_DNS_TYPE_A	1
#define PROXY_DNS_TYPE_AAAA	28
#define PROXY_DNS_TYPE_OPT	41
#define PROXY_DNS_TYPE_ANY	255
#define PROXY_DNS_CLASS_IN	1
/* RFC 8914 Extended DNS Error INFO-CODEs we send. */
#define PROXY_DNS_EDE_OTHER		0
#define PROXY_DNS_EDE_BLOCKED		15
#define PROXY_DNS_EDE_PROHIBITED	18
#define PROXY_DNS_EDE_NOT_SUPPORTED	21
#define PROXY_DNS_EDE_NO_REACHABLE_AUTHORITY 22
#define PROXY_DNS_EDE_NETWORK_ERROR	23

/* What to do with a message, as proxy_dnsmsg_parse found it. */
enum proxy_dnsmsg_status {
	DNSMSG_OK = 0,		/* a query: decide, then proxy_dnsmsg_answer */
	DNSMSG_DROP,		/* send nothing: shorter than a header, or a
				   response (QR set: answering one could
				   start a loop) */
	DNSMSG_FORMERR,		/* answer FORMERR, header only
				   (proxy_dnsmsg_reject): the question is
				   not trusted */
	DNSMSG_NOTIMP,		/* an opcode other than QUERY: NOTIMP,
				   header only (proxy_dnsmsg_reject) */
	DNSMSG_BADVERS,		/* EDNS version above 0: the query is
				   otherwise whole; answer BADVERS with
				   proxy_dnsmsg_answer */
};

/*
 * A query. Everything but status and why is valid only for DNSMSG_OK and
 * DNSMSG_BADVERS; id, opcode and rd also for FORMERR and NOTIMP.
 */
struct proxy_dnsmsg_query {
	enum proxy_dnsmsg_status status;
	const char *why;	/* not OK: the rule broken ("qdcount",
				   "pointer-forward", ...), static */
	uint16_t id;
	uint8_t opcode;		/* 0 = QUERY */
	bool rd, cd;		/* recursion desired, checking disabled:
				   copied into the answer */
	/* The question's name: text in presentation form, ASCII lowercased,
	 * without the trailing dot ("" for the root); bytes outside
	 * letters, digits and '-' appear escaped ("\046", "\."), so such
	 * a name never parses as a host. */
	char name[PROXY_DNSMSG_NAME_TEXT_MAX];
	/* The name as sent (uncompressed, case kept): echoed back as is. */
	uint8_t qname[PROXY_DNSMSG_NAME_WIRE_MAX];
	size_t qname_len;
	uint16_t qtype, qclass;
	bool edns;		/* the query had an OPT */
	uint16_t edns_udp;	/* its UDP payload size, as sent */
	uint8_t edns_version;
	bool edns_do;		/* DNSSEC OK: copied into the answer */
};

/*
 * Reads wire[0..len) as a query into *q (always filled: status, why).
 * Checked, in this order (the first broken rule decides):
 *  - DROP: under 12 bytes ("short"); QR set ("response");
 *  - FORMERR: over PROXY_DNSMSG_QUERY_MAX bytes ("too-large");
 *  - NOTIMP: opcode not QUERY ("opcode");
 *  - FORMERR: QDCOUNT != 1 ("qdcount"), ANCOUNT or NSCOUNT != 0
 *    ("ancount", "nscount"), more records than the bytes could hold
 *    ("counts"); then walking the message: a name with a label type
 *    other than 00 or 11 ("label-type"), a label over 63 bytes (the same
 *    rule: 64-191 are the reserved types), a compression pointer that does
 *    not point strictly before the name (or the pointed-to name) that
 *    holds it ("pointer-forward": this also ends every loop) or into the
 *    header ("pointer-header"), a name over 255 bytes uncompressed
 *    ("name-too-long"); any record or field cut short ("truncated"); an
 *    additional record that is not an OPT ("unexpected-record"), a second
 *    OPT ("multiple-opt", RFC 6891 6.1.1), an OPT whose owner is not the
 *    root ("opt-owner") or whose options do not exactly fill its data
 *    ("opt-options"); bytes after the last record ("trailing-bytes");
 *    a question of type OPT ("qtype-opt");
 *  - BADVERS: an OPT of version above 0 ("edns-version").
 * Only then is the message decoded with ldns (a refusal there, which the
 * checks above should make impossible, is FORMERR "ldns").
 * Returns 0 (status OK), -EBADMSG (any other status) or -ENOMEM.
 */
int proxy_dnsmsg_parse(const uint8_t *wire, size_t len,
    struct proxy_dnsmsg_query *q);

/* The transport an answer goes out on: over UDP the size limit is 512
 * bytes without EDNS, else the query's EDNS size (at least 512) capped at
 * PROXY_DNSMSG_UDP_MAX; over TCP the message is prefixed with its 2-byte
 * length and may be up to PROXY_DNSMSG_TCP_MAX bytes. */
enum proxy_dnsmsg_transport {
	DNSMSG_UDP = 0,
	DNSMSG_TCP,
};

/* The size limit of an answer to q over transport t (prefix excluded). */
size_t proxy_dnsmsg_limit(const struct proxy_dnsmsg_query *q,
    enum proxy_dnsmsg_transport t);

/* What to answer (a plain value; the pointers are borrowed). */
struct proxy_dnsmsg_reply {
	unsigned rcode;		/* PROXY_DNS_RCODE_*: 0-15, or BADVERS (only
				   to a query with EDNS) */
	uint32_t ttl;		/* of the answer records */
	const struct in_addr *a;	/* na A records, only to qtype A */
	size_t na;
	const struct in6_addr *aaaa;	/* naaaa AAAA, only to qtype AAAA */
	size_t naaaa;
	int ede;		/* RFC 8914 INFO-CODE (0-65535), or -1 for
				   none; sent only to a query with EDNS */
	const char *ede_text;	/* EXTRA-TEXT (UTF-8, no NUL inside), or
				   NULL; cut to PROXY_DNSMSG_EDE_TEXT_MAX */
};

/*
 * Writes the answer r to the query q (status OK or BADVERS) into
 * out[0..cap): ID, opcode, RD and CD from the query; QR and RA set, AA
 * off; the question echoed as sent; the answer records, owned by the
 * question's name, class IN; and, only when the query had an OPT, an OPT
 * (version 0, our UDP size, the query's DO bit, the extended RCODE) with
 * the EDE option when r->ede >= 0. Over the transport's limit, TC is set
 * and the answer records are dropped (the OPT stays). Over TCP, out
 * starts with the 2-byte length. *outlen: bytes written.
 * Returns 0, -EINVAL (q not answerable, records that do not fit the
 * question's type, more than PROXY_DNSMSG_ANSWERS_MAX, an rcode over 15
 * without EDNS or over 4095, an ede over 65535), -ENOSPC (cap too small)
 * or -ENOMEM.
 */
int proxy_dnsmsg_answer(const struct proxy_dnsmsg_query *q,
    const struct proxy_dnsmsg_reply *r, enum proxy_dnsmsg_transport t,
    uint8_t *out, size_t cap, size_t *outlen);

/*
 * The answer to a message parse refused but that has a header: ID,
 * opcode and RD of wire[0..len), QR set, RA set, rcode (0-15), every
 * count 0 (nothing of the message is echoed). Over TCP with the 2-byte
 * length. Returns 0, -EINVAL (under 12 bytes, QR set, rcode over 15),
 * -ENOSPC or -ENOMEM.
 */
int proxy_dnsmsg_reject(const uint8_t *wire, size_t len, unsigned rcode,
    enum proxy_dnsmsg_transport t, uint8_t *out, size_t cap,
    size_t *outlen);

/*
 * DNS over TCP (RFC 1035 4.2.2, RFC 7766): each message is preceded by
 * its length in 2 bytes, big-endian. The stream state of one connection;
 * init before use. The caller owns it (about 4 KiB).
 */
struct proxy_dnsmsg_tcp {
	size_t have;		/* bytes of the current frame held */
	size_t need;		/* the message's length, once known */
	bool done;		/* a message was handed out: the next feed
				   starts a new frame */
	uint8_t buf[2 + PROXY_DNSMSG_QUERY_MAX];
};

void proxy_dnsmsg_tcp_init(struct proxy_dnsmsg_tcp *s);

/*
 * Takes bytes of data[0..len) up to the end of one message (never past
 * it), *taken telling how many. Returns 1 when a message is complete:
 * *msg and *msglen then point into s, valid until the next call (a
 * length of 0 gives an empty message, which parse drops); 0 when all of
 * data was taken and the message is not complete; -EMSGSIZE when the
 * announced length is over PROXY_DNSMSG_QUERY_MAX (close the
 * connection: the stream cannot be resynchronised). Call again with the
 * rest of data after a 1.
 */
int proxy_dnsmsg_tcp_feed(struct proxy_dnsmsg_tcp *s, const uint8_t *data,
    size_t len, size_t *taken, const uint8_t **msg, size_t *msglen);

/* A stream ended: true when it ended between messages (nothing of a
 * next frame held). */
bool proxy_dnsmsg_tcp_idle(const struct proxy_dnsmsg_tcp *s);

#endif
