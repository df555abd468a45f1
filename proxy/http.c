/*
 * HTTP/1.x request heads for the proxy (see http.h), and the line and
 * header rules that responses share (http_internal.h). Strict on
 * requests, since a lenient parser is how requests get smuggled past a
 * proxy: CRLF only, tokens only, one framing header. Also the origin-form
 * rewrite of a proxied request. Responses and chunked bodies:
 * http_response.c.
 */
#include "proxy/http.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/cbuf.h"
#include "proxy/host.h"
#include "proxy/http_internal.h"

#define HTTP_MAX_EMPTY_LINES 8
#define HTTP_MAX_LENGTH (1LL << 62)

bool
proxy_http_is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A field-value byte: VCHAR, SP, HTAB or obs-text. */
bool
proxy_http_is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* Case-insensitive equality of s[0..len) with the literal lit. */
bool
proxy_http_ieq(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && strncasecmp(s, lit, len) == 0;
}

static bool
http_eq(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/*
 * Finds the line starting at pos in buf[0..len): on 0, the line is
 * [pos, *eol) and the next one starts at *next. -EAGAIN when the line is
 * not complete yet, -EINVAL on a bare LF or a bare CR.
 */
int
proxy_http_line(const char *buf, size_t len, size_t pos, size_t *eol,
    size_t *next)
{
	const char *lf = memchr(buf + pos, '\n', len - pos);
	const char *cr;
	size_t end;

	if (lf == NULL) {
		cr = memchr(buf + pos, '\r', len - pos);
		if (cr != NULL && cr + 1 < buf + len)
			return -EINVAL;	/* CR not followed by LF */
		return -EAGAIN;
	}
	end = (size_t)(lf - buf);
	if (end == pos || buf[end - 1] != '\r')
		return -EINVAL;		/* bare LF */
	if (memchr(buf + pos, '\r', end - 1 - pos) != NULL)
		return -EINVAL;		/* bare CR inside the line */
	*eol = end - 1;
	*next = end + 1;
	return 0;
}

/* Parses one field line buf[pos..eol) into h. */
static int
http_header_line(const char *buf, size_t pos, size_t eol, struct http_header *h)
{
	size_t i = pos, vs, ve;

	while (i < eol && proxy_http_is_tchar((unsigned char)buf[i]))
		i++;
	if (i == pos || i == eol || buf[i] != ':')
		return -EINVAL;	/* obs-fold, empty name, space before ':' */
	h->name = buf + pos;
	h->name_len = i - pos;
	vs = i + 1;
	while (vs < eol && (buf[vs] == ' ' || buf[vs] == '\t'))
		vs++;
	ve = eol;
	while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
		ve--;
	for (size_t j = vs; j < ve; j++)
		if (!proxy_http_is_value_char((unsigned char)buf[j]))
			return -EINVAL;
	h->value = buf + vs;
	h->value_len = ve - vs;
	return 0;
}

/*
 * Parses header lines from pos up to and including the empty line.
 * buf[0..len) is already cut to max_head. Returns the head length,
 * -EAGAIN, -EINVAL or -EMSGSIZE (too many headers).
 */
long
proxy_http_headers(const char *buf, size_t len, size_t pos,
    struct http_header *hdrs, size_t *nhdrs)
{
	size_t eol, next;
	int r;

	*nhdrs = 0;
	for (;;) {
		if ((r = proxy_http_line(buf, len, pos, &eol, &next)) < 0)
			return r;
		if (eol == pos)
			return (long)next;
		if (*nhdrs == HTTP_MAX_HEADERS)
			return -EMSGSIZE;
		if (http_header_line(buf, pos, eol, &hdrs[*nhdrs]) < 0)
			return -EINVAL;
		(*nhdrs)++;
		pos = next;
	}
}

/* True when the comma-separated list v[0..vlen) holds tok (case-insens). */
static bool
http_list_has(const char *v, size_t vlen, const char *tok, size_t toklen)
{
	size_t i = 0, s, e;

	while (i <= vlen) {
		s = i;
		while (i < vlen && v[i] != ',')
			i++;
		e = i;
		while (s < e && (v[s] == ' ' || v[s] == '\t'))
			s++;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == toklen && strncasecmp(v + s, tok, toklen) == 0)
			return true;
		i++;
	}
	return false;
}

bool
proxy_http_headers_list(const struct http_header *hdrs, size_t n,
    const char *field, const char *tok, size_t toklen)
{
	for (size_t i = 0; i < n; i++)
		if (proxy_http_ieq(hdrs[i].name, hdrs[i].name_len, field) &&
		    http_list_has(hdrs[i].value, hdrs[i].value_len, tok, toklen))
			return true;
	return false;
}

bool
proxy_http_connection_lists(const struct http_request *req, const char *name,
    size_t len)
{
	return proxy_http_headers_list(req->headers, req->nheaders,
	    "connection", name, len);
}

bool
proxy_http_header_is_hop_by_hop(const char *name, size_t len)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "te", "trailer", "upgrade",
	};

	if (len >= 6 && strncasecmp(name, "proxy-", 6) == 0)
		return true;
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (proxy_http_ieq(name, len, hop[i]))
			return true;
	return false;
}

/* Pure decimal Content-Length; -1 when invalid. */
int64_t
proxy_http_parse_length(const char *v, size_t len)
{
	int64_t n = 0;

	if (len == 0 || len > 19)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		n = n * 10 + (v[i] - '0');
		if (n > HTTP_MAX_LENGTH)
			return -1;
	}
	return n;
}

static uint16_t
http_default_port(const char *scheme, size_t len)
{
	if (proxy_http_ieq(scheme, len, "http"))
		return 80;
	if (proxy_http_ieq(scheme, len, "https"))
		return 443;
	return 0;
}

/* Authority of a CONNECT or absolute URI: host[:port], no userinfo. */
static int
http_authority(struct http_request *req, const char *a, size_t len,
    bool port_required)
{
	int rc;

	for (size_t i = 0; i < len; i++)
		if (strchr("/?#@\\", a[i]) != NULL)
			return -EINVAL;
	/* -ERANGE (a bad port) is passed on: 400 bad-port, not malformed. */
	rc = proxy_host_port_split(a, len, &req->host, &req->host_len,
	    &req->port, port_required);
	if (rc < 0)
		return rc;
	req->port_explicit = req->port != 0;
	return 0;
}

/* scheme "://" authority [ "/" path ] [ "?" query ], no fragment. */
static int
http_absolute(struct http_request *req, const char *t, size_t len)
{
	size_t i = 0, a;
	int r;

	if (memchr(t, '#', len) != NULL)
		return -EINVAL;
	if (len == 0 || !((t[0] >= 'a' && t[0] <= 'z') ||
	    (t[0] >= 'A' && t[0] <= 'Z')))
		return -EINVAL;
	while (i < len && (((t[i] | 0x20) >= 'a' && (t[i] | 0x20) <= 'z') ||
	    (t[i] >= '0' && t[i] <= '9') || t[i] == '+' || t[i] == '-' ||
	    t[i] == '.'))
		i++;
	if (len - i < 3 || memcmp(t + i, "://", 3) != 0)
		return -EINVAL;
	req->scheme = t;
	req->scheme_len = i;
	a = i + 3;
	i = a;
	while (i < len && t[i] != '/' && t[i] != '?')
		i++;
	if ((r = http_authority(req, t + a, i - a, false)) < 0)
		return r;
	if (!req->port_explicit)
		req->port = http_default_port(req->scheme, req->scheme_len);
	if (i == len) {
		req->path = "/";
		req->path_len = 1;
	} else if (t[i] == '?') {
		return -EINVAL;	/* "http://h?q": no path to put it on */
	} else {
		req->path = t + i;
		req->path_len = len - i;
	}
	req->form = HTTP_TARGET_ABSOLUTE;
	return 0;
}

/* method SP request-target SP HTTP-version, in buf[pos..eol). */
static int
http_request_line(struct http_request *req, const char *buf, size_t pos,
    size_t eol)
{
	size_t i = pos, t;

	while (i < eol && proxy_http_is_tchar((unsigned char)buf[i]))
		i++;
	if (i == pos || i == eol || buf[i] != ' ')
		return -EINVAL;
	req->method = buf + pos;
	req->method_len = i - pos;
	req->is_connect = http_eq(req->method, req->method_len, "CONNECT");
	t = ++i;
	while (i < eol && (unsigned char)buf[i] > 0x20 &&
	    (unsigned char)buf[i] < 0x7f)
		i++;
	if (i == t || i == eol || buf[i] != ' ')
		return -EINVAL;
	req->target = buf + t;
	req->target_len = i - t;
	i++;
	if (eol - i != 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 ||
	    (buf[i + 7] != '0' && buf[i + 7] != '1'))
		return -EINVAL;
	req->version_minor = buf[i + 7] - '0';

	if (req->is_connect) {
		req->form = HTTP_TARGET_AUTHORITY;
		return http_authority(req, req->target, req->target_len, true);
	}
	if (http_eq(req->target, req->target_len, "*")) {
		req->form = HTTP_TARGET_ASTERISK;
		return http_eq(req->method, req->method_len, "OPTIONS") ? 0 :
		    -EINVAL;
	}
	if (req->target[0] == '/') {
		req->form = HTTP_TARGET_ORIGIN;
		req->path = req->target;
		req->path_len = req->target_len;
		return 0;
	}
	return http_absolute(req, req->target, req->target_len);
}

/* The framing and header-count checks of proxy_http_request_parse. */
static int
http_request_framing(struct http_request *req)
{
	const struct http_header *te = NULL;
	size_t nhost = 0;
	int64_t n;

	req->content_length = -1;
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];
		if (proxy_http_ieq(h->name, h->name_len, "host")) {
			req->host_header = h;
			nhost++;
		} else if (proxy_http_ieq(h->name, h->name_len,
		    "content-length")) {
			n = proxy_http_parse_length(h->value, h->value_len);
			if (n < 0 || (req->content_length >= 0 &&
			    n != req->content_length))
				return -EINVAL;
			req->content_length = n;
		} else if (proxy_http_ieq(h->name, h->name_len,
		    "transfer-encoding")) {
			if (te != NULL || !proxy_http_ieq(h->value,
			    h->value_len, "chunked"))
				return -EINVAL;
			te = h;
		} else if (proxy_http_ieq(h->name, h->name_len, "connection") &&
		    req->connection == NULL) {
			req->connection = h;
		}
	}
	if (nhost > 1 || (te != NULL && req->content_length >= 0) ||
	    (te != NULL && req->version_minor == 0))
		return -EINVAL;
	if (proxy_http_connection_lists(req, "host", 4) ||
	    proxy_http_connection_lists(req, "content-length", 14) ||
	    proxy_http_connection_lists(req, "transfer-encoding", 17))
		return -EINVAL;
	req->chunked = te != NULL;
	if (req->is_connect && (req->chunked || req->content_length > 0))
		return -EINVAL;
	if (req->version_minor == 1)
		req->keep_alive = !proxy_http_connection_lists(req, "close", 5);
	else
		req->keep_alive = proxy_http_connection_lists(req, "keep-alive", 10) &&
		    !proxy_http_connection_lists(req, "close", 5);
	return 0;
}

int
proxy_http_request_parse(const char *buf, size_t len, size_t max_head,
    struct http_request *req)
{
	size_t lim;
	size_t pos = 0, eol, next, empty = 0;
	long head;
	int r;

	memset(req, 0, sizeof(*req));
	if (max_head > INT_MAX)
		max_head = INT_MAX;	/* the head length is returned as int */
	lim = len < max_head ? len : max_head;
	for (;;) {
		if ((r = proxy_http_line(buf, lim, pos, &eol, &next)) < 0)
			goto fail;
		if (eol > pos)
			break;
		if (++empty > HTTP_MAX_EMPTY_LINES) {
			r = -EINVAL;
			goto fail;
		}
		pos = next;
	}
	if ((r = http_request_line(req, buf, pos, eol)) < 0)
		goto fail;
	head = proxy_http_headers(buf, lim, next, req->headers, &req->nheaders);
	if (head < 0) {
		r = (int)head;
		goto fail;
	}
	if ((r = http_request_framing(req)) < 0)
		goto fail;
	req->head_len = (size_t)head;
	return (int)head;
fail:
	if (r == -EAGAIN && len >= max_head)
		r = -EMSGSIZE;
	memset(req, 0, sizeof(*req));
	return r;
}

int
proxy_http_request_check_host(const struct http_request *req)
{
	const struct http_header *h = req->host_header;
	const char *host;
	size_t hostlen;
	uint16_t port;

	if (req->form != HTTP_TARGET_ABSOLUTE || h == NULL)
		return 0;
	if (proxy_host_port_split(h->value, h->value_len, &host, &hostlen,
	    &port, false) < 0)
		return -EINVAL;
	if (port == 0)
		port = http_default_port(req->scheme, req->scheme_len);
	if (hostlen != req->host_len ||
	    strncasecmp(host, req->host, hostlen) != 0 || port != req->port)
		return -EINVAL;
	return 0;
}

static int
http_put(struct cbuf *out, const char *s, size_t n)
{
	long r = cbuf_append(out, s, n);

	if (r < 0)
		return (int)r;
	return (size_t)r == n ? 0 : -ENOSPC;
}

static int
http_put_str(struct cbuf *out, const char *s)
{
	return http_put(out, s, strlen(s));
}

int
proxy_http_request_rewrite(const struct http_request *req, struct cbuf *out)
{
	char port[8];
	int r = 0;

	if (req->form != HTTP_TARGET_ABSOLUTE)
		return -EINVAL;
	if ((r = http_put(out, req->method, req->method_len)) < 0 ||
	    (r = http_put_str(out, " ")) < 0 ||
	    (r = http_put(out, req->path, req->path_len)) < 0 ||
	    (r = http_put_str(out, " HTTP/1.1\r\n")) < 0)
		return r;
	if (req->host_header == NULL) {
		snprintf(port, sizeof(port), ":%u", (unsigned)req->port);
		if ((r = http_put_str(out, "Host: ")) < 0 ||
		    (r = http_put(out, req->host, req->host_len)) < 0 ||
		    (req->port_explicit && (r = http_put_str(out, port)) < 0) ||
		    (r = http_put_str(out, "\r\n")) < 0)
			return r;
	}
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];
		if (proxy_http_header_is_hop_by_hop(h->name, h->name_len) ||
		    proxy_http_connection_lists(req, h->name, h->name_len))
			continue;
		if ((r = http_put(out, h->name, h->name_len)) < 0 ||
		    (r = http_put_str(out, ": ")) < 0 ||
		    (r = http_put(out, h->value, h->value_len)) < 0 ||
		    (r = http_put_str(out, "\r\n")) < 0)
			return r;
	}
	return http_put_str(out, "Connection: close\r\n\r\n");
}

int
proxy_http_request_rewrite_origin(const struct http_request *req,
    const char *authority, const char *inject_name, const char *inject_value,
    struct cbuf *out)
{
	size_t nl = inject_name != NULL ? strlen(inject_name) : 0;
	int r = 0;

	if (req->form != HTTP_TARGET_ORIGIN || authority == NULL ||
	    (inject_name != NULL && (inject_value == NULL || nl == 0)))
		return -EINVAL;
	for (size_t i = 0; i < nl; i++)
		if (!proxy_http_is_tchar((unsigned char)inject_name[i]))
			return -EINVAL;
	for (const char *v = inject_value; v != NULL && *v != '\0'; v++)
		if (!proxy_http_is_value_char((unsigned char)*v))
			return -EINVAL;
	if ((r = http_put(out, req->method, req->method_len)) < 0 ||
	    (r = http_put_str(out, " ")) < 0 ||
	    (r = http_put(out, req->target, req->target_len)) < 0 ||
	    (r = http_put_str(out, " HTTP/1.1\r\nHost: ")) < 0 ||
	    (r = http_put_str(out, authority)) < 0 ||
	    (r = http_put_str(out, "\r\n")) < 0)
		return r;
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];
		if (h == req->host_header ||
		    proxy_http_header_is_hop_by_hop(h->name, h->name_len) ||
		    proxy_http_connection_lists(req, h->name, h->name_len) ||
		    (nl > 0 && h->name_len == nl &&
		    strncasecmp(h->name, inject_name, nl) == 0))
			continue;
		if ((r = http_put(out, h->name, h->name_len)) < 0 ||
		    (r = http_put_str(out, ": ")) < 0 ||
		    (r = http_put(out, h->value, h->value_len)) < 0 ||
		    (r = http_put_str(out, "\r\n")) < 0)
			return r;
	}
	if (nl > 0 && ((r = http_put_str(out, inject_name)) < 0 ||
	    (r = http_put_str(out, ": ")) < 0 ||
	    (r = http_put_str(out, inject_value)) < 0 ||
	    (r = http_put_str(out, "\r\n")) < 0))
		return r;
	return http_put_str(out, "Connection: close\r\n\r\n");
}
