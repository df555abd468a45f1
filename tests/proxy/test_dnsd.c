/*
 * Integration tests of the closed resolver (--dns-listen) in the built
 * cordon-proxy, standalone mode: BIND's dig asks it on 127.0.0.1 (UDP and
 * TCP) and prints what it read; the fixture's stub DNS server counts every
 * name the proxy looked up, so "never forwarded" is a count of zero.
 * Run mode (the run at the query's source, its report) is in
 * test_runmode.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "dig_util.h"
#include "proxy_fixture.h"

static struct px P;
static uint16_t dport;

static const char *
dig(const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *args[] = { a1, a2, a3, a4, NULL };

	return dig_run(dport, args);
}

#define check dig_check

/* The A answer for name: TTL 30, in 198.18.0.0/15. */
static void
answer_a(const char *text, const char *name, char *out, size_t len)
{
	struct in_addr a;

	dig_answer_a(text, name, 30, out, len);
	assert_int_equal(inet_pton(AF_INET, out, &a), 1);
	assert_int_equal(ntohl(a.s_addr) >> 17, 0xc6120000u >> 17);
}

static int
group_setup(void **state)
{
	const char *extra[] = { "--dns-listen", "127.0.0.1:0", NULL };
	const char *s;

	(void)state;
	if (fx_start() != 0)
		return -1;
	if (px_start(&P, NULL, extra) != 0)
		return -1;
	s = strstr(P.err, "dns on 127.0.0.1:");
	if (s == NULL)
		return -1;
	dport = (uint16_t)atoi(s + strlen("dns on 127.0.0.1:"));
	return dport != 0 ? 0 : -1;
}

static int
group_teardown(void **state)
{
	(void)state;
	if (px_stop(&P) != 0)
		return -1;
	(void)util_rm_rf(P.dir);
	fx_stop();
	return 0;
}

/* An allowed name: looked up, answered with a synthetic address that
 * stays the name's; another name gets another; TCP answers the same. */
static void
test_allowed(void **state)
{
	char a1[32], a2[32], b[32];
	const char *t;
	unsigned before = fx_queries("echo.cordon-test.net");

	(void)state;
	t = dig("echo.cordon-test.net", "A", NULL, NULL);
	check(t, "status: NOERROR", true);
	answer_a(t, "echo.cordon-test.net", a1, sizeof(a1));
	assert_true(fx_queries("echo.cordon-test.net") > before);
	t = dig("echo.cordon-test.net", "A", "+tcp", NULL);
	check(t, "status: NOERROR", true);
	answer_a(t, "echo.cordon-test.net", a2, sizeof(a2));
	assert_string_equal(a1, a2);
	t = dig("WEB.Cordon-Test.NET", "A", NULL, NULL);
	check(t, "status: NOERROR", true);
	answer_a(t, "WEB.Cordon-Test.NET", b, sizeof(b));
	assert_string_not_equal(a1, b);
	/* Other types of an allowed name: NODATA. */
	t = dig("echo.cordon-test.net", "AAAA", NULL, NULL);
	check(t, "status: NOERROR", true);
	check(t, "ANSWER: 0,", true);
	t = dig("echo.cordon-test.net", "MX", NULL, NULL);
	check(t, "status: NOERROR", true);
	check(t, "ANSWER: 0,", true);
}

/* Names the policy refuses: NXDOMAIN with EDE 15 naming the reason and
 * the policy, and not one query upstream, whatever the labels carry. */
static void
test_denied_never_forwarded(void **state)
{
	static const struct {
		const char *name, *ede;
	} rows[] = {
		{ "x.other-test.net",
		    "EDE: 15 (Blocked): (cordon: not-on-policy default)" },
		{ "c2VjcmV0LWRhdGEtZnJvbS10aGUtc2FuZGJveA.other-test.net",
		    "EDE: 15 (Blocked): (cordon: not-on-policy default)" },
		{ "denied.cordon-test.net",
		    "EDE: 15 (Blocked): (cordon: denied-by-entry default)" },
		{ "localhost",
		    "EDE: 15 (Blocked): (cordon: internal-name default)" },
		{ "metadata.google.internal",
		    "EDE: 15 (Blocked): (cordon: internal-name default)" },
		{ "169.254.169.254",
		    "EDE: 15 (Blocked): (cordon: invalid-name default)" },
	};
	unsigned total = fx_queries(NULL);

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *t = dig(rows[i].name, "A", NULL, NULL);
		check(t, "status: NXDOMAIN", true);
		check(t, rows[i].ede, true);
		t = dig(rows[i].name, "TXT", "+tcp", NULL);
		check(t, "status: NXDOMAIN", true);
		check(t, rows[i].ede, true);
	}
	assert_int_equal(fx_queries(NULL), total);
	assert_int_equal(fx_queries("x.other-test.net"), 0);
	assert_int_equal(fx_queries(
	    "c2VjcmV0LWRhdGEtZnJvbS10aGUtc2FuZGJveA.other-test.net"), 0);
}

/* Allowed names whose upstream answer is refused or missing. */
static void
test_upstream_outcomes(void **state)
{
	const char *t;

	(void)state;
	t = dig("priv.cordon-test.net", "A", NULL, NULL);
	check(t, "status: NXDOMAIN", true);
	check(t, "EDE: 15 (Blocked): (cordon: address-private default)",
	    true);
	t = dig("meta.cordon-test.net", "A", NULL, NULL);
	check(t, "status: NXDOMAIN", true);
	check(t, "(cordon: address-metadata default)", true);
	/* One good address among refused ones: answered. */
	t = dig("mixed.cordon-test.net", "A", NULL, NULL);
	check(t, "status: NOERROR", true);
	check(t, "ANSWER: 1,", true);
	t = dig("nx.cordon-test.net", "A", NULL, NULL);
	check(t, "status: NXDOMAIN", true);
	check(t, "EDE:", false);
	t = dig("slow.cordon-test.net", "A", NULL, NULL);
	check(t, "status: SERVFAIL", true);
	check(t, "EDE: 22 (No Reachable Authority): (cordon: "
	    "upstream-timeout)", true);
}

/* A TCP client that resets before its answer: the name went upstream,
 * so the lookup is logged all the same. */
static void
test_tcp_reset_logged(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons(dport) };
	struct linger lg = { 1, 0 };
	uint8_t q[] = { 0, 38, 0x77, 0x77, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
	    4, 's', 'l', 'o', 'w', 11, 'c', 'o', 'r', 'd', 'o', 'n', '-', 't',
	    'e', 's', 't', 3, 'n', 'e', 't', 0, 0, 1, 0, 1 };
	char *log = NULL;
	size_t len = 0;
	unsigned before = 0, after = 0;
	int fd;

	(void)state;
	assert_int_equal(util_read_file(P.accesslog, 1 << 24, &log, &len), 0);
	for (const char *p = log; (p = strstr(p, "\"host\":\"slow.cordon-test"
	    ".net\",\"port\":53")) != NULL; p++)
		before++;
	free(log);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(fd, q, sizeof(q), 0), (ssize_t)sizeof(q));
	usleep(200000);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg,
	    sizeof(lg)), 0);
	close(fd);	/* a reset */
	for (int i = 0; i < 40 && after <= before; i++) {
		usleep(100000);
		log = NULL;
		assert_int_equal(util_read_file(P.accesslog, 1 << 24, &log,
		    &len), 0);
		after = 0;
		for (const char *p = log; (p = strstr(p, "\"host\":\"slow."
		    "cordon-test.net\",\"port\":53")) != NULL; p++)
			after++;
		free(log);
	}
	assert_int_equal(after, before + 1);
}

/* Garbage on both transports: FORMERR or nothing, and the resolver
 * answers the next query. */
static void
test_malformed(void **state)
{
	/* ID 0x1234, RD, QDCOUNT 2 (one question follows). */
	static const uint8_t two_questions[] = { 0x12, 0x34, 0x01, 0x00, 0x00,
	    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 'a', 0x00, 0x00,
	    0x01, 0x00, 0x01 };
	/* A name that points at itself. */
	static const uint8_t loop[] = { 0x43, 0x21, 0x01, 0x00, 0x00, 0x01,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x0c, 0x00, 0x01,
	    0x00, 0x01 };
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons(dport) };
	struct timeval tv = { 3, 0 };
	uint8_t buf[600];
	ssize_t n;
	int fd;
	const char *t;

	(void)state;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(fd, two_questions, sizeof(two_questions), 0),
	    (ssize_t)sizeof(two_questions));
	n = recv(fd, buf, sizeof(buf), 0);
	assert_int_equal(n, 12);
	assert_int_equal(buf[0], 0x12);
	assert_int_equal(buf[1], 0x34);
	assert_int_equal(buf[3] & 0x0f, 1);	/* FORMERR */
	assert_int_equal(send(fd, loop, sizeof(loop), 0), (ssize_t)sizeof(loop));
	n = recv(fd, buf, sizeof(buf), 0);
	assert_int_equal(n, 12);
	assert_int_equal(buf[3] & 0x0f, 1);
	/* A response (QR set): dropped, no answer (no loops between two
	 * resolvers). */
	buf[0] = 0x55, buf[1] = 0x66, buf[2] = 0x81;
	assert_int_equal(send(fd, buf, 12, 0), 12);
	n = recv(fd, buf, sizeof(buf), 0);
	assert_int_equal(n, -1);
	close(fd);
	/* TCP: an announced length over the limit closes the connection. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	buf[0] = 0xff, buf[1] = 0xff;
	assert_int_equal(send(fd, buf, 2, 0), 2);
	assert_int_equal(recv(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	t = dig("echo.cordon-test.net", "A", NULL, NULL);
	check(t, "status: NOERROR", true);
}

/* Every answered query is a line of the access log. */
static void
test_logged(void **state)
{
	char *log = NULL;
	size_t len = 0;

	(void)state;
	(void)dig("x.other-test.net", "A", NULL, NULL);
	for (int i = 0; i < 50; i++) {
		free(log);
		log = NULL;
		assert_int_equal(util_read_file(P.accesslog, 1 << 24, &log,
		    &len), 0);
		if (strstr(log, "\"method\":\"DNS\",\"host\":\"x.other-test.net\","
		    "\"port\":53,\"decision\":\"deny\",\"reason\":\"not-on-policy"
		    " default\"") != NULL)
			break;
		usleep(100000);
	}
	if (strstr(log, "\"method\":\"DNS\",\"host\":\"x.other-test.net\","
	    "\"port\":53,\"decision\":\"deny\"") == NULL ||
	    strstr(log, "\"via\":\"dns\"") == NULL ||
	    strstr(log, "\"method\":\"DNS\",\"host\":\"echo.cordon-test.net\","
	    "\"port\":53,\"decision\":\"allow\",\"reason\":\"allowed\"") ==
	    NULL)
		fail_msg("the access log lacks DNS lines:\n%s", log);
	free(log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_denied_never_forwarded),
		cmocka_unit_test(test_upstream_outcomes),
		cmocka_unit_test(test_tcp_reset_logged),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_logged),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
