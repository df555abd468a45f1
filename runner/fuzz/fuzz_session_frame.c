/*
 * libFuzzer target for the host-side parser of a session driver's result
 * stream (runner/session.h), which the sandboxed code can write to: any
 * bytes parse as a frame, ask for more, or are refused, never crash. An
 * accepted frame lies inside the buffer, its lengths are within the cap
 * and its counts, and its kind is one of four; a frame that asks for more
 * (-EAGAIN) stays a prefix: any cut of an accepted frame asks for more.
 * The first byte chooses the per-stream cap.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NONCE "0123456789abcdef0123456789abcdef"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct runner_session_frame f, g;
	size_t max;
	int rc;

	if (size < 1)
		return 0;
	max = (size_t)data[0] * 4;
	data++;
	size--;
	rc = runner_session_frame_parse(data, size, NONCE, max, &f);
	if (rc != 0 && rc != -EAGAIN && rc != -EPROTO)
		abort();
	if (rc != 0)
		return 0;
	if (f.total > size || f.out_len > max || f.err_len > max ||
	    f.out_len > f.out_seen || f.err_len > f.err_seen ||
	    f.out_off + f.out_len != f.err_off ||
	    f.err_off + f.err_len != f.total || f.exit_code < 0 ||
	    f.exit_code > 255 || f.kind > RUNNER_SESSION_EXIT ||
	    (f.kind == RUNNER_SESSION_READY && f.seq != 0))
		abort();
	/* Every proper prefix asks for more. */
	for (size_t n = 0; n < f.total; n += 1 + n / 8)
		if (runner_session_frame_parse(data, n, NONCE, max, &g) !=
		    -EAGAIN)
			abort();
	return 0;
}
