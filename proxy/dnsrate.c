/*
 * Token bucket of the closed resolver (dnsrate.h), in thousandths of a
 * token so that a millisecond adds exactly rate of them: no floating
 * point, no rounding drift.
 */
#include "proxy/dnsrate.h"

#include <errno.h>
#include <string.h>

#define DNSRATE_LIMIT	1000000u

int
proxy_dnsrate_init(struct proxy_dnsrate *r, uint32_t rate, uint32_t burst,
    int64_t now_ms)
{
	memset(r, 0, sizeof(*r));
	r->last_ms = now_ms;
	if (rate == 0 || burst == 0 || rate > DNSRATE_LIMIT ||
	    burst > DNSRATE_LIMIT)
		return -EINVAL;
	r->rate = rate;
	r->burst = burst;
	r->milli = (uint64_t)burst * 1000;
	return 0;
}

bool
proxy_dnsrate_take(struct proxy_dnsrate *r, int64_t now_ms)
{
	uint64_t cap = (uint64_t)r->burst * 1000;

	if (now_ms > r->last_ms) {
		/* Past cap / rate milliseconds the bucket is full anyway:
		 * the product cannot overflow. */
		uint64_t ms = (uint64_t)now_ms - (uint64_t)r->last_ms;

		if (r->rate == 0 || ms >= cap)
			r->milli = cap;
		else if ((r->milli += ms * r->rate) > cap)
			r->milli = cap;
		r->last_ms = now_ms;
	}
	if (r->milli < 1000)
		return false;
	r->milli -= 1000;
	return true;
}
