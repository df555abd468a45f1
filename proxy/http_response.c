/*
 * HTTP/1.x responses for the proxy (see http.h): the response head, whose
 * unclear framing only downgrades to "read until close" (a client
 * connection is then not kept alive), and the incremental chunked-body
 * scanner that finds where a chunked body ends. Apart from http.c, the
 * strict request side: these judge what an upstream sends back, with the
 * same line and header rules (http_internal.h).
 */
#include "proxy/http.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "proxy/http_internal.h"

#define HTTP_CHUNK_MAX_DIGITS 16
#define HTTP_CHUNK_MAX_SIZE (1ULL << 60)
#define HTTP_CHUNK_MAX_EXT 4096
#define HTTP_CHUNK_MAX_TRAILER 8192

/* HTTP-version SP 3DIGIT [SP reason-phrase], in buf[pos..eol). */
static int
http_status_line(struct http_response *resp, const char *buf, size_t pos,
    size_t eol)
{
	const char *s = buf + pos;
	size_t n = eol - pos;

	if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 ||
	    (s[7] != '0' && s[7] != '1') || s[8] != ' ')
		return -EINVAL;
	for (size_t i = 9; i < 12; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	if (s[9] == '0' || (n > 12 && s[12] != ' '))
		return -EINVAL;
	resp->version_minor = s[7] - '0';
	resp->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	if (n > 12) {
		resp->reason = s + 13;
		resp->reason_len = n - 13;
		for (size_t i = 0; i < resp->reason_len; i++)
			if (!proxy_http_is_value_char(
			    (unsigned char)resp->reason[i]))
				return -EINVAL;
	}
	return 0;
}

/* Last coding of the Transfer-Encoding lines is "chunked". */
static bool
http_te_final_chunked(const struct http_header *te)
{
	const char *v = te->value;
	size_t e = te->value_len, s;

	while (e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t'))
		e--;
	s = e;
	while (s > 0 && v[s - 1] != ',')
		s--;
	while (s < e && (v[s] == ' ' || v[s] == '\t'))
		s++;
	return proxy_http_ieq(v + s, e - s, "chunked");
}

static void
http_response_framing(struct http_response *resp, bool request_was_head)
{
	const struct http_header *te = NULL;
	int64_t cl = -1, n;
	bool bad = false;
	size_t nte = 0;

	for (size_t i = 0; i < resp->nheaders; i++) {
		const struct http_header *h = &resp->headers[i];
		if (proxy_http_ieq(h->name, h->name_len, "transfer-encoding")) {
			te = h;
			nte++;
		} else if (proxy_http_ieq(h->name, h->name_len,
		    "content-length")) {
			n = proxy_http_parse_length(h->value, h->value_len);
			if (n < 0 || (cl >= 0 && n != cl))
				bad = true;
			cl = n;
		}
	}
	resp->content_length = -1;
	if (resp->status == 101) {
		resp->body = HTTP_BODY_CLOSE;	/* we never asked to upgrade */
	} else if (request_was_head || resp->status < 200 ||
	    resp->status == 204 || resp->status == 304) {
		resp->body = HTTP_BODY_NONE;
	} else if (te != NULL) {
		resp->body = nte == 1 && cl < 0 && !bad &&
		    resp->version_minor == 1 && http_te_final_chunked(te) ?
		    HTTP_BODY_CHUNKED : HTTP_BODY_CLOSE;
	} else if (cl >= 0 && !bad) {
		resp->body = HTTP_BODY_LENGTH;
		resp->content_length = cl;
	} else {
		resp->body = HTTP_BODY_CLOSE;
	}
	if (resp->version_minor == 1)
		resp->keep_alive = !proxy_http_headers_list(resp->headers,
		    resp->nheaders, "connection", "close", 5);
	else
		resp->keep_alive = proxy_http_headers_list(resp->headers,
		    resp->nheaders, "connection", "keep-alive", 10) &&
		    !proxy_http_headers_list(resp->headers, resp->nheaders,
		    "connection", "close", 5);
	if (resp->body == HTTP_BODY_CLOSE)
		resp->keep_alive = false;
}

int
proxy_http_response_parse(const char *buf, size_t len, size_t max_head,
    bool request_was_head, struct http_response *resp)
{
	size_t lim;
	size_t eol, next;
	long head;
	int r;

	memset(resp, 0, sizeof(*resp));
	if (max_head > INT_MAX)
		max_head = INT_MAX;	/* the head length is returned as int */
	lim = len < max_head ? len : max_head;
	if ((r = proxy_http_line(buf, lim, 0, &eol, &next)) < 0)
		goto fail;
	if ((r = http_status_line(resp, buf, 0, eol)) < 0)
		goto fail;
	head = proxy_http_headers(buf, lim, next, resp->headers,
	    &resp->nheaders);
	if (head < 0) {
		r = (int)head;
		goto fail;
	}
	http_response_framing(resp, request_was_head);
	resp->head_len = (size_t)head;
	return (int)head;
fail:
	if (r == -EAGAIN && len >= max_head)
		r = -EMSGSIZE;
	memset(resp, 0, sizeof(*resp));
	return r;
}

enum {
	CH_SIZE = 0,	/* hex digits of the chunk size */
	CH_SIZE_WS,	/* BWS between the size and ';' */
	CH_EXT,		/* chunk extensions up to CR */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,	/* start of a trailer line, or the final CRLF */
	CH_TRAILER_NAME,
	CH_TRAILER_VALUE,
	CH_TRAILER_LF,
	CH_FINAL_LF,
	CH_DONE,
	CH_ERROR,
};

void
proxy_http_chunked_init(struct http_chunk_state *st)
{
	memset(st, 0, sizeof(*st));
	st->state = CH_SIZE;
}

static int
http_chunk_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

/* One byte of everything but chunk data; returns the next state. */
static int
http_chunk_step(struct http_chunk_state *st, unsigned char c)
{
	int d;

	if (st->state >= CH_TRAILER &&
	    ++st->trailer_bytes > HTTP_CHUNK_MAX_TRAILER)
		return CH_ERROR;
	switch (st->state) {
	case CH_SIZE:
		if ((d = http_chunk_hex((char)c)) >= 0) {
			if (++st->digits > HTTP_CHUNK_MAX_DIGITS)
				return CH_ERROR;
			st->remaining = st->remaining * 16 + (unsigned)d;
			return st->remaining >= HTTP_CHUNK_MAX_SIZE ?
			    CH_ERROR : CH_SIZE;
		}
		if (st->digits == 0)
			return CH_ERROR;
		if (c == ';')
			return CH_EXT;
		if (c == ' ' || c == '\t')
			return CH_SIZE_WS;
		return c == '\r' ? CH_SIZE_LF : CH_ERROR;
	case CH_SIZE_WS:
		if (c == ' ' || c == '\t')
			return CH_SIZE_WS;
		return c == ';' ? CH_EXT : CH_ERROR;
	case CH_EXT:
		if (c == '\r')
			return CH_SIZE_LF;
		if (!proxy_http_is_value_char(c) ||
		    ++st->linelen > HTTP_CHUNK_MAX_EXT)
			return CH_ERROR;
		return CH_EXT;
	case CH_SIZE_LF:
		if (c != '\n')
			return CH_ERROR;
		return st->remaining == 0 ? CH_TRAILER : CH_DATA;
	case CH_DATA_CR:
		return c == '\r' ? CH_DATA_LF : CH_ERROR;
	case CH_DATA_LF:
		if (c != '\n')
			return CH_ERROR;
		st->digits = 0;
		st->linelen = 0;
		return CH_SIZE;
	case CH_TRAILER:
		if (c == '\r')
			return CH_FINAL_LF;
		return proxy_http_is_tchar(c) ? CH_TRAILER_NAME : CH_ERROR;
	case CH_TRAILER_NAME:
		if (c == ':')
			return CH_TRAILER_VALUE;
		return proxy_http_is_tchar(c) ? CH_TRAILER_NAME : CH_ERROR;
	case CH_TRAILER_VALUE:
		if (c == '\r')
			return CH_TRAILER_LF;
		return proxy_http_is_value_char(c) ? CH_TRAILER_VALUE :
		    CH_ERROR;
	case CH_TRAILER_LF:
		return c == '\n' ? CH_TRAILER : CH_ERROR;
	case CH_FINAL_LF:
		return c == '\n' ? CH_DONE : CH_ERROR;
	default:
		return CH_ERROR;
	}
}

ssize_t
proxy_http_chunked_scan(struct http_chunk_state *st, const char *buf,
    size_t len, bool *done)
{
	size_t i = 0, take;

	*done = false;
	while (i < len && st->state != CH_DONE && st->state != CH_ERROR) {
		if (st->state == CH_DATA) {
			take = len - i;
			if (take > st->remaining)
				take = (size_t)st->remaining;
			st->remaining -= take;
			i += take;
			if (st->remaining == 0)
				st->state = CH_DATA_CR;
			continue;
		}
		st->state = http_chunk_step(st, (unsigned char)buf[i]);
		i++;
	}
	if (st->state == CH_ERROR)
		return -EINVAL;
	*done = st->state == CH_DONE;
	return (ssize_t)i;
}
