/*
 * The live output relay (relay.h): a marker stage (--out stdout only),
 * then a UTF-8 boundary stage and the cap, per stream.
 */
#include "runner/relay.h"

#include <string.h>

#include "common/util.h"

void
runner_relay_init(struct runner_relay *r, relay_fn fn, void *arg,
    uint64_t cap, const void *marker, size_t mlen)
{
	memset(r, 0, sizeof(*r));
	r->fn = fn;
	r->arg = arg;
	r->cap = cap;
	if (marker != NULL && mlen > 0 && mlen <= RELAY_MARKER_MAX) {
		memcpy(r->marker, marker, mlen);
		r->mlen = mlen;
	}
}

/* Passes p[0..n) on under the cap; n never ends inside a character
 * unless the cap or the end cut it. */
static void
relay_send(struct runner_relay *r, int s, const unsigned char *p, size_t n)
{
	uint64_t room = r->cap - r->sent[s];

	if (r->full[s] || n == 0)
		return;
	if (n > room) {
		/* The cap: never half a character, and nothing after. */
		n = (size_t)room;
		n -= util_utf8_partial_end(p, n);
		r->full[s] = true;
	}
	if (n == 0)
		return;
	r->sent[s] += n;
	r->fn(r->arg, s, p, n);
}

/* UTF-8 stage: what was carried, then p; holds back a new incomplete
 * sequence at the end. n <= RELAY_MARKER_MAX + RELAY_PIECE. */
static void
relay_utf8(struct runner_relay *r, int s, const unsigned char *p, size_t n)
{
	size_t len = r->ncarry[s], k;

	memcpy(r->work2, r->carry[s], len);
	memcpy(r->work2 + len, p, n);
	len += n;
	k = util_utf8_partial_end(r->work2, len);
	relay_send(r, s, r->work2, len - k);
	memcpy(r->carry[s], r->work2 + len - k, k);
	r->ncarry[s] = k;
}

/* The longest suffix of p[0..n) that is a proper prefix of the marker. */
static size_t
relay_marker_suffix(const struct runner_relay *r, const unsigned char *p,
    size_t n)
{
	size_t k = n < r->mlen - 1 ? n : r->mlen - 1;

	for (; k > 0; k--)
		if (memcmp(p + n - k, r->marker, k) == 0)
			return k;
	return 0;
}

/* Marker stage for one piece of stdout (n <= RELAY_PIECE). */
static void
relay_stdout(struct runner_relay *r, const unsigned char *p, size_t n)
{
	const unsigned char *m;
	size_t len, k;

	if (r->ended)
		return;
	if (r->mlen == 0) {
		relay_utf8(r, 1, p, n);
		return;
	}
	memcpy(r->work, r->hold, r->nhold);
	memcpy(r->work + r->nhold, p, n);
	len = r->nhold + n;
	r->nhold = 0;
	m = memmem(r->work, len, r->marker, r->mlen);
	if (m != NULL) {
		r->ended = true;
		relay_utf8(r, 1, r->work, (size_t)(m - r->work));
		return;
	}
	k = relay_marker_suffix(r, r->work, len);
	relay_utf8(r, 1, r->work, len - k);
	memcpy(r->hold, r->work + len - k, k);
	r->nhold = k;
}

void
runner_relay_chunk(void *arg, int stream, const void *data, size_t len)
{
	struct runner_relay *r = arg;
	const unsigned char *p = data;

	if (stream != 1 && stream != 2)
		return;
	while (len > 0) {
		size_t n = len < RELAY_PIECE ? len : RELAY_PIECE;

		if (stream == 1)
			relay_stdout(r, p, n);
		else
			relay_utf8(r, 2, p, n);
		p += n;
		len -= n;
	}
}

void
runner_relay_flush(struct runner_relay *r)
{
	if (!r->ended && r->nhold > 0) {
		memcpy(r->work, r->hold, r->nhold);
		relay_utf8(r, 1, r->work, r->nhold);
		r->nhold = 0;
	}
	for (int s = 1; s <= 2; s++) {
		memcpy(r->work2, r->carry[s], r->ncarry[s]);
		relay_send(r, s, r->work2, r->ncarry[s]);
		r->ncarry[s] = 0;
	}
}
