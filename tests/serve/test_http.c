/* Unit tests for the service's HTTP/1.1 heads (serve/http.h): where a head
 * ends, a table of request heads (accepted and refused, with the status),
 * field lookup and the response head. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/http.h"

static void
test_head_len(void **state)
{
	static const struct { const char *in; size_t want; } rows[] = {
		{ "GET / HTTP/1.1\r\n\r\n", 18 },
		{ "GET / HTTP/1.1\n\n", 16 },
		{ "GET / HTTP/1.1\r\nA: b\r\n\r\nBODY", 24 },
		{ "GET / HTTP/1.1\r\nA: b\n\r\n", 23 },
		{ "GET / HTTP/1.1\r\nA: b\r\n", 0 },
		{ "GET / HTTP/1.1\r\n\r", 0 },
		{ "GET / HTTP/1.1", 0 },
		{ "", 0 },
		/* A CR alone inside a line is no line end. */
		{ "GET / HTTP/1.1\r\r\n", 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t got = serve_http_head_len(rows[i].in,
		    strlen(rows[i].in));

		if (got != rows[i].want)
			fail_msg("row %zu: %zu, want %zu", i, got, rows[i].want);
	}
}

/* Parses a copy of text; returns the status (0 accepted). */
static int
parse(const char *text, struct serve_http_head *h, char *buf, size_t len,
    const char **why)
{
	size_t n = strlen(text);

	assert_true(n < len);
	memcpy(buf, text, n + 1);
	assert_int_equal(serve_http_head_len(buf, n), n);
	return serve_http_head_parse(buf, n, h, why);
}

static void
test_head_ok(void **state)
{
	static char buf[4096];
	struct serve_http_head h;
	const char *why;
	size_t n;

	(void)state;
	assert_int_equal(parse("POST /v1/runs?x=1 HTTP/1.1\r\nHost: cordon\r\n"
	    "Content-Length: 42\r\nauthorization:  Bearer t  \r\n"
	    "Expect: 100-Continue\r\n\r\n", &h, buf, sizeof(buf), &why), 0);
	assert_int_equal(h.method, SERVE_HTTP_POST);
	assert_string_equal(h.path, "/v1/runs");
	assert_string_equal(h.query, "x=1");
	assert_int_equal(h.minor, 1);
	assert_int_equal(h.length, 42);
	assert_true(h.keep_alive);
	assert_true(h.expect_continue);
	assert_string_equal(serve_http_field(&h, "Authorization", &n),
	    "Bearer t");
	assert_int_equal(n, 1);
	assert_null(serve_http_field(&h, "Accept", &n));
	assert_int_equal(n, 0);

	assert_int_equal(parse("GET /metrics HTTP/1.0\n\n", &h, buf,
	    sizeof(buf), &why), 0);
	assert_int_equal(h.method, SERVE_HTTP_GET);
	assert_int_equal(h.minor, 0);
	assert_false(h.keep_alive);		/* 1.0: one request */
	assert_int_equal(h.length, 0);
	assert_null(h.query);

	assert_int_equal(parse("DELETE /v1/sessions/x HTTP/1.1\r\nConnection: "
	    "keep-alive, Close\r\nX: a\tb\xc3\xa9\r\nAuthorization: a\r\n"
	    "authorization: b\r\n\r\n", &h, buf, sizeof(buf), &why), 0);
	assert_int_equal(h.method, SERVE_HTTP_DELETE);
	assert_false(h.keep_alive);
	assert_string_equal(serve_http_field(&h, "x", NULL), "a\tb\xc3\xa9");
	/* Both are there for the caller to refuse. */
	assert_string_equal(serve_http_field(&h, "AUTHORIZATION", &n), "a");
	assert_int_equal(n, 2);

	assert_int_equal(parse("PUT / HTTP/1.1\r\n\r\n", &h, buf, sizeof(buf),
	    &why), 0);
	assert_int_equal(h.method, SERVE_HTTP_OTHER);
	assert_int_equal(parse("PATCH /v1/sessions/x HTTP/1.1\r\n\r\n", &h, buf,
	    sizeof(buf), &why), 0);
	assert_int_equal(h.method, SERVE_HTTP_PATCH);
	assert_int_equal(parse("GET /a#frag HTTP/1.1\r\n\r\n", &h, buf,
	    sizeof(buf), &why), 0);
	assert_string_equal(h.path, "/a");
	assert_int_equal(parse("POST / HTTP/1.1\r\nContent-Length: "
	    "999999999999999999\r\n\r\n", &h, buf, sizeof(buf), &why), 0);
	assert_int_equal(h.length, 999999999999999999ULL);
}

static void
test_head_refused(void **state)
{
	static const struct { const char *in; int code; } rows[] = {
		{ "GET\r\n\r\n", 400 },
		{ "GET  / HTTP/1.1\r\n\r\n", 400 },
		{ " GET / HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1 \r\n\r\n", 400 },
		{ "GET * HTTP/1.1\r\n\r\n", 400 },
		{ "GET http://h/v1/kill-all HTTP/1.1\r\n\r\n", 400 },
		{ "G(T / HTTP/1.1\r\n\r\n", 400 },
		{ "GET /\x7f HTTP/1.1\r\n\r\n", 400 },
		{ "GET /\xc3\xa9 HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/2.0\r\n\r\n", 505 },
		{ "GET / HTTP/1.2\r\n\r\n", 505 },
		{ "GET / FTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\rX: y\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\n: empty\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA b: c\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA : c\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: \x7f\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n"
		  "\r\n", 400 },
		{ "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nContent-Length: 1000000000000000000\r\n"
		  "\r\n", 400 },
		/* No chunked bodies: a body declares its size. */
		{ "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411 },
		{ "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: "
		  "chunked\r\n\r\n", 411 },
		{ "POST / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", 417 },
	};
	static char buf[4096];
	struct serve_http_head h;
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t n = strlen(rows[i].in), hl;
		int got;

		memcpy(buf, rows[i].in, n + 1);
		hl = serve_http_head_len(buf, n);
		got = hl == 0 ? -1 : serve_http_head_parse(buf, hl, &h, &why);
		if (got != rows[i].code)
			fail_msg("row %zu: %d, want %d", i, got, rows[i].code);
		if (got > 0 && why[0] == '\0')
			fail_msg("row %zu: no reason", i);
	}
	/* A NUL byte in the head. */
	memcpy(buf, "GET / HTTP/1.1\r\nA: \0\r\n\r\n", 24);
	assert_int_equal(serve_http_head_len(buf, 24), 24);
	assert_int_equal(serve_http_head_parse(buf, 24, &h, &why), 400);
}

static void
test_fields_max(void **state)
{
	static char buf[SERVE_HTTP_HEAD_MAX];
	struct serve_http_head h;
	const char *why;
	size_t n = 0;

	(void)state;
	for (int more = 0; more < 2; more++) {
		n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\n");
		for (int i = 0; i < SERVE_HTTP_FIELDS_MAX + more; i++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			    "F%d: v\r\n", i);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
		/* Parsed in place: a fresh head each time. */
		assert_int_equal(serve_http_head_parse(buf, n, &h, &why),
		    more ? 431 : 0);
	}
	assert_int_equal(h.nf, SERVE_HTTP_FIELDS_MAX);
}

static void
test_response_head(void **state)
{
	static const struct serve_http_field f[] = {
		{ "Content-Type", "application/json" },
		{ "Retry-After", "3" },
	};
	char out[256];
	int n;

	(void)state;
	n = serve_http_response_head(out, sizeof(out), 429,
	    serve_http_reason(429), f, 2, 17, false, true);
	assert_true(n > 0);
	assert_string_equal(out, "HTTP/1.1 429 Too Many Requests\r\n"
	    "Content-Type: application/json\r\nRetry-After: 3\r\n"
	    "Content-Length: 17\r\n\r\n");
	n = serve_http_response_head(out, sizeof(out), 200, "OK", NULL, 0, 0,
	    true, false);
	assert_string_equal(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\nConnection: close\r\n\r\n");
	assert_int_equal(n, (int)strlen(out));
	assert_int_equal(serve_http_response_head(out, 20, 200, "OK", f, 2, 0,
	    false, true), -ENOSPC);
	assert_string_equal(serve_http_reason(499), "Client Closed Request");
	assert_string_equal(serve_http_reason(299), "Unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_len),
		cmocka_unit_test(test_head_ok),
		cmocka_unit_test(test_head_refused),
		cmocka_unit_test(test_fields_max),
		cmocka_unit_test(test_response_head),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
