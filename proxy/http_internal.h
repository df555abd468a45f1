/*
 * Private to the HTTP parser (http.c: requests; http_response.c:
 * responses and chunked bodies): the line and header rules both sides
 * share. Pure functions over the caller's buffer.
 */
#ifndef CORDON_PROXY_HTTP_INTERNAL_H
#define CORDON_PROXY_HTTP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_header;

/* RFC 9110 tchar: a token's characters. */
bool proxy_http_is_tchar(unsigned char c);
/* A header value's characters: VCHAR, obs-text, SP and HTAB. */
bool proxy_http_is_value_char(unsigned char c);
/* s[0..len) equals lit, ASCII case-insensitively. */
bool proxy_http_ieq(const char *s, size_t len, const char *lit);
/* The line at pos in buf[0..len): 0 with its end *eol and the next
 * line's start *next; -EAGAIN (not complete), -EINVAL (bare LF or CR). */
int proxy_http_line(const char *buf, size_t len, size_t pos, size_t *eol,
    size_t *next);
/* Header lines from pos through the empty line into hdrs (at most
 * HTTP_MAX_HEADERS): the head's length, -EAGAIN, -EINVAL or -EMSGSIZE. */
long proxy_http_headers(const char *buf, size_t len, size_t pos,
    struct http_header *hdrs, size_t *nhdrs);
/* Whether a comma-separated header field lists the token tok. */
bool proxy_http_headers_list(const struct http_header *hdrs, size_t n,
    const char *field, const char *tok, size_t toklen);
/* Pure decimal Content-Length; -1 when invalid. */
int64_t proxy_http_parse_length(const char *v, size_t len);

#endif
