/*
 * HTTP/1.1 for `cordon serve`, the pure part: the request head (request
 * line, header fields, Content-Length, Connection, Expect) and the
 * response head. A request body must declare its length: chunked request
 * bodies are refused (411), so that a body is refused on its declared size
 * before a byte of it is read. Unit-tested by tests/serve/test_http.c and
 * fuzzed (serve/fuzz/fuzz_http.c).
 */
#ifndef CORDON_SERVE_HTTP_H
#define CORDON_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVE_HTTP_HEAD_MAX 16384	/* request line and fields */
#define SERVE_HTTP_FIELDS_MAX 64

enum serve_http_method {
	SERVE_HTTP_OTHER = 0,		/* any other token: 501 */
	SERVE_HTTP_GET,
	SERVE_HTTP_POST,
	SERVE_HTTP_DELETE,
	SERVE_HTTP_PATCH,
};

struct serve_http_field {
	const char *name;		/* as sent */
	const char *value;		/* without surrounding whitespace */
};

/* A parsed head; its strings point into the buffer it was parsed in. */
struct serve_http_head {
	enum serve_http_method method;
	const char *path;		/* the target up to '?' (not decoded) */
	const char *query;		/* after '?', or NULL */
	int minor;			/* HTTP/1.minor: 0 or 1 */
	struct serve_http_field f[SERVE_HTTP_FIELDS_MAX];
	size_t nf;
	uint64_t length;		/* Content-Length; 0 when absent */
	bool keep_alive;		/* HTTP/1.1 without Connection: close */
	bool expect_continue;		/* Expect: 100-continue */
};

/* The length of the head at the start of buf[0..len): the offset just past
 * the empty line that ends it (lines end in CRLF or a bare LF), or 0 when
 * that line is not there yet. */
size_t serve_http_head_len(const char *buf, size_t len);

/* Parses the head buf[0..len) (len from serve_http_head_len) in place:
 * NULs are written into buf, which h's strings then point into. 0; or the
 * status to answer (400 malformed, 411 Transfer-Encoding, 417 an Expect
 * other than 100-continue, 431 too many fields, 505 not HTTP/1.0 or 1.1)
 * with a static one-line reason in *why. The request line is METHOD SP
 * origin-form SP HTTP/1.x; field names are tokens followed at once by ':';
 * values are visible ASCII, obs-text, spaces and tabs; folded lines,
 * control bytes and a second Content-Length are refused. */
int serve_http_head_parse(char *buf, size_t len, struct serve_http_head *h,
    const char **why);

/* The value of the field name (case-insensitive) in h, or NULL; *count
 * (may be NULL) gets how many times it was sent. */
const char *serve_http_field(const struct serve_http_head *h,
    const char *name, size_t *count);

/* The standard reason phrase of code ("Unknown" for others). */
const char *serve_http_reason(int code);

/* Formats a response head into out: status line, the nf fields, then
 * Content-Length: length (chunked: Transfer-Encoding: chunked instead) and
 * Connection: close unless keep_alive, and the empty line. The length, or
 * -ENOSPC when it does not fit (out then holds nothing useful). */
int serve_http_response_head(char *out, size_t outlen, int code,
    const char *reason, const struct serve_http_field *f, size_t nf,
    uint64_t length, bool chunked, bool keep_alive);

#endif
