/*
 * Integration tests of the transparent listener (--transparent) in the
 * built cordon-proxy, with real netfilter redirection: the test moves into
 * a network namespace of its own (root), routes 203.0.113.0/24 and the
 * synthetic block 198.18.0.0/15 to lo, and REDIRECTs every TCP
 * connection to them to the transparent port (nat OUTPUT: the same
 * target, and the same SO_ORIGINAL_DST, as the egress bridge's
 * PREROUTING rule). Clients then connect to addresses nobody listens on
 * and speak TLS, HTTP or raw bytes, never asking for a proxy; the
 * fixture's servers on 127.0.0.2 answer through the proxy. Standalone
 * mode first, then run mode (the run at the source address, its report
 * with each path).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "dig_util.h"
#include "hello_util.h"
#include "proxy_fixture.h"
#include "result.h"

#define NOWHERE	"203.0.113.5"	/* routed to lo, nothing listens */

static struct px P;
static uint16_t tport, dport;
static char head[8192];
static uint8_t hello[HELLO_CAP];

/* A shell command that must succeed (its output is the test's). */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fail_msg("%s: exit %d", cmd, rc);
}

/* The redirect of this namespace to the transparent port. */
static void
redirect_to(uint16_t port)
{
	sh("iptables -w -t nat -F OUTPUT");
	sh("iptables -w -t nat -A OUTPUT -p tcp -d 203.0.113.0/24 "
	    "-j REDIRECT --to-ports %u", port);
	sh("iptables -w -t nat -A OUTPUT -p tcp -d 198.18.0.0/15 "
	    "-j REDIRECT --to-ports %u", port);
	sh("iptables -w -t nat -A OUTPUT -p tcp -d 10.1.2.0/24 "
	    "-j REDIRECT --to-ports %u", port);
}

/* The access log's lines holding all of want (NULL-terminated), after
 * waiting up to 3 s for one. */
static unsigned
log_lines(const char *const *want)
{
	unsigned n = 0;

	for (int i = 0; i < 30 && n == 0; i++) {
		char *log = NULL, *line, *save = NULL;
		size_t len = 0;

		if (i > 0)
			usleep(100000);
		assert_int_equal(util_read_file(P.accesslog, 1 << 24, &log,
		    &len), 0);
		for (line = strtok_r(log, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save)) {
			size_t k = 0;
			while (want[k] != NULL && strstr(line, want[k]) != NULL)
				k++;
			if (want[k] == NULL)
				n++;
		}
		free(log);
	}
	return n;
}

/* Starts the proxy with both listeners (and extra, NULL-terminated). */
static void
start(const char *allow, const char *const *more)
{
	const char *extra[24] = { "--transparent", "127.0.0.1:0",
	    "--dns-listen", "127.0.0.1:0" };
	size_t n = 4;
	const char *s;

	for (size_t i = 0; more != NULL && more[i] != NULL && n < 23; i++)
		extra[n++] = more[i];
	extra[n] = NULL;
	assert_int_equal(px_start(&P, allow, extra), 0);
	s = strstr(P.err, "transparent on 127.0.0.1:");
	assert_non_null(s);
	tport = (uint16_t)atoi(s + strlen("transparent on 127.0.0.1:"));
	s = strstr(P.err, "dns on 127.0.0.1:");
	assert_non_null(s);
	dport = (uint16_t)atoi(s + strlen("dns on 127.0.0.1:"));
	redirect_to(tport);
}

static void
stop(void)
{
	assert_int_equal(px_stop(&P), 0);
	(void)util_rm_rf(P.dir);
	memset(&P, 0, sizeof(P));
}

/* A connection from src (NULL: any) to addr:port, as a client that never
 * heard of a proxy. */
static int
dial(const char *src, const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons(port) };
	struct timeval tv = { 10, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (src != NULL) {
		struct sockaddr_in me = { .sin_family = AF_INET };
		assert_int_equal(inet_pton(AF_INET, src, &me.sin_addr), 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)),
		    0);
	}
	assert_int_equal(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		fail_msg("connect %s:%u: %s", addr, port, strerror(errno));
	return fd;
}

/* An HTTP/1.1 GET with Host host (NULL: none) to addr:port from src;
 * the status, the head in head, the body in body. */
static int
http_get(const char *src, const char *addr, uint16_t port, const char *host,
    char *body, size_t bodylen)
{
	char req[512];
	long cl;
	int fd = dial(src, addr, port), st;

	if (host != NULL)
		snprintf(req, sizeof(req), "GET /t?q=1 HTTP/1.1\r\nHost: %s\r\n"
		    "Connection: close\r\n\r\n", host);
	else
		snprintf(req, sizeof(req), "GET /t HTTP/1.1\r\n"
		    "Connection: close\r\n\r\n");
	assert_int_equal(cli_send(fd, req), 0);
	st = cli_read_head(fd, head, sizeof(head));
	cl = head_content_length(head);
	body[0] = '\0';
	if (cl > 0 && (size_t)cl < bodylen) {
		assert_int_equal(cli_read_n(fd, body, (size_t)cl), 0);
		body[cl] = '\0';
	}
	close(fd);
	return st;
}

/* Everything fd gives within 5 s, up to len bytes, until EOF. */
static size_t
read_all(int fd, uint8_t *buf, size_t len)
{
	struct timeval tv = { 5, 0 };
	size_t got = 0;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < len) {
		n = recv(fd, buf + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			fail_msg("still open after 5 s");
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static size_t
hello_named(const char *name)
{
	size_t n = hello_with_names("hello-openssl-echo.bin", &name,
	    name != NULL ? 1 : 0, hello, sizeof(hello));

	assert_true(n > 0);
	return n;
}

/* The synthetic address the resolver gives name for queries from src. */
static void
resolve(const char *src, const char *name, char *out, size_t len)
{
	const char *args[] = { "-b", src, name, "A", NULL };
	const char *t = dig_run(dport, args);

	dig_check(t, "status: NOERROR", true);
	dig_answer_a(t, name, 30, out, len);
}

/* --- standalone --------------------------------------------------------- */

/* HTTP by its Host: allowed to the fixture's server (the request
 * arrives in origin form with the Host the client sent), refused with a
 * 403 that names host, port, policy and reason; no Host: 400. */
static void
test_http(void **state)
{
	char body[512], want[128];
	uint16_t hp = fx_http_port();

	(void)state;
	start(NULL, NULL);
	snprintf(want, sizeof(want), "web.cordon-test.net:%u", hp);
	assert_int_equal(http_get(NULL, NOWHERE, hp, want, body,
	    sizeof(body)), 200);
	assert_string_equal(body, "/t?q=1|");
	fx_last_http_head(head, sizeof(head));
	assert_non_null(strstr(head, "GET /t?q=1 HTTP/1.1\r\n"));
	assert_non_null(strstr(head, want));
	/* Host without a port: the original port. */
	assert_int_equal(http_get(NULL, NOWHERE, hp, "web.cordon-test.net",
	    body, sizeof(body)), 200);
	assert_int_equal(http_get(NULL, NOWHERE, hp, "x.other-test.net", body,
	    sizeof(body)), 403);
	assert_true(head_has(head, "X-Cordon-Error", "not-on-policy default"));
	snprintf(want, sizeof(want), "not-on-policy default (host "
	    "x.other-test.net, port %u, policy default)", hp);
	if (strstr(body, want) == NULL)
		fail_msg("the 403's body does not name host, port, policy and "
		    "reason: %s", body);
	assert_int_equal(http_get(NULL, NOWHERE, hp, NULL, body,
	    sizeof(body)), 400);
	assert_true(head_has(head, "X-Cordon-Error", "host-required"));
	/* The request names its host in Host alone: an absolute URI (which
	 * could name another port) or a CONNECT is refused. */
	{
		char req[256];
		int fd = dial(NULL, NOWHERE, hp);

		snprintf(req, sizeof(req), "GET http://web.cordon-test.net:%u/ "
		    "HTTP/1.1\r\nHost: web.cordon-test.net:%u\r\n\r\n",
		    fx_echo_port(), fx_echo_port());
		assert_int_equal(cli_send(fd, req), 0);
		assert_int_equal(cli_read_head(fd, head, sizeof(head)), 400);
		assert_true(head_has(head, "X-Cordon-Error",
		    "origin-form-required"));
		close(fd);
		fd = dial(NULL, NOWHERE, hp);
		snprintf(req, sizeof(req), "CONNECT web.cordon-test.net:%u "
		    "HTTP/1.1\r\n\r\n", fx_echo_port());
		assert_int_equal(cli_send(fd, req), 0);
		assert_int_equal(cli_read_head(fd, head, sizeof(head)), 400);
		assert_true(head_has(head, "X-Cordon-Error",
		    "origin-form-required"));
		close(fd);
	}
	/* A Host naming another port than the connection's. */
	snprintf(want, sizeof(want), "web.cordon-test.net:%u",
	    fx_echo_port());
	assert_int_equal(http_get(NULL, NOWHERE, hp, want, body,
	    sizeof(body)), 400);
	assert_true(head_has(head, "X-Cordon-Error", "host-mismatch"));
	stop();
}

/* TLS by its server name: the ClientHello reaches the (echo) server
 * through a tunnel the proxy opened to an address it resolved; a name off
 * the policy, no name, or a name the address does not matter for: a TLS
 * alert, then the end. */
static void
test_tls(void **state)
{
	static const uint8_t alert[7] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02,
	    0x31 };
	uint8_t back[HELLO_CAP];
	size_t n;
	int fd;

	(void)state;
	start(px_tls_allowlist(), NULL);
	n = hello_named("echo.cordon-test.net");
	fd = dial(NULL, NOWHERE, fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	assert_int_equal(cli_read_n(fd, back, n), 0);
	assert_memory_equal(back, hello, n);
	close(fd);
	/* Refused: the alert (and nothing of the server). */
	{
		const char *names[] = { "x.other-test.net", NULL };
		for (size_t i = 0; i < 2; i++) {
			n = hello_named(names[i]);
			fd = dial(NULL, NOWHERE, fx_echo_port());
			assert_int_equal(cli_send_n(fd, hello, n), 0);
			assert_int_equal(read_all(fd, back, sizeof(back)),
			    sizeof(alert));
			assert_memory_equal(back, alert, sizeof(alert));
			close(fd);
		}
	}
	/* Plain bytes that are neither TLS nor HTTP, without a raw entry:
	 * closed, nothing forwarded. */
	fd = dial(NULL, NOWHERE, fx_echo_port());
	assert_int_equal(cli_send(fd, "\x01\x02hello"), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	close(fd);
	stop();
}

/* Raw bytes by the name the resolver gave the address: only for a raw
 * entry, only on its ports; an address the resolver never gave (or
 * gave another run) is nobody's. */
static void
test_raw(void **state)
{
	char allow[256], a[32], w[32];
	uint8_t back[64];
	int fd;

	(void)state;
	const char *quick[] = { "--sni-timeout", "1", NULL };
	char pstr[32];
	int64_t t0;

	snprintf(allow, sizeof(allow), "echo.cordon-test.net:%u raw\n"
	    "web.cordon-test.net:%u\n10.1.2.3:%u raw\n", fx_echo_port(),
	    fx_echo_port(), fx_echo_port());
	start(allow, quick);
	resolve("127.0.0.1", "echo.cordon-test.net", a, sizeof(a));
	resolve("127.0.0.1", "web.cordon-test.net", w, sizeof(w));
	assert_string_not_equal(a, w);
	/* The server may speak first: nothing is read before deciding. */
	fd = dial(NULL, a, fx_echo_port());
	assert_int_equal(cli_send(fd, "ping\n"), 0);
	assert_int_equal(cli_read_n(fd, back, 5), 0);
	assert_memory_equal(back, "ping\n", 5);
	close(fd);
	/* Not raw: plain bytes refused. */
	fd = dial(NULL, w, fx_echo_port());
	assert_int_equal(cli_send(fd, "ping\n"), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	close(fd);
	/* The raw name on a port off its entry. */
	fd = dial(NULL, a, fx_sink_port());
	assert_int_equal(cli_send(fd, "ping\n"), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	close(fd);
	/* An address in the block nobody was given. */
	fd = dial(NULL, "198.19.200.1", fx_echo_port());
	assert_int_equal(cli_send(fd, "ping\n"), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	close(fd);
	/* A banner (capitals, then not a space) is plain bytes at once,
	 * not a method token to wait on. */
	fd = dial(NULL, w, fx_echo_port());
	t0 = time_mono_ms();
	assert_int_equal(cli_send(fd, "SSH-2.0-OpenSSH_9.2\r\n"), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	if (time_mono_ms() - t0 > 800)
		fail_msg("a banner was refused after %lld ms (a wait for a "
		    "method)", (long long)(time_mono_ms() - t0));
	close(fd);
	/* A client waiting for the server to speak (ssh), to the raw name
	 * on a port off its entry: refused after --sni-timeout, noted under
	 * the name, its port, raw, port-not-allowed. */
	fd = dial(NULL, a, fx_sink_port());
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	close(fd);
	snprintf(pstr, sizeof(pstr), "\"port\":%u,", fx_sink_port());
	{
		const char *want[] = { "\"host\":\"echo.cordon-test.net\"",
		    pstr, "\"reason\":\"port-not-allowed\"",
		    "\"via\":\"raw\"", NULL };
		assert_true(log_lines(want) >= 2);
	}
	/* The original destination as an IP literal: a raw entry for an
	 * internal address still goes nowhere (address-private). */
	fd = dial(NULL, "10.1.2.3", fx_echo_port());
	assert_int_equal(cli_send(fd, "ping\n"), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	close(fd);
	{
		const char *want[] = { "\"host\":\"10.1.2.3\"",
		    "\"reason\":\"address-private\"", "\"via\":\"raw\"",
		    NULL };
		assert_int_equal(log_lines(want), 1);
	}
	stop();
}

/* --- run mode ------------------------------------------------------------ */

static char rdir[64], rsock[96];

static const char *
ctl(const char *line)
{
	static char buf[65536];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { 10, 0 };
	size_t n = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", rsock);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(cli_send(fd, line), 0);
	assert_int_equal(cli_send(fd, "\n"), 0);
	while (n + 1 < sizeof(buf) && recv(fd, buf + n, 1, 0) == 1 &&
	    buf[n] != '\n')
		n++;
	buf[n] = '\0';
	close(fd);
	return buf;
}

static void
reg(const char *run, const char *addr, const char *policy, const char *tok)
{
	char line[512];
	const char *a;

	snprintf(line, sizeof(line), "{\"op\":\"register\",\"run\":\"%s\","
	    "\"addr\":\"%s\",\"policy\":\"%s\",\"token\":\"%s\","
	    "\"deadline_ms\":%lld}", run, addr, policy, tok,
	    (long long)(time_wall_ms() + 600000));
	a = ctl(line);
	if (strcmp(a, "{\"ok\":true}") != 0)
		fail_msg("register %s: %s", run, a);
}

static const cJSON *
entry_of(const cJSON *j, const char *host, const char *via)
{
	return result_egress_entry(j, host, via, NULL);
}

static void
write_policy(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/policies/%s.list", rdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Two runs at two source addresses with different policies: each
 * reaches its own hosts over HTTP, TLS and raw, and nothing else; a
 * source with no run is refused; each report lists its attempts with
 * their paths. */
static void
test_runs(void **state)
{
	const char *more[] = { "--allowlist", NULL, "--control", rsock, NULL };
	char pol[128], text[256], body[512], hosth[128], a[32], b[32];
	uint8_t back[HELLO_CAP];
	const cJSON *e;
	cJSON *j;
	size_t n;
	int fd;

	(void)state;
	snprintf(rdir, sizeof(rdir), "/tmp/cordon-pxtr-XXXXXX");
	assert_non_null(mkdtemp(rdir));
	snprintf(pol, sizeof(pol), "%s/policies", rdir);
	snprintf(rsock, sizeof(rsock), "%s/ctl.sock", rdir);
	assert_int_equal(mkdir(pol, 0700), 0);
	snprintf(text, sizeof(text), "echo.cordon-test.net:%u raw\n"
	    "web.cordon-test.net:%u\n", fx_echo_port(), fx_http_port());
	write_policy("alpha", text);
	snprintf(text, sizeof(text), "sink.cordon-test.net:%u raw\n"
	    "echo.cordon-test.net:%u\n", fx_sink_port(), fx_http_port());
	write_policy("beta", text);
	more[1] = pol;
	start(NULL, more);
	/* No run at 127.0.0.1 yet: closed before a byte is read (nothing
	 * of a source that is no run's is parsed). */
	snprintf(hosth, sizeof(hosth), "web.cordon-test.net:%u",
	    fx_http_port());
	assert_int_equal(http_get("127.0.0.1", NOWHERE, fx_http_port(), hosth,
	    body, sizeof(body)), -1);
	reg("run-a", "127.0.0.1", "alpha", "aaaaaaaaaaaaaaaa0123456789abcdef"
	    "0123456789abcdef0123456789abcdef");
	reg("run-b", "127.0.0.2", "beta", "bbbbbbbbbbbbbbbb0123456789abcdef"
	    "0123456789abcdef0123456789abcdef");
	/* HTTP: web is alpha's, not beta's. */
	assert_int_equal(http_get("127.0.0.1", NOWHERE, fx_http_port(), hosth,
	    body, sizeof(body)), 200);
	assert_int_equal(http_get("127.0.0.2", NOWHERE, fx_http_port(), hosth,
	    body, sizeof(body)), 403);
	assert_true(head_has(head, "X-Cordon-Error", "not-on-policy beta"));
	/* Raw: alpha's echo by its synthetic address; beta's sink. The same
	 * address in the two runs maps to each run's own name. */
	resolve("127.0.0.1", "echo.cordon-test.net", a, sizeof(a));
	resolve("127.0.0.2", "sink.cordon-test.net", b, sizeof(b));
	assert_string_equal(a, b);
	fd = dial("127.0.0.1", a, fx_echo_port());
	assert_int_equal(cli_send(fd, "ping\n"), 0);
	assert_int_equal(cli_read_n(fd, back, 5), 0);
	assert_memory_equal(back, "ping\n", 5);
	close(fd);
	/* beta's address a is sink: on the echo port, refused. */
	fd = dial("127.0.0.2", a, fx_echo_port());
	assert_int_equal(cli_send(fd, "ping\n"), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 0);
	close(fd);
	/* TLS: echo on the echo port is alpha's (raw, and TLS passes). */
	n = hello_named("echo.cordon-test.net");
	fd = dial("127.0.0.1", NOWHERE, fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	assert_int_equal(cli_read_n(fd, back, n), 0);
	close(fd);
	fd = dial("127.0.0.2", NOWHERE, fx_echo_port());
	assert_int_equal(cli_send_n(fd, hello, n), 0);
	assert_int_equal(read_all(fd, back, sizeof(back)), 7);
	close(fd);
	j = cJSON_Parse(ctl("{\"op\":\"unregister\",\"run\":\"run-a\"}"));
	assert_non_null(j);
	e = entry_of(j, "web.cordon-test.net", "http");
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "decision")->valuestring,
	    "allowed");
	assert_non_null(entry_of(j, "echo.cordon-test.net", "raw"));
	assert_non_null(entry_of(j, "echo.cordon-test.net", "tls"));
	assert_non_null(entry_of(j, "echo.cordon-test.net", "dns"));
	cJSON_Delete(j);
	j = cJSON_Parse(ctl("{\"op\":\"unregister\",\"run\":\"run-b\"}"));
	assert_non_null(j);
	e = entry_of(j, "web.cordon-test.net", "http");
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "reason")->valuestring,
	    "not-on-policy beta");
	e = entry_of(j, "sink.cordon-test.net", "raw");
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "decision")->valuestring,
	    "denied");
	assert_string_equal(cJSON_GetObjectItem(e, "reason")->valuestring,
	    "port-not-allowed");
	e = entry_of(j, "echo.cordon-test.net", "tls");
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "decision")->valuestring,
	    "denied");
	cJSON_Delete(j);
	stop();
}

static int
group_setup(void **state)
{
	(void)state;
	if (unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return -1;
	}
	if (system("ip link set lo up && "
	    "ip route add 203.0.113.0/24 dev lo src 127.0.0.1 && "
	    "ip route add 198.18.0.0/15 dev lo src 127.0.0.1 && "
	    "ip route add 10.1.2.0/24 dev lo src 127.0.0.1") != 0)
		return -1;
	return fx_start();
}

static int
test_teardown(void **state)
{
	(void)state;
	px_kill_all();
	if (rdir[0] != '\0')
		(void)util_rm_rf(rdir);
	rdir[0] = '\0';
	if (P.dir[0] != '\0')
		(void)util_rm_rf(P.dir);
	memset(&P, 0, sizeof(P));
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_http, test_teardown),
		cmocka_unit_test_teardown(test_tls, test_teardown),
		cmocka_unit_test_teardown(test_raw, test_teardown),
		cmocka_unit_test_teardown(test_runs, test_teardown),
	};
	const char *filter = getenv("CORDON_TEST_FILTER");
	int rc;

	signal(SIGPIPE, SIG_IGN);
	rc = fx_need_root("proxy_transparent",
	    "a network namespace and its nat rules");
	if (rc != 0)
		return rc;
	if (filter != NULL)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, group_setup, fx_group_teardown);
}
