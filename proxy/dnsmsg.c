/*
 * DNS messages of the closed resolver (dnsmsg.h). A query is first walked
 * here, strictly, for what ldns 1.8.3 would let through (pointers in any
 * direction, TSIG records it leaks when repeated, several OPTs of which it
 * keeps the last, trailing bytes), then decoded by ldns_wire2pkt. Answers
 * are ldns_pkt values written by ldns_pkt2buffer_wire.
 */
#include "proxy/dnsmsg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#define DNS_FLAG_QR	0x80	/* in the third header byte */
#define DNS_OPCODE(w)	(((w)[2] >> 3) & 0x0f)
#define DNS_RR_FIXED	10	/* type, class, TTL, RDLENGTH */
#define DNS_RR_MIN	11	/* a root owner and the fixed fields */
#define DNS_EDNS_DO	0x8000

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Walks the name at *pos of w[0..len). A pointer must land past the header
 * and strictly before the start of the piece of name that holds it (the
 * name itself, or the name a previous pointer led to): every jump goes
 * back, so the walk ends. *pos moves past the name as it sits in the
 * message; *wirelen gets its uncompressed length. NULL or the broken rule.
 */
static const char *
dnsmsg_walk_name(const uint8_t *w, size_t len, size_t *pos, size_t *wirelen)
{
	size_t p = *pos, piece = *pos, n = 0, end = 0;
	uint8_t b;

	for (;;) {
		if (p >= len)
			return "truncated";
		b = w[p];
		if ((b & 0xc0) == 0xc0) {
			size_t target;

			if (p + 2 > len)
				return "truncated";
			target = (size_t)(b & 0x3f) << 8 | w[p + 1];
			if (target < PROXY_DNSMSG_HEADER)
				return "pointer-header";
			if (target >= piece)
				return "pointer-forward";
			if (end == 0)
				end = p + 2;
			p = piece = target;
			continue;
		}
		if (b & 0xc0)
			return "label-type";
		if (p + 1 + b > len)
			return "truncated";
		n += 1 + (size_t)b;
		if (n > PROXY_DNSMSG_NAME_WIRE_MAX)
			return "name-too-long";
		p += 1 + (size_t)b;
		if (b == 0)
			break;
	}
	*pos = end != 0 ? end : p;
	*wirelen = n;
	return NULL;
}

/* OPT data: options (code, length, bytes) that fill it exactly. */
static bool
dnsmsg_opt_options_ok(const uint8_t *d, size_t len)
{
	size_t p = 0;

	while (p < len) {
		if (len - p < 4 || len - p - 4 < rd16(d + p + 2))
			return false;
		p += 4 + (size_t)rd16(d + p + 2);
	}
	return true;
}

/* What the walk learnt about the OPT, for the version check. */
struct dnsmsg_walk {
	bool edns;
	uint8_t version;
};

/* The structural checks of proxy_dnsmsg_parse after the header's. */
static const char *
dnsmsg_walk(const uint8_t *w, size_t len, struct dnsmsg_walk *out)
{
	size_t pos = PROXY_DNSMSG_HEADER, nlen;
	unsigned arcount = rd16(w + 10);
	const char *why;

	memset(out, 0, sizeof(*out));
	if ((why = dnsmsg_walk_name(w, len, &pos, &nlen)) != NULL)
		return why;
	if (len - pos < 4)
		return "truncated";
	if (rd16(w + pos) == PROXY_DNS_TYPE_OPT)
		return "qtype-opt";
	pos += 4;
	for (unsigned i = 0; i < arcount; i++) {
		uint16_t type, rdlen;

		if ((why = dnsmsg_walk_name(w, len, &pos, &nlen)) != NULL)
			return why;
		if (len - pos < DNS_RR_FIXED)
			return "truncated";
		type = rd16(w + pos);
		rdlen = rd16(w + pos + 8);
		if (len - pos - DNS_RR_FIXED < rdlen)
			return "truncated";
		if (type != PROXY_DNS_TYPE_OPT)
			return "unexpected-record";
		if (out->edns)
			return "multiple-opt";
		if (nlen != 1)
			return "opt-owner";
		if (!dnsmsg_opt_options_ok(w + pos + DNS_RR_FIXED, rdlen))
			return "opt-options";
		out->edns = true;
		out->version = w[pos + 5];
		pos += DNS_RR_FIXED + (size_t)rdlen;
	}
	if (pos != len)
		return "trailing-bytes";
	return NULL;
}

/* The header's rules: NULL, or the rule and *status. */
static const char *
dnsmsg_check_header(const uint8_t *w, size_t len,
    enum proxy_dnsmsg_status *status)
{
	*status = DNSMSG_DROP;
	if (len < PROXY_DNSMSG_HEADER)
		return "short";
	if (w[2] & DNS_FLAG_QR)
		return "response";
	*status = DNSMSG_FORMERR;
	if (len > PROXY_DNSMSG_QUERY_MAX)
		return "too-large";
	*status = DNSMSG_NOTIMP;
	if (DNS_OPCODE(w) != 0)
		return "opcode";
	*status = DNSMSG_FORMERR;
	if (rd16(w + 4) != 1)
		return "qdcount";
	if (rd16(w + 6) != 0)
		return "ancount";
	if (rd16(w + 8) != 0)
		return "nscount";
	/* A question takes 5 bytes at least, a record 11. */
	if (PROXY_DNSMSG_HEADER + 5 + (size_t)rd16(w + 10) * DNS_RR_MIN > len)
		return "counts";
	*status = DNSMSG_OK;
	return NULL;
}

/* The question's name as text (see struct proxy_dnsmsg_query). */
static int
dnsmsg_name_text(const ldns_rdf *owner, char *out, size_t cap)
{
	char *s = ldns_rdf2str(owner);
	size_t n;

	if (s == NULL)
		return -ENOMEM;
	n = strlen(s);
	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n >= cap) {
		free(s);
		return -EBADMSG;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
	out[n] = '\0';
	free(s);
	return 0;
}

/* Decodes a walked message with ldns into q. */
static int
dnsmsg_decode(const uint8_t *wire, size_t len, struct proxy_dnsmsg_query *q)
{
	ldns_pkt *pkt = NULL;
	ldns_status st = ldns_wire2pkt(&pkt, wire, len);
	const ldns_rr *rr;
	const ldns_rdf *owner;
	int rc;

	if (st == LDNS_STATUS_MEM_ERR)
		return -ENOMEM;
	if (st != LDNS_STATUS_OK || ldns_pkt_qdcount(pkt) != 1 ||
	    (rr = ldns_rr_list_rr(ldns_pkt_question(pkt), 0)) == NULL ||
	    (owner = ldns_rr_owner(rr)) == NULL ||
	    ldns_rdf_size(owner) > sizeof(q->qname)) {
		ldns_pkt_free(pkt);
		return -EBADMSG;
	}
	q->id = ldns_pkt_id(pkt);
	q->rd = ldns_pkt_rd(pkt);
	q->cd = ldns_pkt_cd(pkt);
	q->qtype = (uint16_t)ldns_rr_get_type(rr);
	q->qclass = (uint16_t)ldns_rr_get_class(rr);
	q->qname_len = ldns_rdf_size(owner);
	memcpy(q->qname, ldns_rdf_data(owner), q->qname_len);
	rc = dnsmsg_name_text(owner, q->name, sizeof(q->name));
	q->edns = ldns_pkt_edns(pkt);
	if (q->edns) {
		q->edns_udp = ldns_pkt_edns_udp_size(pkt);
		q->edns_version = ldns_pkt_edns_version(pkt);
		q->edns_do = ldns_pkt_edns_do(pkt);
	}
	ldns_pkt_free(pkt);
	return rc;
}

int
proxy_dnsmsg_parse(const uint8_t *wire, size_t len,
    struct proxy_dnsmsg_query *q)
{
	struct dnsmsg_walk walk;
	int rc;

	memset(q, 0, sizeof(*q));
	q->why = dnsmsg_check_header(wire, len, &q->status);
	if (q->status == DNSMSG_DROP)
		return -EBADMSG;
	q->id = rd16(wire);
	q->opcode = (uint8_t)DNS_OPCODE(wire);
	q->rd = wire[2] & 0x01;
	if (q->why != NULL)
		return -EBADMSG;
	if ((q->why = dnsmsg_walk(wire, len, &walk)) != NULL) {
		q->status = DNSMSG_FORMERR;
		return -EBADMSG;
	}
	rc = dnsmsg_decode(wire, len, q);
	if (rc == -ENOMEM) {
		memset(q, 0, sizeof(*q));
		q->status = DNSMSG_DROP;
		q->why = "no-memory";
		return rc;
	}
	if (rc != 0 || q->edns != walk.edns) {
		/* The walk should have refused whatever ldns refuses. */
		q->status = DNSMSG_FORMERR;
		q->why = "ldns";
		return -EBADMSG;
	}
	if (q->edns && q->edns_version != 0) {
		q->status = DNSMSG_BADVERS;
		q->why = "edns-version";
		return -EBADMSG;
	}
	return 0;
}

size_t
proxy_dnsmsg_limit(const struct proxy_dnsmsg_query *q,
    enum proxy_dnsmsg_transport t)
{
	if (t == DNSMSG_TCP)
		return PROXY_DNSMSG_TCP_MAX;
	if (!q->edns || q->edns_udp <= PROXY_DNSMSG_UDP_MIN)
		return PROXY_DNSMSG_UDP_MIN;	/* RFC 6891 6.2.5: under 512
						   counts as 512 */
	return q->edns_udp < PROXY_DNSMSG_UDP_MAX ? q->edns_udp :
	    PROXY_DNSMSG_UDP_MAX;
}

/* A record owned by the question's name, class IN, pushed into pkt. */
static int
dnsmsg_push_record(ldns_pkt *pkt, ldns_pkt_section section,
    const struct proxy_dnsmsg_query *q, uint16_t type, uint16_t class,
    uint32_t ttl, ldns_rdf_type rdtype, const void *rdata, size_t rdlen)
{
	ldns_rr *rr = ldns_rr_new();
	ldns_rdf *owner = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME,
	    q->qname_len, q->qname);
	ldns_rdf *rd = rdata != NULL ? ldns_rdf_new_frm_data(rdtype, rdlen,
	    rdata) : NULL;

	if (rr == NULL || owner == NULL || (rdata != NULL && rd == NULL))
		goto bad;
	ldns_rr_set_owner(rr, owner);
	owner = NULL;
	ldns_rr_set_type(rr, (ldns_rr_type)type);
	ldns_rr_set_class(rr, (ldns_rr_class)class);
	ldns_rr_set_question(rr, section == LDNS_SECTION_QUESTION);
	ldns_rr_set_ttl(rr, ttl);
	if (rd != NULL && !ldns_rr_push_rdf(rr, rd))
		goto bad;
	rd = NULL;
	if (!ldns_pkt_push_rr(pkt, section, rr))
		goto bad;
	return 0;
bad:
	ldns_rdf_deep_free(rd);
	ldns_rdf_deep_free(owner);
	ldns_rr_free(rr);
	return -ENOMEM;
}

/* The EDE option (INFO-CODE, EXTRA-TEXT cut on a UTF-8 boundary). */
static int
dnsmsg_push_ede(ldns_pkt *pkt, const struct proxy_dnsmsg_reply *r)
{
	uint8_t data[2 + PROXY_DNSMSG_EDE_TEXT_MAX];
	size_t n = r->ede_text != NULL ? strlen(r->ede_text) : 0;
	ldns_edns_option_list *list = ldns_edns_option_list_new();
	ldns_edns_option *opt;

	if (list == NULL)
		return -ENOMEM;
	if (n > PROXY_DNSMSG_EDE_TEXT_MAX) {
		n = PROXY_DNSMSG_EDE_TEXT_MAX;
		/* Back off continuation bytes to the character's start. */
		while (n > 0 && ((unsigned char)r->ede_text[n] & 0xc0) == 0x80)
			n--;
	}
	data[0] = (uint8_t)(r->ede >> 8);
	data[1] = (uint8_t)r->ede;
	if (n > 0)
		memcpy(data + 2, r->ede_text, n);
	opt = ldns_edns_new_from_data(LDNS_EDNS_EDE, 2 + n, data);
	if (opt == NULL || !ldns_edns_option_list_push(list, opt)) {
		ldns_edns_deep_free(opt);
		ldns_edns_option_list_deep_free(list);
		return -ENOMEM;
	}
	ldns_pkt_set_edns_option_list(pkt, list);
	return 0;
}

/* The whole answer as an ldns packet; answers only when with_answers. */
static int
dnsmsg_build(const struct proxy_dnsmsg_query *q,
    const struct proxy_dnsmsg_reply *r, bool with_answers, ldns_pkt **out)
{
	ldns_pkt *pkt = ldns_pkt_new();
	int rc = -ENOMEM;

	*out = NULL;
	if (pkt == NULL)
		return -ENOMEM;
	ldns_pkt_set_id(pkt, q->id);
	ldns_pkt_set_qr(pkt, true);
	ldns_pkt_set_opcode(pkt, (ldns_pkt_opcode)q->opcode);
	ldns_pkt_set_rd(pkt, q->rd);
	ldns_pkt_set_cd(pkt, q->cd);
	ldns_pkt_set_ra(pkt, true);
	ldns_pkt_set_tc(pkt, !with_answers && r->na + r->naaaa > 0);
	ldns_pkt_set_rcode(pkt, (uint8_t)(r->rcode & 0x0f));
	if (dnsmsg_push_record(pkt, LDNS_SECTION_QUESTION, q, q->qtype,
	    q->qclass, 0, LDNS_RDF_TYPE_NONE, NULL, 0) != 0)
		goto out;
	for (size_t i = 0; with_answers && i < r->na; i++)
		if (dnsmsg_push_record(pkt, LDNS_SECTION_ANSWER, q,
		    PROXY_DNS_TYPE_A, PROXY_DNS_CLASS_IN, r->ttl,
		    LDNS_RDF_TYPE_A, &r->a[i], sizeof(r->a[i])) != 0)
			goto out;
	for (size_t i = 0; with_answers && i < r->naaaa; i++)
		if (dnsmsg_push_record(pkt, LDNS_SECTION_ANSWER, q,
		    PROXY_DNS_TYPE_AAAA, PROXY_DNS_CLASS_IN, r->ttl,
		    LDNS_RDF_TYPE_AAAA, &r->aaaa[i], sizeof(r->aaaa[i])) != 0)
			goto out;
	if (q->edns) {
		/* RFC 6891: an OPT only to a query that had one. */
		ldns_pkt_set_edns_udp_size(pkt, PROXY_DNSMSG_UDP_MAX);
		ldns_pkt_set_edns_extended_rcode(pkt, (uint8_t)(r->rcode >> 4));
		ldns_pkt_set_edns_version(pkt, 0);
		ldns_pkt_set_edns_z(pkt, q->edns_do ? DNS_EDNS_DO : 0);
		if (r->ede >= 0 && dnsmsg_push_ede(pkt, r) != 0)
			goto out;
	}
	*out = pkt;
	pkt = NULL;
	rc = 0;
out:
	ldns_pkt_free(pkt);
	return rc;
}

/* Writes pkt into out (after the TCP prefix); -EMSGSIZE over limit. */
static int
dnsmsg_write(const ldns_pkt *pkt, enum proxy_dnsmsg_transport t,
    size_t limit, uint8_t *out, size_t cap, size_t *outlen)
{
	ldns_buffer *buf = ldns_buffer_new(PROXY_DNSMSG_UDP_MAX);
	size_t n, pre = t == DNSMSG_TCP ? 2 : 0;
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	if (ldns_pkt2buffer_wire(buf, pkt) != LDNS_STATUS_OK ||
	    !ldns_buffer_status_ok(buf)) {
		rc = -ENOMEM;
	} else if ((n = ldns_buffer_position(buf)) > limit) {
		rc = -EMSGSIZE;
	} else if (pre + n > cap) {
		rc = -ENOSPC;
	} else {
		if (pre != 0) {
			out[0] = (uint8_t)(n >> 8);
			out[1] = (uint8_t)n;
		}
		memcpy(out + pre, ldns_buffer_begin(buf), n);
		*outlen = pre + n;
		rc = 0;
	}
	ldns_buffer_free(buf);
	return rc;
}

int
proxy_dnsmsg_answer(const struct proxy_dnsmsg_query *q,
    const struct proxy_dnsmsg_reply *r, enum proxy_dnsmsg_transport t,
    uint8_t *out, size_t cap, size_t *outlen)
{
	size_t limit = proxy_dnsmsg_limit(q, t);
	ldns_pkt *pkt = NULL;
	int rc;

	*outlen = 0;
	if ((q->status != DNSMSG_OK && q->status != DNSMSG_BADVERS) ||
	    q->qname_len == 0 || r->rcode > 4095 ||
	    (r->rcode > 15 && !q->edns) || r->ede > 65535 ||
	    r->na + r->naaaa > PROXY_DNSMSG_ANSWERS_MAX ||
	    (r->na > 0 && (r->a == NULL || q->qtype != PROXY_DNS_TYPE_A)) ||
	    (r->naaaa > 0 && (r->aaaa == NULL ||
	    q->qtype != PROXY_DNS_TYPE_AAAA)))
		return -EINVAL;
	if ((rc = dnsmsg_build(q, r, true, &pkt)) != 0)
		return rc;
	rc = dnsmsg_write(pkt, t, limit, out, cap, outlen);
	ldns_pkt_free(pkt);
	if (rc != -EMSGSIZE)
		return rc;
	/* Too large for the transport: TC, no answer records. */
	if ((rc = dnsmsg_build(q, r, false, &pkt)) != 0)
		return rc;
	rc = dnsmsg_write(pkt, t, limit, out, cap, outlen);
	ldns_pkt_free(pkt);
	/* The question and the OPT always fit (PROXY_DNSMSG_EDE_TEXT_MAX). */
	return rc == -EMSGSIZE ? -EINVAL : rc;
}

int
proxy_dnsmsg_reject(const uint8_t *wire, size_t len, unsigned rcode,
    enum proxy_dnsmsg_transport t, uint8_t *out, size_t cap,
    size_t *outlen)
{
	ldns_pkt *pkt;
	int rc;

	*outlen = 0;
	if (len < PROXY_DNSMSG_HEADER || (wire[2] & DNS_FLAG_QR) ||
	    rcode > 15)
		return -EINVAL;
	if ((pkt = ldns_pkt_new()) == NULL)
		return -ENOMEM;
	ldns_pkt_set_id(pkt, rd16(wire));
	ldns_pkt_set_qr(pkt, true);
	ldns_pkt_set_opcode(pkt, (ldns_pkt_opcode)DNS_OPCODE(wire));
	ldns_pkt_set_rd(pkt, wire[2] & 0x01);
	ldns_pkt_set_ra(pkt, true);
	ldns_pkt_set_rcode(pkt, (uint8_t)rcode);
	rc = dnsmsg_write(pkt, t, PROXY_DNSMSG_UDP_MIN, out, cap, outlen);
	ldns_pkt_free(pkt);
	return rc;
}

void
proxy_dnsmsg_tcp_init(struct proxy_dnsmsg_tcp *s)
{
	s->have = 0;
	s->need = 0;
	s->done = false;
}

int
proxy_dnsmsg_tcp_feed(struct proxy_dnsmsg_tcp *s, const uint8_t *data,
    size_t len, size_t *taken, const uint8_t **msg, size_t *msglen)
{
	size_t n;

	*taken = 0;
	*msg = NULL;
	*msglen = 0;
	if (s->done)
		proxy_dnsmsg_tcp_init(s);
	while (s->have < 2 && *taken < len)
		s->buf[s->have++] = data[(*taken)++];
	if (s->have < 2)
		return 0;
	s->need = (size_t)s->buf[0] << 8 | s->buf[1];
	if (s->need > PROXY_DNSMSG_QUERY_MAX)
		return -EMSGSIZE;
	n = s->need - (s->have - 2);
	if (n > len - *taken)
		n = len - *taken;
	if (n > 0)
		memcpy(s->buf + s->have, data + *taken, n);
	s->have += n;
	*taken += n;
	if (s->have - 2 < s->need)
		return 0;
	s->done = true;
	*msg = s->buf + 2;
	*msglen = s->need;
	return 1;
}

bool
proxy_dnsmsg_tcp_idle(const struct proxy_dnsmsg_tcp *s)
{
	return s->done || s->have == 0;
}
