/*
 * ClientHello parser (tlshello.h). Two stages: an incremental walk over
 * the record layer as bytes arrive (record headers, handshake length,
 * the cap), then, once the whole handshake message is held, one pass over
 * the message put back together from its records. Every length is checked
 * against what is left before it is used; nothing is read past len.
 */
#include "proxy/tlshello.h"

#include <string.h>

#define TLS_RECORD_CCS		0x14
#define TLS_RECORD_ALERT	0x15
#define TLS_RECORD_HANDSHAKE	0x16
#define TLS_RECORD_APPDATA	0x17
/* Record content types: 20-24 are assigned (24 heartbeat); 25-63 are
 * where new ones go (RFC 8446 section 5 and the IANA registry, 25 is
 * tls12_cid), none a printable protocol's first byte but '%'..'?'. Only
 * the assigned ones are taken for TLS: everything else is "not TLS" and
 * refused as such anyway (unless the entry says raw). */
#define TLS_RECORD_TYPE_MIN	0x14
#define TLS_RECORD_TYPE_MAX	0x19
#define TLS_RECORD_HEADER	5
#define TLS_RECORD_MAX		16384	/* 2^14: plaintext record limit */
#define TLS_HS_CLIENT_HELLO	1
#define TLS_HS_HEADER		4
/* legacy_version, random, and the smallest session id, cipher suites and
 * compression vectors (0, 2 and 1 bytes with their lengths). */
#define TLS_HELLO_MIN		(2 + 32 + 1 + 2 + 2 + 1 + 1)

#define EXT_SERVER_NAME		0x0000
#define EXT_ECH			0xfe0d
#define EXT_ECH_DRAFT_FIRST	0xfe08	/* drafts -08 .. -12 of ECH */
#define EXT_ECH_DRAFT_LAST	0xfe0c
#define EXT_ESNI		0xffce	/* encrypted_server_name, ECH's
					   predecessor */
#define SNI_HOST_NAME		0

/* A read cursor over the reassembled message. */
struct cur {
	const uint8_t *p;
	size_t left;
};

static bool
cur_u8(struct cur *c, unsigned *v)
{
	if (c->left < 1)
		return false;
	*v = c->p[0];
	c->p++;
	c->left--;
	return true;
}

static bool
cur_u16(struct cur *c, unsigned *v)
{
	if (c->left < 2)
		return false;
	*v = (unsigned)c->p[0] << 8 | c->p[1];
	c->p += 2;
	c->left -= 2;
	return true;
}

static bool
cur_skip(struct cur *c, size_t n)
{
	if (c->left < n)
		return false;
	c->p += n;
	c->left -= n;
	return true;
}

/* A vector with a 1- or 2-byte length: *v covers its contents. */
static bool
cur_vec(struct cur *c, int lenbytes, struct cur *v)
{
	unsigned n;

	if (!(lenbytes == 1 ? cur_u8(c, &n) : cur_u16(c, &n)))
		return false;
	if (c->left < n)
		return false;
	v->p = c->p;
	v->left = n;
	c->p += n;
	c->left -= n;
	return true;
}

static enum proxy_tlshello_status
hello_fail(struct proxy_tlshello *h, enum proxy_tlshello_status s,
    const char *why)
{
	h->status = s;
	h->why = why;
	h->name[0] = '\0';	/* a name parsed before the fault is void */
	h->namelen = 0;
	return s;
}

/* What the parse of the message found, before the status is chosen. */
struct hello_found {
	bool ech;
	unsigned nnames;	/* server_name entries */
	bool name_empty, name_invalid;
};

/* server_name (RFC 6066 section 3): a non-empty list of entries, each a
 * name_type and, for host_name (the only type defined), a HostName. An
 * entry of another type cannot even be skipped (its encoding is unknown),
 * so it is malformed. */
static const char *
hello_server_name(struct proxy_tlshello *h, struct cur ext,
    struct hello_found *f)
{
	struct cur list, name;
	unsigned type;

	if (!cur_vec(&ext, 2, &list) || ext.left != 0)
		return "server_name: bad list length";
	if (list.left == 0)
		return "server_name: empty list";
	while (list.left > 0) {
		if (!cur_u8(&list, &type) || type != SNI_HOST_NAME)
			return "server_name: unknown name type";
		if (!cur_vec(&list, 2, &name))
			return "server_name: bad name length";
		if (++f->nnames > 1)
			continue;
		if (name.left == 0) {
			f->name_empty = true;
		} else if (name.left > PROXY_TLSHELLO_NAME_MAX ||
		    memchr(name.p, '\0', name.left) != NULL) {
			f->name_invalid = true;
		} else {
			memcpy(h->name, name.p, name.left);
			h->name[name.left] = '\0';
			h->namelen = name.left;
		}
	}
	return NULL;
}

/* The extensions block: every extension well-framed, none twice (RFC 8446
 * section 4.2; two server_name extensions would let the server read the
 * one not checked). */
static const char *
hello_extensions(struct proxy_tlshello *h, struct cur exts,
    struct hello_found *f)
{
	uint8_t seen[65536 / 8];
	struct cur data;
	unsigned type;
	const char *why;

	memset(seen, 0, sizeof(seen));
	while (exts.left > 0) {
		if (!cur_u16(&exts, &type) || !cur_vec(&exts, 2, &data))
			return "extension: bad length";
		if (seen[type / 8] & (1u << (type % 8)))
			return "extension: repeated";
		seen[type / 8] |= (uint8_t)(1u << (type % 8));
		if (type == EXT_SERVER_NAME) {
			why = hello_server_name(h, data, f);
			if (why != NULL)
				return why;
		} else if (type == EXT_ECH || type == EXT_ESNI ||
		    (type >= EXT_ECH_DRAFT_FIRST &&
		    type <= EXT_ECH_DRAFT_LAST)) {
			f->ech = true;
		}
	}
	return NULL;
}

/* The ClientHello body (RFC 8446 section 4.1.2, RFC 5246 section 7.4.1.2).
 * Extensions are optional (pre-TLS 1.2 clients may send none), but when
 * present they must end the message exactly. */
static enum proxy_tlshello_status
hello_parse(struct proxy_tlshello *h, const uint8_t *msg, size_t n)
{
	struct cur c = { msg, n }, v;
	struct hello_found f = { 0 };
	unsigned version;
	const char *why;

	if (!cur_u16(&c, &version) || version >> 8 != 3)
		return hello_fail(h, TLSHELLO_MALFORMED, "legacy_version");
	if (!cur_skip(&c, 32))
		return hello_fail(h, TLSHELLO_MALFORMED, "random");
	if (!cur_vec(&c, 1, &v) || v.left > 32)
		return hello_fail(h, TLSHELLO_MALFORMED, "session id");
	if (!cur_vec(&c, 2, &v) || v.left < 2 || v.left % 2 != 0)
		return hello_fail(h, TLSHELLO_MALFORMED, "cipher suites");
	if (!cur_vec(&c, 1, &v) || v.left < 1)
		return hello_fail(h, TLSHELLO_MALFORMED, "compression methods");
	if (c.left > 0) {
		if (!cur_vec(&c, 2, &v) || c.left != 0)
			return hello_fail(h, TLSHELLO_MALFORMED,
			    "extensions: bad block length");
		why = hello_extensions(h, v, &f);
		if (why != NULL)
			return hello_fail(h, TLSHELLO_MALFORMED, why);
	}
	if (f.ech)
		h->status = TLSHELLO_ECH;
	else if (f.nnames > 1)
		h->status = TLSHELLO_SNI_MULTIPLE;
	else if (f.name_invalid)
		h->status = TLSHELLO_SNI_INVALID;
	else if (f.name_empty)
		h->status = TLSHELLO_SNI_EMPTY;
	else
		h->status = f.nnames == 1 ? TLSHELLO_SNI : TLSHELLO_NO_SNI;
	if (h->status != TLSHELLO_SNI) {
		h->name[0] = '\0';
		h->namelen = 0;
	}
	return h->status;
}

/* The whole message is held: parse it once, in place when one record
 * holds it all (the usual case), else put its body back together from
 * the record payloads (the walk already checked every header). */
static enum proxy_tlshello_status
hello_complete(struct proxy_tlshello *h)
{
	uint8_t msg[PROXY_TLSHELLO_MAX];
	size_t off = 0, got = 0, rec, take;

	rec = (size_t)h->buf[3] << 8 | h->buf[4];
	if (rec >= h->hs_need)
		return hello_parse(h, h->buf + TLS_RECORD_HEADER +
		    TLS_HS_HEADER, h->hs_need - TLS_HS_HEADER);
	/* The copy below fills what is parsed; the compiler cannot tell. */
	memset(msg, 0, sizeof(msg));
	while (got < h->hs_need) {
		rec = (size_t)h->buf[off + 3] << 8 | h->buf[off + 4];
		off += TLS_RECORD_HEADER;
		take = rec < h->hs_need - got ? rec : h->hs_need - got;
		memcpy(msg + got, h->buf + off, take);
		got += take;
		off += take;
	}
	return hello_parse(h, msg + TLS_HS_HEADER, h->hs_need - TLS_HS_HEADER);
}

/* The handshake header is complete: a ClientHello of a size that fits. */
static enum proxy_tlshello_status
hello_header(struct proxy_tlshello *h)
{
	size_t body = (size_t)h->hs_head[1] << 16 |
	    (size_t)h->hs_head[2] << 8 | h->hs_head[3];

	if (h->hs_head[0] != TLS_HS_CLIENT_HELLO)
		return hello_fail(h, TLSHELLO_MALFORMED,
		    "first handshake message is not a ClientHello");
	if (body < TLS_HELLO_MIN)
		return hello_fail(h, TLSHELLO_MALFORMED, "ClientHello too short");
	/* Its bytes plus at least one record header must fit. */
	if (body > PROXY_TLSHELLO_MAX - TLS_RECORD_HEADER - TLS_HS_HEADER)
		return hello_fail(h, TLSHELLO_TOO_LARGE,
		    "ClientHello longer than the buffer");
	h->hs_need = TLS_HS_HEADER + body;
	return TLSHELLO_NEED_MORE;
}

/* A record header at h->walked, whose first bytes may still be missing:
 * checks those that are there. */
static enum proxy_tlshello_status
hello_record_header(struct proxy_tlshello *h)
{
	const uint8_t *r = h->buf + h->walked;
	size_t have = h->len - h->walked, rec;

	if (have >= 1 && r[0] != TLS_RECORD_HANDSHAKE && h->walked > 0)
		return hello_fail(h, TLSHELLO_MALFORMED,
		    "another record type inside the ClientHello");
	/* A TLS record of another type first (ChangeCipherSpec, alert,
	 * application data, heartbeat, or one of the types a later TLS
	 * may add): a peer's TLS stack may skip it and read the hello that
	 * follows, so it is a malformed hello, not "another protocol". */
	if (have >= 1 && r[0] >= TLS_RECORD_TYPE_MIN &&
	    r[0] <= TLS_RECORD_TYPE_MAX && r[0] != TLS_RECORD_HANDSHAKE)
		return hello_fail(h, TLSHELLO_MALFORMED, r[0] ==
		    TLS_RECORD_CCS ? "a ChangeCipherSpec record before the "
		    "ClientHello" : r[0] == TLS_RECORD_ALERT ? "an alert "
		    "record before the ClientHello" : r[0] == TLS_RECORD_APPDATA ?
		    "an application data record before the ClientHello" :
		    "a non-handshake record before the ClientHello");
	if (have >= 1 && r[0] != TLS_RECORD_HANDSHAKE)
		return (h->status = TLSHELLO_NOT_TLS);
	if (have >= 2 && r[1] != 3)
		return hello_fail(h, TLSHELLO_MALFORMED, "record version");
	if (have < TLS_RECORD_HEADER)
		return TLSHELLO_NEED_MORE;
	rec = (size_t)r[3] << 8 | r[4];
	if (rec == 0)
		return hello_fail(h, TLSHELLO_MALFORMED, "empty record");
	if (rec > TLS_RECORD_MAX)
		return hello_fail(h, TLSHELLO_MALFORMED, "record over 2^14");
	h->walked += TLS_RECORD_HEADER;
	h->rec_left = rec;
	return TLSHELLO_NEED_MORE;
}

/* Walks what arrived since the last call, record by record. */
static enum proxy_tlshello_status
hello_walk(struct proxy_tlshello *h)
{
	size_t take, want;

	while (h->status == TLSHELLO_NEED_MORE && h->walked < h->len) {
		if (h->rec_left == 0) {
			size_t before = h->walked;
			if (hello_record_header(h) != TLSHELLO_NEED_MORE ||
			    h->walked == before)
				break;	/* final, or a partial header */
			continue;
		}
		take = h->len - h->walked;
		if (take > h->rec_left)
			take = h->rec_left;
		if (h->hs_need == 0) {
			/* Still in the 4-byte handshake header. */
			want = TLS_HS_HEADER - h->hs_have;
			if (take > want)
				take = want;
			memcpy(h->hs_head + h->hs_have, h->buf + h->walked,
			    take);
		} else if (take > h->hs_need - h->hs_have) {
			take = h->hs_need - h->hs_have;
		}
		h->walked += take;
		h->rec_left -= take;
		h->hs_have += take;
		if (h->hs_need == 0 && h->hs_have == TLS_HS_HEADER &&
		    hello_header(h) != TLSHELLO_NEED_MORE)
			break;
		if (h->hs_need != 0 && h->hs_have == h->hs_need) {
			/* RFC 8446 section 5.1: nothing else of the
			 * handshake may share the ClientHello's last
			 * record in a client's first flight. */
			if (h->rec_left != 0)
				return hello_fail(h, TLSHELLO_MALFORMED,
				    "bytes after the ClientHello in its "
				    "record");
			return hello_complete(h);
		}
	}
	if (h->status == TLSHELLO_NEED_MORE && h->len == PROXY_TLSHELLO_MAX)
		return hello_fail(h, TLSHELLO_TOO_LARGE,
		    "ClientHello records longer than the buffer");
	return h->status;
}

void
proxy_tlshello_init(struct proxy_tlshello *h)
{
	h->status = TLSHELLO_NEED_MORE;
	h->why = NULL;
	h->name[0] = '\0';
	h->namelen = 0;
	h->len = 0;
	h->walked = 0;
	h->rec_left = 0;
	h->hs_have = 0;
	h->hs_need = 0;
	memset(h->hs_head, 0, sizeof(h->hs_head));
}

size_t
proxy_tlshello_room(const struct proxy_tlshello *h)
{
	return h->status == TLSHELLO_NEED_MORE ? PROXY_TLSHELLO_MAX - h->len :
	    0;
}

enum proxy_tlshello_status
proxy_tlshello_feed(struct proxy_tlshello *h, const void *data, size_t n,
    size_t *taken)
{
	size_t room = proxy_tlshello_room(h);

	if (n > room)
		n = room;
	if (taken != NULL)
		*taken = n;
	if (n == 0)
		return h->status;
	memcpy(h->buf + h->len, data, n);
	h->len += n;
	return hello_walk(h);
}

enum proxy_tlshello_status
proxy_tlshello_finish(struct proxy_tlshello *h)
{
	if (h->status == TLSHELLO_NEED_MORE && h->len > 0)
		return hello_fail(h, TLSHELLO_MALFORMED, "truncated");
	return h->status;
}

static char
hello_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

bool
proxy_tlshello_name_match(const char *name, size_t namelen, const char *host)
{
	size_t hostlen = strlen(host);

	if (namelen > 0 && name[namelen - 1] == '.')
		namelen--;
	if (hostlen > 0 && host[hostlen - 1] == '.')
		hostlen--;
	if (namelen == 0 || namelen != hostlen)
		return false;
	for (size_t i = 0; i < namelen; i++)
		if (hello_lower(name[i]) != hello_lower(host[i]))
			return false;
	return true;
}

const char *
proxy_tlshello_status_name(enum proxy_tlshello_status s)
{
	switch (s) {
	case TLSHELLO_NEED_MORE: return "need-more";
	case TLSHELLO_NOT_TLS: return "not-tls";
	case TLSHELLO_NO_SNI: return "no-sni";
	case TLSHELLO_SNI: return "sni";
	case TLSHELLO_SNI_EMPTY: return "sni-empty";
	case TLSHELLO_SNI_INVALID: return "sni-invalid";
	case TLSHELLO_SNI_MULTIPLE: return "sni-multiple";
	case TLSHELLO_ECH: return "ech";
	case TLSHELLO_MALFORMED: return "malformed";
	case TLSHELLO_TOO_LARGE: return "too-large";
	}
	return "?";
}
