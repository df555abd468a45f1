/*
 * Capped buffer (see cbuf.h). Grows by doubling up to its limit; the limit
 * is set at creation and enforced only here, in cbuf_append.
 */
#include "common/cbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cbuf {
	char *data;
	size_t len;
	size_t cap;	/* allocated bytes, excluding the NUL */
	size_t limit;
	unsigned long long seen;
};

static char cbuf_empty[1];

struct cbuf *
cbuf_new(size_t limit)
{
	struct cbuf *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->limit = limit;
	return b;
}

void
cbuf_free(struct cbuf *b)
{
	if (b == NULL)
		return;
	free(b->data);
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

long
cbuf_append(struct cbuf *b, const void *data, size_t n)
{
	size_t room = b->limit - b->len;
	size_t take = n < room ? n : room;

	if (take > 0) {
		if (cbuf_reserve(b, b->len + take) < 0)
			return -ENOMEM;
		memcpy(b->data + b->len, data, take);
		b->len += take;
		b->data[b->len] = '\0';
	}
	b->seen += n;
	return (long)take;
}

int
cbuf_append_str(struct cbuf *b, const char *s)
{
	size_t n = strlen(s);
	long r;

	if (n > b->limit - b->len) {
		b->seen += n;
		return -ENOSPC;
	}
	r = cbuf_append(b, s, n);
	return r < 0 ? (int)r : 0;
}

const char *
cbuf_data(const struct cbuf *b)
{
	return b->data != NULL ? b->data : cbuf_empty;
}

size_t
cbuf_len(const struct cbuf *b)
{
	return b->len;
}

size_t
cbuf_limit(const struct cbuf *b)
{
	return b->limit;
}

unsigned long long
cbuf_seen(const struct cbuf *b)
{
	return b->seen;
}

bool
cbuf_truncated(const struct cbuf *b)
{
	return b->seen > b->len;
}

void
cbuf_reset(struct cbuf *b)
{
	b->len = 0;
	b->seen = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

char *
cbuf_steal(struct cbuf *b, size_t *len)
{
	char *p = b->data;

	if (len != NULL)
		*len = b->len;
	if (p == NULL)
		p = calloc(1, 1);
	b->data = NULL;
	b->cap = 0;
	b->len = 0;
	b->seen = 0;
	return p;
}
