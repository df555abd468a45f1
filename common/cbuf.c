/*
 * Capped buffer (see cbuf.h). Grows by doubling up to its limit; the limit
 * is set at creation and enforced only here. KEEP_TAIL and KEEP_BOTH stay
 * one plain buffer until the first byte must be dropped; then the buffer
 * is "cut": data[0..hlen) is the head and data[hmax..limit) a ring of the
 * newest bytes, joined with the marker into `view` only when read.
 */
#include "common/cbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define MARKER_FMT "[cordon: %llu bytes dropped here]\n"
#define MARKER_FIXED (sizeof("[cordon:  bytes dropped here]\n") - 1)

struct cbuf {
	char *data;
	size_t len;		/* linear bytes stored (until cut) */
	size_t cap;		/* allocated bytes, excluding the NUL */
	size_t limit;
	enum cbuf_keep keep;
	size_t hmax;		/* cbuf_keep_head(limit, keep) */
	unsigned long long seen;
	bool cut;		/* dropped something: head + ring form */
	size_t hlen;		/* cut: head bytes, data[0..hlen) */
	size_t rlen, rpos;	/* cut: ring fill, index of its oldest byte */
	char *view;		/* cut: joined bytes, limit + 1 */
	size_t vlen;
	bool stale;		/* view is older than the ring */
};

static char cbuf_empty[1];

size_t
cbuf_keep_head(size_t limit, enum cbuf_keep keep)
{
	switch (keep) {
	case CBUF_KEEP_TAIL:
		return 0;
	case CBUF_KEEP_BOTH:
		return limit / 2;
	case CBUF_KEEP_HEAD:
		break;
	}
	return limit;
}

int
cbuf_keep_parse(const char *s, enum cbuf_keep *out)
{
	static const enum cbuf_keep all[] = { CBUF_KEEP_HEAD, CBUF_KEEP_TAIL,
	    CBUF_KEEP_BOTH };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(s, cbuf_keep_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	return -EINVAL;
}

const char *
cbuf_keep_name(enum cbuf_keep keep)
{
	switch (keep) {
	case CBUF_KEEP_TAIL:
		return "tail";
	case CBUF_KEEP_BOTH:
		return "both";
	case CBUF_KEEP_HEAD:
		break;
	}
	return "head";
}

struct cbuf *
cbuf_new_keep(size_t limit, enum cbuf_keep keep)
{
	struct cbuf *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->limit = limit;
	b->keep = keep;
	b->hmax = cbuf_keep_head(limit, keep);
	return b;
}

struct cbuf *
cbuf_new(size_t limit)
{
	return cbuf_new_keep(limit, CBUF_KEEP_HEAD);
}

void
cbuf_free(struct cbuf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	free(b->view);
	free(b);
}

static int
cbuf_reserve(struct cbuf *b, size_t want)
{
	size_t ncap;
	char *p;

	if (want <= b->cap && b->data != NULL)
		return 0;
	ncap = b->cap ? b->cap : 256;
	while (ncap < want)
		ncap = ncap > b->limit / 2 ? b->limit : ncap * 2;
	if (ncap > b->limit)
		ncap = b->limit;
	p = realloc(b->data, ncap + 1);
	if (p == NULL)
		return -ENOMEM;
	b->data = p;
	b->cap = ncap;
	return 0;
}

/* Everything a cut buffer needs, allocated before anything changes. */
static int
cbuf_reserve_cut(struct cbuf *b)
{
	if (cbuf_reserve(b, b->limit) < 0)
		return -ENOMEM;
	if (b->view == NULL && (b->view = malloc(b->limit + 1)) == NULL)
		return -ENOMEM;
	return 0;
}

/* Bytes the linear buffer can still take as they come. */
static size_t
cbuf_room(const struct cbuf *b)
{
	return b->cut ? 0 : b->limit - b->len;
}

static void
cbuf_put_linear(struct cbuf *b, const void *data, size_t n)
{
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* Writes n bytes into the ring as its newest; returns how many it holds
 * of them. */
static size_t
cbuf_put_ring(struct cbuf *b, const char *p, size_t n)
{
	size_t rc = b->limit - b->hmax, w, first, total;
	char *ring = b->data + b->hmax;

	b->stale = true;
	if (rc == 0 || n == 0)
		return 0;
	if (n >= rc) {
		memcpy(ring, p + n - rc, rc);
		b->rpos = 0;
		b->rlen = rc;
		return rc;
	}
	w = (b->rpos + b->rlen) % rc;
	first = n < rc - w ? n : rc - w;
	memcpy(ring + w, p, first);
	memcpy(ring, p + first, n - first);
	total = b->rlen + n;
	if (total > rc) {
		b->rpos = (b->rpos + total - rc) % rc;
		b->rlen = rc;
	} else {
		b->rlen = total;
	}
	return n;
}

long
cbuf_append(struct cbuf *b, const void *data, size_t n)
{
	size_t room = cbuf_room(b);
	size_t take = n < room ? n : room;
	size_t held;

	if (n > room && b->keep != CBUF_KEEP_HEAD && !b->cut &&
	    cbuf_reserve_cut(b) < 0)
		return -ENOMEM;
	if (take > 0) {
		if (cbuf_reserve(b, b->len + take) < 0)
			return -ENOMEM;
		cbuf_put_linear(b, data, take);
	}
	b->seen += n;
	if (n == take || b->keep == CBUF_KEEP_HEAD)
		return (long)take;
	if (!b->cut) {
		/* Full: the head stays, data[hmax..limit) becomes the ring
		 * (already in order, oldest first). */
		b->cut = true;
		b->hlen = b->hmax;
		b->rpos = 0;
		b->rlen = b->limit - b->hmax;
	}
	held = cbuf_put_ring(b, (const char *)data + take, n - take);
	return (long)(take + held);
}

int
cbuf_append_str(struct cbuf *b, const char *s)
{
	size_t n = strlen(s);
	long r;

	if (n > cbuf_room(b)) {
		b->seen += n;
		return -ENOSPC;
	}
	r = cbuf_append(b, s, n);
	return r < 0 ? (int)r : 0;
}

struct cbuf *
cbuf_new_rekept(size_t limit, enum cbuf_keep keep, const void *kept,
    size_t len, unsigned long long seen)
{
	const unsigned char *k = kept;
	size_t h = cbuf_keep_head(limit, keep);
	struct cbuf *b = cbuf_new_keep(limit, keep);

	if (h > len)
		h = len;
	if (b == NULL || cbuf_append(b, k, h) < 0 || (seen > len &&
	    cbuf_gap(b, seen - len) < 0) ||
	    cbuf_append(b, k + h, len - h) < 0) {
		cbuf_free(b);
		return NULL;
	}
	return b;
}

int
cbuf_gap(struct cbuf *b, unsigned long long n)
{
	if (n == 0)
		return 0;
	if (b->keep == CBUF_KEEP_HEAD) {
		b->seen += n;
		return 0;
	}
	if (!b->cut) {
		if (cbuf_reserve_cut(b) < 0)
			return -ENOMEM;
		b->cut = true;
		b->hlen = b->len < b->hmax ? b->len : b->hmax;
	}
	b->rpos = 0;
	b->rlen = 0;
	b->seen += n;
	b->stale = true;
	return 0;
}

static unsigned
digits(unsigned long long v)
{
	unsigned n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* Copies n ring bytes starting `from` places after the oldest. */
static void
cbuf_copy_ring(const struct cbuf *b, size_t from, size_t n, char *out)
{
	size_t rc = b->limit - b->hmax, i = (b->rpos + from) % rc;
	size_t first = n < rc - i ? n : rc - i;

	memcpy(out, b->data + b->hmax + i, first);
	memcpy(out + first, b->data + b->hmax, n - first);
}

/* Builds the view of a cut buffer: the head (cut at a character
 * boundary), the marker when it fits, and the newest ring bytes that fill
 * the rest (starting at a character boundary). The marker's room is
 * reserved for as many digits as `seen` has, so the total never passes
 * the limit; N itself is exact. */
static void
cbuf_settle(struct cbuf *b)
{
	const unsigned char *ring = (const unsigned char *)b->data + b->hmax;
	size_t rc = b->limit - b->hmax, h, tl, skip = 0, mres, pos;
	unsigned long long dropped;
	bool nl, marker;

	h = b->hlen - util_utf8_partial_end(b->data, b->hlen);
	nl = h > 0 && b->data[h - 1] != '\n';
	mres = MARKER_FIXED + digits(b->seen) + (nl ? 1 : 0);
	marker = b->limit - h >= mres;
	tl = b->limit - h - (marker ? mres : 0);
	if (tl > b->rlen)
		tl = b->rlen;
	while (skip < 3 && skip < tl && (ring[(b->rpos + b->rlen - tl + skip) %
	    rc] & 0xC0) == 0x80)
		skip++;
	dropped = b->seen - h - (tl - skip);
	memcpy(b->view, b->data, h);
	pos = h;
	if (marker) {
		if (nl)
			b->view[pos++] = '\n';
		pos += (size_t)snprintf(b->view + pos, b->limit + 1 - pos,
		    MARKER_FMT, dropped);
	}
	if (tl > skip)
		cbuf_copy_ring(b, b->rlen - tl + skip, tl - skip,
		    b->view + pos);
	pos += tl - skip;
	b->view[pos] = '\0';
	b->vlen = pos;
	b->stale = false;
}

/* A cut buffer's view is a cache of its ring: reading it through a const
 * pointer may build it (the object itself is never const: cbuf_new). */
static const struct cbuf *
cbuf_view(const struct cbuf *b)
{
	if (b->cut && b->stale)
		cbuf_settle((struct cbuf *)b);
	return b;
}

const char *
cbuf_data(const struct cbuf *b)
{
	if (cbuf_view(b)->cut)
		return b->view;
	return b->data != NULL ? b->data : cbuf_empty;
}

size_t
cbuf_len(const struct cbuf *b)
{
	return cbuf_view(b)->cut ? b->vlen : b->len;
}

size_t
cbuf_limit(const struct cbuf *b)
{
	return b->limit;
}

enum cbuf_keep
cbuf_keep_mode(const struct cbuf *b)
{
	return b->keep;
}

unsigned long long
cbuf_seen(const struct cbuf *b)
{
	return b->seen;
}

bool
cbuf_truncated(const struct cbuf *b)
{
	return b->cut || b->seen > b->len;
}

void
cbuf_reset(struct cbuf *b)
{
	b->len = 0;
	b->seen = 0;
	b->cut = false;
	b->hlen = b->rlen = b->rpos = b->vlen = 0;
	b->stale = false;
	if (b->data != NULL)
		b->data[0] = '\0';
}

char *
cbuf_steal(struct cbuf *b, size_t *len)
{
	char *p;

	if (b->cut) {
		(void)cbuf_view(b);
		p = b->view;
		if (len != NULL)
			*len = b->vlen;
		b->view = NULL;
		cbuf_reset(b);
		return p;
	}
	p = b->data;
	if (len != NULL)
		*len = b->len;
	if (p == NULL)
		p = calloc(1, 1);
	b->data = NULL;
	b->cap = 0;
	cbuf_reset(b);
	return p;
}
