/*
 * The per-run query rate limit of the closed resolver: a token bucket,
 * PROXY_DNSRATE_PER_S tokens a second up to PROXY_DNSRATE_BURST, one token
 * per query (UDP or TCP, well-formed or not). Pure: the clock is the
 * caller's (now_ms on every call, monotonic milliseconds), so tests drive
 * it without sleeping. The caller owns the struct (no allocation).
 */
#ifndef CORDON_PROXY_DNSRATE_H
#define CORDON_PROXY_DNSRATE_H

#include <stdbool.h>
#include <stdint.h>

/* A resolver stub asks 2 queries per name (A and AAAA), a few more with
 * search domains; a package install asks a handful of names a second. 100
 * a second with a burst of 200 is far above that and bounds what one run
 * can send through an allowed wildcard (*.example.com: labels leave in
 * its lookups) to 100 names a second. */
#define PROXY_DNSRATE_PER_S	100
#define PROXY_DNSRATE_BURST	200

struct proxy_dnsrate {
	uint32_t rate;		/* tokens a second */
	uint32_t burst;		/* most tokens held */
	uint64_t milli;		/* tokens held, in thousandths */
	int64_t last_ms;	/* when they were counted */
};

/* A full bucket at now_ms. rate and burst at least 1 and at most 10^6.
 * 0 or -EINVAL (r is then a bucket that refuses everything). */
int proxy_dnsrate_init(struct proxy_dnsrate *r, uint32_t rate,
    uint32_t burst, int64_t now_ms);

/* Takes one token at now_ms: true when there was one (answer the query),
 * false when the run is over its rate (refuse it). A clock that went
 * back adds nothing (and takes back nothing). */
bool proxy_dnsrate_take(struct proxy_dnsrate *r, int64_t now_ms);

#endif
