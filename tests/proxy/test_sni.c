/*
 * Integration tests for the SNI check of CONNECT tunnels: the built daemon
 * (proxy_fixture.c) gets real ClientHellos (tests/proxy/data, rewritten by
 * hello_util.c) through both relays. A matching name passes and the bytes
 * flow; a mismatch, ECH, several names, a malformed or slow hello close
 * the tunnel with a TLS alert and the upstream (the fixture's sink)
 * receives nothing; IP-literal CONNECTs judge the name by the policy;
 * bytes that are not TLS pass as before.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "hello_util.h"
#include "proxy_fixture.h"

#define ALERT "\x15\x03\x03\x00\x02\x02\x31"	/* access_denied */

static char head[8192];
static uint8_t hello[HELLO_CAP];

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int
tunnel(struct px *p, const char *host, uint16_t port)
{
	int st, fd = px_connect(p, px_auth(host, port), &st, head,
	    sizeof(head));

	if (fd < 0)
		fail_msg("CONNECT %s:%u: %d\n%s", host, port, st, head);
	return fd;
}

/* A ClientHello from fixture with server_name names (nnames 0: none). */
static size_t
hello_for(const char *const *names, size_t nnames)
{
	size_t n = hello_with_names("hello-openssl-echo.bin", names, nnames,
	    hello, sizeof(hello));

	assert_true(n > 0);
	return n;
}

static size_t
hello_named(const char *name)
{
	return hello_for(&name, 1);
}

/* What comes back within 5 s: the alert, then EOF (or a reset). */
static void
expect_refused(int fd)
{
	struct timeval tv = { 5, 0 };
	char buf[64];
	size_t got = 0;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(buf)) {
		n = recv(fd, buf + got, sizeof(buf) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			fail_msg("tunnel still open after 5 s");
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got != sizeof(ALERT) - 1 || memcmp(buf, ALERT, got) != 0)
		fail_msg("want the access_denied alert then EOF, got %zu bytes",
		    got);
}

/* The echo upstream sends back exactly the n bytes of data. */
static void
expect_echo(int fd, const void *data, size_t n)
{
	static uint8_t back[HELLO_CAP];

	assert_true(n <= sizeof(back));
	assert_int_equal(cli_read_n(fd, back, n), 0);
	assert_memory_equal(back, data, n);
}

/* Waits up to ms for needle in the access log. */
static bool
log_has(const struct px *p, const char *needle, int ms)
{
	int64_t deadline = time_mono_ms() + ms;
	char *log;
	size_t len;
	bool found;

	for (;;) {
		log = NULL;
		found = util_read_file(p->accesslog, 1 << 22, &log, &len) == 0 &&
		    strstr(log, needle) != NULL;
		free(log);
		if (found || time_mono_ms() >= deadline)
			return found;
		sleep_ms(20);
	}
}

static void
log_expect(const struct px *p, const char *needle)
{
	char *log = NULL;
	size_t len;

	if (log_has(p, needle, 3000))
		return;
	(void)util_read_file(p->accesslog, 1 << 22, &log, &len);
	fail_msg("access log lacks %s:\n%s", needle, log != NULL ? log : "");
}

/* Nothing reached the sink since before (after a moment for stragglers). */
static void
sink_got_nothing(long long before)
{
	sleep_ms(200);
	assert_int_equal(fx_sink_bytes(), before);
}

/* What a refused client that did not speak TLS reads: a 403 with the
 * reason when it spoke HTTP (reply non-NULL), else nothing; then EOF. */
static void
expect_closed(int fd, const char *reason, bool http)
{
	struct timeval tv = { 5, 0 };
	char buf[1024], want[128];
	size_t got = 0;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(buf) - 1) {
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			fail_msg("tunnel still open after 5 s");
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	snprintf(want, sizeof(want), "X-Cordon-Error: %s\r\n", reason);
	if (http && (strncmp(buf, "HTTP/1.1 403 ", 13) != 0 ||
	    strstr(buf, want) == NULL))
		fail_msg("want a 403 with %s, got:\n%s", reason, buf);
	if (!http && got != 0)
		fail_msg("want a bare close, got %zu bytes", got);
}

/* A refused hello to the sink: closed with the alert (or, for bytes that
 * are no TLS, a 403 to what looks like HTTP and a bare close otherwise),
 * nothing upstream, logged as deny with reason. */
static void
refused_at_sink(struct px *p, const uint8_t *data, size_t n,
    const char *reason)
{
	long long before = fx_sink_bytes();
	long conns = fx_sink_conns();
	char want[160];
	int fd = tunnel(p, "sink.cordon-test.net", fx_sink_port());

	assert_int_equal(cli_send_n(fd, data, n), 0);
	if (n > 0 && data[0] >= 0x14 && data[0] <= 0x19)
		expect_refused(fd);
	else
		expect_closed(fd, reason, n > 0 && data[0] >= 'A' &&
		    data[0] <= 'Z' && memchr(data, ' ', n) != NULL);
	close(fd);
	sink_got_nothing(before);
	/* The upstream connection did exist (the 200 came after it). */
	assert_int_equal(fx_sink_conns(), conns + 1);
	snprintf(want, sizeof(want), "\"host\":\"sink.cordon-test.net\","
	    "\"port\":%u,\"decision\":\"deny\",\"reason\":\"%s\"",
	    fx_sink_port(), reason);
	log_expect(p, want);
}

static const char *const buffered[] = { "--no-splice", NULL };

/* --- names: match and mismatch --------------------------------------------- */

static void
sni_match(const char *const *extra)
{
	static const char tail[] = "application bytes after the hello";
	struct px p;
	size_t n;
	int fd;

	assert_int_equal(px_start(&p, px_tls_allowlist(), extra), 0);
	/* The captured hello names echo.cordon-test.net as is. */
	n = hello_load("hello-openssl-echo.bin", hello, sizeof(hello));
	fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	expect_echo(fd, hello, n);
	assert_int_equal(cli_send(fd, tail), 0);
	expect_echo(fd, tail, sizeof(tail) - 1);
	close(fd);
	log_expect(&p, "\"decision\":\"allow\"");
	log_expect(&p, "\"sni\":\"echo.cordon-test.net\"");
	/* Case and one trailing dot do not matter. */
	n = hello_named("ECHO.Cordon-Test.NET.");
	fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	expect_echo(fd, hello, n);
	close(fd);
	/* No server_name at all: nothing to compare, passes. */
	n = hello_for(NULL, 0);
	fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	expect_echo(fd, hello, n);
	close(fd);
	assert_int_equal(px_stop(&p), 0);
}

static void
test_sni_match_splice(void **state)
{
	(void)state;
	sni_match(NULL);
}

static void
test_sni_match_buffered(void **state)
{
	(void)state;
	sni_match(buffered);
}

static void
sni_mismatch(const char *const *extra)
{
	struct px p;
	size_t n;

	assert_int_equal(px_start(&p, px_tls_allowlist(), extra), 0);
	n = hello_load("hello-python-pypi.bin", hello, sizeof(hello));
	refused_at_sink(&p, hello, n, "sni-mismatch");
	log_expect(&p, "\"status\":200,\"bytes_up\":0,\"bytes_down\":0");
	log_expect(&p, "\"sni\":\"pypi.org\"");
	/* Another name under the same allowed wildcard is still another
	 * name. */
	n = hello_named("echo.cordon-test.net");
	refused_at_sink(&p, hello, n, "sni-mismatch");
	/* Two dots are not one. */
	n = hello_named("sink.cordon-test.net..");
	refused_at_sink(&p, hello, n, "sni-mismatch");
	assert_int_equal(px_stop(&p), 0);
}

static void
test_sni_mismatch_splice(void **state)
{
	(void)state;
	sni_mismatch(NULL);
}

static void
test_sni_mismatch_buffered(void **state)
{
	(void)state;
	sni_mismatch(buffered);
}

/* The hello in the same write as the CONNECT head (the buffered relay's
 * pipelined path) is checked too. */
static void
test_sni_pipelined(void **state)
{
	static char req[HELLO_CAP + 256];
	long long before = fx_sink_bytes();
	struct px p;
	size_t n, h;
	int fd;

	(void)state;
	assert_int_equal(px_start(&p, px_tls_allowlist(), NULL), 0);
	n = hello_load("hello-python-pypi.bin", hello, sizeof(hello));
	h = (size_t)snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\n\r\n",
	    px_auth("sink.cordon-test.net", fx_sink_port()));
	memcpy(req + h, hello, n);
	fd = cli_connect(p.port);
	assert_int_equal(cli_send_n(fd, req, h + n), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	expect_refused(fd);
	close(fd);
	sink_got_nothing(before);
	log_expect(&p, "\"reason\":\"sni-mismatch\"");
	/* And a matching one flows. */
	n = hello_named("echo.cordon-test.net");
	h = (size_t)snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\n\r\n",
	    px_auth("echo.cordon-test.net", fx_echo_port()));
	memcpy(req + h, hello, n);
	fd = cli_connect(p.port);
	assert_int_equal(cli_send_n(fd, req, h + n), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	expect_echo(fd, hello, n);
	close(fd);
	assert_int_equal(px_stop(&p), 0);
}

/* --- arrival in pieces --------------------------------------------------- */

/* n bytes of data one byte per write, a pause after each. */
static void
send_bytewise(int fd, const uint8_t *data, size_t n, int pause_ms)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(cli_send_n(fd, data + i, 1), 0);
		if (pause_ms > 0)
			sleep_ms(pause_ms);
	}
}

static void
sni_bytewise(const char *const *extra)
{
	static uint8_t msg[HELLO_CAP], rec[HELLO_CAP];
	struct px p;
	size_t n, m, r;
	int fd;

	assert_int_equal(px_start(&p, px_tls_allowlist(), extra), 0);
	n = hello_named("echo.cordon-test.net");
	fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());
	send_bytewise(fd, hello, n, 1);
	expect_echo(fd, hello, n);
	close(fd);
	/* The same hello in 7-byte records, bytewise, refused by name. */
	n = hello_named("pypi.org");
	m = hello_message(hello, n, msg, sizeof(msg));
	r = hello_frame(msg, m, 7, rec, sizeof(rec));
	assert_true(m > 0 && r > 0);
	fd = tunnel(&p, "sink.cordon-test.net", fx_sink_port());
	send_bytewise(fd, rec, r, 0);
	expect_refused(fd);
	close(fd);
	log_expect(&p, "\"reason\":\"sni-mismatch\"");
	assert_int_equal(px_stop(&p), 0);
}

static void
test_sni_bytewise_splice(void **state)
{
	(void)state;
	sni_bytewise(NULL);
}

static void
test_sni_bytewise_buffered(void **state)
{
	(void)state;
	sni_bytewise(buffered);
}

/* --- what is refused ------------------------------------------------------ */

static void
test_sni_refusals(void **state)
{
	static const uint8_t ech[] = { 0, 1, 0, 1, 0x42, 0, 0 };
	static const char *const two[] = { "sink.cordon-test.net",
	    "pypi.org" };
	static const char *const empty[] = { "" };
	static uint8_t msg[HELLO_CAP], msg2[HELLO_CAP];
	struct px p;
	size_t n, m;

	(void)state;
	assert_int_equal(px_start(&p, px_tls_allowlist(), NULL), 0);
	/* ECH, even beside the right outer name. */
	n = hello_named("sink.cordon-test.net");
	m = hello_message(hello, n, msg, sizeof(msg));
	m = hello_rebuild(msg, m, -1, 0xfe0d, ech, sizeof(ech), msg2,
	    sizeof(msg2));
	n = hello_frame(msg2, m, 16384, hello, sizeof(hello));
	refused_at_sink(&p, hello, n, "ech-unsupported");
	n = hello_for(two, 2);
	refused_at_sink(&p, hello, n, "sni-multiple");
	n = hello_for(empty, 1);
	refused_at_sink(&p, hello, n, "sni-empty");
	/* A handshake record that is no ClientHello. */
	refused_at_sink(&p, (const uint8_t *)"\x16\x03\x01\x00\x00", 5,
	    "tls-malformed");
	refused_at_sink(&p, (const uint8_t *)"\x16\x03\x03\x00\x04\x02\x00"
	    "\x00\x26", 9, "tls-malformed");
	/* More than 16 KiB of tiny records without the end of the hello. */
	{
		static uint8_t big[20000], rec[7 * 20000];
		memcpy(big, "\x01\x00\x3f\x00", 4);
		memset(big + 4, 0, sizeof(big) - 4);
		n = hello_frame(big, 3000, 1, rec, sizeof(rec));
		refused_at_sink(&p, rec, n, "tls-hello-too-large");
	}
	assert_int_equal(px_stop(&p), 0);
}

/* The client closes its side mid-hello: truncated, refused. */
static void
test_sni_truncated(void **state)
{
	long long before = fx_sink_bytes();
	struct px p;
	size_t n;
	int fd;

	(void)state;
	assert_int_equal(px_start(&p, px_tls_allowlist(), NULL), 0);
	n = hello_named("sink.cordon-test.net");
	fd = tunnel(&p, "sink.cordon-test.net", fx_sink_port());
	assert_int_equal(cli_send_n(fd, hello, n / 2), 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	expect_refused(fd);
	close(fd);
	sink_got_nothing(before);
	log_expect(&p, "\"reason\":\"tls-malformed\"");
	assert_int_equal(px_stop(&p), 0);
}

/* --- IP-literal CONNECT: the name must pass the policy ---------------------- */

static void
test_sni_ip_literal(void **state)
{
	char list[512];
	struct px p;
	size_t n;
	int fd;

	(void)state;
	snprintf(list, sizeof(list), "127.0.0.2:%u,%u\n"
	    "*.cordon-test.net:%u,%u\n!denied.cordon-test.net\n"
	    "insp.cordon-test.net:%u inspect\n",
	    fx_echo_port(), fx_sink_port(), fx_echo_port(), fx_sink_port(),
	    fx_sink_port());
	assert_int_equal(px_start(&p, list, NULL), 0);
	/* A name on the policy, on that port: passes. */
	n = hello_named("echo.cordon-test.net");
	fd = tunnel(&p, "127.0.0.2", fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	expect_echo(fd, hello, n);
	close(fd);
	/* The CONNECT address itself as the name (RFC 6066 forbids it):
	 * passes, it names nothing else. */
	n = hello_named("127.0.0.2");
	fd = tunnel(&p, "127.0.0.2", fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	expect_echo(fd, hello, n);
	close(fd);
	/* Refusals: sni- and the reason the name would get as the host;
	 * a name whose entry says inspect is never tunnelled raw behind
	 * an address (its requests would go unchecked). */
	{
		static const struct { const char *name, *reason; } rows[] = {
			{ "insp.cordon-test.net", "sni-inspect-required" },
			{ "INSP.cordon-test.net.", "sni-inspect-required" },
			{ "pypi.org", "sni-not-on-policy default" },
			{ "denied.cordon-test.net", "sni-denied-by-entry" },
			{ "metadata.google.internal", "sni-internal-name" },
			{ "localhost", "sni-internal-name" },
			{ "127.0.0.3", "sni-mismatch" },
			{ "under_score.cordon-test.net", "sni-invalid" },
		};
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			long long before = fx_sink_bytes();
			char want[160];

			n = hello_named(rows[i].name);
			fd = tunnel(&p, "127.0.0.2", fx_sink_port());
			assert_int_equal(cli_send_n(fd, hello, n), 0);
			expect_refused(fd);
			close(fd);
			sink_got_nothing(before);
			snprintf(want, sizeof(want), "\"host\":\"127.0.0.2\","
			    "\"port\":%u,\"decision\":\"deny\",\"reason\":"
			    "\"%s\"", fx_sink_port(), rows[i].reason);
			log_expect(&p, want);
		}
	}
	assert_int_equal(px_stop(&p), 0);
}

/* --- not TLS, odd records, silence and the timeout ----------------------- */

/* A tunnel whose first bytes are not a ClientHello is closed before any
 * of them goes upstream: plain HTTP naming another host (finding 2 of
 * the hardening review), SSLv2, and an empty record of another type in
 * front of a ClientHello that names a forbidden host (finding 1: the
 * upstream's TLS stack skips the empty record and reads the hello). */
static void
sni_not_tls(const char *const *extra, bool records)
{
	static const char sslv2[] = "\x80\x2e\x01\x03\x01\x00\x15\x00\x00";
	static const struct {
		const char *what;
		const char *prefix;
		size_t len;
		const char *reason;
	} fronts[] = {
		{ "empty ChangeCipherSpec", "\x14\x03\x03\x00\x00", 5,
		  "tls-malformed" },
		{ "empty application data", "\x17\x03\x03\x00\x00", 5,
		  "tls-malformed" },
		{ "empty alert", "\x15\x03\x03\x00\x00", 5, "tls-malformed" },
		{ "heartbeat", "\x18\x03\x03\x00\x00", 5, "tls-malformed" },
		{ "empty handshake record", "\x16\x03\x03\x00\x00", 5,
		  "tls-malformed" },
	};
	uint8_t buf[HELLO_CAP + 8];
	char req[256], want[200];
	struct px p;
	size_t n;

	assert_int_equal(px_start(&p, px_tls_allowlist(), extra), 0);
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: other.example\r\n"
	    "\r\n");
	if (records)
		goto records;
	refused_at_sink(&p, (const uint8_t *)req, strlen(req), "tls-required");
	refused_at_sink(&p, (const uint8_t *)"SSH-2.0-x\r\n", 11,
	    "tls-required");
	refused_at_sink(&p, (const uint8_t *)sslv2, sizeof(sslv2) - 1,
	    "tls-required");
	goto raw;
records:
	n = hello_named("pypi.org");
	for (size_t i = 0; i < sizeof(fronts) / sizeof(fronts[0]); i++) {
		memcpy(buf, fronts[i].prefix, fronts[i].len);
		memcpy(buf + fronts[i].len, hello, n);
		refused_at_sink(&p, buf, fronts[i].len + n, fronts[i].reason);
	}
	/* The same sequence sent in two writes (the record, then the
	 * hello) is refused on the record alone. */
	{
		long long before = fx_sink_bytes();
		int fd = tunnel(&p, "sink.cordon-test.net", fx_sink_port());

		assert_int_equal(cli_send_n(fd, "\x14\x03\x03\x00\x00", 5), 0);
		sleep_ms(100);
		(void)cli_send_n(fd, hello, n);
		expect_refused(fd);
		close(fd);
		sink_got_nothing(before);
	}
	assert_int_equal(px_stop(&p), 0);
	return;
raw:
	assert_int_equal(px_stop(&p), 0);
	/* A `raw` entry takes any bytes: plain HTTP and SSLv2 pass. */
	assert_int_equal(px_start(&p, NULL, extra), 0);
	{
		int fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());

		assert_int_equal(cli_send(fd, req), 0);
		expect_echo(fd, req, strlen(req));
		close(fd);
		fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());
		assert_int_equal(cli_send_n(fd, sslv2, sizeof(sslv2) - 1), 0);
		expect_echo(fd, sslv2, sizeof(sslv2) - 1);
		close(fd);
	}
	snprintf(want, sizeof(want), "\"host\":\"echo.cordon-test.net\","
	    "\"port\":%u,\"decision\":\"allow\"", fx_echo_port());
	log_expect(&p, want);
	assert_int_equal(px_stop(&p), 0);
}

static void
test_sni_not_tls(void **state)
{
	(void)state;
	sni_not_tls(NULL, false);
}

static void
test_sni_not_tls_buffered(void **state)
{
	(void)state;
	sni_not_tls(buffered, false);
}

static void
test_sni_odd_records(void **state)
{
	(void)state;
	sni_not_tls(NULL, true);
}

static void
test_sni_odd_records_buffered(void **state)
{
	(void)state;
	sni_not_tls(buffered, true);
}

/* --sni-timeout runs from the 200: a TLS client speaks first, so a hello
 * that stalls, or never comes, is closed (sni-timeout, nothing upstream);
 * upstream's bytes reach the client meanwhile. A `raw` entry's tunnel is
 * not timed (server-first protocols: ssh, smtp). */
static void
sni_timeout(const char *const *extra)
{
	const char *args[4] = { "--sni-timeout", "0.5", NULL, NULL };
	long long before = fx_sink_bytes();
	char buf[4096];
	int64_t t0;
	struct px p;
	int fd;

	if (extra != NULL)
		args[2] = extra[0];
	assert_int_equal(px_start(&p, px_tls_allowlist(), args), 0);
	(void)hello_named("sink.cordon-test.net");
	fd = tunnel(&p, "sink.cordon-test.net", fx_sink_port());
	assert_int_equal(cli_send_n(fd, hello, 10), 0);
	t0 = time_mono_ms();
	expect_refused(fd);
	assert_true(time_mono_ms() - t0 >= 400);
	close(fd);
	sink_got_nothing(before);
	log_expect(&p, "\"reason\":\"sni-timeout\"");
	/* Silent client, talkative upstream (the flood server): its bytes
	 * flow until the deadline, then the tunnel is closed. */
	fd = tunnel(&p, "flood.cordon-test.net", fx_flood_port());
	t0 = time_mono_ms();
	assert_int_equal(cli_read_n(fd, buf, sizeof(buf)), 0);
	{
		struct timeval tv = { 5, 0 };
		ssize_t k;

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while ((k = recv(fd, buf, sizeof(buf), 0)) > 0)
			;
		assert_true(k == 0 || errno == ECONNRESET);
	}
	assert_true(time_mono_ms() - t0 < 4000);
	close(fd);
	log_expect(&p, "\"host\":\"flood.cordon-test.net\"");
	assert_int_equal(px_stop(&p), 0);
	/* raw: a silent client keeps its tunnel past the SNI timeout. */
	assert_int_equal(px_start(&p, NULL, args), 0);
	fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());
	sleep_ms(1000);
	assert_int_equal(cli_send(fd, "late"), 0);
	expect_echo(fd, "late", 4);
	close(fd);
	assert_int_equal(px_stop(&p), 0);
}

static void
test_sni_timeout_splice(void **state)
{
	(void)state;
	sni_timeout(NULL);
}

static void
test_sni_timeout_buffered(void **state)
{
	(void)state;
	sni_timeout(buffered);
}

/* --insecure-no-sni-check: today's tunnels, a mismatch passes. */
static void
test_sni_check_off(void **state)
{
	static const char *const off[] = { "--insecure-no-sni-check", NULL };
	struct px p;
	size_t n;
	int fd;

	(void)state;
	assert_int_equal(px_start(&p, px_tls_allowlist(), off), 0);
	assert_true(px_wait_err(&p, 0, "SNI check is off", 2000));
	n = hello_named("pypi.org");
	fd = tunnel(&p, "echo.cordon-test.net", fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	expect_echo(fd, hello, n);
	close(fd);
	log_expect(&p, "\"decision\":\"allow\"");
	log_expect(&p, "\"sni\":null");
	assert_int_equal(px_stop(&p), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_teardown(f, fx_test_teardown)
		T(test_sni_match_splice),
		T(test_sni_match_buffered),
		T(test_sni_mismatch_splice),
		T(test_sni_mismatch_buffered),
		T(test_sni_pipelined),
		T(test_sni_bytewise_splice),
		T(test_sni_bytewise_buffered),
		T(test_sni_refusals),
		T(test_sni_truncated),
		T(test_sni_ip_literal),
		T(test_sni_not_tls),
		T(test_sni_not_tls_buffered),
		T(test_sni_odd_records),
		T(test_sni_odd_records_buffered),
		T(test_sni_timeout_splice),
		T(test_sni_timeout_buffered),
		T(test_sni_check_off),
#undef T
	};
	const char *filter = getenv("CORDON_TEST_FILTER");

	if (filter != NULL) {
		size_t matched = 0;
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			if (fnmatch(filter, tests[i].name, 0) == 0)
				matched++;
		if (matched == 0) {
			fprintf(stderr, "CORDON_TEST_FILTER=%s matches no test\n",
			    filter);
			return 1;
		}
		cmocka_set_test_filter(filter);
	}
	return cmocka_run_group_tests(tests, fx_group_setup, fx_group_teardown);
}
