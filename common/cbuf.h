/*
 * A byte buffer created with a hard maximum size. Appends past the maximum
 * are dropped (and counted), never stored: the pattern for capped output.
 * The data is always NUL-terminated for convenience (not counted in len).
 */
#ifndef CORDON_COMMON_CBUF_H
#define CORDON_COMMON_CBUF_H

#include <stdbool.h>
#include <stddef.h>

struct cbuf;

/* New empty buffer that will never hold more than limit bytes. Returns NULL
 * on ENOMEM. Memory grows on demand, so a large limit costs nothing until
 * used. Caller frees with cbuf_free. */
struct cbuf *cbuf_new(size_t limit);
void cbuf_free(struct cbuf *b);	/* accepts NULL */

/* Appends up to the limit. Returns the number of bytes stored (less than n
 * when the limit was reached: the rest is counted as dropped), or -ENOMEM
 * (nothing stored). */
long cbuf_append(struct cbuf *b, const void *data, size_t n);
int cbuf_append_str(struct cbuf *b, const char *s);	/* 0, -ENOSPC or -ENOMEM */

const char *cbuf_data(const struct cbuf *b);	/* never NULL */
size_t cbuf_len(const struct cbuf *b);
size_t cbuf_limit(const struct cbuf *b);
/* Total bytes offered to the buffer, stored or not. */
unsigned long long cbuf_seen(const struct cbuf *b);
bool cbuf_truncated(const struct cbuf *b);
/* Empties the buffer (keeps its memory and limit); clears the counters. */
void cbuf_reset(struct cbuf *b);
/* Hands the storage to the caller (free() it); the buffer becomes empty. */
char *cbuf_steal(struct cbuf *b, size_t *len);

#endif
