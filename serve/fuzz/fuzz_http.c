/*
 * libFuzzer target for the service's request heads (serve/http.h, issue
 * 39): any bytes either hold no complete head yet or give a head length
 * within them; a head parses or is refused with a 4xx/5xx status and a
 * reason; a parsed head has a path starting with '/', at most
 * SERVE_HTTP_FIELDS_MAX fields, names and values inside the buffer, no
 * keep-alive for HTTP/1.0; and the response head for it fits or says so.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
inside(const char *p, const char *buf, size_t len)
{
	if (p == NULL || p < buf || p >= buf + len)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct serve_http_head h;
	const char *why = NULL;
	char *buf, out[512];
	size_t hl;
	int rc;

	if (size > SERVE_HTTP_HEAD_MAX || (buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if ((hl = serve_http_head_len(buf, size)) == 0 || hl > size) {
		if (hl > size)
			abort();
		free(buf);
		return 0;
	}
	rc = serve_http_head_parse(buf, hl, &h, &why);
	if (rc != 0) {
		if (rc < 400 || rc > 599 || why == NULL || why[0] == '\0')
			abort();
		free(buf);
		return 0;
	}
	inside(h.path, buf, hl);
	if (h.path[0] != '/' || h.nf > SERVE_HTTP_FIELDS_MAX ||
	    (h.minor == 0 && h.keep_alive) || h.minor < 0 || h.minor > 1 ||
	    h.length > 999999999999999999ULL)
		abort();
	for (size_t i = 0; i < h.nf; i++) {
		inside(h.f[i].name, buf, hl);
		inside(h.f[i].value, buf, hl + 1);
		if (h.f[i].name[0] == '\0' ||
		    serve_http_field(&h, h.f[i].name, NULL) == NULL)
			abort();
	}
	rc = serve_http_response_head(out, sizeof(out), 200, "OK", h.f,
	    h.nf < 4 ? h.nf : 4, h.length, false, h.keep_alive);
	if (rc != -ENOSPC && (rc <= 0 || (size_t)rc != strlen(out)))
		abort();
	free(buf);
	return 0;
}
