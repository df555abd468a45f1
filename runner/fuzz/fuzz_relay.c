/*
 * libFuzzer target for live output and capped output, both fed untrusted
 * bytes by a sandboxed job: the relay (runner/relay.h) and a cbuf that
 * keeps head and tail (common/cbuf.h). The first bytes choose the cap,
 * the mode and how the rest is cut into chunks and streams. Checks: never
 * more than the cap per stream out of the relay, no chunk ends inside a
 * character that the next chunk completes, nothing of the --out marker
 * or after it on stdout; the cbuf never holds more than its limit and
 * keeps everything when it fits.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"
#include "common/util.h"
#include "runner/outwrap.h"
#include "runner/relay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	uint64_t bytes[3];
	bool open[3];		/* the last chunk ended in a lead byte's */
				/*   incomplete sequence */
	bool marked;		/* the relay looks for the marker */
	char marker[OUTWRAP_MARKER_LEN];
};

static void
on_chunk(void *arg, int stream, const void *p, size_t len)
{
	struct seen *s = arg;

	if ((stream != 1 && stream != 2) || len == 0)
		abort();
	/* Cut inside a character: the next chunk goes on with it. */
	if (s->open[stream] && (*(const unsigned char *)p & 0xc0) == 0x80)
		abort();
	s->open[stream] = util_utf8_partial_end(p, len) != 0;
	if (s->marked && stream == 1 && memmem(p, len, s->marker,
	    sizeof(s->marker)))
		abort();
	s->bytes[stream] += len;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct runner_relay r;
	struct seen s = { .bytes = { 0 } };
	struct cbuf *b;
	size_t cap, off = 3;

	if (size < 3)
		return 0;
	cap = (size_t)data[0] * 4;
	outwrap_marker("0123456789abcdef0123456789abcdef", s.marker);
	s.marked = data[1] & 1;
	runner_relay_init(&r, on_chunk, &s, cap, data[1] & 1 ? s.marker :
	    NULL, data[1] & 1 ? sizeof(s.marker) : 0);
	if ((b = cbuf_new_keep(cap, (enum cbuf_keep)(data[1] >> 1) % 3)) ==
	    NULL)
		return 0;
	while (off < size) {
		size_t n = 1 + data[off - 1] % 97;
		if (n > size - off)
			n = size - off;
		runner_relay_chunk(&r, 1 + (data[off] & 1), data + off, n);
		if (cbuf_append(b, data + off, n) < 0)
			abort();
		if (data[2] & 1 && cbuf_len(b) > cap)
			abort();
		off += n;
	}
	runner_relay_flush(&r);
	if (s.bytes[1] > cap || s.bytes[2] > cap)
		abort();
	if (cbuf_len(b) > cap || strlen(cbuf_data(b)) > cbuf_len(b) ||
	    cbuf_truncated(b) != (size - 3 > cap))
		abort();
	if (size - 3 <= cap && memcmp(cbuf_data(b), data + 3, size - 3) != 0)
		abort();
	cbuf_free(b);
	return 0;
}
