/*
 * libFuzzer target for the Engine API's HTTP response parser
 * (runner/dockerapi.h), which reads whatever the daemon's socket says.
 * The first byte picks the flags and how much of the rest is seen before
 * eof. Checks: a verdict on the whole bytes with eof is never "more
 * needed"; a complete answer's head lies inside the input and its body is
 * NUL-terminated and no longer than the input; a prefix that is complete
 * gives the same answer as the whole (nothing after an answer changes it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/dockerapi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const struct dockerapi_resp *r, int rc, size_t len)
{
	if (rc != 1) {
		if (r->body != NULL || r->status != 0)
			abort();
		return;
	}
	if (r->head_len == 0 || r->head_len > len || r->body == NULL ||
	    r->body_len > len || r->body[r->body_len] != '\0' ||
	    r->status < 0 || r->status > 999)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dockerapi_resp a, b;
	unsigned flags;
	size_t cut;
	int ra, rb;

	if (size < 1)
		return 0;
	flags = data[0] & 1 ? DOCKERAPI_HEAD_ONLY : 0;
	cut = (size_t)(data[0] >> 1) * 4;
	data++;
	size--;
	if (cut > size)
		cut = size;
	ra = dockerapi_response_parse((const char *)data, size, true, flags,
	    4096, &a);
	if (ra == 0)
		abort();
	check(&a, ra, size);
	rb = dockerapi_response_parse((const char *)data, cut, false, flags,
	    4096, &b);
	check(&b, rb, cut);
	if (rb == 1 && (ra != 1 || a.status != b.status ||
	    a.body_len != b.body_len || a.head_len != b.head_len ||
	    memcmp(a.body, b.body, a.body_len) != 0))
		abort();
	dockerapi_resp_cleanup(&a);
	dockerapi_resp_cleanup(&b);
	return 0;
}
