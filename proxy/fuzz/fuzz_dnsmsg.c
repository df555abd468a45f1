/*
 * libFuzzer target for the closed resolver: the input is parsed as a query
 * (UDP), and fed as a TCP stream in pieces whose sizes come from the input.
 * Checked: the status and its reason agree; our own walk refuses whatever
 * ldns refuses (never the "ldns" reason); a parsed name is lowercase text
 * of bounded length; every answerable query gets an answer from the
 * decision and several replies (refusals with EDE text taken from the
 * input, A records from none to the most, both transports) that ldns reads
 * back with the same ID, question and rcode, within the transport's limit,
 * TC only without records; FORMERR/NOTIMP get a 12-byte header; the TCP
 * stream gives back exactly the framed messages.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "proxy/dnsmsg.h"
#include "proxy/dnsresolve.h"
#include "proxy/synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[2 + PROXY_DNSMSG_TCP_MAX];

/* The answer in out[0..len) as ldns reads it must match q and r. */
static void
check_answer(const struct proxy_dnsmsg_query *q, unsigned rcode,
    enum proxy_dnsmsg_transport t, size_t len)
{
	size_t pre = t == DNSMSG_TCP ? 2 : 0;
	ldns_pkt *pkt = NULL;
	const ldns_rr *qr;
	const ldns_rdf *owner;

	if (len < pre + 12 || len - pre > proxy_dnsmsg_limit(q, t))
		abort();
	if (pre != 0 && (size_t)(out[0] << 8 | out[1]) != len - 2)
		abort();
	if (ldns_wire2pkt(&pkt, out + pre, len - pre) != LDNS_STATUS_OK)
		abort();
	qr = ldns_rr_list_rr(ldns_pkt_question(pkt), 0);
	owner = qr != NULL ? ldns_rr_owner(qr) : NULL;
	if (ldns_pkt_id(pkt) != q->id || !ldns_pkt_qr(pkt) ||
	    ldns_pkt_aa(pkt) || !ldns_pkt_ra(pkt) || owner == NULL ||
	    ldns_rdf_size(owner) != q->qname_len ||
	    memcmp(ldns_rdf_data(owner), q->qname, q->qname_len) != 0 ||
	    ldns_rr_get_type(qr) != q->qtype ||
	    ldns_rr_get_class(qr) != q->qclass)
		abort();
	if ((unsigned)(ldns_pkt_get_rcode(pkt) |
	    ldns_pkt_edns_extended_rcode(pkt) << 4) != rcode)
		abort();
	if (ldns_pkt_edns(pkt) != q->edns)
		abort();
	if (ldns_pkt_tc(pkt) && ldns_pkt_ancount(pkt) != 0)
		abort();
	ldns_pkt_free(pkt);
}

static bool
fuzz_allowed(const char *name, void *arg, char *why, size_t len)
{
	/* Allow by the name's shape, so both branches are reached. */
	(void)arg;
	if (strlen(name) % 3 == 0)
		return true;
	memset(why, 'x', len);
	return false;
}

static void
answers(const struct proxy_dnsmsg_query *q, const uint8_t *data,
    size_t size)
{
	static struct in_addr as[PROXY_DNSMSG_ANSWERS_MAX];
	char text[PROXY_DNSMSG_EDE_TEXT_MAX + 40];
	struct proxy_dnsmsg_reply r = { .ede = -1, .ttl = 30 };
	struct proxy_synth *synth = NULL;
	struct proxy_dnsresolve_out o;
	struct proxy_dnsresolve_in in = { .q = q, .policy = "fuzz",
	    .allowed = fuzz_allowed };
	size_t len, n = 0;

	/* Refusals with EXTRA-TEXT from the input (NUL-free). */
	len = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
	for (size_t i = 0; i < len; i++)
		text[i] = data[i] != 0 ? (char)data[i] : '?';
	text[len] = '\0';
	r.rcode = q->status == DNSMSG_BADVERS ? PROXY_DNS_RCODE_BADVERS :
	    PROXY_DNS_RCODE_NXDOMAIN;
	r.ede = PROXY_DNS_EDE_BLOCKED;
	r.ede_text = text;
	for (int t = DNSMSG_UDP; t <= DNSMSG_TCP; t++) {
		if (proxy_dnsmsg_answer(q, &r, t, out, sizeof(out), &len) != 0)
			abort();
		check_answer(q, r.rcode, t, len);
	}
	/* A records, from none to the most, when the question is A. */
	if (size > 0)
		n = data[size - 1] % (1 + PROXY_DNSMSG_ANSWERS_MAX);
	if (q->qtype == PROXY_DNS_TYPE_A && q->status == DNSMSG_OK) {
		memset(&r, 0, sizeof(r));
		r.ede = -1;
		r.a = as;
		r.na = n;
		for (size_t i = 0; i < n; i++)
			as[i].s_addr = htonl(0xc6120001u + (uint32_t)i);
		for (int t = DNSMSG_UDP; t <= DNSMSG_TCP; t++) {
			if (proxy_dnsmsg_answer(q, &r, t, out, sizeof(out),
			    &len) != 0)
				abort();
			check_answer(q, 0, t, len);
		}
	}
	/* The decision, for each upstream outcome. */
	if (proxy_synth_new(4, &synth) != 0)
		return;
	in.synth = synth;
	for (int up = DNSRESOLVE_UP_NONE; up <= DNSRESOLVE_UP_FAILED; up++) {
		in.upstream = (enum proxy_dnsresolve_upstream)up;
		in.rate_limited = size > 0 && data[0] == 0xff;
		if (proxy_dnsresolve_decide(&in, &o) != 0)
			abort();
		if (o.action == DNSRESOLVE_LOOKUP && !o.allowed)
			abort();
		if (o.action != DNSRESOLVE_ANSWER)
			continue;
		if (proxy_dnsmsg_answer(q, &o.reply, DNSMSG_UDP, out,
		    sizeof(out), &len) != 0)
			abort();
		check_answer(q, o.reply.rcode, DNSMSG_UDP, len);
	}
	proxy_synth_free(synth);
}

static void
one_message(const uint8_t *data, size_t size)
{
	struct proxy_dnsmsg_query q;
	size_t len;
	int rc = proxy_dnsmsg_parse(data, size, &q);

	if ((rc == 0) != (q.status == DNSMSG_OK) ||
	    (q.status == DNSMSG_OK) != (q.why == NULL))
		abort();
	if (rc != 0 && rc != -EBADMSG)
		abort();
	if (q.why != NULL && strcmp(q.why, "ldns") == 0)
		abort();	/* the walk let through what ldns refuses */
	if (q.status == DNSMSG_OK || q.status == DNSMSG_BADVERS) {
		size_t n = strnlen(q.name, sizeof(q.name));

		if (n == sizeof(q.name) || q.qname_len < 1 ||
		    q.qname_len > PROXY_DNSMSG_NAME_WIRE_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if (q.name[i] >= 'A' && q.name[i] <= 'Z')
				abort();
		answers(&q, data, size);
	}
	if (q.status == DNSMSG_FORMERR || q.status == DNSMSG_NOTIMP) {
		unsigned rcode = q.status == DNSMSG_FORMERR ? 1 : 4;

		if (proxy_dnsmsg_reject(data, size, rcode, DNSMSG_UDP, out,
		    sizeof(out), &len) != 0 || len != 12 ||
		    memcmp(out, data, 2) != 0 || (out[3] & 15) != rcode)
			abort();
	}
	if (q.status == DNSMSG_DROP && proxy_dnsmsg_reject(data, size, 1,
	    DNSMSG_UDP, out, sizeof(out), &len) != -EINVAL)
		abort();
}

/* The input as a TCP stream, in pieces of 1-16 bytes chosen by the input;
 * what comes out must be the frames the input holds. */
static void
stream(const uint8_t *data, size_t size)
{
	static struct proxy_dnsmsg_tcp s;
	size_t off = 0, frame = 0, k = 0;

	proxy_dnsmsg_tcp_init(&s);
	while (off < size) {
		size_t piece = 1 + data[k++ % size] % 16, taken, mlen;
		const uint8_t *msg;
		int rc;

		if (piece > size - off)
			piece = size - off;
		rc = proxy_dnsmsg_tcp_feed(&s, data + off, piece, &taken,
		    &msg, &mlen);
		if (taken > piece)
			abort();
		off += taken;
		if (rc == -EMSGSIZE) {
			/* Only for an announced length over the max. */
			if (frame + 2 > size || (size_t)(data[frame] << 8 |
			    data[frame + 1]) <= PROXY_DNSMSG_QUERY_MAX)
				abort();
			return;
		}
		if (rc == 0 && taken != piece)
			abort();
		if (rc == 1) {
			size_t want = (size_t)(data[frame] << 8 |
			    data[frame + 1]);

			if (mlen != want || frame + 2 + want != off ||
			    memcmp(msg, data + frame + 2, mlen) != 0)
				abort();
			frame = off;
		}
	}
	if (proxy_dnsmsg_tcp_idle(&s) != (frame == size))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one_message(data, size);
	stream(data, size);
	return 0;
}
