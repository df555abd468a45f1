/*
 * A byte buffer created with a hard maximum size: the pattern for capped
 * output. It never holds more than its limit, whatever is offered; what
 * does not fit is counted. Which part is kept is chosen at creation:
 *
 *   CBUF_KEEP_HEAD  the first `limit` bytes; the rest is dropped. Bytes
 *                   are kept exactly as they came (no marker).
 *   CBUF_KEEP_TAIL  the last bytes, after one marker line.
 *   CBUF_KEEP_BOTH  the first limit/2 bytes, one marker line, then as much
 *                   of the end as fills the limit.
 *
 * The marker line (KEEP_TAIL, KEEP_BOTH) is
 *   "[cordon: N bytes dropped here]\n"
 * preceded by '\n' when the kept head does not end in one; N counts every
 * byte offered and not shown. It is ASCII and counts against the limit;
 * when it does not fit (a limit under ~40 bytes), the pieces are joined
 * without it (cbuf_truncated still says so).
 *
 * The cut of KEEP_TAIL and KEEP_BOTH falls on UTF-8 character boundaries:
 * an incomplete multibyte sequence at the end of the head and continuation
 * bytes (at most 3) at the start of the tail are dropped with the rest and
 * counted in N. So the marker never splits a well-formed multibyte
 * sequence, and valid UTF-8 stays valid. KEEP_HEAD cuts at the byte, as
 * it always did (a cut sequence is the JSON encoder's to replace).
 *
 * Memory: KEEP_HEAD grows on demand up to the limit. The other modes do
 * too until the first byte is dropped; from then on they hold a fixed
 * 2 * limit (the ring of kept bytes, and the joined view that cbuf_data
 * returns), however much more is offered. The data is always
 * NUL-terminated for convenience (not counted in the length).
 */
#ifndef CORDON_COMMON_CBUF_H
#define CORDON_COMMON_CBUF_H

#include <stdbool.h>
#include <stddef.h>

struct cbuf;

enum cbuf_keep {
	CBUF_KEEP_HEAD = 0,
	CBUF_KEEP_TAIL,
	CBUF_KEEP_BOTH,
};

/* New empty buffer that will never hold more than limit bytes, keeping the
 * head (cbuf_new) or as keep says. Returns NULL on ENOMEM. Memory grows on
 * demand, so a large limit costs nothing until used. Caller frees with
 * cbuf_free. */
struct cbuf *cbuf_new(size_t limit);
struct cbuf *cbuf_new_keep(size_t limit, enum cbuf_keep keep);
void cbuf_free(struct cbuf *b);	/* accepts NULL */

/* Offers n bytes. Returns the number of bytes stored now (less than n when
 * something was dropped; with KEEP_TAIL/KEEP_BOTH stored bytes may later
 * give way to newer ones), or -ENOMEM (nothing stored, nothing counted). */
long cbuf_append(struct cbuf *b, const void *data, size_t n);
/* All of s, or nothing: 0, -ENOSPC (nothing stored, counted as seen) or
 * -ENOMEM. For KEEP_HEAD buffers (text built up to a bound). */
int cbuf_append_str(struct cbuf *b, const char *s);
/* Counts n bytes that were produced here but are not available (dropped
 * elsewhere, e.g. by a capped relay): they are seen and dropped, and what
 * was kept after the head so far is dropped with them, since it no longer
 * ends the stream. Later appends form the tail. 0 or -ENOMEM. */
int cbuf_gap(struct cbuf *b, unsigned long long n);
/* A new buffer of limit and keep holding what a relay capped the same way
 * passed on: kept[0..len) is its first cbuf_keep_head(limit, keep) bytes,
 * then the last ones it held back, seen all the bytes the source wrote
 * (seen > len: the rest were dropped between). The result has the same
 * head, marker and tail, and truncated flag, as one buffer that had taken
 * the whole stream. NULL on ENOMEM (caller frees with cbuf_free). */
struct cbuf *cbuf_new_rekept(size_t limit, enum cbuf_keep keep,
    const void *kept, size_t len, unsigned long long seen);

/* The kept bytes (KEEP_TAIL/KEEP_BOTH: head, marker and tail joined; the
 * join is built here on demand after a change, in memory reserved when the
 * first byte was dropped, so it cannot fail). Never NULL; valid until the
 * next call that changes b. */
const char *cbuf_data(const struct cbuf *b);
size_t cbuf_len(const struct cbuf *b);
size_t cbuf_limit(const struct cbuf *b);
enum cbuf_keep cbuf_keep_mode(const struct cbuf *b);
/* Total bytes offered to the buffer, stored or not (gaps included). */
unsigned long long cbuf_seen(const struct cbuf *b);
/* True when something offered is not in cbuf_data. */
bool cbuf_truncated(const struct cbuf *b);
/* Empties the buffer (keeps its memory, limit and mode); clears the
 * counters. */
void cbuf_reset(struct cbuf *b);
/* Hands the kept bytes (as cbuf_data) to the caller (free() them); the
 * buffer becomes empty. NULL on ENOMEM only for an empty buffer that never
 * allocated. */
char *cbuf_steal(struct cbuf *b, size_t *len);

/* How many leading bytes a buffer of this limit and mode keeps as its head
 * before it starts keeping a tail: limit (HEAD), 0 (TAIL), limit / 2
 * (BOTH). A relay that caps a stream the same way (the --out wrapper)
 * passes these first bytes on at once and holds back only the last
 * limit - head of the rest. */
size_t cbuf_keep_head(size_t limit, enum cbuf_keep keep);

/* "head", "tail", "both" <-> the mode. parse: 0 or -EINVAL. */
int cbuf_keep_parse(const char *s, enum cbuf_keep *out);
const char *cbuf_keep_name(enum cbuf_keep keep);

#endif
