/*
 * libFuzzer target for the ClientHello parser: the input is fed whole,
 * then again in pieces whose sizes come from the input itself; both must
 * reach the same status and name (arrival must not matter), the bytes held
 * must be the input's first bytes, and a name, when there is one, must be
 * a NUL-free string of at most PROXY_TLSHELLO_NAME_MAX bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/tlshello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct proxy_tlshello whole, pieces;

static void
check_one(const struct proxy_tlshello *h, const uint8_t *data, size_t size)
{
	if (h->len > PROXY_TLSHELLO_MAX || h->len > size ||
	    memcmp(h->buf, data, h->len) != 0)
		abort();
	if (h->namelen > PROXY_TLSHELLO_NAME_MAX ||
	    strlen(h->name) != h->namelen)
		abort();
	if ((h->status == TLSHELLO_SNI) != (h->namelen > 0))
		abort();
	if ((h->status == TLSHELLO_MALFORMED ||
	    h->status == TLSHELLO_TOO_LARGE) != (h->why != NULL))
		abort();
	if (h->status != TLSHELLO_NEED_MORE && proxy_tlshello_room(h) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0, piece, taken, k = 0;

	proxy_tlshello_init(&whole);
	(void)proxy_tlshello_feed(&whole, data, size, &taken);
	check_one(&whole, data, size);

	proxy_tlshello_init(&pieces);
	while (off < size && pieces.status == TLSHELLO_NEED_MORE) {
		/* 1..16 bytes, chosen by the input's bytes in turn. */
		piece = 1 + data[k++ % size] % 16;
		if (piece > size - off)
			piece = size - off;
		(void)proxy_tlshello_feed(&pieces, data + off, piece, &taken);
		if (taken > piece)
			abort();
		off += taken;
		if (taken == 0)
			break;
	}
	check_one(&pieces, data, size);
	/* Same verdict; the whole feed may hold more bytes after a final
	 * status (they arrived in the same piece). */
	if (whole.status != pieces.status ||
	    strcmp(whole.name, pieces.name) != 0)
		abort();
	if (pieces.len > whole.len)
		abort();
	/* EOF: only an undecided, non-empty stream changes (truncated). */
	{
		enum proxy_tlshello_status before = whole.status;
		enum proxy_tlshello_status after = proxy_tlshello_finish(&whole);
		if (before != TLSHELLO_NEED_MORE && after != before)
			abort();
		if (before == TLSHELLO_NEED_MORE && whole.len > 0 &&
		    after != TLSHELLO_MALFORMED)
			abort();
	}
	return 0;
}
