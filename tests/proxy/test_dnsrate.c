/*
 * proxy/dnsrate.c: the per-run query rate limit on an injected clock: the
 * burst, the steady rate to the millisecond, the cap after idling, a clock
 * that goes back, huge jumps, invalid settings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>

#include "proxy/dnsrate.h"

#define T0 5000000	/* any origin: the clock is the caller's */

/* Tokens taken at now_ms until one is refused. */
static unsigned
drain(struct proxy_dnsrate *r, int64_t now_ms)
{
	unsigned n = 0;

	while (proxy_dnsrate_take(r, now_ms))
		n++;
	return n;
}

static void
test_burst_then_rate(void **state)
{
	struct proxy_dnsrate r;

	(void)state;
	assert_int_equal(proxy_dnsrate_init(&r, PROXY_DNSRATE_PER_S,
	    PROXY_DNSRATE_BURST, T0), 0);
	assert_int_equal(drain(&r, T0), 200);
	assert_false(proxy_dnsrate_take(&r, T0));
	/* 100/s: one token every 10 ms, none before. */
	assert_false(proxy_dnsrate_take(&r, T0 + 9));
	assert_true(proxy_dnsrate_take(&r, T0 + 10));
	assert_false(proxy_dnsrate_take(&r, T0 + 10));
	/* Thousandths add up: 5 ms + 5 ms is a token. */
	assert_false(proxy_dnsrate_take(&r, T0 + 15));
	assert_true(proxy_dnsrate_take(&r, T0 + 20));
	/* One second: 100 tokens. */
	assert_int_equal(drain(&r, T0 + 1020), 100);
	/* A long idle fills the bucket to the burst, no more. */
	assert_int_equal(drain(&r, T0 + 3600 * 1000), 200);
}

/* A steady 100/s passes for a minute; 101/s for a minute only draws the
 * burst down (by one a second); 150/s is cut to the rate. */
static void
test_steady(void **state)
{
	struct proxy_dnsrate r;
	unsigned refused = 0;

	(void)state;
	assert_int_equal(proxy_dnsrate_init(&r, 100, 200, T0), 0);
	for (int64_t t = 0; t < 60000; t += 10)
		assert_true(proxy_dnsrate_take(&r, T0 + t));
	assert_int_equal(proxy_dnsrate_init(&r, 100, 200, T0), 0);
	/* 101 queries a second for 60 s: 6060 asked, 200 + 6000 available. */
	for (int64_t q = 0; q < 6060; q++)
		if (!proxy_dnsrate_take(&r, T0 + q * 1000 / 101))
			refused++;
	assert_int_equal(refused, 0);
	/* At 150/s: 1500 asked within 9,993 ms, 200 + 999 pass. */
	assert_int_equal(proxy_dnsrate_init(&r, 100, 200, T0), 0);
	refused = 0;
	for (int64_t q = 0; q < 1500; q++)
		if (!proxy_dnsrate_take(&r, T0 + q * 1000 / 150))
			refused++;
	assert_int_equal(refused, 301);
}

static void
test_clock(void **state)
{
	struct proxy_dnsrate r;

	(void)state;
	assert_int_equal(proxy_dnsrate_init(&r, 100, 10, T0), 0);
	assert_int_equal(drain(&r, T0), 10);
	/* Back in time: nothing added, and coming forward again only
	 * counts from the latest time seen. */
	assert_false(proxy_dnsrate_take(&r, T0 - 60000));
	assert_false(proxy_dnsrate_take(&r, T0 + 9));
	assert_true(proxy_dnsrate_take(&r, T0 + 10));
	/* Extreme clocks do not overflow. */
	assert_int_equal(drain(&r, INT64_MAX), 10);
	assert_false(proxy_dnsrate_take(&r, INT64_MIN));
	assert_int_equal(proxy_dnsrate_init(&r, 1000000, 1000000, INT64_MIN),
	    0);
	assert_true(proxy_dnsrate_take(&r, INT64_MAX));
}

static void
test_invalid(void **state)
{
	struct proxy_dnsrate r;

	(void)state;
	assert_int_equal(proxy_dnsrate_init(&r, 0, 10, T0), -EINVAL);
	assert_false(proxy_dnsrate_take(&r, T0 + 100000));
	assert_int_equal(proxy_dnsrate_init(&r, 10, 0, T0), -EINVAL);
	assert_false(proxy_dnsrate_take(&r, T0 + 100000));
	assert_int_equal(proxy_dnsrate_init(&r, 1000001, 10, T0), -EINVAL);
	assert_int_equal(proxy_dnsrate_init(&r, 10, 1000001, T0), -EINVAL);
	/* Rate 1, burst 1: one a second. */
	assert_int_equal(proxy_dnsrate_init(&r, 1, 1, T0), 0);
	assert_true(proxy_dnsrate_take(&r, T0));
	assert_false(proxy_dnsrate_take(&r, T0 + 999));
	assert_true(proxy_dnsrate_take(&r, T0 + 1000));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_rate),
		cmocka_unit_test(test_steady),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
