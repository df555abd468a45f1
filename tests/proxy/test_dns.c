/* The resolver (dns.c) with its answer cache, against a stub DNS server
 * on the same loop that counts queries: a TTL'd answer is asked once and
 * then served from the cache until its TTL (capped at 60 s) has passed on
 * an injected clock; TTL 0, NXDOMAIN and failures are asked every time. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/event.h>

#include "proxy/dns.h"

static const struct stub_row {
	const char *name;
	const char *a;		/* NULL: NXDOMAIN */
	int ttl;
} stub_rows[] = {
	{ "ttl30.cordon-test.net", "192.0.2.30", 30 },
	{ "ttl0.cordon-test.net", "192.0.2.1", 0 },
	{ "long.cordon-test.net", "192.0.2.99", 86400 },
	{ "nx.cordon-test.net", NULL, 300 },
};

struct stub {
	struct event_base *base;
	struct evdns_server_port *port;
	evutil_socket_t fd;
	uint16_t portno;
	unsigned a_queries[sizeof(stub_rows) / sizeof(stub_rows[0])];
	int64_t now;		/* the cache's clock */
	struct dns *dns;
};

struct answer {
	bool called;
	struct dns_result res;
};

static void
stub_cb(struct evdns_server_request *req, void *arg)
{
	struct stub *st = arg;
	struct evdns_server_question *q = req->questions[0];
	struct in_addr v4;

	for (size_t i = 0; i < sizeof(stub_rows) / sizeof(stub_rows[0]); i++) {
		if (strcasecmp(stub_rows[i].name, q->name) != 0)
			continue;
		if (q->type == EVDNS_TYPE_A)
			st->a_queries[i]++;
		if (stub_rows[i].a == NULL)
			break;
		if (q->type == EVDNS_TYPE_A) {
			inet_pton(AF_INET, stub_rows[i].a, &v4);
			evdns_server_request_add_a_reply(req, q->name, 1, &v4,
			    stub_rows[i].ttl);
		}
		evdns_server_request_respond(req, 0);
		return;
	}
	evdns_server_request_respond(req, DNS_ERR_NOTEXIST);
}

static int64_t
stub_clock(void *arg)
{
	return ((struct stub *)arg)->now;
}

static int
setup(void **state)
{
	static struct stub st;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	char servers[64];

	memset(&st, 0, sizeof(st));
	st.base = event_base_new();
	assert_non_null(st.base);
	st.fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(st.fd >= 0);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	assert_int_equal(bind(st.fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(st.fd, (struct sockaddr *)&sin, &sl), 0);
	st.portno = ntohs(sin.sin_port);
	st.port = evdns_add_server_port_with_base(st.base, st.fd, 0, stub_cb,
	    &st);
	assert_non_null(st.port);
	snprintf(servers, sizeof(servers), "127.0.0.1:%u", st.portno);
	assert_int_equal(proxy_dns_new(st.base, servers, 5000, &st.dns), 0);
	st.now = 1000000;
	proxy_dns_set_clock(st.dns, stub_clock, &st);
	*state = &st;
	return 0;
}

static int
teardown(void **state)
{
	struct stub *st = *state;

	proxy_dns_free(st->dns);
	evdns_close_server_port(st->port);
	close(st->fd);
	event_base_free(st->base);
	return 0;
}

static void
answer_cb(const struct dns_result *res, void *arg)
{
	struct answer *a = arg;

	assert_false(a->called);	/* exactly once */
	a->called = true;
	a->res = *res;
}

/* One lookup, run to its answer. */
static struct answer
resolve(struct stub *st, const char *name)
{
	struct answer a;

	memset(&a, 0, sizeof(a));
	assert_non_null(proxy_dns_resolve(st->dns, name, answer_cb, &a));
	/* Never synchronous, a cache hit included. */
	assert_false(a.called);
	while (!a.called)
		assert_true(event_base_loop(st->base, EVLOOP_ONCE) >= 0);
	return a;
}

static void
expect_addr(const struct answer *a, const char *text)
{
	char buf[INET_ADDRSTRLEN];

	assert_int_equal(a->res.error, 0);
	assert_int_equal(a->res.n, 1);
	assert_int_equal(a->res.addrs[0].ss_family, AF_INET);
	inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->res.addrs[0])->
	    sin_addr, buf, sizeof(buf));
	assert_string_equal(buf, text);
}

static void
test_cached_until_ttl(void **state)
{
	struct stub *st = *state;
	struct answer a;

	a = resolve(st, "ttl30.cordon-test.net");
	expect_addr(&a, "192.0.2.30");
	assert_false(a.res.cached);
	assert_int_equal(st->a_queries[0], 1);
	assert_int_equal(proxy_dns_cached(st->dns), 1);
	/* Within the TTL: the cache answers, the server is not asked. */
	st->now += 29999;
	a = resolve(st, "TTL30.cordon-test.net");
	expect_addr(&a, "192.0.2.30");
	assert_true(a.res.cached);
	assert_int_equal(st->a_queries[0], 1);
	/* At the TTL: asked again (and cached again). */
	st->now += 1;
	a = resolve(st, "ttl30.cordon-test.net");
	expect_addr(&a, "192.0.2.30");
	assert_false(a.res.cached);
	assert_int_equal(st->a_queries[0], 2);
}

static void
test_ttl_capped(void **state)
{
	struct stub *st = *state;
	struct answer a;

	a = resolve(st, "long.cordon-test.net");
	expect_addr(&a, "192.0.2.99");
	st->now += 59999;
	a = resolve(st, "long.cordon-test.net");
	assert_true(a.res.cached);
	assert_int_equal(st->a_queries[2], 1);
	/* A TTL of a day is kept 60 s. */
	st->now += 1;
	a = resolve(st, "long.cordon-test.net");
	assert_false(a.res.cached);
	assert_int_equal(st->a_queries[2], 2);
}

static void
test_ttl0_and_negative_asked_every_time(void **state)
{
	struct stub *st = *state;
	struct answer a;

	for (unsigned i = 1; i <= 3; i++) {
		a = resolve(st, "ttl0.cordon-test.net");
		expect_addr(&a, "192.0.2.1");
		assert_false(a.res.cached);
		assert_int_equal(st->a_queries[1], i);
		/* NXDOMAIN (with a long TTL on offer) is never kept. */
		a = resolve(st, "nx.cordon-test.net");
		assert_int_equal(a.res.error, -ENOENT);
		assert_int_equal(a.res.n, 0);
		assert_int_equal(st->a_queries[3], i);
	}
	assert_int_equal(proxy_dns_cached(st->dns), 0);
}

/* A cancelled cache hit: the callback is never called (and nothing leaks
 * under ASan). */
static void
test_cancel_hit(void **state)
{
	struct stub *st = *state;
	struct answer a, b;
	struct dns_query *q;

	a = resolve(st, "ttl30.cordon-test.net");
	assert_false(a.res.cached);
	memset(&b, 0, sizeof(b));
	q = proxy_dns_resolve(st->dns, "ttl30.cordon-test.net", answer_cb, &b);
	assert_non_null(q);
	proxy_dns_cancel(q);
	(void)event_base_loop(st->base, EVLOOP_NONBLOCK);
	assert_false(b.called);
	assert_int_equal(st->a_queries[0], 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cached_until_ttl, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ttl_capped, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_ttl0_and_negative_asked_every_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_hit, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
