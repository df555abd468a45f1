/*
 * libFuzzer target for the chunked-body scanner: the first byte picks split
 * points; scanning in pieces must give exactly the result of one scan.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_chunk_state whole, parts;
	bool done_whole = false, done_parts = false;
	ssize_t rw, total = 0, r = 0;
	unsigned step;
	size_t pos = 0;

	if (size < 1)
		return 0;
	step = data[0] % 17 + 1;
	data++;
	size--;

	proxy_http_chunked_init(&whole);
	rw = proxy_http_chunked_scan(&whole, (const char *)data, size,
	    &done_whole);
	if (rw > (ssize_t)size || (rw >= 0 && rw < (ssize_t)size && !done_whole))
		abort();

	proxy_http_chunked_init(&parts);
	while (pos < size) {
		size_t n = size - pos < step ? size - pos : step;
		r = proxy_http_chunked_scan(&parts, (const char *)data + pos, n,
		    &done_parts);
		if (r < 0)
			break;
		total += r;
		if (done_parts)
			break;
		if ((size_t)r != n)
			abort();	/* short count only when done */
		pos += n;
		step = step * 5 % 23 + 1;
	}
	if (rw < 0) {
		if (r >= 0)
			abort();
	} else if (r < 0 || total != rw || done_parts != done_whole) {
		abort();
	}
	return 0;
}
