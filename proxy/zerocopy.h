/*
 * Zero-copy relay between two connected sockets with splice(2), for
 * tunnel.c. Knows nothing about connections: it moves bytes, counts them,
 * stamps activity and calls done when the relay is over or failed.
 */
#ifndef CORDON_PROXY_ZEROCOPY_H
#define CORDON_PROXY_ZEROCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct zerocopy;

/* Where a relay reports: byte counters per direction (a -> b is 0), the
 * time of the last activity (time_mono_ms) and done(arg), called once
 * when both directions ended or on an error; done frees the relay. */
struct zerocopy_sink {
	uint64_t *count[2];
	int64_t *last_active_ms;
	void (*done)(void *arg);
	void *arg;
};

/* Allocates a relay that owns nothing yet. 0 and *out, or -ENOMEM. */
int proxy_zerocopy_new(struct zerocopy **out);
/* Takes the sockets a and b (they are closed by proxy_zerocopy_free) and
 * starts relaying on base. */
void proxy_zerocopy_start(struct zerocopy *zc, struct event_base *base,
    int a, int b, const struct zerocopy_sink *sink);
/* Before proxy_zerocopy_start: direction a -> b starts held. Nothing is
 * read from a until proxy_zerocopy_release (b -> a runs as usual), so the
 * caller may read a's first bytes itself and decide on them. */
void proxy_zerocopy_hold(struct zerocopy *zc);
/* Lifts the hold: the n bytes at data (what the caller read from a) are
 * sent to b first, at once as far as b takes them (the rest is copied and
 * sent when b is writable), counted as a -> b; then a is spliced as usual.
 * eof: the caller already read a's end, so a is not read again: b gets
 * the half-close once the n bytes are out (from the loop, never inside
 * this call, so done is not called from here). Returns 0, or a negative
 * errno (-ENOMEM, or b's send error): the caller then frees the relay. */
int proxy_zerocopy_release(struct zerocopy *zc, const void *data, size_t n,
    bool eof);
/* Socket a (side 0) or b (side 1); -1 before start. Still the relay's. */
int proxy_zerocopy_fd(const struct zerocopy *zc, int side);
/* Stops, closes the sockets and pipes, frees; accepts NULL. */
void proxy_zerocopy_free(struct zerocopy *zc);

#endif
