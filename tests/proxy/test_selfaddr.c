/*
 * Unit tests for the proxy's own addresses (proxy/selfaddr.c): tables of
 * listeners and local addresses against candidates of both families and
 * spellings (::ffff:a.b.c.d), wildcard listeners, replacement of the local
 * set, and one real refresh from getifaddrs (lo's 127.0.0.1 is in it).
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
#include <sys/un.h>

#include "proxy/selfaddr.h"

/* Text to a sockaddr: "v4", "[v6]" or "unix" (an AF_UNIX address). */
static const struct sockaddr *
sa_of(const char *text, struct sockaddr_storage *ss)
{
	char buf[64];

	memset(ss, 0, sizeof(*ss));
	if (strcmp(text, "unix") == 0) {
		ss->ss_family = AF_UNIX;
	} else if (text[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		snprintf(buf, sizeof(buf), "%.*s", (int)strlen(text) - 2,
		    text + 1);
		assert_int_equal(inet_pton(AF_INET6, buf, &s6->sin6_addr), 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(443);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		assert_int_equal(inet_pton(AF_INET, text, &s4->sin_addr), 1);
		s4->sin_family = AF_INET;
		s4->sin_port = htons(3128);
	}
	return (const struct sockaddr *)ss;
}

struct row {
	const char *addr;
	enum proxy_self want;
};

/* A set with the listeners and local addresses given (NULL-ended), then
 * each row's match. */
static void
check(const char *const *listen, const char *const *local,
    const struct row *rows, size_t nrows)
{
	struct sockaddr_storage ss[16];
	const struct sockaddr *list[16];
	struct proxy_selfaddr *s;
	size_t n = 0;

	assert_int_equal(proxy_selfaddr_new(&s), 0);
	for (size_t i = 0; listen[i] != NULL; i++)
		assert_int_equal(proxy_selfaddr_add_listener(s, sa_of(listen[i],
		    &ss[0])), 0);
	for (; local[n] != NULL; n++)
		list[n] = sa_of(local[n], &ss[n]);
	list[n++] = NULL;		/* getifaddrs gives some */
	assert_int_equal(proxy_selfaddr_set_local(s, list, n), 0);
	for (size_t i = 0; i < nrows; i++) {
		enum proxy_self got = proxy_selfaddr_match(s, sa_of(rows[i].addr,
		    &ss[0]));
		if (got != rows[i].want)
			fail_msg("%s: got %d, want %d", rows[i].addr, got,
			    rows[i].want);
	}
	proxy_selfaddr_free(s);
}

static void
test_listeners_and_local(void **state)
{
	static const char *const listen[] = { "127.0.0.1", "[fd00::53]", NULL };
	static const char *const local[] = { "127.0.0.1", "192.0.2.2",
	    "172.17.0.1", "[fd00::2]", "[::1]", "[fe80::1]", "203.0.113.9",
	    "192.0.2.2", "unix", NULL };
	static const struct row rows[] = {
		{ "127.0.0.1", PROXY_SELF_LISTENER },
		{ "[::ffff:127.0.0.1]", PROXY_SELF_LISTENER },
		{ "[fd00::53]", PROXY_SELF_LISTENER },
		{ "192.0.2.2", PROXY_SELF_LOCAL },
		{ "[::ffff:192.0.2.2]", PROXY_SELF_LOCAL },
		{ "172.17.0.1", PROXY_SELF_LOCAL },
		{ "203.0.113.9", PROXY_SELF_LOCAL },
		{ "[fd00::2]", PROXY_SELF_LOCAL },
		{ "[::1]", PROXY_SELF_LOCAL },
		{ "[fe80::1]", PROXY_SELF_LOCAL },
		/* Not ours. */
		{ "127.0.0.2", PROXY_SELF_NONE },
		{ "192.0.2.3", PROXY_SELF_NONE },
		{ "203.0.113.8", PROXY_SELF_NONE },
		{ "[fd00::3]", PROXY_SELF_NONE },
		{ "[::]", PROXY_SELF_NONE },
		{ "0.0.0.0", PROXY_SELF_NONE },
		/* IPv4-compatible (::c000:202) is not the same address. */
		{ "[::192.0.2.2]", PROXY_SELF_NONE },
		{ "unix", PROXY_SELF_NONE },
	};

	(void)state;
	check(listen, local, rows, sizeof(rows) / sizeof(rows[0]));
}

/* 0.0.0.0 listens on every local IPv4 address and all of 127/8; :: on
 * every local address of both families and ::1. */
static void
test_wildcard_listeners(void **state)
{
	static const char *const any4[] = { "0.0.0.0", NULL };
	static const char *const any6[] = { "[::]", NULL };
	static const char *const local[] = { "192.0.2.2", "[fd00::2]",
	    "127.0.0.1", NULL };
	static const struct row rows4[] = {
		{ "192.0.2.2", PROXY_SELF_LISTENER },
		{ "127.0.0.1", PROXY_SELF_LISTENER },
		{ "127.0.0.77", PROXY_SELF_LISTENER },
		{ "0.0.0.0", PROXY_SELF_LISTENER },
		{ "[fd00::2]", PROXY_SELF_LOCAL },
		{ "[::1]", PROXY_SELF_NONE },
		{ "192.0.2.3", PROXY_SELF_NONE },
	};
	static const struct row rows6[] = {
		{ "192.0.2.2", PROXY_SELF_LISTENER },
		{ "[::ffff:192.0.2.2]", PROXY_SELF_LISTENER },
		{ "127.0.0.77", PROXY_SELF_LISTENER },
		{ "[fd00::2]", PROXY_SELF_LISTENER },
		{ "[::1]", PROXY_SELF_LISTENER },
		{ "[::]", PROXY_SELF_LISTENER },
		{ "[fd00::3]", PROXY_SELF_NONE },
		{ "10.0.0.1", PROXY_SELF_NONE },
	};

	(void)state;
	check(any4, local, rows4, sizeof(rows4) / sizeof(rows4[0]));
	check(any6, local, rows6, sizeof(rows6) / sizeof(rows6[0]));
}

/* A new local set replaces the old one whole; listeners stay. */
static void
test_replace_and_refresh(void **state)
{
	struct sockaddr_storage a, b;
	const struct sockaddr *list[2];
	struct proxy_selfaddr *s;

	(void)state;
	assert_int_equal(proxy_selfaddr_new(&s), 0);
	assert_int_equal(proxy_selfaddr_add_listener(s, sa_of("10.9.9.9",
	    &a)), 0);
	assert_int_equal(proxy_selfaddr_add_listener(s, sa_of("unix", &a)),
	    -EAFNOSUPPORT);
	list[0] = sa_of("192.0.2.2", &a);
	list[1] = sa_of("192.0.2.2", &b);
	assert_int_equal(proxy_selfaddr_set_local(s, list, 2), 0);
	assert_int_equal(proxy_selfaddr_local_count(s), 1);
	list[0] = sa_of("[fd00::2]", &a);
	assert_int_equal(proxy_selfaddr_set_local(s, list, 1), 0);
	assert_int_equal(proxy_selfaddr_match(s, sa_of("192.0.2.2", &a)),
	    PROXY_SELF_NONE);
	assert_int_equal(proxy_selfaddr_match(s, sa_of("[fd00::2]", &a)),
	    PROXY_SELF_LOCAL);
	assert_int_equal(proxy_selfaddr_set_local(s, NULL, 0), 0);
	assert_int_equal(proxy_selfaddr_local_count(s), 0);
	assert_int_equal(proxy_selfaddr_match(s, sa_of("10.9.9.9", &a)),
	    PROXY_SELF_LISTENER);
	/* The machine's own: lo has 127.0.0.1 everywhere. */
	assert_int_equal(proxy_selfaddr_refresh(s), 0);
	assert_true(proxy_selfaddr_local_count(s) >= 1);
	assert_int_equal(proxy_selfaddr_match(s, sa_of("127.0.0.1", &a)),
	    PROXY_SELF_LOCAL);
	assert_int_equal(proxy_selfaddr_match(s, sa_of("127.0.0.2", &a)),
	    PROXY_SELF_NONE);
	proxy_selfaddr_free(s);
	proxy_selfaddr_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listeners_and_local),
		cmocka_unit_test(test_wildcard_listeners),
		cmocka_unit_test(test_replace_and_refresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
