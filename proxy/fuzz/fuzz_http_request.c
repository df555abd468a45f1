/*
 * libFuzzer target for the proxy's request-head parser: parse, check Host,
 * rewrite and re-parse the rewritten head (the absolute-form rewrite, and
 * the origin-form one of inspected tunnels, whose injected header must
 * then appear exactly once); every proper prefix of an accepted head must
 * ask for more bytes. Also feeds the response parser.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cbuf.h"
#include "proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXHEAD 4096

static void
check_within(const char *buf, size_t len, const char *p, size_t n)
{
	if (p == NULL)
		return;
	if (p < buf || p + n > buf + len)
		abort();
}

static void
check_rewrite(const struct http_request *req)
{
	struct cbuf *out = cbuf_new(2 * MAXHEAD);
	struct http_request again;
	char *copy;
	size_t n;
	int r;

	if (out == NULL)
		return;
	if (proxy_http_request_rewrite(req, out) == 0) {
		n = cbuf_len(out);
		copy = malloc(n);
		if (copy != NULL) {
			memcpy(copy, cbuf_data(out), n);
			r = proxy_http_request_parse(copy, n, 4 * MAXHEAD,
			    &again);
			if (r == -EMSGSIZE && req->nheaders >= HTTP_MAX_HEADERS - 2) {
				free(copy);
				cbuf_free(out);
				return;
			}
			if (r != (int)n || again.form != HTTP_TARGET_ORIGIN ||
			    again.method_len != req->method_len ||
			    memcmp(again.method, req->method, req->method_len) != 0 ||
			    again.content_length != req->content_length ||
			    again.chunked != req->chunked || again.keep_alive ||
			    again.host_header == NULL || again.version_minor != 1)
				abort();
			free(copy);
		}
	}
	cbuf_free(out);
}

/* Inside an inspected tunnel: the re-parsed head is origin-form with
 * our Host and exactly one Authorization, the injected one. */
static void
check_rewrite_origin(const struct http_request *req)
{
	struct cbuf *out = cbuf_new(2 * MAXHEAD);
	struct http_request again;
	size_t n, seen = 0;
	char *copy;
	int r;

	if (out == NULL)
		return;
	if (proxy_http_request_rewrite_origin(req, "api.example:8443",
	    "Authorization", "Bearer x", out) == 0) {
		n = cbuf_len(out);
		copy = malloc(n);
		if (copy != NULL) {
			memcpy(copy, cbuf_data(out), n);
			r = proxy_http_request_parse(copy, n, 4 * MAXHEAD,
			    &again);
			if (r == -EMSGSIZE &&
			    req->nheaders >= HTTP_MAX_HEADERS - 3) {
				free(copy);
				cbuf_free(out);
				return;
			}
			if (r != (int)n || again.form != HTTP_TARGET_ORIGIN ||
			    again.host_header == NULL ||
			    again.host_header->value_len != 16 ||
			    memcmp(again.host_header->value,
			    "api.example:8443", 16) != 0 ||
			    again.content_length != req->content_length ||
			    again.chunked != req->chunked || again.keep_alive)
				abort();
			for (size_t i = 0; i < again.nheaders; i++)
				if (again.headers[i].name_len == 13 &&
				    strncasecmp(again.headers[i].name,
				    "Authorization", 13) == 0) {
					if (again.headers[i].value_len != 8 ||
					    memcmp(again.headers[i].value,
					    "Bearer x", 8) != 0)
						abort();
					seen++;
				}
			if (seen != 1)
				abort();
			free(copy);
		}
	} else if (req->form == HTTP_TARGET_ORIGIN) {
		abort();	/* twice the head always has room */
	}
	cbuf_free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_request req;
	struct http_response resp;
	int r;

	r = proxy_http_request_parse(buf, size, MAXHEAD, &req);
	if (r > 0) {
		if ((size_t)r > size || (size_t)r > MAXHEAD ||
		    (size_t)r != req.head_len || req.method == NULL ||
		    req.nheaders > HTTP_MAX_HEADERS)
			abort();
		check_within(buf, size, req.method, req.method_len);
		check_within(buf, size, req.target, req.target_len);
		check_within(buf, size, req.host, req.host_len);
		check_within(buf, size, req.scheme, req.scheme_len);
		if (req.path != NULL && strcmp(req.path, "/") != 0)
			check_within(buf, size, req.path, req.path_len);
		for (size_t i = 0; i < req.nheaders; i++) {
			check_within(buf, size, req.headers[i].name,
			    req.headers[i].name_len);
			check_within(buf, size, req.headers[i].value,
			    req.headers[i].value_len);
		}
		if (req.chunked && req.content_length != -1)
			abort();
		(void)proxy_http_request_check_host(&req);
		if (req.form == HTTP_TARGET_ABSOLUTE)
			check_rewrite(&req);
		check_rewrite_origin(&req);
		/* proper prefixes of an accepted head are incomplete */
		size_t cuts[3] = { (size_t)r - 1, (size_t)r / 2, (size_t)r - 2 };
		for (size_t i = 0; i < 3; i++) {
			struct http_request part;
			if (cuts[i] >= (size_t)r)
				continue;
			if (proxy_http_request_parse(buf, cuts[i], MAXHEAD, &part) != -EAGAIN)
				abort();
		}
	} else if (r != -EAGAIN && r != -EINVAL && r != -EMSGSIZE &&
	    r != -ERANGE) {
		abort();
	}

	r = proxy_http_response_parse(buf, size, MAXHEAD, size & 1, &resp);
	if (r > 0 && ((size_t)r > size || resp.status < 100 || resp.status > 999 ||
	    (resp.body == HTTP_BODY_LENGTH) != (resp.content_length >= 0)))
		abort();
	return 0;
}
