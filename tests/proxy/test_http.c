/* Unit tests for the proxy's HTTP/1.x head parser, rewrite, Host check,
 * response framing and chunked-body scanner. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"
#include "proxy/http.h"

#define MAXHEAD 8192

static bool
span_is(const char *p, size_t len, const char *want)
{
	return p != NULL && strlen(want) == len && memcmp(p, want, len) == 0;
}

#define assert_span(p, len, want) do { \
	if (!span_is((p), (len), (want))) \
		fail_msg("got '%.*s', want '%s'", (int)(len), (p) ? (p) : "", (want)); \
} while (0)

static int
parse(const char *s, struct http_request *req)
{
	return proxy_http_request_parse(s, strlen(s), MAXHEAD, req);
}

static void
test_connect(void **state)
{
	static const char s[] = "CONNECT example.com:443 HTTP/1.1\r\n"
	    "Host: example.com:443\r\nProxy-Authorization: Basic eA==\r\n\r\n";
	struct http_request req;

	(void)state;
	assert_int_equal(parse(s, &req), (int)strlen(s));
	assert_true(req.is_connect);
	assert_int_equal(req.form, HTTP_TARGET_AUTHORITY);
	assert_span(req.method, req.method_len, "CONNECT");
	assert_span(req.target, req.target_len, "example.com:443");
	assert_span(req.host, req.host_len, "example.com");
	assert_int_equal(req.port, 443);
	assert_true(req.port_explicit);
	assert_int_equal(req.version_minor, 1);
	assert_int_equal(req.nheaders, 2);
	assert_span(req.headers[1].name, req.headers[1].name_len,
	    "Proxy-Authorization");
	assert_span(req.headers[1].value, req.headers[1].value_len, "Basic eA==");
	assert_non_null(req.host_header);
	assert_int_equal(req.content_length, -1);
	assert_false(req.chunked);
	assert_true(req.keep_alive);
	assert_int_equal(req.head_len, strlen(s));
	assert_int_equal(proxy_http_request_check_host(&req), 0);

	assert_int_equal(parse("CONNECT [::1]:8443 HTTP/1.0\r\n\r\n", &req), 31);
	assert_span(req.host, req.host_len, "[::1]");
	assert_int_equal(req.port, 8443);
	assert_int_equal(req.version_minor, 0);
	assert_false(req.keep_alive);
	/* Host on CONNECT is not forwarded, so not checked */
	assert_true(parse("CONNECT a.example:443 HTTP/1.1\r\nHost: b\r\n\r\n",
	    &req) > 0);
	assert_int_equal(proxy_http_request_check_host(&req), 0);
}

static void
test_absolute_get(void **state)
{
	static const char s[] =
	    "GET http://Example.com:8080/a/b?x=1&y=2 HTTP/1.1\r\n"
	    "Host: example.com:8080\r\n"
	    "User-Agent: t/1\r\n"
	    "Connection: keep-alive, X-Foo\r\n"
	    "X-Foo: bar\r\n"
	    "Proxy-Connection: keep-alive\r\n"
	    "Keep-Alive: 300\r\n"
	    "TE: trailers\r\n"
	    "Upgrade: websocket\r\n"
	    "Trailer: X\r\n"
	    "Proxy-Authorization: Basic eA==\r\n"
	    "Accept:  */* \t\r\n"
	    "X-Empty:\r\n"
	    "\r\n"
	    "BODY";
	static const char want[] =
	    "GET /a/b?x=1&y=2 HTTP/1.1\r\n"
	    "Host: example.com:8080\r\n"
	    "User-Agent: t/1\r\n"
	    "Accept: */*\r\n"
	    "X-Empty: \r\n"
	    "Connection: close\r\n\r\n";
	struct http_request req;
	struct cbuf *out = cbuf_new(4096);

	(void)state;
	assert_non_null(out);
	assert_int_equal(parse(s, &req), (int)strlen(s) - 4);
	assert_false(req.is_connect);
	assert_int_equal(req.form, HTTP_TARGET_ABSOLUTE);
	assert_span(req.scheme, req.scheme_len, "http");
	assert_span(req.host, req.host_len, "Example.com");
	assert_int_equal(req.port, 8080);
	assert_true(req.port_explicit);
	assert_span(req.path, req.path_len, "/a/b?x=1&y=2");
	assert_true(req.keep_alive);
	assert_true(proxy_http_connection_lists(&req, "x-foo", 5));
	assert_true(proxy_http_connection_lists(&req, "Keep-Alive", 10));
	assert_false(proxy_http_connection_lists(&req, "close", 5));
	assert_int_equal(proxy_http_request_check_host(&req), 0);
	assert_int_equal(proxy_http_request_rewrite(&req, out), 0);
	assert_string_equal(cbuf_data(out), want);
	cbuf_free(out);
}

static void
test_rewrite_adds_host(void **state)
{
	static const struct { const char *in, *want; } rows[] = {
		{ "GET http://example.com HTTP/1.1\r\n\r\n",
		  "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n" },
		{ "POST http://example.com:8080 HTTP/1.0\r\nContent-Length: 3\r\n\r\n",
		  "POST / HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 3\r\n"
		  "Connection: close\r\n\r\n" },
		{ "PUT http://[2001:db8::1]/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
		  "PUT /x HTTP/1.1\r\nHost: [2001:db8::1]\r\n"
		  "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" },
		{ "GET http://a.example/?q HTTP/1.1\r\nConnection: close\r\n"
		  "X-A: 1\r\nHost: a.example\r\nX-B: 2\r\n\r\n",
		  "GET /?q HTTP/1.1\r\nX-A: 1\r\nHost: a.example\r\nX-B: 2\r\n"
		  "Connection: close\r\n\r\n" },
	};
	struct http_request req;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct cbuf *out = cbuf_new(1024);
		assert_true(parse(rows[i].in, &req) > 0);
		assert_int_equal(proxy_http_request_rewrite(&req, out), 0);
		assert_string_equal(cbuf_data(out), rows[i].want);
		cbuf_free(out);
	}
}

static void
test_rewrite_errors(void **state)
{
	struct http_request req;
	struct cbuf *out = cbuf_new(20);

	(void)state;
	assert_true(parse("GET /x HTTP/1.1\r\nHost: a\r\n\r\n", &req) > 0);
	assert_int_equal(req.form, HTTP_TARGET_ORIGIN);
	assert_span(req.path, req.path_len, "/x");
	assert_int_equal(proxy_http_request_rewrite(&req, out), -EINVAL);
	assert_int_equal(proxy_http_request_check_host(&req), 0);
	assert_true(parse("GET http://example.com/0123456789 HTTP/1.1\r\n\r\n",
	    &req) > 0);
	assert_int_equal(proxy_http_request_rewrite(&req, out), -ENOSPC);
	cbuf_free(out);
}

/* Inside an inspected tunnel: our Host, the injected header replacing
 * every same-name one (any case), hop-by-hop and Connection-listed
 * headers dropped, and bad inject values refused. */
static void
test_rewrite_origin(void **state)
{
	static const struct { const char *in, *name, *value, *want; } rows[] = {
		{ "GET /a?b HTTP/1.1\r\nHost: api.example\r\n"
		  "authorization: Bearer mine\r\nX-A: 1\r\n"
		  "AUTHORIZATION: again\r\nProxy-Authorization: p\r\n\r\n",
		  "Authorization", "Bearer s",
		  "GET /a?b HTTP/1.1\r\nHost: api.example\r\nX-A: 1\r\n"
		  "Authorization: Bearer s\r\nConnection: close\r\n\r\n" },
		{ "POST /u HTTP/1.1\r\nContent-Length: 2\r\nConnection: x-t\r\n"
		  "X-T: 1\r\n\r\n", NULL, NULL,
		  "POST /u HTTP/1.1\r\nHost: api.example\r\nContent-Length: 2\r\n"
		  "Connection: close\r\n\r\n" },
	};
	struct http_request req;
	struct cbuf *out;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		out = cbuf_new(1024);
		assert_true(parse(rows[i].in, &req) > 0);
		assert_int_equal(proxy_http_request_rewrite_origin(&req,
		    "api.example", rows[i].name, rows[i].value, out), 0);
		assert_string_equal(cbuf_data(out), rows[i].want);
		cbuf_free(out);
	}
	out = cbuf_new(1024);
	assert_true(parse("GET /a HTTP/1.1\r\n\r\n", &req) > 0);
	assert_int_equal(proxy_http_request_rewrite_origin(&req, "h", "X-K",
	    "a\r\nX-Evil: 1", out), -EINVAL);
	assert_int_equal(proxy_http_request_rewrite_origin(&req, "h", "X K",
	    "v", out), -EINVAL);
	assert_int_equal(proxy_http_request_rewrite_origin(&req, "h", "X-K",
	    NULL, out), -EINVAL);
	assert_true(parse("GET http://h/a HTTP/1.1\r\n\r\n", &req) > 0);
	assert_int_equal(proxy_http_request_rewrite_origin(&req, "h", NULL,
	    NULL, out), -EINVAL);
	cbuf_free(out);
}

#define BADPORT (-1)

static void
test_forms(void **state)
{
	static const struct {
		const char *line;
		int form;		/* 0: parse must fail with -EINVAL;
					 * BADPORT: with -ERANGE (400 bad-port) */
		const char *host;
		unsigned port;
		const char *path;
	} rows[] = {
		{ "OPTIONS * HTTP/1.1", HTTP_TARGET_ASTERISK, NULL, 0, NULL },
		{ "GET * HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET / HTTP/1.1", HTTP_TARGET_ORIGIN, NULL, 0, "/" },
		{ "GET /a?b HTTP/1.1", HTTP_TARGET_ORIGIN, NULL, 0, "/a?b" },
		{ "GET http://a/ HTTP/1.1", HTTP_TARGET_ABSOLUTE, "a", 80, "/" },
		{ "GET HTTP://a HTTP/1.1", HTTP_TARGET_ABSOLUTE, "a", 80, "/" },
		{ "GET https://a/x HTTP/1.1", HTTP_TARGET_ABSOLUTE, "a", 443, "/x" },
		{ "GET ftp://a/x HTTP/1.1", HTTP_TARGET_ABSOLUTE, "a", 0, "/x" },
		{ "GET http://a:1/ HTTP/1.1", HTTP_TARGET_ABSOLUTE, "a", 1, "/" },
		{ "GET http://[::1]:8080/x HTTP/1.1", HTTP_TARGET_ABSOLUTE, "[::1]", 8080, "/x" },
		{ "GET http://2852039166/ HTTP/1.1", HTTP_TARGET_ABSOLUTE, "2852039166", 80, "/" },
		{ "GET http://a/b//c?d=/e HTTP/1.1", HTTP_TARGET_ABSOLUTE, "a", 80, "/b//c?d=/e" },
		{ "CONNECT a:443 HTTP/1.1", HTTP_TARGET_AUTHORITY, "a", 443, NULL },
		{ "CONNECT a HTTP/1.1", 0, NULL, 0, NULL },
		{ "CONNECT a: HTTP/1.1", BADPORT, NULL, 0, NULL },
		/* One port parser with the allowlist: leading zeros are no
		 * port (explain says invalid-port), not 443. */
		{ "CONNECT a:00443 HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "CONNECT a:0443 HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "CONNECT [::1]:0443 HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "CONNECT a:0 HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "CONNECT a:65536 HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "CONNECT a:+443 HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "CONNECT a:44x3 HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "GET http://a:080/ HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "CONNECT /x HTTP/1.1", 0, NULL, 0, NULL },
		{ "CONNECT http://a:443/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "CONNECT a:443/x HTTP/1.1", 0, NULL, 0, NULL },
		{ "CONNECT user@a:443 HTTP/1.1", 0, NULL, 0, NULL },
		{ "CONNECT * HTTP/1.1", 0, NULL, 0, NULL },
		{ "connect a:443 HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET a:80 HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://user@a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://u:p@a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a/#frag HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a?x HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http:/a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http:a HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http:// HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http:///x HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a:/ HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "GET http://a:0/ HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "GET http://a:65536/ HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "GET http://a:8o/ HTTP/1.1", BADPORT, NULL, 0, NULL },
		{ "GET http://a\\b/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET 1http://a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET ://a/ HTTP/1.1", 0, NULL, 0, NULL },
		/* request-line syntax */
		{ "G@T http://a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET  http://a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a/  HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a/ HTTP/1.1 ", 0, NULL, 0, NULL },
		{ " GET http://a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET\thttp://a/ HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a/ HTTP/1.2", 0, NULL, 0, NULL },
		{ "GET http://a/ HTTP/2.0", 0, NULL, 0, NULL },
		{ "GET http://a/ HTTP/1.10", 0, NULL, 0, NULL },
		{ "GET http://a/ http/1.1", 0, NULL, 0, NULL },
		{ "GET http://a/ HTTP/1", 0, NULL, 0, NULL },
		{ "GET http://a/", 0, NULL, 0, NULL },
		{ "GET", 0, NULL, 0, NULL },
		{ "GET http://a/\x7f HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a/\xc3\xa9 HTTP/1.1", 0, NULL, 0, NULL },
		{ "GET http://a/\x01 HTTP/1.1", 0, NULL, 0, NULL },
		{ "PRI * HTTP/2.0", 0, NULL, 0, NULL },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[256];
		struct http_request req;
		int rc;

		snprintf(buf, sizeof(buf), "%s\r\n\r\n", rows[i].line);
		rc = parse(buf, &req);
		if (rows[i].form == 0 || rows[i].form == BADPORT) {
			int want = rows[i].form == 0 ? -EINVAL : -ERANGE;
			if (rc != want)
				fail_msg("'%s': rc %d, want %d", rows[i].line, rc,
				    want);
			continue;
		}
		if (rc != (int)strlen(buf) || (int)req.form != rows[i].form)
			fail_msg("'%s': rc %d form %d", rows[i].line, rc, req.form);
		if (rows[i].host != NULL)
			assert_span(req.host, req.host_len, rows[i].host);
		assert_int_equal(req.port, rows[i].port);
		if (rows[i].path != NULL)
			assert_span(req.path, req.path_len, rows[i].path);
		else
			assert_null(req.path);
	}
}

static const char sample[] =
    "POST http://example.com/upload?x=1 HTTP/1.1\r\n"
    "Host: example.com\r\n"
    "Content-Length: 5\r\n"
    "X-Tab:\tv\talue\r\n"
    "\r\n";

static void
test_incomplete(void **state)
{
	size_t n = strlen(sample);
	struct http_request req;

	(void)state;
	for (size_t cut = 0; cut < n; cut++) {
		char *copy = malloc(cut + 1);	/* exact size: ASan catches overreads */
		memcpy(copy, sample, cut);
		int rc = proxy_http_request_parse(copy, cut, MAXHEAD, &req);
		if (rc != -EAGAIN)
			fail_msg("cut %zu: rc %d", cut, rc);
		assert_int_equal(req.nheaders, 0);
		assert_null(req.method);
		free(copy);
	}
	assert_int_equal(proxy_http_request_parse(sample, n, MAXHEAD, &req),
	    (int)n);
	assert_int_equal(req.content_length, 5);
	assert_span(req.headers[2].value, req.headers[2].value_len, "v\talue");
	/* leading empty lines are skipped, up to 8 */
	assert_int_equal(parse("\r\n\r\nGET http://a/ HTTP/1.1\r\n\r\n", &req), 30);
	assert_span(req.method, req.method_len, "GET");
	assert_int_equal(parse("\r\n", &req), -EAGAIN);
	assert_int_equal(parse("\r", &req), -EAGAIN);
	assert_int_equal(parse("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET http://a/ "
	    "HTTP/1.1\r\n\r\n", &req), -EINVAL);
	/* malformed bytes already seen are reported at once */
	assert_int_equal(parse("GET http://a/ HTTP/1.1\nHost", &req), -EINVAL);
	assert_int_equal(parse("GET http://a/ HTTP/1.1\rX", &req), -EINVAL);
}

static void
test_oversized(void **state)
{
	size_t n = strlen(sample);
	struct http_request req;
	char *big;

	(void)state;
	assert_int_equal(proxy_http_request_parse(sample, n, n, &req), (int)n);
	assert_int_equal(proxy_http_request_parse(sample, n, n - 1, &req),
	    -EMSGSIZE);
	assert_int_equal(proxy_http_request_parse(sample, n - 1, n - 1, &req), -EMSGSIZE);
	assert_int_equal(proxy_http_request_parse(sample, n - 2, n - 1, &req), -EAGAIN);
	/* a long header line that never ends */
	big = malloc(MAXHEAD + 100);
	memcpy(big, "GET http://a/ HTTP/1.1\r\nX: ", 27);
	memset(big + 27, 'a', MAXHEAD + 100 - 27);
	assert_int_equal(proxy_http_request_parse(big, MAXHEAD + 100, MAXHEAD,
	    &req), -EMSGSIZE);
	assert_int_equal(proxy_http_request_parse(big, MAXHEAD - 1, MAXHEAD,
	    &req), -EAGAIN);
	free(big);
}

static void
test_header_count(void **state)
{
	char buf[4096];
	struct http_request req;
	size_t off;

	(void)state;
	off = (size_t)snprintf(buf, sizeof(buf), "GET http://a/ HTTP/1.1\r\n");
	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "X%d: v\r\n", i);
	snprintf(buf + off, sizeof(buf) - off, "\r\n");
	assert_int_equal(parse(buf, &req), (int)strlen(buf));
	assert_int_equal(req.nheaders, HTTP_MAX_HEADERS);
	snprintf(buf + off, sizeof(buf) - off, "Y: v\r\n\r\n");
	assert_int_equal(parse(buf, &req), -EMSGSIZE);
}

static void
test_headers_and_framing(void **state)
{
	static const struct {
		const char *headers;	/* after "GET http://a/ HTTP/1.1\r\n" */
		int ok;			/* 1 parses, else the negative errno */
		long long cl;
		bool chunked;
	} rows[] = {
		{ "Content-Length: 5\r\n", 1, 5, false },
		{ "Content-Length: 0\r\n", 1, 0, false },
		{ "Content-Length:  5 \r\n", 1, 5, false },
		{ "Content-Length: 5\r\nContent-Length: 5\r\n", 1, 5, false },
		{ "content-length: 0005\r\n", 1, 5, false },
		{ "Content-Length: 4611686018427387904\r\n", 1, 4611686018427387904LL, false },
		{ "Content-Length: 4611686018427387905\r\n", -EINVAL, 0, false },
		{ "Content-Length: 99999999999999999999\r\n", -EINVAL, 0, false },
		{ "Content-Length: 5\r\nContent-Length: 6\r\n", -EINVAL, 0, false },
		{ "Content-Length: 5, 5\r\n", -EINVAL, 0, false },
		{ "Content-Length: +5\r\n", -EINVAL, 0, false },
		{ "Content-Length: -1\r\n", -EINVAL, 0, false },
		{ "Content-Length: 0x5\r\n", -EINVAL, 0, false },
		{ "Content-Length: 5 5\r\n", -EINVAL, 0, false },
		{ "Content-Length:\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: chunked\r\n", 1, -1, true },
		{ "Transfer-Encoding: Chunked\r\n", 1, -1, true },
		{ "transfer-encoding:\tCHUNKED \r\n", 1, -1, true },
		{ "Transfer-Encoding: gzip, chunked\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: chunked, gzip\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: chunked, chunked\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: identity\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: xchunked\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: \"chunked\"\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", -EINVAL, 0, false },
		{ "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", -EINVAL, 0, false },
		{ "Transfer-Encoding : chunked\r\n", -EINVAL, 0, false },
		{ "Content-Length\t: 5\r\n", -EINVAL, 0, false },
		{ " Transfer-Encoding: chunked\r\n", -EINVAL, 0, false },
		{ "X: a\r\n b\r\n", -EINVAL, 0, false },
		{ "X: a\r\n\tb\r\n", -EINVAL, 0, false },
		{ "Content-Length: 5\n", -EINVAL, 0, false },
		{ "X: a\rb\r\n", -EINVAL, 0, false },
		{ "X: a\x01\r\n", -EINVAL, 0, false },
		{ "X: a\x7f\r\n", -EINVAL, 0, false },
		{ "X: caf\xc3\xa9\r\n", 1, -1, false },
		{ "X: a\tb\r\n", 1, -1, false },
		{ "Bad Header: x\r\n", -EINVAL, 0, false },
		{ "(x): y\r\n", -EINVAL, 0, false },
		{ ": x\r\n", -EINVAL, 0, false },
		{ "X\r\n", -EINVAL, 0, false },
		{ "X-\xc3\xa9: y\r\n", -EINVAL, 0, false },
		{ "Host: a\r\nHost: a\r\n", -EINVAL, 0, false },
		{ "Connection: content-length\r\nContent-Length: 5\r\n", -EINVAL, 0, false },
		{ "Connection: Transfer-Encoding\r\n", -EINVAL, 0, false },
		{ "Connection: close, host\r\n", -EINVAL, 0, false },
		{ "Connection: close\r\n", 1, -1, false },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[512];
		struct http_request req;
		int rc;

		snprintf(buf, sizeof(buf), "GET http://a/ HTTP/1.1\r\n%s\r\n",
		    rows[i].headers);
		rc = parse(buf, &req);
		if (rows[i].ok != 1) {
			if (rc != rows[i].ok)
				fail_msg("row %zu: rc %d, want %d", i, rc, rows[i].ok);
			continue;
		}
		if (rc != (int)strlen(buf))
			fail_msg("row %zu: rc %d", i, rc);
		assert_int_equal(req.content_length, rows[i].cl);
		assert_int_equal(req.chunked, rows[i].chunked);
	}
	/* an embedded NUL is a CTL */
	{
		static const char nul[] = "GET http://a/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
		struct http_request req;
		assert_int_equal(proxy_http_request_parse(nul, sizeof(nul) - 1, MAXHEAD,
		    &req), -EINVAL);
	}
}

static void
test_version_rules(void **state)
{
	struct http_request req;

	(void)state;
	assert_int_equal(parse("POST http://a/ HTTP/1.0\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n", &req), -EINVAL);
	assert_true(parse("GET http://a/ HTTP/1.0\r\n\r\n", &req) > 0);
	assert_false(req.keep_alive);
	assert_true(parse("GET http://a/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
	    &req) > 0);
	assert_true(req.keep_alive);
	assert_true(parse("GET http://a/ HTTP/1.1\r\n\r\n", &req) > 0);
	assert_true(req.keep_alive);
	assert_true(parse("GET http://a/ HTTP/1.1\r\nConnection: x, Close\r\n\r\n",
	    &req) > 0);
	assert_false(req.keep_alive);
	assert_true(parse("GET http://a/ HTTP/1.1\r\nConnection: a\r\n"
	    "Connection: close\r\n\r\n", &req) > 0);
	assert_false(req.keep_alive);
	/* CONNECT has no body */
	assert_int_equal(parse("CONNECT a:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
	    &req), -EINVAL);
	assert_int_equal(parse("CONNECT a:443 HTTP/1.1\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n", &req), -EINVAL);
	assert_true(parse("CONNECT a:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	    &req) > 0);
}

static void
test_check_host(void **state)
{
	static const struct { const char *uri, *host; int rc; } rows[] = {
		{ "http://a.example/", "a.example", 0 },
		{ "http://a.example/", "A.EXAMPLE", 0 },
		{ "http://A.example/", "a.Example", 0 },
		{ "http://a.example/", "a.example:80", 0 },
		{ "http://a.example:80/", "a.example", 0 },
		{ "http://a.example:8080/", "a.example:8080", 0 },
		{ "http://a.example:8080/", "a.example", -EINVAL },
		{ "http://a.example/", "a.example:8080", -EINVAL },
		{ "http://a.example/", "a.example:443", -EINVAL },
		{ "http://a.example/", "b.example", -EINVAL },
		{ "http://a.example/", "a.example.", -EINVAL },
		{ "http://a.example/", "a.exampl", -EINVAL },
		{ "http://a.example/", "", -EINVAL },
		{ "http://a.example/", "a.example:", -EINVAL },
		{ "http://a.example/", "a.example:0", -EINVAL },
		{ "http://a.example/", "a.example:80:80", -EINVAL },
		{ "http://a.example/", "user@a.example", -EINVAL },
		{ "http://[::1]/", "[::1]", 0 },
		{ "http://[::1]/", "[::1]:80", 0 },
		{ "http://[::1]/", "::1", -EINVAL },
		{ "http://[::1]/", "[::2]", -EINVAL },
		{ "https://a/", "a:443", 0 },
		{ "https://a/", "a", 0 },
		{ "https://a/", "a:80", -EINVAL },
		{ "http://127.1/", "127.0.0.1", -EINVAL },
		{ "http://a/", NULL, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[256];
		struct http_request req;

		if (rows[i].host != NULL)
			snprintf(buf, sizeof(buf), "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n",
			    rows[i].uri, rows[i].host);
		else
			snprintf(buf, sizeof(buf), "GET %s HTTP/1.1\r\n\r\n",
			    rows[i].uri);
		assert_int_equal(parse(buf, &req), (int)strlen(buf));
		if (proxy_http_request_check_host(&req) != rows[i].rc)
			fail_msg("%s Host '%s': want %d", rows[i].uri,
			    rows[i].host ? rows[i].host : "(none)", rows[i].rc);
	}
}

static void
test_hop_by_hop(void **state)
{
	static const struct { const char *name; bool hop; } rows[] = {
		{ "Connection", true }, { "connection", true },
		{ "Keep-Alive", true }, { "Proxy-Connection", true },
		{ "Proxy-Authenticate", true }, { "Proxy-Authorization", true },
		{ "PROXY-AUTHORIZATION", true }, { "Proxy-Anything", true },
		{ "TE", true }, { "te", true }, { "Trailer", true },
		{ "Upgrade", true },
		{ "Transfer-Encoding", false }, { "Content-Length", false },
		{ "Host", false }, { "Trailers", false }, { "Proxy", false },
		{ "X-Proxy-Id", false }, { "Connectionx", false }, { "", false },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (proxy_http_header_is_hop_by_hop(rows[i].name, strlen(rows[i].name))
		    != rows[i].hop)
			fail_msg("%s: want %d", rows[i].name, rows[i].hop);
}

static void
test_response(void **state)
{
	static const struct {
		const char *head;
		bool head_req;
		int rc;		/* 1: parses */
		int status;
		enum http_body_kind body;
		long long cl;
		bool keep;
	} rows[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", false, 1, 200, HTTP_BODY_LENGTH, 5, true },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, 1, 200, HTTP_BODY_CHUNKED, -1, true },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, 1, 200, HTTP_BODY_CHUNKED, -1, true },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", false, 1, 200, HTTP_BODY_CLOSE, -1, false },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", false, 1, 200, HTTP_BODY_CLOSE, -1, false },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", false, 1, 200, HTTP_BODY_CLOSE, -1, false },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", false, 1, 200, HTTP_BODY_CLOSE, -1, false },
		{ "HTTP/1.1 200 OK\r\n\r\n", false, 1, 200, HTTP_BODY_CLOSE, -1, false },
		{ "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false, 1, 200, HTTP_BODY_LENGTH, 0, true },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n", false, 1, 200, HTTP_BODY_LENGTH, 5, false },
		{ "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n", false, 1, 200, HTTP_BODY_LENGTH, 5, false },
		{ "HTTP/1.0 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n", false, 1, 200, HTTP_BODY_LENGTH, 5, true },
		{ "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, 1, 200, HTTP_BODY_CLOSE, -1, false },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, 1, 200, HTTP_BODY_NONE, -1, true },
		{ "HTTP/1.1 204 No Content\r\n\r\n", false, 1, 204, HTTP_BODY_NONE, -1, true },
		{ "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", false, 1, 304, HTTP_BODY_NONE, -1, true },
		{ "HTTP/1.1 100 Continue\r\n\r\n", false, 1, 100, HTTP_BODY_NONE, -1, true },
		{ "HTTP/1.1 101 Switching Protocols\r\n\r\n", false, 1, 101, HTTP_BODY_CLOSE, -1, false },
		{ "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\n", false, 1, 404, HTTP_BODY_LENGTH, 3, true },
		{ "HTTP/1.1 20 OK\r\n\r\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/1.1 099 OK\r\n\r\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/1.1 2000 OK\r\n\r\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/1.1  200 OK\r\n\r\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/2 200 OK\r\n\r\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/1.1 200 OK\n\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/1.1 200 O\x01K\r\n\r\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", false, -EINVAL, 0, 0, 0, false },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", false, -EAGAIN, 0, 0, 0, false },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct http_response resp;
		int rc = proxy_http_response_parse(rows[i].head,
		    strlen(rows[i].head), MAXHEAD, rows[i].head_req, &resp);
		if (rows[i].rc != 1) {
			if (rc != rows[i].rc)
				fail_msg("row %zu: rc %d want %d", i, rc, rows[i].rc);
			assert_int_equal(resp.status, 0);
			continue;
		}
		if (rc != (int)strlen(rows[i].head))
			fail_msg("row %zu: rc %d", i, rc);
		assert_int_equal(resp.status, rows[i].status);
		if (resp.body != rows[i].body || resp.content_length != rows[i].cl ||
		    resp.keep_alive != rows[i].keep)
			fail_msg("row %zu: body %d cl %lld keep %d", i, resp.body,
			    (long long)resp.content_length, resp.keep_alive);
	}
	{
		struct http_response resp;
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
		assert_int_equal(proxy_http_response_parse(ok, strlen(ok), 10,
		    false, &resp), -EMSGSIZE);
		assert_int_equal(proxy_http_response_parse(ok, strlen(ok), MAXHEAD, false,
		    &resp), (int)strlen(ok));
		assert_span(resp.reason, resp.reason_len, "OK");
	}
}

static const char chunked_body[] =
    "5\r\nhello\r\n"
    "1A;name=value;x=\"q s\"\r\nabcdefghijklmnopqrstuvwxyz\r\n"
    "0003 ; ext\r\nxyz\r\n"
    "0\r\nX-Trailer: v\r\nX-Other:\r\n\r\n";

static void
test_chunked_whole_and_split(void **state)
{
	size_t n = strlen(chunked_body);
	char buf[512];
	struct http_chunk_state st;
	bool done;
	ssize_t r;

	(void)state;
	/* followed by the next request, which must not be consumed */
	snprintf(buf, sizeof(buf), "%sGET ", chunked_body);
	proxy_http_chunked_init(&st);
	r = proxy_http_chunked_scan(&st, buf, strlen(buf), &done);
	assert_int_equal(r, (ssize_t)n);
	assert_true(done);
	assert_int_equal(proxy_http_chunked_scan(&st, "more", 4, &done), 0);
	assert_true(done);

	/* every split point into two pieces */
	for (size_t cut = 0; cut <= n; cut++) {
		proxy_http_chunked_init(&st);
		r = proxy_http_chunked_scan(&st, chunked_body, cut, &done);
		assert_int_equal(r, (ssize_t)cut);
		assert_int_equal(done, cut == n);
		r = proxy_http_chunked_scan(&st, chunked_body + cut, n - cut + 4, &done);
		/* the 4 bytes past the body are "" plus garbage: never consumed */
		assert_int_equal(r, (ssize_t)(n - cut));
		assert_true(done);
	}
	/* byte by byte */
	proxy_http_chunked_init(&st);
	for (size_t i = 0; i < n; i++) {
		assert_false(done && i > 0);
		r = proxy_http_chunked_scan(&st, chunked_body + i, 1, &done);
		assert_int_equal(r, 1);
		assert_int_equal(done, i == n - 1);
	}
	/* minimal body */
	proxy_http_chunked_init(&st);
	assert_int_equal(proxy_http_chunked_scan(&st, "0\r\n\r\n", 5, &done),
	    5);
	assert_true(done);
	/* the largest size accepted: 2^60 - 1 */
	proxy_http_chunked_init(&st);
	assert_int_equal(proxy_http_chunked_scan(&st, "fffffffffffffff\r\nab", 19, &done), 19);
	assert_false(done);
}

static void
test_chunked_invalid(void **state)
{
	static const char *const rows[] = {
		"5\nhello\r\n0\r\n\r\n",
		"5\r\nhello\n0\r\n\r\n",
		"5\r\nhelloX\r\n",
		"5\r\nhello\rX",
		"g\r\n",
		"\r\n",
		";x\r\n",
		"-5\r\n",
		"+5\r\n",
		"0x5\r\n",
		"5 \r\n",
		"5 x\r\n",
		"5;a\rb",
		"5;a\nb",
		"5;a\x01\r\n",
		"00000000000000001\r\n",
		"1000000000000000\r\n",
		"0\r\n\n",
		"0\r\nX: v\n",
		"0\r\n x: v\r\n\r\n",
		"0\r\nX\r\n\r\n",
		"0\r\n: v\r\n\r\n",
		"0\r\nX Y: v\r\n\r\n",
		"0\r\nX: a\x01\r\n\r\n",
		"0\r\n\rX",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct http_chunk_state st;
		bool done = true;
		proxy_http_chunked_init(&st);
		if (proxy_http_chunked_scan(&st, rows[i], strlen(rows[i]), &done) != -EINVAL)
			fail_msg("row %zu accepted", i);
		assert_false(done);
		/* stuck in error */
		assert_int_equal(proxy_http_chunked_scan(&st, "0\r\n\r\n", 5, &done), -EINVAL);
	}
}

static void
test_chunked_limits(void **state)
{
	static char buf[20000];
	struct http_chunk_state st;
	bool done;

	(void)state;
	/* extension (after the ';') of 4096 bytes is fine, 4097 is not */
	memcpy(buf, "1;", 2);
	memset(buf + 2, 'e', 4096);
	memcpy(buf + 4098, "\r\nx\r\n0\r\n\r\n", 10);
	proxy_http_chunked_init(&st);
	assert_int_equal(proxy_http_chunked_scan(&st, buf, 4108, &done), 4108);
	assert_true(done);
	memcpy(buf, "1;", 2);
	memset(buf + 2, 'e', 4097);
	memcpy(buf + 4099, "\r\nx\r\n0\r\n\r\n", 10);
	proxy_http_chunked_init(&st);
	assert_int_equal(proxy_http_chunked_scan(&st, buf, 4109, &done),
	    -EINVAL);
	/* trailers over 8192 bytes */
	memcpy(buf, "0\r\nX: ", 6);
	memset(buf + 6, 'v', 9000);
	memcpy(buf + 9006, "\r\n\r\n", 4);
	proxy_http_chunked_init(&st);
	assert_int_equal(proxy_http_chunked_scan(&st, buf, 9010, &done),
	    -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_absolute_get),
		cmocka_unit_test(test_rewrite_adds_host),
		cmocka_unit_test(test_rewrite_errors),
		cmocka_unit_test(test_rewrite_origin),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_header_count),
		cmocka_unit_test(test_headers_and_framing),
		cmocka_unit_test(test_version_rules),
		cmocka_unit_test(test_check_host),
		cmocka_unit_test(test_hop_by_hop),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_chunked_whole_and_split),
		cmocka_unit_test(test_chunked_invalid),
		cmocka_unit_test(test_chunked_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
