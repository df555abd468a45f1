/*
 * TLS ClientHello parsing for the SNI check of CONNECT tunnels: fed the
 * first bytes a client sends into a tunnel, in whatever pieces they arrive,
 * it tells whether they are TLS at all and, for a ClientHello, what its
 * server_name extension says. Pure: no I/O, no allocation. The caller owns
 * the struct (about 16.5 KiB); the bytes it holds are exactly the bytes the
 * client sent, to be forwarded upstream unchanged when the check passes.
 */
#ifndef CORDON_PROXY_TLSHELLO_H
#define CORDON_PROXY_TLSHELLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes held at most: the ClientHello, with its record headers, must fit
 * (real ones are 0.2-2 KiB; one full 2^14-byte record does not fit). */
#define PROXY_TLSHELLO_MAX	16384
/* The longest host_name kept: a DNS name is at most 253 bytes, 254 with a
 * trailing dot. */
#define PROXY_TLSHELLO_NAME_MAX	255

/*
 * What the bytes fed so far are. Every status but NEED_MORE is final:
 * later feeds take nothing and change nothing. When a ClientHello breaks
 * several rules, the first that applies in this order is reported:
 * MALFORMED, ECH, SNI_MULTIPLE, SNI_INVALID, SNI_EMPTY, then SNI / NO_SNI.
 */
enum proxy_tlshello_status {
	TLSHELLO_NEED_MORE = 0,	/* a ClientHello so far, not complete */
	TLSHELLO_NOT_TLS,	/* first byte is no TLS record type (20-25):
				   another protocol, an SSLv2-style hello,
				   or junk; nothing more is parsed */
	TLSHELLO_NO_SNI,	/* a ClientHello without server_name */
	TLSHELLO_SNI,		/* exactly one host_name, in name/namelen */
	TLSHELLO_SNI_EMPTY,	/* exactly one host_name, of length 0 */
	TLSHELLO_SNI_INVALID,	/* one host_name over NAME_MAX or with NUL */
	TLSHELLO_SNI_MULTIPLE,	/* server_name lists more than one name */
	TLSHELLO_ECH,		/* encrypted_client_hello (0xfe0d), one of
				   its drafts (0xfe08-0xfe0c) or ESNI
				   (0xffce): the outer name proves nothing */
	TLSHELLO_MALFORMED,	/* a TLS record of another type first
				   (ChangeCipherSpec, alert, application
				   data, heartbeat: a server may skip it and
				   read a hello behind it), or a handshake
				   record that breaks a rule (why says
				   which), or an early end
				   (proxy_tlshello_finish) */
	TLSHELLO_TOO_LARGE,	/* the ClientHello does not fit in
				   PROXY_TLSHELLO_MAX bytes */
};

/*
 * The parser state. Callers read status, why, name, namelen, buf and len;
 * everything else is private. Reset with proxy_tlshello_init before use.
 */
struct proxy_tlshello {
	enum proxy_tlshello_status status;
	const char *why;	/* MALFORMED, TOO_LARGE: the rule (static) */
	char name[PROXY_TLSHELLO_NAME_MAX + 1];	/* SNI: NUL-terminated, as
						   sent (case kept) */
	size_t namelen;
	size_t len;		/* bytes held in buf */
	/* Private: the record walk, incremental over what arrives. */
	size_t walked;		/* bytes of buf the walk has consumed */
	size_t rec_left;	/* payload bytes left in the current record */
	size_t hs_have;		/* handshake bytes seen, across records */
	size_t hs_need;		/* 4 + the message length; 0 until known */
	uint8_t hs_head[4];
	uint8_t buf[PROXY_TLSHELLO_MAX];
};

/* Resets h to hold nothing (does not clear buf). */
void proxy_tlshello_init(struct proxy_tlshello *h);

/*
 * Appends up to n bytes of data (no more than proxy_tlshello_room) and
 * parses as far as they allow. *taken (may be NULL) is how many bytes were
 * held; 0 once the status is final. Bytes after the end of the ClientHello
 * in the same piece are held too (they are forwarded with it).
 * Returns the status.
 */
enum proxy_tlshello_status proxy_tlshello_feed(struct proxy_tlshello *h,
    const void *data, size_t n, size_t *taken);

/* Bytes the next feed may take: 0 once the status is final. */
size_t proxy_tlshello_room(const struct proxy_tlshello *h);

/*
 * The client closed its side: a ClientHello still NEED_MORE becomes
 * MALFORMED ("truncated"). With nothing held the status stays NEED_MORE
 * (an empty stream is not TLS, nor anything else: the caller decides).
 * Returns the status.
 */
enum proxy_tlshello_status proxy_tlshello_finish(struct proxy_tlshello *h);

/*
 * The SNI check's comparison: true when name (namelen bytes, as sent in
 * server_name) and host (NUL-terminated, e.g. the normalised CONNECT host)
 * name the same host: ASCII letters compared case-insensitively, one
 * trailing dot on either side ignored, nothing else folded (no IDNA, no
 * wildcard). An empty name, or one that is only ".", matches nothing.
 */
bool proxy_tlshello_name_match(const char *name, size_t namelen,
    const char *host);

/* A short static name for status ("need-more", "sni", "ech", ...). */
const char *proxy_tlshello_status_name(enum proxy_tlshello_status s);

#endif
