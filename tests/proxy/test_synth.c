/*
 * proxy/synth.c: synthetic per-run addresses. Same name, same address;
 * addresses in order from 198.18.0.1; reverse lookups; the bound and its
 * least-recently-assigned eviction; an evicted name's address not handed
 * out again until the block wraps, and the wrap skipping addresses in use;
 * separate maps reusing addresses; lookups that do not grow with the
 * number of names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proxy/addr.h"
#include "proxy/synth.h"

static const char *
text(struct in_addr a)
{
	static char buf[INET_ADDRSTRLEN];

	return inet_ntop(AF_INET, &a, buf, sizeof(buf));
}

static struct in_addr
assign(struct proxy_synth *s, const char *name)
{
	struct in_addr a;

	assert_int_equal(proxy_synth_assign(s, name, &a), 0);
	assert_true(proxy_synth_in_block(&a));
	return a;
}

static const char *
name_of(struct proxy_synth *s, const char *addr)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, addr, &a), 1);
	return proxy_synth_name(s, &a);
}

static void
test_same_name_same_address(void **state)
{
	struct proxy_synth *s;

	(void)state;
	assert_int_equal(proxy_synth_new(16, &s), 0);
	assert_string_equal(text(assign(s, "pypi.org")), "198.18.0.1");
	assert_string_equal(text(assign(s, "files.pythonhosted.org")),
	    "198.18.0.2");
	assert_string_equal(text(assign(s, "pypi.org")), "198.18.0.1");
	/* ASCII case is ignored; the name kept is the first one given. */
	assert_string_equal(text(assign(s, "PyPI.org")), "198.18.0.1");
	assert_int_equal(proxy_synth_count(s), 2);
	assert_string_equal(name_of(s, "198.18.0.1"), "pypi.org");
	assert_string_equal(name_of(s, "198.18.0.2"),
	    "files.pythonhosted.org");
	assert_null(name_of(s, "198.18.0.3"));
	assert_null(name_of(s, "198.18.0.0"));
	/* Outside the block, even at the same offset. */
	assert_null(name_of(s, "198.20.0.1"));
	assert_null(name_of(s, "10.0.0.1"));
	assert_null(name_of(s, "0.0.0.1"));
	proxy_synth_free(s);
}

static void
test_block(void **state)
{
	static const struct {
		const char *addr;
		bool in;
	} rows[] = {
		{ "198.18.0.0", true }, { "198.18.0.1", true },
		{ "198.19.255.255", true }, { "198.19.0.0", true },
		{ "198.17.255.255", false }, { "198.20.0.0", false },
		{ "100.64.0.1", false }, { "0.0.0.0", false },
		{ "255.255.255.255", false },
	};
	struct in_addr a;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(inet_pton(AF_INET, rows[i].addr, &a), 1);
		if (proxy_synth_in_block(&a) != rows[i].in)
			fail_msg("%s: want %d", rows[i].addr, rows[i].in);
	}
}

/* Two runs: each its own map, both from 198.18.0.1. */
/* Every address the map hands out is one the proxy classifies as
 * benchmark space (proxy/addr.c), so it never connects to one directly:
 * only the map gives it meaning. */
static void
test_block_is_benchmark(void **state)
{
	struct proxy_synth *s;
	struct in_addr a;
	char name[32];

	(void)state;
	assert_int_equal(proxy_synth_new(PROXY_SYNTH_MAX_MAX, &s), 0);
	for (unsigned i = 0; i < PROXY_SYNTH_MAX_MAX; i++) {
		snprintf(name, sizeof(name), "h%u.example", i);
		a = assign(s, name);
		if (proxy_addr_classify_in(&a) != ADDR_BENCHMARK)
			fail_msg("%s is %s", text(a), proxy_addr_class_name(
			    proxy_addr_classify_in(&a)));
	}
	/* The block's edges too. */
	assert_int_equal(inet_pton(AF_INET, "198.19.255.254", &a), 1);
	assert_int_equal(proxy_addr_classify_in(&a), ADDR_BENCHMARK);
	proxy_synth_free(s);
}

static void
test_runs_reuse(void **state)
{
	struct proxy_synth *a, *b;

	(void)state;
	assert_int_equal(proxy_synth_new(8, &a), 0);
	assert_int_equal(proxy_synth_new(8, &b), 0);
	assert_string_equal(text(assign(a, "one.example")), "198.18.0.1");
	assert_string_equal(text(assign(b, "two.example")), "198.18.0.1");
	assert_string_equal(name_of(a, "198.18.0.1"), "one.example");
	assert_string_equal(name_of(b, "198.18.0.1"), "two.example");
	proxy_synth_free(a);
	proxy_synth_free(b);
}

/* Full: the least recently assigned name goes; its address is not
 * reused, and the name, asked again, gets a new one. */
static void
test_bound_lru(void **state)
{
	struct proxy_synth *s;
	char name[32];

	(void)state;
	assert_int_equal(proxy_synth_new(4, &s), 0);
	for (int i = 1; i <= 4; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		(void)assign(s, name);
	}
	/* n1 is refreshed, so n2 is the oldest. */
	assert_string_equal(text(assign(s, "n1.example")), "198.18.0.1");
	/* A reverse lookup does not refresh n2. */
	assert_string_equal(name_of(s, "198.18.0.2"), "n2.example");
	assert_string_equal(text(assign(s, "n5.example")), "198.18.0.5");
	assert_int_equal(proxy_synth_count(s), 4);
	assert_null(name_of(s, "198.18.0.2"));
	assert_string_equal(name_of(s, "198.18.0.1"), "n1.example");
	assert_string_equal(name_of(s, "198.18.0.3"), "n3.example");
	/* n2 again: evicts n3 (now the oldest), gets a new address. */
	assert_string_equal(text(assign(s, "n2.example")), "198.18.0.6");
	assert_null(name_of(s, "198.18.0.3"));
	assert_int_equal(proxy_synth_count(s), 4);
	proxy_synth_free(s);

	/* A map of one. */
	assert_int_equal(proxy_synth_new(1, &s), 0);
	assert_string_equal(text(assign(s, "a.example")), "198.18.0.1");
	assert_string_equal(text(assign(s, "a.example")), "198.18.0.1");
	assert_string_equal(text(assign(s, "b.example")), "198.18.0.2");
	assert_null(name_of(s, "198.18.0.1"));
	assert_int_equal(proxy_synth_count(s), 1);
	proxy_synth_free(s);
}

/* After 131,070 addresses the cursor wraps to 198.18.0.1 and skips the
 * addresses still held. */
static void
test_wrap(void **state)
{
	struct proxy_synth *s;
	struct in_addr a;
	char name[32];
	unsigned i;

	(void)state;
	assert_int_equal(proxy_synth_new(3, &s), 0);
	assert_string_equal(text(assign(s, "keep.example")), "198.18.0.1");
	assert_string_equal(text(assign(s, "keep2.example")), "198.18.0.2");
	for (i = 3; i <= 131070; i++) {
		/* Keep both alive, churn the third slot. */
		(void)assign(s, "keep.example");
		(void)assign(s, "keep2.example");
		snprintf(name, sizeof(name), "churn%u.example", i);
		a = assign(s, name);
		assert_int_equal(ntohl(a.s_addr), 0xc6120000u + i);
	}
	assert_string_equal(text(a), "198.19.255.254");
	(void)assign(s, "keep.example");
	(void)assign(s, "keep2.example");
	/* .0.1 and .0.2 are held: the next free one is .0.3. */
	assert_string_equal(text(assign(s, "after.example")), "198.18.0.3");
	assert_string_equal(name_of(s, "198.18.0.1"), "keep.example");
	assert_string_equal(name_of(s, "198.18.0.2"), "keep2.example");
	assert_null(name_of(s, "198.19.255.254"));
	assert_null(name_of(s, "198.19.255.255"));
	proxy_synth_free(s);
}

static void
test_limits(void **state)
{
	struct proxy_synth *s;
	struct in_addr a;
	char name[PROXY_SYNTH_NAME_MAX + 2];

	(void)state;
	assert_int_equal(proxy_synth_new(0, &s), -EINVAL);
	assert_null(s);
	assert_int_equal(proxy_synth_new(PROXY_SYNTH_MAX_MAX + 1, &s),
	    -EINVAL);
	assert_int_equal(proxy_synth_new(PROXY_SYNTH_MAX_MAX, &s), 0);
	assert_int_equal(proxy_synth_assign(s, "", &a), -EINVAL);
	assert_int_equal(a.s_addr, 0);
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(proxy_synth_assign(s, name, &a), -EINVAL);
	name[PROXY_SYNTH_NAME_MAX] = '\0';
	assert_int_equal(proxy_synth_assign(s, name, &a), 0);
	assert_string_equal(proxy_synth_name(s, &a), name);
	assert_int_equal(proxy_synth_count(s), 1);
	proxy_synth_free(s);
	proxy_synth_free(NULL);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * 4,096 names, then 1,000,000 lookups each way. Hash tables make each a
 * few hundred nanoseconds even under ASan (well under a second in all);
 * a list walked per lookup would make 4*10^9 name comparisons, minutes.
 * The bound (10 s) is far from both.
 */
static void
test_lookup_not_linear(void **state)
{
	struct proxy_synth *s;
	struct in_addr a;
	char name[32];
	double t0, t;

	(void)state;
	assert_int_equal(proxy_synth_new(PROXY_SYNTH_DEFAULT_MAX, &s), 0);
	for (unsigned i = 0; i < PROXY_SYNTH_DEFAULT_MAX; i++) {
		snprintf(name, sizeof(name), "host%u.example.com", i);
		(void)assign(s, name);
	}
	assert_int_equal(proxy_synth_count(s), PROXY_SYNTH_DEFAULT_MAX);
	t0 = now_s();
	for (unsigned i = 0; i < 1000000; i++) {
		snprintf(name, sizeof(name), "host%u.example.com",
		    (i * 2654435761u) % PROXY_SYNTH_DEFAULT_MAX);
		assert_int_equal(proxy_synth_assign(s, name, &a), 0);
		a.s_addr = htonl(0xc6120001u + i % PROXY_SYNTH_DEFAULT_MAX);
		if (proxy_synth_name(s, &a) == NULL)
			fail_msg("%s: no name", text(a));
	}
	t = now_s() - t0;
	print_message("2,000,000 lookups at 4,096 names: %.3f s\n", t);
	assert_true(t < 10.0);
	assert_int_equal(proxy_synth_count(s), PROXY_SYNTH_DEFAULT_MAX);
	proxy_synth_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_name_same_address),
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_block_is_benchmark),
		cmocka_unit_test(test_runs_reuse),
		cmocka_unit_test(test_bound_lru),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_lookup_not_linear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
