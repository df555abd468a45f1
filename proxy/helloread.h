/*
 * The first bytes of a CONNECT tunnel's client, read into a ClientHello
 * parser (tlshello.h) for the SNI check, with a deadline. Either it reads a
 * socket itself (the splice relay holds that direction meanwhile), or the
 * caller pushes what its bufferevent read. Knows nothing about
 * connections: in socket mode it calls done once, as its last action.
 * A ClientHello that arrives in one read is parsed on the stack: the
 * 16.5 KiB parser is allocated only when one has to wait for more.
 */
#ifndef CORDON_PROXY_HELLOREAD_H
#define CORDON_PROXY_HELLOREAD_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/tlshello.h"

struct event_base;
struct helloread;

enum helloread_end {
	HELLOREAD_PARSED,	/* the parser's status is final */
	HELLOREAD_EOF,		/* the client closed (finish applied) */
	HELLOREAD_ERROR,	/* reading failed (reset), or ENOMEM */
	HELLOREAD_TIMEOUT,	/* deadline passed, status not final */
};

/* done(arg, end, h): h is the parser, or NULL when nothing arrived; it is
 * valid during the call only (it may live on the reader's stack). */
struct helloread_sink {
	void (*done)(void *arg, enum helloread_end end,
	    const struct proxy_tlshello *h);
	void *arg;
	int timeout_ms;		/* from the first byte, or from the
				   reader's start with from_start */
	bool from_start;
};

/*
 * A reader on base. fd >= 0: it reads fd itself (never closes it) and
 * calls done. fd -1: push mode, the caller feeds bytes with
 * proxy_helloread_push and only a timeout calls done. The deadline starts
 * with the first byte, or at once with sink->from_start (a TLS client
 * speaks first: one that sends nothing is refused when it runs out).
 * Returns 0 and *out, or -ENOMEM.
 */
int proxy_helloread_new(struct event_base *base, int fd,
    const struct helloread_sink *sink, struct helloread **out);
/* Stops and frees; accepts NULL. */
void proxy_helloread_free(struct helloread *hr);

/* Push mode: feeds up to n bytes; *taken (may be NULL) is how many were
 * held. Returns the parser's status (TLSHELLO_NEED_MORE: push more). On
 * ENOMEM returns TLSHELLO_TOO_LARGE with nothing held. */
enum proxy_tlshello_status proxy_helloread_push(struct helloread *hr,
    const void *data, size_t n, size_t *taken);
/* Push mode: the client closed; returns the final status
 * (proxy_tlshello_finish). */
enum proxy_tlshello_status proxy_helloread_finish(struct helloread *hr);
/* Bytes a push may still take. */
size_t proxy_helloread_room(const struct helloread *hr);

/* The parser, or NULL while nothing has arrived (push mode, and socket
 * mode between reads). */
const struct proxy_tlshello *proxy_helloread_hello(const struct helloread *hr);

#endif
