/* Unit tests for the DNS answer cache: TTLs on an injected clock, the 60 s
 * cap, the bound and its LRU eviction, negative answers never stored. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/dnscache.h"

#define T0 1000000	/* any origin: the clock is the caller's */

static void
addr_from(const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)ss)->sin_addr)
	    == 1) {
		ss->ss_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons(443);
		return;
	}
	assert_int_equal(inet_pton(AF_INET6, text,
	    &((struct sockaddr_in6 *)ss)->sin6_addr), 1);
	ss->ss_family = AF_INET6;
	((struct sockaddr_in6 *)ss)->sin6_port = htons(443);
}

static void
addr_expect(const struct sockaddr_storage *ss, const char *text)
{
	char buf[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		assert_int_equal(((const struct sockaddr_in *)ss)->sin_port, 0);
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
		    buf, sizeof(buf));
	} else {
		assert_int_equal(ss->ss_family, AF_INET6);
		assert_int_equal(((const struct sockaddr_in6 *)ss)->sin6_port,
		    0);
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)ss)->sin6_addr, buf,
		    sizeof(buf));
	}
	assert_string_equal(buf, text);
}

/* Stores one address for name. */
static int
put1(struct dnscache *dc, const char *name, const char *addr, int ttl,
    int64_t now)
{
	struct sockaddr_storage ss;

	addr_from(addr, &ss);
	return proxy_dnscache_put(dc, name, &ss, 1, ttl, now);
}

static size_t
get(struct dnscache *dc, const char *name, int64_t now,
    struct sockaddr_storage *out)
{
	struct sockaddr_storage tmp[DNSCACHE_MAX_ADDRS];

	return proxy_dnscache_get(dc, name, now, out != NULL ? out : tmp,
	    DNSCACHE_MAX_ADDRS);
}

static void
test_roundtrip(void **state)
{
	struct sockaddr_storage in[3], out[DNSCACHE_MAX_ADDRS];
	struct dnscache *dc;

	(void)state;
	assert_int_equal(proxy_dnscache_new(8, &dc), 0);
	addr_from("192.0.2.1", &in[0]);
	addr_from("2001:db8::2", &in[1]);
	addr_from("192.0.2.3", &in[2]);
	assert_int_equal(get(dc, "a.example", T0, out), 0);
	assert_int_equal(proxy_dnscache_put(dc, "a.example", in, 3, 30, T0), 0);
	/* The order stored, ports cleared, the name without case. */
	assert_int_equal(get(dc, "A.Example", T0 + 1, out), 3);
	addr_expect(&out[0], "192.0.2.1");
	addr_expect(&out[1], "2001:db8::2");
	addr_expect(&out[2], "192.0.2.3");
	/* cap: only as many as the caller has room for. */
	assert_int_equal(proxy_dnscache_get(dc, "a.example", T0, out, 2), 2);
	assert_int_equal(get(dc, "b.example", T0, out), 0);
	/* A newer answer replaces the older one. */
	assert_int_equal(put1(dc, "a.example", "198.51.100.9", 30, T0), 0);
	assert_int_equal(get(dc, "a.example", T0, out), 1);
	addr_expect(&out[0], "198.51.100.9");
	assert_int_equal(proxy_dnscache_count(dc), 1);
	proxy_dnscache_free(dc);
	proxy_dnscache_free(NULL);
}

static void
test_ttl_expiry(void **state)
{
	struct dnscache *dc;

	(void)state;
	assert_int_equal(proxy_dnscache_new(8, &dc), 0);
	assert_int_equal(put1(dc, "ttl5.example", "192.0.2.5", 5, T0), 0);
	assert_int_equal(put1(dc, "ttl1.example", "192.0.2.1", 1, T0), 0);
	assert_int_equal(get(dc, "ttl5.example", T0 + 4999, NULL), 1);
	assert_int_equal(get(dc, "ttl1.example", T0 + 999, NULL), 1);
	/* Expired at exactly TTL: gone, and dropped from the table. */
	assert_int_equal(get(dc, "ttl1.example", T0 + 1000, NULL), 0);
	assert_int_equal(proxy_dnscache_count(dc), 1);
	assert_int_equal(get(dc, "ttl5.example", T0 + 5000, NULL), 0);
	assert_int_equal(proxy_dnscache_count(dc), 0);
	proxy_dnscache_free(dc);
}

static void
test_ttl_cap(void **state)
{
	static const int ttls[] = { 61, 3600, 86400, 0x7fffffff };
	struct dnscache *dc;

	(void)state;
	assert_int_equal(DNSCACHE_TTL_MAX_S, 60);
	assert_int_equal(proxy_dnscache_new(8, &dc), 0);
	for (size_t i = 0; i < sizeof(ttls) / sizeof(ttls[0]); i++) {
		assert_int_equal(put1(dc, "long.example", "192.0.2.7", ttls[i],
		    T0), 0);
		assert_int_equal(get(dc, "long.example", T0 + 59999, NULL), 1);
		assert_int_equal(get(dc, "long.example", T0 + 60000, NULL), 0);
	}
	/* 60 itself is kept 60 s. */
	assert_int_equal(put1(dc, "long.example", "192.0.2.7", 60, T0), 0);
	assert_int_equal(get(dc, "long.example", T0 + 59999, NULL), 1);
	assert_int_equal(get(dc, "long.example", T0 + 60000, NULL), 0);
	proxy_dnscache_free(dc);
}

/* TTL 0 (or below) and answers without addresses (NXDOMAIN, NODATA, a
 * failure: dns.c passes n = 0) are not stored, and drop what was. */
static void
test_negative_not_cached(void **state)
{
	struct sockaddr_storage un;
	struct dnscache *dc;

	(void)state;
	assert_int_equal(proxy_dnscache_new(8, &dc), 0);
	assert_int_equal(put1(dc, "zero.example", "192.0.2.1", 0, T0), -ENOENT);
	assert_int_equal(put1(dc, "neg.example", "192.0.2.1", -5, T0),
	    -ENOENT);
	assert_int_equal(proxy_dnscache_put(dc, "nx.example", NULL, 0, 30, T0),
	    -ENOENT);
	assert_int_equal(proxy_dnscache_count(dc), 0);
	assert_int_equal(get(dc, "nx.example", T0, NULL), 0);
	/* Only non-IP addresses: nothing to keep. */
	memset(&un, 0, sizeof(un));
	un.ss_family = AF_UNIX;
	assert_int_equal(proxy_dnscache_put(dc, "odd.example", &un, 1, 30, T0),
	    -ENOENT);
	/* A name that stops existing stops being answered from the cache. */
	assert_int_equal(put1(dc, "gone.example", "192.0.2.1", 30, T0), 0);
	assert_int_equal(proxy_dnscache_put(dc, "gone.example", NULL, 0, 0,
	    T0 + 1), -ENOENT);
	assert_int_equal(get(dc, "gone.example", T0 + 2, NULL), 0);
	assert_int_equal(put1(dc, "gone.example", "192.0.2.1", 30, T0), 0);
	assert_int_equal(put1(dc, "gone.example", "192.0.2.1", 0, T0), -ENOENT);
	assert_int_equal(get(dc, "gone.example", T0, NULL), 0);
	assert_int_equal(proxy_dnscache_count(dc), 0);
	proxy_dnscache_free(dc);
}

static void
test_bound_lru(void **state)
{
	char name[64];
	struct dnscache *dc;

	(void)state;
	assert_int_equal(proxy_dnscache_new(3, &dc), 0);
	assert_int_equal(put1(dc, "a.example", "192.0.2.1", 30, T0), 0);
	assert_int_equal(put1(dc, "b.example", "192.0.2.2", 30, T0), 0);
	assert_int_equal(put1(dc, "c.example", "192.0.2.3", 30, T0), 0);
	/* a is used: b is now the least recently used and goes for d. */
	assert_int_equal(get(dc, "a.example", T0, NULL), 1);
	assert_int_equal(put1(dc, "d.example", "192.0.2.4", 30, T0), 0);
	assert_int_equal(proxy_dnscache_count(dc), 3);
	assert_int_equal(get(dc, "b.example", T0, NULL), 0);
	assert_int_equal(get(dc, "a.example", T0, NULL), 1);
	assert_int_equal(get(dc, "c.example", T0, NULL), 1);
	assert_int_equal(get(dc, "d.example", T0, NULL), 1);
	/* Replacing a held name evicts nothing. */
	assert_int_equal(put1(dc, "c.example", "192.0.2.33", 30, T0), 0);
	assert_int_equal(proxy_dnscache_count(dc), 3);
	assert_int_equal(get(dc, "a.example", T0, NULL), 1);
	/* Many more names than the bound: never more than 3 held. */
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		assert_int_equal(put1(dc, name, "192.0.2.9", 30, T0), 0);
		assert_true(proxy_dnscache_count(dc) <= 3);
	}
	assert_int_equal(get(dc, "n999.example", T0, NULL), 1);
	assert_int_equal(get(dc, "n996.example", T0, NULL), 0);
	proxy_dnscache_free(dc);
}

static void
test_limits(void **state)
{
	struct sockaddr_storage in[DNSCACHE_MAX_ADDRS + 4];
	struct sockaddr_storage out[DNSCACHE_MAX_ADDRS];
	char longname[300];
	struct dnscache *dc;

	(void)state;
	assert_int_equal(proxy_dnscache_new(0, &dc), -EINVAL);
	assert_null(dc);
	assert_int_equal(proxy_dnscache_new(2, &dc), 0);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char a[32];
		snprintf(a, sizeof(a), "192.0.2.%zu", i + 1);
		addr_from(a, &in[i]);
	}
	assert_int_equal(proxy_dnscache_put(dc, "many.example", in,
	    sizeof(in) / sizeof(in[0]), 30, T0), 0);
	assert_int_equal(get(dc, "many.example", T0, out), DNSCACHE_MAX_ADDRS);
	addr_expect(&out[DNSCACHE_MAX_ADDRS - 1], "192.0.2.16");
	assert_int_equal(put1(dc, "", "192.0.2.1", 30, T0), -EINVAL);
	memset(longname, 'a', 256);
	longname[256] = '\0';
	assert_int_equal(put1(dc, longname, "192.0.2.1", 30, T0), -EINVAL);
	longname[255] = '\0';
	assert_int_equal(put1(dc, longname, "192.0.2.1", 30, T0), 0);
	assert_int_equal(get(dc, longname, T0, NULL), 1);
	proxy_dnscache_free(dc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_ttl_expiry),
		cmocka_unit_test(test_ttl_cap),
		cmocka_unit_test(test_negative_not_cached),
		cmocka_unit_test(test_bound_lru),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
