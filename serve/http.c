/*
 * HTTP/1.1 heads (http.h): the request head parsed in place, strictly (one
 * Content-Length, no Transfer-Encoding, no folded or control bytes), and
 * the response head. Pure: the connection (conn.c) does the I/O.
 */
#include "serve/http.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 tchar. */
static bool
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != 0 && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

/* A field value byte: VCHAR, obs-text, SP or HTAB. */
static bool
is_value_byte(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

size_t
serve_http_head_len(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;

	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		/* An empty line: "\n" right after the previous "\n", or
		 * "\r\n" there. */
		if (nl > buf && (nl[-1] == '\n' || (nl[-1] == '\r' &&
		    nl - 1 > buf && nl[-2] == '\n')))
			return (size_t)(nl + 1 - buf);
		p = nl + 1;
	}
	return 0;
}

static int
bad(const char **why, int code, const char *reason)
{
	*why = reason;
	return code;
}

/* Cuts the next line out of [*p, end): NUL-terminated at its CRLF or LF;
 * *p moves past it. NULL when no line end is left. */
static char *
next_line(char **p, char *end)
{
	char *line = *p, *nl = memchr(line, '\n', (size_t)(end - line));

	if (nl == NULL)
		return NULL;
	*p = nl + 1;
	if (nl > line && nl[-1] == '\r')
		nl--;
	*nl = '\0';
	return line;
}

static int
parse_request_line(char *line, struct serve_http_head *h, const char **why)
{
	char *sp1 = strchr(line, ' '), *sp2, *target, *q, *v;

	if (sp1 == NULL || sp1 == line || sp1 - line > 16)
		return bad(why, 400, "malformed request line");
	*sp1 = '\0';
	for (char *m = line; *m != '\0'; m++)
		if (!is_tchar((unsigned char)*m))
			return bad(why, 400, "malformed request line");
	h->method = strcmp(line, "GET") == 0 ? SERVE_HTTP_GET :
	    strcmp(line, "POST") == 0 ? SERVE_HTTP_POST :
	    strcmp(line, "DELETE") == 0 ? SERVE_HTTP_DELETE :
	    strcmp(line, "PATCH") == 0 ? SERVE_HTTP_PATCH : SERVE_HTTP_OTHER;
	target = sp1 + 1;
	if ((sp2 = strchr(target, ' ')) == NULL || target[0] != '/')
		return bad(why, 400, "malformed request line (the target "
		    "must be a path)");
	*sp2 = '\0';
	for (char *t = target; *t != '\0'; t++)
		if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
			return bad(why, 400, "malformed request line");
	v = sp2 + 1;
	if (strncmp(v, "HTTP/", 5) != 0 || !isdigit((unsigned char)v[5]) ||
	    v[6] != '.' || !isdigit((unsigned char)v[7]) || v[8] != '\0')
		return bad(why, 400, "malformed request line");
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return bad(why, 505, "only HTTP/1.0 and HTTP/1.1 are served");
	h->minor = v[7] - '0';
	if ((q = strchr(target, '#')) != NULL)
		*q = '\0';
	if ((q = strchr(target, '?')) != NULL) {
		*q = '\0';
		h->query = q + 1;
	}
	h->path = target;
	return 0;
}

static int
parse_field(char *line, struct serve_http_head *h, const char **why)
{
	char *colon = strchr(line, ':'), *v, *e;

	if (line[0] == ' ' || line[0] == '\t')
		return bad(why, 400, "folded header lines are not accepted");
	if (colon == NULL || colon == line)
		return bad(why, 400, "malformed header line");
	for (char *n = line; n < colon; n++)
		if (!is_tchar((unsigned char)*n))
			return bad(why, 400, "malformed header name");
	*colon = '\0';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (e = v; *e != '\0'; e++)
		if (!is_value_byte((unsigned char)*e))
			return bad(why, 400, "control bytes in a header value");
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = '\0';
	if (h->nf == SERVE_HTTP_FIELDS_MAX)
		return bad(why, 431, "too many header fields");
	h->f[h->nf].name = line;
	h->f[h->nf].value = v;
	h->nf++;
	return 0;
}

/* Whether the comma-separated list s holds token tok (any case). */
static bool
list_has(const char *s, const char *tok)
{
	size_t n = strlen(tok);

	while (*s != '\0') {
		while (*s == ' ' || *s == '\t' || *s == ',')
			s++;
		if (strncasecmp(s, tok, n) == 0 && (s[n] == '\0' ||
		    s[n] == ',' || s[n] == ' ' || s[n] == '\t'))
			return true;
		while (*s != '\0' && *s != ',')
			s++;
	}
	return false;
}

/* Content-Length, Transfer-Encoding, Connection and Expect. */
static int
parse_framing(struct serve_http_head *h, const char **why)
{
	const char *v;
	size_t n;

	if (serve_http_field(h, "Transfer-Encoding", NULL) != NULL)
		return bad(why, 411, "a request body needs Content-Length "
		    "(chunked request bodies are not accepted)");
	if ((v = serve_http_field(h, "Content-Length", &n)) != NULL) {
		size_t digits = strspn(v, "0123456789");

		if (n != 1 || digits == 0 || digits > 18 || v[digits] != '\0')
			return bad(why, 400, "bad Content-Length");
		h->length = 0;
		for (size_t i = 0; i < digits; i++)
			h->length = h->length * 10 + (uint64_t)(v[i] - '0');
	}
	v = serve_http_field(h, "Connection", NULL);
	/* HTTP/1.0 clients get one request per connection. */
	h->keep_alive = h->minor == 1 && !(v != NULL && list_has(v, "close"));
	if ((v = serve_http_field(h, "Expect", NULL)) != NULL) {
		if (strcasecmp(v, "100-continue") != 0)
			return bad(why, 417, "the only expectation met is "
			    "100-continue");
		h->expect_continue = h->minor == 1;
	}
	return 0;
}

int
serve_http_head_parse(char *buf, size_t len, struct serve_http_head *h,
    const char **why)
{
	char *p = buf, *end = buf + len, *line;
	int rc;

	memset(h, 0, sizeof(*h));
	*why = "";
	if (memchr(buf, '\0', len) != NULL)
		return bad(why, 400, "NUL byte in the request head");
	if ((line = next_line(&p, end)) == NULL)
		return bad(why, 400, "malformed request line");
	if (strchr(line, '\r') != NULL)
		return bad(why, 400, "malformed request line");
	if ((rc = parse_request_line(line, h, why)) != 0)
		return rc;
	while ((line = next_line(&p, end)) != NULL && line[0] != '\0') {
		if (strchr(line, '\r') != NULL)
			return bad(why, 400, "control bytes in a header line");
		if ((rc = parse_field(line, h, why)) != 0)
			return rc;
	}
	if (line == NULL)
		return bad(why, 400, "the head does not end with an empty line");
	return parse_framing(h, why);
}

const char *
serve_http_field(const struct serve_http_head *h, const char *name,
    size_t *count)
{
	const char *v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < h->nf; i++)
		if (strcasecmp(h->f[i].name, name) == 0) {
			if (n++ == 0)
				v = h->f[i].value;
		}
	if (count != NULL)
		*count = n;
	return v;
}

const char *
serve_http_reason(int code)
{
	switch (code) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 417: return "Expectation Failed";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 499: return "Client Closed Request";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Unknown";
}

int
serve_http_response_head(char *out, size_t outlen, int code,
    const char *reason, const struct serve_http_field *f, size_t nf,
    uint64_t length, bool chunked, bool keep_alive)
{
	size_t n = 0;
	int w;

#define PUT(...) do {							\
	w = snprintf(out + n, outlen - n, __VA_ARGS__);			\
	if (w < 0 || (size_t)w >= outlen - n)				\
		return -ENOSPC;						\
	n += (size_t)w;							\
} while (0)
	if (outlen == 0)
		return -ENOSPC;
	PUT("HTTP/1.1 %03d %s\r\n", code, reason);
	for (size_t i = 0; i < nf; i++)
		PUT("%s: %s\r\n", f[i].name, f[i].value);
	if (chunked)
		PUT("Transfer-Encoding: chunked\r\n");
	else
		PUT("Content-Length: %llu\r\n", (unsigned long long)length);
	if (!keep_alive)
		PUT("Connection: close\r\n");
	PUT("\r\n");
#undef PUT
	return (int)n;
}
