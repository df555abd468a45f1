/* Unit tests for the pending-connection counts (proxy/pending.h): the cap
 * per address, IPv4 and IPv4-mapped IPv6 as one address, the table bound,
 * and deletion that keeps every other address findable (backward shift),
 * checked against a plain array over thousands of random operations. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/pending.h"

static struct sockaddr_storage
sa_of(const char *text)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':') != NULL) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, text, &sin->sin_addr), 1);
	}
	return ss;
}

#define SA(s) ((const struct sockaddr *)&(s))

static void
test_cap(void **state)
{
	struct proxy_pending *p;
	struct sockaddr_storage a = sa_of("10.0.0.1"), b = sa_of("10.0.0.2"),
	    m = sa_of("::ffff:10.0.0.1"), u = { .ss_family = AF_UNIX };

	(void)state;
	assert_int_equal(proxy_pending_new(0, &p), -EINVAL);
	assert_int_equal(proxy_pending_new(8, &p), 0);
	for (unsigned i = 1; i <= 3; i++)
		assert_int_equal(proxy_pending_add(p, SA(a), 3), i);
	/* Full: refused, and the count stays. */
	assert_int_equal(proxy_pending_add(p, SA(a), 3), 0);
	assert_int_equal(proxy_pending_add(p, SA(m), 3), 0);	/* same */
	assert_int_equal(proxy_pending_count(p, SA(m)), 3);
	/* Another address has its own share. */
	assert_int_equal(proxy_pending_add(p, SA(b), 3), 1);
	assert_int_equal(proxy_pending_addresses(p), 2);
	/* One admitted: room for one more. */
	proxy_pending_del(p, SA(m));
	assert_int_equal(proxy_pending_add(p, SA(a), 3), 3);
	/* No limit. */
	assert_int_equal(proxy_pending_add(p, SA(a), 0), 4);
	for (int i = 0; i < 4; i++)
		proxy_pending_del(p, SA(a));
	assert_int_equal(proxy_pending_count(p, SA(a)), 0);
	assert_int_equal(proxy_pending_addresses(p), 1);
	/* Deleting what is not there changes nothing. */
	proxy_pending_del(p, SA(a));
	assert_int_equal(proxy_pending_count(p, SA(b)), 1);
	/* Other families are never counted. */
	assert_int_equal(proxy_pending_add(p, (struct sockaddr *)&u, 3), 0);
	assert_int_equal(proxy_pending_add(p, NULL, 3), 0);
	proxy_pending_free(p);
	proxy_pending_free(NULL);
}

/* At most max addresses at once: the table never fills. */
static void
test_table_bound(void **state)
{
	struct proxy_pending *p;
	char text[32];

	(void)state;
	assert_int_equal(proxy_pending_new(5, &p), 0);
	for (int i = 0; i < 5; i++) {
		struct sockaddr_storage s;
		snprintf(text, sizeof(text), "10.1.0.%d", i);
		s = sa_of(text);
		assert_int_equal(proxy_pending_add(p, SA(s), 2), 1);
	}
	{
		struct sockaddr_storage s = sa_of("10.1.0.99"),
		    t = sa_of("10.1.0.3");
		assert_int_equal(proxy_pending_add(p, SA(s), 2), 0);
		/* A known address still counts up. */
		assert_int_equal(proxy_pending_add(p, SA(t), 2), 2);
	}
	proxy_pending_free(p);
}

/* Random adds and deletes over 40 addresses in a small table (many
 * collisions), against a plain array: every count always agrees. */
static void
test_against_model(void **state)
{
	enum { N = 40, LIMIT = 5 };
	struct sockaddr_storage addr[N];
	unsigned model[N] = { 0 };
	struct proxy_pending *p;
	char text[48];
	unsigned seed = 12345, got;
	size_t used;

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(text, sizeof(text), i % 2 ? "2001:db8::%x" :
		    "192.0.2.%d", i);
		addr[i] = sa_of(text);
	}
	assert_int_equal(proxy_pending_new(N, &p), 0);
	for (int step = 0; step < 200000; step++) {
		int i;
		seed = seed * 1103515245u + 12345u;
		i = (int)((seed >> 16) % N);
		if ((seed >> 8) % 3 != 0) {
			got = proxy_pending_add(p, SA(addr[i]), LIMIT);
			if (model[i] < LIMIT)
				assert_int_equal(got, ++model[i]);
			else
				assert_int_equal(got, 0);
		} else {
			proxy_pending_del(p, SA(addr[i]));
			if (model[i] > 0)
				model[i]--;
		}
		if (step % 997 == 0) {
			used = 0;
			for (int k = 0; k < N; k++) {
				assert_int_equal(proxy_pending_count(p,
				    SA(addr[k])), model[k]);
				used += model[k] > 0;
			}
			assert_int_equal(proxy_pending_addresses(p), used);
		}
	}
	proxy_pending_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_table_bound),
		cmocka_unit_test(test_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
